//! The `bigfile` view: one row per target, each phase (write loop, close, unlink) as
//! mean ± 95% CI half-width (Student t, as the published comparison `bigfile`
//! reproduces reports it), the per-run total, and the write loop's bandwidth at the mean
//! with the interval it maps to. One [`Grid`] for the terminal and the HTML page.

use crate::ops::registry::BIGFILE_OPS as OPS;
use crate::report::grid::{Cell, Fig, Grid, nonnegative};
use crate::report::table::fmt_mean_ci;
use crate::report::views::{GENERIC, View};
use crate::results::ResultSet;
use crate::units::sig3;

/// The bigfile table. A `*` marks a first-run outlier (see the warnings).
pub fn grid(rs: &ResultSet) -> Grid {
    let mut g = Grid {
        id: "bigfile".into(),
        title: "One large file: the phases (mean ± 95% CI half-width) and the write bandwidth".into(),
        header: ["target", "write loop", "close", "unlink", "total", "write bandwidth (95% CI)"]
            .map(String::from)
            .to_vec(),
        ..Grid::default()
    };
    let mut flagged = false;
    let mut ids: Vec<&str> = rs.targets.iter().map(|t| t.id.as_str()).collect();
    for m in &rs.measurements {
        if !ids.contains(&m.target.as_str()) {
            ids.push(&m.target);
        }
    }
    for id in ids {
        let summary = |op: &str| rs.summaries.iter().find(|s| s.target == id && s.op == op);
        if OPS.iter().all(|op| summary(op).is_none()) {
            continue;
        }
        let mut row = vec![Cell::Label(crate::report::target_name(rs, id))];
        for op in OPS {
            row.push(match summary(op) {
                Some(s) => {
                    let mut text = fmt_mean_ci(s.stats.mean_s, s.stats.ci_half_width());
                    if s.stats.first_run_outlier {
                        text.push_str(" *");
                        flagged = true;
                    }
                    Cell::Fig(Fig { text, ci: nonnegative(s.stats.ci95_s, s.stats.n), unit: "s" })
                }
                None => Cell::Missing("no complete run".into()),
            });
        }
        // Total per run: the three phases of one run, when all three are complete.
        let mut totals = Vec::new();
        let mut runs: Vec<u32> = rs.measurements.iter().filter(|m| m.target == id).map(|m| m.run).collect();
        runs.sort_unstable();
        runs.dedup();
        for run in runs {
            let ms: Vec<_> = rs
                .measurements
                .iter()
                .filter(|m| m.target == id && m.run == run && m.result.complete() && OPS.contains(&m.op.as_str()))
                .collect();
            if OPS.iter().all(|op| ms.iter().any(|m| m.op == *op)) {
                totals.push(ms.iter().map(|m| m.result.elapsed_s).sum::<f64>());
            }
        }
        row.push(match crate::analysis::stats::summarize(&totals) {
            Some(s) => Cell::Fig(Fig {
                text: fmt_mean_ci(s.mean_s, s.ci_half_width()),
                ci: nonnegative(s.ci95_s, s.n),
                unit: "s",
            }),
            None => Cell::Missing("no run with all three phases complete".into()),
        });
        row.push(match summary(OPS[0]) {
            Some(s) if s.stats.mean_s > 0.0 => {
                let mib = |secs: f64| s.tree_bytes as f64 / secs / 1048576.0;
                let mut text = format!("{} MiB/s", sig3(mib(s.stats.mean_s)));
                let ci = match s.stats.ci95_s {
                    Some([lo, hi]) => {
                        // The time interval's slow end is the bandwidth's low end; a time
                        // interval reaching 0 leaves the bandwidth unbounded above.
                        let fast = if lo > 0.0 { mib(lo) } else { f64::INFINITY };
                        let fast_text = if lo > 0.0 { sig3(fast) } else { "∞".into() };
                        text.push_str(&format!(" ({} … {fast_text})", sig3(mib(hi))));
                        Ok([mib(hi), fast])
                    }
                    None => Err(format!("too few runs for an interval, n={}", s.stats.n)),
                };
                Cell::Fig(Fig { text, ci, unit: "MiB/s" })
            }
            _ => Cell::Missing("no complete write loop".into()),
        });
        g.rows.push(row);
    }
    if flagged {
        g.notes.push("* run 1 is an outlier: a first-run effect (see the warnings)".into());
    }
    g
}

/// The table as the terminal prints it.
pub fn table(rs: &ResultSet) -> String {
    grid(rs).terminal()
}

/// bigfile's view: its table in the terminal and on the HTML page.
pub const VIEW: View = View { terminal: table, html_tables: Some(|rs| vec![grid(rs)]), ..GENERIC };
