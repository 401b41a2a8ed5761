//! Peers' results read as result sets, so `report` draws them beside manyfiles' (issue
//! 42, item 5): fio's JSON output (`fio --output-format=json`). Each fio job becomes one
//! measurement of the target of its directory (`fio on DIRECTORY (FILE)`) when what it measured is one of
//! manyfiles' ops on a tree of files; a job that is not is named with the reason, never
//! guessed:
//!
//! | fio job                                   | op     | files       | bytes          |
//! | ----------------------------------------- | ------ | ----------- | -------------- |
//! | `ioengine=filecreate`                     | create | total_ios   | 0 (it writes none) |
//! | `ioengine=filestat`                       | stat   | total_ios   | 0              |
//! | `ioengine=filedelete`                     | delete | total_ios   | 0              |
//! | a read job over `nrfiles` files, each read whole once (`io_bytes` = nrfiles × filesize) | read | nrfiles | io_bytes |
//!
//! The time is fio's `runtime` of that direction, which fio gives in whole milliseconds:
//! a job shorter than a few tens of ms is named in the warnings as coarse. fio's latency
//! (`clat_ns`: mean and percentiles) becomes the per-operation latency. Where fio was run
//! (machine, file system) is not in its JSON: the target says only the directory.
//!
//! mdtest's text output (`mdtest … > FILE`; its `SUMMARY rate` table) is read too: one
//! target `mdtest on DIRECTORY (FILE)`, its task count as the ranks, one measurement per
//! phase, the job's files (its `T tasks, F files` line) over the phase's mean rate:
//!
//! | mdtest row     | op     | bytes               |
//! | -------------- | ------ | ------------------- |
//! | File creation  | create | files × `-w`        |
//! | File stat      | stat   | 0                   |
//! | File read      | read   | files × `-e`        |
//! | File removal   | delete | 0                   |
//!
//! Tree creation and removal, and the directory rows (without `-F`), are named as not
//! read. elbencho's outputs are not read yet.

use super::{ExperimentInfo, Measurement, ResultSet};
use crate::measure::provenance::Provenance;
use crate::measure::{Latency, PhaseResult};
use crate::storage::TargetInfo;
use crate::tree::spec::{Content, Layout, SizeDist, TreeSpec};
use serde_json::Value;

/// `path` read as a peer's output: None when it is none this build reads (a manyfiles
/// file, say), else the result set or why it cannot be one.
pub fn read(path: &std::path::Path) -> Option<Result<ResultSet, String>> {
    let text = crate::fs::input::read_bounded(path, crate::fs::input::JSON_MAX).ok()?;
    let file = path.display().to_string();
    let Ok(v) = serde_json::from_str::<Value>(&text) else {
        return is_mdtest(&text).then(|| mdtest(&text, &file).map_err(|e| format!("{file} (mdtest's output): {e}")));
    };
    match recognise(&v)? {
        "fio" => Some(fio(&v, &file).map_err(|e| format!("{file} (fio's JSON): {e}"))),
        _ => None,
    }
}

/// Is this a peer's output this build reads? (Some: which tool.)
pub fn recognise(v: &Value) -> Option<&'static str> {
    (v.get("fio version").is_some() && v.get("jobs").is_some_and(Value::is_array)).then_some("fio")
}

/// A fio JSON document as a result set (derived: summaries and models made), or why not.
/// `file` names it in the warnings and provenance.
pub fn fio(v: &Value, file: &str) -> Result<ResultSet, String> {
    let jobs = v["jobs"].as_array().ok_or("no \"jobs\" array")?;
    let mut rs = empty(v, file);
    for (i, job) in jobs.iter().enumerate() {
        let name = job["jobname"].as_str().unwrap_or("?").to_string();
        // A job's options are its own section's; the rest are in "global options".
        let mut opts = v["global options"].as_object().cloned().unwrap_or_default();
        if let Some(own) = job["job options"].as_object() {
            opts.extend(own.clone());
        }
        let opts = Value::Object(opts);
        match fio_job(job, &opts) {
            Ok((op, files, bytes, secs, latency)) => {
                // One target per directory: the jobs on it make one line in the charts.
                let dir = opts["directory"].as_str().unwrap_or(".").to_string();
                let id = match rs.targets.iter().find(|t| t.path.as_os_str() == dir.as_str()) {
                    Some(t) => t.id.clone(),
                    None => {
                        let id = format!("fio-{}", rs.targets.len());
                        let short = std::path::Path::new(file).file_name().map_or(file.into(), |n| n.to_string_lossy());
                        rs.targets.push(target(&id, &format!("fio on {dir} ({short})"), &dir));
                        id
                    }
                };
                if secs < 0.05 {
                    rs.notes.push(format!(
                        "fio job {name}: {op} took {:.0} ms; fio gives whole milliseconds, so its time is coarse",
                        secs * 1e3
                    ));
                }
                if !rs.experiment.ops.contains(&op.to_string()) {
                    rs.experiment.ops.push(op.to_string());
                }
                let cpu = [job["usr_cpu"].as_f64().unwrap_or(0.0), job["sys_cpu"].as_f64().unwrap_or(0.0)];
                let m =
                    measurement("fio", &id, (op, files, bytes, secs), latency, i as u64, cpu.map(|c| c / 100.0 * secs));
                rs.measurements.push(m);
            }
            Err(why) => rs.notes.push(format!("fio job {name} not read: {why}")),
        }
    }
    if rs.measurements.is_empty() {
        return Err(format!("no fio job in it measured a manyfiles op on a tree of files ({})", rs.notes.join("; ")));
    }
    rs.derive();
    Ok(rs)
}

