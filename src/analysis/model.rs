//! Cost model `time = a·files + b·bytes + c·dirs + d·Σ_dir n_dir² + k` fitted by
//! non-negative weighted least squares on the cells of an experiment.
//!
//! `a` (seconds per file) is the per-file cost, `1/b` the bandwidth, `c` the cost
//! of a directory, `a/b` the break-even file size (a file costs as much time as
//! writing `a/b` bytes) and `d` the directory-size cost: the time every entry
//! already in a directory adds to each file put there.
//!
//! ## Weighting
//!
//! The fit minimises the sum of squared *relative* residuals: measured times span
//! orders of magnitude (a ladder of 1 to 65536 files), and an unweighted fit would be
//! decided by the largest rungs alone. Every row is divided by its own time, giving a
//! least-squares problem with columns `files/s`, `bytes/s`, `dirs/s`, `Σn²/s` and
//! target 1 (weights `1/observed²`). Dividing by the *observed* time is biased: a cell
//! that came out fast by chance weighs more, so the fit leans low (issue 27). The fit
//! is therefore iterated (IRLS): the terms are chosen again with weights
//! `1/fitted²` from the previous round (`(s/ŝ)²` on the divided rows), until the
//! coefficients settle (at most 8 rounds). With one column this ends at
//! `a = mean(sᵢ/filesᵢ)`, the unbiased mean of the per-file times, where the
//! `1/observed²` weighting gave `Σ(f/s)/Σ(f/s)²`.
//!
//! ## The per-run constant
//!
//! `k` is what every run pays once, whatever the tree: starting threads, the
//! syncfs that ends a durable phase, opening the root (issue 27: the scan of a 5,000-file
//! tree took 47 ms where a model through 0 said 12 ms). It is one more candidate term,
//! kept as `c` and `d` are: free, beyond 2 standard errors, and preferred by the
//! criterion. In a ladder of one fixed total (1, 4, 16, … files of 64 MiB in all) the
//! bytes column is constant too: `b·bytes` and `k` cannot be told apart (the solver
//! finds the pair singular), one of them takes the constant, and the report says the
//! bandwidth is not resolved (`ModelRow::bytes_resolved`).
//!
//! ## The cell is the unit
//!
//! A *cell* is one tree on one target for one op: all its runs. Points with the
//! same (files, bytes, dirs, Σn²) are one cell, and the fit uses one row per
//! cell, its **median** time. Runs of a cell share everything a re-run does not
//! (the tree's placement on the device, the machine's state at that moment, the
//! order in the experiment), so they are not independent evidence about the
//! coefficients: treating 3 runs × 9 rungs as 27 independent points gave a
//! standard error of 0.28 µs on a 4 µs per-file cost on tmpfs while four
//! invocations scattered 3.5–4.3 µs. The model is a *random cell effect* model:
//! `median_cell = model(cell)·(1 + u_cell)`, where `u_cell` holds the cell effect
//! and the run noise left in the median. Its variance is estimated from the
//! residuals of the cell medians (`s² = RSS/(cells − p)`), so the coefficient
//! covariance `s²(XᵀX)⁻¹` and the Student t intervals with `cells − p` degrees
//! of freedom are the classical, exact-under-normality intervals of a balanced
//! random-effect model fitted on cell means (medians: one wild run moves a
//! median of 3 less than a mean). A cluster bootstrap over cells was the other
//! candidate; with the 5–17 cells of a ladder it under-covers (resamples hold
//! few distinct rungs, the percentile interval ignores the lost degrees of
//! freedom, and resamples without the extreme rungs are often singular), and it
//! needs a fixed random stream; the t interval is deterministic and its coverage
//! is checked by simulation in the tests (`coverage_*`).
//!
//! ## Prediction intervals
//!
//! A prediction is judged on what it must do: predict a tree that was not
//! measured. Every cell is left out in turn (leave-one-rung-out), the whole fit
//! (term selection and reweighting) redone on the others and the left-out cell
//! predicted; `cv_log_sd` = √(mean of ln(measured/predicted)²). The 95%
//! interval of a new tree is `ŝ·exp(±t·√(cv_log_sd² + max(0, v(x) − v̄)))` with
//! t on `cells − p` degrees of freedom, `v(x) = gᵀCov g/ŝ²` the relative
//! variance of the fitted value at the tree and `v̄` its mean over the cells:
//! the left-out errors already contain the parameter uncertainty of an average
//! cell, so only the excess of a tree far from the cells (an extrapolation)
//! widens the interval. On the log scale the interval is multiplicative and
//! never reaches 0.
//!
//! ## Which coefficients are kept
//!
//! Non-negativity: the exact NNLS solution (`linalg.rs`) is found by trying every subset of
//! free coefficients (15 at most) and keeping the non-negative solution with
//! the smallest residual. The directory cost `c`, the directory-size cost `d` and the
//! per-run constant `k` are kept only when the data resolve them next to the per-file
//! cost (each above 2 standard errors, a not clamped) and when each of them makes the
//! fit predict the cells it leaves out better and lowers the small-sample Akaike
//! criterion (Mallows' Cp on 6 cells or fewer) (`select.rs`): in most trees the
//! directory count moves in step with the file count, and an unresolved c would only
//! blur a; a c that only the trees with directories decide takes k's place there. Of
//! the plain model and its additions that pass (c, d, k in any combination: a
//! directory cost can look negative until d takes its share), the one with the lowest
//! left-out error wins. (Until issue 40 the criterion alone decided; its value is
//! recorded for the models without and with d.) Beside the chosen model,
//! d is fitted once more unconstrained (`TermCheck`), so a d that did not enter is
//! either shown to be ≈ 0 or said to be unresolved (`dir_cost.rs`).
//!
//! ## A single run
//!
//! `predict_runs` gives the interval of what a user will time next: one run (or
//! the median of K), from the run-to-run noise inside the cells plus what the
//! leave-one-cell-out errors hold beyond it (see there).
//!
//! ## Why Σ n² (and not Σ n·log2 n)
//!
//! Both forms were fitted (relative LS on cell medians, AICc) to flat ladders of
//! 1, 2, 4 … 65,536 files in one directory on exFAT (exfat-fuse), NTFS (ntfs-3g),
//! and of 1, 4 … 65,536 files, flat and 256 per directory, on ext4, xfs and btrfs
//! (2026-11-23, BENCHMARKS.md "Directory-size term"). AICc, lower is better:
//!
//! | fs, op | plain | + d·Σn² | + d·Σn·log2 n |
//! |---|---:|---:|---:|
//! | exFAT create | −25.3 | **−48.7** | −30.1 (a < 0) |
//! | exFAT delete | −22.7 | **−42.2** | −24.9 (a < 0) |
//! | exFAT read | −24.8 | **−32.5** | −25.1 (a < 0) |
//! | NTFS create | −55.5 | **−69.3** | −63.1 (a < 0) |
//! | ext4 / xfs / btrfs, every op, flat and nested | **best** | 4–7 worse | 3–7 worse |
//!
//! exFAT keeps a directory as an unsorted list of entries that every create,
//! lookup and unlink scans: create time rose ×2.7–3.6 per doubling of the
//! directory above 4,096 files, the signature of n², which n·log n (×2.1 at
//! most) cannot follow without a negative per-file cost. ext4 (htree), xfs and
//! btrfs index their directories: neither term earns its parameter there. So
//! the one term the data need is the quadratic one; a knee (NTFS past
//! ~200k files per folder on other machines) is `dirsize`'s job, not this
//! model's.
//!
//! ## The tree's directories
//!
//! `Σ_dir n_dir²` (`Point::dir_sq`) comes from the tree's plan for measured
//! trees (flat: one directory with every file; nested: files per leaf), and for
//! real trees from an exact sum the inventory records while scanning, or, for
//! inventories written before it, from the files-per-directory log2 histogram
//! (every directory in bucket [lo, hi] counted as E[n²] of n uniform in it).

