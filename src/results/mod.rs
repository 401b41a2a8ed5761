//! The result model: the versioned JSON document every later command reads
//! ([`ResultSet`]: measurements, summaries, fitted models, warnings, detections), what
//! is derived from its raw measurements, and the analyses built on it (compare,
//! predict, plan). It belongs to the layer that measures: experiments write it, views
//! (`report`) read it; it imports neither.

pub mod adaptive;
pub mod compare;
pub mod plan;
pub mod pool;
pub mod predict;
#[cfg(test)]
pub(crate) mod testing;

use crate::analysis::blocks;
use crate::analysis::detect::{self, Detection};
use crate::analysis::model::{self, CostModel, Point};
use crate::analysis::stats::{self, Summary};
use crate::measure::PhaseResult;
use crate::measure::provenance::Provenance;
use crate::ops::CreateOptions;
use crate::storage::TargetInfo;
use crate::tree::TreeSpec;
use crate::units::sig3;
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
    #[serde(default = "crate::storage::cache::CacheMode::legacy")]
    pub caches: crate::storage::cache::CacheMode,
    /// Which time of a write phase the statistics use.
    #[serde(default)]
    pub until: Until,
    /// Adaptive runs (`--precision`): the settings and how the budget went; absent
    /// with a fixed `--runs N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<adaptive::Adaptive>,
    /// Keys of a ladder's side rungs (a second total at two file counts: they separate
    /// the per-byte cost from a per-run constant); charts keep them off the rungs' line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub side_trees: Vec<String>,
}

/// Which end of a write phase counts: `durable` (its changes on the device: syncfs or
/// fsync returned, timed as part of the phase) or `returned` (the last close returned).
/// Phases that write nothing have one time, the same for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Until {
    #[default]
    Durable,
    Returned,
}

impl Until {
    pub fn parse(s: &str) -> crate::error::Result<Until> {
        match s {
            "durable" => Ok(Until::Durable),
            "returned" => Ok(Until::Returned),
            _ => Err(crate::error::Error::bad("--until", format!("'{s}': expected durable or returned"))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Until::Durable => "durable",
            Until::Returned => "returned",
        }
    }
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
    /// The block of runs this one belongs to (`analysis::blocks`): blocks are
    /// separated by what makes invocations differ. Absent in files from before
    /// blocks: each such run is a block of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<u32>,
    #[serde(flatten)]
    pub result: PhaseResult,
}

impl Measurement {
    /// The phase's time as `until` asks (see [`Until`]).
    pub fn seconds(&self, until: Until) -> f64 {
        match until {
            Until::Durable => self.result.elapsed_s,
            Until::Returned => self.result.returned_s.unwrap_or(self.result.elapsed_s),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    pub target: String,
    pub op: String,
    pub tree_key: String,
    pub tree_files: u64,
    pub tree_bytes: u64,
    /// Raw seconds of the complete runs the statistics use, in run order.
    pub raw_s: Vec<f64>,
    /// Complete runs measured, disturbed ones included.
    #[serde(default)]
    pub runs: usize,
    /// Adaptive runs: seconds of the runs left out because other processes disturbed
    /// them (see `measure::machine`); all are kept when every run was disturbed, and
    /// with `--runs N` every run is kept (and counted in `disturbed`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbed_s: Vec<f64>,
    /// Disturbed runs (left out, or kept: `--runs N`, or every run disturbed).
    #[serde(default)]
    pub disturbed: usize,
    /// Adaptive runs: how the cell ended (`precision reached`, `max runs reached`,
    /// `budget spent`, `stopped`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    #[serde(flatten)]
    pub stats: Summary,
}

impl SummaryRow {
    /// `12`, or `12 (2 disturbed, left out)`, plus how adaptive runs ended.
    pub fn runs_text(&self) -> String {
        let mut s = self.runs.max(self.stats.n).to_string();
        if !self.disturbed_s.is_empty() {
            s.push_str(&format!(" ({} disturbed, left out)", self.disturbed_s.len()));
        } else if self.disturbed > 0 {
            s.push_str(&format!(" ({} disturbed, kept)", self.disturbed));
        }
        if let Some(why) = &self.stopped {
            s.push_str(&format!(", {why}"));
        }
        s
    }
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
    /// Smallest and largest "most files in one directory" of the trees (0, 0 in
    /// older files: unknown).
    #[serde(default)]
    pub max_files_per_dir_range: [u64; 2],
    #[serde(flatten)]
    pub model: CostModel,
}

/// The runs statistics use, and those left out. Disturbed runs measured the neighbours
/// too: with adaptive runs they are left out (the driver replaces them) as long as
/// enough undisturbed runs remain for an interval (6); otherwise every run is kept and
/// a warning says so. `--runs N` keeps meaning exactly N runs: nothing is left out.
pub fn split_disturbed<'a>(ms: &[&'a Measurement], adaptive: bool) -> (Vec<&'a Measurement>, Vec<&'a Measurement>) {
    let clean = ms.iter().filter(|m| !m.result.disturbed()).count();
    if adaptive && clean >= stats::MEDIAN_CI_MIN_N && clean < ms.len() {
        ms.iter().partition(|m| !m.result.disturbed())
    } else {
        (ms.to_vec(), Vec::new())
    }
}

impl ModelRow {
    /// Did the trees differ enough in total bytes to tell b·bytes from a cost paid once
    /// per run? The default ladder splits one total over every rung, so b·bytes there
    /// is a per-run constant, not a bandwidth (issue 27). True for older files that do
    /// not record the range.
    pub fn bytes_resolved(&self) -> bool {
        let [lo, hi] = self.bytes_range;
        (lo == 0 && hi == 0) || hi as f64 >= BYTES_SPREAD * lo as f64
    }

