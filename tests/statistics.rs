//! Adaptive runs and disturbance detection, end to end: the driver stops each cell at
//! the requested precision, at --max-runs or at the budget (on a synthetic timing
//! source, the hidden --mock-timing flag, so the outcome is deterministic), leaves
//! disturbed runs out, keeps --runs N exact, and a real busy neighbour is detected.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

fn ladder(dir: &Path, json: &Path, extra: &str) -> Run {
    let mut a = words("ladder --total 256k --second-total off --to 16 --quiet");
    a.extend(["--target".into(), dir.to_string_lossy().into_owned(), "--json".into(), json.to_string_lossy().into()]);
    a.extend(words(extra));
    run(a)
}

fn summaries(v: &Value) -> &Vec<Value> {
    v["summaries"].as_array().expect("summaries")
}

/// Relative half-width of the median interval, as the tool defines precision.
fn precision(s: &Value) -> Option<f64> {
    let ci = s["median_ci95_s"].as_array()?;
    let (lo, hi, m) = (ci[0].as_f64()?, ci[1].as_f64()?, s["median_s"].as_f64()?);
    Some((hi - m).max(m - lo) / m)
}

#[test]
fn adaptive_runs_stop_at_the_precision() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let r = ladder(dir.path(), &json, "--mock-timing cv=0.03,seed=3 --precision 5%");
    r.ok();
    let v = load_json(&json);
    let a = &v["experiment"]["adaptive"];
    assert_eq!(a["precision"].as_f64(), Some(0.05));
    assert_eq!(a["budget_spent"], Value::Bool(false));
    let sums = summaries(&v);
    assert_eq!(sums.len(), 9, "3 rungs × create, read, delete");
    for s in sums {
        let n = s["n"].as_u64().unwrap();
        let p = precision(s).expect("an interval");
        assert!(p <= 0.05, "precision {p} > 5%: {s}");
        assert!((6..30).contains(&n), "n = {n}: stopped at the precision, before --max-runs");
        assert!(s["stopped"].as_str().unwrap().starts_with("precision reached"), "{s}");
    }
    assert!(r.stdout.contains("9 of 9 reached it"), "{}", r.stdout);
}

#[test]
fn noisy_cells_stop_at_max_runs_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let r = ladder(dir.path(), &json, "--mock-timing cv=0.6,seed=5 --max-runs 8");
    r.ok();
    let v = load_json(&json);
    for s in summaries(&v) {
        assert_eq!(s["n"].as_u64(), Some(8), "{s}");
        assert!(s["stopped"].as_str().unwrap().starts_with("max runs reached"), "{s}");
        assert!(precision(s).unwrap() > 0.05);
    }
    assert!(r.stdout.contains("0 of 9 reached it"), "{}", r.stdout);
    assert!(r.stdout.contains("max runs reached: ±"), "{}", r.stdout);
    // No printed interval is wider than its value: those cells say why instead.
    for line in r.stdout.lines().filter(|l| l.contains('[') && l.contains(" – ")) {
        for cell in line.split("  ").filter(|c| c.contains(" – ")) {
            let nums: Vec<f64> =
                cell.split(|c: char| !(c.is_ascii_digit() || c == '.')).filter_map(|x| x.parse().ok()).collect();
            if let [m, lo, hi] = nums[..] {
                assert!(hi - lo <= m && lo >= 0.0, "interval wider than its value: {cell}");
            }
        }
    }
}