use super::linalg::{count, dot, quad};
pub use select::TermCheck;
use select::{Selected, select};
use serde::{Deserialize, Serialize};

/// Number of model columns: files, bytes, dirs, Σ n².
pub const P: usize = 5;

/// Covariates of a tree (files, bytes, dirs, Σn²): the columns but the constant.
pub const COVARIATES: usize = 4;

/// One measurement: `seconds` to handle `files` files totalling `bytes` bytes
/// in `dirs` directories, whose file counts squared sum to `dir_sq`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Point {
    pub files: f64,
    pub bytes: f64,
    pub dirs: f64,
    /// Σ over directories of (files directly in it)²; 0 when unknown (the term
    /// is then never resolved).
    pub dir_sq: f64,
    pub seconds: f64,
}

impl Point {
    fn g(&self) -> [f64; P] {
        [self.files, self.bytes, self.dirs, self.dir_sq, 1.0]
    }
}

/// Σ n² over the directories of a tree, from (files in a directory, how many
/// such directories) pairs.
pub fn dir_sq_of(counts: impl IntoIterator<Item = (u64, u64)>) -> f64 {
    counts.into_iter().map(|(n, dirs)| (n as f64) * (n as f64) * dirs as f64).sum()
}

/// Coefficient names, in column order (also the order of `covariance`).
pub const COEFFS: [&str; P] = ["per_file", "per_byte", "per_dir", "per_dir_entry", "per_run"];

