//! `manyfiles ladder`: a small ladder end to end — exit code, table, JSON results
//! (provenance, targets, measurements, summaries, models) and cleanup of the run dir.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

/// Rows of the first table on stdout: (files, file size as printed).
fn ladder_rows(stdout: &str) -> Vec<(u64, String)> {
    let mut rows = Vec::new();
    for line in stdout.lines() {
        if line.starts_with("fitted cost") {
            break;
        }
        let Some(inner) = line.strip_prefix('│') else {
            continue;
        };
        let w: Vec<&str> = inner.split_whitespace().collect();
        if w.len() >= 3 {
            if let Ok(n) = w[0].parse::<u64>() {
                rows.push((n, format!("{} {}", w[1], w[2])));
            }
        }
    }
    rows
}

fn ladder_args(target: &Path, json: &Path, extra: &str) -> Vec<String> {
    let mut a = vec![
        "ladder".to_string(),
        "--target".into(),
        target.to_string_lossy().into_owned(),
        "--json".into(),
        json.to_string_lossy().into_owned(),
        "--quiet".into(),
    ];
    a.extend(words(extra));
    a
}

fn check_provenance(v: &Value) {
    let p = get(v, "provenance");
    assert_eq!(s(p, "tool"), "manyfiles");
    assert_eq!(s(p, "version"), env!("CARGO_PKG_VERSION"));
    // The same build origin --version prints (commit and date, or "not from git").
    let version = run(["--version"]).stdout;
    assert_eq!(Some(s(p, "built_from")), version.trim().split_once(", built from ").map(|x| x.1), "{version}");
    let cl = arr(p, "command_line");
    assert!(cl.iter().any(|a| a == "ladder" || a == "ops"), "command_line {cl:?}");
    let started = s(p, "started_utc");
    assert!(started.len() >= 20 && started.ends_with('Z') && started.starts_with("20"), "started_utc {started}");
    for k in ["host", "kernel", "cpu_model"] {
        assert!(!s(p, k).trim().is_empty(), "provenance.{k} empty");
    }
    assert!(u(p, "cores") >= 1);
    assert!(u(p, "memory_bytes") > 0);
    assert!(u(p, "ranks") >= 1);
}

fn check_target(v: &Value, target: &Path) -> String {
    let targets = arr(v, "targets");
    assert_eq!(targets.len(), 1);
    let t = &targets[0];
    let canon = std::fs::canonicalize(target).unwrap();
    assert_eq!(Path::new(s(t, "path")), canon.as_path(), "targets[0].path must be the canonical target");
    assert_eq!(s(t, "kind"), "dir");
    assert!(!s(t, "fs_type").is_empty());
    assert!(!s(t, "mount_point").is_empty());
    assert!(
        canon.starts_with(s(t, "mount_point")),
        "mount point {} does not hold {}",
        s(t, "mount_point"),
        canon.display()
    );
    assert!(u(t, "block_size") >= 512);
    assert!(u(t, "free_bytes") > 0);
    assert!(u(t, "total_bytes") >= u(t, "free_bytes"));
    assert_eq!(get(t, "read_only"), &Value::Bool(false));
    s(t, "id").to_string()
}

/// Raw-figure checks every complete measurement must pass.
fn check_measurement(m: &Value, target_id: &str) {
    let op = s(m, "op");
    let what = format!("{op} {} run {}", s(m, "tree_key"), u(m, "run"));
    assert!(measurement_complete(m), "{what}: not complete: {m}");
    assert_eq!(s(m, "target"), target_id);
    assert_eq!(u(m, "tree_files"), u(get(m, "tree"), "files"), "{what}");
    let files = u(m, "files");
    if op != "list" {
        assert_eq!(files, u(m, "tree_files"), "{what}: files");
        assert_eq!(u(get(m, "latency_us"), "count"), files, "{what}: one latency sample per file");
    }
    match op {
        "create" | "read" => assert_eq!(u(m, "bytes"), u(m, "tree_bytes"), "{what}: bytes"),
        _ => assert_eq!(u(m, "bytes"), 0, "{what}: bytes"),
    }
    let elapsed = f(m, "elapsed_s");
    assert!(elapsed > 0.0 && elapsed < 600.0, "{what}: elapsed_s {elapsed}");
    let portions = arr(m, "portions");
    assert!(!portions.is_empty(), "{what}: no portions");
    assert_eq!(portions.iter().map(|p| u(p, "files")).sum::<u64>(), files, "{what}: portions' files");
    let mut last = 0;
    let n = portions.len();
    for (i, p) in portions.iter().enumerate() {
        // A write phase's flush to the device is its own last portion, with no files.
        let flush = i == n - 1 && m.get("flush_s").is_some_and(|x| x.as_f64() == Some(f(p, "elapsed_s")));
        assert!(
            u(p, "end_files") > last || (files == 0 && u(p, "end_files") == 0) || (flush && u(p, "files") == 0),
            "{what}: end_files not increasing"
        );
        assert_eq!(u(p, "end_files"), last + u(p, "files"), "{what}: end_files is a running total");
        last = u(p, "end_files");
        assert!(f(p, "elapsed_s") >= 0.0);
    }
    assert_eq!(last, files, "{what}: last portion ends at the file count");
    let lat = get(m, "latency_us");
    let (p50, p90, p99, max) = (f(lat, "p50"), f(lat, "p90"), f(lat, "p99"), f(lat, "max"));
    assert!(0.0 < p50 && p50 <= p90 && p90 <= p99 && p99 <= max, "{what}: latency {lat}");
    assert!(max <= elapsed * 1e6 * 1.01 + 1.0, "{what}: one file slower than the phase: {max} µs vs {elapsed} s");
    let (ff, lf) = (f(m, "first_finish_s"), f(m, "last_finish_s"));
    assert!(0.0 <= ff && ff <= lf && lf <= elapsed + 1e-9, "{what}: finishes {ff} {lf} vs {elapsed}");
    assert!(u(m, "threads") >= 1);
    assert!(f(m, "cpu_user_s") >= 0.0 && f(m, "cpu_sys_s") >= 0.0);
}

