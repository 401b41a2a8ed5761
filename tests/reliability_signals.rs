//! Scenario 2, SIGINT and SIGTERM at random points (20 trials without root: ladder on a
//! directory, copy, sync, scan, gen × both signals × 2; plus 2 on a managed file system
//! and 2 double-signal trials as root). Exit 130/143, nothing left behind (no run
//! directory, no temporary file, no mount), results saved and parseable.

mod reliability_common;

use reliability_common::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(120);

/// Signal `child` after `delay`; its exit code (None: it finished before the signal).
fn signal_after(child: &mut std::process::Child, sig: i32, delay: Duration) -> Option<i32> {
    std::thread::sleep(delay);
    if child.try_wait().unwrap().is_some() {
        return None;
    }
    signal(child, sig);
    let code = wait_bounded(child, LIMIT);
    assert!(code.is_some(), "did not exit within {LIMIT:?} of the signal");
    code
}

fn tmp_files(dst: &Path) -> usize {
    snapshot(dst, &[])
        .keys()
        .filter(|k| k.rsplit(|&b| b == b'/').next().unwrap().starts_with(b".manyfiles-tmp."))
        .count()
}

#[test]
fn reliability_signals_random_points() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    source_tree(&src, 10, 1000);
    let before = snapshot(&src, &[]);
    let mut r = Rng(0x5eed_0005);
    let (mut signalled, mut finished_first, mut before_handlers) = (0, 0, 0);
    for trial in 0..20 {
        let sig = if trial % 2 == 0 { libc::SIGINT } else { libc::SIGTERM };
        let op = ["ladder", "copy", "sync", "scan", "gen"][(trial / 2) % 5];
        let work = tempfile::tempdir().unwrap();
        let (dst, json) = (work.path().join("dst"), work.path().join("r.json"));
        let args: Vec<std::ffi::OsString> = match op {
            "ladder" => vec![
                "ladder".into(),
                "--target".into(),
                work.path().into(),
                "--total".into(),
                "2M".into(),
                "--to".into(),
                "1024".into(),
                "--runs".into(),
                "20".into(),
                "-q".into(),
                "--json".into(),
                json.clone().into(),
            ],
            "copy" | "sync" => vec![
                op.into(),
                src.clone().into(),
                dst.clone().into(),
                "-q".into(),
                "--json".into(),
                json.clone().into(),
            ],
            "scan" => vec![
                "scan".into(),
                src.clone().into(),
                "--db".into(),
                format!("sqlite:{}", work.path().join("i.sqlite").display()).into(),
                "--json".into(),
                json.clone().into(),
            ],
            _ => vec![
                "gen".into(),
                dst.clone().into(),
                "--files".into(),
                "40000".into(),
                "--size".into(),
                "1k".into(),
                "-q".into(),
            ],
        };
        let mut child = spawn_quiet(&args);
        // Random point: for the ladder, after the run directory exists.
        if op == "ladder" {
            let t0 = Instant::now();
            while run_dirs(work.path()).is_empty() && t0.elapsed() < ms(20_000) {
                std::thread::sleep(ms(5));
            }
        }
        // Within the op's own run: on a quiet machine copy and sync of this tree take
        // ~250 ms (5,000 files; now 10,000) and gen ~300 ms, so later points mostly found them finished (CI: 11 of
        // 20 signalled mid-run once the machine was quiet).
        let delay = match op {
            "scan" => r.below(60),
            "ladder" => 20 + r.below(500),
            _ => 20 + r.below(180),
        };
        let what = format!("trial {trial}: {op}, signal {sig} after {delay} ms");
        let Some(code) = signal_after(&mut child, sig, ms(delay)) else {
            finished_first += 1;
            eprintln!("{what}: finished before the signal");
            continue;
        };
        let stderr = {
            use std::io::Read;
            let mut s = String::new();
            child.stderr.take().unwrap().read_to_string(&mut s).unwrap();
            s
        };
        if code == 0 {
            finished_first += 1; // the signal came as it was finishing
            continue;
        }
        signalled += 1;
        assert_eq!(code, 128 + sig, "{what}: exit code\n{stderr}");
        assert!(run_dirs(work.path()).is_empty(), "{what}: run directory left");
        assert_same(&snapshot(&src, &[]), &before, &format!("{what}: SRC untouched"));
        match op {
            "ladder" => {
                if let Ok(text) = std::fs::read_to_string(&json) {
                    let v: Value = serde_json::from_str(&text).unwrap();
                    assert_eq!(v["complete"], false, "{what}");
                }
                let left: Vec<_> = std::fs::read_dir(work.path()).unwrap().flatten().map(|e| e.file_name()).collect();
                assert!(left.iter().all(|n| n == "r.json"), "{what}: left {left:?}");
            }
            "copy" | "sync" => {
                let Ok(text) = std::fs::read_to_string(&json) else {
                    // The signal came before the process had its handlers (start-up on a
                    // loaded machine): it died of it, before making anything.
                    assert!(!dst.exists(), "{what}: no results file, yet DST was made");
                    (signalled, before_handlers) = (signalled - 1, before_handlers + 1);
                    continue;
                };
                let v: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(v["interrupted"], true, "{what}");
                if dst.exists() {
                    assert_eq!(tmp_files(&dst), 0, "{what}: temporary files left");
                    if op == "sync" {
                        no_partial_files(&before, &dst);
                    }
                    let o =
                        run_bounded(&["sync".as_ref(), src.as_os_str(), dst.as_os_str(), "-q".as_ref()], LIMIT, None);
                    assert_eq!(o.code, Some(0), "{what}: sync re-run\n{}", o.show());
                    assert_same(&snapshot(&dst, &[]), &before, &format!("{what}: DST equals SRC after a re-run"));
                }
            }
            "scan" => {}
            _ => assert!(!dst.exists(), "{what}: gen left a partial tree"),
        }
    }
    eprintln!(
        "signal trials: 20, signalled mid-run {signalled}, finished before the signal {finished_first}, \
         signalled before the handlers were in place {before_handlers}"
    );
    assert!(signalled >= 12, "most trials must be signalled mid-run ({signalled})");
}