/// How the intervals of a model were made (old result files: `points`).
fn legacy_method() -> String {
    "points".into()
}

/// Fitted cost model. All fields are finite (JSON-safe).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// a: seconds per file (>= 0).
    pub per_file_s: f64,
    /// Standard error of a (cells as the unit); 0.0 when a was fixed at 0 or
    /// when cells <= p (no residual degrees of freedom).
    pub per_file_se: f64,
    /// b: seconds per byte (>= 0).
    pub per_byte_s: f64,
    /// Standard error of b; 0.0 when b was fixed at 0 or when cells <= p.
    pub per_byte_se: f64,
    /// c: seconds per directory (>= 0); 0 when not resolved.
    #[serde(default)]
    pub per_dir_s: f64,
    /// Standard error of c; 0.0 when c was fixed at 0 or when cells <= p.
    #[serde(default)]
    pub per_dir_se: f64,
    /// d: seconds per (file, file in the same directory) pair: the term
    /// d·Σ_dir n_dir² (>= 0); 0 when not resolved or not chosen (`select.rs`).
    #[serde(default)]
    pub per_dir_entry_s: f64,
    /// Standard error of d; 0.0 when d was fixed at 0.
    #[serde(default)]
    pub per_dir_entry_se: f64,
    /// k: seconds every run pays once (>= 0); 0 when not resolved (older files).
    #[serde(default)]
    pub per_run_s: f64,
    /// Standard error of k; 0.0 when k was fixed at 0.
    #[serde(default)]
    pub per_run_se: f64,
    /// AICc of the model without and with the directory-size term (None when
    /// it could not be fitted or had too few cells).
    #[serde(default)]
    pub aicc_plain: Option<f64>,
    #[serde(default)]
    pub aicc_dir_entry: Option<f64>,
    /// The directory-size term beside the chosen model (also when it did not enter):
    /// its unconstrained estimate and the left-out error with and without it, for the
    /// verdict on d (`dir_cost`). None when Σn² is unknown or does not vary apart from
    /// the other columns (and in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_dir_entry_check: Option<TermCheck>,
    /// Covariance of (a, b, c, d, k) (rows and columns in [`COEFFS`] order; 3×3
    /// or 4×4 in older files); zero rows and columns for fixed
    /// coefficients. For prediction intervals.
    #[serde(default)]
    pub covariance: Vec<Vec<f64>>,
    /// Standard deviation of the relative residuals of the cells,
    /// s = sqrt(Σr²/(cells − p)): the scatter of one cell's median around the
    /// model (0 when cells <= p).
    #[serde(default)]
    pub residual_sd: f64,
    /// Residual degrees of freedom cells − p.
    #[serde(default)]
    pub df: usize,
    /// Relative residual of every point (run) used, (measured − fitted)/measured,
    /// in input order.
    #[serde(default)]
    pub residuals: Vec<f64>,
    /// Weighted R² of the cells' medians, same weighted problem:
    /// 1 − Σw(s − ŝ)² / Σw(s − s̄_w)², with w = 1/s² and s̄_w = Σws/Σw the
    /// weighted mean time. Centred, so it compares the model with a constant
    /// time; it can be negative for a model worse than that. 1.0 when all
    /// times are equal and fitted exactly, 0.0 when all times are equal and
    /// not fitted exactly.
    pub r2: f64,
    /// Number of points (runs) used (after dropping invalid ones).
    pub n: usize,
    /// Number of cells (distinct trees) the points form: the fit's rows.
    #[serde(default)]
    pub cells: usize,
    /// Weighting scheme: "fitted" (relative residuals, weights 1/fitted², IRLS), or
    /// "relative" (older files: w = 1/observed²).
    pub weighting: String,
    /// How the intervals were made: "cells" (cell medians, leave-one-cell-out
    /// prediction error), or "points" (older files: every run a point).
    #[serde(default = "legacy_method")]
    pub interval_method: String,
    /// ln(measured/predicted) of every cell when left out of the fit, in cell
    /// order (first appearance); empty when cells − 1 < p.
    #[serde(default)]
    pub cv_log_errors: Vec<f64>,
    /// √(mean of cv_log_errors²): the relative prediction error of a tree not
    /// in the fit (0 when unknown).
    #[serde(default)]
    pub cv_log_sd: f64,
    /// √(mean of (1 − hᵢ)·eᵢ²) over the left-out errors eᵢ, hᵢ the cell's leverage in
    /// the fit (its gᵀCov g/ŝ² over s²): a cell that only it decides (hᵢ near 1) errs
    /// mostly by its own leverage when left out, which a tree among the cells does not
    /// share; [`CostModel::predict_runs`] adds the tree's own parameter variance instead.
    /// None in older files (they keep the uncorrected interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cv_log_sd_corrected: Option<f64>,
    /// Mean over the cells of the fitted value's relative variance gᵀCov g/ŝ².
    #[serde(default)]
    pub param_rel_var_mean: f64,
    /// Run-to-run noise: the pooled standard deviation of ln(run time) inside the
    /// cells (0 when no cell has two runs; older files).
    #[serde(default)]
    pub run_log_sd: f64,
    /// Degrees of freedom of `run_log_sd`: Σ (runs of a cell − 1).
    #[serde(default)]
    pub run_df: usize,
    /// Mean over the cells of [`median_var_factor`] of their run counts: how much of
    /// the run noise is still in a cell's median (and so in `cv_log_sd`).
    #[serde(default)]
    pub cell_median_factor: f64,
    /// (files, bytes, dirs, Σn²) of every cell, in cell order: where the model was
    /// calibrated (for [`CostModel::reach`]; empty in older files).
    #[serde(default)]
    pub cell_covariates: Vec<[f64; COVARIATES]>,
    /// 1/b in bytes per second, when b > 0.
    pub bandwidth_bytes_per_s: Option<f64>,
    /// a/b in bytes, when b > 0: a file costs as much time as this many bytes.
    pub break_even_bytes: Option<f64>,
    /// Coefficients fixed at 0 ("per_file" / "per_byte" / "per_dir" /
    /// "per_dir_entry" / "per_run"): clamped by the non-negativity constraint, or left out
    /// because the data cannot separate them (columns in a fixed ratio, a
    /// column that is all zero, a directory cost within 2 standard errors of 0,
    /// or a term that does not lower the left-out error and AICc).
    pub constrained: Vec<String>,
}

