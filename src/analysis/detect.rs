//! Detections: what a reader of the tables would look for by eye, found by rule and
//! stored in the result JSON: the knee in per-portion times, crossovers between
//! targets, first-run effects, outlier runs and noisy cells (with the runs needed).

use super::stats::{OUTLIER_REL_DIFF, OUTLIER_Z, Summary, median, modified_z_scores};
use crate::measure::Portion;
use crate::units::{fmt_secs, sig3};
use serde::{Deserialize, Serialize};

/// Per-file cost must rise this much, and stay up, to count as a knee.
pub const KNEE_RISE: f64 = 0.20;

/// Outlier runs are looked for from this many runs on: with 3 or 4, the median
/// absolute deviation is one of two or three gaps and flags ordinary scatter.
pub const OUTLIER_MIN_RUNS: usize = 5;

/// One finding. `kind` tags it in the JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Detection {
    /// Past `at_files` files the per-file cost of `op` stays ≥ 20% higher.
    Knee {
        target: String,
        op: String,
        tree_key: String,
        #[serde(flatten)]
        knee: Knee,
    },
    /// A dirsize experiment looked for a knee up to `up_to_files` files in one
    /// directory and found none (the per-file cost never stayed 20% up).
    NoKnee { target: String, op: String, tree_key: String, up_to_files: u64 },
    /// Between two adjacent file counts the faster of two targets changes.
    Crossover {
        op: String,
        /// Faster at the smaller file count.
        faster_below: String,
        /// Faster at the larger file count.
        faster_above: String,
        /// Interpolated on log-log axes between the two measured file counts.
        at_files: f64,
        between_files: [u64; 2],
        /// Both neighbouring differences are outside each other's 95% CIs.
        significant: bool,
    },
    /// Run 1 differs from the others (see [`Summary::first_run_outlier`]).
    FirstRun { target: String, op: String, tree_key: String, first_s: f64, median_s: f64 },
    /// A later run with |modified z| > 3.5 and ≥ 20% from the median.
    Outlier { target: String, op: String, tree_key: String, run: usize, seconds: f64, median_s: f64, z: f64 },
    /// CV above 10%: more runs needed for a ±5% interval.
    HighCv { target: String, op: String, tree_key: String, cv: f64, runs: usize, runs_needed: usize },
    /// The runs fall into two groups far apart (see [`bimodal`]): the median lies
    /// between two behaviours, each of which is a figure of its own.
    Bimodal { target: String, op: String, tree_key: String, modes_s: [f64; 2], shares: [f64; 2] },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// Files already handled (in the directory, for create) when the cost rose.
    pub at_files: u64,
    pub before_us_per_file: f64,
    pub after_us_per_file: f64,
    pub rise: f64,
}

impl Detection {
    /// One line for the terminal, the Markdown and the HTML report.
    pub fn text(&self) -> String {
        match self {
            Detection::Knee { target, op, tree_key, knee: k } => format!(
                "knee: {op} on {tree_key} ({target}): past {} files the per-file cost rises {}% ({} → {} µs per file, medians)",
                k.at_files,
                sig3(k.rise * 100.0),
                sig3(k.before_us_per_file),
                sig3(k.after_us_per_file)
            ),
            Detection::NoKnee { target, op, tree_key, up_to_files } => format!(
                "no knee: {op} on {tree_key} ({target}): the per-file cost never stays {}% above the first portions' up to {up_to_files} files",
                (KNEE_RISE * 100.0) as u32
            ),
            Detection::Crossover { op, faster_below, faster_above, at_files, between_files, significant } => format!(
                "crossover: {op}: {faster_below} is faster below ~{} files, {faster_above} above (between {} and {} files){}",
                sig3(*at_files),
                between_files[0],
                between_files[1],
                if *significant { "" } else { "; within the 95% CIs, may be noise" }
            ),
            Detection::FirstRun { target, op, tree_key, first_s, median_s } => format!(
                "{op} on {tree_key} ({target}): run 1 took {} against a median of {}: a first-run effect (some file systems are fast or slow only on their first run)",
                fmt_secs(*first_s),
                fmt_secs(*median_s)
            ),
            Detection::Outlier { target, op, tree_key, run, seconds, median_s, z } => format!(
                "{op} on {tree_key} ({target}): run {run} took {} against a median of {} (modified z-score {}): an outlier",
                fmt_secs(*seconds),
                fmt_secs(*median_s),
                sig3(*z)
            ),
            Detection::Bimodal { target, op, tree_key, modes_s, shares } => format!(
                "bimodal: {op} on {tree_key} ({target}): two groups of runs, {} ({:.0}% of runs) and {} ({:.0}%): the median lies between two behaviours",
                fmt_secs(modes_s[0]),
                shares[0] * 100.0,
                fmt_secs(modes_s[1]),
                shares[1] * 100.0
            ),
            Detection::HighCv { target, op, tree_key, cv, runs, runs_needed } => format!(
                "{op} on {tree_key} ({target}): noisy (CV {}% over {runs} runs): more runs needed, about {runs_needed} for a ±5% interval",
                sig3(cv * 100.0)
            ),
        }
    }
}

