//! Terminal tables. Every figure carries its uncertainty (95% CI or standard error) and
//! the tables end with the machine and target they were measured on.

use crate::results::{ResultSet, SummaryRow};
use crate::units::{fmt_size, sig3};
use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{CellAlignment, ContentArrangement, Table};
use std::sync::atomic::{AtomicBool, Ordering};

mod footer;
pub use footer::{detections, footer, intervals_text, measured, runs_line, threads_text};

/// Tables at most this wide by default (`--wide`: every column in full, any width).
pub const WIDTH: u16 = 100;

static WIDE: AtomicBool = AtomicBool::new(false);

/// `--wide`: the full form of every table (intervals as [lo – hi], long headers).
pub fn set_wide(on: bool) {
    WIDE.store(on, Ordering::Relaxed);
}

pub fn wide() -> bool {
    WIDE.load(Ordering::Relaxed)
}

/// Cap a table at [`WIDTH`] columns unless `--wide` (a cell that cannot fit wraps).
pub(crate) fn fit(t: &mut Table) {
    // Only a table that would be wider wraps (comfy_table's dynamic layout wraps
    // columns even where the natural width fits).
    let natural = t.to_string().lines().map(|l| l.chars().count()).max().unwrap_or(0);
    if !wide() && natural > WIDTH as usize {
        t.set_content_arrangement(ContentArrangement::Dynamic);
        t.set_width(WIDTH);
    }
}

/// A count in three significant digits with k/M/G: `155000` → `155k`.
pub fn short_count(x: f64) -> String {
    let a = x.abs();
    if a >= 1e9 {
        format!("{}G", sig3(x / 1e9))
    } else if a >= 1e6 {
        format!("{}M", sig3(x / 1e6))
    } else if a >= 1e3 {
        format!("{}k", sig3(x / 1e3))
    } else {
        sig3(x)
    }
}

/// A summary's headline in a column whose unit is in the header: `41.5 ±22%`, where
/// the 95% interval of the median lies within ± that share of it; `78.3 (n=2)` when
/// there are too few runs for an interval, `78.3 (scattered)` when it is wider than
/// the value.
pub fn fmt_compact(st: &crate::analysis::stats::Summary, scale: f64) -> String {
    let m = st.median_s;
    let v = sig3(m * scale);
    match crate::analysis::stats::printable_interval(m, st.median_ci95_s, st.n) {
        Ok([lo, hi]) if m > 0.0 => {
            let p = (hi - m).max(m - lo) / m * 100.0;
            let p = if p < 9.95 { format!("{p:.1}") } else { format!("{p:.0}") };
            format!("{v} ±{p}%")
        }
        Ok(_) => v,
        Err(why) if why.starts_with("too few") => format!("{v} (n={})", st.n),
        Err(_) => format!("{v} (scattered)"),
    }
}

/// Cells from this many files on get files/s beside their time.
pub const RATE_FROM_FILES: u64 = 1000;

/// `mean ± half` in one unit chosen by the mean: `12.3 ± 0.41 ms`.
pub fn fmt_mean_ci(mean: f64, half: Option<f64>) -> String {
    let (scale, unit) = unit_for(mean);
    match half {
        Some(h) => {
            // The half-width gets the mean's decimals, or 2 significant digits if that
            // would round it to 0.
            let m = sig3(mean * scale);
            let hv = h * scale;
            let mut d = m.split_once('.').map_or(0, |(_, f)| f.len());
            if hv > 0.0 && format!("{hv:.d$}").trim_start_matches(['0', '.']).is_empty() {
                d = (1.0 - hv.log10().floor()).max(0.0) as usize;
            }
            let hs = format!("{hv:.d$}");
            format!("{m} ± {hs} {unit}")
        }
        None => format!("{} {unit} (1 run)", sig3(mean * scale)),
    }
}

