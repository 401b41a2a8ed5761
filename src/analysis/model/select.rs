//! Which terms a fit keeps (the model's docs, "Which coefficients are kept"): a term
//! enters only if it is resolved (free, beyond 2 standard errors, the per-file cost still
//! free) and it makes the fit predict the cells it leaves out better.
//!
//! The left-out error of a candidate is exact for its weighted least-squares fit: every
//! cell's residual over `1 − hᵢᵢ` (`linalg::left_out_residuals`), no refit needed, so
//! all eight combinations of c, d and k are judged inside every reweighting round and
//! every fold of the model's own leave-one-cell-out check; a cell that alone decides a
//! coefficient is predicted by a fit of the others that drops it (issue 40: exFAT's
//! "per dir 60 ms" was the 61 ms every read paid, read off the few trees with
//! directories).
//!
//! It is combined with the information criterion that decided alone before (AICc, or
//! Mallows' Cp on a few cells): a term must lower both. The left-out error alone let a
//! d that chance put 2.5 s.e. above 0 into a fit of a linear file system (5% noise,
//! 1 seed in 50 of `linear_file_system_rejects_the_directory_size_term`). The AICc of
//! the models without and with d is recorded.

use super::{DIR_T_MIN, P};
use crate::analysis::linalg::{Solution, count, dot, left_out_residuals, nnls_w, solve_w};
use serde::{Deserialize, Serialize};

/// The directory-size term beside the chosen model: what it is when added (or what the
/// model gives it when chosen), and the left-out error with and without it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TermCheck {
    /// The coefficient, fitted without the non-negativity constraint (it may be
    /// negative: the data then lean the other way), with its standard error.
    pub estimate_s: f64,
    pub se_s: f64,
    /// Degrees of freedom of `se_s`: cells − coefficients.
    pub df: usize,
    /// Root mean square of ln(measured / predicted) over the cells, each predicted by a
    /// fit of the others, with the term and without it (the rest of the chosen model).
    pub left_out_with: f64,
    pub left_out_without: f64,
    /// The term entered the model.
    pub chosen: bool,
}

/// A fitted selection: the solution, the AICc of the models without and with the
/// directory-size term, and the check of that term.
pub(super) struct Selected {
    pub(super) sol: Solution<P>,
    pub(super) aicc_plain: Option<f64>,
    pub(super) aicc_dir_entry: Option<f64>,
    pub(super) dir_entry: Option<TermCheck>,
}

/// Largest left-out log error a cell counts with (a prediction ≤ 0, or 1,000× off).
const WORST_LOG_ERROR: f64 = 6.907_755_278_982_137; // ln 1000

/// √(mean of ln(measured/predicted)²) over the rows, each predicted without itself: by
/// the leverage formula, or, for a row that alone decides one of the solution's
/// coefficients, by a fit of the others on the same columns that drops what they cannot
/// decide. A prediction at or below 0 counts [`WORST_LOG_ERROR`].
fn left_out_error(rows: &[[f64; P]], w: &[f64], sol: &Solution<P>) -> f64 {
    let r = left_out_residuals(rows, w, sol);
    let refit = |i: usize| {
        let (others, wo): (Vec<[f64; P]>, Vec<f64>) =
            rows.iter().zip(w).enumerate().filter(|(j, _)| *j != i).map(|(_, (x, w))| (*x, *w)).unzip();
        nnls_w(&others, &wo, &sol.free).map(|s| 1.0 - dot(&rows[i], &s.beta))
    };
    let sq: f64 = (0..rows.len())
        .map(|i| match r[i].or_else(|| refit(i)) {
            // 1 − r = predicted / measured.
            Some(r) if 1.0 - r > 0.0 => (1.0 - r).ln().abs().min(WORST_LOG_ERROR),
            _ => WORST_LOG_ERROR,
        })
        .map(|e| e * e)
        .sum();
    (sq / rows.len().max(1) as f64).sqrt()
}

/// Small-sample Akaike criterion of a solution on `m` rows (k = coefficients + variance).
fn aicc(sol: &Solution<P>, m: usize) -> Option<f64> {
    let k = count(&sol.free) + 1;
    if m <= k + 1 {
        return None;
    }
    let m = m as f64;
    let k = k as f64;
    let v = m * (sol.rss.max(1e-300) / m).ln() + 2.0 * k + 2.0 * k * (k + 1.0) / (m - k - 1.0);
    v.is_finite().then_some(v)
}

/// Columns allowed for a combination: bit 0 c, bit 1 d, bit 2 k, added to (a, b).
fn allowed(bits: usize) -> [bool; P] {
    [true, true, bits & 1 != 0, bits & 2 != 0, bits & 4 != 0]
}

