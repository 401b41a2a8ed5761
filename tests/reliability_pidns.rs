//! Scenario: runs in another PID namespace (`unshare -p -f --mount-proc`) and `cleanup`
//! from outside. The registry records the namespace-local pid, which means nothing (or
//! another process) outside; a live run holds an flock on `<key>.lock` instead, which the
//! kernel releases when it dies, in whatever namespace. Cleanup must leave a live run's
//! image, loop device and record alone, and must still clean a killed one.
//!
//! The image goes to a fresh directory (`ext4@disk:DIR`), so every leftover of the run is
//! found by that directory: the image, a loop device backed by it, a record naming it.

mod reliability_common;

use reliability_common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(180);

fn unshare_available() -> bool {
    let ok = Command::new("unshare")
        .args(["-p", "-f", "--mount-proc", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI: unshare -p -f --mount-proc must work (root)");
        eprintln!("skipped: unshare -p -f --mount-proc does not work here");
    }
    ok
}

/// `manyfiles ARGS` as pid 1 of a new PID (and mount) namespace; SIGKILL to it when
/// `unshare` dies (`--kill-child`).
fn spawn_in_pidns(args: &[String]) -> Child {
    Command::new("unshare")
        .args(["-p", "-f", "--mount-proc", "--kill-child=SIGKILL"])
        .arg(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Registry records (`/run/manyfiles/*.json`) naming an image in `dir`, and the lock
/// files beside them.
fn records_in(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/run/manyfiles").into_iter().flatten().flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&p) else { continue };
        let Ok(v) = serde_json::from_str::<Value>(&text) else { continue };
        if v["image"].as_str().is_some_and(|i| Path::new(i).starts_with(dir)) {
            out.push(p.with_extension("lock"));
            out.push(p);
        }
    }
    out.retain(|p| p.exists());
    out
}

/// Images in `dir`, and loop devices backed by files in it.
fn images_and_loops(dir: &Path) -> (Vec<String>, Vec<String>) {
    let images: Vec<String> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path().display().to_string()).collect();
    let o = Command::new("losetup").arg("-a").output().unwrap();
    let d = dir.display().to_string();
    let loops = String::from_utf8_lossy(&o.stdout).lines().filter(|l| l.contains(&d)).map(String::from).collect();
    (images, loops)
}

fn ladder_args(backing: &Path, json: &Path, runs: &str) -> Vec<String> {
    let spec = format!("ext4@disk:{}", backing.display());
    ["ladder", "--fs", &spec, "--total", "1M", "--to", "256", "--runs", runs, "-q", "--json"]
        .iter()
        .map(|s| s.to_string())
        .chain([json.display().to_string()])
        .collect()
}

/// Wait until the run inside the namespace has its image, loop device and record.
fn wait_registered(child: &mut Child, backing: &Path) {
    let t0 = Instant::now();
    loop {
        let (imgs, loops) = images_and_loops(backing);
        if !imgs.is_empty()
            && !loops.is_empty()
            && records_in(backing).iter().any(|r| r.extension().is_some_and(|x| x == "json"))
        {
            return;
        }
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it was registered");
        assert!(t0.elapsed() < Duration::from_secs(60), "no image/loop/record after 60 s");
        std::thread::sleep(ms(10));
    }
}

/// Something of the run is gone: either the run itself is tearing down at its end (then
/// it exits within moments) or cleanup took a live run's part (then it goes on, or fails
/// later). True if the run exits within 20 s.
fn ends_soon(child: &mut Child) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn reliability_pidns_cleanup_leaves_live_run_alone() {
    let Some(_one) = root_only("unshare -p and the registry need root") else { return };
    if !unshare_available() {
        return;
    }
    let mut cleanups = 0;
    for trial in 0..3 {
        let backing = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let json = out.path().join("r.json");
        let mut child = spawn_in_pidns(&ladder_args(backing.path(), &json, "3"));
        wait_registered(&mut child, backing.path());
        // Cleanup from outside, again and again, while the run lives: each leaves it alone.
        while child.try_wait().unwrap().is_none() {
            let (imgs, loops) = images_and_loops(backing.path());
            let recs = records_in(backing.path());
            let o = run_bounded(&["cleanup"], LIMIT, None);
            cleanups += 1;
            assert_eq!(o.code, Some(0), "trial {trial}: cleanup\n{}", o.show());
            assert!(o.stdout.contains("left alone"), "trial {trial}: {}", o.show());
            if child.try_wait().unwrap().is_some() {
                break; // it ended (and tore down) meanwhile: what it had may be gone
            }
            // Whatever existed before this cleanup and still belongs to the live run:
            // cleanup did not remove it (the run reformats, so the image may be new).
            let (imgs2, loops2) = images_and_loops(backing.path());
            for i in &imgs {
                if !imgs2.contains(i) {
                    assert!(ends_soon(&mut child), "trial {trial}: image {i} removed while the run lives on");
                }
            }
            // The run's teardown detaches the loop device before it deletes the image, so
            // a listing can catch the image without its loop: again, only the run's own
            // end may explain it.
            if loops2.is_empty() {
                assert!(ends_soon(&mut child), "trial {trial}: loop device gone while the run lives on: {loops:?}");
            }
            if child.try_wait().unwrap().is_some() {
                break;
            }
            assert!(!loops.is_empty(), "trial {trial}: no loop device before cleanup");
            for r in &recs {
                assert!(r.exists() || child.try_wait().unwrap().is_some(), "trial {trial}: {} removed", r.display());
            }
            std::thread::sleep(ms(200));
        }
        let code = wait_bounded(&mut child, LIMIT);
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert_eq!(code, Some(0), "trial {trial}: the run was disturbed by cleanup: {err}");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["complete"], true, "trial {trial}");
        // Afterwards: nothing of the run is left, and cleanup finds nothing of it.
        let o = run_bounded(&["cleanup"], LIMIT, None);
        assert_eq!(o.code, Some(0), "{}", o.show());
        let (imgs, loops) = images_and_loops(backing.path());
        assert_eq!((imgs, loops), (vec![], vec![]), "trial {trial}: leftovers");
        assert_eq!(records_in(backing.path()), Vec::<PathBuf>::new(), "trial {trial}: records left");
    }
    eprintln!("pidns live-run trials: 3, cleanups during the runs: {cleanups}");
    assert!(cleanups >= 3);
}

