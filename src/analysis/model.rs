//! Cost model `time = a·files + b·bytes` fitted by weighted least squares.
//!
//! `a` (seconds per file) is the per-file cost, `1/b` the bandwidth and `a/b`
//! the break-even file size: a file costs as much time as writing `a/b` bytes.
//!
//! Weights are `w_i = 1/seconds_i²`, i.e. the fit minimises the sum of squared
//! *relative* residuals: measured times span orders of magnitude (a ladder of
//! 1 to 65536 files), and an unweighted fit would be decided by the largest
//! rungs alone. Equivalently, every row is divided by its own time, giving an
//! ordinary least-squares problem with columns `u = files/s`, `v = bytes/s`
//! and target 1; this is how the code computes everything.
//!
//! There is no intercept. In the typical ladder (a fixed total of bytes split
//! into 1, 4, 16, ... files) the bytes column is constant and plays the role
//! of the intercept.

use serde::{Deserialize, Serialize};

/// One measurement: `seconds` to handle `files` files totalling `bytes` bytes.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub files: f64,
    pub bytes: f64,
    pub seconds: f64,
}

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
    /// Coefficients fixed at 0 ("per_file" / "per_byte"): clamped by the
    /// non-negativity constraint, or left out because the data cannot
    /// separate the two coefficients (files and bytes in a fixed ratio, or a
    /// column that is all zero).
    pub constrained: Vec<String>,
}

/// Below this value of 1 − r² (r = cosine between the weighted columns) the
/// 2×2 system is treated as singular: rounding would be amplified by
/// 1/(1 − r²) > 1e10.
const SINGULAR_EPS: f64 = 1e-10;

