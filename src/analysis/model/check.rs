//! Is a fitted cost an answer? A fit is judged by what it must do: predict a tree it did
//! not see. Every cell was left out of the fit in turn and predicted by the others
//! (`CostModel::cv_log_errors`); the median of those left-out errors says how far the
//! fitted costs are from describing the measurements. Above [`MAX_LEFT_OUT_ERROR`] the
//! per-file cost, the bandwidth and the break-even size are not printed as figures and
//! `predict` does not use the model: a fit that misses its own cells by 84% (R² −1.7 on a
//! busy machine) predicted 29.5 s for a create the table measured at 5.47 s (issue 40).
//!
//! R² alone does not decide: on a ladder whose rungs all take about the same time the
//! weighted R² is near 0 or negative while the fit predicts every rung within a few per
//! cent. The left-out error is in the unit a user reads a prediction in.

use super::CostModel;
use crate::units::sig3;
use serde::{Deserialize, Serialize};

/// Largest median left-out error (|predicted − measured| / measured) of a fit whose
/// costs are printed as figures.
pub const MAX_LEFT_OUT_ERROR: f64 = 0.25;

/// Fewest left-out predictions a verdict rests on.
const MIN_LEFT_OUT: usize = 3;

/// The verdict on one fit, as the result file records it beside the numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitCheck {
    /// Median over the cells of |predicted − measured| / measured, each cell predicted by
    /// the fit of the others; None when too few cells could be left out.
    pub left_out_error: Option<f64>,
    /// The largest `left_out_error` at which the fit is an answer.
    pub threshold: f64,
    /// The fitted costs are an answer: printed as figures and used by `predict`.
    pub usable: bool,
    /// Why not, in words a user acts on (None when usable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

/// What the measurements around a fit say about why it may miss.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context {
    /// Runs of the fit's cells that other processes disturbed.
    pub disturbed_runs: usize,
    /// Adaptive runs (the advice names `--max-time`; with `--runs N`, more runs).
    pub adaptive: bool,
}

/// |predicted / measured − 1| of every left-out cell, from ln(measured / predicted).
pub fn left_out_errors(cv_log_errors: &[f64]) -> Vec<f64> {
    cv_log_errors.iter().map(|e| ((-e).exp() - 1.0).abs()).filter(|x| x.is_finite()).collect()
}

/// The median left-out error of a fit (None: fewer than 3 cells could be left out).
pub fn median_left_out_error(m: &CostModel) -> Option<f64> {
    let mut e = left_out_errors(&m.cv_log_errors);
    if e.len() < MIN_LEFT_OUT {
        return None;
    }
    e.sort_by(f64::total_cmp);
    let n = e.len();
    Some(if n % 2 == 1 { e[n / 2] } else { (e[n / 2 - 1] + e[n / 2]) / 2.0 })
}

/// `84%`: a share in whole per cent (one decimal below 10%).
pub fn pct(x: f64) -> String {
    let p = x * 100.0;
    if p < 9.95 { format!("{p:.1}%") } else { format!("{p:.0}%") }
}

/// The verdict on `m` (see the module docs).
pub fn check(m: &CostModel, ctx: Context) -> FitCheck {
    let error = median_left_out_error(m);
    let why_not = match error {
        Some(e) if e <= MAX_LEFT_OUT_ERROR => None,
        Some(e) => Some(too_far(m, e, ctx)),
        None => Some(format!(
            "not fitted: too few tree shapes to check the fit on trees it leaves out ({} cells) — measure more sizes (more rungs: --from, --to)",
            m.cells
        )),
    };
    FitCheck { left_out_error: error, threshold: MAX_LEFT_OUT_ERROR, usable: why_not.is_none(), why_not }
}

