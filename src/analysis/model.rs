//! Cost model `time = a·files + b·bytes + c·dirs` fitted by non-negative weighted
//! least squares.
//!
//! `a` (seconds per file) is the per-file cost, `1/b` the bandwidth, `c` the cost
//! of a directory and `a/b` the break-even file size: a file costs as much time
//! as writing `a/b` bytes.
//!
//! Weights are `w_i = 1/seconds_i²`, i.e. the fit minimises the sum of squared
//! *relative* residuals: measured times span orders of magnitude (a ladder of
//! 1 to 65536 files), and an unweighted fit would be decided by the largest
//! rungs alone. Equivalently, every row is divided by its own time, giving an
//! ordinary least-squares problem with columns `u = files/s`, `v = bytes/s`,
//! `w = dirs/s` and target 1; this is how the code computes everything.
//!
//! There is no intercept. In the typical ladder (a fixed total of bytes split
//! into 1, 4, 16, ... files) the bytes column is constant and plays the role
//! of the intercept.
//!
//! Non-negativity: with three coefficients the exact NNLS solution is found by
//! trying every subset of free coefficients (7 at most) and keeping the
//! non-negative solution with the smallest residual. The directory cost is
//! kept only when the data resolve it next to the per-file cost (c > 2
//! standard errors, a not clamped): in most trees the directory count moves in
//! step with the file count, and an unresolved c would only blur a.

use serde::{Deserialize, Serialize};

/// One measurement: `seconds` to handle `files` files totalling `bytes` bytes
/// in `dirs` directories.
#[derive(Debug, Clone, Copy, Default)]
pub struct Point {
    pub files: f64,
    pub bytes: f64,
    pub dirs: f64,
    pub seconds: f64,
}

/// Coefficient names, in column order (also the order of `covariance`).
pub const COEFFS: [&str; 3] = ["per_file", "per_byte", "per_dir"];

/// Fitted cost model. All fields are finite (JSON-safe).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// a: seconds per file (>= 0).
    pub per_file_s: f64,
    /// Standard error of a; 0.0 when a was fixed at 0 or when n <= p (no
    /// residual degrees of freedom).
    pub per_file_se: f64,
    /// b: seconds per byte (>= 0).
    pub per_byte_s: f64,
    /// Standard error of b; 0.0 when b was fixed at 0 or when n <= p.
    pub per_byte_se: f64,
    /// c: seconds per directory (>= 0); 0 when not resolved.
    #[serde(default)]
    pub per_dir_s: f64,
    /// Standard error of c; 0.0 when c was fixed at 0 or when n <= p.
    #[serde(default)]
    pub per_dir_se: f64,
    /// Covariance of (a, b, c) (rows and columns in [`COEFFS`] order); zero
    /// rows and columns for fixed coefficients. For prediction intervals.
    #[serde(default)]
    pub covariance: [[f64; 3]; 3],
    /// Standard deviation of the relative residuals, s = sqrt(Σr²/(n − p)):
    /// the scatter of a single run around the model (0 when n <= p).
    #[serde(default)]
    pub residual_sd: f64,
    /// Residual degrees of freedom n − p.
    #[serde(default)]
    pub df: usize,
    /// Relative residual of every point used, (measured − fitted)/measured,
    /// in input order.
    #[serde(default)]
    pub residuals: Vec<f64>,
    /// Weighted R² of the same weighted problem:
    /// 1 − Σw(s − ŝ)² / Σw(s − s̄_w)², with w = 1/s² and s̄_w = Σws/Σw the
    /// weighted mean time. Centred, so it compares the model with a constant
    /// time; it can be negative for a model worse than that. 1.0 when all
    /// times are equal and fitted exactly, 0.0 when all times are equal and
    /// not fitted exactly.
    pub r2: f64,
    /// Number of points used (after dropping invalid ones).
    pub n: usize,
    /// Weighting scheme; always "relative" (w = 1/seconds²).
    pub weighting: String,
    /// 1/b in bytes per second, when b > 0.
    pub bandwidth_bytes_per_s: Option<f64>,
    /// a/b in bytes, when b > 0: a file costs as much time as this many bytes.
    pub break_even_bytes: Option<f64>,
    /// Coefficients fixed at 0 ("per_file" / "per_byte" / "per_dir"): clamped
    /// by the non-negativity constraint, or left out because the data cannot
    /// separate them (columns in a fixed ratio, a column that is all zero, or
    /// a directory cost within 2 standard errors of 0).
    pub constrained: Vec<String>,
}

