//! The dirsize view: per target, the per-file cost by portion (median over runs); the knee,
//! or that there is none up to the portions measured, is printed with the detections.

use crate::analysis::detect::per_portion;
use crate::analysis::stats::median;
use crate::report::views::{GENERIC, View};
use crate::results::ResultSet;
use crate::units::sig3;

/// Per target: per-file cost by portion (median over runs), and the knee.
pub fn report(rs: &ResultSet, portion: u64) -> String {
    let mut out = String::new();
    for target in &rs.targets {
        let runs: Vec<Vec<f64>> = rs
            .measurements
            .iter()
            .filter(|m| m.op == "create" && m.target == target.id && m.result.complete())
            .map(|m| per_portion(&m.result.portions, portion, m.tree_files))
            .collect();
        let Some(n) = runs.iter().map(Vec::len).min() else { continue };
        if n == 0 {
            continue;
        }
        let per_file: Vec<f64> =
            (0..n).map(|k| median(&runs.iter().map(|r| r[k]).collect::<Vec<_>>()) / portion as f64).collect();
        let mut t = comfy_table::Table::new();
        t.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
        t.set_header(vec!["files in dir", "µs per file (median of runs)", "min … max of runs"]);
        // At most ~25 rows: every k-th portion.
        let stride = n.div_ceil(25).max(1);
        for k in (0..n).step_by(stride) {
            let vals: Vec<f64> = runs.iter().map(|r| r[k] / portion as f64 * 1e6).collect();
            let lo = vals.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = vals.iter().cloned().fold(0.0, f64::max);
            t.add_row(vec![
                format!("{} … {}", k as u64 * portion, (k as u64 + 1) * portion),
                sig3(per_file[k] * 1e6),
                format!("{} … {}", sig3(lo), sig3(hi)),
            ]);
        }
        out.push_str(&format!("target {} ({} runs)\n{t}\n", target.id, runs.len()));
        // A knee, or that there is none up to the portions measured (`no_knee` in the
        // JSON), is printed with the other detections under the tables.
    }
    out
}

/// dirsize's view: its per-portion table in the terminal (per `--portion` files as the run
/// recorded it); the generic page in HTML.
pub const VIEW: View = View { terminal: |rs| report(rs, rs.experiment.portion_files), ..GENERIC };