/// The headline of a summary: the median with its distribution-free 95% interval in
/// one unit, `12.3 ms [11.9 – 12.8]`, or the median and why no interval is shown
/// (`350 ms (too few runs for an interval, n=3)`): never an interval below zero or
/// wider than the value.
pub fn fmt_headline(st: &crate::analysis::stats::Summary) -> String {
    let (scale, unit) = unit_for(st.median_s);
    let m = sig3(st.median_s * scale);
    match crate::analysis::stats::printable_interval(st.median_s, st.median_ci95_s, st.n) {
        Ok([lo, hi]) => format!("{m} {unit} [{} – {}]", sig3(lo * scale), sig3(hi * scale)),
        // A quick run: its range, labelled with how often a range of n runs holds the
        // median (1 − 2·½ⁿ: 75% at 3 runs), not passed off as a 95% interval.
        Err(why) if why.starts_with("too few") && st.n >= 2 => format!(
            "{m} {unit} (range {} – {} of {} runs: holds the median {:.0}% of the time)",
            sig3(st.min_s * scale),
            sig3(st.max_s * scale),
            st.n,
            range_coverage(st.n) * 100.0
        ),
        Err(why) => format!("{m} {unit} ({why})"),
    }
}

/// How often the range [min, max] of `n` independent runs holds the median of the
/// runs' distribution: 1 − 2·½ⁿ.
pub fn range_coverage(n: usize) -> f64 {
    1.0 - 2.0 * 0.5f64.powi(n.min(1000) as i32)
}

pub(crate) fn unit_for(s: f64) -> (f64, &'static str) {
    let a = s.abs();
    if a < 1e-3 {
        (1e6, "µs")
    } else if a < 1.0 {
        (1e3, "ms")
    } else {
        (1.0, "s")
    }
}

pub(crate) fn new_table(header: Vec<String>) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY);
    t.set_header(header);
    t
}

