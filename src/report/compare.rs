//! `manyfiles compare` output: one row per cell measured in both result files.

use crate::analysis::compare::Comparison;
use crate::units::sig3;
use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{CellAlignment, Table};

use super::table::fmt_mean_ci;

/// The table, then how the verdicts were reached.
pub fn table(cs: &[Comparison], a_name: &str, b_name: &str) -> String {
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY);
    t.set_header(vec!["op", "tree", "target", "A mean", "B mean", "B/A (95% CI)", "p (Welch)", "verdict"]);
    for c in cs {
        let target =
            if c.target_a == c.target_b { c.target_a.clone() } else { format!("{} → {}", c.target_a, c.target_b) };
        let ratio = match c.ratio_ci95 {
            Some([lo, hi]) => format!("{} ({} … {})", sig3(c.ratio), sig3(lo), sig3(hi)),
            None => sig3(c.ratio),
        };
        t.add_row(vec![
            c.op.clone(),
            c.tree_key.clone(),
            target,
            format!("{} (n={})", fmt_mean_ci(c.mean_a_s, None).replace(" (1 run)", ""), c.n_a),
            format!("{} (n={})", fmt_mean_ci(c.mean_b_s, None).replace(" (1 run)", ""), c.n_b),
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
        "A = {a_name}, B = {b_name}\n{t}\nB/A above 1: B is slower. Verdict: Welch's t-test on the means at the 5% level; \
         the ratio's CI by the delta method on its logarithm\n"
    )
}
