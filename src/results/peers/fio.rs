//! fio's JSON output (`fio --output-format=json`). Each fio job becomes one measurement
//! of the target of its directory (`fio on DIRECTORY (FILE)`) when what it measured is
//! one of manyfiles' ops on a tree of files; a job that is not is named with the reason:
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

use super::{Run, measurement, note_op, peer_set, short_name, target};
use crate::measure::Latency;
use crate::results::ResultSet;
use serde_json::Value;

/// fio's JSON in `text`: None when it is not.
pub fn read(text: &str, file: &str) -> Option<Result<ResultSet, String>> {
    let v = serde_json::from_str::<Value>(text).ok()?;
    is_fio(&v).then(|| fio(&v, file))
}

/// Is this fio's JSON document?
pub fn is_fio(v: &Value) -> bool {
    v.get("fio version").is_some() && v.get("jobs").is_some_and(Value::is_array)
}

/// A fio JSON document as a result set (derived: summaries and models made), or why not.
/// `file` names it in the warnings and provenance.
pub fn fio(v: &Value, file: &str) -> Result<ResultSet, String> {
    let jobs = v["jobs"].as_array().ok_or("no \"jobs\" array")?;
    let version = v["fio version"].as_str().unwrap_or("?").trim_start_matches("fio-");
    let mut rs = peer_set("fio", version, file, Vec::new(), v["time"].as_str().unwrap_or(""), "as fio ran them");
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
                        rs.targets.push(target(&id, &format!("fio on {dir} ({})", short_name(file)), &dir));
                        id
                    }
                };
                if secs < 0.05 {
                    rs.notes.push(format!(
                        "fio job {name}: {op} took {:.0} ms; fio gives whole milliseconds, so its time is coarse",
                        secs * 1e3
                    ));
                }
                note_op(&mut rs, op);
                let cpu = [job["usr_cpu"].as_f64().unwrap_or(0.0), job["sys_cpu"].as_f64().unwrap_or(0.0)];
                let run = Run {
                    latency,
                    cpu: cpu.map(|c| c / 100.0 * secs),
                    ..Run::flat(op, files, bytes, bytes.checked_div(files).unwrap_or(0), secs)
                };
                rs.measurements.push(measurement("fio", &id, &run, i as u64, 1));
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
