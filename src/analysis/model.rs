//! Cost model `time = a·files + b·bytes + c·dirs + d·Σ_dir n_dir²` fitted by
//! non-negative weighted least squares on the cells of an experiment.
//!
//! `a` (seconds per file) is the per-file cost, `1/b` the bandwidth, `c` the cost
//! of a directory, `a/b` the break-even file size (a file costs as much time as
//! writing `a/b` bytes) and `d` the directory-size cost: the time every entry
//! already in a directory adds to each file put there.
//!
//! ## Weighting
//!
//! Weights are `w_i = 1/seconds_i²`, i.e. the fit minimises the sum of squared
//! *relative* residuals: measured times span orders of magnitude (a ladder of
//! 1 to 65536 files), and an unweighted fit would be decided by the largest
//! rungs alone. Equivalently, every row is divided by its own time, giving an
//! ordinary least-squares problem with columns `files/s`, `bytes/s`, `dirs/s`,
//! `Σn²/s` and target 1; this is how the code computes everything.
//!
//! There is no intercept. In the typical ladder (a fixed total of bytes split
//! into 1, 4, 16, ... files) the bytes column is constant and plays the role
//! of the intercept.
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
//! measured. Every cell is left out in turn (leave-one-rung-out), the model
//! (same coefficients kept) refitted on the others and the left-out cell
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
//! Non-negativity: the exact NNLS solution is found by trying every subset of
//! free coefficients (15 at most) and keeping the non-negative solution with
//! the smallest residual. The directory cost `c` is kept only when the data
//! resolve it next to the per-file cost (c > 2 standard errors, a not
//! clamped): in most trees the directory count moves in step with the file
//! count, and an unresolved c would only blur a. The directory-size cost `d`
//! must pass the same test **and** lower the small-sample Akaike criterion
//! `AICc = m·ln(RSS/m) + 2k + 2k(k+1)/(m − k − 1)` (m cells, k = free
//! coefficients + 1 for the variance) of the model without it.
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

use serde::{Deserialize, Serialize};

/// Number of model columns: files, bytes, dirs, Σ n².
pub const P: usize = 4;

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
        [self.files, self.bytes, self.dirs, self.dir_sq]
    }
}

/// Σ n² over the directories of a tree, from (files in a directory, how many
/// such directories) pairs.
pub fn dir_sq_of(counts: impl IntoIterator<Item = (u64, u64)>) -> f64 {
    counts.into_iter().map(|(n, dirs)| (n as f64) * (n as f64) * dirs as f64).sum()
}

pub use crate::inventory::dir_sq_from_hist;

/// Coefficient names, in column order (also the order of `covariance`).
pub const COEFFS: [&str; P] = ["per_file", "per_byte", "per_dir", "per_dir_entry"];

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
    /// d·Σ_dir n_dir² (>= 0); 0 when not resolved or not chosen by AICc.
    #[serde(default)]
    pub per_dir_entry_s: f64,
    /// Standard error of d; 0.0 when d was fixed at 0.
    #[serde(default)]
    pub per_dir_entry_se: f64,
    /// AICc of the model without and with the directory-size term (None when
    /// it could not be fitted or had too few cells).
    #[serde(default)]
    pub aicc_plain: Option<f64>,
    #[serde(default)]
    pub aicc_dir_entry: Option<f64>,
    /// Covariance of (a, b, c, d) (rows and columns in [`COEFFS`] order; 3×3
    /// without d in older files); zero rows and columns for fixed
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
    /// Weighting scheme; always "relative" (w = 1/seconds²).
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
    /// Mean over the cells of the fitted value's relative variance gᵀCov g/ŝ².
    #[serde(default)]
    pub param_rel_var_mean: f64,
    /// 1/b in bytes per second, when b > 0.
    pub bandwidth_bytes_per_s: Option<f64>,
    /// a/b in bytes, when b > 0: a file costs as much time as this many bytes.
    pub break_even_bytes: Option<f64>,
    /// Coefficients fixed at 0 ("per_file" / "per_byte" / "per_dir" /
    /// "per_dir_entry"): clamped by the non-negativity constraint, or left out
    /// because the data cannot separate them (columns in a fixed ratio, a
    /// column that is all zero, a directory cost within 2 standard errors of 0,
    /// or a directory-size term the AICc does not prefer).
    pub constrained: Vec<String>,
}

/// A predicted time with its 95% prediction interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub seconds: f64,
    /// `None` when the model has no residual degrees of freedom.
    pub interval95: Option<[f64; 2]>,
}

/// Below this pivot of the unit-diagonal normal matrix the system is treated
/// as singular: rounding would be amplified by more than 1e10.
const SINGULAR_EPS: f64 = 1e-10;

/// A directory or directory-size cost below this many standard errors is not reported.
const DIR_T_MIN: f64 = 2.0;

const PLAIN: [bool; P] = [true, true, true, false];

