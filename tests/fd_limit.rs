//! Wide trees under a low open-file limit (issue 41): a directory with more
//! subdirectories than the process may hold fds. Walks that opened every subdirectory as
//! they listed it held one fd (two for copy, sync and --verify) per queued subdirectory
//! and failed every one past RLIMIT_NOFILE with EMFILE — at this machine's hard limit of
//! 20,000, a copy of 10,000,000 files in 10,000 directories failed. Every command here runs
//! with soft and hard limits of LIMIT (which `raise_fd_limit` cannot lift), on a tree
//! with WIDE subdirectories in one directory, and must finish with nothing failed and the
//! same tree at the end.

mod common;

use common::{bin, tree_hash};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Far below WIDE: eager opening fails from the first LIMIT − a few subdirectories on.
const LIMIT: u64 = 64;
const WIDE: usize = 600;

/// `manyfiles ARGS` with RLIMIT_NOFILE soft = hard = LIMIT; (exit code, stdout, stderr).
fn limited(args: &[&str]) -> (i32, String, String) {
    let mut cmd = Command::new(bin());
    cmd.args(args);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit { rlim_cur: LIMIT, rlim_max: LIMIT };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("run manyfiles");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = limited(args);
    assert_eq!(code, 0, "manyfiles {args:?} under RLIMIT_NOFILE {LIMIT}: exit {code}\n{out}\n{err}");
    assert!(!err.contains("Too many open files") && !out.contains("Too many open files"), "{out}\n{err}");
    out
}

/// WIDE subdirectories in one directory, each with one file and one empty subdirectory
/// (so the queued subdirectories have children of their own).
fn wide_tree(root: &Path) {
    for i in 0..WIDE {
        let d = root.join(format!("d{i:05}"));
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::write(d.join("f"), i.to_string()).unwrap();
    }
}

#[test]
fn engines_walk_a_wide_tree_under_a_low_fd_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    wide_tree(&src);
    let before = tree_hash(&src);
    let dst = tmp.path().join("dst");
    let (s, d) = (src.to_str().unwrap(), dst.to_str().unwrap());

    let out = ok(&["copy", s, d, "--verify"]);
    assert!(out.contains("failed 0"), "copy: {out}");
    assert!(out.contains(": 0 differences"), "copy --verify: {out}");
    assert_eq!(tree_hash(&dst), before, "the copy is the source");

    let out = ok(&["sync", s, d, "--dry-run"]);
    assert!(out.contains("would copy 0") && out.contains("failed 0"), "sync -n of a complete copy: {out}");
    std::fs::remove_dir_all(dst.join("d00007")).unwrap();
    let out = ok(&["sync", s, d, "--verify"]);
    assert!(out.contains("copied 1 ") && out.contains("failed 0"), "sync of one missing directory: {out}");
    assert_eq!(tree_hash(&dst), before);

    let out = ok(&["scan", s, "--cold", "--inventory", tmp.path().join("inv.json").to_str().unwrap()]);
    assert!(out.contains(&format!("{} files", WIDE)), "scan: {out}");
    let inv = std::fs::read_to_string(tmp.path().join("inv.json")).unwrap();
    let inv: serde_json::Value = serde_json::from_str(&inv).unwrap();
    assert_eq!(inv["unreadable_dirs"].as_u64(), Some(0), "inventory: {inv}");
    assert_eq!(inv["files"].as_u64(), Some(WIDE as u64), "inventory: {inv}");

    let out = ok(&["plan", s]);
    assert!(!out.contains("could not be read"), "plan: {out}");

    ok(&["rm", d]);
    assert!(!dst.exists(), "rm removed the copy");
    assert_eq!(tree_hash(&src), before, "the source is as it was");
}