#[test]
fn the_budget_is_kept_even_before_the_minimum_runs() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let t0 = std::time::Instant::now();
    let r = ladder(dir.path(), &json, "--mock-timing cv=0.6,seed=7 --max-time 1s --min-runs 3");
    r.ok();
    let took = t0.elapsed().as_secs_f64();
    let v = load_json(&json);
    let a = &v["experiment"]["adaptive"];
    assert_eq!(a["budget_spent"], Value::Bool(true), "{a}");
    // No trial starts that would overrun the budget, not even a minimum run: kept to
    // within about one trial (tiny here, slower on a loaded machine).
    assert!(a["spent_s"].as_f64().unwrap() < 3.0, "{a}");
    assert!(took < 60.0, "took {took} s");
    for s in summaries(&v) {
        assert!(s["n"].as_u64().unwrap() >= 1, "{s}");
        let why = s["stopped"].as_str().unwrap();
        assert!(why.starts_with("budget spent") || why.starts_with("precision reached"), "{s}");
        if s["n"].as_u64().unwrap() < 6 {
            assert!(s["median_ci95_s"].is_null() && why.ends_with("no interval"), "{s}");
        }
    }
    assert!(r.stdout.contains("budget spent: "), "{}", r.stdout);
}

#[test]
fn disturbed_runs_are_left_out_and_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let r = ladder(dir.path(), &json, "--mock-timing cv=0.05,disturbed=0.3,seed=11 --precision 1% --max-runs 12");
    r.ok();
    let v = load_json(&json);
    let mut left_out = 0;
    for s in summaries(&v) {
        let runs = s["runs"].as_u64().unwrap();
        let n = s["n"].as_u64().unwrap();
        let d = s["disturbed_s"].as_array().map_or(0, |x| x.len()) as u64;
        assert_eq!(n + d, runs, "{s}");
        assert_eq!(s["disturbed"].as_u64(), Some(d));
        assert!(n >= 12, "disturbed runs do not count toward --max-runs: {s}");
        assert_eq!(s["raw_s"].as_array().unwrap().len() as u64, n);
        left_out += d;
    }
    // 30% of about 150 runs: the draw is deterministic, and far from 0.
    assert!(left_out >= 20, "{left_out} runs left out");
    // Where leaving them out moved the median past its own interval, a warning shows both
    // figures; nowhere else.
    let warnings: Vec<&str> = v["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    for s in summaries(&v) {
        let mut all: Vec<f64> = s["raw_s"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        let out = s["disturbed_s"].as_array().map_or(0, |x| x.len());
        all.extend(s["disturbed_s"].as_array().into_iter().flatten().map(|x| x.as_f64().unwrap()));
        all.sort_by(f64::total_cmp);
        let m = all.len() / 2;
        let with = if all.len() % 2 == 1 { all[m] } else { (all[m - 1] + all[m]) / 2.0 };
        let moved = match s["median_ci95_s"].as_array() {
            Some(ci) if out > 0 => with < ci[0].as_f64().unwrap() || with > ci[1].as_f64().unwrap(),
            _ => false,
        };
        let key = format!("{} on {} (", s["op"].as_str().unwrap(), s["tree_key"].as_str().unwrap());
        let warned = warnings.iter().any(|w| w.starts_with(&key) && w.contains("moved it past its interval"));
        assert_eq!(warned, moved, "{s}\n{warnings:?}");
    }
    assert!(r.stdout.contains(&format!("{left_out} left out of the statistics")), "{}", r.stdout);
    for m in v["measurements"].as_array().unwrap() {
        assert!(m["machine"].is_object(), "every measurement says what the machine did: {m}");
    }
}

#[test]
fn a_median_moved_by_the_disturbed_runs_is_shown_both_ways() {
    // 45% of the runs disturbed (twice slower): leaving them out moves medians past
    // their intervals, and the warning gives both figures.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let r = ladder(dir.path(), &json, "--mock-timing cv=0.05,disturbed=0.45,seed=3 --precision 1% --max-runs 12");
    r.ok();
    let v = load_json(&json);
    let moved: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .filter(|w| w.contains("moved it past its interval"))
        .collect();
    assert!(!moved.is_empty(), "{:?}", v["warnings"]);
    for w in moved {
        assert!(w.contains(" without the ") && w.contains(" with them"), "{w}");
    }
}

