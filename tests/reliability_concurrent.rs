//! Scenario 8, concurrent runs: two ladders on the same directory target, and two on
//! managed file systems at once while a third process runs `manyfiles cleanup`: separate
//! run directories and images, both complete, cleanup leaves live resources alone, and
//! nothing is left afterwards.

mod reliability_common;

use reliability_common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(180);

fn complete(json: &std::path::Path) -> usize {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(v["complete"], true, "{}", json.display());
    let ms = v["measurements"].as_array().unwrap();
    assert!(ms.iter().all(|m| m["errors"] == 0 && m["failed"].is_null()));
    ms.len()
}

#[test]
fn reliability_concurrent_same_dir_target() {
    let target = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let t = target.path().to_str().unwrap();
    let jsons = [out.path().join("a.json"), out.path().join("b.json")];
    let mut kids: Vec<_> = jsons
        .iter()
        .map(|j| {
            spawn_quiet(&[
                "ladder",
                "--target",
                t,
                "--total",
                "1M",
                "--to",
                "256",
                "--runs",
                "3",
                "-q",
                "--json",
                j.to_str().unwrap(),
            ])
        })
        .collect();
    let mut seen = BTreeSet::new();
    let t0 = Instant::now();
    while kids.iter_mut().any(|k| k.try_wait().unwrap().is_none()) && t0.elapsed() < LIMIT {
        seen.extend(run_dirs(target.path()));
        std::thread::sleep(Duration::from_millis(5));
    }
    for k in &mut kids {
        assert_eq!(wait_bounded(k, Duration::from_secs(1)), Some(0));
    }
    assert!(seen.len() >= 2, "two separate run directories: {seen:?}");
    assert_eq!(complete(&jsons[0]), complete(&jsons[1]));
    assert!(std::fs::read_dir(target.path()).unwrap().next().is_none(), "nothing left in the target");
}

#[test]
fn reliability_concurrent_managed_with_cleanup() {
    let Some(_one) = root_only("--fs needs root") else { return };
    let out = tempfile::tempdir().unwrap();
    let jsons = [out.path().join("a.json"), out.path().join("b.json")];
    let mut kids: Vec<_> = jsons
        .iter()
        .map(|j| {
            spawn_quiet(&[
                "ladder",
                "--fs",
                "ext4",
                "--total",
                "1M",
                "--to",
                "256",
                "--runs",
                "3",
                "-q",
                "--json",
                j.to_str().unwrap(),
            ])
        })
        .collect();
    let pids: Vec<u32> = kids.iter().map(|k| k.id()).collect();
    // Both mounted at once, then cleanup from a third process: it must leave them alone.
    let t0 = Instant::now();
    while pids.iter().any(|&p| leftovers_of(p).is_empty()) && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mine: Vec<Vec<String>> = pids.iter().map(|&p| leftovers_of(p)).collect();
    assert!(mine.iter().all(|m| !m.is_empty()), "both runs have their file systems: {mine:?}");
    assert!(mine[0].iter().all(|l| !mine[1].contains(l)), "separate images and mounts");
    let o = run_bounded(&["cleanup"], LIMIT, None);
    assert_eq!(o.code, Some(0), "{}", o.show());
    assert!(o.stdout.contains("left alone"), "{}", o.show());
    for k in &mut kids {
        assert_eq!(wait_bounded(k, LIMIT), Some(0), "a run disturbed by the other or by cleanup");
    }
    assert_eq!(complete(&jsons[0]), complete(&jsons[1]));
    for p in pids {
        assert_eq!(leftovers_of(p), Vec::<String>::new(), "run {p} left something");
    }
}
