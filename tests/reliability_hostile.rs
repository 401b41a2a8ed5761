//! Scenario 6, hostile trees: depth beyond PATH_MAX, 255-byte names, names that are not
//! UTF-8, with newlines or leading dashes, many entries in one directory, hard links,
//! sockets, FIFOs, dangling and looping symlinks. copy, sync, scan and delete (sync
//! --delete) must finish (bounded), report what they cannot copy, and never crash or loop.

mod reliability_common;

use reliability_common::*;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);
/// Entries in the one big directory (the issue asks 1,000,000; see RELIABILITY.md).
const WIDE: usize = 20_000;
const DEPTH: usize = 1_000;

fn hostile_tree(src: &Path) {
    deep_chain(&src.join("deep").tap_mkdir(), DEPTH, 8); // 1,000 × 9 bytes > PATH_MAX
    std::fs::write(src.join("n".repeat(255)), b"long name").unwrap();
    std::fs::write(src.join(OsStr::from_bytes(b"bad\xff\xfeutf8")), b"not utf-8").unwrap();
    std::fs::write(src.join("new\nline"), b"newline").unwrap();
    std::fs::write(src.join("-rf"), b"dash").unwrap();
    std::fs::write(src.join("--help"), b"dashes").unwrap();
    std::fs::write(src.join("linked"), b"hard").unwrap();
    std::fs::hard_link(src.join("linked"), src.join("linked2")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/target", src.join("dangling")).unwrap();
    std::os::unix::fs::symlink("loop", src.join("loop")).unwrap();
    std::os::unix::fs::symlink(".", src.join("self")).unwrap();
    std::os::unix::fs::symlink("..", src.join("up")).unwrap();
    let wide = src.join("wide").tap_mkdir();
    for i in 0..WIDE {
        std::fs::write(wide.join(format!("{i}")), b"").unwrap();
    }
}

/// Sockets and FIFOs: reported by copy/sync (not copied), fine for scan.
fn specials(src: &Path) {
    let fifo = std::ffi::CString::new(src.join("fifo").as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let _sock = std::os::unix::net::UnixListener::bind(src.join("sock")).unwrap();
}

trait TapMkdir {
    fn tap_mkdir(self) -> std::path::PathBuf;
}
impl TapMkdir for std::path::PathBuf {
    fn tap_mkdir(self) -> std::path::PathBuf {
        std::fs::create_dir(&self).unwrap();
        self
    }
}

#[test]
fn reliability_hostile_copy_sync_scan_delete() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src").tap_mkdir();
    hostile_tree(&src);
    specials(&src);
    let before = snapshot(&src, &[]);
    assert!(before.len() > WIDE + 2 * DEPTH);
    let dst = t.path().join("dst");

    // copy: everything arrives, the FIFO and the socket too (kept as `cp -a` keeps them,
    // issue 28); exit 0. The usual soft fd limit is too low for 2 fds per level of a
    // 1,000-deep tree: the tool raises it to the hard limit (regression: EMFILE at ~120).
    let o = run_bounded(
        &[OsStr::new("copy"), src.as_os_str(), dst.as_os_str(), OsStr::new("-q")],
        LIMIT,
        Some((256, 8192)),
    );
    assert_eq!(o.code, Some(0), "{}", o.show());
    assert_same(&snapshot(&dst, &[]), &before, &format!("copy made DST equal SRC, specials included\n{}", o.show()));
    assert_same(&snapshot(&src, &[]), &before, "SRC untouched");

    // sync again: nothing to do; DST unchanged.
    let o = run_bounded(
        &[OsStr::new("sync"), src.as_os_str(), dst.as_os_str(), OsStr::new("-q")],
        LIMIT,
        Some((256, 8192)),
    );
    assert_eq!(o.code, Some(0), "{}", o.show());
    assert_same(&snapshot(&dst, &[]), &before, "sync again");

    // scan: the whole tree is walked, nothing written into it.
    let db = t.path().join("idx.sqlite");
    let dbarg = format!("sqlite:{}", db.display());
    let o = run_bounded(
        &[OsStr::new("scan"), src.as_os_str(), OsStr::new("--db"), OsStr::new(&dbarg)],
        LIMIT,
        Some((256, 8192)),
    );
    assert_eq!(o.code, Some(0), "{}", o.show());
    assert_same(&snapshot(&src, &[]), &before, "scan wrote nothing into SRC");

    // delete: sync --delete from an empty SRC removes the whole hostile DST, deep chain
    // included, with few fds.
    let empty = t.path().join("empty").tap_mkdir();
    let o = run_bounded(
        &[OsStr::new("sync"), empty.as_os_str(), dst.as_os_str(), OsStr::new("--delete"), OsStr::new("-q")],
        LIMIT,
        Some((64, 64)),
    );
    assert_eq!(o.code, Some(0), "{}", o.show());
    assert!(snapshot(&dst, &[]).is_empty(), "everything deleted");
    assert_same(&snapshot(&src, &[]), &before, "SRC untouched");
}

/// Past the hard fd limit the deep entries are reported (EMFILE), the rest is copied,
/// exit 1, no crash, no hang; SRC untouched.
#[test]
fn reliability_hostile_fd_limit_reports_instead_of_crashing() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src").tap_mkdir();
    deep_chain(&src, DEPTH, 8);
    std::fs::write(src.join("top"), b"top").unwrap();
    let before = snapshot(&src, &[]);
    let dst = t.path().join("dst");
    let o =
        run_bounded(&[OsStr::new("copy"), src.as_os_str(), dst.as_os_str(), OsStr::new("-q")], LIMIT, Some((128, 128)));
    assert_eq!(o.code, Some(1), "{}", o.show());
    assert!(o.stdout.contains("Too many open files"), "{}", o.show());
    assert_eq!(o.lines().len(), 1, "one error line\n{}", o.show());
    assert!(dst.join("top").is_file());
    assert_same(&snapshot(&src, &[]), &before, "SRC untouched");
}