/// A predicted time with its 95% prediction interval (model uncertainty plus
/// the scatter of one run).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub seconds: f64,
    /// `None` when the model has no residual degrees of freedom.
    pub interval95: Option<[f64; 2]>,
}

/// Below this pivot of the unit-diagonal normal matrix the system is treated
/// as singular: rounding would be amplified by more than 1e10.
const SINGULAR_EPS: f64 = 1e-10;

/// A directory cost below this many standard errors is not reported.
const DIR_T_MIN: f64 = 2.0;

/// Fits `seconds = a·files + b·bytes + c·dirs` with a, b, c >= 0 (see the
/// module docs).
///
/// Points with non-finite or non-positive seconds, or with non-finite or
/// negative files/bytes/dirs, are dropped. Returns `None` when fewer than 2
/// points remain or when no coefficient can be estimated (e.g. all files,
/// bytes and dirs are 0).
pub fn fit(points: &[Point]) -> Option<CostModel> {
    let ok = |x: f64| x.is_finite() && x >= 0.0;
    let kept: Vec<&Point> = points
        .iter()
        .filter(|p| p.seconds.is_finite() && p.seconds > 0.0)
        .filter(|p| ok(p.files) && ok(p.bytes) && ok(p.dirs))
        .collect();
    let n = kept.len();
    if n < 2 {
        return None;
    }
    // Rows divided by their own time: (files, bytes, dirs) / seconds, target 1.
    let rows: Vec<[f64; 3]> =
        kept.iter().map(|p| [p.files / p.seconds, p.bytes / p.seconds, p.dirs / p.seconds]).collect();

    let mut sol = nnls(&rows, &[true, true, true])?;
    // A directory cost must be resolved alongside the per-file cost: when it is within
    // 2 s.e. of 0, or took the per-file cost's place (a clamped to 0, as happens when
    // files and directories grow in step), refit without it.
    if sol.free[2] {
        let t = if sol.se(2, n) > 0.0 { sol.beta[2] / sol.se(2, n) } else { 0.0 };
        if t < DIR_T_MIN || !sol.free[0] {
            sol = nnls(&rows, &[true, true, false])?;
        }
    }

    let r = sol.rss;
    let p = sol.free.iter().filter(|f| **f).count();
    let df = n.saturating_sub(p);
    let s2 = if n > p { r / df as f64 } else { 0.0 };
    let mut covariance = [[0.0; 3]; 3];
    for (i, row) in covariance.iter_mut().enumerate() {
        for (j, c) in row.iter_mut().enumerate() {
            let v = s2 * sol.inv[i][j];
            *c = if v.is_finite() { v } else { 0.0 };
        }
    }
    let se = |j: usize| {
        let v = covariance[j][j];
        if v > 0.0 { v.sqrt() } else { 0.0 }
    };

    // Weighted total sum of squares around the weighted mean time
    // s̄_w = Σws/Σw: Σ (1/s²)(s − s̄_w)² = Σ (1 − s̄_w/s)².
    let sum_w: f64 = kept.iter().map(|p| 1.0 / (p.seconds * p.seconds)).sum();
    let sum_ws: f64 = kept.iter().map(|p| 1.0 / p.seconds).sum();
    let mean_w = sum_ws / sum_w;
    let tss: f64 = kept.iter().map(|p| (1.0 - mean_w / p.seconds).powi(2)).sum();
    let r2 = if tss > 0.0 {
        1.0 - r / tss
    } else if r == 0.0 {
        1.0
    } else {
        0.0
    };

    let constrained = (0..3).filter(|&j| !sol.free[j]).map(|j| COEFFS[j].to_string()).collect();
    let [a, b, c] = sol.beta;
    let bandwidth_bytes_per_s = (b > 0.0).then(|| 1.0 / b).filter(|x| x.is_finite());
    let break_even_bytes = (b > 0.0).then(|| a / b).filter(|x| x.is_finite());
    let residuals = rows.iter().map(|x| residual(x, &sol.beta)).map(|v| if v.is_finite() { v } else { 0.0 }).collect();

    Some(CostModel {
        per_file_s: a,
        per_file_se: se(0),
        per_byte_s: b,
        per_byte_se: se(1),
        per_dir_s: c,
        per_dir_se: se(2),
        covariance,
        residual_sd: s2.sqrt(),
        df,
        residuals,
        r2: if r2.is_finite() { r2 } else { 0.0 },
        n,
        weighting: "relative".to_string(),
        bandwidth_bytes_per_s,
        break_even_bytes,
        constrained,
    })
}