/// (op, files, bytes, seconds, latency) of one fio job, or why it maps onto no op.
fn fio_job(job: &Value, opts: &Value) -> Result<(&'static str, u64, u64, f64, Latency), String> {
    if job["error"].as_i64().unwrap_or(0) != 0 {
        return Err(format!("it failed (error {})", job["error"]));
    }
    let engine = opts["ioengine"].as_str().unwrap_or("psync");
    let dir_of = |side: &str| -> (u64, u64, f64, Latency) {
        let d = &job[side];
        let ios = d["total_ios"].as_u64().unwrap_or(0);
        (ios, d["io_bytes"].as_u64().unwrap_or(0), d["runtime"].as_f64().unwrap_or(0.0) / 1e3, latency(&d["clat_ns"]))
    };
    let (op, side) = match engine {
        "filecreate" => ("create", "write"),
        "filestat" => ("stat", "read"),
        "filedelete" => ("delete", "write"),
        _ => {
            let rw = opts["rw"].as_str().or(opts["readwrite"].as_str()).unwrap_or("read");
            if rw != "read" && rw != "randread" {
                return Err(format!(
                    "rw={rw} with ioengine={engine} writes into files fio laid out before its clock started: no \
                     manyfiles op measures that"
                ));
            }
            let nrfiles = number(&opts["nrfiles"]).unwrap_or(1);
            let filesize = opts["filesize"].as_str().and_then(|s| crate::units::parse_size(s).ok());
            let (_, bytes, secs, lat) = dir_of("read");
            match filesize {
                Some(fs) if nrfiles > 1 && bytes == nrfiles * fs => return ok("read", nrfiles, bytes, secs, lat),
                _ => {
                    return Err(format!(
                        "a read of {bytes} bytes is not {nrfiles} files each read whole once (set nrfiles and \
                         filesize, and size = nrfiles × filesize)"
                    ));
                }
            }
        }
    };
    let (ios, _, secs, lat) = dir_of(side);
    ok(op, ios, 0, secs, lat)
}

fn ok(
    op: &'static str,
    files: u64,
    bytes: u64,
    secs: f64,
    lat: Latency,
) -> Result<(&'static str, u64, u64, f64, Latency), String> {
    if files == 0 || secs <= 0.0 {
        return Err(format!("{op}: {files} files in {secs} s is no measurement"));
    }
    Ok((op, files, bytes, secs, lat))
}

