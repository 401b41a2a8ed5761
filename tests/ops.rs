//! `manyfiles ops`: every op over one tree; counts, bytes, directories and portions.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

fn ops_json(target: &Path, json: &Path, extra: &str) -> (Run, Value) {
    let mut a = vec![
        "ops".to_string(),
        "--target".into(),
        target.to_string_lossy().into_owned(),
        "--json".into(),
        json.to_string_lossy().into_owned(),
        "--quiet".into(),
    ];
    a.extend(words(extra));
    let r = run(&a);
    r.ok();
    let v = load_json(json);
    (r, v)
}

#[test]
fn all_ops_count_files_bytes_and_dirs() {
    let target = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("o.json");
    // 2000 files / 100 per leaf = 20 leaves; fanout 4 needs depth 3:
    // 2 + 5 + 20 = 27 directories below the tree root.
    let (r, v) = ops_json(
        target.path(),
        &json,
        "--files 2000 --size 1k --files-per-dir 100 --fanout 4 --ops create,stat,list,read,delete --runs 2 --portion 500",
    );
    assert!(run_dirs(target.path()).is_empty(), "run dir left behind");
    assert_eq!(get(&v, "complete"), &Value::Bool(true));
    assert_eq!(s(get(&v, "experiment"), "name"), "ops");
    assert_eq!(u(get(&v, "experiment"), "portion_files"), 500);

    let ms = arr(&v, "measurements");
    assert_eq!(ms.len(), 5 * 2);
    let ops = ["create", "stat", "list", "read", "delete"];
    for (i, m) in ms.iter().enumerate() {
        let op = s(m, "op");
        let what = format!("{op} run {}", u(m, "run"));
        assert_eq!(op, ops[i % 5], "ops run in canonical order");
        assert_eq!(u(m, "run"), 1 + (i / 5) as u64);
        assert!(measurement_complete(m), "{what}: {m}");
        assert_eq!(u(m, "tree_files"), 2000);
        assert_eq!(u(m, "tree_bytes"), 2000 * 1024);
        assert_eq!(u(m, "tree_dirs"), 27, "{what}: tree_dirs");
        let (files, bytes, dirs) = (u(m, "files"), u(m, "bytes"), u(m, "dirs"));
        match op {
            "create" => {
                assert_eq!((files, bytes, dirs), (2000, 2000 * 1024, 27), "{what}: files, bytes, dirs made");
            }
            "stat" => {
                assert_eq!((files, bytes, dirs), (2000, 0, 27), "{what}: files and dirs stat'ed");
            }
            "list" => {
                // Since 54897e9: `files` = entries seen (every file and every
                // subdirectory once), `dirs` = directories listed (the root included).
                assert_eq!(dirs, 27 + 1, "{what}: directories listed");
                assert_eq!(files, 2000 + 27, "{what}: entries seen");
                assert_eq!(bytes, 0);
                assert_eq!(u(get(m, "latency_us"), "count"), 28, "{what}: one latency sample per directory");
            }
            "read" => {
                assert_eq!((files, bytes), (2000, 2000 * 1024), "{what}: files and bytes read");
            }
            "delete" => {
                assert_eq!((files, bytes, dirs), (2000, 0, 27), "{what}: files unlinked, dirs removed");
            }
            _ => unreachable!(),
        }
        if op != "list" {
            assert_eq!(u(get(m, "latency_us"), "count"), files, "{what}: latency samples");
        }
        let portions = arr(m, "portions");
        assert_eq!(portions.iter().map(|p| u(p, "files")).sum::<u64>(), files, "{what}: portions add up");
        // A write phase's flush to the device is its own last portion, with no files.
        let flush = m.get("flush_s").is_some();
        let with_files = if flush { &portions[..portions.len() - 1] } else { &portions[..] };
        if flush {
            assert_eq!(u(portions.last().unwrap(), "files"), 0, "{what}: the flush portion");
            assert_eq!(f(portions.last().unwrap(), "elapsed_s"), f(m, "flush_s"), "{what}: the flush portion");
        }
        let ends: Vec<u64> = with_files.iter().map(|p| u(p, "end_files")).collect();
        assert!(ends.windows(2).all(|w| w[0] < w[1]), "{what}: end_files increasing: {ends:?}");
        assert_eq!(*ends.last().unwrap(), files);
        if op != "list" {
            for k in [500, 1000, 1500, 2000] {
                assert!(ends.contains(&k), "{what}: --portion 500 must close a portion at {k}: {ends:?}");
            }
        }
    }

    // The detail table has a row per op for this tree.
    for op in ops {
        assert!(
            r.stdout.lines().any(|l| l.contains(op) && l.contains("n=2000 size=1KiB")),
            "no table row for {op}:\n{}",
            r.stdout
        );
    }
    let sums = arr(&v, "summaries");
    assert_eq!(sums.len(), 5);
    assert!(sums.iter().all(|x| u(x, "n") == 2));
    assert!(arr(&v, "models").is_empty(), "one tree: no cost model");
}