#[test]
fn reliability_pidns_killed_run_is_cleaned() {
    let Some(_one) = root_only("unshare -p and the registry need root") else { return };
    if !unshare_available() {
        return;
    }
    let mut r = Rng(0x5eed_0025);
    for trial in 0..3 {
        let backing = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let json = out.path().join("r.json");
        let mut child = spawn_in_pidns(&ladder_args(backing.path(), &json, "100"));
        wait_registered(&mut child, backing.path());
        let delay = r.below(1500);
        std::thread::sleep(ms(delay));
        assert!(child.try_wait().unwrap().is_none(), "trial {trial}: finished before the kill");
        child.kill().unwrap(); // unshare dies; --kill-child sends SIGKILL to the run
        child.wait().unwrap();
        // The namespace's pid 1 is gone once its lock is released; cleanup waits for
        // nothing else. Give the kernel a moment to reap it.
        std::thread::sleep(ms(200));
        let o = run_bounded(&["cleanup"], LIMIT, None);
        assert_eq!(o.code, Some(0), "trial {trial} (kill after {delay} ms): {}", o.show());
        assert!(!o.stdout.contains("problem"), "trial {trial}: {}", o.show());
        let (imgs, loops) = images_and_loops(backing.path());
        assert_eq!((imgs, loops), (vec![], vec![]), "trial {trial} (kill after {delay} ms): cleanup left these");
        assert_eq!(records_in(backing.path()), Vec::<PathBuf>::new(), "trial {trial}: records left");
        let stray: Vec<String> = std::fs::read_dir("/run/manyfiles")
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".lock") && n.contains("Z-1-"))
            .filter(|n| !Path::new("/run/manyfiles").join(n).with_extension("json").exists())
            .collect();
        assert!(stray.is_empty(), "trial {trial}: lock files without a record: {stray:?}");
    }
}