/// A predicted time with its 95% prediction interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub seconds: f64,
    /// `None` when the model has no residual degrees of freedom.
    pub interval95: Option<[f64; 2]>,
}

/// A directory or directory-size cost below this many standard errors is not reported.
const DIR_T_MIN: f64 = 2.0;

/// One cell: covariates, the median time of its runs, and their log scatter.
struct Cell {
    g: [f64; P],
    seconds: f64,
    /// Runs in the cell, and Σ (ln t − mean ln t)² over them.
    runs: usize,
    log_ss: f64,
}

/// Points grouped by identical covariates (first-appearance order).
fn cells_of(points: &[&Point]) -> Vec<Cell> {
    let mut keys: Vec<[u64; P]> = Vec::new();
    let mut times: Vec<Vec<f64>> = Vec::new();
    for p in points {
        let g = p.g();
        let key = g.map(f64::to_bits);
        let i = match keys.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                keys.push(key);
                times.push(Vec::new());
                keys.len() - 1
            }
        };
        times[i].push(p.seconds);
    }
    keys.iter()
        .zip(&times)
        .map(|(k, t)| {
            let mean = t.iter().map(|x| x.ln()).sum::<f64>() / t.len() as f64;
            Cell {
                g: k.map(f64::from_bits),
                seconds: super::stats::median(t),
                runs: t.len(),
                log_ss: t.iter().map(|x| (x.ln() - mean).powi(2)).sum(),
            }
        })
        .collect()
}

