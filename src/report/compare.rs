//! `manyfiles compare` output: one row per cell measured in both result files.

use crate::results::ResultSet;
use crate::results::compare::{Comparison, Verdict};
use crate::units::sig3;
use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{CellAlignment, Table};

use super::table::fmt_mean_ci;

/// The table, then how the verdicts were reached. By default it fits 100 columns:
/// the target pair said once above it when every row shares it, the ratio's interval
/// as `[lo–hi]`, p-values only with `--wide`.
pub fn table(
    cs: &[Comparison],
    a: &ResultSet,
    b: &ResultSet,
    a_name: &str,
    b_name: &str,
    equivalence_pct: Option<f64>,
) -> String {
    let wide = super::table::wide();
    let names: Vec<String> = cs
        .iter()
        .map(|c| {
            let (ta, tb) = (super::target_name(a, &c.target_a), super::target_name(b, &c.target_b));
            if ta == tb { ta } else { format!("{ta} → {tb}") }
        })
        .collect();
    let one_target = !wide && names.windows(2).all(|w| w[0] == w[1]);
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY);
    let mut header = vec!["op", "tree", "target", "A", "B", "B/A (95% CI)", "p", "verdict"];
    if !wide {
        header = vec!["op", "tree", "target", "A", "B", "B/A [95% CI]", "verdict"];
    }
    if one_target {
        header.remove(2);
    }
    t.set_header(header);
    for (c, target) in cs.iter().zip(&names) {
        let ratio = match (c.ratio_ci95, wide) {
            (Some([lo, hi]), true) => format!("{} ({} … {})", sig3(c.ratio), sig3(lo), sig3(hi)),
            (Some([lo, hi]), false) => format!("{} [{}–{}]", sig3(c.ratio), sig3(lo), sig3(hi)),
            (None, _) => sig3(c.ratio),
        };
        let mut row = vec![
            c.op.clone(),
            c.tree_key.clone(),
            target.clone(),
            side(c.basis, c.median_a_s, c.mean_a_s, c.n_a, wide),
            side(c.basis, c.median_b_s, c.mean_b_s, c.n_b, wide),
            ratio,
        ];
        if wide {
            row.push(
                c.p_value
                    .map(|p| if p < 1e-4 { "< 0.0001".into() } else { format!("{p:.4}") })
                    .unwrap_or_else(|| "—".into()),
            );
        }
        row.push(match c.verdict.as_str() {
            v if wide => v.to_string(),
            "no significant difference" => "no sig. diff.".into(),
            "too few runs to tell" => "too few runs".into(),
            "same within the margin" => format!("same ±{}%", equivalence_pct.unwrap_or(0.0)),
            v => v.to_string(),
        });
        if one_target {
            row.remove(2);
        }
        t.add_row(row);
    }
    let first_num = if one_target { 2 } else { 3 };
    for i in first_num..first_num + if wide { 4 } else { 3 } {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    super::table::fit(&mut t);
    let target_line =
        if one_target { format!("target: {}\n", names.first().cloned().unwrap_or_default()) } else { String::new() };
    let basis = if wide {
        String::new()
    } else {
        "A, B: median (m) or mean (x̄) of n runs; p-values with --wide\n".to_string()
    };
    let differ = cs.iter().filter(|c| matches!(c.verdict, Verdict::Slower | Verdict::Faster)).count();
    let chance = cs.len() as f64 * crate::results::compare::ALPHA;
    let equivalence = match equivalence_pct {
        Some(p) => format!(" \"same within the margin\": the whole interval lies within ±{p}%."),
        None => String::new(),
    };
    format!(
        "A = {a_name}, B = {b_name}\n{target_line}{t}\n{basis}B/A above 1: B is slower. With 6 runs or more on both sides: ratio of the medians, \
         its 95% interval from the medians' intervals (within and between blocks of runs) combined on a log scale. With fewer runs: ratio of \
         the means, its interval by the delta method on its logarithm, and p of that same statistic. The verdict follows \
         the interval: slower/faster exactly when it excludes 1.{equivalence}\n\
         Each verdict is per cell at the 95% level: {differ} of {} cells differ, and about {} would by chance alone \
         with no real difference anywhere.\n",
        cs.len(),
        crate::units::sig3(chance)
    )
}

/// One side's central figure: `median 12.3 ms (n=8)` or `mean 12.3 ms (n=3)`.
fn side(basis: &str, median: f64, mean: f64, n: usize, wide: bool) -> String {
    let v = if basis == "median" { median } else { mean };
    let value = fmt_mean_ci(v, None).replace(" (1 run)", "");
    if wide {
        format!("{basis} {value} (n={n})")
    } else {
        format!("{}{value} n={n}", if basis == "median" { "m " } else { "x̄ " })
    }
}