impl CostModel {
    /// Predicted time for a tree, with a 95% prediction interval: Student t
    /// (df = n − p) times sqrt(gᵀ·Cov·g + (s·t̂)²), g = (files, bytes, dirs):
    /// the uncertainty of the coefficients plus the relative scatter of one run.
    pub fn predict(&self, files: f64, bytes: f64, dirs: f64) -> Prediction {
        let g = [files, bytes, dirs];
        let seconds = self.per_file_s * files + self.per_byte_s * bytes + self.per_dir_s * dirs;
        if self.df == 0 {
            return Prediction { seconds, interval95: None };
        }
        let mut var = (self.residual_sd * seconds).powi(2);
        for i in 0..3 {
            for j in 0..3 {
                var += g[i] * self.covariance[i][j] * g[j];
            }
        }
        let half = super::stats::t_quantile_975(self.df) * var.max(0.0).sqrt();
        Prediction { seconds, interval95: Some([(seconds - half).max(0.0), seconds + half]) }
    }
}

/// Relative residual of one transformed row: 1 − x·β = (s − ŝ)/s.
fn residual(x: &[f64; 3], beta: &[f64; 3]) -> f64 {
    1.0 - x[0] * beta[0] - x[1] * beta[1] - x[2] * beta[2]
}

/// A candidate solution in the transformed (row/seconds) problem.
#[derive(Debug, Clone)]
struct Solution {
    beta: [f64; 3],
    free: [bool; 3],
    /// (XᵀX)⁻¹ over the free coefficients (zero elsewhere).
    inv: [[f64; 3]; 3],
    rss: f64,
}

impl Solution {
    /// Standard error of coefficient j (for the dirs significance test).
    fn se(&self, j: usize, n: usize) -> f64 {
        let p = self.free.iter().filter(|f| **f).count();
        if n <= p {
            return 0.0;
        }
        let v = self.rss / (n - p) as f64 * self.inv[j][j];
        if v.is_finite() && v > 0.0 { v.sqrt() } else { 0.0 }
    }
}