/// Fits `seconds = a·files + b·bytes` with a, b >= 0 (see the module docs).
///
/// Points with non-finite or non-positive seconds, or with non-finite or
/// negative files/bytes, are dropped. Returns `None` when fewer than 2 points
/// remain or when neither coefficient can be estimated (e.g. all files and
/// bytes are 0).
pub fn fit(points: &[Point]) -> Option<CostModel> {
    let kept: Vec<&Point> = points
        .iter()
        .filter(|p| p.seconds.is_finite() && p.seconds > 0.0)
        .filter(|p| p.files.is_finite() && p.files >= 0.0)
        .filter(|p| p.bytes.is_finite() && p.bytes >= 0.0)
        .collect();
    let n = kept.len();
    if n < 2 {
        return None;
    }
    // Rows divided by their own time: (u, v) = (files, bytes) / seconds, target 1.
    let rows: Vec<(f64, f64)> = kept.iter().map(|p| (p.files / p.seconds, p.bytes / p.seconds)).collect();

    let solution = match solve_both(&rows) {
        Some(s) if s.a >= 0.0 && s.b >= 0.0 => s,
        // A negative coefficient, or a singular system. The best non-negative
        // solution then lies on a face of the quadrant (a = 0 or b = 0), so
        // take the single-variable fit with the smaller weighted residual.
        // When exactly one coefficient is negative this is always the fit
        // with that coefficient fixed at 0: by convexity, the segment from
        // the unconstrained optimum to any point of the other face crosses
        // this face at a point that is at least as good.
        _ => match (solve_files_only(&rows), solve_bytes_only(&rows)) {
            (Some(x), Some(y)) => {
                if rss(&rows, &x) <= rss(&rows, &y) {
                    x
                } else {
                    y
                }
            }
            (Some(x), None) | (None, Some(x)) => x,
            (None, None) => return None,
        },
    };

    let r = rss(&rows, &solution);
    let p = solution.free;
    // Weighted residual variance s² = Σw r²/(n − p); no estimate when n <= p.
    let s2 = if n > p { r / (n - p) as f64 } else { 0.0 };
    let se = |var_factor: f64| {
        let v = s2 * var_factor;
        if v.is_finite() && v > 0.0 { v.sqrt() } else { 0.0 }
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

    let mut constrained = Vec::new();
    if !solution.a_free {
        constrained.push("per_file".to_string());
    }
    if !solution.b_free {
        constrained.push("per_byte".to_string());
    }
    let (a, b) = (solution.a, solution.b);
    let bandwidth_bytes_per_s = (b > 0.0).then(|| 1.0 / b).filter(|x| x.is_finite());
    let break_even_bytes = (b > 0.0).then(|| a / b).filter(|x| x.is_finite());

    Some(CostModel {
        per_file_s: a,
        per_file_se: if solution.a_free { se(solution.var_a) } else { 0.0 },
        per_byte_s: b,
        per_byte_se: if solution.b_free { se(solution.var_b) } else { 0.0 },
        r2: if r2.is_finite() { r2 } else { 0.0 },
        n,
        weighting: "relative".to_string(),
        bandwidth_bytes_per_s,
        break_even_bytes,
        constrained,
    })
}

/// A candidate solution in the transformed (row/seconds) problem.
struct Solution {
    a: f64,
    b: f64,
    a_free: bool,
    b_free: bool,
    /// Number of free coefficients (p).
    free: usize,
    /// Diagonal of (XᵀWX)⁻¹ for a and b (unused for a fixed coefficient).
    var_a: f64,
    var_b: f64,
}

/// Unconstrained two-coefficient fit via the 2×2 normal equations, or `None`
/// when the system is (numerically) singular.
fn solve_both(rows: &[(f64, f64)]) -> Option<Solution> {
    let (mut suu, mut svv, mut suv, mut su, mut sv) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(u, v) in rows {
        suu += u * u;
        svv += v * v;
        suv += u * v;
        su += u;
        sv += v;
    }
    // Zero (or overflowing) column: only the other coefficient can be fitted.
    let usable = |x: f64| x > 0.0 && x.is_finite();
    if !(usable(suu) && usable(svv)) {
        return None;
    }
    // Scale the columns to unit norm before solving: files and bytes differ
    // by many orders of magnitude, and the scaled matrix [[1, r], [r, 1]]
    // makes both the singularity test and the solution well conditioned.
    let (du, dv) = (suu.sqrt(), svv.sqrt());
    let r = suv / (du * dv);
    let det = (1.0 - r) * (1.0 + r); // 1 − r², more accurate than 1 − r·r when |r| ≈ 1
    // NaN fails every comparison, so test it explicitly: it means singular too.
    if det.is_nan() || det <= SINGULAR_EPS {
        return None;
    }
    let (hu, hv) = (su / du, sv / dv);
    let a = (hu - r * hv) / det / du;
    let b = (hv - r * hu) / det / dv;
    if !a.is_finite() || !b.is_finite() {
        return None;
    }
    Some(Solution {
        a,
        b,
        a_free: true,
        b_free: true,
        free: 2,
        // (XᵀWX)⁻¹ = D⁻¹ C⁻¹ D⁻¹ with C = [[1, r], [r, 1]], whose inverse has
        // diagonal 1/(1 − r²).
        var_a: 1.0 / (det * suu),
        var_b: 1.0 / (det * svv),
    })
}

/// Fit with b fixed at 0: a = Σu / Σu² (non-negative since u >= 0).
fn solve_files_only(rows: &[(f64, f64)]) -> Option<Solution> {
    let (s, ss) = rows.iter().fold((0.0, 0.0), |(s, ss), &(u, _)| (s + u, ss + u * u));
    let a = s / ss;
    (ss > 0.0 && a.is_finite()).then_some(Solution {
        a,
        b: 0.0,
        a_free: true,
        b_free: false,
        free: 1,
        var_a: 1.0 / ss,
        var_b: 0.0,
    })
}

/// Fit with a fixed at 0: b = Σv / Σv².
fn solve_bytes_only(rows: &[(f64, f64)]) -> Option<Solution> {
    let (s, ss) = rows.iter().fold((0.0, 0.0), |(s, ss), &(_, v)| (s + v, ss + v * v));
    let b = s / ss;
    (ss > 0.0 && b.is_finite()).then_some(Solution {
        a: 0.0,
        b,
        a_free: false,
        b_free: true,
        free: 1,
        var_a: 0.0,
        var_b: 1.0 / ss,
    })
}

/// Weighted residual sum of squares Σ w (s − ŝ)² = Σ (1 − a·u − b·v)².
fn rss(rows: &[(f64, f64)], s: &Solution) -> f64 {
    rows.iter().map(|&(u, v)| (1.0 - s.a * u - s.b * v).powi(2)).sum()
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
        Point { files, bytes, seconds: A * files + B * bytes }
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
        assert!(m.constrained.is_empty());
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
        assert!(m.constrained.is_empty());
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
            .map(|(files, bytes)| Point { files, bytes, seconds: 0.01 * files - 1e-6 * bytes })
            .collect();
        let m = fit(&pts).expect("fit");
        assert_eq!(m.constrained, vec!["per_byte".to_string()]);
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
            .map(|(files, bytes)| Point { files, bytes, seconds: -1e-4 * files + 1e-8 * bytes })
            .collect();
        let m = fit(&pts).expect("fit");
        assert_eq!(m.constrained, vec!["per_file".to_string()]);
        assert_eq!(m.per_file_s, 0.0);
        assert!(m.per_byte_s > 0.0);
        assert_eq!(m.break_even_bytes, Some(0.0));
    }

    #[test]
    fn singular_falls_back_to_single_variable() {
        // bytes = 1000·files everywhere: a and b cannot be separated.
        let pts: Vec<Point> = [1.0, 4.0, 16.0, 64.0]
            .into_iter()
            .map(|f| Point { files: f, bytes: 1000.0 * f, seconds: 2e-3 * f })
            .collect();
        let m = fit(&pts).expect("fit");
        assert_eq!(m.constrained.len(), 1);
        // Either explanation reproduces the times exactly.
        let t = |p: &Point| m.per_file_s * p.files + m.per_byte_s * p.bytes;
        for p in &pts {
            assert!(rel(t(p), p.seconds) < 1e-12);
        }

        // All bytes zero: only per_file can be estimated.
        let pts: Vec<Point> =
            [1.0, 2.0, 3.0].into_iter().map(|f| Point { files: f, bytes: 0.0, seconds: 0.5 * f }).collect();
        let m = fit(&pts).expect("fit");
        assert_eq!(m.constrained, vec!["per_byte".to_string()]);
        assert!(rel(m.per_file_s, 0.5) < 1e-12);
    }

    #[test]
    fn drops_invalid_points_and_rejects_too_few() {
        let mut pts: Vec<Point> = ladder_files().into_iter().map(|f| exact(f, MIB64)).collect();
        pts.push(Point { files: 1.0, bytes: 1.0, seconds: 0.0 });
        pts.push(Point { files: 1.0, bytes: 1.0, seconds: -1.0 });
        pts.push(Point { files: 1.0, bytes: 1.0, seconds: f64::NAN });
        pts.push(Point { files: 1.0, bytes: 1.0, seconds: f64::INFINITY });
        pts.push(Point { files: f64::NAN, bytes: 1.0, seconds: 1.0 });
        let m = fit(&pts).expect("fit");
        assert_eq!(m.n, 9);
        assert!(rel(m.per_file_s, A) < 1e-9);

        assert!(fit(&[]).is_none());
        assert!(fit(&[exact(1.0, MIB64)]).is_none());
        assert!(fit(&[exact(1.0, MIB64), Point { files: 4.0, bytes: MIB64, seconds: 0.0 }]).is_none());
        let zero = Point { files: 0.0, bytes: 0.0, seconds: 1.0 };
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
}
