//! mdtest's text output (`mdtest … > FILE`; its `SUMMARY rate` table): one target `mdtest
//! on DIRECTORY (FILE)`, its task count as the ranks, one measurement per phase, the job's
//! files (its `T tasks, F files` line) over the phase's mean rate, on a tree of files of
//! `-w` bytes (what File creation wrote):
//!
//! | mdtest row     | op     | bytes               |
//! | -------------- | ------ | ------------------- |
//! | File creation  | create | files × `-w`        |
//! | File stat      | stat   | 0                   |
//! | File read      | read   | files × `-e`        |
//! | File removal   | delete | 0                   |
//!
//! Tree creation and removal, and the directory rows (without `-F`), are named as not
//! read.

use super::{Run, measurement, note_op, peer_set, short_name, target};
use crate::results::ResultSet;

/// mdtest's text output in `text`: None when it is not.
pub fn read(text: &str, file: &str) -> Option<Result<ResultSet, String>> {
    is_mdtest(text).then(|| mdtest(text, file))
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
    rs.targets.push(target("mdtest-0", &format!("mdtest on {dir} ({})", short_name(file)), &dir));
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
        note_op(&mut rs, op);
        let run = Run::flat(op, files, bytes, write, secs);
        rs.measurements.push(measurement("mdtest", "mdtest-0", &run, i as u64, 1));
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