/// One cell: covariates and the median time of its runs.
struct Cell {
    g: [f64; P],
    seconds: f64,
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
    keys.iter().zip(&times).map(|(k, t)| Cell { g: k.map(f64::from_bits), seconds: super::stats::median(t) }).collect()
}

fn row(c: &Cell) -> [f64; P] {
    c.g.map(|x| x / c.seconds)
}

fn count(free: &[bool; P]) -> usize {
    free.iter().filter(|f| **f).count()
}

/// Small-sample Akaike criterion of a solution on `m` rows (k = coefficients + variance).
fn aicc(sol: &Solution, m: usize) -> Option<f64> {
    let k = count(&sol.free) + 1;
    if m <= k + 1 {
        return None;
    }
    let m = m as f64;
    let k = k as f64;
    let v = m * (sol.rss.max(1e-300) / m).ln() + 2.0 * k + 2.0 * k * (k + 1.0) / (m - k - 1.0);
    v.is_finite().then_some(v)
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
    let rows: Vec<[f64; P]> = cells.iter().map(row).collect();

    let mut sol = nnls(&rows, &PLAIN)?;
    // A directory cost must be resolved alongside the per-file cost: when it is within
    // 2 s.e. of 0, or took the per-file cost's place (a clamped to 0, as happens when
    // files and directories grow in step), refit without it.
    if sol.free[2] && (sol.t(2, m) < DIR_T_MIN || !sol.free[0]) {
        sol = nnls(&rows, &[true, true, false, false])?;
    }
    // The directory-size term: resolved, a still free, and preferred by AICc.
    let aicc_plain = aicc(&sol, m);
    let mut aicc_dir_entry = None;
    if rows.iter().any(|r| r[3] > 0.0) {
        let allowed = [true, true, sol.free[2], true];
        if let Some(with) = nnls(&rows, &allowed) {
            aicc_dir_entry = aicc(&with, m);
            let better = matches!((aicc_dir_entry, aicc_plain), (Some(w), Some(p)) if w < p);
            if with.free[3] && with.free[0] && with.t(3, m) >= DIR_T_MIN && better {
                sol = with;
            }
        }
    }

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
    let r = sol.rss;
    let r2 = if tss > 0.0 {
        1.0 - r / tss
    } else if r == 0.0 {
        1.0
    } else {
        0.0
    };

    // Leave one cell out, same free coefficients (non-negative), predict it.
    let mut cv_log_errors = Vec::new();
    if m > p && p > 0 {
        for (i, cell) in cells.iter().enumerate() {
            let others: Vec<[f64; P]> = rows.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, r)| *r).collect();
            let Some(s) = nnls(&others, &sol.free) else { continue };
            let pred = dot(&cell.g, &s.beta);
            if pred > 0.0 && pred.is_finite() {
                cv_log_errors.push((cell.seconds / pred).ln());
            }
        }
    }
    let cv_log_sd = if cv_log_errors.is_empty() {
        0.0
    } else {
        (cv_log_errors.iter().map(|e| e * e).sum::<f64>() / cv_log_errors.len() as f64).sqrt()
    };
    let rel_var = |g: &[f64; P]| {
        let s = dot(g, &sol.beta);
        if s > 0.0 { quad(g, &covariance) / (s * s) } else { 0.0 }
    };
    let param_rel_var_mean = cells.iter().map(|c| rel_var(&c.g)).sum::<f64>() / m as f64;

    let constrained = (0..P).filter(|&j| !sol.free[j]).map(|j| COEFFS[j].to_string()).collect();
    let [a, b, c, d] = sol.beta;
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
        aicc_plain,
        aicc_dir_entry,
        covariance,
        residual_sd: s2.sqrt(),
        df,
        residuals,
        r2: finite(r2),
        n: kept.len(),
        cells: m,
        weighting: "relative".to_string(),
        interval_method: "cells".to_string(),
        cv_log_sd: finite(cv_log_sd),
        cv_log_errors: cv_log_errors.into_iter().map(finite).collect(),
        param_rel_var_mean: finite(param_rel_var_mean),
        bandwidth_bytes_per_s,
        break_even_bytes,
        constrained,
    })
}

fn dot(g: &[f64; P], beta: &[f64; P]) -> f64 {
    g.iter().zip(beta).map(|(x, b)| x * b).sum()
}

/// gᵀ·C·g over the covariance's rows and columns (3×3 in older files).
fn quad(g: &[f64; P], cov: &[Vec<f64>]) -> f64 {
    let mut v = 0.0;
    for (i, row) in cov.iter().enumerate().take(P) {
        for (j, c) in row.iter().enumerate().take(P) {
            v += g[i] * c * g[j];
        }
    }
    v
}

impl CostModel {
    /// The model's time for a tree: a·files + b·bytes + c·dirs + d·Σn².
    pub fn seconds(&self, files: f64, bytes: f64, dirs: f64, dir_sq: f64) -> f64 {
        self.per_file_s * files + self.per_byte_s * bytes + self.per_dir_s * dirs + self.per_dir_entry_s * dir_sq
    }

