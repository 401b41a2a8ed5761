//! The mdtest view: per target, each phase's rate in kIOPS (the job's files over the
//! phase's time as `--until` says; the median of the runs with the interval every
//! experiment prints) and the md score IO500 forms from them: the geometric mean of the
//! phases' rates. Its HTML page is the generic one.

use super::STONEWALL_OP;
use crate::analysis::blocks::{block_of_run, summarize_blocked};
use crate::analysis::stats::{Summary, printable_interval};
use crate::report::table::range_coverage;
use crate::report::views::{GENERIC, View};
use crate::results::{Measurement, ResultSet, block_ids};
use crate::units::sig3;

/// One phase's rate over the runs of one target.
pub struct PhaseRate {
    pub op: String,
    /// Files the job handled in each run (all ranks).
    pub files: Vec<u64>,
    /// kIOPS of the runs: median and its interval (fields named `_s` hold kIOPS here).
    pub stats: Summary,
    /// kIOPS by run number.
    pub by_run: Vec<(u32, f64)>,
}

/// The phases' rates on `target`, in the order they ran (complete runs only).
pub fn rates(rs: &ResultSet, target: &str) -> Vec<PhaseRate> {
    let until = rs.experiment.until;
    rs.experiment
        .ops
        .iter()
        .filter_map(|op| {
            let ms: Vec<&Measurement> = rs
                .measurements
                .iter()
                .filter(|m| m.target == target && &m.op == op && m.result.complete() && m.seconds(until) > 0.0)
                .collect();
            let by_run: Vec<(u32, f64)> =
                ms.iter().map(|m| (m.run, m.result.files as f64 / m.seconds(until) / 1e3)).collect();
            let kiops: Vec<f64> = by_run.iter().map(|r| r.1).collect();
            let stats = summarize_blocked(&kiops, &block_ids(&ms))?;
            Some(PhaseRate { op: op.clone(), files: ms.iter().map(|m| m.result.files).collect(), stats, by_run })
        })
        .collect()
}

/// IO500's md score of these phases: the geometric mean of their median kIOPS (the
/// stonewall's count is not a phase: IO500 scores the whole create).
pub fn score(rates: &[PhaseRate]) -> Option<f64> {
    geometric_mean(rates.iter().filter(|r| r.op != STONEWALL_OP).map(|r| r.stats.median_s))
}

fn geometric_mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let logs: Vec<f64> = xs.map(f64::ln).collect();
    (!logs.is_empty() && logs.iter().all(|l| l.is_finite()))
        .then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

/// Each run's own score (every scored phase of that run complete) and its block.
fn run_scores(rates: &[PhaseRate]) -> (Vec<f64>, Vec<u32>) {
    let scored: Vec<&PhaseRate> = rates.iter().filter(|r| r.op != STONEWALL_OP).collect();
    let Some(first) = scored.first() else { return (Vec::new(), Vec::new()) };
    first
        .by_run
        .iter()
        .filter_map(|(run, _)| {
            let of_run: Vec<f64> =
                scored.iter().filter_map(|r| r.by_run.iter().find(|(n, _)| n == run).map(|x| x.1)).collect();
            let s = (of_run.len() == scored.len()).then(|| geometric_mean(of_run.into_iter())).flatten()?;
            Some((s, block_of_run(*run)))
        })
        .unzip()
}

/// `median [lo – hi]`, or the runs' range with how often it holds the median, or why
/// there is no interval (as `report::table::fmt_headline` says it for times).
fn headline(st: &Summary) -> String {
    let m = sig3(st.median_s);
    match printable_interval(st.median_s, st.median_ci95_s, st.n) {
        Ok([lo, hi]) => format!("{m} [{} – {}]", sig3(lo), sig3(hi)),
        Err(why) if why.starts_with("too few") && st.n >= 2 => format!(
            "{m} (range {} – {} of {} runs: holds the median {:.0}% of the time)",
            sig3(st.min_s),
            sig3(st.max_s),
            st.n,
            range_coverage(st.n) * 100.0
        ),
        Err(why) => format!("{m} ({why})"),
    }
}

/// Files per run: one count, or the range (a stonewall's varies).
fn files_text(files: &[u64]) -> String {
    let (lo, hi) = (files.iter().min().copied().unwrap_or(0), files.iter().max().copied().unwrap_or(0));
    if lo == hi { lo.to_string() } else { format!("{lo} – {hi}") }
}

/// Per target: the phases' kIOPS and the md score.
pub fn report(rs: &ResultSet) -> String {
    let preset = if rs.experiment.ops.iter().any(|o| o == "read") { "mdtest-hard" } else { "mdtest-easy" };
    let until = match rs.experiment.until {
        crate::results::Until::Durable => {
            "durable: create and delete end with a timed syncfs (mdtest -Y syncs after stat and read too)"
        }
        crate::results::Until::Returned => "returned: nothing synced, as IO500 runs mdtest (no -Y)",
    };
    let calls = match super::Paths::of_command_line(&rs.provenance.command_line) {
        super::Paths::Full => "calls: mdtest's, each file named by its whole path (--paths full)",
        super::Paths::Relative => {
            "calls: manyfiles' own, each file named relative to its open directory (--paths relative: no path \
             walk, faster than mdtest's calls)"
        }
    };
    let ranks = rs.provenance.ranks.max(1);
    let mut out = String::new();
    for target in &rs.targets {
        let rates = rates(rs, &target.id);
        if rates.is_empty() {
            continue;
        }
        let mut t = comfy_table::Table::new();
        t.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
        t.set_header(vec!["phase", "files (all ranks)", "kIOPS: median [95% interval]", "runs"]);
        for r in &rates {
            t.add_row(vec![r.op.clone(), files_text(&r.files), headline(&r.stats), r.stats.n.to_string()]);
        }
        out.push_str(&format!(
            "{preset} on {} ({ranks} rank{}, one thread per rank; time {until})\n{calls}\n{t}\n",
            target.label,
            if ranks == 1 { "" } else { "s" }
        ));
        let scored = rates.iter().filter(|r| r.op != STONEWALL_OP).count();
        if let Some(s) = score(&rates) {
            let (scores, blocks) = run_scores(&rates);
            let per_run = summarize_blocked(&scores, &blocks);
            let spread = per_run.map(|st| format!("; each run's own score: {}", headline(&st))).unwrap_or_default();
            out.push_str(&format!(
                "md score: {} kIOPS = geometric mean of the {scored} phases' median kIOPS above{spread}\n  (IO500's md \
                 score takes both presets' phases and find: this is {preset}'s part)\n",
                sig3(s)
            ));
        }
        if rates.iter().any(|r| r.op == STONEWALL_OP) {
            out.push_str(&format!(
                "  {STONEWALL_OP}: the files made when the stonewall stopped creates, over the time to it (IO500's \
                 rate-stonewall; not scored: create's rate covers every file)\n"
            ));
        }
        out.push('\n');
    }
    out
}

/// mdtest's view: its table per target in the terminal; the generic page in HTML.
pub const VIEW: View = View { terminal: report, ..GENERIC };
