//! ResultSet: the versioned JSON document every later command reads, and what is
//! derived from its raw measurements (summaries, models, warnings).

pub mod advice;
pub mod chart;
pub mod combine;
pub mod commands;
pub mod compare;
pub mod csv;
pub mod export;
pub mod html;
pub mod json;
pub mod markdown;
pub mod table;

use crate::analysis::detect::{self, Detection};
use crate::analysis::model::{self, CostModel, Point};
use crate::analysis::stats::{self, Summary};
use crate::measure::PhaseResult;
use crate::measure::provenance::Provenance;
use crate::ops::CreateOptions;
use crate::target::TargetInfo;
use crate::tree::TreeSpec;
use crate::units::sig3;
use serde::{Deserialize, Serialize};

pub use commands::{
    CompareConfig, PlanConfig, PredictConfig, ReportConfig, TreeInput, run_compare, run_plan, run_predict, run_report,
};

pub const SCHEMA: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultSet {
    pub schema: u32,
    pub provenance: Provenance,
    pub experiment: ExperimentInfo,
    pub targets: Vec<TargetInfo>,
    pub measurements: Vec<Measurement>,
    pub summaries: Vec<SummaryRow>,
    pub models: Vec<ModelRow>,
    pub warnings: Vec<String>,
    /// Knees, crossovers, first-run effects, outliers, noisy cells.
    #[serde(default)]
    pub detections: Vec<Detection>,
    /// Every planned measurement finished.
    pub complete: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentInfo {
    pub name: String,
    pub ops: Vec<String>,
    pub runs: u32,
    pub warmup: u32,
    pub threads: usize,
    pub portion_files: u64,
    pub order: String,
    pub create: CreateOptions,
    #[serde(default)]
    pub caches: crate::experiment::CacheMode,
}

/// One op on one tree on one target in one run, with every raw figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub experiment: String,
    pub target: String,
    pub op: String,
    pub tree: TreeSpec,
    pub tree_key: String,
    pub tree_files: u64,
    pub tree_bytes: u64,
    pub tree_dirs: u64,
    pub run: u32,
    /// Position in the whole experiment (0-based), to see drift.
    pub order: u64,
    #[serde(flatten)]
    pub result: PhaseResult,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    pub target: String,
    pub op: String,
    pub tree_key: String,
    pub tree_files: u64,
    pub tree_bytes: u64,
    /// Raw seconds of the complete runs, in run order.
    pub raw_s: Vec<f64>,
    #[serde(flatten)]
    pub stats: Summary,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRow {
    pub target: String,
    pub op: String,
    /// Smallest and largest file count the model was fitted on.
    pub files_range: [u64; 2],
    /// Smallest and largest byte count and directory count (the calibrated range).
    #[serde(default)]
    pub bytes_range: [u64; 2],
    #[serde(default)]
    pub dirs_range: [u64; 2],
    #[serde(flatten)]
    pub model: CostModel,
}

impl ResultSet {
    pub fn new(provenance: Provenance, experiment: ExperimentInfo, targets: Vec<TargetInfo>) -> ResultSet {
        ResultSet {
            schema: SCHEMA,
            provenance,
            experiment,
            targets,
            measurements: Vec::new(),
            summaries: Vec::new(),
            models: Vec::new(),
            warnings: Vec::new(),
            detections: Vec::new(),
            complete: false,
        }
    }

    /// Recompute summaries, models and warnings from the raw measurements. Only
    /// complete measurements (no error, not interrupted) enter the statistics.
    pub fn derive(&mut self) {
        self.summaries.clear();
        self.models.clear();
        self.warnings.clear();
        self.detections.clear();
        // Groups in first-seen order so tables follow the experiment's order.
        let mut keys: Vec<(String, String, String)> = Vec::new();
        for m in &self.measurements {
            let k = (m.target.clone(), m.op.clone(), m.tree_key.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        for (target, op, tree_key) in &keys {
            let ms: Vec<&Measurement> = self
                .measurements
                .iter()
                .filter(|m| &m.target == target && &m.op == op && &m.tree_key == tree_key && m.result.complete())
                .collect();
            let raw: Vec<f64> = ms.iter().map(|m| m.result.elapsed_s).collect();
            let Some(stats) = stats::summarize(&raw) else {
                continue;
            };
            for d in detect::of_runs(target, op, tree_key, &raw, &stats) {
                if matches!(d, Detection::FirstRun { .. } | Detection::HighCv { .. }) {
                    self.warnings.push(d.text());
                }
                self.detections.push(d);
            }
            let portion = self.experiment.portion_files;
            let runs: Vec<(&[crate::measure::Portion], u64)> =
                ms.iter().map(|m| (m.result.portions.as_slice(), m.tree_files)).collect();
            if let Some(knee) = detect::knee(&detect::median_per_file(&runs, portion), portion) {
                self.detections.push(Detection::Knee {
                    target: target.clone(),
                    op: op.clone(),
                    tree_key: tree_key.clone(),
                    knee,
                });
            }
            self.summaries.push(SummaryRow {
                target: target.clone(),
                op: op.clone(),
                tree_key: tree_key.clone(),
                tree_files: ms[0].tree_files,
                tree_bytes: ms[0].tree_bytes,
                raw_s: raw,
                stats,
            });
        }
        let mut pairs: Vec<(String, String)> = Vec::new();
        for (t, o, _) in &keys {
            if !pairs.contains(&(t.clone(), o.clone())) {
                pairs.push((t.clone(), o.clone()));
            }
        }
        for (target, op) in pairs {
            let ms: Vec<&Measurement> =
                self.measurements.iter().filter(|m| m.target == target && m.op == op && m.result.complete()).collect();
            let distinct_trees = {
                let mut k: Vec<&str> = ms.iter().map(|m| m.tree_key.as_str()).collect();
                k.sort();
                k.dedup();
                k.len()
            };
            if distinct_trees < 3 {
                continue; // a model from fewer than 3 tree shapes says nothing
            }
            let points: Vec<Point> = ms
                .iter()
                .map(|m| Point {
                    files: m.tree_files as f64,
                    bytes: m.tree_bytes as f64,
                    dirs: m.tree_dirs as f64,
                    seconds: m.result.elapsed_s,
                })
                .collect();
            if let Some(model) = model::fit(&points) {
                let range = |f: fn(&Measurement) -> u64| {
                    [ms.iter().map(|m| f(m)).min().unwrap_or(0), ms.iter().map(|m| f(m)).max().unwrap_or(0)]
                };
                if model.r2 < 0.9 {
                    self.warnings.push(format!(
                        "{op} ({target}): the model time = a·files + b·bytes + c·dirs explains the data poorly (R² {}): read the fitted costs with care",
                        sig3(model.r2)
                    ));
                }
                self.models.push(ModelRow {
                    target,
                    op,
                    files_range: range(|m| m.tree_files),
                    bytes_range: range(|m| m.tree_bytes),
                    dirs_range: range(|m| m.tree_dirs),
                    model,
                });
            }
        }
        let mut ops: Vec<&str> = Vec::new();
        for s in &self.summaries {
            if !ops.contains(&s.op.as_str()) {
                ops.push(&s.op);
            }
        }
        for op in ops {
            let cells: Vec<detect::Cell> = self
                .summaries
                .iter()
                .filter(|s| s.op == op)
                .map(|s| detect::Cell { target: &s.target, files: s.tree_files, stats: &s.stats })
                .collect();
            self.detections.extend(detect::crossovers(op, &cells));
        }
        for m in &self.measurements {
            if m.result.errors > 0 {
                self.warnings.push(format!(
                    "{} on {} run {}: {} errors, first: {}",
                    m.op,
                    m.tree_key,
                    m.run,
                    m.result.errors,
                    m.result.first_error.as_deref().unwrap_or("?")
                ));
            }
        }
    }
}