#[test]
fn small_ladder_end_to_end() {
    let target = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let r = run(ladder_args(target.path(), &json, "--total 1MiB --from 1 --to 256 --runs 2 --second-total off"));
    r.ok();

    // Table: one row per rung, the file size = total / files.
    let rows = ladder_rows(&r.stdout);
    assert_eq!(
        rows,
        vec![
            (1, "1 MiB".to_string()),
            (4, "256 KiB".to_string()),
            (16, "64 KiB".to_string()),
            (64, "16 KiB".to_string()),
            (256, "4 KiB".to_string())
        ],
        "table rows in:\n{}",
        r.stdout
    );
    assert!(r.stdout.contains("per file"), "fitted-cost table missing:\n{}", r.stdout);
    for op in ["create", "read", "delete"] {
        assert!(
            r.stdout.lines().any(|l| l.trim_start_matches('│').split_whitespace().next() == Some(op)),
            "no model row for {op}:\n{}",
            r.stdout
        );
    }

    // Nothing left in the target.
    assert!(run_dirs(target.path()).is_empty(), "run dir left behind");
    assert_eq!(std::fs::read_dir(target.path()).unwrap().count(), 0, "target must be empty again");

    let v = load_json(&json);
    assert_eq!(u(&v, "schema"), 1);
    assert_eq!(get(&v, "complete"), &Value::Bool(true));
    check_provenance(&v);
    let tid = check_target(&v, target.path());

    let e = get(&v, "experiment");
    assert_eq!(s(e, "name"), "ladder");
    assert_eq!(get(e, "ops"), &serde_json::json!(["create", "read", "delete"]));
    assert_eq!(u(e, "runs"), 2);
    assert_eq!(u(e, "warmup"), 0);
    assert_eq!(s(e, "order"), "interleaved");
    assert_eq!(u(e, "portion_files"), 10000);

    let ms = arr(&v, "measurements");
    assert_eq!(ms.len(), 5 * 3 * 2, "5 rungs × 3 ops × 2 runs");
    let rungs = [1u64, 4, 16, 64, 256];
    for pass in ms.chunks(15) {
        let mut seen: Vec<u64> = pass.iter().map(|m| u(m, "tree_files")).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen, rungs, "every rung once per pass");
    }
    for (i, m) in ms.iter().enumerate() {
        check_measurement(m, &tid);
        assert_eq!(u(m, "order"), i as u64, "order is the position in the experiment");
        // Interleaved: all of run 1 (every rung once, in a shuffled order, op by op),
        // then run 2; runs 1 and 2 are block 0.
        let run = 1 + i / 15;
        let op = ["create", "read", "delete"][i % 3];
        assert_eq!(u(m, "run"), run as u64, "measurement {i}");
        assert_eq!(u(m, "block"), 0, "measurement {i}");
        let rung = u(m, "tree_files");
        assert!(rungs.contains(&rung), "measurement {i}");
        assert_eq!(u(m, "tree_files"), u(&ms[i - i % 3], "tree_files"), "a trial's ops on one tree");
        assert_eq!(s(m, "op"), op, "measurement {i}");
        assert_eq!(u(m, "tree_bytes"), (1 << 20) / rung * rung);
        assert_eq!(u(m, "tree_dirs"), 0, "≤ 1000 files sit in the tree root");
        assert_eq!(s(m, "experiment"), "ladder");
    }

    let sums = arr(&v, "summaries");
    assert_eq!(sums.len(), 15, "one summary per rung and op");
    for sm in sums {
        assert_eq!(u(sm, "n"), 2);
        let raw: Vec<f64> = arr(sm, "raw_s").iter().map(|x| x.as_f64().unwrap()).collect();
        assert_eq!(raw.len(), 2);
        // raw_s are the elapsed times of the matching measurements, in run order.
        let mine: Vec<f64> = ms
            .iter()
            .filter(|m| s(m, "op") == s(sm, "op") && s(m, "tree_key") == s(sm, "tree_key"))
            .map(|m| f(m, "elapsed_s"))
            .collect();
        assert_eq!(raw, mine, "raw_s of {} {}", s(sm, "op"), s(sm, "tree_key"));
        let mean = f(sm, "mean_s");
        assert!((mean - (raw[0] + raw[1]) / 2.0).abs() <= 1e-12 * mean.max(1.0), "mean of {raw:?}: {mean}");
        let ci = arr(sm, "ci95_s");
        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        assert!(lo <= mean && mean <= hi, "ci95 [{lo}, {hi}] must contain the mean {mean}");
        assert!(f(sm, "min_s") <= f(sm, "median_s") && f(sm, "median_s") <= f(sm, "max_s"));
        assert!(f(sm, "stddev_s") >= 0.0);
        assert!(u(sm, "tree_files") >= 1);
    }

    let models = arr(&v, "models");
    let mut ops: Vec<&str> = models.iter().map(|m| s(m, "op")).collect();
    ops.sort();
    assert_eq!(ops, vec!["create", "delete", "read"], "one model per op");
    for m in models {
        assert_eq!(u(m, "n"), 10, "5 rungs × 2 runs");
        assert_eq!(get(m, "files_range"), &serde_json::json!([1, 256]));
        assert!(f(m, "per_file_s") >= 0.0 && f(m, "per_byte_s") >= 0.0);
        assert!(f(m, "per_file_se") >= 0.0 && f(m, "per_byte_se") >= 0.0);
        assert!(f(m, "r2").is_finite());
        assert_eq!(s(m, "weighting"), "fitted");
        assert_eq!(s(m, "target"), tid);
    }
    assert!(get(&v, "warnings").is_array());
}