/// Seconds per portion for one measurement: time between the points where the running
/// total crosses k·portion (linear interpolation inside a recorded portion).
pub fn per_portion(portions: &[Portion], portion: u64, total: u64) -> Vec<f64> {
    let mut cum = vec![(0u64, 0.0f64)];
    let mut t = 0.0;
    for p in portions {
        t += p.elapsed_s;
        cum.push((p.end_files, t));
    }
    let at = |f: u64| -> f64 {
        let i = cum.partition_point(|c| c.0 < f);
        if i >= cum.len() {
            return cum.last().map_or(0.0, |c| c.1);
        }
        if i == 0 || cum[i].0 == f {
            return cum[i].1;
        }
        let (a, b) = (cum[i - 1], cum[i]);
        a.1 + (b.1 - a.1) * (f - a.0) as f64 / (b.0 - a.0).max(1) as f64
    };
    let n = total / portion.max(1);
    (1..=n).map(|k| at(k * portion) - at((k - 1) * portion)).collect()
}

/// Per-file seconds by portion, the median over runs (each run resampled by
/// [`per_portion`]); empty when no run has a whole portion.
pub fn median_per_file(runs: &[(&[Portion], u64)], portion: u64) -> Vec<f64> {
    let per: Vec<Vec<f64>> = runs.iter().map(|(p, total)| per_portion(p, portion, *total)).collect();
    let n = per.iter().map(Vec::len).min().unwrap_or(0);
    (0..n).map(|k| median(&per.iter().map(|r| r[k]).collect::<Vec<_>>()) / portion.max(1) as f64).collect()
}

/// The first portion from which the per-file cost stays ≥ KNEE_RISE above the first
/// portions' (median of the first three), judged by the median of the rest. "Stays"
/// needs at least two portions from the knee on: the last portion alone (which also
/// carries the end of the phase, e.g. the final syncfs) is not a knee.
pub fn knee(per_file_s: &[f64], portion: u64) -> Option<Knee> {
    if per_file_s.len() < 5 {
        return None;
    }
    let base = median(&per_file_s[..3]);
    for k in 3..per_file_s.len() - 1 {
        let after = median(&per_file_s[k..]);
        if per_file_s[k] > base * (1.0 + KNEE_RISE) && after > base * (1.0 + KNEE_RISE) {
            return Some(Knee {
                at_files: k as u64 * portion,
                before_us_per_file: base * 1e6,
                after_us_per_file: after * 1e6,
                rise: after / base - 1.0,
            });
        }
    }
    None
}

