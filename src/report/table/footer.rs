//! The lines under every table: the warnings that change what a number means (grouped,
//! never cut), the other warnings, detections, how the runs went and what the times mean,
//! the targets and the machine.

use crate::results::ResultSet;
use crate::units::{fmt_size, sig3};

/// The threads the phases ran on: "2 threads", and the ops that ran on others beside it
/// ("2 threads; sync 16–64, scan 16"): without `--threads` the copy engine's ops run as
/// `manyfiles copy` does (two a core; on a FUSE or network file system adaptive from 16),
/// and so do walk, scan and rm there.
pub fn threads_text(rs: &ResultSet) -> String {
    let base = rs.experiment.threads;
    let mut others: Vec<(String, usize, usize)> = Vec::new(); // op, least, most, in op order
    for m in rs.measurements.iter().filter(|m| m.result.threads > 0) {
        let t = m.result.threads;
        match others.iter_mut().find(|o| o.0 == m.op) {
            Some(o) => (o.1, o.2) = (o.1.min(t), o.2.max(t)),
            None => others.push((m.op.clone(), t, t)),
        }
    }
    others.retain(|o| (o.1, o.2) != (base, base));
    let mut s = format!("{base} thread{}", if base == 1 { "" } else { "s" });
    if !others.is_empty() {
        let list: Vec<String> = others
            .iter()
            .map(|(op, lo, hi)| if lo == hi { format!("{op} {lo}") } else { format!("{op} {lo}–{hi}") })
            .collect();
        s.push_str(&format!(" ({})", list.join(", ")));
    }
    s
}

/// What the figures' intervals are and which drift they take in: "medians with 95%
/// intervals (…) that take in the drift of the 2.9 min a cell's blocks spanned at most
/// (median 2.1 min), not the machine's slower changes …" (issue 40, item 6: five
/// invocations back to back showed drift one invocation cannot see).
pub fn intervals_text(rs: &ResultSet) -> String {
    let how = "the wider of the order-statistics interval and a random-effects interval over blocks of 2 runs; from 6 runs in 3 blocks";
    match rs.block_span() {
        Some((median, most)) => format!(
            "medians with 95% intervals ({how}) that take in the drift of the {} a cell's blocks spanned at most (median {}), not the machine's slower changes (another hour or day: `manyfiles compare` two invocations)",
            crate::units::fmt_secs(most),
            crate::units::fmt_secs(median)
        ),
        None => format!("medians with 95% intervals ({how})"),
    }
}

/// How many runs the figures rest on: the fixed count, or how adaptive runs ended
/// (cells that reached the precision, the others with what they reached), and the
/// runs left out as disturbed.
pub fn runs_line(rs: &ResultSet) -> String {
    use crate::units::fmt_secs;
    let sums = &rs.summaries;
    if sums.is_empty() {
        return String::new();
    }
    let ns: Vec<usize> = sums.iter().map(|s| s.stats.n).collect();
    let (lo, hi) = (ns.iter().min().copied().unwrap_or(0), ns.iter().max().copied().unwrap_or(0));
    let range = if lo == hi { lo.to_string() } else { format!("{lo}–{hi}") };
    let e = &rs.experiment;
    let setup = format!("{}, order {}, {} warmup", threads_text(rs), e.order, e.warmup);
    let pct = |x: f64| {
        let v = x * 100.0;
        if (v - v.round()).abs() < 1e-9 { format!("{}", v.round()) } else { sig3(v) }
    };
    let mut out = match e.adaptive {
        None => format!("runs: {range} per cell (--runs) · {setup}\n"),
        Some(a) => {
            let short: Vec<&crate::results::SummaryRow> = sums
                .iter()
                .filter(|s| !s.stopped.as_deref().is_some_and(|w| w.starts_with("precision reached")))
                .collect();
            let mut line = format!(
                "runs: adaptive to ±{}% ({}–{} per cell, budget {}, took {}): {range} per cell, {} of {} reached it",
                pct(a.precision),
                a.min_runs,
                a.max_runs,
                a.budget_text(),
                fmt_secs(a.spent_s),
                sums.len() - short.len(),
                sums.len()
            );
            if !short.is_empty() {
                let list: Vec<String> = short
                    .iter()
                    .take(6)
                    .map(|s| {
                        let side = if rs.experiment.side_trees.contains(&s.tree_key) { " (side rung)" } else { "" };
                        format!("{} {} files{side}: {}", s.op, s.tree_files, s.stopped.as_deref().unwrap_or("?"))
                    })
                    .collect();
                let more =
                    if short.len() > 6 { format!(", … {} more in the JSON", short.len() - 6) } else { String::new() };
                line.push_str(&format!(" (not: {}{more})", list.join("; ")));
            }
            format!("{line} · {setup}\n")
        }
    };
    out.push_str(&format!("figures: {}; mean ± Student t in the JSON\n", intervals_text(rs)));
    let left_out: usize = sums.iter().map(|s| s.disturbed_s.len()).sum();
    let disturbed: usize = sums.iter().map(|s| s.disturbed).sum();
    if disturbed > 0 {
        // Which signal fired, counted over the disturbed measurements.
        let by = |sig: &str| {
            rs.measurements
                .iter()
                .filter(|m| m.result.machine.as_ref().is_some_and(|a| a.disturbed_by.iter().any(|b| b == sig)))
                .count()
        };
        let (cpu, io) = (by("cpu"), by("io"));
        let signals = if cpu + io > 0 {
            format!(
                " (phases by signal: cpu {cpu}: others above {} cores; io {io}: others' storage traffic above {} MiB/s)",
                crate::measure::machine::DISTURBED_CORES,
                crate::measure::machine::DISTURBED_IO_BPS / 1048576.0
            )
        } else {
            format!(" (other processes using more than {} cores)", crate::measure::machine::DISTURBED_CORES)
        };
        out.push_str(&format!(
            "disturbed: {disturbed} runs{signals}; {left_out} left out of the statistics{}\n",
            if rs.experiment.adaptive.is_none() { " (--runs N keeps every run)" } else { "" }
        ));
    }
    out
}

