//! The least-squares kernel under the cost model (`model.rs`): exact non-negative
//! least squares of a few columns against a target of ones, with the inverse normal
//! matrix kept for the coefficients' covariance.
//!
//! Hand-written because the problem is tiny (4 columns, a few dozen rows) and needs
//! what a general solver does not give together: an exact NNLS (every subset of
//! columns tried, larger subsets preferred on a tie), `(XᵀX)⁻¹` of the chosen subset,
//! and a singularity test on the unit-diagonal normal matrix. None of the crate's
//! dependencies does linear algebra.
//!
//! Rows are the model's transformed rows (each measurement divided by its own time),
//! so the target is 1 everywhere and a residual is `1 − x·β`. Rows may carry weights
//! (`nnls_w`): the model's reweighting by fitted instead of observed times.

/// Below this pivot of the unit-diagonal normal matrix the system is treated
/// as singular: rounding would be amplified by more than 1e10.
const SINGULAR_EPS: f64 = 1e-10;

/// Number of free coefficients.
pub(super) fn count<const N: usize>(free: &[bool; N]) -> usize {
    free.iter().filter(|f| **f).count()
}

pub(super) fn dot<const N: usize>(g: &[f64; N], beta: &[f64; N]) -> f64 {
    g.iter().zip(beta).map(|(x, b)| x * b).sum()
}

/// gᵀ·C·g over the covariance's rows and columns (3×3 in older files).
pub(super) fn quad<const N: usize>(g: &[f64; N], cov: &[Vec<f64>]) -> f64 {
    let mut v = 0.0;
    for (i, row) in cov.iter().enumerate().take(N) {
        for (j, c) in row.iter().enumerate().take(N) {
            v += g[i] * c * g[j];
        }
    }
    v
}

/// A candidate solution in the transformed (row/seconds) problem.
#[derive(Debug, Clone)]
pub(super) struct Solution<const N: usize> {
    pub(super) beta: [f64; N],
    pub(super) free: [bool; N],
    /// (XᵀX)⁻¹ over the free coefficients (zero elsewhere).
    pub(super) inv: [[f64; N]; N],
    pub(super) rss: f64,
}

impl<const N: usize> Solution<N> {
    /// Standard error of coefficient j on `m` rows.
    pub(super) fn se(&self, j: usize, m: usize) -> f64 {
        let p = count(&self.free);
        if m <= p {
            return 0.0;
        }
        let v = self.rss / (m - p) as f64 * self.inv[j][j];
        if v.is_finite() && v > 0.0 { v.sqrt() } else { 0.0 }
    }

    /// Coefficient j in standard errors (0 when the s.e. is 0).
    pub(super) fn t(&self, j: usize, m: usize) -> f64 {
        let se = self.se(j, m);
        if se > 0.0 { self.beta[j] / se } else { 0.0 }
    }
}

/// Relative residual of one transformed row: 1 − x·β = (s − ŝ)/s.
fn residual<const N: usize>(x: &[f64; N], beta: &[f64; N]) -> f64 {
    1.0 - dot(x, beta)
}

/// Exact NNLS over the `allowed` columns: every subset of them solved
/// unconstrained; the non-negative solution with the smallest residual wins
/// (larger subsets first, so a tie keeps more coefficients).
#[cfg(test)]
pub(super) fn nnls<const N: usize>(rows: &[[f64; N]], allowed: &[bool; N]) -> Option<Solution<N>> {
    nnls_w(rows, &vec![1.0; rows.len()], allowed)
}