fn finite_or_0(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

fn row(c: &Cell) -> [f64; P] {
    c.g.map(|x| x / c.seconds)
}

/// Variance of the median of `k` runs, as a share of one run's (normal runs): 1 for one,
/// ½ for two (their mean), π/(2k) from three (the large-sample value; above the exact
/// one for small k, so the interval errs wide).
pub fn median_var_factor(k: u32) -> f64 {
    match k {
        0 | 1 => 1.0,
        2 => 0.5,
        k => std::f64::consts::PI / (2.0 * k as f64),
    }
}

/// Welch–Satterthwaite degrees of freedom of a sum of variance estimates, each with its
/// own degrees of freedom: (Σ vᵢ)² / Σ (vᵢ² / dfᵢ), rounded down, at least the smallest
/// dfᵢ of a part that counts (a sum is never less certain than its least certain part).
fn satterthwaite(parts: &[(f64, usize)]) -> usize {
    let parts: Vec<(f64, usize)> = parts.iter().copied().filter(|&(v, df)| v > 0.0 && df > 0).collect();
    let least = parts.iter().map(|p| p.1).min().unwrap_or(1);
    let sum: f64 = parts.iter().map(|p| p.0).sum();
    let den: f64 = parts.iter().map(|&(v, df)| v * v / df as f64).sum();
    if den <= 0.0 || !sum.is_finite() {
        return least.max(1);
    }
    ((sum * sum / den).floor() as usize).max(least).max(1)
}

#[cfg(test)]
#[test]
fn satterthwaite_weighs_each_part_by_its_own_degrees_of_freedom() {
    // One part alone keeps its df; a small, uncertain part beside a large, well-known
    // one hardly lowers the large one's; two equal parts with equal df add them up.
    assert_eq!(satterthwaite(&[(0.02, 45), (0.0, 6)]), 45);
    assert_eq!(satterthwaite(&[(0.01, 6), (0.01, 6)]), 12);
    let mixed = satterthwaite(&[(0.001, 6), (0.02, 45)]);
    assert!((40..=51).contains(&mixed), "{mixed}"); // at most the sum of the two
    // Never below the least certain part that counts.
    assert!(satterthwaite(&[(0.02, 6), (0.0001, 45)]) >= 6);
    assert_eq!(satterthwaite(&[]), 1);
}

/// Reweighting rounds: weights from the fitted times (module docs, "Weighting").
const IRLS_ROUNDS: usize = 8;

/// Run noise left in a cell's median (relative variance), pooled over the cells: the
/// replicates' pure error (0 without replicates).
fn pure_error(cells: &[Cell]) -> f64 {
    let df: usize = cells.iter().map(|c| c.runs.saturating_sub(1)).sum();
    if df == 0 {
        return 0.0;
    }
    let var = cells.iter().map(|c| c.log_ss).sum::<f64>() / df as f64;
    let factor = cells.iter().map(|c| median_var_factor(c.runs.min(u32::MAX as usize) as u32)).sum::<f64>();
    var * factor / cells.len() as f64
}

/// The whole fit of some cells: terms selected with weights 1/observed², then selected
/// again with weights 1/fitted² until the fitted times settle (IRLS).
fn fit_cells(cells: &[Cell]) -> Option<Selected> {
    let rows: Vec<[f64; P]> = cells.iter().map(row).collect();
    let pure = pure_error(cells);
    let mut best = select(&rows, &vec![1.0; cells.len()], pure)?;
    for _ in 0..IRLS_ROUNDS {
        // Row i is g/s with target 1: weight (s/ŝ)² makes its term ((s − g·β)/ŝ)².
        let w: Vec<f64> = cells
            .iter()
            .map(|c| {
                let f = dot(&c.g, &best.sol.beta);
                if f > 0.0 && f.is_finite() { (c.seconds / f).powi(2).clamp(1e-2, 1e2) } else { 1.0 }
            })
            .collect();
        let Some(next) = select(&rows, &w, pure) else { break };
        let moved = (0..P).any(|j| (next.sol.beta[j] - best.sol.beta[j]).abs() > 1e-9 * best.sol.beta[j].abs());
        best = next;
        if !moved {
            break;
        }
    }
    Some(best)
}

/// Fits `seconds = a·files + b·bytes + c·dirs + d·Σn²` with a, b, c, d >= 0 (see
/// the module docs).
///
/// Points with non-finite or non-positive seconds, or with non-finite or
/// negative covariates, are dropped. Returns `None` when fewer than 2 cells
/// remain or when no coefficient can be estimated (e.g. all files, bytes and
/// dirs are 0).
pub fn fit(points: &[Point]) -> Option<CostModel> {
    let ok = |x: f64| x.is_finite() && x >= 0.0;
    let kept: Vec<&Point> = points
        .iter()
        .filter(|p| p.seconds.is_finite() && p.seconds > 0.0)
        .filter(|p| p.g().iter().all(|x| ok(*x)))
        .collect();
    let cells = cells_of(&kept);
    let m = cells.len();
    if m < 2 {
        return None;
    }
    let Selected { sol, aicc_plain, aicc_dir_entry, dir_entry } = fit_cells(&cells)?;

    let p = count(&sol.free);
    let df = m.saturating_sub(p);
    let s2 = if m > p { sol.rss / df as f64 } else { 0.0 };
    let covariance: Vec<Vec<f64>> = (0..P)
        .map(|i| {
            (0..P)
                .map(|j| {
                    let v = s2 * sol.inv[i][j];
                    if v.is_finite() { v } else { 0.0 }
                })
                .collect()
        })
        .collect();
    let se = |j: usize| {
        let v = covariance[j][j];
        if v > 0.0 { v.sqrt() } else { 0.0 }
    };

    // Weighted total sum of squares around the weighted mean time
    // s̄_w = Σws/Σw: Σ (1/s²)(s − s̄_w)² = Σ (1 − s̄_w/s)².
    let sum_w: f64 = cells.iter().map(|c| 1.0 / (c.seconds * c.seconds)).sum();
    let sum_ws: f64 = cells.iter().map(|c| 1.0 / c.seconds).sum();
    let mean_w = sum_ws / sum_w;
    let tss: f64 = cells.iter().map(|c| (1.0 - mean_w / c.seconds).powi(2)).sum();
    let r: f64 = cells.iter().map(|c| (1.0 - dot(&c.g, &sol.beta) / c.seconds).powi(2)).sum();
    let r2 = if tss > 0.0 {
        1.0 - r / tss
    } else if r == 0.0 {
        1.0
    } else {
        0.0
    };

    // Leave one cell out, the whole fit (term selection, reweighting) redone on the
    // others, predict it.
    let rel_var = |g: &[f64; P]| {
        let s = dot(g, &sol.beta);
        if s > 0.0 { quad(g, &covariance) / (s * s) } else { 0.0 }
    };
    let mut cv_log_errors = Vec::new();
    let mut corrected_ss = 0.0;
    if m > p && p > 0 {
        for (i, cell) in cells.iter().enumerate() {
            let others: Vec<Cell> = cells
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, c)| Cell { g: c.g, seconds: c.seconds, runs: c.runs, log_ss: c.log_ss })
                .collect();
            let Some(s) = fit_cells(&others) else { continue };
            let pred = dot(&cell.g, &s.sol.beta);
            if pred > 0.0 && pred.is_finite() {
                let e = (cell.seconds / pred).ln();
                let leverage = if s2 > 0.0 { (rel_var(&cell.g) / s2).clamp(0.0, 1.0) } else { 0.0 };
                corrected_ss += (1.0 - leverage) * e * e;
                cv_log_errors.push(e);
            }
        }
    }
    let cv_log_sd = if cv_log_errors.is_empty() {
        0.0
    } else {
        (cv_log_errors.iter().map(|e| e * e).sum::<f64>() / cv_log_errors.len() as f64).sqrt()
    };
    let cv_log_sd_corrected =
        (!cv_log_errors.is_empty()).then(|| finite_or_0((corrected_ss / cv_log_errors.len() as f64).sqrt()));
    let param_rel_var_mean = cells.iter().map(|c| rel_var(&c.g)).sum::<f64>() / m as f64;

    // Run-to-run noise, pooled over the cells with at least two runs.
    let run_df: usize = cells.iter().map(|c| c.runs.saturating_sub(1)).sum();
    let run_log_sd =
        if run_df > 0 { (cells.iter().map(|c| c.log_ss).sum::<f64>() / run_df as f64).sqrt() } else { 0.0 };
    let cell_median_factor =
        cells.iter().map(|c| median_var_factor(c.runs.min(u32::MAX as usize) as u32)).sum::<f64>() / m as f64;

    let constrained = (0..P).filter(|&j| !sol.free[j]).map(|j| COEFFS[j].to_string()).collect();
    let [a, b, c, d, k] = sol.beta;
    let bandwidth_bytes_per_s = (b > 0.0).then(|| 1.0 / b).filter(|x| x.is_finite());
    let break_even_bytes = (b > 0.0).then(|| a / b).filter(|x| x.is_finite());
    let residuals = kept
        .iter()
        .map(|pt| 1.0 - dot(&pt.g(), &sol.beta) / pt.seconds)
        .map(|v| if v.is_finite() { v } else { 0.0 })
        .collect();
    let finite = |x: f64| if x.is_finite() { x } else { 0.0 };

    Some(CostModel {
        per_file_s: a,
        per_file_se: se(0),
        per_byte_s: b,
        per_byte_se: se(1),
        per_dir_s: c,
        per_dir_se: se(2),
        per_dir_entry_s: d,
        per_dir_entry_se: se(3),
        per_run_s: k,
        per_run_se: se(4),
        aicc_plain,
        aicc_dir_entry,
        per_dir_entry_check: dir_entry.map(|mut c| {
            c.estimate_s = finite(c.estimate_s);
            c.se_s = finite(c.se_s);
            c
        }),
        covariance,
        residual_sd: s2.sqrt(),
        df,
        residuals,
        r2: finite(r2),
        n: kept.len(),
        cells: m,
        weighting: "fitted".to_string(),
        interval_method: "cells".to_string(),
        cv_log_sd: finite(cv_log_sd),
        cv_log_sd_corrected,
        cv_log_errors: cv_log_errors.into_iter().map(finite).collect(),
        param_rel_var_mean: finite(param_rel_var_mean),
        run_log_sd: finite(run_log_sd),
        run_df,
        cell_median_factor: finite(cell_median_factor),
        cell_covariates: cells.iter().map(|c| [c.g[0], c.g[1], c.g[2], c.g[3]]).collect(),
        bandwidth_bytes_per_s,
        break_even_bytes,
        constrained,
    })
}

