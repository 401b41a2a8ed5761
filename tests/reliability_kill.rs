//! Scenario 1, kill -9 at random points (24 trials): ladder on a managed file system (6)
//! and on a directory (4), copy (5), sync (5), scan (4). Afterwards `manyfiles cleanup`
//! leaves no mount, loop device, image or run directory of the killed run; a results
//! JSON left behind parses and holds only complete measurements; no file sits under a
//! final name with partial content; a sync re-run completes and DST equals SRC; a scan
//! re-run completes with the whole tree. Delays come from a fixed seed (printed).

mod reliability_common;

use reliability_common::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(120);

/// A results file left by a killed run: absent, or whole JSON whose every measurement
/// is complete (the file is rewritten atomically after each measurement).
fn check_results(json: &Path, what: &str, pid: u32) -> usize {
    let Ok(text) = std::fs::read_to_string(json) else { return 0 };
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: results JSON does not parse: {e}"));
    let list = v["measurements"].as_array().unwrap_or_else(|| panic!("{what}: no measurements array"));
    for m in list {
        assert_eq!(m["errors"], 0, "{what}: {m}");
        assert_eq!(m["interrupted"], false, "{what}: {m}");
        assert!(m["failed"].is_null(), "{what}: {m}");
        assert_eq!(m["files"], m["tree_files"], "{what}: a saved measurement did all its files: {m}");
    }
    // Nothing else beside it but, at most, the atomic writer's hidden temporary of the
    // killed process (kill -9 gives it no chance to remove it; see RELIABILITY.md).
    let dir = json.parent().unwrap();
    let own_tmp = format!(".r.json.tmp-{pid}");
    let stray: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "r.json" && *n != own_tmp)
        .collect();
    assert!(stray.is_empty(), "{what}: stray files beside the results: {stray:?}");
    list.len()
}

fn cleanup(what: &str) {
    let o = run_bounded(&["cleanup"], LIMIT, None);
    assert_eq!(o.code, Some(0), "{what}: cleanup\n{}", o.show());
}

#[test]
fn reliability_kill_ladder_managed_and_dir() {
    let Some(_one) = root_only("kill -9 trials with --fs and the registry need root") else { return };
    let mut r = Rng(0x5eed_0001);
    let mut kept = 0;
    for trial in 0..10 {
        let managed = trial < 6;
        let target = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let json = out.path().join("r.json");
        let where_: Vec<String> = if managed {
            vec!["--fs".into(), "ext4".into()]
        } else {
            vec!["--target".into(), target.path().display().to_string()]
        };
        let mut args: Vec<String> = vec!["ladder".into()];
        args.extend(where_);
        args.extend(["--total", "2M", "--to", "1024", "--runs", "100", "--quiet", "--json"].map(String::from));
        args.push(json.display().to_string());
        let mut child = spawn_quiet(&args);
        let pid = child.id();
        // Wait until the run has made something (mount / run directory), then a random delay.
        let t0 = Instant::now();
        while t0.elapsed() < ms(30_000) {
            let made = if managed { !leftovers_of(pid).is_empty() } else { !run_dirs(target.path()).is_empty() };
            if made || child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(ms(10));
        }
        let delay = r.below(2500);
        std::thread::sleep(ms(delay));
        let what = format!("ladder trial {trial} ({}), kill -9 after {delay} ms", if managed { "ext4" } else { "dir" });
        assert!(child.try_wait().unwrap().is_none(), "{what}: finished before the kill");
        child.kill().unwrap();
        child.wait().unwrap();
        kept += check_results(&json, &what, pid);
        cleanup(&what);
        assert_eq!(leftovers_of(pid), Vec::<String>::new(), "{what}: cleanup left mounts/loops/images");
        assert!(run_dirs(target.path()).is_empty(), "{what}: cleanup left the run directory");
        let rec = std::fs::read_dir("/run/manyfiles")
            .map(|rd| rd.flatten().filter(|e| e.file_name().to_string_lossy().contains(&format!("-{pid}-"))).count())
            .unwrap_or(0);
        assert_eq!(rec, 0, "{what}: registry records (or their temporaries) of the dead run remain");
    }
    eprintln!("ladder kill trials: 10, complete measurements kept in total: {kept}");
}

