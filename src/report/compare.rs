//! `manyfiles compare` output: one row per cell measured in both result files.

use crate::results::ResultSet;
use crate::results::compare::Comparison;
use crate::units::sig3;
use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{CellAlignment, Table};

use super::table::fmt_mean_ci;

/// The table, then how the verdicts were reached.
pub fn table(cs: &[Comparison], a: &ResultSet, b: &ResultSet, a_name: &str, b_name: &str) -> String {
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY);
    t.set_header(vec!["op", "tree", "target", "A", "B", "B/A (95% CI)", "p (Welch)", "verdict"]);
    for c in cs {
        let (ta, tb) = (super::target_name(a, &c.target_a), super::target_name(b, &c.target_b));
        let target = if ta == tb { ta } else { format!("{ta} → {tb}") };
        let ratio = match c.ratio_ci95 {
            Some([lo, hi]) => format!("{} ({} … {})", sig3(c.ratio), sig3(lo), sig3(hi)),
            None => sig3(c.ratio),
        };
        t.add_row(vec![
            c.op.clone(),
            c.tree_key.clone(),
            target,
            side(c.basis, c.median_a_s, c.mean_a_s, c.n_a),
            side(c.basis, c.median_b_s, c.mean_b_s, c.n_b),
            ratio,
            c.p_value
                .map(|p| if p < 1e-4 { "< 0.0001".into() } else { format!("{p:.4}") })
                .unwrap_or_else(|| "—".into()),
            c.verdict.as_str().to_string(),
        ]);
    }
    for i in 3..7 {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    format!(
        "A = {a_name}, B = {b_name}\n{t}\nB/A above 1: B is slower. With 6 runs or more on both sides: ratio of the medians, \
         its 95% interval from the medians' distribution-free intervals combined on a log scale, and the verdict says \
         slower/faster when that interval excludes 1. With fewer runs: ratio of the means, Welch's t-test at the 5% level, \
         the ratio's interval by the delta method on its logarithm\n"
    )
}

/// One side's central figure: `median 12.3 ms (n=8)` or `mean 12.3 ms (n=3)`.
fn side(basis: &str, median: f64, mean: f64, n: usize) -> String {
    let v = if basis == "median" { median } else { mean };
    format!("{basis} {} (n={n})", fmt_mean_ci(v, None).replace(" (1 run)", ""))
}
