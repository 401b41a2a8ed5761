//! The `clusters` view: for each target (one cluster size of a file system) and file
//! size, time per portion of files created (mean ± 95% CI half-width), the space one
//! file takes as st_blocks count it with the share of it that is slack, and what the
//! file system's used blocks grew by per file (statvfs, metadata included). Three
//! [`Grid`]s, the same on the terminal and the HTML page.

use crate::analysis::stats::summarize;
use crate::report::grid::{Cell, Fig, Grid, nonnegative};
use crate::report::table::fmt_mean_ci;
use crate::report::views::{GENERIC, View};
use crate::results::{Measurement, ResultSet};
use crate::units::{exact_size, fmt_size, sig3};

/// The trees of a clusters run: (tree key, files, bytes per file), by file size.
fn trees(rs: &ResultSet) -> Vec<(&str, u64, u64)> {
    let mut keys: Vec<(&str, u64, u64)> = Vec::new();
    for s in rs.summaries.iter().filter(|s| s.op == "create") {
        if !keys.iter().any(|k| k.0 == s.tree_key) {
            keys.push((&s.tree_key, s.tree_files, s.tree_bytes / s.tree_files.max(1)));
        }
    }
    keys.sort_by_key(|k| k.2);
    keys
}

/// A size per file over the runs: the mean ± the half-width of its 95% CI (Student t;
/// 0 when every run measured the same), and that interval.
fn size_fig(per_run: &[f64], file_size: u64) -> Option<Fig> {
    let s = summarize(per_run)?;
    let slack = |a: f64| if a > 0.0 { ((a - file_size as f64) / a * 100.0).max(0.0) } else { 0.0 };
    let mut text = fmt_size(s.mean_s);
    if let Some(h) = s.ci_half_width().filter(|h| *h > 0.0) {
        text.push_str(&format!(" ± {}", fmt_size(h)));
    }
    let pct = slack(s.mean_s);
    text.push_str(&format!(" ({}% slack)", if pct == 0.0 { "0".into() } else { sig3(pct) }));
    Some(Fig { text, ci: nonnegative(s.ci95_s, s.n), unit: "B" })
}

/// The three tables; `portion`: files per portion (the run's `--portion`).
pub fn grids(rs: &ResultSet, portion: u64) -> [Grid; 3] {
    let keys = trees(rs);
    let sizes: Vec<String> = keys.iter().map(|k| exact_size(k.2)).collect();
    let header = |first: &str| std::iter::once(first.to_string()).chain(sizes.iter().cloned()).collect();
    let mut time = Grid {
        id: "clusters-time".into(),
        title: format!("Time per {portion} files created (mean ± 95% CI half-width)"),
        header: header("cluster \\ file size"),
        ..Grid::default()
    };
    let mut blocks = Grid {
        id: "clusters-allocated".into(),
        title: "Space per file: allocated (st_blocks × 512) and the share of it that is slack".into(),
        header: header("cluster \\ file size"),
        notes: vec!["slack = the share of the allocated space not holding the file's data; ± the half-width of the 95% CI over the runs (none: every run allocated the same)".into()],
        ..Grid::default()
    };
    let mut statvfs = Grid {
        id: "clusters-fs".into(),
        title: "Space per file as the file system counts it (growth of its used blocks, statvfs; metadata included)"
            .into(),
        header: header("cluster \\ file size"),
        ..Grid::default()
    };
    for target in &rs.targets {
        let name = crate::report::target_name(rs, &target.id);
        let mut row = vec![Cell::Label(name.clone())];
        let mut brow = vec![Cell::Label(name.clone())];
        let mut vrow = vec![Cell::Label(name)];
        for (key, files, size) in &keys {
            let per = (*files as f64 / portion as f64).max(1e-12);
            row.push(
                match rs.summaries.iter().find(|s| s.op == "create" && s.target == target.id && s.tree_key == *key) {
                    Some(s) => Cell::Fig(Fig {
                        text: fmt_mean_ci(s.stats.mean_s / per, s.stats.ci_half_width().map(|h| h / per)),
                        ci: nonnegative(s.stats.ci95_s.map(|[lo, hi]| [lo / per, hi / per]), s.stats.n),
                        unit: "s",
                    }),
                    None => Cell::Missing("no complete run".into()),
                },
            );
            let ms: Vec<&Measurement> = rs
                .measurements
                .iter()
                .filter(|m| m.op == "create" && m.target == target.id && m.tree_key == *key && m.result.complete())
                .collect();
            let per_file = |b: Option<f64>, m: &Measurement| b.map(|b| b / m.tree_files.max(1) as f64);
            let b: Vec<f64> =
                ms.iter().filter_map(|m| per_file(m.result.allocated_bytes.map(|b| b as f64), m)).collect();
            let v: Vec<f64> =
                ms.iter().filter_map(|m| per_file(m.result.space_used_bytes.map(|b| b as f64), m)).collect();
            let missing = || Cell::Missing("not measured".into());
            brow.push(size_fig(&b, *size).map_or_else(missing, Cell::Fig));
            vrow.push(size_fig(&v, *size).map_or_else(missing, Cell::Fig));
        }
        time.rows.push(row);
        blocks.rows.push(brow);
        statvfs.rows.push(vrow);
    }
    [time, blocks, statvfs]
}

/// The tables as the terminal prints them.
pub fn table(rs: &ResultSet, portion: u64) -> String {
    grids(rs, portion).iter().map(Grid::terminal).collect::<Vec<_>>().join("\n")
}

/// clusters' view: its three tables in the terminal and on the HTML page, per
/// `--portion` files as the run recorded it.
pub const VIEW: View = View {
    terminal: |rs| table(rs, rs.experiment.portion_files),
    html_tables: Some(|rs| grids(rs, rs.experiment.portion_files).to_vec()),
    ..GENERIC
};