/// First-run, outlier and high-CV findings of one cell (raw seconds in run order).
pub fn of_runs(target: &str, op: &str, tree_key: &str, raw: &[f64], s: &Summary) -> Vec<Detection> {
    let (target, op, tree_key) = (target.to_string(), op.to_string(), tree_key.to_string());
    let mut out = Vec::new();
    if s.first_run_outlier {
        out.push(Detection::FirstRun {
            target: target.clone(),
            op: op.clone(),
            tree_key: tree_key.clone(),
            first_s: raw[0],
            median_s: s.median_s,
        });
    }
    let two = bimodal(raw);
    if let Some((modes_s, shares, _)) = two {
        out.push(Detection::Bimodal {
            target: target.clone(),
            op: op.clone(),
            tree_key: tree_key.clone(),
            modes_s,
            shares,
        });
    }
    // Runs of the other group of a bimodal cell are not outliers: they are its second mode.
    if raw.len() >= OUTLIER_MIN_RUNS && two.is_none() {
        let z = modified_z_scores(raw);
        for (i, (&x, &zi)) in raw.iter().zip(&z).enumerate() {
            // Run 1 is judged by the first-run rule above.
            if i == 0 || zi.abs() <= OUTLIER_Z || (x - s.median_s).abs() <= OUTLIER_REL_DIFF * s.median_s.abs() {
                continue;
            }
            out.push(Detection::Outlier {
                target: target.clone(),
                op: op.clone(),
                tree_key: tree_key.clone(),
                run: i + 1,
                seconds: x,
                median_s: s.median_s,
                z: zi,
            });
        }
    }
    if let (true, Some(cv), Some(needed)) = (s.noisy, s.cv, s.runs_needed) {
        out.push(Detection::HighCv { target, op, tree_key, cv, runs: s.n, runs_needed: needed });
    }
    out
}

/// Fewest runs for the bimodal rule, and the smallest share of runs in either group.
const BIMODAL_MIN_RUNS: usize = 10;
const BIMODAL_MIN_SHARE: f64 = 0.2;
/// The gap between the groups must be at least this (log scale: 15%) and this many
/// times the pooled standard deviation within them.
const BIMODAL_MIN_GAP: f64 = 0.14;
const BIMODAL_GAP_SD: f64 = 4.0;

/// Two modes: the runs, sorted on a log scale, split at the widest gap such that each
/// side holds at least 20% of them, and the gap is at least 15% and 4 pooled
/// within-group standard deviations wide (no unimodal sample of this size shows such a
/// gap except in its thin tails, which the 20% share excludes). Returns the two groups'
/// medians, their shares and the split's gap/sd ratio.
pub fn bimodal(raw: &[f64]) -> Option<([f64; 2], [f64; 2], f64)> {
    let n = raw.len();
    if n < BIMODAL_MIN_RUNS || raw.iter().any(|x| !(*x > 0.0 && x.is_finite())) {
        return None;
    }
    let mut logs: Vec<f64> = raw.iter().map(|x| x.ln()).collect();
    logs.sort_by(f64::total_cmp);
    let min_side = ((n as f64 * BIMODAL_MIN_SHARE).ceil() as usize).max(3);
    let sd = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>(), v.len() - 1)
    };
    let mut best: Option<(usize, f64)> = None;
    for k in min_side..=n - min_side {
        let gap = logs[k] - logs[k - 1];
        if gap < BIMODAL_MIN_GAP {
            continue;
        }
        let ((a, da), (b, db)) = (sd(&logs[..k]), sd(&logs[k..]));
        let pooled = ((a + b) / (da + db) as f64).sqrt().max(1e-9);
        let ratio = gap / pooled;
        if ratio >= BIMODAL_GAP_SD && best.is_none_or(|(_, r)| ratio > r) {
            best = Some((k, ratio));
        }
    }
    let (k, ratio) = best?;
    let modes = [median(&logs[..k]).exp(), median(&logs[k..]).exp()];
    Some((modes, [k as f64 / n as f64, (n - k) as f64 / n as f64], ratio))
}

/// One target's times for one op at one file count.
#[derive(Debug, Clone)]
pub struct Cell<'a> {
    pub target: &'a str,
    pub files: u64,
    pub stats: &'a Summary,
}

