//! The table of an MPI job's ranks: per op and tree, the job's rate from the last
//! finisher and from the first (stonewall), and how far apart the ranks finished.

use super::table::{new_table, right_align};
use crate::results::ResultSet;
use crate::units::sig3;

/// Under MPI: per op and tree, the job's rate from the last finisher and from the first
/// (stonewall), and how far apart the ranks finished. Empty with one rank.
pub fn table(rs: &ResultSet) -> String {
    use crate::analysis::stats::summarize;
    use crate::units::fmt_rate;
    if rs.provenance.ranks < 2 {
        return String::new();
    }
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for m in &rs.measurements {
        let k = (m.target.clone(), m.op.clone(), m.tree_key.clone());
        if m.result.ranks.is_some() && !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut t = new_table(
        ["target", "op", "tree (per rank)", "files (job)", "rate, last finisher", "rate, stonewall", "rank spread"]
            .map(String::from)
            .to_vec(),
    );
    // Medians with their distribution-free interval, like every other table.
    let rate = |xs: &[f64]| match summarize(xs) {
        Some(s) => match crate::analysis::stats::printable_interval(s.median_s, s.median_ci95_s, s.n) {
            Ok([lo, hi]) => format!(
                "{} [{} – {}]",
                fmt_rate(s.median_s, "files"),
                fmt_rate(lo, "").trim_end_matches(" /s"),
                fmt_rate(hi, "").trim_end_matches(" /s")
            ),
            Err(why) => format!("{} ({why})", fmt_rate(s.median_s, "files")),
        },
        None => "-".into(),
    };
    for (target, op, tree) in keys {
        let ms: Vec<_> = rs
            .measurements
            .iter()
            .filter(|m| m.target == target && m.op == op && m.tree_key == tree && m.result.complete())
            .filter_map(|m| m.result.ranks.as_ref().map(|s| (m, s)))
            .collect();
        if ms.is_empty() {
            continue;
        }
        let last: Vec<f64> = ms.iter().map(|(m, _)| m.result.files as f64 / m.result.elapsed_s.max(1e-9)).collect();
        let first: Vec<f64> = ms.iter().map(|(_, s)| s.stonewall_files as f64 / s.stonewall_s.max(1e-9)).collect();
        let spread: Vec<f64> = ms
            .iter()
            .map(|(_, s)| s.rank_elapsed_s.iter().cloned().fold(0.0, f64::max) / s.stonewall_s.max(1e-9))
            .collect();
        t.add_row(vec![
            super::target_name(rs, &target),
            op,
            tree,
            ms[0].0.result.files.to_string(),
            rate(&last),
            rate(&first),
            format!("slowest/fastest {}×", sig3(crate::analysis::stats::median(&spread))),
        ]);
    }
    right_align(&mut t, 3);
    format!(
        "{} MPI ranks: the job's rate from the last rank to finish and from the first (stonewall: files all ranks had done by then)\n{t}\n",
        rs.provenance.ranks
    )
}