#[test]
fn subset_of_ops_warmup_and_order() {
    let target = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("o.json");
    // Asked in reverse order: run (and recorded) in the canonical order. create and
    // delete still run, untimed, so the tree exists and goes away.
    let (_, v) = ops_json(
        target.path(),
        &json,
        "--files 300 --size uniform:1-2k --flat --ops read,stat --runs 2 --warmup 1 --threads 2",
    );
    assert_eq!(get(get(&v, "experiment"), "ops"), &serde_json::json!(["stat", "read"]));
    assert_eq!(u(get(&v, "experiment"), "warmup"), 1);
    let ms = arr(&v, "measurements");
    let got: Vec<(String, u64)> = ms.iter().map(|m| (s(m, "op").to_string(), u(m, "run"))).collect();
    let want: Vec<(String, u64)> =
        [("stat", 1), ("read", 1), ("stat", 2), ("read", 2)].iter().map(|(o, r)| (o.to_string(), *r)).collect();
    assert_eq!(got, want, "warmup runs are not recorded");
    for m in ms {
        assert!(measurement_complete(m));
        assert_eq!(u(m, "files"), 300);
        if s(m, "op") == "read" {
            assert_eq!(u(m, "bytes"), u(m, "tree_bytes"), "read every byte of the uniform tree");
        }
    }
    assert!(run_dirs(target.path()).is_empty());
    assert_eq!(std::fs::read_dir(target.path()).unwrap().count(), 0);
}

#[test]
fn portions_cover_the_whole_phase() {
    // Regression: the time after the last file (syncfs with --fsync end, rmdirs in
    // delete) once fell in no portion when a portion closed exactly at the file count.
    let target = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("o.json");
    let (_, v) = ops_json(
        target.path(),
        &json,
        "--files 1000 --size 1k --files-per-dir 100 --fanout 4 --ops create,delete --runs 1 --portion 250 --fsync end",
    );
    for m in arr(&v, "measurements") {
        let elapsed = f(m, "elapsed_s");
        let sum: f64 = arr(m, "portions").iter().map(|p| f(p, "elapsed_s")).sum();
        assert!(
            (sum - elapsed).abs() <= 1e-9 + 1e-6 * elapsed,
            "{}: portions add up to {sum} s but the phase took {elapsed} s",
            s(m, "op")
        );
    }
}

#[test]
fn fsync_modes_and_write_options_are_recorded() {
    let target = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    for mode in ["file", "dir", "end"] {
        let json = out.path().join(format!("{mode}.json"));
        let (_, v) = ops_json(
            target.path(),
            &json,
            &format!(
                "--files 40 --size 5000 --files-per-dir 10 --fanout 2 --ops create,read --runs 1 --fsync {mode} --block-size 4k"
            ),
        );
        let c = get(get(&v, "experiment"), "create");
        assert_eq!(s(c, "fsync"), mode);
        assert_eq!(u(c, "block_size"), 4096);
        assert_eq!(get(c, "direct"), &Value::Bool(false));
        for m in arr(&v, "measurements") {
            assert!(measurement_complete(m), "--fsync {mode}: {m}");
            assert_eq!(u(m, "files"), 40);
            assert_eq!(u(m, "bytes"), 40 * 5000);
        }
        assert!(run_dirs(target.path()).is_empty());
    }
}