/// Exact NNLS over the `allowed` columns: every subset of them solved
/// unconstrained; the non-negative solution with the smallest residual wins
/// (larger subsets first, so a tie keeps more coefficients).
fn nnls(rows: &[[f64; 3]], allowed: &[bool; 3]) -> Option<Solution> {
    let mut best: Option<Solution> = None;
    let mut subsets: Vec<[bool; 3]> = (1u8..8)
        .map(|m| [m & 1 != 0, m & 2 != 0, m & 4 != 0])
        .filter(|s| (0..3).all(|j| allowed[j] || !s[j]))
        .collect();
    subsets.sort_by_key(|s| std::cmp::Reverse(s.iter().filter(|f| **f).count()));
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
/// equations, scaled to a unit diagonal (files, bytes and dirs differ by many
/// orders of magnitude). `None` when (numerically) singular.
fn solve(rows: &[[f64; 3]], free: [bool; 3]) -> Option<Solution> {
    let cols: Vec<usize> = (0..3).filter(|&j| free[j]).collect();
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
    let mut beta = [0.0; 3];
    let mut inv = [[0.0; 3]; 3];
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
        Point { dirs: 0.0, files, bytes, seconds: A * files + B * bytes }
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
        assert_eq!(m.constrained, vec!["per_dir".to_string()]);
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
        assert_eq!(m.constrained, vec!["per_dir".to_string()]);
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
            .map(|(files, bytes)| Point { dirs: 0.0, files, bytes, seconds: 0.01 * files - 1e-6 * bytes })
            .collect();
        let m = fit(&pts).expect("fit");
        assert_eq!(m.constrained, vec!["per_byte".to_string(), "per_dir".to_string()]);
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
            .map(|(files, bytes)| Point { dirs: 0.0, files, bytes, seconds: -1e-4 * files + 1e-8 * bytes })
            .collect();
        let m = fit(&pts).expect("fit");
        assert_eq!(m.constrained, vec!["per_file".to_string(), "per_dir".to_string()]);
        assert_eq!(m.per_file_s, 0.0);
        assert!(m.per_byte_s > 0.0);
        assert_eq!(m.break_even_bytes, Some(0.0));
    }

    #[test]
    fn singular_falls_back_to_single_variable() {
        // bytes = 1000·files everywhere: a and b cannot be separated.
        let pts: Vec<Point> = [1.0, 4.0, 16.0, 64.0]
            .into_iter()
            .map(|f| Point { dirs: 0.0, files: f, bytes: 1000.0 * f, seconds: 2e-3 * f })
            .collect();
        let m = fit(&pts).expect("fit");
        assert_eq!(m.constrained.len(), 2);
        // Either explanation reproduces the times exactly.
        let t = |p: &Point| m.per_file_s * p.files + m.per_byte_s * p.bytes;
        for p in &pts {
            assert!(rel(t(p), p.seconds) < 1e-12);
        }

        // All bytes zero: only per_file can be estimated.
        let pts: Vec<Point> =
            [1.0, 2.0, 3.0].into_iter().map(|f| Point { dirs: 0.0, files: f, bytes: 0.0, seconds: 0.5 * f }).collect();
        let m = fit(&pts).expect("fit");
        assert_eq!(m.constrained, vec!["per_byte".to_string(), "per_dir".to_string()]);
        assert!(rel(m.per_file_s, 0.5) < 1e-12);
    }

    #[test]
    fn drops_invalid_points_and_rejects_too_few() {
        let mut pts: Vec<Point> = ladder_files().into_iter().map(|f| exact(f, MIB64)).collect();
        pts.push(Point { dirs: 0.0, files: 1.0, bytes: 1.0, seconds: 0.0 });
        pts.push(Point { dirs: 0.0, files: 1.0, bytes: 1.0, seconds: -1.0 });
        pts.push(Point { dirs: 0.0, files: 1.0, bytes: 1.0, seconds: f64::NAN });
        pts.push(Point { dirs: 0.0, files: 1.0, bytes: 1.0, seconds: f64::INFINITY });
        pts.push(Point { dirs: 0.0, files: f64::NAN, bytes: 1.0, seconds: 1.0 });
        let m = fit(&pts).expect("fit");
        assert_eq!(m.n, 9);
        assert!(rel(m.per_file_s, A) < 1e-9);

        assert!(fit(&[]).is_none());
        assert!(fit(&[exact(1.0, MIB64)]).is_none());
        assert!(fit(&[exact(1.0, MIB64), Point { dirs: 0.0, files: 4.0, bytes: MIB64, seconds: 0.0 }]).is_none());
        let zero = Point { dirs: 0.0, files: 0.0, bytes: 0.0, seconds: 1.0 };
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
                pts.push(Point { files: f, bytes, dirs, seconds });
            }
        }
        let m = fit(&pts).expect("fit");
        assert!(m.constrained.is_empty(), "{:?}", m.constrained);
        assert!(rel(m.per_file_s, A) < 0.01, "a={}", m.per_file_s);
        assert!(rel(m.per_byte_s, B) < 0.01, "b={}", m.per_byte_s);
        assert!(rel(m.per_dir_s, C) < 0.01, "c={}", m.per_dir_s);
        assert!(m.per_dir_se > 0.0 && m.df == pts.len() - 3);
        assert_eq!(m.residuals.len(), pts.len());
        assert!(m.residuals.iter().all(|r| r.abs() < 0.01));
        // Prediction: the formula, and an interval around it.
        let p = m.predict(5000.0, 1e9, 50.0);
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
}