    /// The cost every run pays once, with its standard error: the constant `k`, plus
    /// `b·bytes` where every tree held the same bytes (then b·bytes is a constant too,
    /// and the two cannot be told apart). None when the model has neither.
    pub fn per_run(&self) -> Option<(f64, f64)> {
        let c = &self.model;
        let bytes = if self.bytes_resolved() { 0.0 } else { self.bytes_range[0] as f64 };
        let v = c.per_run_s + c.per_byte_s * bytes;
        let se = (c.per_run_se.powi(2) + (c.per_byte_se * bytes).powi(2)).sqrt();
        (v > 0.0 && v.is_finite()).then_some((v, se))
    }
}

/// Largest over smallest tree total from which b·bytes counts as a bandwidth.
const BYTES_SPREAD: f64 = 1.5;

/// The note under a fitted-cost table when some model's trees all held about the same
/// bytes, or None.
pub fn bytes_note(rs: &ResultSet) -> Option<String> {
    let ops: Vec<&str> = rs.models.iter().filter(|m| !m.bytes_resolved()).map(|m| m.op.as_str()).collect();
    (!ops.is_empty()).then(|| {
        format!(
            "const: every tree of {} held about the same bytes, so b·bytes is a cost paid once per run (counted in the per-run column), not a bandwidth (nor a break-even size); trees of other totals (--total) resolve it",
            ops.join(", ")
        )
    })
}

/// The block of each run (`Measurement::block`); a run from before blocks is a block
/// of its own (ids above every recorded block, so they never merge with one).
pub fn block_ids(ms: &[&Measurement]) -> Vec<u32> {
    let base = ms.iter().filter_map(|m| m.block).max().map_or(0, |b| b + 1);
    ms.iter().enumerate().map(|(i, m)| m.block.unwrap_or(base + i as u32)).collect()
}

/// How an adaptive cell ended, for its summary: `precision reached: ±3.1%`, `max runs
/// reached: ±7.2%`, `budget spent: ±9.0%` (or `… no interval` before 6 runs).
fn stop_reason(a: &adaptive::Adaptive, s: &Summary, runs: usize, disturbed: usize, complete: bool) -> String {
    let reached = s.precision().map_or("no interval".to_string(), |p| format!("±{}%", sig3(p * 100.0)));
    if s.precision().is_some_and(|p| p <= a.precision) {
        format!("precision reached: {reached}")
    } else if runs.saturating_sub(disturbed) >= a.max_runs as usize || runs >= 2 * a.max_runs as usize {
        format!("max runs reached: {reached}")
    } else if !complete {
        format!("stopped: {reached}")
    } else {
        format!("budget spent: {reached}")
    }
}

/// Write phases (their results have a durable and a returned time).
fn is_write_phase(m: &Measurement) -> bool {
    m.result.flush_s.is_some()
}

impl ResultSet {
    /// What the caches and the device say about the measurements: write phases the
    /// device hardly saw (absorbed by a cache), cold reads the device did not serve,
    /// read-side phases that could only be made partly cold. One line per (target, op).
    fn storage_warnings(&self) -> Vec<String> {
        const MIN: u64 = 1 << 20; // below this, metadata and rounding dominate
        let mut out: Vec<String> = Vec::new();
        let mut push = |s: String| {
            if !out.contains(&s) {
                out.push(s);
            }
        };
        for m in self.measurements.iter().filter(|m| m.result.complete()) {
            let r = &m.result;
            let seen = |d: &crate::measure::diskstats::DeviceIo, w: bool| {
                let own = if w { d.write_bytes } else { d.read_bytes };
                let back = d.backing.as_ref().map_or(0, |b| if w { b.write_bytes } else { b.read_bytes });
                own.max(back)
            };
            // What reached the device: a pack step (`C:pack`) writes its container, which
            // compression makes smaller than the tree its `bytes` count, so it is judged
            // by the container's size (`space_used_bytes`, its allocated blocks).
            let written = match r.space_used_bytes {
                Some(c) if m.op.ends_with(":pack") => c.max(0) as u64,
                _ => r.bytes,
            };
            if let Some(d) = &r.device {
                if is_write_phase(m) && written >= MIN && seen(d, true) < written / 2 {
                    push(format!(
                        "{} ({}): the device {} saw less than half of the bytes written ({} of {}): absorbed by a cache",
                        m.op,
                        m.target,
                        d.device,
                        crate::units::fmt_size(seen(d, true) as f64),
                        crate::units::fmt_size(written as f64)
                    ));
                }
                let cold = matches!(r.cache.as_deref(), Some("data-evicted" | "all-dropped"));
                if m.op == "read" && cold && r.bytes >= MIN && seen(d, false) < r.bytes / 2 {
                    push(format!(
                        "read ({}): asked cold, but the device {} served less than half of it ({} of {}): partly cached",
                        m.target,
                        d.device,
                        crate::units::fmt_size(seen(d, false) as f64),
                        crate::units::fmt_size(r.bytes as f64)
                    ));
                }
            }
            let cold = matches!(r.cache.as_deref(), Some("data-evicted" | "all-dropped"));
            if m.op == "read" && cold && r.device.is_none() {
                push(format!(
                    "read ({}): made cold, but the target has no block device to show that the reads reached storage (a network or FUSE file system may ignore the eviction)",
                    m.target
                ));
            }
            if r.cache.as_deref() == Some("data-evicted")
                && matches!(m.op.as_str(), "stat" | "list" | "walk" | "scan" | "rescan" | "rm")
            {
                push(format!(
                    "{} ({}): only file data could be evicted before it (not root): directories and inodes stayed cached, so it ran warm",
                    m.op, m.target
                ));
            }
        }
        out
    }

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
        // Groups in the experiment's order, so tables follow it: targets and ops as
        // listed, trees by size (runs are shuffled within each round, so the order in
        // which cells were first seen says nothing).
        let mut keys: Vec<(String, String, String)> = Vec::new();
        let mut size_of: Vec<(String, (u64, u64))> = Vec::new();
        for m in &self.measurements {
            let k = (m.target.clone(), m.op.clone(), m.tree_key.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
            if !size_of.iter().any(|(t, _)| *t == m.tree_key) {
                size_of.push((m.tree_key.clone(), (m.tree_files, m.tree_bytes)));
            }
        }
        let position = |list: &[String], x: &str| list.iter().position(|y| y == x).unwrap_or(usize::MAX);
        let target_ids: Vec<String> = self.targets.iter().map(|t| t.id.clone()).collect();
        let ops = self.experiment.ops.clone();
        let size = |k: &str| size_of.iter().find(|(t, _)| t == k).map_or((0, 0), |(_, s)| *s);
        // Stable: keys of equal rank keep their first-seen order.
        keys.sort_by_key(|(t, o, k)| (position(&target_ids, t), position(&ops, o), size(k)));
        for (target, op, tree_key) in &keys {
            let ms: Vec<&Measurement> = self
                .measurements
                .iter()
                .filter(|m| &m.target == target && &m.op == op && &m.tree_key == tree_key && m.result.complete())
                .collect();
            let until = self.experiment.until;
            let disturbed = ms.iter().filter(|m| m.result.disturbed()).count();
            let (used, left_out) = split_disturbed(&ms, self.experiment.adaptive.is_some());
            if self.experiment.adaptive.is_some() && disturbed > 0 && left_out.is_empty() {
                let fired = |sig: &str| {
                    ms.iter()
                        .any(|m| m.result.machine.as_ref().is_some_and(|a| a.disturbed_by.iter().any(|b| b == sig)))
                };
                let mut why = Vec::new();
                if fired("cpu") || !fired("io") {
                    why.push(format!(
                        "more than {} cores busy besides this one",
                        crate::measure::machine::DISTURBED_CORES
                    ));
                }
                if fired("io") {
                    why.push(format!(
                        "others' storage traffic above {} MiB/s",
                        crate::measure::machine::DISTURBED_IO_BPS / 1048576.0
                    ));
                }
                self.warnings.push(format!(
                    "{op} on {tree_key} ({target}): {disturbed} of {} runs were disturbed by other processes ({}), too many to leave out: the figures measure the neighbours too",
                    ms.len(),
                    why.join("; ")
                ));
            }
            let raw: Vec<f64> = used.iter().map(|m| m.seconds(until)).collect();
            let Some(stats) = blocks::summarize_blocked(&raw, &block_ids(&used)) else {
                continue;
            };
            // Leaving the disturbed runs out moved the median past its own interval: say
            // so with both figures, so a reader sees what the neighbours did.
            if !left_out.is_empty() {
                let all: Vec<f64> = ms.iter().map(|m| m.seconds(until)).collect();
                if let (Some(with), Some([lo, hi])) =
                    (blocks::summarize_blocked(&all, &block_ids(&ms)), stats.median_ci95_s)
                {
                    if with.median_s < lo || with.median_s > hi {
                        self.warnings.push(format!(
                            "{op} on {tree_key} ({target}): median {} without the {} disturbed runs [{} – {}], {} with them: the disturbance moved it past its interval",
                            crate::units::fmt_secs(stats.median_s),
                            left_out.len(),
                            crate::units::fmt_secs(lo),
                            crate::units::fmt_secs(hi),
                            crate::units::fmt_secs(with.median_s)
                        ));
                    }
                }
            }
            let stopped = self.experiment.adaptive.map(|a| stop_reason(&a, &stats, ms.len(), disturbed, self.complete));
            for d in detect::of_runs(target, op, tree_key, &raw, &stats) {
                // Adaptive runs say per cell what precision they reached: no "more runs
                // needed" advice beside it (the detection stays in the JSON).
                let advice = matches!(d, Detection::HighCv { .. }) && self.experiment.adaptive.is_none();
                if matches!(d, Detection::FirstRun { .. }) || advice {
                    self.warnings.push(d.text());
                }
                self.detections.push(d);
            }
            let portion = self.experiment.portion_files;
            let runs: Vec<(&[crate::measure::Portion], u64)> =
                ms.iter().map(|m| (m.result.portions.as_slice(), m.tree_files)).collect();
            let per_file = detect::median_per_file(&runs, portion);
            if let Some(knee) = detect::knee(&per_file, portion) {
                self.detections.push(Detection::Knee {
                    target: target.clone(),
                    op: op.clone(),
                    tree_key: tree_key.clone(),
                    knee,
                });
            } else if self.experiment.name == "dirsize" && !per_file.is_empty() {
                // Say so explicitly: the knee was looked for and is not there up to here.
                self.detections.push(Detection::NoKnee {
                    target: target.clone(),
                    op: op.clone(),
                    tree_key: tree_key.clone(),
                    up_to_files: per_file.len() as u64 * portion,
                });
            }
            self.summaries.push(SummaryRow {
                target: target.clone(),
                op: op.clone(),
                tree_key: tree_key.clone(),
                tree_files: ms[0].tree_files,
                tree_bytes: ms[0].tree_bytes,
                raw_s: raw,
                runs: ms.len(),
                disturbed_s: left_out.iter().map(|m| m.seconds(until)).collect(),
                disturbed,
                stopped,
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
            let all: Vec<&Measurement> =
                self.measurements.iter().filter(|m| m.target == target && m.op == op && m.result.complete()).collect();
            // The runs each cell's summary uses (disturbed ones left out as there).
            let mut ms: Vec<&Measurement> = Vec::new();
            for (_, _, k) in keys.iter().filter(|(t, o, _)| *t == target && *o == op) {
                let cell: Vec<&Measurement> = all.iter().copied().filter(|m| &m.tree_key == k).collect();
                ms.extend(split_disturbed(&cell, self.experiment.adaptive.is_some()).0);
            }
            let distinct_trees = {
                let mut k: Vec<&str> = ms.iter().map(|m| m.tree_key.as_str()).collect();
                k.sort();
                k.dedup();
                k.len()
            };
            if distinct_trees < 3 {
                continue; // a model from fewer than 3 tree shapes says nothing
            }
            // Files per directory of every tree (once per tree: drawn trees need a plan).
            let mut per_dir: Vec<(&str, Vec<(u64, u64)>)> = Vec::new();
            for m in &ms {
                if !per_dir.iter().any(|(k, _)| *k == m.tree_key) {
                    per_dir.push((&m.tree_key, crate::tree::layout::files_per_dir(&m.tree)));
                }
            }
            let counts = |m: &Measurement| &per_dir.iter().find(|(k, _)| *k == m.tree_key).expect("every tree").1;
            let points: Vec<Point> = ms
                .iter()
                .map(|m| Point {
                    files: m.tree_files as f64,
                    bytes: m.tree_bytes as f64,
                    dirs: m.tree_dirs as f64,
                    dir_sq: model::dir_sq_of(counts(m).iter().copied()),
                    seconds: m.seconds(self.experiment.until),
                })
                .collect();
            if let Some(model) = model::fit(&points) {
                let range = |f: fn(&Measurement) -> u64| {
                    [ms.iter().map(|m| f(m)).min().unwrap_or(0), ms.iter().map(|m| f(m)).max().unwrap_or(0)]
                };
                let most = |m: &Measurement| counts(m).iter().map(|c| c.0).max().unwrap_or(0);
                let max_files_per_dir_range =
                    [ms.iter().map(|m| most(m)).min().unwrap_or(0), ms.iter().map(|m| most(m)).max().unwrap_or(0)];
                if model.r2 < 0.9 {
                    self.warnings.push(format!(
                        "{op} ({target}): the model time = a·files + b·bytes + c·dirs + d·Σn² + k explains the data poorly (R² {}): read the fitted costs with care",
                        sig3(model.r2)
                    ));
                }
                self.models.push(ModelRow {
                    target,
                    op,
                    files_range: range(|m| m.tree_files),
                    bytes_range: range(|m| m.tree_bytes),
                    dirs_range: range(|m| m.tree_dirs),
                    max_files_per_dir_range,
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
        // Delete against re-format on each target: above which file count formatting
        // the file system is the faster way to empty it.
        let targets: Vec<String> = self.targets.iter().map(|t| t.id.clone()).collect();
        for t in &targets {
            let cells: Vec<detect::Cell> = self
                .summaries
                .iter()
                .filter(|s| &s.target == t && (s.op == "delete" || s.op == crate::ops::REFORMAT))
                .map(|s| detect::Cell { target: &s.op, files: s.tree_files, stats: &s.stats })
                .collect();
            if cells.iter().any(|c| c.target == "delete") && cells.iter().any(|c| c.target != "delete") {
                self.detections.extend(detect::crossovers(&format!("emptying {t}"), &cells));
            }
        }
        self.warnings.extend(self.storage_warnings());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constant_total_is_no_bandwidth() {
        let mut m = testing::one_cell(&[1.0; 6]);
        let mut row = ModelRow {
            target: "dir".into(),
            op: "create".into(),
            files_range: [1, 65536],
            bytes_range: [67_108_864 - 65_536, 67_108_864],
            dirs_range: [0, 64],
            max_files_per_dir_range: [1, 1000],
            model: {
                let p =
                    |f: f64, b: f64| Point { files: f, bytes: b, dirs: 0.0, dir_sq: 0.0, seconds: f * 1e-6 + b * 1e-9 };
                model::fit(&[p(1.0, 1e6), p(10.0, 2e6), p(100.0, 4e6), p(1000.0, 8e6)]).expect("a model")
            },
        };
        assert!(!row.bytes_resolved(), "the ladder's one total");
        m.models.push(row.clone());
        assert!(bytes_note(&m).is_some_and(|n| n.contains("create") && n.contains("per run")));
        row.bytes_range = [1 << 20, 64 << 20];
        assert!(row.bytes_resolved());
        row.bytes_range = [0, 0];
        assert!(row.bytes_resolved(), "older files: not known, not flagged");
        m.models = vec![row];
        assert!(bytes_note(&m).is_none());
    }
}
