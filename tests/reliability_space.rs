//! Scenario 3, out of space: a 4 MiB tmpfs that fills mid-create (ladder, gen), mid-copy
//! and mid-sync. One clear error naming the target, no partial file under a final name,
//! the source untouched, measured results kept, nothing of the run left.

mod reliability_common;

use reliability_common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

/// A tiny tmpfs mounted on `dir` for the guard's lifetime.
struct Tiny<'a>(&'a Path);
impl<'a> Tiny<'a> {
    fn mount(dir: &'a Path, size: &str) -> Tiny<'a> {
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(st.success(), "mount tmpfs");
        Tiny(dir)
    }
}
impl Drop for Tiny<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0).status();
    }
}

#[test]
fn reliability_space_create_copy_sync() {
    let Some(_one) = root_only("mounting a tiny tmpfs needs root") else { return };
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    source_tree(&src, 10, 500); // ~20 MiB
    let before = snapshot(&src, &[]);
    let mnt = t.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let _tiny = Tiny::mount(&mnt, "4m");

    // ladder: 16 MiB is refused up front (preflight: bad input naming --target).
    let json = t.path().join("r.json");
    let ladder = |total: &str, runs: &str| -> Vec<std::ffi::OsString> {
        [
            "ladder",
            "--target",
            mnt.to_str().unwrap(),
            "--total",
            total,
            "--to",
            "64",
            "--runs",
            runs,
            "-q",
            "--json",
            json.to_str().unwrap(),
        ]
        .map(Into::into)
        .to_vec()
    };
    let o = run_bounded(&ladder("16M", "1"), LIMIT, None);
    assert_eq!(o.code, Some(2), "ladder larger than the target\n{}", o.show());
    assert!(o.lines().len() == 1 && o.lines()[0].contains("--target"), "{}", o.show());
    assert!(!json.exists());

    // ladder: 2 MiB fits, but a filler written once the run has started takes the
    // space: exit 1, one line naming the run directory, nothing left, the JSON holds
    // only complete measurements.
    let mut child = spawn_quiet(&ladder("2M", "10000")); // runs until the filler takes the space
    let t0 = std::time::Instant::now();
    while run_dirs(&mnt).is_empty() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(200));
    // The filler keeps taking whatever space the ladder frees (it deletes its trees
    // between runs) until the ladder stops.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let code = std::thread::scope(|sc| {
        sc.spawn(|| {
            use std::io::Write;
            let mut f = std::fs::File::create(mnt.join("filler")).unwrap();
            let block = vec![1u8; 4096];
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if f.write_all(&block).is_err() {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        });
        let code = wait_bounded(&mut child, LIMIT);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        code
    });
    let stderr = {
        use std::io::Read;
        let mut s = String::new();
        child.stderr.take().unwrap().read_to_string(&mut s).unwrap();
        s
    };
    assert_eq!(code, Some(1), "ladder out of space mid-run\n{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("manyfiles: ")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("No space left") && lines[0].contains(mnt.to_str().unwrap()),
        "names the target: {stderr}"
    );
    std::fs::remove_file(mnt.join("filler")).unwrap();
    assert!(std::fs::read_dir(&mnt).unwrap().next().is_none(), "nothing left on the target");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ms = v["measurements"].as_array().unwrap();
    assert!(!ms.is_empty(), "measurements before the fault were kept");
    for m in ms {
        assert!(
            m["errors"] == 0 && m["interrupted"] == false && m["failed"].is_null() || !m["failed"].is_null(),
            "{m}"
        );
    }

    // gen: far too big is refused up front (2); just too big (~4 MiB + metadata on 4 MiB)
    // passes the estimate or not and fails mid-run (1): the partial tree is removed.
    let g = mnt.join("g");
    for files in ["4000", "1000"] {
        let o = run_bounded(
            &[
                "gen".as_ref(),
                g.as_os_str(),
                "--files".as_ref(),
                files.as_ref(),
                "--size".as_ref(),
                "4k".as_ref(),
                "-q".as_ref(),
            ],
            LIMIT,
            None,
        );
        assert!(o.code == Some(2) || o.code == Some(1) && files == "1000", "gen out of space\n{}", o.show());
        assert_eq!(o.lines().len(), 1, "{}", o.show());
        assert!(!g.exists(), "gen removed its partial tree");
    }

    // copy and sync: failures reported and counted, exit 1, SRC untouched, and every file
    // under a final name in DST is whole.
    for mode in ["copy", "sync"] {
        let dst = mnt.join(mode);
        let o = run_bounded(&[mode.as_ref(), src.as_os_str(), dst.as_os_str(), "-q".as_ref()], LIMIT, None);
        assert_eq!(o.code, Some(1), "{mode} out of space\n{}", o.show());
        assert!(o.stdout.contains("No space left"), "{mode}: the failure is named\n{}", o.show());
        assert_eq!(o.lines().len(), 1, "{mode}: one error line\n{}", o.show());
        assert!(o.lines()[0].contains("failed"), "{}", o.show());
        assert_same(&snapshot(&src, &[]), &before, &format!("{mode}: SRC untouched"));
        let tmp = no_partial_files(&before, &dst);
        assert_eq!(tmp, 0, "{mode}: temporary files left");
        std::fs::remove_dir_all(&dst).unwrap();
    }
}
