//! The dirsize view: per target, the per-file cost by portion (median over runs), the
//! change point of the knee marked in it; the knee's line, or that there is none up to the
//! portions measured (one line fits as well as two segments), is printed with the
//! detections.

use crate::analysis::detect::{Detection, Knee, knee_grid, per_portion};
use crate::analysis::stats::median;
use crate::report::views::{GENERIC, View};
use crate::results::ResultSet;
use crate::units::sig3;

/// Per target: per-file cost by portion (median over runs), and the knee. The portions
/// are `portion` files, or finer where that gives few and the runs recorded finer ones
/// (`detect::knee_grid`: the grid the knee is looked for on).
pub fn report(rs: &ResultSet, portion: u64) -> String {
    let mut out = String::new();
    for target in &rs.targets {
        let creates: Vec<&crate::results::Measurement> = rs
            .measurements
            .iter()
            .filter(|m| m.op == "create" && m.target == target.id && m.result.complete())
            .collect();
        let recorded: Vec<(&[crate::measure::Portion], u64)> =
            creates.iter().map(|m| (m.result.portions.as_slice(), m.tree_files)).collect();
        let portion = knee_grid(&recorded, portion);
        let runs: Vec<Vec<f64>> =
            creates.iter().map(|m| per_portion(&m.result.portions, portion, m.tree_files)).collect();
        let Some(n) = runs.iter().map(Vec::len).min() else { continue };
        if n == 0 {
            continue;
        }
        let per_file: Vec<f64> =
            (0..n).map(|k| median(&runs.iter().map(|r| r[k]).collect::<Vec<_>>()) / portion as f64).collect();
        let knee = knee_of(rs, &target.id);
        let mut t = comfy_table::Table::new();
        t.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
        let mut header = vec!["files in dir", "µs per file (median of runs)", "min … max of runs"];
        if knee.is_some() {
            header.push("change point");
        }
        t.set_header(header);
        // At most ~25 rows: every k-th portion.
        let stride = n.div_ceil(25).max(1);
        for k in (0..n).step_by(stride) {
            let vals: Vec<f64> = runs.iter().map(|r| r[k] / portion as f64 * 1e6).collect();
            let lo = vals.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = vals.iter().cloned().fold(0.0, f64::max);
            let (from, to) = (k as u64 * portion, (k + stride) as u64 * portion);
            let mut row = vec![
                format!("{from} … {}", (k as u64 + 1) * portion),
                sig3(per_file[k] * 1e6),
                format!("{} … {}", sig3(lo), sig3(hi)),
            ];
            if let Some(kn) = knee {
                row.push(change_point_mark(kn, from, to).into());
            }
            t.add_row(row);
        }
        out.push_str(&format!("target {} ({} runs)\n{t}\n", target.id, runs.len()));
        // A knee, or that there is none up to the portions measured (`no_knee` in the
        // JSON), is printed with the other detections under the tables.
    }
    out
}

/// The knee found in `target`'s create, if any.
fn knee_of<'a>(rs: &'a ResultSet, target: &str) -> Option<&'a Knee> {
    rs.detections.iter().find_map(|d| match d {
        Detection::Knee { target: t, op, knee, .. } if t == target && op == "create" => Some(knee),
        _ => None,
    })
}

/// The mark of the rows from `from` to `to` files: where the knee's change point is, and
/// where it may be (its AICc within 2 of the best).
fn change_point_mark(k: &Knee, from: u64, to: u64) -> &'static str {
    let [lo, hi] = k.at_files_range.unwrap_or([k.at_files, k.at_files]);
    if (from..to).contains(&k.at_files) {
        "← knee"
    } else if lo < to && from <= hi {
        "← or here"
    } else {
        ""
    }
}

/// dirsize's view: its per-portion table in the terminal (per `--portion` files as the run
/// recorded it); the generic page in HTML.
pub const VIEW: View = View { terminal: |rs| report(rs, rs.experiment.portion_files), ..GENERIC };