impl CostModel {
    /// The model's time for a tree: a·files + b·bytes + c·dirs + d·Σn² + k.
    pub fn seconds(&self, files: f64, bytes: f64, dirs: f64, dir_sq: f64) -> f64 {
        self.per_file_s * files
            + self.per_byte_s * bytes
            + self.per_dir_s * dirs
            + self.per_dir_entry_s * dir_sq
            + self.per_run_s
    }

    /// Predicted time for a tree, with a 95% prediction interval (module docs):
    /// ŝ·exp(±t·√(cv_log_sd² + max(0, v(x) − v̄))), t on cells − p degrees of
    /// freedom. Models from older files ("points") keep their interval: Student
    /// t times sqrt(gᵀ·Cov·g + (s·ŝ)²).
    pub fn predict(&self, files: f64, bytes: f64, dirs: f64, dir_sq: f64) -> Prediction {
        self.predict_at(files, bytes, dirs, dir_sq, 0.95)
    }

    /// [`CostModel::predict`] with its interval at `level` (0.95: 95%).
    fn predict_at(&self, files: f64, bytes: f64, dirs: f64, dir_sq: f64, level: f64) -> Prediction {
        let g = [files, bytes, dirs, dir_sq, 1.0];
        let seconds = self.seconds(files, bytes, dirs, dir_sq);
        if self.df == 0 {
            return Prediction { seconds, interval95: None };
        }
        let t = super::stats::t_quantile_two_sided(self.df, level);
        let var_par = quad(&g, &self.covariance);
        if self.interval_method == "cells" && self.cv_log_sd > 0.0 && seconds > 0.0 {
            let excess = (var_par / (seconds * seconds) - self.param_rel_var_mean).max(0.0);
            let half = t * (self.cv_log_sd * self.cv_log_sd + excess).sqrt();
            return Prediction { seconds, interval95: Some([seconds * (-half).exp(), seconds * half.exp()]) };
        }
        let var = (self.residual_sd * seconds).powi(2) + var_par;
        let half = t * var.max(0.0).sqrt();
        Prediction { seconds, interval95: Some([(seconds - half).max(0.0), seconds + half]) }
    }