    /// Predicted time for a tree, with a 95% prediction interval (module docs):
    /// ŝ·exp(±t·√(cv_log_sd² + max(0, v(x) − v̄))), t on cells − p degrees of
    /// freedom. Models from older files ("points") keep their interval: Student
    /// t times sqrt(gᵀ·Cov·g + (s·ŝ)²).
    pub fn predict(&self, files: f64, bytes: f64, dirs: f64, dir_sq: f64) -> Prediction {
        let g = [files, bytes, dirs, dir_sq];
        let seconds = self.seconds(files, bytes, dirs, dir_sq);
        if self.df == 0 {
            return Prediction { seconds, interval95: None };
        }
        let t = super::stats::t_quantile_975(self.df);
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

    /// 95% interval of coefficient `j` ([`COEFFS`] order): ± t(cells − p)·s.e.,
    /// clipped at 0. None without degrees of freedom.
    pub fn interval95(&self, j: usize) -> Option<[f64; 2]> {
        let (v, se) = match j {
            0 => (self.per_file_s, self.per_file_se),
            1 => (self.per_byte_s, self.per_byte_se),
            2 => (self.per_dir_s, self.per_dir_se),
            _ => (self.per_dir_entry_s, self.per_dir_entry_se),
        };
        if self.df == 0 {
            return None;
        }
        let h = super::stats::t_quantile_975(self.df) * se;
        Some([(v - h).max(0.0), v + h])
    }
}

/// A candidate solution in the transformed (row/seconds) problem.
#[derive(Debug, Clone)]
struct Solution {
    beta: [f64; P],
    free: [bool; P],
    /// (XᵀX)⁻¹ over the free coefficients (zero elsewhere).
    inv: [[f64; P]; P],
    rss: f64,
}

impl Solution {
    /// Standard error of coefficient j on `m` rows.
    fn se(&self, j: usize, m: usize) -> f64 {
        let p = count(&self.free);
        if m <= p {
            return 0.0;
        }
        let v = self.rss / (m - p) as f64 * self.inv[j][j];
        if v.is_finite() && v > 0.0 { v.sqrt() } else { 0.0 }
    }

