//! What [`ResultSet::derive`] computes from the raw measurements, by phases: the cells in
//! the experiment's order, each cell's summary with its warnings and detections, a cost
//! model per (target, op), crossovers, and the warnings about errors.

use super::{ExperimentInfo, Measurement, ModelRow, ResultSet, SummaryRow, adaptive, block_ids, split_disturbed};
use crate::analysis::blocks;
use crate::analysis::detect::{self, Detection};
use crate::analysis::model::{self, Point};
use crate::analysis::stats::Summary;
use crate::units::{fmt_secs, sig3};

/// One cell: (target, op, tree key).
type Key = (String, String, String);

impl ResultSet {
    /// Every (target, op, tree) measured, in the experiment's order, so tables follow it:
    /// targets and ops as listed, trees by size (runs are shuffled within each round, so
    /// the order in which cells were first seen says nothing).
    pub(super) fn cell_keys(&self) -> Vec<Key> {
        let mut keys: Vec<Key> = Vec::new();
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
        let ops = &self.experiment.ops;
        let size = |k: &str| size_of.iter().find(|(t, _)| t == k).map_or((0, 0), |(_, s)| *s);
        // Stable: keys of equal rank keep their first-seen order.
        keys.sort_by_key(|(t, o, k)| (position(&target_ids, t), position(ops, o), size(k)));
        keys
    }

    /// One cell's summary row (none with too few runs), its warnings and detections.
    pub(super) fn summarize_cell(&mut self, key: &Key) {
        let (target, op, tree_key) = key;
        let adaptive = self.experiment.adaptive.is_some();
        let until = self.experiment.until;
        let ms: Vec<&Measurement> = self
            .measurements
            .iter()
            .filter(|m| &m.target == target && &m.op == op && &m.tree_key == tree_key && m.result.complete())
            .collect();
        let disturbed = ms.iter().filter(|m| m.result.disturbed()).count();
        let (used, left_out) = split_disturbed(&ms, adaptive);
        if adaptive && disturbed > 0 && left_out.is_empty() {
            self.warnings.push(too_disturbed(key, &ms, disturbed));
        }
        let raw: Vec<f64> = used.iter().map(|m| m.seconds(until)).collect();
        let Some(stats) = blocks::summarize_blocked(&raw, &block_ids(&used)) else {
            return;
        };
        if !left_out.is_empty()
            && let Some(w) = moved_median(key, &ms, left_out.len(), &stats, until)
        {
            self.warnings.push(w);
        }
        let stopped = self.experiment.adaptive.map(|a| stop_reason(&a, &stats, ms.len(), disturbed, self.complete));
        for d in detect::of_runs(target, op, tree_key, &raw, &stats) {
            // Adaptive runs say per cell what precision they reached: no "more runs
            // needed" advice beside it (the detection stays in the JSON).
            let advice = matches!(d, Detection::HighCv { .. }) && !adaptive;
            if matches!(d, Detection::FirstRun { .. }) || advice {
                self.warnings.push(d.text());
            }
            self.detections.push(d);
        }
        let one_tree = self.measurements.iter().all(|m| &m.tree_key == tree_key);
        self.detections.extend(knee(&self.experiment, key, &ms, one_tree));
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

    /// The cost model of one (target, op) over its cells' runs (disturbed ones left out
    /// as in the summaries) with the verdict on it, and a warning saying why when it is
    /// no answer (`not fitted: …`). None: fewer than 3 tree shapes, or no fit.
    pub(super) fn fit_model(&self, keys: &[Key], target: &str, op: &str) -> Option<(ModelRow, Option<String>)> {
        let all: Vec<&Measurement> =
            self.measurements.iter().filter(|m| m.target == target && m.op == op && m.result.complete()).collect();
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
            return None; // a model from fewer than 3 tree shapes says nothing
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
        let model = model::fit(&points)?;
        let range = |f: &dyn Fn(&Measurement) -> u64| {
            [ms.iter().map(|m| f(m)).min().unwrap_or(0), ms.iter().map(|m| f(m)).max().unwrap_or(0)]
        };
        // Is the fit an answer? Judged by its left-out cells; the runs it rests on that
        // were disturbed say why it may not be.
        let disturbed_runs = all.iter().filter(|m| m.result.disturbed()).count();
        let ctx = model::check::Context { disturbed_runs, adaptive: self.experiment.adaptive.is_some() };
        let fit_check = model::check::check(&model, ctx);
        let not_fitted = fit_check.why_not.as_ref().map(|why| format!("{op} ({target}): {why}"));
        let row = ModelRow {
            target: target.to_string(),
            op: op.to_string(),
            files_range: range(&|m| m.tree_files),
            bytes_range: range(&|m| m.tree_bytes),
            dirs_range: range(&|m| m.tree_dirs),
            max_files_per_dir_range: range(&|m| counts(m).iter().map(|c| c.0).max().unwrap_or(0)),
            model,
            fit_check: Some(fit_check),
        };
        Some((row, not_fitted))
    }

    /// Crossovers between targets per op; and delete against re-format on each target:
    /// above which file count formatting the file system is the faster way to empty it.
    pub(super) fn crossovers(&self) -> Vec<Detection> {
        let mut found = Vec::new();
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
            found.extend(detect::crossovers(op, &cells));
        }
        for t in self.targets.iter().map(|t| &t.id) {
            let cells: Vec<detect::Cell> = self
                .summaries
                .iter()
                .filter(|s| &s.target == t && (s.op == "delete" || s.op == crate::ops::REFORMAT))
                .map(|s| detect::Cell { target: &s.op, files: s.tree_files, stats: &s.stats })
                .collect();
            if cells.iter().any(|c| c.target == "delete") && cells.iter().any(|c| c.target != "delete") {
                found.extend(detect::crossovers(&format!("emptying {t}"), &cells));
            }
        }
        found
    }

