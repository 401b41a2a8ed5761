//! `manyfiles predict`: every fitted (target, op) model applied to one tree's shape,
//! with a 95% prediction interval for a single run (or the median of K), an
//! extrapolation warning when the tree lies outside what the model was calibrated on
//! (judged jointly: `analysis::model::reach`; rows ranked by how far out), and for sync
//! ops the recovery point. A model that misses its own left-out trees is marked
//! unusable, not used (`analysis::model::check`).

use super::model::Prediction;
use crate::results::{ModelRow, ResultSet};
use crate::tree::inventory::Inventory;
use crate::units::sig3;
use serde::Serialize;

/// What a model needs to know of a tree.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Shape {
    pub files: u64,
    pub bytes: u64,
    pub dirs: u64,
    /// Σ over directories of (files directly in it)²: exact from a walk or a new
    /// inventory, estimated from the files-per-directory histogram of an older one.
    pub dir_sq: f64,
    /// Most files directly in one directory.
    pub max_files_per_dir: u64,
}

impl From<&Inventory> for Shape {
    fn from(i: &Inventory) -> Shape {
        Shape {
            files: i.files,
            bytes: i.total_bytes,
            dirs: i.dirs,
            dir_sq: i.dir_sq(),
            max_files_per_dir: i.most_files_in_a_dir(),
        }
    }
}

impl Shape {
    /// The model's prediction for the median of `runs` runs on this tree (1: one run),
    /// its interval at 95%.
    pub fn predict(&self, m: &super::model::CostModel, runs: u32) -> Prediction {
        self.predict_at(m, runs, DEFAULT_LEVEL)
    }

    /// [`Shape::predict`] with the interval at `level`.
    pub fn predict_at(&self, m: &super::model::CostModel, runs: u32, level: f64) -> Prediction {
        m.predict_runs(self.files as f64, self.bytes as f64, self.dirs as f64, self.dir_sq, runs, level)
    }

    /// Where this tree lies against the model's cells (directories below the root, as
    /// the cells count them).
    pub fn reach(&self, m: &super::model::CostModel) -> Option<super::model::reach::Reach> {
        m.reach(self.files as f64, self.bytes as f64, self.dirs.saturating_sub(1) as f64, self.dir_sq)
    }
}

/// The level of `predict`'s intervals unless `--level` says otherwise.
pub const DEFAULT_LEVEL: f64 = 0.95;

/// What a prediction is of, and the level of its interval (`predict --runs-ahead`,
/// `--level`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ahead {
    /// The median of this many runs (1: a single run).
    pub runs: u32,
    /// Two-sided level of the intervals (0.95).
    pub level: f64,
}

impl Default for Ahead {
    fn default() -> Self {
        Ahead { runs: 1, level: DEFAULT_LEVEL }
    }
}

impl Ahead {
    /// `95%`, `90%`, `99.5%`: the level as the views print it.
    pub fn level_text(&self) -> String {
        let p = self.level * 100.0;
        if (p - p.round()).abs() < 1e-9 { format!("{p:.0}%") } else { format!("{p:.1}%") }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PredictionRow {
    pub target: String,
    pub op: String,
    /// The prediction with its 95% interval (`interval95` in the JSON).
    #[serde(flatten)]
    pub prediction: Prediction,
    /// The level the user asked for (`--level`; 0.95 by default) and the interval at it:
    /// what the views print (`interval95` when the level is 95%).
    pub level: f64,
    pub interval: Option<[f64; 2]>,
    /// Why the prediction is an extrapolation (empty: inside the calibrated range).
    pub extrapolation: Vec<String>,
    /// The tree against the calibrated cells, judged jointly (None: older files).
    pub reach: Option<super::model::reach::Reach>,
    /// Sync ops with an interval: worst-case recovery point = interval + sync time
    /// (predicted, and the interval's upper end).
    pub recovery_point_s: Option<[f64; 2]>,
    /// The model is an answer (`analysis::model::check`); when false, `seconds` is what
    /// the fit says, not a prediction: it missed its own left-out trees.
    pub usable: bool,
    /// Why the model is no answer, and what to do (None when usable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_usable: Option<String>,
}

impl PredictionRow {
    /// The prediction as the views print it: its interval at the level asked for.
    pub fn shown(&self) -> Prediction {
        Prediction { seconds: self.prediction.seconds, interval95: self.interval }
    }
}

/// Is `x` inside [lo, hi]? A range of [0, 0] is unknown (older result files).
fn outside(name: &str, x: u64, [lo, hi]: [u64; 2], fmt: fn(u64) -> String) -> Option<String> {
    if lo == 0 && hi == 0 {
        return None;
    }
    if x > hi {
        Some(format!(
            "{name} {} is {}× the largest calibrated ({})",
            fmt(x),
            sig3(x as f64 / hi.max(1) as f64),
            fmt(hi)
        ))
    } else if x < lo {
        Some(format!("{name} {} is below the smallest calibrated ({})", fmt(x), fmt(lo)))
    } else {
        None
    }
}

/// Why this model's prediction for `s` is an extrapolation.
pub fn extrapolation(m: &ModelRow, s: &Shape) -> Vec<String> {
    let mut why: Vec<String> = Vec::new();
    let count = |x: u64| x.to_string();
    why.extend(outside("file count", s.files, m.files_range, count));
    why.extend(outside("total size", s.bytes, m.bytes_range, |x| crate::units::fmt_size(x as f64)));
    // Directories only matter when the model has a directory cost.
    if m.model.per_dir_s > 0.0 {
        why.extend(outside("directory count", s.dirs, m.dirs_range, count));
    }
    // Files per directory only when the model has a directory-size cost.
    if m.model.per_dir_entry_s > 0.0 {
        why.extend(outside("most files in one directory", s.max_files_per_dir, m.max_files_per_dir_range, count));
    }
    why
}

/// An op whose time bounds how stale a copy can get between runs.
pub fn is_sync(op: &str) -> bool {
    op.starts_with("sync")
}

/// Every model's prediction for `s` (the median of `runs` runs), farthest out first; a
/// model judged no answer (its left-out error above the threshold) is marked unusable
/// with why, and the views print no figure for it.
pub fn predict(rs: &ResultSet, s: &Shape, interval_s: Option<f64>, ahead: Ahead) -> Vec<PredictionRow> {
    let mut rows: Vec<PredictionRow> = rs
        .models
        .iter()
        .map(|m| {
            let p = s.predict(&m.model, ahead.runs);
            let interval = match ahead.level == DEFAULT_LEVEL {
                true => p.interval95,
                false => s.predict_at(&m.model, ahead.runs, ahead.level).interval95,
            };
            let reach = s.reach(&m.model);
            let extrapolation = match &reach {
                Some(r) if r.outside => vec![r.explain()],
                Some(_) => Vec::new(),
                None => extrapolation(m, s),
            };
            let recovery_point_s = match interval_s {
                Some(i) if is_sync(&m.op) => Some([i + p.seconds, i + interval.map_or(p.seconds, |[_, hi]| hi)]),
                _ => None,
            };
            let check = m.check();
            PredictionRow {
                target: m.target.clone(),
                op: m.op.clone(),
                prediction: p,
                level: ahead.level,
                interval,
                extrapolation,
                reach,
                recovery_point_s: recovery_point_s.filter(|_| check.usable),
                usable: check.usable,
                not_usable: check.why_not,
            }
        })
        .collect();
    let far = |r: &PredictionRow| r.reach.as_ref().map_or(0.0, |x| x.distance_ratio);
    rows.sort_by(|a, b| far(b).total_cmp(&far(a)));
    rows
}
