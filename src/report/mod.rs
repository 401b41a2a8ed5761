//! ResultSet: the versioned JSON document every later command reads, and what is
//! derived from its raw measurements (summaries, models, warnings).

pub mod csv;
pub mod export;
pub mod json;
pub mod markdown;
pub mod table;

use crate::analysis::model::{self, CostModel, Point};
use crate::analysis::stats::{self, Summary};
use crate::measure::PhaseResult;
use crate::measure::provenance::Provenance;
use crate::ops::CreateOptions;
use crate::target::TargetInfo;
use crate::tree::TreeSpec;
use crate::units::{fmt_secs, sig3};
use serde::{Deserialize, Serialize};

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
            complete: false,
        }
    }

    /// Recompute summaries, models and warnings from the raw measurements. Only
    /// complete measurements (no error, not interrupted) enter the statistics.
    pub fn derive(&mut self) {
        self.summaries.clear();
        self.models.clear();
        self.warnings.clear();
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
            let label = format!("{op} on {tree_key} ({target})");
            if stats.first_run_outlier {
                self.warnings.push(format!(
                    "{label}: run 1 took {} against a median of {}: a first-run effect (some file systems are fast or slow only on their first run)",
                    fmt_secs(raw[0]),
                    fmt_secs(stats.median_s)
                ));
            }
            if stats.noisy {
                self.warnings.push(format!(
                    "{label}: noisy (CV {}%): more runs needed, about {} for a ±5% interval",
                    sig3(stats.cv.unwrap_or(0.0) * 100.0),
                    stats.runs_needed.unwrap_or(0)
                ));
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
                .map(|m| Point { files: m.tree_files as f64, bytes: m.tree_bytes as f64, seconds: m.result.elapsed_s })
                .collect();
            if let Some(model) = model::fit(&points) {
                let lo = ms.iter().map(|m| m.tree_files).min().unwrap_or(0);
                let hi = ms.iter().map(|m| m.tree_files).max().unwrap_or(0);
                if model.r2 < 0.9 {
                    self.warnings.push(format!(
                        "{op} ({target}): the model time = a·files + b·bytes explains the data poorly (R² {}): read the fitted costs with care",
                        sig3(model.r2)
                    ));
                }
                self.models.push(ModelRow { target, op, files_range: [lo, hi], model });
            }
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
