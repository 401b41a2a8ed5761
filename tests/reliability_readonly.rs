//! Scenario 4, read-only: the target (a tmpfs) is remounted read-only mid-run. The
//! ladder (3 trials) and sync (2 trials) fail cleanly: exit 1 within the time bound,
//! the failure named, finished measurements kept, SRC untouched; once writable again,
//! `manyfiles cleanup` removes the run directory the tool could not remove.

mod reliability_common;

use reliability_common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(120);

fn mount(args: &[&str], dir: &Path) {
    let st = Command::new("mount").args(args).arg(dir).status().unwrap();
    assert!(st.success(), "mount {args:?}");
}

fn stderr_of(child: &mut std::process::Child) -> String {
    use std::io::Read;
    let mut s = String::new();
    child.stderr.take().unwrap().read_to_string(&mut s).unwrap();
    s
}

#[test]
fn reliability_readonly_remount_mid_run() {
    let Some(_one) = root_only("remounting needs root") else { return };
    let t = tempfile::tempdir().unwrap();
    let mnt = t.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    mount(&["-t", "tmpfs", "-o", "size=64m", "tmpfs"], &mnt);
    let src = t.path().join("src");
    source_tree(&src, 10, 300);
    let before = snapshot(&src, &[]);
    let mut r = Rng(0x5eed_0007);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for trial in 0..5 {
            let ladder = trial < 3;
            let json = t.path().join("r.json");
            let dst = mnt.join("dst");
            let mut child = if ladder {
                spawn_quiet(&[
                    "ladder",
                    "--target",
                    mnt.to_str().unwrap(),
                    "--total",
                    "8M",
                    "--to",
                    "4096",
                    "--runs",
                    "50",
                    "-q",
                    "--json",
                    json.to_str().unwrap(),
                ])
            } else {
                spawn_quiet(&["sync", src.to_str().unwrap(), dst.to_str().unwrap(), "-q"])
            };
            if ladder {
                let t0 = Instant::now();
                while run_dirs(&mnt).is_empty() && t0.elapsed() < Duration::from_secs(20) {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            let delay = if ladder { 200 + r.below(1500) } else { 20 + r.below(200) };
            std::thread::sleep(Duration::from_millis(delay));
            let what =
                format!("trial {trial} ({}), read-only after {delay} ms", if ladder { "ladder" } else { "sync" });
            // A remount fails (EBUSY) while a file is open for writing: retry until it
            // takes or the run ends.
            let mut finished = false;
            loop {
                if child.try_wait().unwrap().is_some() {
                    finished = true;
                    break;
                }
                let st = Command::new("mount")
                    .args(["-o", "remount,ro"])
                    .arg(&mnt)
                    .stderr(std::process::Stdio::null())
                    .status();
                if st.unwrap().success() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let code = wait_bounded(&mut child, LIMIT);
            let err = stderr_of(&mut child);
            mount(&["-o", "remount,rw"], &mnt);
            // Exit 0: the run finished its last write just before the remount took (the
            // re-run below still checks DST).
            if finished || code == Some(0) {
                eprintln!("{what}: finished before the remount");
            } else {
                assert_eq!(code, Some(1), "{what}: clean failure\n{err}");
                // The ladder names EROFS on stderr; sync lists each failure on stdout and
                // counts them on stderr.
                let named = if ladder { err.contains("Read-only file system") } else { err.contains(" failed") };
                assert!(named, "{what}: the failure is named\n{err}");
                assert!(!err.contains("panicked"), "{what}\n{err}");
            }
            if ladder {
                // Whatever was measured before the fault is kept, and complete.
                if let Ok(text) = std::fs::read_to_string(&json) {
                    let v: Value = serde_json::from_str(&text).unwrap();
                    for m in v["measurements"].as_array().unwrap() {
                        assert!(m["errors"] == 0 && m["interrupted"] == false || !m["failed"].is_null(), "{what}: {m}");
                    }
                }
                let o = run_bounded(&["cleanup"], LIMIT, None);
                assert_eq!(o.code, Some(0), "{}", o.show());
                assert!(run_dirs(&mnt).is_empty(), "{what}: cleanup removed the run directory");
            } else {
                assert_same(&snapshot(&src, &[]), &before, &format!("{what}: SRC untouched"));
                let o = run_bounded(&["sync", src.to_str().unwrap(), dst.to_str().unwrap(), "-q"], LIMIT, None);
                assert_eq!(o.code, Some(0), "{what}: sync once writable\n{}", o.show());
                assert_same(&snapshot(&dst, &[]), &before, &format!("{what}: DST equals SRC after the re-run"));
                std::fs::remove_dir_all(&dst).unwrap();
            }
            let _ = std::fs::remove_file(&json);
        }
    }));
    let _ = Command::new("umount").arg("-l").arg(&mnt).status();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}