#[test]
fn keep_leaves_the_marked_run_dir() {
    let target = tempfile::tempdir().unwrap();
    let r = run([
        "ladder",
        "--target",
        target.path().to_str().unwrap(),
        "--total",
        "64k",
        "--from",
        "1",
        "--to",
        "16",
        "--runs",
        "1",
        "--keep",
        "--quiet",
    ]);
    r.ok();
    let dirs = run_dirs(target.path());
    assert_eq!(dirs.len(), 1, "--keep must leave exactly one run dir");
    assert!(dirs[0].is_dir());
    assert!(dirs[0].join(MARKER).is_file(), "kept run dir holds its marker");
    assert!(
        r.stderr.contains(dirs[0].file_name().unwrap().to_str().unwrap()),
        "stderr names the kept dir:\n{}",
        r.stderr
    );

    // Without --keep a second run in the same target removes its own dir, and only it.
    run([
        "ladder",
        "--target",
        target.path().to_str().unwrap(),
        "--total",
        "64k",
        "--to",
        "4",
        "--runs",
        "1",
        "--quiet",
    ])
    .ok();
    assert_eq!(run_dirs(target.path()), dirs, "only the kept dir remains");
}

#[test]
fn rungs_follow_from_to_step_and_round_sizes_down() {
    let target = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let r = run(ladder_args(
        target.path(),
        &json,
        "--total 1000 --from 3 --to 30 --step 3 --runs 1 --ops create --flat --threads 1",
    ));
    r.ok();
    let v = load_json(&json);
    let ms = arr(&v, "measurements");
    // The trials of a pass run in a shuffled order: the rungs, sorted.
    let mut cells: Vec<(u64, u64)> = ms.iter().map(|m| (u(m, "tree_files"), u(m, "tree_bytes"))).collect();
    cells.sort_unstable();
    // Rungs 3, 9, 27 (81 > --to 30) of 1000 bytes; side rungs of a quarter (250 bytes) at
    // the first and the middle count, sizes rounded down alike.
    assert_eq!(cells, vec![(3, 249), (3, 999), (9, 243), (9, 999), (27, 999)]);
    let side: Vec<String> = get(&v, "experiment")["side_trees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    assert_eq!(side.len(), 2, "{side:?}");
    for m in ms {
        assert_eq!(u(m, "bytes"), u(m, "tree_bytes"));
        assert_eq!(s(m, "op"), "create");
        assert_eq!(u(m, "threads"), 1, "--threads 1");
        assert_eq!(s(get(get(m, "tree"), "layout"), "kind"), "flat");
    }
    assert_eq!(get(&v, "experiment").get("ops").unwrap(), &serde_json::json!(["create"]));
    let rows: Vec<u64> = ladder_rows(&r.stdout).into_iter().map(|(n, _)| n).collect();
    assert_eq!(rows, vec![3, 9, 27, 3, 9], "the side rungs last");
    assert!(
        r.stdout.contains("(+ side rungs)") && r.stdout.contains("last rows: side rungs (249 B in 3 and 9 files)"),
        "{}",
        r.stdout
    );
    assert!(run_dirs(target.path()).is_empty());
}

#[test]
fn json_is_rewritten_and_matches_stdout_path() {
    // The results line names the JSON file; the file parses and is complete.
    let target = tempfile::tempdir().unwrap();
    let json = target.path().join("inside-target.json");
    let r = run(ladder_args(target.path(), &json, "--total 16k --to 4 --runs 1 --second-total off"));
    r.ok();
    assert!(r.stdout.contains(&json.to_string_lossy().into_owned()), "stdout names the results file:\n{}", r.stdout);
    let v = load_json(&json);
    assert_eq!(get(&v, "complete"), &Value::Bool(true));
    assert_eq!(arr(&v, "measurements").len(), 2 * 3);
    // No temp files of the atomic writer are left next to it.
    let names: Vec<String> = std::fs::read_dir(target.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["inside-target.json".to_string()], "leftovers in the target: {names:?}");
}

#[test]
fn leaves_other_content_of_the_target_alone() {
    let target = tempfile::tempdir().unwrap();
    let t = target.path();
    std::fs::write(t.join("precious.txt"), b"mine").unwrap();
    std::fs::create_dir_all(t.join("manyfiles-run-not-ours/sub")).unwrap();
    std::fs::write(t.join("manyfiles-run-not-ours/sub/f"), b"also mine").unwrap();
    let before = snapshot(t);
    run(["ladder", "--target", t.to_str().unwrap(), "--total", "16k", "--to", "4", "--runs", "1", "--quiet"]).ok();
    assert_eq!(snapshot(t), before, "the target's other content must be untouched");
}

#[test]
fn symlinked_target_is_accepted() {
    // Regression: a --target that is a symlink to a directory was once refused. The
    // target (unlike paths below the run dir) is the user's own path, canonicalized.
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let json = tmp.path().join("r.json");
    let r = run(ladder_args(&link, &json, "--total 16k --to 4 --runs 1 --second-total off"));
    r.ok();
    let v = load_json(&json);
    assert_eq!(Path::new(s(&arr(&v, "targets")[0], "path")), std::fs::canonicalize(&real).unwrap().as_path());
    assert!(run_dirs(&real).is_empty());
    assert!(link.is_symlink(), "the symlink itself is left alone");
}

/// Without --threads a ladder's copy runs as `manyfiles copy` does (two threads a core on
/// local storage), so a model of it predicts that command; with --threads N on N. The
/// footer says what each op ran on.
#[test]
fn copy_ops_run_as_the_copy_command_unless_threads_given() {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap();
    for (extra, want) in [("", 2 * cores), (" --threads 1", 1)] {
        let target = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let json = out.path().join("r.json");
        let args = format!("--total 64KiB --from 16 --to 16 --runs 1 --ops create,copy --second-total off{extra}");
        let r = run(ladder_args(target.path(), &json, &args));
        r.ok();
        let v = load_json(&json);
        let copies: Vec<u64> =
            arr(&v, "measurements").iter().filter(|m| s(m, "op") == "copy").map(|m| u(m, "threads")).collect();
        assert_eq!(copies, vec![want as u64], "{extra}");
        // The footer names the ops that ran on other than the experiment's threads.
        let base = u(get(&v, "experiment"), "threads");
        let others: Vec<String> = arr(&v, "measurements")
            .iter()
            .filter(|m| u(m, "threads") != base)
            .map(|m| format!("{} {}", s(m, "op"), u(m, "threads")))
            .collect();
        let threads = if base == 1 { "1 thread".to_string() } else { format!("{base} threads") };
        let text = match others.is_empty() {
            true => format!("· {threads}, order"),
            false => format!("· {threads} ({}), order", others.join(", ")),
        };
        let footer = r.stdout.lines().find(|l| l.starts_with("runs:")).unwrap_or_default().to_string();
        assert!(footer.contains(&text), "{footer} (want {text})");
    }
}