/// Crossovers of one op between every pair of targets, over the file counts both
/// measured (cells of one op; several trees of one file count: the first is used).
pub fn crossovers(op: &str, cells: &[Cell]) -> Vec<Detection> {
    let mut targets: Vec<&str> = Vec::new();
    for c in cells {
        if !targets.contains(&c.target) {
            targets.push(c.target);
        }
    }
    let mut out = Vec::new();
    for (i, a) in targets.iter().enumerate() {
        for b in &targets[i + 1..] {
            let mut pts: Vec<(u64, &Summary, &Summary)> = Vec::new();
            for ca in cells.iter().filter(|c| c.target == *a) {
                if pts.iter().any(|p| p.0 == ca.files) {
                    continue;
                }
                if let Some(cb) = cells.iter().find(|c| c.target == *b && c.files == ca.files) {
                    pts.push((ca.files, ca.stats, cb.stats));
                }
            }
            pts.sort_by_key(|p| p.0);
            let valid = |s: &Summary| s.median_s > 0.0;
            pts.retain(|p| p.0 > 0 && valid(p.1) && valid(p.2));
            for w in pts.windows(2) {
                let (f0, a0, b0) = w[0];
                let (f1, a1, b1) = w[1];
                // Log ratio of the medians (robust to a slow run; symmetric in a and b).
                let r0 = (a0.median_s / b0.median_s).ln();
                let r1 = (a1.median_s / b1.median_s).ln();
                if r0 == 0.0 || r1 == 0.0 || (r0 < 0.0) == (r1 < 0.0) {
                    continue;
                }
                let (l0, l1) = ((f0 as f64).ln(), (f1 as f64).ln());
                let at = (l0 + (l1 - l0) * r0 / (r0 - r1)).exp();
                let (below, above) = if r0 < 0.0 { (*a, *b) } else { (*b, *a) };
                out.push(Detection::Crossover {
                    op: op.to_string(),
                    faster_below: below.to_string(),
                    faster_above: above.to_string(),
                    at_files: at,
                    between_files: [f0, f1],
                    significant: apart(a0, b0) && apart(a1, b1),
                });
            }
        }
    }
    out
}

