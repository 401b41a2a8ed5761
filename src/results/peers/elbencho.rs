//! elbencho's result files: `--jsonfile F` (one JSON object per phase on a line of its
//! own, appended run after run) and `--csvfile F` (a line of labels, then a row per
//! phase). Both hold the same figures, read alike; each phase of a directory benchmark
//! that is one of manyfiles' ops becomes one measurement of the target `elbencho on PATHS
//! (FILE)`:
//!
//! | elbencho phase | op     | files              | bytes                                   |
//! | -------------- | ------ | ------------------ | --------------------------------------- |
//! | WRITE          | create | `entries [last]`   | its bytes, which must be files × file size |
//! | READ           | read   | `entries [last]`   | its bytes, which must be files × file size |
//! | STAT           | stat   | `entries [last]`   | 0                                       |
//! | RMFILES        | delete | `entries [last]`   | 0                                       |
//!
//! (The CSV gives whole MiB only: its bytes are files × `file size`, checked against its
//! `MiB [last]`.) The time is the last-finishing thread's: entries ÷ `entries/s [last]`.
//! elbencho computes that rate as entries × 10⁶ ÷ that thread's µs, floored, so the time
//! read back is within 1 ÷ rate of elbencho's own clock, where its `elapsed_time_ms` (whole
//! ms) would be up to 1 ms short; the two are checked against each other. The first
//! thread's finish is read the same way from `[first]`. Threads are hosts × threads; the
//! tree is `-N` files in each of hosts × threads × `-n` directories (elbencho's `d*`
//! leaves; the `r*` directory of each thread above them is not counted).
//!
//! Named, not read: MKDIRS, RMDIRS and STATDIRS (directories alone), SYNC and DROPCACHE
//! (between phases), WRITE+s, WRITE+r and READ+s (a stat or read inline: two ops in one
//! time), RWMIX and MIX-T (reads and writes mixed), NET, object-store phases and any path
//! type but `dir` (large files, block devices, buckets); elbencho's CPU% (the whole
//! machine's utilisation, not its own CPU time) and its latencies (min, avg and max, no
//! percentiles).

use super::{Run, measurement, note_op, peer_set, short_name, target};
use crate::results::ResultSet;
use crate::tree::spec::Layout;
use serde_json::Value;
use std::collections::HashMap;

/// elbencho's `--jsonfile` or `--csvfile` in `text`: None when it is neither. Its
/// `--resfile` (text for people) is refused with a pointer to the other two.
pub fn read(text: &str, file: &str) -> Option<Result<ResultSet, String>> {
    let first = text.lines().next().unwrap_or("");
    if first.starts_with("ISO date,label,path type,") {
        return Some(csv_rows(text).and_then(|rows| elbencho(&rows, file)));
    }
    if first.starts_with("ISO DATE: ")
        && text.lines().any(|l| l.starts_with("COMMAND LINE: ") && l.contains("elbencho"))
    {
        return Some(Err("elbencho's --resfile is text for people (times rounded for reading): give its --jsonfile \
                         or --csvfile, which hold the same phases"
            .into()));
    }
    let v: Value = serde_json::from_str(first).ok()?;
    (v.get("phase_type").is_some() && v["config"].get("version").is_some())
        .then(|| json_rows(text).and_then(|rows| elbencho(&rows, file)))
}

/// One phase as elbencho wrote it: its CSV labels and their values (the JSON's fields
/// under the same labels).
type Row = HashMap<String, String>;

/// The rows of a `--csvfile`: its first line's labels over each later line's values.
fn csv_rows(text: &str) -> Result<Vec<Row>, String> {
    let mut lines = text.lines();
    let labels: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let mut rows = Vec::new();
    for (i, line) in lines.enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let values: Vec<&str> = line.split(',').collect();
        if values.len() != labels.len() {
            return Err(format!("line {} has {} values for {} labels", i + 2, values.len(), labels.len()));
        }
        rows.push(labels.iter().zip(values).map(|(l, v)| (l.to_string(), v.to_string())).collect());
    }
    Ok(rows)
}