/// Why a fit that misses its left-out cells by `e` is no answer, and what to do.
fn too_far(m: &CostModel, e: f64, ctx: Context) -> String {
    let longer = if ctx.adaptive { "or with a longer --max-time" } else { "or with more --runs" };
    let disturbed = match ctx.disturbed_runs {
        0 => String::new(),
        1 => "; 1 run disturbed".to_string(),
        n => format!("; {n} runs disturbed"),
    };
    if ctx.disturbed_runs > 0 || m.r2 < 0.9 {
        format!(
            "not fitted: the runs scatter more than the model explains (R² {}, left-out error {}{disturbed}) — rerun when the machine is quiet, {longer}",
            sig3(m.r2),
            pct(e)
        )
    } else {
        format!(
            "not fitted: the model misses the trees it leaves out (left-out error {}, R² {}): the time does not follow a·files + b·bytes + c·dirs + d·Σn² + k over this range — read the measured times in the table",
            pct(e),
            sig3(m.r2)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::model::{Point, fit};

    /// Cells of a ladder: `files` files over 64 MiB, time from `per_file` and 1 ms, each
    /// cell's runs scaled by `noise(cell, run)`.
    fn ladder(per_file: f64, noise: impl Fn(usize, usize) -> f64) -> Vec<Point> {
        let mut pts = Vec::new();
        for (i, files) in [1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0].into_iter().enumerate() {
            for r in 0..3 {
                let s = (1e-3 + per_file * files + 64e6 * 1e-9) * noise(i, r);
                pts.push(Point { files, bytes: 64e6, dirs: 0.0, dir_sq: files * files, seconds: s });
            }
        }
        pts
    }

    #[test]
    fn a_fit_that_predicts_its_cells_is_an_answer() {
        // ±3% around the model, alternating by cell.
        let m = fit(&ladder(20e-6, |i, r| 1.0 + 0.03 * if (i + r) % 2 == 0 { 1.0 } else { -1.0 })).unwrap();
        let c = check(&m, Context::default());
        assert!(c.usable, "{c:?}");
        assert!(c.why_not.is_none());
        assert!(c.left_out_error.unwrap() <= MAX_LEFT_OUT_ERROR, "{c:?}");
        assert!(c.left_out_error.unwrap() > 0.0, "the noise is seen: {c:?}");
    }

    #[test]
    fn a_fit_that_misses_its_cells_gives_no_figure() {
        // What a busy machine did (issue 40): the cells' medians ×0.3 … ×4 at random
        // around the model, unrelated to the tree.
        let factors = [3.9, 0.3, 2.5, 0.4, 4.0, 0.35, 3.0, 0.5];
        let m = fit(&ladder(20e-6, |i, _| factors[i])).unwrap();
        let c = check(&m, Context { disturbed_runs: 149, adaptive: true });
        assert!(!c.usable, "{c:?} (R² {})", m.r2);
        assert!(c.left_out_error.unwrap() > MAX_LEFT_OUT_ERROR, "{c:?}");
        let why = c.why_not.unwrap();
        assert!(why.starts_with("not fitted: the runs scatter"), "{why}");
        assert!(why.contains("149 runs disturbed") && why.contains("--max-time"), "{why}");
        assert!(why.contains(&format!("R² {}", sig3(m.r2))), "{why}");
    }

    #[test]
    fn negative_r2_alone_does_not_decide() {
        let mut m = fit(&ladder(20e-6, |i, r| 1.0 + 0.02 * ((i + r) % 3) as f64)).unwrap();
        m.r2 = -1.7;
        assert!(check(&m, Context::default()).usable, "the left-out error decides");
        m.cv_log_errors = vec![0.9, -0.8, 0.7, 0.1];
        let c = check(&m, Context::default());
        assert!(!c.usable);
        assert!(c.why_not.unwrap().contains("R² -1.7"));
    }

    #[test]
    fn too_few_left_out_cells_is_no_verdict_of_fit() {
        let mut m = fit(&ladder(20e-6, |_, _| 1.0)).unwrap();
        m.cv_log_errors = vec![0.01, 0.02];
        let c = check(&m, Context::default());
        assert!(!c.usable && c.left_out_error.is_none());
        assert!(c.why_not.unwrap().contains("too few tree shapes"));
    }

    #[test]
    fn left_out_error_is_relative_to_the_measurement() {
        // Predicted 29.5 s for 5.47 s measured: ln(5.47/29.5).
        let e = left_out_errors(&[(5.47f64 / 29.5).ln()]);
        assert!((e[0] - (29.5 / 5.47 - 1.0)).abs() < 1e-9);
        assert_eq!(pct(0.84), "84%");
        assert_eq!(pct(0.031), "3.1%");
    }
}
