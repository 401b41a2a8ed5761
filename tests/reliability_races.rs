//! Scenario 7, symlink races (TOCTOU): while sync reads SRC, or deletes in DST (sync
//! --delete removes whole directories through fds), a racing thread keeps swapping
//! directories of the tree for symlinks to a directory outside. Nothing outside may be
//! read (no outside file shows up in DST), written or removed (outside stays identical).

mod reliability_common;

use manyfiles::fs::walk::Kind;
use reliability_common::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);
const TRIALS: usize = 8;

/// A directory outside the trees with files whose names and content are unique.
fn outside(root: &Path) -> PathBuf {
    let o = root.join("outside");
    std::fs::create_dir_all(o.join("sub")).unwrap();
    for i in 0..50 {
        std::fs::write(o.join(format!("precious{i}")), format!("outside-secret-{i}")).unwrap();
        std::fs::write(o.join("sub").join(format!("precious{i}")), format!("outside-secret-sub-{i}")).unwrap();
    }
    o
}

/// Swap directories `dirs` for symlinks to `target` and back, over and over, until
/// `stop`; returns how many swaps were made.
fn racer(dirs: Vec<PathBuf>, target: PathBuf, stop: &AtomicBool, swaps: &AtomicU64) {
    while !stop.load(Ordering::Relaxed) {
        for d in &dirs {
            let moved = d.with_extension("moved");
            if std::fs::rename(d, &moved).is_ok() {
                if std::os::unix::fs::symlink(&target, d).is_ok() {
                    swaps.fetch_add(1, Ordering::Relaxed);
                    std::thread::yield_now();
                    let _ = std::fs::remove_file(d);
                }
                let _ = std::fs::rename(&moved, d);
            }
        }
    }
}

fn no_outside_content(dst: &Path, what: &str) {
    if !dst.exists() {
        return;
    }
    for (k, v) in snapshot(dst, &[]) {
        let name = String::from_utf8_lossy(&k).into_owned();
        assert!(!(v.0 == Kind::File && name.contains("precious")), "{what}: an outside file was read into DST: {name}");
    }
}

fn trial(delete_side: bool, n: usize) -> u64 {
    let t = tempfile::tempdir().unwrap();
    let out = outside(t.path());
    let out_before = snapshot(&out, &[]);
    let src = t.path().join("src");
    source_tree(&src, 12, 100);
    let dst = t.path().join("dst");
    let (stop, swaps) = (AtomicBool::new(false), AtomicU64::new(0));
    let what = format!("{} race trial {n}", if delete_side { "delete" } else { "sync-read" });
    let args: Vec<std::ffi::OsString> = if delete_side {
        // DST holds a full copy; SRC is empty; sync --delete removes everything.
        let o = run_bounded(&["copy".as_ref(), src.as_os_str(), dst.as_os_str(), "-q".as_ref()], LIMIT, None);
        assert_eq!(o.code, Some(0), "{}", o.show());
        let empty = t.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        vec!["sync".into(), empty.into(), dst.clone().into(), "--delete".into(), "-q".into()]
    } else {
        vec!["sync".into(), src.clone().into(), dst.clone().into(), "-q".into()]
    };
    let base = if delete_side { &dst } else { &src };
    let dirs: Vec<PathBuf> = (0..12).map(|d| base.join(format!("d{d:03}"))).collect();
    let code = std::thread::scope(|s| {
        s.spawn(|| racer(dirs, out.clone(), &stop, &swaps));
        std::thread::sleep(Duration::from_millis(5));
        let o = run_bounded(&args, LIMIT, None);
        stop.store(true, Ordering::Relaxed);
        assert!(!o.stderr.contains("panicked"), "{what}\n{}", o.show());
        o.code
    });
    // Exit 0 or 1 (entries that vanished or turned into symlinks mid-walk are failures).
    assert!(code == Some(0) || code == Some(1), "{what}: exit {code:?}");
    assert_same(&snapshot(&out, &[]), &out_before, &format!("{what}: outside untouched"));
    no_outside_content(&dst, &what);
    swaps.load(Ordering::Relaxed)
}

#[test]
fn reliability_races_sync_reading_swapped_source() {
    let swaps: u64 = (0..TRIALS).map(|n| trial(false, n)).sum();
    eprintln!("sync-read races: {TRIALS} trials, {swaps} swaps during the runs");
    assert!(swaps > 0);
}

#[test]
fn reliability_races_delete_in_swapped_destination() {
    let swaps: u64 = (0..TRIALS).map(|n| trial(true, n)).sum();
    eprintln!("delete races: {TRIALS} trials, {swaps} swaps during the runs");
    assert!(swaps > 0);
}