/// The two 95% intervals do not overlap: the medians' when both have one (6 runs or
/// more), else the means' Student-t intervals (1-run cells: never).
fn apart(a: &Summary, b: &Summary) -> bool {
    let both_median = a.median_ci95_s.is_some() && b.median_ci95_s.is_some();
    let (ia, ib) = if both_median { (a.median_ci95_s, b.median_ci95_s) } else { (a.ci95_s, b.ci95_s) };
    match (ia, ib) {
        (Some([alo, ahi]), Some([blo, bhi])) => ahi < blo || bhi < alo,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::summarize as summary_of;

    #[test]
    fn per_portion_resamples_uneven_portions() {
        let p = vec![
            Portion { files: 150, elapsed_s: 1.5, end_files: 150 },
            Portion { files: 50, elapsed_s: 0.5, end_files: 200 },
            Portion { files: 100, elapsed_s: 2.0, end_files: 300 },
        ];
        let v = per_portion(&p, 100, 300);
        assert_eq!(v.len(), 3);
        assert!((v[0] - 1.0).abs() < 1e-9 && (v[1] - 1.0).abs() < 1e-9 && (v[2] - 2.0).abs() < 1e-9, "{v:?}");
        let m = median_per_file(&[(&p, 300), (&p, 300)], 100);
        assert!((m[2] - 0.02).abs() < 1e-12, "{m:?}");
    }

    #[test]
    fn finds_a_sustained_knee_only() {
        let mut v = vec![1e-6; 10];
        v.extend(vec![1.5e-6; 10]);
        let k = knee(&v, 1000).unwrap();
        assert_eq!(k.at_files, 10_000);
        assert!((k.rise - 0.5).abs() < 1e-9);
        let mut spike = vec![1e-6; 20];
        spike[12] = 5e-6; // one slow portion is noise, not a knee
        assert!(knee(&spike, 1000).is_none());
        assert!(knee(&[1e-6, 2e-6], 1000).is_none());
        // A slow last portion alone is not a knee either (dirsize on NTFS: 204 → 269 µs
        // in the 30th and last portion only).
        let mut last = vec![1e-6; 30];
        last[29] = 1.3e-6;
        assert!(knee(&last, 10_000).is_none());
    }

    #[test]
    fn outliers_first_run_and_noise() {
        let raw = [1.0, 1.01, 0.99, 3.0, 1.0, 1.02];
        let s = summary_of(&raw).unwrap();
        let d = of_runs("t", "create", "k", &raw, &s);
        assert!(d.iter().any(|d| matches!(d, Detection::Outlier { run: 4, .. })), "{d:?}");
        assert!(!d.iter().any(|d| matches!(d, Detection::FirstRun { .. })));
        assert!(d.iter().any(|d| matches!(d, Detection::HighCv { .. })), "CV is high with that outlier");
        let raw = [5.0, 1.0, 1.01, 0.99, 1.0];
        let s = summary_of(&raw).unwrap();
        let d = of_runs("t", "create", "k", &raw, &s);
        assert!(matches!(d[0], Detection::FirstRun { .. }));
        assert!(!d.iter().any(|d| matches!(d, Detection::Outlier { .. })), "run 1 is not also an outlier");
        let raw = [1.0, 1.01, 0.99];
        assert!(of_runs("t", "op", "k", &raw, &summary_of(&raw).unwrap()).is_empty());
    }

    #[test]
    fn crossover_interpolated_on_log_axes() {
        // Target x: 1 ms per file; y: 0.1 s fixed + 0.1 ms per file: y faster past ~111 files.
        let files = [1u64, 10, 100, 1000, 10_000];
        let sx: Vec<Summary> = files
            .iter()
            .map(|&f| summary_of(&[f as f64 * 1e-3, f as f64 * 1.001e-3, f as f64 * 0.999e-3]).unwrap())
            .collect();
        let sy: Vec<Summary> = files
            .iter()
            .map(|&f| {
                let t = 0.1 + f as f64 * 1e-4;
                summary_of(&[t, t * 1.001, t * 0.999]).unwrap()
            })
            .collect();
        let mut cells = Vec::new();
        for (i, &f) in files.iter().enumerate() {
            cells.push(Cell { target: "x", files: f, stats: &sx[i] });
            cells.push(Cell { target: "y", files: f, stats: &sy[i] });
        }
        let d = crossovers("create", &cells);
        assert_eq!(d.len(), 1, "{d:?}");
        match &d[0] {
            Detection::Crossover { faster_below, faster_above, at_files, between_files, significant, .. } => {
                assert_eq!((faster_below.as_str(), faster_above.as_str()), ("x", "y"));
                assert_eq!(*between_files, [100, 1000]);
                assert!(*at_files > 100.0 && *at_files < 1000.0, "{at_files}");
                assert!(*significant);
            }
            _ => unreachable!(),
        }
        assert!(d[0].text().contains("x is faster below"));
    }
    #[test]
    fn two_groups_of_runs_are_two_modes_not_outliers() {
        // 12 runs near 10 ms and 8 near 14 ms.
        let mut raw: Vec<f64> = (0..12).map(|i| 0.010 * (1.0 + 0.004 * (i % 5) as f64)).collect();
        raw.extend((0..8).map(|i| 0.014 * (1.0 + 0.004 * (i % 4) as f64)));
        let (modes, shares, _) = bimodal(&raw).expect("two modes");
        assert!((modes[0] - 0.0101).abs() < 3e-4 && (modes[1] - 0.0141).abs() < 3e-4, "{modes:?}");
        assert_eq!(shares, [0.6, 0.4]);
        let s = crate::analysis::stats::summarize(&raw).unwrap();
        let found = of_runs("t", "create", "k", &raw, &s);
        assert!(found.iter().any(|d| matches!(d, Detection::Bimodal { .. })), "{found:?}");
        assert!(!found.iter().any(|d| matches!(d, Detection::Outlier { .. })), "{found:?}");
        assert!(found.iter().find(|d| matches!(d, Detection::Bimodal { .. })).unwrap().text().contains("40%"));
        // One slow run among 20 is an outlier, not a mode; a unimodal spread is neither.
        let mut one = vec![0.010; 19];
        one.iter_mut().enumerate().for_each(|(i, x)| *x *= 1.0 + 0.003 * i as f64);
        one.push(0.03);
        assert!(bimodal(&one).is_none());
        let spread: Vec<f64> = (0..30).map(|i| 0.01 * (1.0 + 0.01 * i as f64)).collect();
        assert!(bimodal(&spread).is_none());
        assert!(bimodal(&raw[..9]).is_none(), "too few runs");
    }
}