/// fio's options are strings ("200").
fn number(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

/// fio's `clat_ns` as manyfiles' latency (µs).
fn latency(c: &Value) -> Latency {
    let us = |v: &Value| v.as_f64().unwrap_or(0.0) / 1e3;
    let pct = |p: &str| us(&c["percentile"][p]);
    Latency {
        count: c["N"].as_u64().unwrap_or(0),
        mean: us(&c["mean"]),
        p50: pct("50.000000"),
        p90: pct("90.000000"),
        p99: pct("99.000000"),
        max: us(&c["max"]),
    }
}

fn target(id: &str, label: &str, dir: &str) -> TargetInfo {
    TargetInfo {
        id: id.into(),
        kind: "peer".into(),
        path: dir.into(),
        fs_type: String::new(),
        mount_point: String::new(),
        mount_source: String::new(),
        mount_options: String::new(),
        block_size: 0,
        free_bytes: 0,
        total_bytes: 0,
        read_only: false,
        managed: None,
        device: None,
        label: label.into(),
    }
}

/// One run of a peer's: `tool` measured `op` over `files` files and `bytes` bytes in
/// `secs` on `target`, with its latency and CPU (user, system seconds) if it gave them.
fn measurement(
    tool: &str,
    target: &str,
    (op, files, bytes, secs): (&str, u64, u64, f64),
    latency: Latency,
    order: u64,
    [user, sys]: [f64; 2],
) -> Measurement {
    let tree = TreeSpec {
        files,
        size: SizeDist::Fixed { bytes: bytes.checked_div(files).unwrap_or(0) },
        layout: Layout::Flat,
        name_len: 0,
        content: Content::Zeros,
        seed: 0,
    };
    let result = PhaseResult {
        elapsed_s: secs,
        files,
        bytes,
        dirs: 1,
        threads: 1,
        cpu_user_s: user,
        cpu_sys_s: sys,
        latency_us: latency,
        first_finish_s: secs,
        last_finish_s: secs,
        ..PhaseResult::default()
    };
    Measurement {
        experiment: tool.into(),
        target: target.into(),
        op: op.into(),
        tree_key: tree.key(),
        tree: tree.clone(),
        tree_files: files,
        tree_bytes: bytes,
        tree_dirs: 1,
        run: 1,
        order,
        block: None,
        result,
    }
}

/// The set before any job: fio's version and start time as provenance, what is unknown
/// left empty.
fn empty(v: &Value, file: &str) -> ResultSet {
    let version = v["fio version"].as_str().unwrap_or("?").trim_start_matches("fio-");
    peer_set("fio", version, file, Vec::new(), v["time"].as_str().unwrap_or(""), "as fio ran them")
}

/// A peer's result set before any measurement: its tool, version, command line and start
/// as provenance, `order` saying how it ran its phases, what is unknown left empty.
fn peer_set(tool: &str, version: &str, file: &str, command_line: Vec<String>, started: &str, order: &str) -> ResultSet {
    let provenance = Provenance {
        tool: tool.into(),
        version: version.into(),
        built_from: format!("read from {file}"),
        command_line,
        started_utc: started.into(),
        host: String::new(),
        kernel: String::new(),
        cpu_model: String::new(),
        cores: 0,
        memory_bytes: 0,
        ranks: 1,
        hosts: Vec::new(),
        invocation: String::new(),
    };
    let experiment = ExperimentInfo {
        name: tool.into(),
        ops: Vec::new(),
        runs: 1,
        warmup: 0,
        threads: 1,
        portion_files: 0,
        order: order.into(),
        create: Default::default(),
        caches: crate::storage::cache::CacheMode::Warm,
        until: Default::default(),
        adaptive: None,
        side_trees: Vec::new(),
    };
    let mut rs = ResultSet::new(provenance, experiment, Vec::new());
    rs.complete = true;
    rs
}

/// Is this mdtest's text output? (Its launch line and its rate summary.)
pub fn is_mdtest(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("mdtest-") && l.contains(" was launched with ")) && rate_title(text).is_some()
}

/// The title of mdtest's rate summary: `SUMMARY rate` (mdtest 3 and later), `SUMMARY:`
/// (1.9, which printed rates alone).
fn rate_title(text: &str) -> Option<&'static str> {
    ["SUMMARY rate", "SUMMARY:"].into_iter().find(|t| text.lines().any(|l| l.starts_with(t)))
}

/// mdtest's summary rows and the op each maps onto (None: no manyfiles op, and why).
fn mdtest_op(row: &str) -> Result<&'static str, &'static str> {
    match row {
        "File creation" => Ok("create"),
        "File stat" => Ok("stat"),
        "File read" => Ok("read"),
        "File removal" => Ok("delete"),
        "Tree creation" | "Tree removal" => Err("mdtest's directory tree made or removed as a whole: no manyfiles op"),
        "Directory rename" => Err("manyfiles times no rename"),
        _ => Err("directories alone: manyfiles' ops time files (and the directories around them)"),
    }
}