#[test]
fn fixed_runs_keep_every_run_and_count_the_disturbed() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let r = ladder(dir.path(), &json, "--mock-timing cv=0.05,disturbed=0.3,seed=11 --runs 10");
    r.ok();
    let v = load_json(&json);
    assert!(v["experiment"].get("adaptive").is_none(), "--runs N is not adaptive");
    let mut disturbed = 0;
    for s in summaries(&v) {
        assert_eq!(s["n"].as_u64(), Some(10), "--runs 10 is exact: {s}");
        assert!(s.get("disturbed_s").is_none(), "{s}");
        disturbed += s["disturbed"].as_u64().unwrap();
    }
    assert!(disturbed >= 15, "{disturbed}");
    assert!(r.stdout.contains("(--runs N keeps every run)"), "{}", r.stdout);
}

#[test]
fn a_busy_neighbour_is_detected() {
    // Two spinning processes on a 2-core machine while real create/read/delete phases of
    // 30,000 empty files run (each well above the 50 ms needed to judge).
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let spinners: Vec<common::Spinner> = (0..cores).map(|_| common::Spinner::start()).collect();
    let mut a = words("ops --files 30000 --size 0 --runs 2 --threads 1 --quiet");
    a.extend([
        "--target".into(),
        dir.path().to_string_lossy().into_owned(),
        "--json".into(),
        json.to_string_lossy().into(),
    ]);
    let r = run(a);
    drop(spinners);
    r.ok();
    let v = load_json(&json);
    let ms = v["measurements"].as_array().unwrap();
    let disturbed = ms.iter().filter(|m| m["machine"]["disturbed"] == Value::Bool(true)).count();
    assert!(disturbed >= ms.len() / 2, "{disturbed} of {} measurements disturbed: {ms:?}", ms.len());
    assert!(r.stdout.contains("disturbed: "), "{}", r.stdout);
}

#[test]
fn bad_adaptive_settings_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().to_string_lossy().into_owned();
    for (args, flag) in [
        ("--precision 0", "--precision"),
        ("--precision abc", "--precision"),
        ("--precision 150%", "--precision"),
        ("--max-time 0", "--max-time"),
        ("--max-time soon", "--max-time"),
        ("--min-runs 5 --max-runs 4", "--max-runs"),
        ("--min-runs 0", "--min-runs"),
        ("--runs 3 --precision 5%", "--precision"),
        ("--mock-timing cv=x", "--mock-timing"),
    ] {
        let mut a = vec!["ladder".to_string(), "--target".into(), t.clone()];
        a.extend(words(args));
        assert_bad_input(&run(a), flag, args);
        assert!(run_dirs(dir.path()).is_empty(), "{args}: nothing created");
    }
}