/// The term selection on weighted rows (module docs): of the plain model (a, b) and every
/// addition of c, d and k, the resolved one whose every added term lowers both the
/// left-out error and the information criterion (against the same model without it)
/// and whose left-out error is the lowest wins; a tie keeps fewer terms.
///
/// The criterion is AICc where it exists for the four-term model (m > 6), else Mallows'
/// `Cp = RSS/σ² + 2p` with σ² the larger of the full model's residual variance and
/// `pure`, the run noise left in a cell's median (the replicates' pure error): with the
/// 6 cells of a calibration's fold AICc forbids 4 coefficients even when the plain
/// model misses by 50%.
pub(super) fn select(rows: &[[f64; P]], w: &[f64], pure: f64) -> Option<Selected> {
    let m = rows.len();
    let has_dir_sq = rows.iter().any(|r| r[3] > 0.0);
    let fits: Vec<Option<(Solution<P>, f64)>> = (0..8)
        .map(|bits| {
            if bits & 2 != 0 && !has_dir_sq {
                return None;
            }
            let s = nnls_w(rows, w, &allowed(bits))?;
            let e = left_out_error(rows, w, &s);
            Some((s, e))
        })
        .collect();
    let plain = fits[0].as_ref()?;
    // The full model: every term the rows allow (d only with Σn²).
    let full = &fits[if has_dir_sq { 7 } else { 5 }];
    let full_var = full.as_ref().filter(|f| m > count(&f.0.free)).map(|f| f.0.rss / (m - count(&f.0.free)) as f64);
    let sigma2 = full_var.unwrap_or(0.0).max(pure);
    let use_aicc = m > 6 || sigma2 <= 0.0;
    let crit = |bits: usize| {
        let s = &fits[bits].as_ref()?.0;
        if use_aicc { aicc(s, m) } else { Some(s.rss / sigma2 + 2.0 * count(&s.free) as f64) }
    };
    let error = |bits: usize| fits[bits].as_ref().map_or(f64::INFINITY, |f| f.1);
    let resolved = |bits: usize| {
        let Some((s, _)) = &fits[bits] else { return false };
        let a = allowed(bits);
        s.free[0] && (2..P).all(|j| !a[j] || (s.free[j] && s.t(j, m) >= DIR_T_MIN))
    };
    // Every added term must earn its place: without it, the left-out error and the
    // criterion are higher.
    let earns = |bits: usize, b: usize| {
        let criterion = match (crit(bits), crit(bits ^ b)) {
            (Some(with), Some(without)) => with < without,
            (Some(_), None) => true,
            (None, _) => false,
        };
        criterion && error(bits) < error(bits ^ b)
    };
    let enters = |bits: usize| [1, 2, 4].into_iter().filter(|b| bits & b != 0).all(|b| earns(bits, b));
    let mut order: Vec<usize> = (0..8).collect();
    order.sort_by_key(|b| b.count_ones()); // stable: fewer terms first on a tie
    let mut best = 0;
    for bits in order {
        if bits != 0 && resolved(bits) && enters(bits) && error(bits) < error(best) {
            best = bits;
        }
    }
    let aicc_dir_entry =
        [2, 3, 6, 7].into_iter().filter_map(|b| fits[b].as_ref().and_then(|f| aicc(&f.0, m))).min_by(f64::total_cmp);
    let sol = fits[best].as_ref().map_or(plain.0.clone(), |f| f.0.clone());
    let dir_entry = if has_dir_sq { term_check(rows, w, &sol, 3) } else { None };
    Some(Selected { aicc_plain: aicc(&plain.0, m), aicc_dir_entry, sol, dir_entry })
}

/// Column `j` beside the chosen solution: the chosen free columns with and without it,
/// fitted unconstrained (None when it cannot be told from them: a singular fit).
fn term_check(rows: &[[f64; P]], w: &[f64], chosen: &Solution<P>, j: usize) -> Option<TermCheck> {
    let m = rows.len();
    let mut with = chosen.free;
    with[j] = true;
    let mut without = chosen.free;
    without[j] = false;
    let s = solve_w(rows, w, with)?;
    let left_out_without = match solve_w(rows, w, without) {
        Some(o) => left_out_error(rows, w, &o),
        None => WORST_LOG_ERROR,
    };
    Some(TermCheck {
        estimate_s: s.beta[j],
        se_s: s.se(j, m),
        df: m.saturating_sub(count(&with)),
        left_out_with: left_out_error(rows, w, &s),
        left_out_without,
        chosen: chosen.free[j],
    })
}