    /// Coefficient j in standard errors (0 when the s.e. is 0).
    fn t(&self, j: usize, m: usize) -> f64 {
        let se = self.se(j, m);
        if se > 0.0 { self.beta[j] / se } else { 0.0 }
    }
}

/// Relative residual of one transformed row: 1 − x·β = (s − ŝ)/s.
fn residual(x: &[f64; P], beta: &[f64; P]) -> f64 {
    1.0 - dot(x, beta)
}

/// Exact NNLS over the `allowed` columns: every subset of them solved
/// unconstrained; the non-negative solution with the smallest residual wins
/// (larger subsets first, so a tie keeps more coefficients).
fn nnls(rows: &[[f64; P]], allowed: &[bool; P]) -> Option<Solution> {
    let mut best: Option<Solution> = None;
    let mut subsets: Vec<[bool; P]> = (1u8..(1 << P))
        .map(|m| std::array::from_fn(|j| m & (1 << j) != 0))
        .filter(|s: &[bool; P]| (0..P).all(|j| allowed[j] || !s[j]))
        .collect();
    subsets.sort_by_key(|s| std::cmp::Reverse(count(s)));
    for s in subsets {
        let Some(c) = solve(rows, s) else { continue };
        if c.beta.iter().any(|b| *b < 0.0) {
            continue;
        }
        // Relative tolerance so that rounding does not prefer a smaller subset.
        if best.as_ref().is_none_or(|b| c.rss < b.rss - 1e-12 * b.rss.max(1e-300)) {
            best = Some(c);
        }
    }
    best
}

/// Unconstrained least squares on the `free` columns via the normal
/// equations, scaled to a unit diagonal (files, bytes, dirs and Σn² differ by
/// many orders of magnitude). `None` when (numerically) singular.
fn solve(rows: &[[f64; P]], free: [bool; P]) -> Option<Solution> {
    let cols: Vec<usize> = (0..P).filter(|&j| free[j]).collect();
    let p = cols.len();
    let mut g = vec![vec![0.0; p]; p];
    let mut h = vec![0.0; p];
    for x in rows {
        for (i, &ci) in cols.iter().enumerate() {
            h[i] += x[ci];
            for (j, &cj) in cols.iter().enumerate() {
                g[i][j] += x[ci] * x[cj];
            }
        }
    }
    let usable = |x: f64| x > 0.0 && x.is_finite();
    if !(0..p).all(|i| usable(g[i][i])) {
        return None;
    }
    let d: Vec<f64> = (0..p).map(|i| g[i][i].sqrt()).collect();
    for i in 0..p {
        h[i] /= d[i];
        for j in 0..p {
            g[i][j] /= d[i] * d[j];
        }
    }
    let ginv = invert_spd(g)?;
    let mut beta = [0.0; P];
    let mut inv = [[0.0; P]; P];
    for (i, &ci) in cols.iter().enumerate() {
        let bi: f64 = (0..p).map(|j| ginv[i][j] * h[j]).sum::<f64>() / d[i];
        if !bi.is_finite() {
            return None;
        }
        beta[ci] = bi;
        for (j, &cj) in cols.iter().enumerate() {
            inv[ci][cj] = ginv[i][j] / (d[i] * d[j]);
        }
    }
    let rss = rows.iter().map(|x| residual(x, &beta).powi(2)).sum();
    Some(Solution { beta, free, inv, rss })
}

/// Gauss–Jordan inverse of a symmetric positive definite matrix with unit
/// diagonal; its pivots are the Schur complements, so a pivot at or below
/// SINGULAR_EPS means the columns are (nearly) dependent.
fn invert_spd(mut a: Vec<Vec<f64>>) -> Option<Vec<Vec<f64>>> {
    let p = a.len();
    let mut inv: Vec<Vec<f64>> = (0..p).map(|i| (0..p).map(|j| if i == j { 1.0 } else { 0.0 }).collect()).collect();
    for k in 0..p {
        let piv = a[k][k];
        // NaN fails every comparison, so test it explicitly: it means singular too.
        if piv.is_nan() || piv <= SINGULAR_EPS {
            return None;
        }
        for j in 0..p {
            a[k][j] /= piv;
            inv[k][j] /= piv;
        }
        for i in 0..p {
            if i != k {
                let f = a[i][k];
                for j in 0..p {
                    a[i][j] -= f * a[k][j];
                    inv[i][j] -= f * inv[k][j];
                }
            }
        }
    }
    Some(inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: f64 = 3e-3; // s/file
    const B: f64 = 1e-9; // s/byte
    const MIB64: f64 = 64.0 * 1024.0 * 1024.0;

    fn rel(got: f64, want: f64) -> f64 {
        ((got - want) / want).abs()
    }

    /// Ladder: 64 MiB split into 1, 4, 16, ..., 65536 files.
    fn ladder_files() -> Vec<f64> {
        (0..9).map(|k| 4f64.powi(k)).collect()
    }

    fn exact(files: f64, bytes: f64) -> Point {
        Point { dirs: 0.0, dir_sq: 0.0, files, bytes, seconds: A * files + B * bytes }
    }

    /// Deterministic multiplicative noise in [1 − amp, 1 + amp] (an LCG; no
    /// rand crate).
    fn noise(state: &mut u64, amp: f64) -> f64 {
        *state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let unit = (*state >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
        1.0 + amp * (2.0 * unit - 1.0)
    }

    #[test]
    fn recovers_exact_ladder() {
        let pts: Vec<Point> = ladder_files().into_iter().map(|f| exact(f, MIB64)).collect();
        let m = fit(&pts).expect("fit");
        assert!(rel(m.per_file_s, A) < 1e-9, "a={}", m.per_file_s);
        assert!(rel(m.per_byte_s, B) < 1e-9, "b={}", m.per_byte_s);
        assert_eq!(m.n, 9);
        assert_eq!(m.weighting, "relative");
        assert_eq!(m.constrained, vec!["per_dir".to_string(), "per_dir_entry".to_string()]);
        assert!((m.r2 - 1.0).abs() < 1e-9, "r2={}", m.r2);
        assert!(rel(m.bandwidth_bytes_per_s.expect("b > 0"), 1e9) < 1e-9);
        // break-even = a/b = 3 MB
        assert!(rel(m.break_even_bytes.expect("b > 0"), A / B) < 1e-9);
        assert!(rel(m.break_even_bytes.expect("b > 0"), 3e6) < 1e-9);
        // Exact data: residuals are rounding only.
        assert!(m.per_file_se < 1e-9 * A && m.per_byte_se < 1e-9 * B);
    }

    #[test]
    fn recovers_exact_varying_bytes() {
        let sizes = [0.0, 512.0, 4096.0, 65_536.0, 1_048_576.0, 16_777_216.0];
        let mut pts = Vec::new();
        for (i, f) in ladder_files().into_iter().enumerate() {
            pts.push(exact(f, f * sizes[i % sizes.len()]));
        }
        let m = fit(&pts).expect("fit");
        assert!(rel(m.per_file_s, A) < 1e-9, "a={}", m.per_file_s);
        assert!(rel(m.per_byte_s, B) < 1e-9, "b={}", m.per_byte_s);
        assert_eq!(m.constrained, vec!["per_dir".to_string(), "per_dir_entry".to_string()]);
    }

    #[test]
    fn noisy_ladder_within_a_few_percent() {
        let mut state = 42;
        let pts: Vec<Point> = ladder_files()
            .into_iter()
            .flat_map(|f| [f, f, f]) // 3 repetitions per rung
            .map(|f| {
                let p = exact(f, MIB64);
                Point { seconds: p.seconds * noise(&mut state, 0.03), ..p }
            })
            .collect();
        let m = fit(&pts).expect("fit");
        assert_eq!(m.n, 27);
        assert!(rel(m.per_file_s, A) < 0.05, "a={}", m.per_file_s);
        assert!(rel(m.per_byte_s, B) < 0.05, "b={}", m.per_byte_s);
        assert!(m.per_file_se > 0.0 && m.per_byte_se > 0.0);
        // The true values are within a few standard errors.
        assert!((m.per_file_s - A).abs() < 4.0 * m.per_file_se);
        assert!((m.per_byte_s - B).abs() < 4.0 * m.per_byte_se);
        assert!(m.r2 > 0.99 && m.r2 <= 1.0, "r2={}", m.r2);
        let json = serde_json::to_string(&m).expect("serializable");
        let back: CostModel = serde_json::from_str(&json).expect("round trip");
        assert_eq!(back, m);
    }

    #[test]
    fn clamps_negative_per_byte() {
        // Generated with a = 0.01, b = −1e-6: the unconstrained fit has b < 0.
        let pts: Vec<Point> = [(10.0, 1000.0), (20.0, 5000.0), (30.0, 20_000.0), (40.0, 2000.0)]
            .into_iter()
            .map(|(files, bytes)| Point { dirs: 0.0, dir_sq: 0.0, files, bytes, seconds: 0.01 * files - 1e-6 * bytes })
            .collect();
        let m = fit(&pts).expect("fit");
        assert_eq!(m.constrained, vec!["per_byte".to_string(), "per_dir".to_string(), "per_dir_entry".to_string()]);
        assert_eq!(m.per_byte_s, 0.0);
        assert_eq!(m.per_byte_se, 0.0);
        assert!(m.per_file_s > 0.0);
        assert!(m.per_file_se > 0.0);
        assert!(m.bandwidth_bytes_per_s.is_none());
        assert!(m.break_even_bytes.is_none());
        // The single-variable weighted fit a = Σ(f/s) / Σ(f/s)².
        let (s, ss) = pts.iter().fold((0.0, 0.0), |(s, ss), p| {
            let u = p.files / p.seconds;
            (s + u, ss + u * u)
        });
        assert!(rel(m.per_file_s, s / ss) < 1e-12);
    }

    #[test]
    fn clamps_negative_per_file() {
        // Generated with a = −1e-4, b = 1e-8.
        let pts: Vec<Point> = [(1.0, 1e6), (100.0, 2e6), (10.0, 5e6), (1000.0, 4e7)]
            .into_iter()
            .map(|(files, bytes)| Point { dirs: 0.0, dir_sq: 0.0, files, bytes, seconds: -1e-4 * files + 1e-8 * bytes })
            .collect();
        let m = fit(&pts).expect("fit");
        assert_eq!(m.constrained, vec!["per_file".to_string(), "per_dir".to_string(), "per_dir_entry".to_string()]);
        assert_eq!(m.per_file_s, 0.0);
        assert!(m.per_byte_s > 0.0);
        assert_eq!(m.break_even_bytes, Some(0.0));
    }

    #[test]
    fn singular_falls_back_to_single_variable() {
        // bytes = 1000·files everywhere: a and b cannot be separated.
        let pts: Vec<Point> = [1.0, 4.0, 16.0, 64.0]
            .into_iter()
            .map(|f| Point { dirs: 0.0, dir_sq: 0.0, files: f, bytes: 1000.0 * f, seconds: 2e-3 * f })
            .collect();
        let m = fit(&pts).expect("fit");
        assert_eq!(m.constrained.len(), 3);
        // Either explanation reproduces the times exactly.
        let t = |p: &Point| m.per_file_s * p.files + m.per_byte_s * p.bytes;
        for p in &pts {
            assert!(rel(t(p), p.seconds) < 1e-12);
        }

        // All bytes zero: only per_file can be estimated.
        let pts: Vec<Point> = [1.0, 2.0, 3.0]
            .into_iter()
            .map(|f| Point { dirs: 0.0, dir_sq: 0.0, files: f, bytes: 0.0, seconds: 0.5 * f })
            .collect();
        let m = fit(&pts).expect("fit");
        assert_eq!(m.constrained, vec!["per_byte".to_string(), "per_dir".to_string(), "per_dir_entry".to_string()]);
        assert!(rel(m.per_file_s, 0.5) < 1e-12);
    }

    #[test]
    fn drops_invalid_points_and_rejects_too_few() {
        let mut pts: Vec<Point> = ladder_files().into_iter().map(|f| exact(f, MIB64)).collect();
        pts.push(Point { dirs: 0.0, dir_sq: 0.0, files: 1.0, bytes: 1.0, seconds: 0.0 });
        pts.push(Point { dirs: 0.0, dir_sq: 0.0, files: 1.0, bytes: 1.0, seconds: -1.0 });
        pts.push(Point { dirs: 0.0, dir_sq: 0.0, files: 1.0, bytes: 1.0, seconds: f64::NAN });
        pts.push(Point { dirs: 0.0, dir_sq: 0.0, files: 1.0, bytes: 1.0, seconds: f64::INFINITY });
        pts.push(Point { dirs: 0.0, dir_sq: 0.0, files: f64::NAN, bytes: 1.0, seconds: 1.0 });
        let m = fit(&pts).expect("fit");
        assert_eq!(m.n, 9);
        assert!(rel(m.per_file_s, A) < 1e-9);

        assert!(fit(&[]).is_none());
        assert!(fit(&[exact(1.0, MIB64)]).is_none());
        assert!(
            fit(&[exact(1.0, MIB64), Point { dirs: 0.0, dir_sq: 0.0, files: 4.0, bytes: MIB64, seconds: 0.0 }])
                .is_none()
        );
        let zero = Point { dirs: 0.0, dir_sq: 0.0, files: 0.0, bytes: 0.0, seconds: 1.0 };
        assert!(fit(&[zero, zero]).is_none());
    }

    #[test]
    fn two_points_have_zero_se() {
        // n == p: exact fit, no residual degrees of freedom -> se documented as 0.
        let m = fit(&[exact(1.0, MIB64), exact(1024.0, MIB64)]).expect("fit");
        assert!(rel(m.per_file_s, A) < 1e-9);
        assert!(rel(m.per_byte_s, B) < 1e-9);
        assert_eq!(m.per_file_se, 0.0);
        assert_eq!(m.per_byte_se, 0.0);
    }

    #[test]
    fn recovers_a_b_c_within_one_percent() {
        // a = 3 ms/file, b = 1 ns/byte, c = 20 ms/dir; files, bytes and dirs vary independently.
        const C: f64 = 2e-2;
        let mut pts = Vec::new();
        let mut state = 7;
        for (i, f) in ladder_files().into_iter().enumerate() {
            for (j, per_dir) in [10.0, 100.0, 1000.0].into_iter().enumerate() {
                let dirs = (f / per_dir).ceil() + (i + j) as f64 % 3.0;
                let bytes = MIB64 / (1 + (i + 2 * j) % 5) as f64;
                let seconds = (A * f + B * bytes + C * dirs) * noise(&mut state, 0.002);
                pts.push(Point { files: f, bytes, dirs, dir_sq: 0.0, seconds });
            }
        }
        let m = fit(&pts).expect("fit");
        assert_eq!(m.constrained, vec!["per_dir_entry".to_string()]);
        assert!(rel(m.per_file_s, A) < 0.01, "a={}", m.per_file_s);
        assert!(rel(m.per_byte_s, B) < 0.01, "b={}", m.per_byte_s);
        assert!(rel(m.per_dir_s, C) < 0.01, "c={}", m.per_dir_s);
        assert!(m.per_dir_se > 0.0 && m.df == pts.len() - 3);
        assert_eq!(m.residuals.len(), pts.len());
        assert!(m.residuals.iter().all(|r| r.abs() < 0.01));
        // Prediction: the formula, and an interval around it.
        let p = m.predict(5000.0, 1e9, 50.0, 0.0);
        let want = m.per_file_s * 5000.0 + m.per_byte_s * 1e9 + m.per_dir_s * 50.0;
        assert!(rel(p.seconds, want) < 1e-12);
        let [lo, hi] = p.interval95.expect("df > 0");
        assert!(lo < p.seconds && p.seconds < hi && (hi - lo) / p.seconds < 0.05, "{lo} {hi}");
        let json = serde_json::to_string(&m).expect("serializable");
        assert_eq!(serde_json::from_str::<CostModel>(&json).expect("round trip"), m);
    }

    #[test]
    fn dirs_never_take_the_per_file_cost_s_place() {
        // dirs = files/5 + 1 exactly, times from a alone: {b, c} would fit as well as {a, b}.
        let pts: Vec<Point> =
            ladder_files().into_iter().map(|f| Point { dirs: (f / 5.0).ceil() + 1.0, ..exact(f, MIB64) }).collect();
        let m = fit(&pts).expect("fit");
        assert!(m.per_file_s > 0.0, "{m:?}");
        assert!(m.per_dir_s == 0.0 || !m.constrained.contains(&"per_file".to_string()), "{m:?}");
    }

    #[test]
    fn dirs_in_step_with_files_are_not_fitted() {
        // dirs = files/1000 + 1 with noise: c cannot be told apart from a.
        let mut state = 3;
        let pts: Vec<Point> = ladder_files()
            .into_iter()
            .flat_map(|f| [f, f, f])
            .map(|f| {
                let p = exact(f, MIB64);
                Point { dirs: (f / 1000.0).ceil() + 1.0, seconds: p.seconds * noise(&mut state, 0.05), ..p }
            })
            .collect();
        let m = fit(&pts).expect("fit");
        assert!(m.constrained.contains(&"per_dir".to_string()), "{m:?}");
        assert_eq!(m.per_dir_s, 0.0);
        assert!(rel(m.per_file_s, A) < 0.1, "a={}", m.per_file_s);
    }

    /// Standard normal draw (Box–Muller on the LCG).
    fn normal(state: &mut u64) -> f64 {
        let u1 = ((noise(state, 1.0) - 0.0) / 2.0).max(1e-12); // (0, 1)
        let u2 = noise(state, 1.0) / 2.0;
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// A flat ladder (every file in one directory, so Σn² = files²) of 64 MiB over
    /// `rungs`, `runs` runs per rung, times `truth(files)` × cell effect × run noise
    /// (both lognormal).
    fn flat_ladder(
        state: &mut u64,
        rungs: &[f64],
        runs: usize,
        cell_sd: f64,
        run_sd: f64,
        truth: impl Fn(f64) -> f64,
    ) -> Vec<Point> {
        let mut pts = Vec::new();
        for &f in rungs {
            let u = (cell_sd * normal(state)).exp();
            for _ in 0..runs {
                let e = (run_sd * normal(state)).exp();
                pts.push(Point { files: f, bytes: MIB64, dirs: 1.0, dir_sq: f * f, seconds: truth(f) * u * e });
            }
        }
        pts
    }

    fn step2_rungs() -> Vec<f64> {
        (0..17).map(|k| 2f64.powi(k)).collect()
    }

    #[test]
    fn quadratic_directory_cost_is_recovered() {
        // exFAT-like: 20 µs per file, 1 GB/s, and 1 ns per (file, file already there) pair:
        // at 65,536 files in one directory the quadratic term is 4.3 s against 1.3 s.
        const D: f64 = 1e-9;
        let truth = |f: f64| 2e-5 * f + B * MIB64 + D * f * f;
        let mut state = 11;
        let pts = flat_ladder(&mut state, &step2_rungs(), 3, 0.03, 0.03, truth);
        let m = fit(&pts).expect("fit");
        assert!(!m.constrained.contains(&"per_dir_entry".to_string()), "{m:?}");
        assert!(rel(m.per_dir_entry_s, D) < 0.1, "d={}", m.per_dir_entry_s);
        assert!(rel(m.per_file_s, 2e-5) < 0.2, "a={}", m.per_file_s);
        assert!(m.aicc_dir_entry.unwrap() < m.aicc_plain.unwrap());
        // Every rung fitted within 20% (the plain model misses the top rungs by far more).
        for p in &pts {
            let fitted = m.seconds(p.files, p.bytes, p.dirs, p.dir_sq);
            assert!(rel(fitted, p.seconds) < 0.2, "{} files: {fitted} vs {}", p.files, p.seconds);
        }
        // Predictions use Σn²: 65,536 files in 64 directories of 1,024 cost far less
        // than in one.
        let flat = m.predict(65536.0, MIB64, 1.0, 65536.0 * 65536.0).seconds;
        let split = m.predict(65536.0, MIB64, 65.0, 64.0 * 1024.0 * 1024.0).seconds;
        assert!(flat > 3.0 * split, "{flat} {split}");
    }

    #[test]
    fn linear_file_system_rejects_the_directory_size_term() {
        // ext4-like: cost linear in files whatever the directory size; 5% cell and run noise.
        let mut rejected = 0;
        for seed in 0..50u64 {
            let mut state = 1000 + seed;
            let pts = flat_ladder(&mut state, &ladder_files(), 3, 0.05, 0.05, |f| A * f + B * MIB64);
            let m = fit(&pts).expect("fit");
            if m.per_dir_entry_s == 0.0 {
                rejected += 1;
            } else {
                // When kept by chance it must be negligible: < 10% of the time at the top rung.
                let f = 65536.0;
                assert!(m.per_dir_entry_s * f * f < 0.1 * (A * f + B * MIB64), "{m:?}");
            }
            assert!(rel(m.per_file_s, A) < 0.2, "a={}", m.per_file_s);
        }
        assert!(rejected >= 45, "rejected in {rejected} of 50");
    }

    #[test]
    fn files_per_dir_give_dir_sq() {
        assert_eq!(dir_sq_of([(3, 2), (1, 1)]), 19.0);
        // Bucket 0 (empty dirs) adds nothing; bucket 1 is exactly 1; bucket 2 is {2, 3}.
        assert_eq!(dir_sq_from_hist(&[5, 2, 2]), 2.0 + 2.0 * 6.5);
        // A flat 1,000-file directory lies in bucket 10 [512, 1023]: within a factor 1.5.
        let est = dir_sq_from_hist(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert!(est > 1000.0 * 1000.0 / 2.0 && est < 1.5 * 1e6, "{est}");
    }

    #[test]
    fn old_model_json_loads_and_predicts() {
        // A model as written before cells and the directory-size term (3×3 covariance).
        let old = r#"{"per_file_s":3e-3,"per_file_se":1e-4,"per_byte_s":1e-9,"per_byte_se":1e-11,
            "per_dir_s":0.0,"per_dir_se":0.0,"covariance":[[1e-8,0,0],[0,1e-22,0],[0,0,0]],
            "residual_sd":0.05,"df":25,"residuals":[0.01,-0.01],"r2":0.99,"n":27,"weighting":"relative",
            "bandwidth_bytes_per_s":1e9,"break_even_bytes":3e6,"constrained":["per_dir"]}"#;
        let m: CostModel = serde_json::from_str(old).expect("old model loads");
        assert_eq!(m.interval_method, "points");
        assert_eq!(m.per_dir_entry_s, 0.0);
        assert_eq!(m.cells, 0);
        let p = m.predict(1000.0, 1e6, 1.0, 1e6);
        assert!(rel(p.seconds, 3.0 + 1e-3) < 1e-12);
        let [lo, hi] = p.interval95.expect("df > 0");
        assert!(lo < p.seconds && p.seconds < hi);
        // Even older: no covariance at all.
        let older = r#"{"per_file_s":3e-3,"per_file_se":1e-4,"per_byte_s":1e-9,"per_byte_se":1e-11,
            "r2":0.99,"n":27,"weighting":"relative","bandwidth_bytes_per_s":1e9,"break_even_bytes":3e6,
            "constrained":[]}"#;
        let m: CostModel = serde_json::from_str(older).expect("older model loads");
        assert!(m.covariance.is_empty() && m.predict(1.0, 0.0, 0.0, 0.0).interval95.is_none());
    }

    /// Simulated ladders with a known model, a cell-level random effect and lognormal
    /// run noise: how often the 95% interval of a covers the truth, and how often
    /// the 95% prediction interval covers a new tree's median time.
    fn coverage(sims: usize, seed: u64) -> (f64, f64, f64) {
        let a = 4e-6;
        let truth = |f: f64| a * f + B * MIB64;
        let (mut cover_a, mut cover_pred, mut width) = (0usize, 0usize, 0.0);
        let mut state = seed;
        for _ in 0..sims {
            let pts = flat_ladder(&mut state, &ladder_files(), 3, 0.08, 0.05, truth);
            // Σn² plays no part here: the model is the plain one.
            let pts: Vec<Point> = pts.into_iter().map(|p| Point { dir_sq: 0.0, ..p }).collect();
            let m = fit(&pts).expect("fit");
            let [lo, hi] = m.interval95(0).expect("df > 0");
            cover_a += usize::from(lo <= a && a <= hi);
            // A new tree between the rungs, measured 3 times (its median).
            let f = 4f64.powf(1.0 + 7.0 * noise(&mut state, 1.0) / 2.0);
            let u = (0.08 * normal(&mut state)).exp();
            let mut runs: Vec<f64> = (0..3).map(|_| truth(f) * u * (0.05 * normal(&mut state)).exp()).collect();
            runs.sort_by(f64::total_cmp);
            let p = m.predict(f, MIB64, 1.0, 0.0);
            let [plo, phi] = p.interval95.expect("df > 0");
            cover_pred += usize::from(plo <= runs[1] && runs[1] <= phi);
            width += (phi / p.seconds).ln() / sims as f64;
        }
        (cover_a as f64 / sims as f64, cover_pred as f64 / sims as f64, width)
    }

    #[test]
    fn coverage_of_coefficient_and_prediction_intervals() {
        // 600 simulations (~1 s in a debug build): the binomial s.d. of a 95% coverage
        // is 0.9 points, so 93–97% is ± 2.2 s.d.
        let (ca, cp, w) = coverage(600, 20_261_123);
        eprintln!("coverage: a {ca}, prediction {cp}, mean log half-width {w}");
        assert!((0.93..=0.97).contains(&ca), "coefficient coverage {ca}");
        assert!((0.93..=0.975).contains(&cp), "prediction coverage {cp} (mean half-width {w})");
    }

    /// 10 × 1,000 simulations: about 3 s in a debug build, so it runs in CI
    /// (`--nocapture` shows the coverage per seed).
    #[test]
    fn coverage_over_seeds() {
        for seed in 0..10 {
            let (ca, cp, w) = coverage(1000, seed);
            eprintln!("seed {seed}: a {ca}, prediction {cp}, mean log half-width {w}");
        }
    }

    #[test]
    fn points_from_one_cell_are_one_row() {
        // 3 runs of each of 9 rungs: 9 cells, df = 9 − 2.
        let mut state = 5;
        let pts = flat_ladder(&mut state, &ladder_files(), 3, 0.02, 0.02, |f| A * f + B * MIB64);
        let m = fit(&pts).expect("fit");
        assert_eq!((m.n, m.cells, m.df), (27, 9, 7));
        assert_eq!(m.cv_log_errors.len(), 9);
        assert!(m.cv_log_sd > 0.0 && m.cv_log_sd < 0.1, "{}", m.cv_log_sd);
        assert_eq!(m.interval_method, "cells");
    }
}