/// Runs come in blocks of two, and three invocations pooled by `report --pool` keep
/// their blocks apart: the pooled cell has every run, every block, and an interval at
/// least as wide as the one that takes the runs as independent (issue 27).
#[test]
fn invocations_pool_as_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for seed in 1..=3 {
        let json = dir.path().join(format!("r{seed}.json"));
        ladder(dir.path(), &json, &format!("--mock-timing cv=0.05,seed={seed} --runs 6")).ok();
        let v = load_json(&json);
        for m in v["measurements"].as_array().unwrap() {
            let run = m["run"].as_u64().unwrap();
            assert_eq!(m["block"].as_u64(), Some((run - 1) / 2), "{m}");
        }
        for s in summaries(&v) {
            assert_eq!(s["blocks"].as_u64(), Some(3), "{s}");
            assert!(s["within_ci95_s"].is_array(), "{s}");
        }
        files.push(json);
    }
    let pooled = dir.path().join("pooled.json");
    let mut a = words("report --pool");
    a.extend(files.iter().map(|f| f.to_string_lossy().into_owned()));
    a.extend(["--json".into(), pooled.to_string_lossy().into_owned()]);
    run(a).ok();
    let v = load_json(&pooled);
    assert_eq!(v["targets"].as_array().unwrap().len(), 1, "one target, not three side by side");
    for s in summaries(&v) {
        assert_eq!(s["n"].as_u64(), Some(18), "{s}");
        assert_eq!(s["blocks"].as_u64(), Some(9), "{s}");
        let ci = s["median_ci95_s"].as_array().expect("an interval");
        let w = s["within_ci95_s"].as_array().unwrap();
        let f = |x: &Value| x.as_f64().unwrap();
        assert!(f(&ci[0]) <= f(&w[0]) && f(&ci[1]) >= f(&w[1]), "{s}");
    }
    // compare pools each side the same way.
    let r = run(vec![
        "compare".into(),
        files[0].to_string_lossy().into_owned(),
        files[1].to_string_lossy().into_owned(),
        "--pool-a".into(),
        files[2].to_string_lossy().into_owned(),
    ]);
    r.ok();
    assert!(r.stdout.contains("cells differ"), "{}", r.stdout);
    // Files of another experiment do not pool: one line naming the flag, exit 2.
    let mut other = load_json(&files[2]);
    other["experiment"]["name"] = Value::String("dirsize".into());
    let bad = dir.path().join("other.json");
    std::fs::write(&bad, serde_json::to_vec(&other).unwrap()).unwrap();
    for (flag, args) in [
        (
            "--pool",
            vec![
                "report".to_string(),
                "--pool".into(),
                files[0].to_string_lossy().into(),
                bad.to_string_lossy().into(),
                "--json".into(),
                dir.path().join("x.json").to_string_lossy().into(),
            ],
        ),
        (
            "--pool-b",
            vec![
                "compare".to_string(),
                files[0].to_string_lossy().into(),
                files[1].to_string_lossy().into(),
                "--pool-b".into(),
                bad.to_string_lossy().into(),
            ],
        ),
    ] {
        let r = run(args);
        assert_eq!(r.code, Some(2), "{flag}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains(flag) && r.stderr.contains("only invocations of one experiment"), "{}", r.stderr);
        assert!(!dir.path().join("x.json").exists());
    }
}

/// Issue 38, 15: one run pooled twice would count as two independent invocations and
/// narrow every interval falsely. `report --pool` and `compare --pool-a/-b` refuse the
/// same file twice, a byte copy of it, and the same run written out again (other
/// bytes, one invocation): exit 2, one line naming the flag, nothing
/// written. Two real invocations still pool.
#[test]
fn one_run_is_not_pooled_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    ladder(dir.path(), &a, "--mock-timing cv=0.05,seed=1 --runs 6").ok();
    ladder(dir.path(), &b, "--mock-timing cv=0.05,seed=2 --runs 6").ok();
    let copy = dir.path().join("copy.json");
    std::fs::copy(&a, &copy).unwrap();
    // The same run written out again (compact JSON): other bytes, one invocation.
    let again = dir.path().join("again.json");
    std::fs::write(&again, serde_json::to_vec(&load_json(&a)).unwrap()).unwrap();
    assert!(std::fs::read(&a).unwrap() != std::fs::read(&again).unwrap(), "written out again: other bytes");
    let out = dir.path().join("pooled.json");
    let p = |f: &Path| f.to_string_lossy().into_owned();
    for (twice, why) in [(&a, "the same file"), (&copy, "identical (a copy)"), (&again, "one invocation")] {
        let r = run(vec!["report".into(), "--pool".into(), p(&b), p(&a), p(twice), "--json".into(), p(&out)]);
        assert_bad_input(&r, "--pool", why);
        assert!(r.stderr.contains(why), "{why}: {}", r.stderr);
        assert!(!out.exists(), "{why}: nothing written");
        let r = run(vec!["compare".into(), p(&b), p(&a), "--pool-b".into(), p(twice)]);
        assert_bad_input(&r, "--pool-b", why);
    }
    run(vec!["report".into(), "--pool".into(), p(&a), p(&b), "--json".into(), p(&out)]).ok();
}