/// What the times mean: which end of write phases counts, how cold the reads were, what
/// the devices did (one line each).
pub fn measured(rs: &ResultSet) -> String {
    let mut out = runs_line(rs);
    let ms = &rs.measurements;
    if ms.iter().any(|m| m.result.flush_s.is_some()) {
        out.push_str(match rs.experiment.until {
            crate::results::Until::Durable => {
                "times: write phases are durable: they end when a syncfs of the target (bigfile: fsync) returns (--until returned: at the last close)
"
            }
            crate::results::Until::Returned => {
                "times: write phases end when the last close returned (the page cache may hold their data; durable times are in the JSON)
"
            }
        });
    }
    let mut states: Vec<&str> = ms
        .iter()
        .filter(|m| crate::ops::reads_tree(&m.op) && !m.op.starts_with("bigfile"))
        .filter_map(|m| m.result.cache.as_deref())
        .collect();
    states.sort();
    states.dedup();
    for s in states {
        out.push_str(match s {
            "all-dropped" => "reads: cold: before each read-side phase the trees' data were evicted and the page, dentry and inode caches dropped (ext4: its journal checkpointed first)
",
            "data-evicted" => "reads: cold for file data only: evicted before each read-side phase; without root directories and inodes stayed cached
",
            "not-applicable" => "reads: on a memory file system the storage is the cache: nothing to evict
",
            _ => "reads: warm: read-side phases found what earlier phases left in the caches (--cache warm)
",
        });
    }
    for t in &rs.targets {
        let io: Vec<&crate::measure::diskstats::DeviceIo> =
            ms.iter().filter(|m| m.target == t.id).filter_map(|m| m.result.device.as_ref()).collect();
        let Some(first) = io.first() else { continue };
        let (r, w): (u64, u64) = io.iter().fold((0, 0), |(r, w), d| (r + d.read_bytes, w + d.write_bytes));
        let busy: f64 = io.iter().map(|d| d.busy_s).sum();
        out.push_str(&format!(
            "device {} (target {}): {} read, {} written, busy {} during the timed phases
",
            first.device,
            t.shown(),
            fmt_size(r as f64),
            fmt_size(w as f64),
            crate::units::fmt_secs(busy)
        ));
    }
    out
}

/// Warnings, target and machine: the lines under every table.
pub fn footer(rs: &ResultSet) -> String {
    // What changes the meaning of a number first, whole, grouped by kind with counts.
    let mut out = String::new();
    for g in rs.meaning_groups() {
        out.push_str(&format!("warning: {}\n", g.heading()));
        for l in &g.lines {
            out.push_str(&format!("  {}\n", crate::report::named(rs, l)));
        }
    }
    // A long list hides the table: the first few here, all of them in the JSON.
    const SHOWN: usize = 8;
    let other = rs.other_warnings();
    for w in other.iter().take(SHOWN) {
        out.push_str(&format!("warning: {}\n", crate::report::named(rs, w)));
    }
    if other.len() > SHOWN {
        out.push_str(&format!("… and {} more warnings (all in the JSON results)\n", other.len() - SHOWN));
    }
    out.push_str(&detections(rs, SHOWN));
    out.push_str(&measured(rs));
    for t in &rs.targets {
        let made = t.managed.as_ref().map(|m| format!(" · made by {}", m.mkfs_command.join(" "))).unwrap_or_default();
        out.push_str(&format!(
            "target {}: {} · {} on {} ({}) · block {} · {} free{made}\n",
            t.shown(),
            t.path.display(),
            t.fs_type,
            t.mount_point,
            t.mount_source,
            fmt_size(t.block_size as f64),
            fmt_size(t.free_bytes as f64)
        ));
    }
    out.push_str(&rs.provenance.machine_line());
    out.push('\n');
    out
}

/// Detections that are not already warnings (knees, crossovers, outliers), one line each.
pub fn detections(rs: &ResultSet, shown: usize) -> String {
    use crate::analysis::detect::Detection;
    let lines: Vec<String> = rs
        .detections
        .iter()
        .filter(|d| !matches!(d, Detection::FirstRun { .. } | Detection::HighCv { .. }))
        .map(|d| crate::report::detection_text(rs, d))
        .collect();
    let mut out = String::new();
    for l in lines.iter().take(shown) {
        out.push_str(&format!("detected: {l}\n"));
    }
    if lines.len() > shown {
        out.push_str(&format!("… and {} more detections (all in the JSON results)\n", lines.len() - shown));
    }
    out
}