/// On managed file systems: one signal tears everything down; a second signal ends the
/// process at once (by design: the user insisted), and `manyfiles cleanup` then removes
/// what it left (registry).
#[test]
fn reliability_signals_managed_once_and_twice() {
    let Some(_one) = root_only("--fs needs root") else { return };
    let mut r = Rng(0x5eed_0006);
    for trial in 0..4 {
        let twice = trial >= 2;
        let sig = if trial % 2 == 0 { libc::SIGINT } else { libc::SIGTERM };
        let mut child =
            spawn_quiet(&["ladder", "--fs", "ext4", "--total", "1M", "--to", "1024", "--runs", "100", "--quiet"]);
        let pid = child.id();
        let t0 = Instant::now();
        while leftovers_of(pid).is_empty() && t0.elapsed() < ms(30_000) {
            std::thread::sleep(ms(10));
        }
        let delay = r.below(1500);
        std::thread::sleep(ms(delay));
        let what =
            format!("managed trial {trial}: signal {sig} {} after {delay} ms", if twice { "twice" } else { "once" });
        signal(&child, sig);
        if twice {
            std::thread::sleep(ms(5));
            signal(&child, sig);
        }
        let code = wait_bounded(&mut child, LIMIT);
        assert_eq!(code, Some(128 + sig), "{what}");
        if twice {
            let o = run_bounded(&["cleanup"], LIMIT, None);
            assert_eq!(o.code, Some(0), "{what}: cleanup\n{}", o.show());
        }
        assert_eq!(leftovers_of(pid), Vec::<String>::new(), "{what}: mounts/loops/images left");
    }
}
