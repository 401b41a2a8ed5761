//! The result model: the versioned JSON document every later command reads
//! ([`ResultSet`]: measurements, summaries, fitted models, warnings, detections), what
//! is derived from its raw measurements, and the analyses built on it (compare,
//! predict, plan). It belongs to the layer that measures: experiments write it, views
//! (`report`) read it; it imports neither.

pub mod adaptive;
pub mod compare;
mod derive;
pub mod meaning;
pub mod peers;
pub mod plan;
pub mod pool;
pub mod predict;
pub mod predict_objects;
pub mod prices;
#[cfg(test)]
pub(crate) mod testing;

use crate::analysis::detect::Detection;
use crate::analysis::model::{self, CostModel};
use crate::analysis::stats::{self, Summary};
use crate::measure::PhaseResult;
use crate::measure::provenance::Provenance;
use crate::ops::CreateOptions;
use crate::storage::TargetInfo;
use crate::tree::TreeSpec;
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
    /// What reading the file said that no derivation makes again (a peer's output: its
    /// jobs that were not read, and why): [`ResultSet::derive`] puts them first among the
    /// warnings, combining keeps every file's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
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
    /// Seconds from the experiment's start to the end of the trial this run belongs to:
    /// how far apart in time a cell's blocks were (the drift its interval can take in).
    /// Absent in older files and where runs are not trials of the driver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_s: Option<f64>,
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
    /// Is the fit an answer (its left-out error within the threshold), and if not, why
    /// not (`analysis::model::check`). Absent in older files: [`ModelRow::check`]
    /// judges them from their left-out errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit_check: Option<model::check::FitCheck>,
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
    /// The verdict on the fit: the recorded one, or (older files) one judged now from the
    /// left-out errors the file holds.
    pub fn check(&self) -> model::check::FitCheck {
        self.fit_check.clone().unwrap_or_else(|| model::check::check(&self.model, Default::default()))
    }

    /// The fitted costs are an answer: printed as figures, used by `predict`.
    pub fn usable(&self) -> bool {
        self.check().usable
    }

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

/// Write phases (their results have a durable and a returned time).
fn is_write_phase(m: &Measurement) -> bool {
    m.result.flush_s.is_some()
}

impl ResultSet {
    /// How far apart in time each cell's blocks of runs were (first run's trial to last
    /// run's, over cells of two blocks or more): (median, most) in seconds. An interval
    /// over blocks takes in the drift of this span, not the machine's slower changes
    /// (issue 40, item 6). None when the measurements carry no times (older files) or no
    /// cell has two blocks.
    pub fn block_span(&self) -> Option<(f64, f64)> {
        let mut cells: Vec<(&str, &str, &str, u32, u32, f64, f64)> = Vec::new();
        for m in &self.measurements {
            let (Some(at), Some(b)) = (m.at_s, m.block) else { continue };
            let key = (m.target.as_str(), m.op.as_str(), m.tree_key.as_str());
            match cells.iter_mut().find(|c| (c.0, c.1, c.2) == key) {
                Some(c) => (c.3, c.4, c.5, c.6) = (c.3.min(b), c.4.max(b), c.5.min(at), c.6.max(at)),
                None => cells.push((key.0, key.1, key.2, b, b, at, at)),
            }
        }
        let spans: Vec<f64> = cells.iter().filter(|c| c.4 > c.3).map(|c| c.6 - c.5).collect();
        if spans.is_empty() {
            return None;
        }
        let most = spans.iter().copied().fold(0.0, f64::max);
        Some((crate::analysis::stats::median(&spans), most))
    }

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
            notes: Vec::new(),
            detections: Vec::new(),
            complete: false,
        }
    }

    /// Recompute summaries, models and warnings from the raw measurements. Only
    /// complete measurements (no error, not interrupted) enter the statistics. Its phases are
    /// in `derive.rs`.
    pub fn derive(&mut self) {
        self.summaries.clear();
        self.models.clear();
        self.warnings.clone_from(&self.notes);
        self.detections.clear();
        let keys = self.cell_keys();
        for key in &keys {
            self.summarize_cell(key);
        }
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for (t, o, _) in &keys {
            if !pairs.contains(&(t.as_str(), o.as_str())) {
                pairs.push((t, o));
            }
        }
        for (target, op) in pairs {
            if let Some((row, not_fitted)) = self.fit_model(&keys, target, op) {
                self.warnings.extend(not_fitted);
                self.models.push(row);
            }
        }
        let crossovers = self.crossovers();
        self.detections.extend(crossovers);
        self.warnings.extend(self.storage_warnings());
        self.warnings.extend(self.error_warnings());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::Point;

    /// A cell's blocks and when their trials ended: the span is first to last, over cells
    /// of two blocks or more; files without times (older ones) have none.
    #[test]
    fn block_span_is_how_far_apart_a_cells_blocks_ran() {
        let mut rs = testing::one_cell(&[1.0; 6]);
        assert_eq!(rs.block_span(), None, "no times: no span");
        for (i, m) in rs.measurements.iter_mut().enumerate() {
            m.block = Some(i as u32 / 2);
            m.at_s = Some(10.0 + 30.0 * i as f64);
        }
        assert_eq!(rs.block_span(), Some((150.0, 150.0)));
        // A second cell of one block has no span of its own and changes nothing.
        let mut other = rs.measurements[0].clone();
        other.op = "read".into();
        rs.measurements.push(other);
        assert_eq!(rs.block_span(), Some((150.0, 150.0)));
        let text = crate::report::table::intervals_text(&rs);
        assert!(text.contains("2.5 min") || text.contains("150"), "{text}");
    }

    /// No knee is a finding when one flat directory was filled portion by portion,
    /// whatever the experiment is called; beside other trees (a ladder's rungs) it is not.
    #[test]
    fn no_knee_is_said_from_the_result_not_the_name() {
        let mut rs = testing::one_cell(&[1.0; 6]);
        rs.experiment.portion_files = 64;
        let portions: Vec<crate::measure::Portion> =
            (1..=4).map(|k| crate::measure::Portion { files: 64, elapsed_s: 0.25, end_files: 64 * k }).collect();
        for m in &mut rs.measurements {
            m.result.portions = portions.clone();
        }
        let no_knee = |rs: &ResultSet| rs.detections.iter().any(|d| matches!(d, Detection::NoKnee { .. }));
        rs.derive();
        assert!(no_knee(&rs), "one flat tree in portions, named {}", rs.experiment.name);
        let mut other = rs.measurements[0].clone();
        other.tree.files = 16;
        other.tree_key = other.tree.key();
        rs.measurements.push(other);
        rs.derive();
        assert!(!no_knee(&rs), "a ladder's rung is not a knee search");
    }

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
            fit_check: None,
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
