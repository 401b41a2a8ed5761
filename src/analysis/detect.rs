//! Detections: what a reader of the tables would look for by eye, found by rule and
//! stored in the result JSON: the knee in per-portion times, crossovers between
//! targets, first-run effects, outlier runs and noisy cells (with the runs needed).

use super::stats::{OUTLIER_REL_DIFF, OUTLIER_Z, Summary, median, modified_z_scores};
use crate::measure::Portion;
use crate::units::{fmt_secs, sig3};
use serde::{Deserialize, Serialize};

/// A knee in a tree that is not one directory filled portion by portion (a ladder's
/// rung) is reported only when the per-file cost rises this much.
pub const KNEE_RISE: f64 = 0.20;

/// Fewest portions on each side of a change point: each segment is a line, and a line
/// through 3 portions bends to one slow portion (a phase's last one, say).
pub const KNEE_MIN_SEGMENT: usize = 4;

/// Two segments are the better fit when their AICc is lower than one line's by more than
/// this times ln n (n portions). The change point is the best of n − 7 places, so the
/// best gain of a series with no knee grows with n: over flat series with ±5% uniform
/// noise (199 each, simulated) its 99th percentile was 1.3, 8.7, 14.3 and 17.9 at 12, 20,
/// 40 and 100 portions, below 4·ln n (9.9, 12.0, 14.8, 18.4).
pub const KNEE_AICC_PER_LN_N: f64 = 4.0;

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
    /// directory and found none: one line fits the per-file cost as well as two segments
    /// (its per-file cost at the first and last portion, µs), or too few portions
    /// (`one_segment_us_per_file` absent).
    NoKnee {
        target: String,
        op: String,
        tree_key: String,
        up_to_files: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        one_segment_us_per_file: Option<[f64; 2]>,
    },
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

/// A change point in the per-file cost, found by [`knee_fit`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Knee {
    /// Files already handled (in the directory, for create) when the cost changed.
    pub at_files: u64,
    /// Median per-file cost of the portions before and after it.
    pub before_us_per_file: f64,
    pub after_us_per_file: f64,
    pub rise: f64,
    /// Where the change point may be: the change points whose two-segment AICc is within
    /// 2 of the best one's (absent in files from before the change-point fit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_files_range: Option<[u64; 2]>,
    /// How much lower the two segments' AICc is than one line's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aicc_gain: Option<f64>,
}