    /// Predicted time of what the user will do next: the median of `runs` runs (1: a
    /// single run) of a tree, with a 95% prediction interval on the log scale,
    /// `ŝ·exp(±t·√(misfit + v(x) + σ²_run·f(runs)))`:
    /// - `σ²_run·f(runs)`: run-to-run noise (`run_log_sd`, `run_df` degrees of freedom)
    ///   left in a median of `runs` ([`median_var_factor`]);
    /// - `misfit`: what the leave-one-cell-out errors (term selection redone in every
    ///   fold), each with its cell's leverage taken out (`cv_log_sd_corrected`), hold
    ///   beyond the run noise already in a cell's median:
    ///   `max(0, corrected² − σ²_run·cell_median_factor)` — the model's misfit and the
    ///   cells' own effects (placement, the machine's state at the time);
    /// - `v(x)`: the coefficients' uncertainty at this tree, gᵀCov g/ŝ²;
    /// - t on the Welch–Satterthwaite degrees of freedom of the sum (misfit and v(x) on
    ///   cells − p, the run noise on `run_df`). Before (and for older files) the raw
    ///   left-out errors stood for misfit and an average cell's v(x), and t took cells − p
    ///   for all of it: the leverage of the design's corner cells entered as misfit, the
    ///   run noise's many degrees of freedom were not used, and a 10%-noise simulation
    ///   gave ×1.8 where the known model gives ×1.22 (`model/tests.rs`).
    ///
    /// Drift between the calibration and the user's run (another day, another load) is
    /// not in it: one calibration cannot measure it. Models without run noise (older
    /// files, one run per cell) fall back to [`CostModel::predict`].
    ///
    /// `level`: the interval's two-sided level (0.95 by default; `predict --level`); the
    /// same parts, with t at that level. The field keeps its name `interval95`: the
    /// caller says which level it asked for.
    pub fn predict_runs(&self, files: f64, bytes: f64, dirs: f64, dir_sq: f64, runs: u32, level: f64) -> Prediction {
        let seconds = self.seconds(files, bytes, dirs, dir_sq);
        if self.interval_method != "cells" || self.run_df == 0 || self.df == 0 || seconds <= 0.0 {
            return self.predict_at(files, bytes, dirs, dir_sq, level);
        }
        let g = [files, bytes, dirs, dir_sq, 1.0];
        let run_var = self.run_log_sd * self.run_log_sd;
        let param = quad(&g, &self.covariance) / (seconds * seconds);
        let ahead = run_var * median_var_factor(runs.max(1));
        let half = match self.cv_log_sd_corrected {
            Some(c) => {
                // A tree outside the calibrated range (`reach`: jointly, on log files,
                // bytes, directories and files per directory — a tree 3× larger than
                // every cell keeps its relative variance, so leverage alone misses it) or
                // beyond every cell's leverage is an extrapolation: the raw left-out errors
                // (each cell predicted from the others, the corner cells from beyond
                // theirs) are its analogue, not the corrected ones.
                let outside = self.reach(files, bytes, dirs, dir_sq).is_some_and(|r| r.outside);
                let c = if outside || self.beyond_the_cells(param) { self.cv_log_sd } else { c };
                // The model's part (cells − p degrees of freedom) and the run noise's
                // (run_df) each on their own: Welch–Satterthwaite's degrees of freedom
                // for the sum, rounded down.
                let model = (c * c - run_var * self.cell_median_factor).max(0.0) + param;
                let df = satterthwaite(&[(model, self.df), (ahead, self.run_df)]);
                super::stats::t_quantile_two_sided(df, level) * (model + ahead).sqrt()
            }
            None => {
                let misfit = (self.cv_log_sd * self.cv_log_sd - run_var * self.cell_median_factor).max(0.0);
                let excess = (param - self.param_rel_var_mean).max(0.0);
                super::stats::t_quantile_two_sided(self.df, level) * (misfit + excess + ahead).sqrt()
            }
        };
        Prediction { seconds, interval95: Some([seconds * (-half).exp(), seconds * half.exp()]) }
    }

