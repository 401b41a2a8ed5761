//! The `reformat` op: delete and re-format side by side on managed file systems, the
//! "formatting is faster than deleting above N files" detection, and its refusals.
//! Needs root for the file systems (CI runs as root); otherwise the live test prints
//! "skipped: needs root" and passes (the refusals run everywhere).

mod common;

use common::*;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn delete_and_reformat_side_by_side() {
    if !is_root() {
        println!("skipped: needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let r = run(words(&format!(
        "ladder --fs ext4@ram,xfs@ram --ops create,delete,reformat --total 1M --second-total off --from 16 --to 4096 --runs 2 --quiet --json {}",
        json.display()
    )));
    r.ok();
    let v = load_json(&json);
    let ms = v["measurements"].as_array().unwrap();
    let of = |op: &str| ms.iter().filter(|m| m["op"] == op).collect::<Vec<_>>();
    // 2 targets × 5 rungs (16, 64, 256, 1024, 4096) and the 2 flat side rungs that resolve
    // the directory-size cost (the rungs' folders hold ~1,000 files from 1,024 up) × 2 runs.
    let (creates, deletes, reformats) = (of("create"), of("delete"), of("reformat"));
    let sides = v["experiment"]["side_trees"].as_array().map_or(0, |s| s.len());
    assert_eq!(sides, 2, "the flat side rungs: {}", v["experiment"]);
    assert_eq!(creates.len(), 2 * (5 + sides) * 2);
    assert_eq!(deletes.len(), creates.len());
    assert_eq!(reformats.len(), creates.len());
    for m in &reformats {
        assert!(m["elapsed_s"].as_f64().unwrap() > 0.0, "{m}");
        assert_eq!(m["files"], m["tree_files"], "a reformat removes the tree's files: {m}");
        assert!(m["failed"].is_null(), "{m}");
    }
    // One format per trial: the reformat takes the place of the next trial's fresh format.
    for t in v["targets"].as_array().unwrap() {
        let formats = t["managed"]["formats"].as_u64().unwrap();
        assert_eq!(formats, 1 + (5 + sides as u64) * 2, "{t}");
    }
    // The table has a reformat column; the detection compares delete and reformat per target.
    assert!(r.stdout.contains("reformat"), "{}", r.stdout);
    let detections = v["detections"].as_array().unwrap();
    for d in detections.iter().filter(|d| d["op"].as_str().is_some_and(|o| o.starts_with("emptying "))) {
        let pair = [d["faster_below"].as_str().unwrap(), d["faster_above"].as_str().unwrap()];
        assert!(pair.contains(&"delete") && pair.contains(&"reformat"), "{d}");
    }
    // Nothing left mounted.
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    for t in v["targets"].as_array().unwrap() {
        let mp = t["path"].as_str().unwrap();
        assert!(!mounts.contains(mp), "{mp} still mounted");
    }
}

#[test]
fn reformat_is_refused_where_it_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().to_string_lossy().into_owned();
    let r = run(["ladder", "--target", t.as_str(), "--ops", "create,reformat", "--runs", "1"]);
    assert_bad_input(&r, "--ops", "reformat on a plain directory");
    assert!(run_dirs(dir.path()).is_empty());
    let r = run(["ladder", "--fs", "ext4", "--reuse", "--ops", "create,reformat", "--runs", "1"]);
    assert_bad_input(&r, "--reuse", "reformat with --reuse");
    let r = run(["ladder", "--target", t.as_str(), "--ops", "reformatt"]);
    assert_bad_input(&r, "--ops", "misspelt");
}
