//! SIGINT / SIGTERM in the middle of a run: exit 128 + signal, finished measurements
//! saved, the phase in flight marked interrupted, the run directory removed.

mod common;

use common::*;
use serde_json::Value;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

struct Spawned {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Spawned {
    fn start(args: &[String], logs: &Path) -> Spawned {
        let stdout = logs.join("stdout.txt");
        let stderr = logs.join("stderr.txt");
        let child = Command::new(bin())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(File::create(&stdout).unwrap()))
            .stderr(Stdio::from(File::create(&stderr).unwrap()))
            .spawn()
            .expect("spawn manyfiles");
        Spawned { child, stdout, stderr }
    }

    fn output(&self) -> String {
        format!(
            "--- stdout:\n{}\n--- stderr:\n{}",
            std::fs::read_to_string(&self.stdout).unwrap_or_default(),
            std::fs::read_to_string(&self.stderr).unwrap_or_default()
        )
    }

    /// Panic (after killing the child) if it has already exited.
    fn assert_running(&mut self, what: &str) {
        if let Some(st) = self.child.try_wait().unwrap() {
            panic!("{what}: manyfiles exited early with {st}\n{}", self.output());
        }
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, sig) };
        assert_eq!(rc, 0, "kill failed");
    }

    /// Wait for the exit code (killing the child and panicking after TIMEOUT).
    fn wait_code(&mut self) -> Option<i32> {
        let mut status = None;
        let done = wait_until(TIMEOUT, || {
            status = self.child.try_wait().unwrap();
            status.is_some()
        });
        if !done {
            let _ = self.child.kill();
            let _ = self.child.wait();
            panic!("manyfiles did not exit within {TIMEOUT:?} of the signal\n{}", self.output());
        }
        status.unwrap().code()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Measurements in `json`, when it exists and parses (it is written atomically).
fn measurements_so_far(json: &Path) -> usize {
    let Ok(text) = std::fs::read_to_string(json) else {
        return 0;
    };
    let Ok(v) = serde_json::from_str::<Value>(&text) else {
        return 0;
    };
    v.get("measurements").and_then(|m| m.as_array()).map_or(0, |m| m.len())
}

/// Start a long ladder, signal it once the results file holds a measurement, and check
/// what it leaves behind.
fn interrupt_ladder(sig: i32, total: &str) {
    let target = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let args: Vec<String> = words(&format!(
        "ladder --target {} --total {total} --from 1 --to 65536 --runs 50 --json {} --quiet",
        target.path().display(),
        json.display()
    ));
    let mut p = Spawned::start(&args, out.path());
    let saw = wait_until(TIMEOUT, || measurements_so_far(&json) >= 1 || p.child.try_wait().unwrap().is_some());
    assert!(saw, "no measurement saved within {TIMEOUT:?}\n{}", p.output());
    p.assert_running("before the signal");
    p.signal(sig);
    let code = p.wait_code();
    assert_eq!(code, Some(128 + sig), "exit code after signal {sig}\n{}", p.output());

    let stderr = std::fs::read_to_string(&p.stderr).unwrap();
    let name = if sig == libc::SIGINT { "SIGINT" } else { "SIGTERM" };
    assert!(stderr.contains(name), "stderr names the signal: {stderr}");
    assert!(stderr.starts_with("manyfiles: "), "{stderr}");

    assert!(run_dirs(target.path()).is_empty(), "run dir left behind after {name}");
    assert_eq!(std::fs::read_dir(target.path()).unwrap().count(), 0, "target not empty after {name}");
    // Only the results file (and our logs) next to it: no temp file of the atomic writer.
    let mut names: Vec<String> =
        std::fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, vec!["r.json", "stderr.txt", "stdout.txt"]);

    let v = load_json(&json);
    assert_eq!(u(&v, "schema"), 1);
    assert_eq!(get(&v, "complete"), &Value::Bool(false), "an interrupted run is not complete");
    let ms = arr(&v, "measurements");
    let mut complete = 0;
    for m in ms {
        if measurement_complete(m) {
            complete += 1;
            assert_eq!(u(m, "files"), u(m, "tree_files"), "a complete measurement did all files: {m}");
        } else {
            assert_eq!(get(m, "interrupted"), &Value::Bool(true), "incomplete but not interrupted: {m}");
            assert!(u(m, "files") <= u(m, "tree_files"));
        }
    }
    assert!(complete >= 1, "at least one finished measurement kept");
    // Statistics only from complete measurements.
    for sm in arr(&v, "summaries") {
        let n = ms
            .iter()
            .filter(|m| s(m, "op") == s(sm, "op") && s(m, "tree_key") == s(sm, "tree_key") && measurement_complete(m))
            .count();
        assert_eq!(u(sm, "n") as usize, n, "summary of {} {}", s(sm, "op"), s(sm, "tree_key"));
    }
}

#[test]
fn sigint_mid_ladder() {
    interrupt_ladder(libc::SIGINT, "8MiB");
}

#[test]
fn sigterm_mid_ladder() {
    interrupt_ladder(libc::SIGTERM, "1MiB");
}

/// Interrupt a `gen` once it has written some files.
fn interrupt_gen(dir: &Path, logs: &Path) -> Option<i32> {
    let args: Vec<String> = words(&format!(
        "gen {} --files 200000 --size 0 --files-per-dir 1000 --fanout 16 --threads 2 --quiet",
        dir.display()
    ));
    let mut p = Spawned::start(&args, logs);
    let started = wait_until(TIMEOUT, || {
        p.child.try_wait().unwrap().is_some()
            || std::fs::read_dir(dir).is_ok_and(|rd| {
                rd.filter_map(|e| e.ok()).filter(|e| e.path().is_dir()).any(|d| {
                    // A file somewhere below a top-level directory.
                    walk_quiet(&d.path()) > 0
                })
            })
    });
    assert!(started, "gen wrote no file within {TIMEOUT:?}\n{}", p.output());
    p.assert_running("gen before the signal");
    p.signal(libc::SIGINT);
    let code = p.wait_code();
    if code != Some(130) {
        panic!("gen: expected exit 130 after SIGINT, got {code:?}\n{}", p.output());
    }
    code
}

/// Count files below `dir`, ignoring errors (the tree is being written).
fn walk_quiet(dir: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in rd.filter_map(|e| e.ok()) {
        match e.file_type() {
            Ok(t) if t.is_dir() => n += walk_quiet(&e.path()),
            Ok(_) => n += 1,
            Err(_) => {}
        }
        if n > 0 {
            return n;
        }
    }
    n
}

#[test]
fn sigint_during_gen_removes_the_partial_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    // A new DIR: removed entirely.
    let dir = tmp.path().join("new");
    interrupt_gen(&dir, logs.path());
    assert!(!dir.exists(), "partial tree in a new DIR must be removed with DIR");

    // An earlier gen dir: emptied (its ownership attribute stays on the directory).
    let dir = tmp.path().join("old");
    run(["gen", dir.to_str().unwrap(), "--files", "10", "--size", "1", "--flat", "--quiet"]).ok();
    interrupt_gen(&dir, logs.path());
    assert!(dir.is_dir());
    let left: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(left.is_empty(), "nothing remains: {left:?}");
}