    /// Whether a tree whose fitted value has relative variance `param` (gᵀCov g/ŝ²) lies
    /// beyond every calibrated cell's: its leverage above the largest cell's.
    fn beyond_the_cells(&self, param: f64) -> bool {
        let cells = self.cell_covariates.iter().map(|c| {
            let g = [c[0], c[1], c[2], c[3], 1.0];
            let s = self.seconds(c[0], c[1], c[2], c[3]);
            if s > 0.0 { quad(&g, &self.covariance) / (s * s) } else { 0.0 }
        });
        param > cells.fold(0.0, f64::max)
    }

    /// How far a tree lies from the cells the model was calibrated on (None: older
    /// files without the cells' covariates). `dirs` counts directories below the root,
    /// as the cells do.
    pub fn reach(&self, files: f64, bytes: f64, dirs: f64, dir_sq: f64) -> Option<reach::Reach> {
        reach::reach(&self.cell_covariates, [files, bytes, dirs, dir_sq])
    }

    /// 95% interval of coefficient `j` ([`COEFFS`] order): ± t(cells − p)·s.e.,
    /// clipped at 0. None without degrees of freedom.
    pub fn interval95(&self, j: usize) -> Option<[f64; 2]> {
        let (v, se) = match j {
            0 => (self.per_file_s, self.per_file_se),
            1 => (self.per_byte_s, self.per_byte_se),
            2 => (self.per_dir_s, self.per_dir_se),
            3 => (self.per_dir_entry_s, self.per_dir_entry_se),
            _ => (self.per_run_s, self.per_run_se),
        };
        if self.df == 0 {
            return None;
        }
        let h = super::stats::t_quantile_975(self.df) * se;
        Some([(v - h).max(0.0), v + h])
    }
}

pub mod check;
pub mod dir_cost;
pub mod reach;
mod select;
#[cfg(test)]
mod tests;
