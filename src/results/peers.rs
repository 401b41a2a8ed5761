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
//! elbencho's and mdtest's outputs are not read yet.

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
    let v: Value = serde_json::from_str(&text).ok()?;
    let file = path.display().to_string();
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
                rs.measurements.push(measurement(&id, op, files, bytes, secs, latency, i as u64, job));
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

#[allow(clippy::too_many_arguments)]
fn measurement(
    target: &str,
    op: &str,
    files: u64,
    bytes: u64,
    secs: f64,
    latency: Latency,
    order: u64,
    job: &Value,
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
        cpu_user_s: job["usr_cpu"].as_f64().unwrap_or(0.0) / 100.0 * secs,
        cpu_sys_s: job["sys_cpu"].as_f64().unwrap_or(0.0) / 100.0 * secs,
        latency_us: latency,
        first_finish_s: secs,
        last_finish_s: secs,
        ..PhaseResult::default()
    };
    Measurement {
        experiment: "fio".into(),
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
    let provenance = Provenance {
        tool: "fio".into(),
        version: v["fio version"].as_str().unwrap_or("?").trim_start_matches("fio-").into(),
        built_from: format!("read from {file}"),
        command_line: Vec::new(),
        started_utc: v["time"].as_str().unwrap_or("").into(),
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
        name: "fio".into(),
        ops: Vec::new(),
        runs: 1,
        warmup: 0,
        threads: 1,
        portion_files: 0,
        order: "as fio ran them".into(),
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