pub(crate) fn right_align(t: &mut Table, from: usize) {
    let n = t.column_count();
    for i in from..n {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
}

/// First line: what was run where.
pub fn title(rs: &ResultSet) -> String {
    let e = &rs.experiment;
    let rungs: Vec<&crate::results::SummaryRow> =
        rs.summaries.iter().filter(|s| !e.side_trees.contains(&s.tree_key)).collect();
    let files: Vec<u64> = rungs.iter().map(|s| s.tree_files).collect();
    let side = if e.side_trees.is_empty() { "" } else { " (+ side rungs)" };
    let trees = match (files.iter().min(), files.iter().max()) {
        (Some(lo), Some(hi)) if lo != hi => {
            format!("{} split into {lo} … {hi} files{side}", fmt_size(rungs.first().map_or(0, |s| s.tree_bytes) as f64))
        }
        _ => rs.summaries.first().map(|s| s.tree_key.clone()).unwrap_or_default(),
    };
    let targets: Vec<String> = rs.targets.iter().map(|t| t.shown()).collect();
    format!("manyfiles {}: {trees} · ops {} · on {}", e.name, e.ops.join(", "), targets.join(", "))
}

/// Ladder: one row per tree (and target, when there are several), one column per op
/// (time in the unit its header names, ±% of the median's 95% interval) and, where a
/// rung has many files, files/s beside it. `--wide`: the full form.
pub fn ladder(rs: &ResultSet) -> String {
    if wide() {
        return ladder_wide(rs);
    }
    let ops = &rs.experiment.ops;
    let many = rs.targets.len() > 1;
    let rows = ladder_rows(rs);
    let rated = rows.iter().any(|r| r.2 >= RATE_FROM_FILES);
    // One unit per op column: the one its middle value reads best in.
    let units: Vec<(f64, &str)> = ops
        .iter()
        .map(|op| {
            let mut v: Vec<f64> = rs.summaries.iter().filter(|s| &s.op == op).map(|s| s.stats.median_s).collect();
            v.sort_by(f64::total_cmp);
            unit_for(v.get(v.len() / 2).copied().unwrap_or(0.0))
        })
        .collect();
    let mut header = vec!["files".to_string(), "size".to_string()];
    if many {
        header.push("target".into());
    }
    for (op, (_, unit)) in ops.iter().zip(&units) {
        header.push(format!("{op} ({unit})"));
        if rated {
            header.push("files/s".into());
        }
    }
    let mut t = new_table(header);
    for (key, target, files, bytes) in &rows {
        let mut row = vec![files.to_string(), fmt_size(*bytes as f64 / (*files).max(1) as f64)];
        if many {
            row.push(super::target_name(rs, target));
        }
        for (op, (scale, _)) in ops.iter().zip(&units) {
            let s = rs.summaries.iter().find(|s| s.tree_key == *key && s.target == *target && &s.op == op);
            // `*`: the cell kept disturbed runs (too few undisturbed ones to leave them out).
            let kept = |s: &SummaryRow| if s.disturbed > 0 && s.disturbed_s.is_empty() { "*" } else { "" };
            let cut = |s: &SummaryRow| super::views::partial_mark(rs, s); // †: fewer runs than asked
            row.push(
                s.map(|s| format!("{}{}{}", fmt_compact(&s.stats, *scale), kept(s), cut(s)))
                    .unwrap_or_else(|| "—".into()),
            );
            if rated {
                row.push(match s {
                    Some(s) if *files >= RATE_FROM_FILES && s.stats.median_s > 0.0 => {
                        short_count(*files as f64 / s.stats.median_s)
                    }
                    _ => String::new(),
                });
            }
        }
        t.add_row(row);
    }
    right_align(&mut t, 0);
    if many {
        if let Some(c) = t.column_mut(2) {
            c.set_cell_alignment(CellAlignment::Left);
        }
    }
    fit(&mut t);
    let mut notes = vec![
        "medians; ±%: their 95% interval, within and between blocks of runs, lies within ± that share".to_string(),
    ];
    if rated {
        notes.push(format!("files/s at the median, from {RATE_FROM_FILES} files"));
    }
    notes.extend(super::chart::side_rungs_note(rs).map(|n| format!("last rows: {n}")));
    // What each time means (`create, durable`), said once instead of in every header.
    let mut by: Vec<(String, Vec<String>)> = Vec::new();
    for l in ops.iter().map(|o| op_label(rs, o)) {
        if let Some((op, q)) = l.split_once(", ") {
            match by.iter_mut().find(|(k, _)| k == q) {
                Some((_, v)) => v.push(op.to_string()),
                None => by.push((q.to_string(), vec![op.to_string()])),
            }
        }
    }
    notes.extend(by.iter().map(|(q, v)| format!("{}: {q}", v.join(", "))));
    let cells = t.to_string();
    if cells.contains("(n=") {
        notes.push(
            "(n=N): too few runs for a 95% interval (6 and 3 blocks); --wide shows the range, which holds the median 1 − 2·½ᴺ of the time (75% at 3 runs)"
                .into(),
        );
    }
    if rows.iter().any(|(k, g, ..)| {
        rs.summaries.iter().any(|s| s.tree_key == *k && s.target == *g && s.disturbed > 0 && s.disturbed_s.is_empty())
    }) {
        notes.push(
            "*: disturbed runs kept, too few undisturbed ones to leave them out: it measures the neighbours too".into(),
        );
    }
    if cells.contains("(scattered)") {
        notes.push("(scattered): runs too scattered for an interval".into());
    }
    notes.extend(super::views::partial_note(rs));
    notes.push("--wide: intervals in full".into());
    format!("{cells}\n{}", wrap_notes(&notes))
}

/// Notes joined by ` · `, on lines of at most [`WIDTH`] columns.
pub(crate) fn wrap_notes(notes: &[String]) -> String {
    let mut lines: Vec<String> = vec![String::new()];
    for n in notes {
        let last = lines.last_mut().expect("one line");
        if last.is_empty() {
            last.push_str(n);
        } else if last.chars().count() + 3 + n.chars().count() <= WIDTH as usize {
            last.push_str(" · ");
            last.push_str(n);
        } else {
            lines.push(n.clone());
        }
    }
    lines.join("\n")
}

/// The ladder's rows: (tree key, target id, files, bytes), a tree's targets together,
/// trees in experiment order, side rungs last.
fn ladder_rows(rs: &ResultSet) -> Vec<(String, String, u64, u64)> {
    let mut rows: Vec<(String, String, u64, u64)> = Vec::new();
    for s in &rs.summaries {
        if !rows.iter().any(|(k, g, _, _)| *k == s.tree_key && *g == s.target) {
            rows.push((s.tree_key.clone(), s.target.clone(), s.tree_files, s.tree_bytes));
        }
    }
    let mut keys: Vec<String> = Vec::new();
    for (k, ..) in &rows {
        if !keys.contains(k) {
            keys.push(k.clone());
        }
    }
    // A ladder's side rungs last, below the rungs they stand beside.
    keys.sort_by_key(|k| rs.experiment.side_trees.contains(k));
    keys.iter().flat_map(|k| rows.iter().filter(|r| &r.0 == k).cloned().collect::<Vec<_>>()).collect()
}

/// The ladder in full: `41.5 ms [32.5 – 43.6]` under `create, durable (median [95% CI])`.
fn ladder_wide(rs: &ResultSet) -> String {
    let ops = &rs.experiment.ops;
    let many = rs.targets.len() > 1;
    let mut header = vec!["files".to_string(), "file size".to_string()];
    if many {
        header.push("target".into());
    }
    header.extend(ops.iter().map(|o| format!("{} (median [95% CI])", op_label(rs, o))));
    let mut t = new_table(header);
    for (key, target, files, bytes) in ladder_rows(rs) {
        let mut row = vec![files.to_string(), fmt_size(bytes as f64 / files.max(1) as f64)];
        if many {
            row.push(super::target_name(rs, &target));
        }
        for op in ops {
            let cell = rs
                .summaries
                .iter()
                .find(|s| s.tree_key == key && s.target == target && &s.op == op)
                .map(|s| fmt_headline(&s.stats))
                .unwrap_or_else(|| "—".into());
            row.push(cell);
        }
        t.add_row(row);
    }
    right_align(&mut t, 0);
    match super::chart::side_rungs_note(rs) {
        Some(n) => format!("{t}\nlast rows: {n}"),
        None => t.to_string(),
    }
}

/// The answer first (issue 40): per target and op, the fitted per-file cost with its 95%
/// interval, the break-even file size with its interval and the fit's left-out error, or
/// that the fit is no answer; then the crossovers. Empty when there is neither.
pub fn answer_lines(rs: &ResultSet) -> Vec<String> {
    use crate::analysis::model::check::pct;
    let mut out = Vec::new();
    for m in &rs.models {
        let c = &m.model;
        let check = m.check();
        let who = format!("{} on {}", m.op, super::target_name(rs, &m.target));
        let error = check.left_out_error.map_or("unknown".into(), pct);
        if !check.usable {
            out.push(format!(
                "{who}: not fitted (left-out error {error}): no per-file cost; why in the first warnings below"
            ));
            continue;
        }
        let (scale, unit) = unit_for(c.per_file_s);
        let interval = |iv: Option<[f64; 2]>, f: &dyn Fn(f64) -> String| {
            iv.map_or(" (no interval)".into(), |[lo, hi]| format!(" [{} – {}]", f(lo), f(hi)))
        };
        let mut line = if c.per_file_s > 0.0 {
            format!(
                "{who}: {} {unit} a file{}",
                sig3(c.per_file_s * scale),
                interval(c.interval95(0), &|x| sig3(x * scale))
            )
        } else {
            format!("{who}: per-file cost ≈ 0")
        };
        if let (Some(be), true) = (c.break_even_bytes, m.bytes_resolved()) {
            line.push_str(&format!(", break-even {}{}", fmt_size(be), interval(break_even_interval(m), &fmt_size)));
        }
        line.push_str(&format!(" · left-out error {error}"));
        out.push(line);
    }
    for d in &rs.detections {
        if matches!(d, crate::analysis::detect::Detection::Crossover { .. }) {
            out.push(format!("crossover: {}", super::detection_text(rs, d)));
        }
    }
    out
}

/// 95% interval of the break-even size a/b by the delta method (with the covariance of a
/// and b), clipped at 0; None without degrees of freedom.
fn break_even_interval(m: &crate::results::ModelRow) -> Option<[f64; 2]> {
    let c = &m.model;
    let (a, b) = (c.per_file_s, c.per_byte_s);
    if c.df == 0 || a <= 0.0 || b <= 0.0 {
        return None;
    }
    let cov = c.covariance.first().and_then(|r| r.get(1)).copied().unwrap_or(0.0);
    let rel = (c.per_file_se / a).powi(2) + (c.per_byte_se / b).powi(2) - 2.0 * cov / (a * b);
    let h = crate::analysis::stats::t_quantile_975(c.df) * rel.max(0.0).sqrt() * a / b;
    Some([(a / b - h).max(0.0), a / b + h])
}

/// [`answer_lines`] for the terminal, above the tables (empty when there are none).
pub fn answer(rs: &ResultSet) -> String {
    let lines = answer_lines(rs);
    if lines.is_empty() {
        return String::new();
    }
    let mut s =
        String::from("answer (per-file costs with 95% intervals, each checked on the trees its fit left out):\n");
    for l in lines {
        s.push_str(&format!("  {l}\n"));
    }
    s
}

/// Fitted costs per op: per-file cost, bandwidth, break-even file size.
pub fn models(rs: &ResultSet) -> String {
    if rs.models.is_empty() {
        return String::new();
    }
    let many = rs.targets.len() > 1;
    let names: [&str; 9] = if wide() {
        [
            "op",
            "per file (± s.e.)",
            "bandwidth (± s.e.)",
            "per dir (± s.e.)",
            "per run (± s.e.)",
            "break-even file size",
            "R²",
            "left-out error",
            "points",
        ]
    } else {
        [
            "op",
            "per file ±s.e.",
            "MiB/s ±s.e.",
            "per dir ±s.e.",
            "per run ±s.e.",
            "break-even",
            "R²",
            "left out",
            "cells",
        ]
    };
    let mut header: Vec<String> = names.map(String::from).to_vec();
    if many {
        header.insert(1, "target".into());
    }
    let mut t = new_table(header);
    for m in &rs.models {
        let c = &m.model;
        let w = wide();
        let check = m.check();
        let left_out = check.left_out_error.map_or("—".into(), crate::analysis::model::check::pct);
        if !check.usable {
            // No figure from a fit that misses its own trees: why is said first below.
            let mut row = vec![m.op.clone(), "not fitted".into()];
            row.extend(["—"; 4].map(String::from));
            row.extend([sig3(c.r2), left_out, c.n.to_string()]);
            if many {
                row.insert(1, super::target_name(rs, &m.target));
            }
            t.add_row(row);
            continue;
        }
        let per_file = if c.per_file_s > 0.0 {
            fmt_mean_ci(c.per_file_s, Some(c.per_file_se)).replace(" (1 run)", "")
        } else if w {
            "≈ 0 (not resolved)".into()
        } else {
            "≈ 0".into()
        };
        let resolved = m.bytes_resolved();
        let bw = match c.bandwidth_bytes_per_s {
            Some(_) if !resolved => "const".into(),
            Some(bw) => {
                // s.e. of 1/b by the delta method: se_b / b²
                let se = c.per_byte_se / (c.per_byte_s * c.per_byte_s);
                let unit = if w { " MiB/s" } else { "" };
                format!("{} ± {}{unit}", sig3(bw / 1048576.0), sig3(se / 1048576.0))
            }
            None if w => "not resolved".into(),
            None => "—".into(),
        };
        let per_dir = if c.per_dir_s > 0.0 {
            fmt_mean_ci(c.per_dir_s, Some(c.per_dir_se))
        } else if w {
            "— (not resolved)".into()
        } else {
            "—".into()
        };
        let per_run = match m.per_run() {
            Some((v, se)) => fmt_mean_ci(v, Some(se)),
            None if w => "— (not resolved)".into(),
            None => "—".into(),
        };
        let be = c.break_even_bytes.filter(|_| resolved).map(fmt_size).unwrap_or_else(|| "—".into());
        let mut row = vec![m.op.clone(), per_file, bw, per_dir, per_run, be, sig3(c.r2), left_out, c.n.to_string()];
        if many {
            row.insert(1, super::target_name(rs, &m.target));
        }
        t.add_row(row);
    }
    right_align(&mut t, 1);
    fit(&mut t);
    let mut notes = String::new();
    for l in super::dir_entry_notes(rs).into_iter().chain(crate::results::bytes_note(rs)) {
        notes.push_str(&format!("\n{l}"));
    }
    format!(
        "fitted cost: time = a·files + b·bytes + c·dirs + d·Σn² + k (n: files per directory; k: paid once per run;\n\
         non-negative least squares on relative error of each tree's median; s.e. with the trees as the unit)\n{t}\n\
         break-even: a file costs as much time as moving this many bytes; a directory cost, the directory-size\n\
         cost d and the per-run cost k are shown only when the data resolve them (—: not resolved)\n\
         left out: median error predicting each tree from a fit of the others; above {} no figure is shown{notes}",
        crate::analysis::model::check::pct(crate::analysis::model::check::MAX_LEFT_OUT_ERROR)
    )
}

/// One tree, several ops: detail per op (median ±% of its 95% interval, CV, files/s
/// and MiB/s, latency); `--wide` adds the interval in full, mean ± CI and the range.
pub fn ops_detail(rs: &ResultSet) -> String {
    if wide() {
        return ops_detail_wide(rs);
    }
    // One tree on one target: the title names it, no column needed.
    let mut trees: Vec<(&str, &str)> = rs.summaries.iter().map(|s| (s.tree_key.as_str(), s.target.as_str())).collect();
    trees.sort();
    trees.dedup();
    let tree_col = trees.len() > 1;
    let mut header: Vec<String> =
        ["op", "runs", "median", "CV", "files/s", "MiB/s", "p50 / p99 µs"].map(String::from).to_vec();
    if tree_col {
        header.insert(1, "tree".into());
    }
    let mut t = new_table(header);
    for s in &rs.summaries {
        let st = &s.stats;
        let (scale, unit) = unit_for(st.median_s);
        let (rate, mib) = if st.median_s > 0.0 {
            let mib = if s.op == "create" || s.op == "read" {
                sig3(s.tree_bytes as f64 / st.median_s / 1048576.0)
            } else {
                "—".into()
            };
            (short_count(s.tree_files as f64 / st.median_s), mib)
        } else {
            ("—".into(), "—".into())
        };
        let tree = if rs.targets.len() > 1 {
            format!("{} on {}", s.tree_key, super::target_name(rs, &s.target))
        } else {
            s.tree_key.clone()
        };
        let median = fmt_compact(st, scale);
        let median = match median.split_once(' ') {
            Some((v, rest)) => format!("{v} {unit} {rest}"),
            None => format!("{median} {unit}"),
        };
        let mut row = vec![
            s.op.clone(),
            format!("{}{}", s.runs_text(), super::views::partial_mark(rs, s)),
            median,
            st.cv.map(|c| format!("{}%", sig3(c * 100.0))).unwrap_or_else(|| "—".into()),
            rate,
            mib,
            latency_cell(rs, s).trim_end_matches(" µs").to_string(),
        ];
        if tree_col {
            row.insert(1, tree);
        }
        t.add_row(row);
    }
    right_align(&mut t, if tree_col { 2 } else { 1 });
    fit(&mut t);
    let mut notes: Vec<String> =
        vec!["median: its 95% interval lies within ±%".into(), "files/s and MiB/s at the median".into()];
    let mut ops: Vec<&str> = rs.summaries.iter().map(|s| s.op.as_str()).collect();
    ops.dedup();
    notes.extend(
        ops.iter().map(|o| op_label(rs, o)).filter_map(|l| l.split_once(", ").map(|(o, q)| format!("{o}: {q}"))),
    );
    notes.extend(super::views::partial_note(rs));
    notes.push("--wide: interval in full, mean ± CI, range".into());
    format!("{t}\n{}", wrap_notes(&notes))
}

fn ops_detail_wide(rs: &ResultSet) -> String {
    let mut t = new_table(
        [
            "op",
            "tree",
            "runs",
            "median [95% CI]",
            "mean ± 95% CI",
            "min … max",
            "CV",
            "rate (at the median)",
            "latency p50 / p99",
        ]
        .map(String::from)
        .to_vec(),
    );
    for s in &rs.summaries {
        let st = &s.stats;
        let (scale, unit) = unit_for(st.median_s);
        let lat = latency_cell(rs, s);
        let rate = if st.median_s > 0.0 {
            let files_rate = s.tree_files as f64 / st.median_s;
            let mut r = format!("{} files/s", sig3(files_rate));
            if s.op == "create" || s.op == "read" {
                r.push_str(&format!(", {} MiB/s", sig3(s.tree_bytes as f64 / st.median_s / 1048576.0)));
            }
            r
        } else {
            "—".into()
        };
        let tree = if rs.targets.len() > 1 {
            format!("{} on {}", s.tree_key, super::target_name(rs, &s.target))
        } else {
            s.tree_key.clone()
        };
        t.add_row(vec![
            op_label(rs, &s.op),
            tree,
            s.runs_text(),
            fmt_headline(st),
            fmt_mean_ci(st.mean_s, st.ci_half_width()),
            format!("{} … {} {unit}", sig3(st.min_s * scale), sig3(st.max_s * scale)),
            st.cv.map(|c| format!("{}%", sig3(c * 100.0))).unwrap_or_else(|| "—".into()),
            rate,
            lat,
        ]);
    }
    right_align(&mut t, 2);
    t.to_string()
}

fn latency_cell(rs: &ResultSet, s: &SummaryRow) -> String {
    let mut p50: Vec<f64> = Vec::new();
    let mut p99 = 0.0f64;
    // Whole-tree ops (copy, sync, external tools) time no single operation: no latency.
    let timed_ops = |m: &&crate::results::Measurement| m.result.latency_us.count > 0;
    for m in rs
        .measurements
        .iter()
        .filter(|m| m.op == s.op && m.tree_key == s.tree_key && m.result.complete())
        .filter(timed_ops)
    {
        p50.push(m.result.latency_us.p50);
        p99 = p99.max(m.result.latency_us.p99);
    }
    if p50.is_empty() {
        return "—".into();
    }
    p50.sort_by(f64::total_cmp);
    format!("{} / {} µs", sig3(p50[p50.len() / 2]), sig3(p99))
}

/// An op with what its time means: `create, durable`, `read, cold`. Write phases say
/// which end counts; read-side phases say how cold they started.
pub fn op_label(rs: &ResultSet, op: &str) -> String {
    let ms: Vec<&crate::results::Measurement> = rs.measurements.iter().filter(|m| m.op == op).collect();
    if ms.iter().any(|m| m.result.flush_s.is_some()) {
        return format!("{op}, {}", rs.experiment.until.name());
    }
    let mut states: Vec<&str> = ms.iter().filter_map(|m| m.result.cache.as_deref()).collect();
    states.sort();
    states.dedup();
    match states.as_slice() {
        ["all-dropped"] | ["data-evicted"] => format!("{op}, cold"),
        ["warm"] => format!("{op}, warm"),
        _ => op.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_ci_in_one_unit() {
        assert_eq!(fmt_mean_ci(0.0123, Some(0.00041)), "12.3 ± 0.4 ms");
        assert_eq!(fmt_mean_ci(0.0123, Some(0.0123)), "12.3 ± 12.3 ms");
        assert_eq!(fmt_mean_ci(2.5, None), "2.50 s (1 run)");
        assert_eq!(fmt_mean_ci(0.00199, Some(0.000000637)), "1.99 ± 0.00064 ms");
        assert_eq!(fmt_mean_ci(0.000012, Some(0.000001)), "12.0 ± 1.0 µs");
    }
}