/// [`nnls`] with a weight per row: minimises Σ wᵢ(1 − xᵢ·β)²; `inv` is (XᵀWX)⁻¹ and
/// `rss` the weighted sum.
pub(super) fn nnls_w<const N: usize>(rows: &[[f64; N]], w: &[f64], allowed: &[bool; N]) -> Option<Solution<N>> {
    let mut best: Option<Solution<N>> = None;
    let mut subsets: Vec<[bool; N]> = (1u32..(1 << N))
        .map(|m| std::array::from_fn(|j| m & (1 << j) != 0))
        .filter(|s: &[bool; N]| (0..N).all(|j| allowed[j] || !s[j]))
        .collect();
    subsets.sort_by_key(|s| std::cmp::Reverse(count(s)));
    for s in subsets {
        let Some(c) = solve_w(rows, w, s) else { continue };
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
#[cfg(test)]
fn solve<const N: usize>(rows: &[[f64; N]], free: [bool; N]) -> Option<Solution<N>> {
    solve_w(rows, &vec![1.0; rows.len()], free)
}

/// Weighted form of `solve`: row i counts `w[i]` times.
pub(super) fn solve_w<const N: usize>(rows: &[[f64; N]], w: &[f64], free: [bool; N]) -> Option<Solution<N>> {
    let cols: Vec<usize> = (0..N).filter(|&j| free[j]).collect();
    let p = cols.len();
    let mut g = vec![vec![0.0; p]; p];
    let mut h = vec![0.0; p];
    for (x, &wi) in rows.iter().zip(w) {
        for (i, &ci) in cols.iter().enumerate() {
            h[i] += wi * x[ci];
            for (j, &cj) in cols.iter().enumerate() {
                g[i][j] += wi * x[ci] * x[cj];
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
    let mut beta = [0.0; N];
    let mut inv = [[0.0; N]; N];
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
    let rss = rows.iter().zip(w).map(|(x, wi)| wi * residual(x, &beta).powi(2)).sum();
    Some(Solution { beta, free, inv, rss })
}

/// Leave-one-row-out residuals of a weighted least-squares solution on its free
/// columns, exactly and without refitting: row i's residual over `1 − hᵢᵢ`, the leverage
/// `hᵢᵢ = wᵢ·xᵢᵀ(XᵀWX)⁻¹xᵢ` (the PRESS residuals). Each is `1 − x·β₍₋ᵢ₎`: the relative
/// error, `(s − ŝ)/s`, of the row predicted by a fit of the others with the same
/// weights and columns. None for a row that alone decides a coefficient (hᵢᵢ ≈ 1).
pub(super) fn left_out_residuals<const N: usize>(rows: &[[f64; N]], w: &[f64], sol: &Solution<N>) -> Vec<Option<f64>> {
    rows.iter()
        .zip(w)
        .map(|(x, &wi)| {
            let h = wi * (0..N).map(|j| (0..N).map(|k| x[j] * sol.inv[j][k] * x[k]).sum::<f64>()).sum::<f64>();
            (h.is_finite() && h < 1.0 - 1e-9).then(|| residual(x, &sol.beta) / (1.0 - h))
        })
        .collect()
}

/// Gauss–Jordan inverse of a symmetric positive definite matrix with unit
/// diagonal; its pivots are the Schur complements, so a pivot at or below
/// SINGULAR_EPS means the columns are (nearly) dependent.
pub(super) fn invert_spd(mut a: Vec<Vec<f64>>) -> Option<Vec<Vec<f64>>> {
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

    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= 1e-12 * want.abs().max(1.0)
    }

    /// a · b is the 2×2 identity (to rounding).
    fn assert_inverse(a: impl Fn(usize, usize) -> f64, b: impl Fn(usize, usize) -> f64) {
        for (i, j) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
            let v: f64 = (0..2).map(|k| a(i, k) * b(k, j)).sum();
            assert!(close(v, if i == j { 1.0 } else { 0.0 }), "({i},{j}) = {v}");
        }
    }

    #[test]
    fn inverse_of_a_unit_diagonal_matrix() {
        let a = vec![vec![1.0, 0.5], vec![0.5, 1.0]];
        let inv = invert_spd(a.clone()).expect("regular");
        assert_inverse(|i, j| a[i][j], |i, j| inv[i][j]);
    }

    #[test]
    fn dependent_or_nan_columns_are_singular() {
        assert!(invert_spd(vec![vec![1.0, 1.0], vec![1.0, 1.0]]).is_none());
        assert!(invert_spd(vec![vec![1.0, 1.0 - 1e-12], vec![1.0 - 1e-12, 1.0]]).is_none());
        assert!(invert_spd(vec![vec![f64::NAN]]).is_none());
        // A column of zeros: no usable diagonal.
        assert!(solve(&[[1.0, 0.0], [2.0, 0.0]], [true, true]).is_none());
    }

    #[test]
    fn exact_rows_are_solved_with_their_inverse_normal_matrix() {
        // 1 = 0.25·x0 + 0.5·x1 on every row.
        let rows = [[2.0, 1.0], [4.0, 0.0], [0.0, 2.0], [1.0, 1.5]];
        let s = solve(&rows, [true, true]).expect("regular");
        assert!(close(s.beta[0], 0.25) && close(s.beta[1], 0.5), "{s:?}");
        assert!(s.rss < 1e-24, "{}", s.rss);
        // inv = (XᵀX)⁻¹: XᵀX = [[21, 3.5], [3.5, 7.25]].
        let xtx = [[21.0, 3.5], [3.5, 7.25]];
        assert_inverse(|i, j| xtx[i][j], |i, j| s.inv[i][j]);
    }

    #[test]
    fn t_is_the_coefficient_in_standard_errors() {
        // One column, rows 1 and 2: β = Σx/Σx² = 0.6, residuals 0.4 and −0.2, rss 0.2,
        // (XᵀX)⁻¹ = 0.2, s.e. = √(0.2/(2 − 1)·0.2) = 0.2, t = 3.
        let s = solve(&[[1.0], [2.0]], [true]).expect("regular");
        assert!(close(s.beta[0], 0.6) && close(s.rss, 0.2) && close(s.inv[0][0], 0.2), "{s:?}");
        assert!(close(s.t(0, 2), 3.0), "{}", s.t(0, 2));
        // No residual degrees of freedom: no standard error, t reported as 0.
        assert_eq!(s.t(0, 1), 0.0);
    }

    #[test]
    fn nnls_drops_a_negative_coefficient() {
        // Unconstrained: 1 = 1·x0 − 0.1·x1 exactly; the non-negative answer drops x1.
        let rows: Vec<[f64; 2]> = [(1.0, 0.0), (2.0, 10.0), (3.0, 20.0), (1.5, 5.0)]
            .into_iter()
            .map(|(a, b)| {
                let s = a - 0.1 * b;
                [a / s, b / s]
            })
            .collect();
        let s = solve(&rows, [true, true]).expect("regular");
        assert!(s.beta[1] < 0.0);
        let n = nnls(&rows, &[true, true]).expect("a non-negative solution");
        assert_eq!(n.free, [true, false]);
        assert_eq!(n.beta[1], 0.0);
        assert!(n.beta[0] > 0.0 && n.rss > 0.0);
        // Not allowed: never free, even when it would help.
        let n = nnls(&rows, &[false, true]).expect("x1 alone");
        assert_eq!(n.free, [false, true]);
        assert_eq!(count(&n.free), 1);
    }

    #[test]
    fn nnls_keeps_more_coefficients_on_a_tie() {
        // Orthogonal columns, x1's best coefficient exactly 0: {x0} and {x0, x1} both
        // fit exactly.
        let rows = [[1.0, 1.0], [1.0, -1.0]];
        let n = nnls(&rows, &[true, true]).expect("solvable");
        assert_eq!(n.free, [true, true]);
        assert_eq!((n.beta, n.rss), ([1.0, 0.0], 0.0));
    }

    #[test]
    fn left_out_residuals_are_those_of_a_refit_without_the_row() {
        let rows = [[1.0, 0.5], [2.0, 0.1], [3.0, 2.0], [0.5, 1.5], [1.5, 1.0]];
        let w = [1.0, 2.0, 0.5, 1.0, 3.0];
        let all = solve_w(&rows, &w, [true, true]).expect("regular");
        let loo = left_out_residuals(&rows, &w, &all);
        for i in 0..rows.len() {
            let (r, ww): (Vec<[f64; 2]>, Vec<f64>) =
                rows.iter().zip(w).enumerate().filter(|(j, _)| *j != i).map(|(_, (x, w))| (*x, w)).unzip();
            let refit = solve_w(&r, &ww, [true, true]).expect("regular");
            let want = residual(&rows[i], &refit.beta);
            assert!((loo[i].unwrap() - want).abs() < 1e-9, "row {i}: {:?} vs {want}", loo[i]);
        }
        // One row alone decides the second column: it cannot be left out.
        let rows = [[1.0, 0.0], [2.0, 0.0], [1.0, 1.0]];
        let s = solve_w(&rows, &[1.0; 3], [true, true]).expect("regular");
        assert_eq!(left_out_residuals(&rows, &[1.0; 3], &s)[2], None);
    }

    #[test]
    fn quad_reads_a_smaller_covariance() {
        let cov = vec![vec![2.0, 1.0, 0.0], vec![1.0, 3.0, 0.0], vec![0.0, 0.0, 4.0]];
        // 1·2·1 + 2·(1·1·2) + 2·3·2 + 0 = 2 + 4 + 12; the 4th coordinate has no row.
        assert_eq!(quad(&[1.0, 2.0, 0.0, 9.0], &cov), 18.0);
        assert_eq!(dot(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]), 32.0);
    }
}