/// Copy or sync trials: kill -9 at a random point, check no partial file under a final
/// name and SRC untouched, then a sync re-run makes DST equal SRC.
fn copy_trials(mode: &str, seed: u64, trials: usize) {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    source_tree(&src, 10, 500);
    let before = snapshot(&src, &[]);
    let mut r = Rng(seed);
    let dst = t.path().join("dst");
    for trial in 0..trials {
        if mode == "copy" {
            let _ = std::fs::remove_dir_all(&dst); // copy wants a new or empty DST
        }
        let mut child = spawn_quiet(&[mode.as_ref(), src.as_os_str(), dst.as_os_str(), "-q".as_ref()]);
        let delay = 10 + r.below(600);
        std::thread::sleep(ms(delay));
        let what = format!("{mode} trial {trial}, kill -9 after {delay} ms");
        let finished = child.try_wait().unwrap().is_some();
        child.kill().unwrap();
        child.wait().unwrap();
        // Sync writes beside the final name and renames; copy into a fresh DST writes in
        // place by design (its mtime is set last, so a re-run sees a partial file as
        // changed): check no partial file under a final name for sync only.
        let tmp = if mode == "sync" { no_partial_files(&before, &dst) } else { 0 };
        assert_same(&snapshot(&src, &[]), &before, &format!("{what}: SRC untouched"));
        let o = run_bounded(&["sync".as_ref(), src.as_os_str(), dst.as_os_str(), "-q".as_ref()], LIMIT, None);
        assert_eq!(o.code, Some(0), "{what}: sync re-run\n{}", o.show());
        assert_same(&snapshot(&dst, &[]), &before, &format!("{what}: DST equals SRC after the re-run"));
        eprintln!("{what}: finished first: {finished}, temp files left by the kill: {tmp}");
        if mode == "sync" {
            // Next trial resumes from a partly synced DST: remove a random third of it.
            for d in 0..10 {
                if r.below(3) == 0 {
                    std::fs::remove_dir_all(dst.join(format!("d{d:03}"))).unwrap();
                }
            }
        }
    }
}

#[test]
fn reliability_kill_copy() {
    copy_trials("copy", 0x5eed_0002, 5);
}

#[test]
fn reliability_kill_sync() {
    copy_trials("sync", 0x5eed_0003, 5);
}

#[test]
fn reliability_kill_scan() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    source_tree(&src, 10, 500);
    let before = snapshot(&src, &[]);
    let files = before.values().filter(|v| v.0 == manyfiles::fs::walk::Kind::File).count() as u64;
    let db = format!("sqlite:{}", t.path().join("idx.sqlite").display());
    let mut r = Rng(0x5eed_0004);
    for trial in 0..4 {
        let mut child = spawn_quiet(&["scan".as_ref(), src.as_os_str(), "--db".as_ref(), db.as_ref()]);
        let delay = r.below(150);
        std::thread::sleep(ms(delay));
        let what = format!("scan trial {trial}, kill -9 after {delay} ms");
        child.kill().unwrap();
        child.wait().unwrap();
        let json = t.path().join("scan.json");
        let rescan = || {
            let args =
                ["scan".as_ref(), src.as_os_str(), "--db".as_ref(), db.as_ref(), "--json".as_ref(), json.as_os_str()];
            let o = run_bounded(&args, LIMIT, None);
            assert_eq!(o.code, Some(0), "{what}: scan re-run\n{}", o.show());
            serde_json::from_str::<Value>(&std::fs::read_to_string(&json).unwrap()).unwrap()
        };
        let v = rescan();
        assert_eq!(v["files"].as_u64(), Some(files), "{what}: the re-run saw the whole tree");
        assert_eq!(v["errors"], 0, "{what}");
        assert_same(&snapshot(&src, &[]), &before, &format!("{what}: scan wrote nothing into the tree"));
        // The index now holds every entry: one more rescan finds nothing new or deleted.
        let v = rescan();
        let d = &v["diff"];
        assert_eq!((d["new"].as_u64(), d["deleted"].as_u64()), (Some(0), Some(0)), "{what}: index complete: {d}");
    }
}