/// The JSON fields read, by the CSV label they are under there (`bytes [last]`: exact
/// bytes, in the JSON only; the CSV has whole MiB).
const JSON_FIELDS: &[(&str, &[&str])] = &[
    ("ISO date", &["iso_start_date"]),
    ("operation", &["phase_type"]),
    ("path type", &["config", "path_type"]),
    ("paths", &["config", "paths"]),
    ("hosts", &["config", "hosts"]),
    ("threads", &["config", "threads"]),
    ("dirs", &["config", "dirs"]),
    ("files", &["config", "files"]),
    ("file size", &["config", "file_size"]),
    ("direct IO", &["config", "direct_io"]),
    ("version", &["config", "version"]),
    ("command", &["config", "command"]),
    ("time ms [first]", &["first_done", "elapsed_time_ms"]),
    ("time ms [last]", &["last_done", "elapsed_time_ms"]),
    ("entries/s [first]", &["first_done", "entries/s"]),
    ("entries/s [last]", &["last_done", "entries/s"]),
    ("entries [first]", &["first_done", "entries"]),
    ("entries [last]", &["last_done", "entries"]),
    ("bytes [last]", &["last_done", "bytes"]),
    ("Ent lat us [avg]", &["last_done", "latency", "entries", "avg_us"]),
];

/// The rows of a `--jsonfile`: one object a line. elbencho writes every value as a
/// string ("2"); numbers and booleans are taken as they are written.
fn json_rows(text: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        let mut row = Row::new();
        for (label, path) in JSON_FIELDS {
            let field = path.iter().try_fold(&v, |v, k| v.get(k));
            let text = match field {
                Some(Value::String(s)) => s.clone(),
                Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
                _ => continue,
            };
            row.insert(label.to_string(), text);
        }
        rows.push(row);
    }
    Ok(rows)
}

/// A row's value under `label` as a whole number (absent or empty: None).
fn number(row: &Row, label: &str) -> Option<u64> {
    row.get(label).and_then(|v| v.trim().parse().ok())
}

/// elbencho's phases as a result set, or why none is a manyfiles op.
fn elbencho(rows: &[Row], file: &str) -> Result<ResultSet, String> {
    let first = rows.first().ok_or("no phase in it")?;
    let get = |label: &str| first.get(label).map_or("", String::as_str);
    let command = words(get("command"));
    let mut rs = peer_set("elbencho", get("version"), file, command, get("ISO date"), "as elbencho ran them");
    let hosts = number(first, "hosts").unwrap_or(1);
    rs.provenance.ranks = hosts as usize;
    rs.experiment.threads = (hosts * number(first, "threads").unwrap_or(1)) as usize;
    // What is said of a phase, once per (phase name, what), with the phases it holds for.
    let mut said: Vec<(String, Vec<usize>)> = Vec::new();
    let mut say = |what: String, i: usize| match said.iter_mut().find(|(w, _)| *w == what) {
        Some((_, phases)) => phases.push(i + 1),
        None => said.push((what, vec![i + 1])),
    };
    for (i, row) in rows.iter().enumerate() {
        let name = row.get("operation").map_or("?", String::as_str);
        let run = match phase(row) {
            Ok(run) => run,
            Err(why) => {
                say(format!("elbencho's {name} not read: {why}"), i);
                continue;
            }
        };
        let label = format!("elbencho on {} ({})", paths(row), short_name(file));
        let id = match rs.targets.iter().find(|t| t.label == label) {
            Some(t) => t.id.clone(),
            None => {
                let id = format!("elbencho-{}", rs.targets.len());
                let dir = paths(row);
                rs.targets.push(target(&id, &label, &dir));
                id
            }
        };
        if row.get("direct IO").is_some_and(|v| v == "1" || v == "true") {
            say(format!("elbencho's {name} used direct I/O (O_DIRECT), past the page cache"), i);
        }
        note_op(&mut rs, run.op);
        let m = measurement("elbencho", &id, &run, i as u64, 1);
        let earlier = rs.measurements.iter().filter(|x| x.target == id && x.op == m.op && x.tree_key == m.tree_key);
        let run_no = earlier.count() as u32 + 1;
        rs.measurements.push(crate::results::Measurement { run: run_no, ..m });
        rs.experiment.runs = rs.experiment.runs.max(run_no);
    }
    for (what, phases) in said {
        let list: Vec<String> = phases.iter().map(usize::to_string).collect();
        let of = if phases.len() == 1 { "phase" } else { "phases" };
        rs.notes.push(format!("{what} ({of} {} of the file's {})", list.join(", "), rows.len()));
    }
    if rs.measurements.is_empty() {
        return Err(format!("no phase in it is a manyfiles op ({})", rs.notes.join("; ")));
    }
    set_notes(&mut rs, rows);
    rs.derive();
    Ok(rs)
}