/// The rows of mdtest's summary table headed `title` (`SUMMARY rate`, `SUMMARY time`):
/// (row name, [max, min, mean, std dev]), and the iterations it summarises.
fn mdtest_table(text: &str, title: &str) -> (Vec<(String, [f64; 4])>, u64) {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(title));
    let iterations = lines
        .next()
        .and_then(|l| l.split("(of ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let mut rows = Vec::new();
    for l in lines.skip_while(|l| !l.trim_start().starts_with("---")).skip(1) {
        let words: Vec<&str> = l.split_whitespace().filter(|w| *w != ":").collect();
        let Some(at) = words.iter().position(|w| w.parse::<f64>().is_ok()) else { break };
        let values: Vec<f64> = words[at..].iter().filter_map(|w| w.parse().ok()).collect();
        if at == 0 || values.len() < 4 {
            break;
        }
        let name = words[..at].join(" ").trim_end_matches(':').trim_end().to_string();
        rows.push((name, [values[0], values[1], values[2], values[3]]));
    }
    (rows, iterations)
}

/// mdtest's command line (`Command line used: mdtest '-n' '1000' …`, quoted or not) as words.
fn mdtest_args(text: &str) -> Vec<String> {
    let line = text.lines().find_map(|l| l.strip_prefix("Command line used: ")).unwrap_or("");
    line.split_whitespace().map(|w| w.trim_matches('\'').trim_matches('"').to_string()).collect()
}

/// mdtest's text output (its summary tables) as a result set, or why not. Each phase of
/// the rate summary becomes one measurement: its files are the job's (the header's `T
/// tasks, F files`, or with a stonewall `-W`, rate × time from `-P`'s time summary), its
/// time files ÷ mean rate. Rows that are no manyfiles op, phases not run (rate 0) and
/// iterations beyond one (only their max, min, mean and std dev are printed: the mean is
/// taken as one run) are named in the notes.
pub fn mdtest(text: &str, file: &str) -> Result<ResultSet, String> {
    let launch = text
        .lines()
        .find(|l| l.starts_with("mdtest-") && l.contains(" was launched with "))
        .ok_or("no \"mdtest-VERSION was launched with\" line")?;
    let version = launch.split_whitespace().next().unwrap_or("mdtest-?").trim_start_matches("mdtest-");
    let tasks: u64 = launch
        .split(" was launched with ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .ok_or("no task count in the launch line")?;
    let args = mdtest_args(text);
    let opt = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1));
    let number = |flag: &str| opt(flag).and_then(|v| v.parse::<u64>().ok());
    // "2 tasks, 2000 files" (or "files/directories"): the job's total.
    let total: Option<u64> = text.lines().find_map(|l| {
        let (t, f) = l.split_once(" tasks, ")?;
        t.trim().parse::<u64>().ok()?;
        f.split_whitespace().next()?.parse().ok()
    });
    let started = text.lines().find_map(|l| l.strip_prefix("-- started at ")).unwrap_or("").trim_end_matches(" --");
    let dir = opt("-d").cloned().unwrap_or_else(|| ".".into());
    let mut rs = peer_set("mdtest", version, file, args.clone(), started, "as mdtest ran them");
    rs.provenance.ranks = tasks as usize;
    rs.experiment.threads = tasks as usize;
    let short = std::path::Path::new(file).file_name().map_or(file.into(), |n| n.to_string_lossy());
    rs.targets.push(target("mdtest-0", &format!("mdtest on {dir} ({short})"), &dir));
    let (rates, iterations) = mdtest_table(text, rate_title(text).ok_or("no rate summary")?);
    let (times, _) = mdtest_table(text, "SUMMARY time");
    if iterations > 1 {
        rs.notes.push(format!(
            "mdtest summarised {iterations} iterations by max, min, mean and std dev only: each phase's mean rate is \
             read as one run"
        ));
    }
    let stonewall = opt("-W").is_some();
    let (write, read) = (number("-w").unwrap_or(0), number("-e").unwrap_or(0));
    for (i, (row, [_, _, mean, _])) in rates.iter().enumerate() {
        let op = match mdtest_op(row) {
            Ok(op) => op,
            Err(why) => {
                rs.notes.push(format!("mdtest's {row} not read: {why}"));
                continue;
            }
        };
        if *mean <= 0.0 {
            rs.notes.push(format!("mdtest's {row} not read: its rate is 0 (the phase did not run)"));
            continue;
        }
        let time = times.iter().find(|(r, _)| r == row).map(|(_, v)| v[2]);
        let files = match (stonewall, total, time) {
            (true, _, Some(t)) if iterations == 1 => (mean * t).round() as u64,
            (true, _, _) => {
                rs.notes.push(format!(
                    "mdtest's {row} not read: with a stonewall (-W) the files each rank reached are not in a rate \
                     summary (run mdtest with -P for its time summary)"
                ));
                continue;
            }
            (false, Some(n), _) => n,
            (false, None, _) => return Err("no \"T tasks, F files\" line: the files per phase are unknown".into()),
        };
        let bytes = files
            * if op == "create" {
                write
            } else if op == "read" {
                read
            } else {
                0
            };
        let secs = files as f64 / mean;
        if !rs.experiment.ops.iter().any(|o| o == op) {
            rs.experiment.ops.push(op.into());
        }
        let m = measurement("mdtest", "mdtest-0", (op, files, bytes, secs), Latency::default(), i as u64, [0.0; 2]);
        rs.measurements.push(m);
    }
    if rs.measurements.is_empty() {
        return Err(format!("no phase of its summary is a manyfiles op ({})", rs.notes.join("; ")));
    }
    if args.iter().any(|a| a == "-Y") {
        rs.notes.push("mdtest -Y: each phase's time ends with a sync() (as manyfiles' durable time)".into());
    } else {
        rs.notes.push("mdtest without -Y: no phase ends with a sync (as manyfiles' --until returned)".into());
    }
    rs.derive();
    Ok(rs)
}