    /// One line per run that met errors, with its first.
    pub(super) fn error_warnings(&self) -> Vec<String> {
        self.measurements
            .iter()
            .filter(|m| m.result.errors > 0)
            .map(|m| {
                format!(
                    "{} on {} run {}: {} errors, first: {}",
                    m.op,
                    m.tree_key,
                    m.run,
                    m.result.errors,
                    m.result.first_error.as_deref().unwrap_or("?")
                )
            })
            .collect()
    }
}

/// The end of the warning on a cell whose disturbed runs were too many to leave out.
pub(super) const TOO_DISTURBED: &str = ", too many to leave out: the figures measure the neighbours too";

/// The end of the warning on a median the disturbed runs moved past its interval.
pub(super) const MOVED_MEDIAN: &str = ": the disturbance moved it past its interval";

/// An adaptive cell with disturbed runs, too many to leave out: what disturbed them.
fn too_disturbed((target, op, tree_key): &Key, ms: &[&Measurement], disturbed: usize) -> String {
    let fired = |sig: &str| {
        ms.iter().any(|m| m.result.machine.as_ref().is_some_and(|a| a.disturbed_by.iter().any(|b| b == sig)))
    };
    let mut why = Vec::new();
    if fired("cpu") || !fired("io") {
        why.push(format!("more than {} cores busy besides this one", crate::measure::machine::DISTURBED_CORES));
    }
    if fired("io") {
        why.push(format!(
            "others' storage traffic above {} MiB/s",
            crate::measure::machine::DISTURBED_IO_BPS / 1048576.0
        ));
    }
    format!(
        "{op} on {tree_key} ({target}): {disturbed} of {} runs were disturbed by other processes ({}){TOO_DISTURBED}",
        ms.len(),
        why.join("; ")
    )
}

/// Leaving the disturbed runs out moved the median past its own interval: said with both
/// figures, so a reader sees what the neighbours did.
fn moved_median(
    (target, op, tree_key): &Key,
    ms: &[&Measurement],
    left_out: usize,
    stats: &Summary,
    until: super::Until,
) -> Option<String> {
    let all: Vec<f64> = ms.iter().map(|m| m.seconds(until)).collect();
    let with = blocks::summarize_blocked(&all, &block_ids(ms))?;
    let [lo, hi] = stats.median_ci95_s?;
    (with.median_s < lo || with.median_s > hi).then(|| {
        format!(
            "{op} on {tree_key} ({target}): median {} without the {left_out} disturbed runs [{} – {}], {} with them{MOVED_MEDIAN}",
            fmt_secs(stats.median_s),
            fmt_secs(lo),
            fmt_secs(hi),
            fmt_secs(with.median_s)
        )
    })
}

/// The knee of a cell's time per file by the change-point fit (`detect::knee_fit`), or,
/// where a knee was looked for (dirsize), that there is none up to here. In a tree that
/// is not one directory filled portion by portion (a ladder's rung: many directories),
/// the per-portion cost is not against the files in a folder: a knee there is reported
/// only when the cost rises by `detect::KNEE_RISE` at least.
fn knee(
    experiment: &ExperimentInfo,
    (target, op, tree_key): &Key,
    ms: &[&Measurement],
    one_tree: bool,
) -> Option<Detection> {
    let runs: Vec<(&[crate::measure::Portion], u64)> =
        ms.iter().map(|m| (m.result.portions.as_slice(), m.tree_files)).collect();
    let portion = detect::knee_grid(&runs, experiment.portion_files);
    let per_file = detect::median_per_file(&runs, portion);
    let sought = one_tree && knee_sought(ms) && !per_file.is_empty();
    let (target, op, tree_key) = (target.clone(), op.clone(), tree_key.clone());
    match detect::knee_fit(&per_file, portion) {
        detect::KneeFit::Knee(knee) if sought || knee.rise >= detect::KNEE_RISE => {
            Some(Detection::Knee { target, op, tree_key, knee })
        }
        // Said explicitly: the knee was looked for and is not there up to here.
        fit if sought => Some(Detection::NoKnee {
            target,
            op,
            tree_key,
            up_to_files: per_file.len() as u64 * portion,
            one_segment_us_per_file: match fit {
                detect::KneeFit::OneSegment { first_s, last_s } => Some([first_s * 1e6, last_s * 1e6]),
                _ => None,
            },
        }),
        _ => None,
    }
}

/// Was a knee looked for, so that none found is a finding? When the experiment (`one_tree`:
/// it measured this tree alone, as dirsize does; a ladder's rungs are many) filled one
/// directory portion by portion (`portion_files` each; the caller asks for one whole
/// portion at least): every file of the tree in one directory. Said by the result
/// itself, not by the experiment's name, so files of every version (and any experiment
/// of that shape) read alike.
fn knee_sought(ms: &[&Measurement]) -> bool {
    let Some(first) = ms.first() else { return false };
    matches!(crate::tree::layout::files_per_dir(&first.tree).as_slice(), [(_, 1)])
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