/// What holds for every phase read: named once.
fn set_notes(rs: &mut ResultSet, rows: &[Row]) {
    if rs.experiment.ops.iter().any(|o| o == "create") {
        rs.notes.push(
            "elbencho's WRITE creates and fills files in directories its MKDIRS phase made, timed apart, so its create \
             time holds no mkdir; files that were there already it rewrote (its output does not say which)"
                .into(),
        );
    }
    rs.notes.push(
        "elbencho's phases end without a sync (its SYNC phase, when asked, is timed apart): as manyfiles' --until \
         returned"
            .into(),
    );
    rs.notes.push("elbencho's CPU% is the whole machine's utilisation, not its own CPU time: not read".into());
    if rows.iter().any(|r| r.get("Ent lat us [avg]").is_some_and(|v| !v.is_empty())) {
        rs.notes.push(
            "elbencho's latencies (min, avg and max, no percentiles) are not read: manyfiles' latency is percentiles"
                .into(),
        );
    }
}

/// The manyfiles op elbencho's phase `name` measured, or why it is none.
fn op_of(name: &str) -> Result<&'static str, &'static str> {
    match name {
        "WRITE" => Ok("create"),
        "READ" => Ok("read"),
        "STAT" => Ok("stat"),
        "RMFILES" => Ok("delete"),
        "MKDIRS" | "RMDIRS" | "STATDIRS" => {
            Err("directories alone: manyfiles' ops time files (and the directories around them)")
        }
        "SYNC" | "DROPCACHE" => Err("a sync or cache drop between phases: no op on the files"),
        n if n.starts_with("WRITE+") || n.starts_with("READ+") => {
            Err("a stat or read inline (+s, +r): two manyfiles ops in one time")
        }
        n if n.starts_with("RWMIX") || n.starts_with("MIX-T") => {
            Err("reads and writes mixed in one phase: no manyfiles op")
        }
        "NET" => Err("elbencho's network benchmark: no storage"),
        _ => Err("an object-store or other phase that is no manyfiles op on a tree of files"),
    }
}

/// One phase of elbencho's as a run, or why it maps onto no op.
fn phase(row: &Row) -> Result<Run, String> {
    let path_type = row.get("path type").map_or("?", String::as_str);
    if path_type != "dir" {
        return Err(format!(
            "path type {path_type}: I/O in large files, block devices or buckets, not a tree of files"
        ));
    }
    let op = op_of(row.get("operation").map_or("?", String::as_str))?;
    let files = number(row, "entries [last]").filter(|&n| n > 0).ok_or("no entries done")?;
    let secs = seconds(row, "last", files)?;
    let first_s = number(row, "entries [first]").map_or(Ok(secs), |n| seconds(row, "first", n))?;
    let file_size = number(row, "file size").unwrap_or(0);
    let bytes = match op {
        "create" | "read" => whole_files(row, files, file_size)?,
        _ => 0,
    };
    let (hosts, threads) = (number(row, "hosts").unwrap_or(1), number(row, "threads").unwrap_or(1));
    let (per_thread, per_dir) = (number(row, "dirs").unwrap_or(0), number(row, "files").unwrap_or(0));
    let dirs = hosts * threads * per_thread;
    let (layout, dirs) = if dirs > 0 && dirs * per_dir == files {
        (Layout::Nested { files_per_dir: per_dir, fanout: dirs, depth: Some(1) }, dirs)
    } else {
        (Layout::Flat, 1) // a custom tree (--treefile), or a phase cut short: where its files lay is not said
    };
    Ok(Run {
        layout,
        dirs,
        threads: (hosts * threads) as usize,
        first_s,
        ..Run::flat(op, files, bytes, file_size, secs)
    })
}

/// Seconds until the `which` ("first", "last") thread finished its `entries`: entries ÷
/// elbencho's floored rate, checked against its whole milliseconds; its milliseconds
/// alone when the rate is 0 (under one entry a second).
fn seconds(row: &Row, which: &str, entries: u64) -> Result<f64, String> {
    let ms = number(row, &format!("time ms [{which}]")).ok_or(format!("no time ms [{which}]"))?;
    let rate = number(row, &format!("entries/s [{which}]")).unwrap_or(0);
    if rate == 0 {
        return if ms > 0 { Ok(ms as f64 / 1e3) } else { Err(format!("no time: 0 ms and no rate [{which}]")) };
    }
    // elbencho's µs lie in (entries·10⁶/(rate+1), entries·10⁶/rate]; its ms are those µs / 1000,
    // floored (the 10⁻⁹ keeps a bound that is a whole ms from falling below it by rounding).
    let (lo, hi) = (entries as f64 * 1e6 / (rate + 1) as f64, entries as f64 * 1e6 / rate as f64);
    if ms < (lo * (1.0 - 1e-9) / 1e3).floor() as u64 || ms > (hi * (1.0 + 1e-9) / 1e3).floor() as u64 {
        return Err(format!(
            "its {entries} entries at {rate}/s [{which}] took {:.3} ms, but its time says {ms} ms",
            hi / 1e3
        ));
    }
    Ok(entries as f64 / rate as f64)
}

