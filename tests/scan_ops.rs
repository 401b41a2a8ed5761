//! scan and rescan as ops in an experiment over a generated tree.

mod common;

use common::{assert_bad_input, run};
use serde_json::Value;

#[test]
fn scan_and_rescan_ops_are_measured() {
    let t = tempfile::tempdir().unwrap();
    let json = t.path().join("r.json");
    let target = t.path().to_str().unwrap();
    run([
        "ops",
        "--target",
        target,
        "--files",
        "300",
        "--files-per-dir",
        "50",
        "--fanout",
        "3",
        "--size",
        "1k",
        "--ops",
        "scan,rescan",
        "--runs",
        "2",
        "--json",
        json.to_str().unwrap(),
        "-q",
    ])
    .ok();
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let ms = v["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), 4);
    for m in ms {
        assert!(m["op"] == "scan" || m["op"] == "rescan");
        // The tree's files plus nothing else: the index lives beside the tree, not in it.
        assert_eq!(m["files"], 300, "{m}");
        assert_eq!(m["bytes"], 300 * 1024);
        assert_eq!(m["errors"], 0);
        assert!(m["elapsed_s"].as_f64().unwrap() > 0.0);
    }
    assert!(common::run_dirs(t.path()).is_empty(), "run directory left behind");
}

#[test]
fn rescan_without_scan_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let r = run(["ops", "--target", t.path().to_str().unwrap(), "--files", "10", "--ops", "rescan"]);
    assert_bad_input(&r, "--ops", "rescan alone");
    assert!(common::run_dirs(t.path()).is_empty());
}

/// `walk` (the scan engine without an index) and `rm` (the rm engine, root included)
/// as ops: what `predict` calibrates with. Both count the tree exactly; rm leaves the
/// trial as delete does, and a copy before it still runs (pair ops run before rm).
#[test]
fn walk_and_rm_ops_run_the_engines() {
    let t = tempfile::tempdir().unwrap();
    let json = t.path().join("r.json");
    run([
        "ops",
        "--target",
        t.path().to_str().unwrap(),
        "--files",
        "300",
        "--files-per-dir",
        "50",
        "--fanout",
        "3",
        "--size",
        "1k",
        "--ops",
        "rm,copy,walk,create",
        "--runs",
        "2",
        "--json",
        json.to_str().unwrap(),
        "-q",
    ])
    .ok();
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let ms = v["measurements"].as_array().unwrap();
    let ops: Vec<&str> = ms.iter().filter(|m| m["run"] == 1).map(|m| m["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["create", "walk", "copy", "rm"], "{v:#}");
    let dirs = ms.iter().find(|m| m["op"] == "create").unwrap()["dirs"].clone();
    for m in ms {
        assert_eq!(m["errors"], 0, "{m}");
        assert_eq!(m["files"], 300, "{m}");
        if m["op"] == "rm" || m["op"] == "walk" {
            assert_eq!(m["dirs"], dirs, "the tree's directories, root not counted: {m}");
        }
        if m["op"] == "walk" {
            assert_eq!(m["bytes"], 300 * 1024, "{m}");
        }
    }
    assert!(common::run_dirs(t.path()).is_empty(), "run directory left behind");
    // Not together with delete, nor with reformat.
    let r = run(["ops", "--target", t.path().to_str().unwrap(), "--files", "10", "--ops", "create,rm,delete"]);
    assert_bad_input(&r, "--ops", "rm and delete");
}