impl Detection {
    /// One line for the terminal, the Markdown and the HTML report.
    pub fn text(&self) -> String {
        match self {
            Detection::Knee { target, op, tree_key, knee: k } => {
                let range = match k.at_files_range {
                    Some([lo, hi]) if lo != hi => format!(" (change point between {lo} and {hi})"),
                    _ => String::new(),
                };
                let by = match k.aicc_gain {
                    Some(g) => format!("; two segments fit {} better in AICc than one line", sig3(g)),
                    None => String::new(),
                };
                format!(
                    "knee: {op} on {tree_key} ({target}): past {} files{range} the per-file cost {} {}% ({} → {} µs per file, medians of the portions before and after{by})",
                    k.at_files,
                    if k.rise >= 0.0 { "rises" } else { "falls" },
                    sig3(k.rise.abs() * 100.0),
                    sig3(k.before_us_per_file),
                    sig3(k.after_us_per_file)
                )
            }
            Detection::NoKnee { target, op, tree_key, up_to_files, one_segment_us_per_file } => {
                match one_segment_us_per_file {
                    Some([first, last]) => format!(
                        "no knee: {op} on {tree_key} ({target}): up to {up_to_files} files one line fits the per-file cost as well as two segments (AICc): {} → {} µs per file, first to last portion",
                        sig3(*first),
                        sig3(*last)
                    ),
                    None => format!(
                        "no knee: {op} on {tree_key} ({target}): up to {up_to_files} files, too few portions to look (two segments need {} each; --portion {} gives {KNEE_PORTIONS})",
                        KNEE_MIN_SEGMENT,
                        (up_to_files / KNEE_PORTIONS).max(1)
                    ),
                }
            }
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

/// A knee is looked for on `--portion`'s grid when it gives this many portions at least;
/// on a finer one when the recorded portions allow ([`knee_grid`]).
pub const KNEE_PORTIONS: u64 = 20;

/// The portion size the knee is looked for on (and dirsize's table is printed on):
/// `portion` when the runs' `total` files give [`KNEE_PORTIONS`] of them; else the
/// finest grid the recorded portions support (a portion is also closed once a second, so
/// a slow file system records finer ones): the largest recorded portion, rounded up to
/// 1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 × 10ᵏ files, never coarser than `portion`.
pub fn knee_grid(runs: &[(&[Portion], u64)], portion: u64) -> u64 {
    let portion = portion.max(1);
    let total = runs.iter().map(|r| r.1).min().unwrap_or(0);
    if total / portion >= KNEE_PORTIONS {
        return portion;
    }
    let Some(largest) = runs.iter().flat_map(|(p, _)| p.iter()).map(|p| p.files).filter(|f| *f > 0).max() else {
        return portion;
    };
    let mut decade = 1u64;
    while decade.saturating_mul(10) <= largest {
        decade *= 10;
    }
    let round = [10u64, 15, 20, 25, 30, 40, 50, 60, 80, 100]
        .iter()
        .map(|m| decade.saturating_mul(*m) / 10)
        .find(|g| *g >= largest)
        .unwrap_or(largest);
    round.clamp(1, portion)
}

/// What the change-point fit of a per-portion series found ([`knee_fit`]).
#[derive(Debug, Clone, PartialEq)]
pub enum KneeFit {
    /// Fewer than 2 × [`KNEE_MIN_SEGMENT`] portions: two segments cannot be fitted.
    TooFew,
    /// One line fits as well as two segments: its per-file cost (s) at the first and the
    /// last portion.
    OneSegment { first_s: f64, last_s: f64 },
    /// Two segments fit better: the change point.
    Knee(Knee),
}

/// The knee of the per-file cost against the files already handled (the median over runs
/// per portion: [`median_per_file`]) by a change-point fit: one line through every
/// portion against two lines, the second starting at portion τ (each with at least
/// [`KNEE_MIN_SEGMENT`] portions), each fitted by least absolute deviations (a slow
/// portion pulls a segment little), compared by AICc with Laplace errors (one line: 3
/// parameters with the scale; two segments: 6, τ counted). Two segments win when their
/// best AICc is lower by more than [`KNEE_AICC_PER_LN_N`] · ln n (the search over τ
/// inflates the gain); the interval on τ is the change points
/// whose AICc is within 2 of the best (past 100 portions τ is tried on a grid of every
/// (n/100)-th portion, then at every portion around the grid's best).
pub fn knee_fit(per_file_s: &[f64], portion: u64) -> KneeFit {
    let n = per_file_s.len();
    if n < 2 * KNEE_MIN_SEGMENT {
        return KneeFit::TooFew;
    }
    let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let y = per_file_s;
    // A floor on the residuals, so an exact series (synthetic) has a finite likelihood.
    let floor = 1e-9 * y.iter().map(|v| v.abs()).sum::<f64>() + f64::MIN_POSITIVE;
    let aicc = |sad: f64, k: f64| {
        let nf = n as f64;
        2.0 * k + 2.0 * nf * (2.0 * sad.max(floor) / nf).ln() + 2.0 * nf + 2.0 * k * (k + 1.0) / (nf - k - 1.0)
    };
    let (a, b, sad_one) = l1_line(&x, y);
    let one = aicc(sad_one, 3.0);
    let fit_at = |t: usize| aicc(l1_line(&x[..t], &y[..t]).2 + l1_line(&x[t..], &y[t..]).2, 6.0);
    let (first, last) = (KNEE_MIN_SEGMENT, n - KNEE_MIN_SEGMENT);
    let lowest = |v: &[(usize, f64)]| *v.iter().min_by(|p, q| p.1.total_cmp(&q.1)).expect("a change point");
    // Past 100 portions: every (n/100)-th change point, then every one around the best.
    let step = (n / 100).max(1);
    let mut two: Vec<(usize, f64)> = (first..=last).step_by(step).map(|t| (t, fit_at(t))).collect();
    if step > 1 {
        let (coarse, _) = lowest(&two);
        for t in coarse.saturating_sub(step - 1).max(first)..=(coarse + step - 1).min(last) {
            if !two.iter().any(|p| p.0 == t) {
                two.push((t, fit_at(t)));
            }
        }
        two.sort_by_key(|p| p.0);
    }
    let (at, best) = lowest(&two);
    if one - best <= KNEE_AICC_PER_LN_N * (n as f64).ln() {
        return KneeFit::OneSegment { first_s: a, last_s: a + b * (n - 1) as f64 };
    }
    let near: Vec<usize> = two.iter().filter(|p| p.1 <= best + 2.0).map(|p| p.0).collect();
    let (before, after) = (median(&y[..at]), median(&y[at..]));
    let files = |t: usize| t as u64 * portion;
    KneeFit::Knee(Knee {
        at_files: files(at),
        before_us_per_file: before * 1e6,
        after_us_per_file: after * 1e6,
        rise: if before > 0.0 { after / before - 1.0 } else { 0.0 },
        at_files_range: Some([files(near[0]), files(near[near.len() - 1])]),
        aicc_gain: Some(one - best),
    })
}

/// The knee of a per-portion series, when two segments fit it better ([`knee_fit`]).
pub fn knee(per_file_s: &[f64], portion: u64) -> Option<Knee> {
    match knee_fit(per_file_s, portion) {
        KneeFit::Knee(k) => Some(k),
        _ => None,
    }
}

/// The least-absolute-deviations line through (x, y): (intercept, slope, sum of absolute
/// residuals), by iteratively reweighted least squares from the least-squares line (the
/// best of 40 rounds; enough for the few dozen portions of a series).
fn l1_line(x: &[f64], y: &[f64]) -> (f64, f64, f64) {
    let scale = y.iter().map(|v| v.abs()).sum::<f64>() / y.len().max(1) as f64;
    let eps = (scale * 1e-6).max(f64::MIN_POSITIVE);
    let mut w = vec![1.0; y.len()];
    let mut best = (0.0, 0.0, f64::INFINITY);
    for _ in 0..40 {
        let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for ((xi, yi), wi) in x.iter().zip(y).zip(&w) {
            sw += wi;
            sx += wi * xi;
            sy += wi * yi;
            sxx += wi * xi * xi;
            sxy += wi * xi * yi;
        }
        let det = sw * sxx - sx * sx;
        let slope = if det.abs() > 1e-12 * sw * sxx.max(1.0) { (sw * sxy - sx * sy) / det } else { 0.0 };
        let intercept = (sy - slope * sx) / sw;
        let res: Vec<f64> = x.iter().zip(y).map(|(xi, yi)| (yi - intercept - slope * xi).abs()).collect();
        let sad: f64 = res.iter().sum();
        if sad < best.2 {
            best = (intercept, slope, sad);
        }
        for (wi, r) in w.iter_mut().zip(&res) {
            *wi = 1.0 / r.max(eps);
        }
    }
    best
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

    /// A per-portion series of `n` portions at `level(i)`, with noise of relative size
    /// `noise` (uniform, from a fixed LCG: the same series every time).
    fn series(n: usize, noise: f64, seed: u64, level: impl Fn(usize) -> f64) -> Vec<f64> {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..n)
            .map(|i| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let u = (state >> 11) as f64 / (1u64 << 53) as f64;
                level(i) * (1.0 + noise * (2.0 * u - 1.0))
            })
            .collect()
    }

    #[test]
    fn a_clean_knee_is_found_where_it_is() {
        // 309 then 569 µs a file (exFAT's, issue 40) from portion 12 of 20, ±1% noise.
        let v = series(20, 0.01, 1, |i| if i < 12 { 309e-6 } else { 569e-6 });
        let k = knee(&v, 1000).expect("a knee");
        assert_eq!(k.at_files, 12_000);
        let [lo, hi] = k.at_files_range.unwrap();
        assert!(lo <= 12_000 && 12_000 <= hi && hi - lo <= 1000, "{lo} … {hi}");
        assert!((k.before_us_per_file - 309.0).abs() < 5.0 && (k.after_us_per_file - 569.0).abs() < 8.0, "{k:?}");
        assert!((k.rise - 0.84).abs() < 0.05, "{k:?}");
        assert!(k.aicc_gain.unwrap() > KNEE_AICC_PER_LN_N * 20f64.ln());
        let text = Detection::Knee { target: "t".into(), op: "create".into(), tree_key: "k".into(), knee: k }.text();
        assert!(text.contains("past 12000 files") && text.contains("rises 84"), "{text}");
        // A bend (flat, then rising) is a knee too: the second segment is a line.
        let bend = series(30, 0.02, 2, |i| if i < 15 { 100e-6 } else { 100e-6 * (1.0 + 0.1 * (i - 14) as f64) });
        let k = knee(&bend, 500).expect("a bend");
        assert!((6_000..=8_500).contains(&k.at_files), "{k:?}");
        // 300 portions (a grid of every 3rd change point, refined): found to the portion.
        let long = series(300, 0.02, 6, |i| if i < 137 { 50e-6 } else { 80e-6 });
        assert_eq!(knee(&long, 1000).expect("a knee").at_files, 137_000);
    }

    #[test]
    fn the_knee_grid_is_as_fine_as_the_recorded_portions() {
        let p = |files: u64, end: u64| Portion { files, elapsed_s: 1.0, end_files: end };
        // 20,000 files at 10,000 a portion, closed once a second every ~2,600 files.
        let run: Vec<Portion> = (1..=7).map(|k| p(2_600, 2_600 * k)).chain([p(1_800, 20_000), p(0, 20_000)]).collect();
        assert_eq!(knee_grid(&[(&run, 20_000)], 10_000), 3_000);
        // Enough portions of --portion's: kept.
        assert_eq!(knee_grid(&[(&run, 20_000)], 1_000), 1_000);
        // A fast file system records --portion's portions only: kept.
        let fast = [p(10_000, 10_000), p(10_000, 20_000)];
        assert_eq!(knee_grid(&[(&fast, 20_000)], 10_000), 10_000);
        assert_eq!(knee_grid(&[], 10_000), 10_000);
        assert_eq!(knee_grid(&[(&[p(7, 7)], 7)], 10_000), 8);
    }

    #[test]
    fn no_knee_when_one_line_fits_as_well() {
        // Flat with noise: one line.
        for seed in 1..20 {
            let flat = series(20, 0.05, seed, |_| 200e-6);
            assert!(knee(&flat, 1000).is_none(), "seed {seed}: {:?}", knee(&flat, 1000));
        }
        // A steady rise (a linear directory scan) is one line, not a knee.
        let ramp = series(25, 0.03, 3, |i| 100e-6 * (1.0 + 0.05 * i as f64));
        match knee_fit(&ramp, 1000) {
            KneeFit::OneSegment { first_s, last_s } => {
                assert!((first_s - 100e-6).abs() < 6e-6 && (last_s - 220e-6).abs() < 10e-6, "{first_s} {last_s}")
            }
            other => panic!("a ramp: {other:?}"),
        }
        // One slow portion, in the middle or the last (it also carries the end of the
        // phase), is noise, not a knee.
        let mut spike = series(20, 0.02, 4, |_| 1e-6);
        spike[12] = 5e-6;
        assert!(knee(&spike, 1000).is_none());
        let mut last = series(30, 0.02, 5, |_| 1e-6);
        last[29] = 1.3e-6;
        assert!(knee(&last, 10_000).is_none(), "{:?}", knee(&last, 10_000));
        assert_eq!(knee_fit(&[1e-6; 7], 1000), KneeFit::TooFew);
    }

    #[test]
    fn a_noisy_knee_has_a_wider_interval() {
        // ±15% noise on the same step: mostly found, the interval holding the truth.
        let mut found = 0;
        for seed in 1..21 {
            let v = series(20, 0.15, seed, |i| if i < 10 { 309e-6 } else { 569e-6 });
            if let Some(k) = knee(&v, 1000) {
                found += 1;
                let [lo, hi] = k.at_files_range.unwrap();
                assert!(lo <= 10_000 && 10_000 <= hi, "seed {seed}: {lo} … {hi} ({k:?})");
            }
        }
        // At ±15% noise (sd 8.7%) and 20 portions a single line through the step fits
        // nearly as well in some series: found in 16 of these 20.
        assert!(found >= 15, "found in {found} of 20 noisy series");
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
