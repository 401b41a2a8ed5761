//! The progress line and what a run stopped by SIGINT prints (issue 40, item 8): on a
//! terminal one line for the whole experiment (trials done of planned, time spent, an
//! ETA that says what bounds it); off a terminal nothing; after SIGINT the tables of what
//! was measured, the cells with fewer runs than asked marked, the same runs as the saved
//! JSON holds, and exit 130.

mod common;

use common::*;
use serde_json::Value;
use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(120);

/// Measurements in `json` once it exists and parses (it is written atomically).
fn measurements_so_far(json: &Path) -> usize {
    let Ok(text) = std::fs::read_to_string(json) else { return 0 };
    let Ok(v) = serde_json::from_str::<Value>(&text) else { return 0 };
    v.get("measurements").and_then(|m| m.as_array()).map_or(0, |m| m.len())
}

/// The `K` of every `(n=K)` in `text`, sorted.
fn ns_shown(text: &str) -> Vec<u64> {
    let mut v: Vec<u64> = text.split("(n=").skip(1).filter_map(|rest| rest.split(')').next()?.parse().ok()).collect();
    v.sort_unstable();
    v
}

#[test]
fn sigint_prints_the_partial_table_the_json_holds() {
    let target = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let (stdout, stderr) = (out.path().join("stdout.txt"), out.path().join("stderr.txt"));
    // Not --quiet: off a terminal the progress line must stay away by itself.
    let args = words(&format!(
        "ladder --target {} --total 1MiB --from 1 --to 4096 --runs 50 --json {}",
        target.path().display(),
        json.display()
    ));
    let mut child = Command::new(bin())
        .args(&args)
        .stdin(Stdio::null())
        .stdout(File::create(&stdout).unwrap())
        .stderr(File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let logs = || {
        format!(
            "--- stdout:\n{}\n--- stderr:\n{}",
            std::fs::read_to_string(&stdout).unwrap_or_default(),
            std::fs::read_to_string(&stderr).unwrap_or_default()
        )
    };
    // Some cells with a run or two, far from the 50 asked.
    let saw = wait_until(TIMEOUT, || measurements_so_far(&json) >= 12 || child.try_wait().unwrap().is_some());
    assert!(saw, "no measurements within {TIMEOUT:?}\n{}", logs());
    assert!(child.try_wait().unwrap().is_none(), "exited before the signal\n{}", logs());
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) }, 0);
    let mut status = None;
    let ended = wait_until(TIMEOUT, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    if !ended {
        let _ = child.kill();
        let _ = child.wait();
        panic!("no exit within {TIMEOUT:?} of SIGINT\n{}", logs());
    }
    assert_eq!(status.unwrap().code(), Some(130), "{}", logs());
    let text = std::fs::read_to_string(&stdout).unwrap();
    let err = std::fs::read_to_string(&stderr).unwrap();

    // Off a terminal: no progress line, only the one line saying why it stopped.
    assert!(!err.contains('\r') && !err.contains('\x1b'), "a progress line off a terminal: {err:?}");
    assert!(!err.contains("trial ") && !err.contains("eta"), "{err}");
    assert!(err.starts_with("manyfiles: ") && err.contains("SIGINT"), "{err}");

    // The tables of what was measured, as the saved JSON holds it.
    let v = load_json(&json);
    assert_eq!(get(&v, "complete"), &Value::Bool(false));
    let sums = arr(&v, "summaries");
    assert!(!sums.is_empty(), "some cell has a complete run\n{}", logs());
    let ms = arr(&v, "measurements");
    for sm in sums {
        let runs = ms
            .iter()
            .filter(|m| s(m, "op") == s(sm, "op") && s(m, "tree_key") == s(sm, "tree_key") && measurement_complete(m))
            .count();
        assert_eq!(u(sm, "runs") as usize, runs, "runs of {} {}", s(sm, "op"), s(sm, "tree_key"));
        assert!(runs < 50, "every cell is partial here");
    }
    assert!(text.contains("interrupted by SIGINT after "), "{text}");
    assert!(text.contains("trials planned"), "{text}");
    assert!(text.contains("manyfiles ladder: "), "the title: {text}");
    // Every measured cell of the table is marked, and the footnote says how many runs.
    let marks = text.matches('†').count();
    assert_eq!(marks, sums.len() + 1, "one † per cell and the footnote's: {text}");
    let runs: Vec<u64> = sums.iter().map(|sm| u(sm, "runs")).collect();
    let (lo, hi) = (runs.iter().min().unwrap(), runs.iter().max().unwrap());
    let span = if lo == hi { lo.to_string() } else { format!("{lo} – {hi}") };
    let note = format!(
        "†: partial, the run was stopped: {} of {} cells have {span} complete runs of the 50 asked",
        sums.len(),
        sums.len()
    );
    assert!(text.replace('\n', " ").contains(&note), "{note}\n{text}");
    // The runs each cell shows are the JSON's (a cell without an interval shows `(n=K)`).
    let few: Vec<u64> = {
        let no_interval = |sm: &&Value| sm.get("median_ci95_s").is_none_or(Value::is_null);
        let mut v: Vec<u64> = sums.iter().filter(no_interval).map(|sm| u(sm, "n")).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(ns_shown(&text), few, "{text}");
    assert!(text.contains(&format!("results: {}", json.display())), "{text}");
    assert!(run_dirs(target.path()).is_empty(), "run directory removed");
}

/// `script` (util-linux) runs a command on a pseudo-terminal: where it is missing the
/// terminal test skips, never in CI.
fn script_available() -> bool {
    let found = Command::new("script").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var_os("CI").is_none(), "CI: script is missing (util-linux, in Debian's bsdutils)");
        eprintln!("skipped: script not found (apt-get install bsdutils)");
    }
    found
}

/// What `args` writes on a terminal (stdout and stderr both), its exit code.
fn on_a_terminal(args: &str) -> (Option<i32>, String) {
    let cmd = format!("{} {args}", bin().display());
    let o = Command::new("script").args(["-q", "-e", "-c", &cmd, "/dev/null"]).stdin(Stdio::null()).output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn one_progress_line_for_the_whole_experiment_on_a_terminal() {
    if !script_available() {
        return;
    }
    let target = tempfile::tempdir().unwrap();
    let dir = target.path().display();
    // Fixed runs: every trial is known ahead, the ETA is the work left.
    let (code, text) = on_a_terminal(&format!("ladder --target {dir} --total 1MiB --to 4096 --runs 3"));
    assert_eq!(code, Some(0), "{text}");
    let trials = text.matches("trial ").count();
    assert!(trials > 0, "no progress line: {text:?}");
    assert!(text.contains("(work left)"), "the ETA says what bounds it: {text:?}");
    // The total is every trial: 3 runs of every rung, none more.
    let totals: Vec<u64> = text
        .split("trial ")
        .skip(1)
        .filter_map(|r| r.split_once('/')?.1.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .collect();
    assert!(!totals.is_empty() && totals.iter().all(|t| *t == totals[0] && t % 3 == 0), "{totals:?}");
    assert!(text.contains("create"), "the phase in flight: {text:?}");
    assert!(text.contains("manyfiles ladder: "), "the tables follow: {text:?}");

    // Adaptive runs: what is planned so far, the most there can be, the budget.
    let (code, text) = on_a_terminal(&format!("ladder --target {dir} --total 1MiB --to 4096 --max-time 4"));
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains(" (≤ "), "{text:?}");
    assert!(text.contains("(--max-time 4s)") || text.contains("(runs planned)"), "{text:?}");
}