/// The bytes a WRITE or READ moved, when that is every file whole once: the JSON's exact
/// bytes, or the CSV's whole MiB checked against files × file size.
fn whole_files(row: &Row, files: u64, file_size: u64) -> Result<u64, String> {
    let whole = files * file_size;
    let moved = match (number(row, "bytes [last]"), number(row, "MiB [last]")) {
        (Some(b), _) => b,
        (None, Some(mib)) if mib == whole >> 20 => whole,
        (None, Some(mib)) => mib << 20,
        (None, None) => 0, // elbencho leaves bytes out when there were none
    };
    if moved != whole {
        return Err(format!("{moved} bytes is not {files} files of {file_size} bytes each moved whole once"));
    }
    Ok(whole)
}

/// elbencho's command line (`"elbencho" "-t" "2" … `, commas made spaces) as words.
fn words(command: &str) -> Vec<String> {
    command.split('"').skip(1).step_by(2).map(str::to_string).collect()
}

/// Where a phase ran, for its label: the command line's last words when they are its
/// `paths` paths (elbencho's outputs count them but do not name them), else how many.
fn paths(row: &Row) -> String {
    let n = number(row, "paths").unwrap_or(1) as usize;
    let w = words(row.get("command").map_or("", String::as_str));
    let named = |tail: &[String], before: Option<&String>| {
        let is_path = |p: &String| p.contains('/') && !p.starts_with('-');
        // elbencho's options that take a file: their value is no bench path.
        let file_option = before.is_some_and(|b| b.starts_with('-') && (b.ends_with("file") || b.ends_with("csv")));
        tail.iter().all(is_path) && !file_option
    };
    if n > 0 && w.len() > n + 1 && named(&w[w.len() - n..], w.get(w.len() - n - 1)) {
        w[w.len() - n..].join(" ")
    } else {
        format!("{n} path{}", if n == 1 { "" } else { "s" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pairs: &[(&str, &str)]) -> Row {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_time_is_entries_over_the_rate_within_its_milliseconds() {
        // 400 entries in 3456.7 µs: elbencho writes 115717/s (floored) and 3 ms.
        let r = row(&[("time ms [last]", "3"), ("entries/s [last]", "115717")]);
        let s = seconds(&r, "last", 400).unwrap();
        assert_eq!(s, 400.0 / 115717.0);
        assert!((s - 3456.7e-6).abs() < s / 115717.0, "within 1/rate of elbencho's µs: {s}");
        // A rate the milliseconds contradict is refused, not averaged.
        let bad = row(&[("time ms [last]", "9"), ("entries/s [last]", "115717")]);
        assert!(seconds(&bad, "last", 400).unwrap_err().contains("its time says 9 ms"));
        // No rate: the whole milliseconds, or nothing.
        assert_eq!(seconds(&row(&[("time ms [last]", "1500")]), "last", 1).unwrap(), 1.5);
        assert!(seconds(&row(&[("time ms [last]", "0")]), "last", 1).is_err());
    }

    #[test]
    fn bytes_must_be_every_file_whole_once() {
        assert_eq!(whole_files(&row(&[("bytes [last]", "1638400")]), 400, 4096), Ok(1638400));
        assert!(whole_files(&row(&[("bytes [last]", "819200")]), 400, 4096).is_err());
        // The CSV's whole MiB: 400 × 4 KiB is 1.5625 MiB, written 1.
        assert_eq!(whole_files(&row(&[("MiB [last]", "1")]), 400, 4096), Ok(1638400));
        assert!(whole_files(&row(&[("MiB [last]", "2")]), 400, 4096).is_err());
    }

    #[test]
    fn paths_come_from_the_command_only_when_they_are_paths() {
        let cmd = |c: &str| row(&[("paths", "1"), ("command", c)]);
        assert_eq!(paths(&cmd(r#""elbencho" "-w" "-t" "2" "--jsonfile" "/o/F.json" "/mnt/x" "#)), "/mnt/x");
        assert_eq!(paths(&cmd(r#""elbencho" "/mnt/x" "-w" "-t" "2" "#)), "1 path");
        assert_eq!(paths(&cmd(r#""elbencho" "/mnt/x" "-w" "--jsonfile" "/o/F.json" "#)), "1 path");
    }
}
