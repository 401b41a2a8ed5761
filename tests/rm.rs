//! `manyfiles rm`: removes generated trees completely and counts them, refuses `/` and
//! anything resolving to it, never follows symlinks, leaves mount points alone (unless
//! --cross-mounts), survives a tree vanishing under it, checks every PATH before removing
//! anything, writes --json, and lists what it could not remove.

mod common;

use common::*;
use serde_json::Value;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn mf(args: &[&std::ffi::OsStr]) -> Run {
    run(args)
}

fn make_tree(dir: &Path, files: u32, per_dir: u32) {
    let mut a: Vec<OsString> = vec!["gen".into(), dir.into()];
    for w in
        ["--files", &files.to_string(), "--size", "1k", "--files-per-dir", &per_dir.to_string(), "--fanout", "4", "-q"]
    {
        a.push(w.into());
    }
    run(&a).ok();
}

fn json_of(p: &Path) -> Value {
    load_json(p)
}

/// A tmpfs mounted at `dir` for the test's lifetime (root only; None otherwise).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path) -> Option<Tmpfs> {
        if !is_root() {
            return None;
        }
        std::fs::create_dir_all(dir).unwrap();
        let ok = std::process::Command::new("mount").args(["-t", "tmpfs", "none"]).arg(dir).status();
        ok.is_ok_and(|s| s.success()).then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

fn counts(root: &Path) -> (u64, u64) {
    let all = walk(root, false);
    let files = all.iter().filter(|e| !e.is_dir).count() as u64;
    let dirs = all.iter().filter(|e| e.is_dir).count() as u64 + 1; // the root too
    (files, dirs)
}

#[test]
fn removes_a_generated_tree_completely_and_counts_right() {
    let t = tempfile::tempdir().unwrap();
    // On a tmpfs of its own (as root) the bytes freed are exact enough to check.
    let mnt = t.path().join("mnt");
    let fs = Tmpfs::mount(&mnt);
    let base = if fs.is_some() { mnt.clone() } else { t.path().to_path_buf() };
    let dir = base.join("tree");
    make_tree(&dir, 3000, 100);
    let (files, dirs) = counts(&dir);
    assert!(files >= 3000 && dirs > 30, "{files} files, {dirs} dirs");
    let json = t.path().join("rm.json");
    let r =
        mf(&["rm".as_ref(), dir.as_os_str(), "--json".as_ref(), json.as_os_str(), "--threads".as_ref(), "3".as_ref()]);
    r.ok();
    assert!(!dir.exists(), "the tree is gone");
    assert!(base.exists(), "its parent stays");
    assert!(r.stdout.contains(&format!("removed {files} files and {dirs} directories")), "{}", r.stdout);
    // No terminal: no progress line, and a success says nothing on stderr.
    assert_eq!(r.stderr, "", "stderr without a terminal");
    let v = json_of(&json);
    assert_eq!((u(&v, "files"), u(&v, "dirs"), u(&v, "failed")), (files, dirs, 0), "{v}");
    assert_eq!(u(&v, "threads"), 3);
    assert!(!v["interrupted"].as_bool().unwrap());
    assert!(arr(&v, "failures").is_empty());
    assert!(f(&v, "elapsed_s") > 0.0);
    assert_eq!(
        arr(&v, "paths")[0].as_str().unwrap(),
        std::fs::canonicalize(&base).unwrap().join("tree").to_str().unwrap()
    );
    if fs.is_some() {
        // tmpfs: 3,000 files of 1 KiB take a 4 KiB page each.
        let freed = u(&v, "bytes_freed");
        assert!((3000 * 4096..3000 * 4096 * 2).contains(&freed), "bytes_freed {freed}");
    } else {
        println!("bytes_freed not checked: mounting a tmpfs needs root");
    }
}

#[test]
fn json_to_stdout_and_summary_to_stderr() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("d");
    std::fs::create_dir_all(dir.join("a/b")).unwrap();
    std::fs::write(dir.join("a/f"), b"x").unwrap();
    let r = mf(&["rm".as_ref(), dir.as_os_str(), "--json".as_ref(), "-".as_ref()]);
    r.ok();
    let v: Value = serde_json::from_str(&r.stdout).expect("stdout is one JSON document");
    assert_eq!((u(&v, "files"), u(&v, "dirs")), (1, 3));
    assert!(r.stderr.contains("removed 1 files and 3 directories"), "{}", r.stderr);
}

#[test]
fn refuses_root_and_paths_resolving_to_it_and_removes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let keep = t.path().join("keep");
    make_tree(&keep, 50, 10);
    let before = snapshot(&keep);
    let root_link = t.path().join("to-root");
    std::os::unix::fs::symlink("/", &root_link).unwrap();
    let up = t.path().join("up");
    std::os::unix::fs::symlink("../../../../../../../../../../..", &up).unwrap();
    let bad: Vec<OsString> =
        vec!["/".into(), "/..".into(), "//".into(), root_link.clone().into(), up.clone().into(), {
            let mut s = root_link.clone().into_os_string();
            s.push("/");
            s
        }];
    for b in &bad {
        // The valid PATH first: it must survive the refusal of the one after it.
        let r = mf(&["rm".as_ref(), keep.as_os_str(), b.as_os_str()]);
        r.expect_code(2);
        let lines = r.stderr_lines();
        assert_eq!(lines.len(), 1, "{b:?}: {}", r.stderr);
        assert!(lines[0].starts_with("manyfiles: rm: "), "{b:?}: {}", lines[0]);
        assert!(lines[0].contains("root directory") || lines[0].contains(". or .."), "{b:?}: {}", lines[0]);
        assert_eq!(r.stdout, "");
        assert_eq!(snapshot(&keep), before, "{b:?}: nothing removed");
        assert!(std::fs::symlink_metadata(&root_link).is_ok(), "the link to / stays");
    }
}

#[test]
fn a_missing_path_is_refused_and_nothing_is_removed() {
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (t.path().join("a"), t.path().join("b"));
    make_tree(&a, 100, 10);
    std::fs::create_dir(&b).unwrap();
    std::fs::write(b.join("f"), b"x").unwrap();
    let missing = t.path().join("no/such/dir");
    let before = snapshot(t.path());
    let r = mf(&["rm".as_ref(), a.as_os_str(), missing.as_os_str(), b.as_os_str()]);
    r.expect_code(2);
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "{}", r.stderr);
    assert!(lines[0].starts_with(&format!("manyfiles: rm: {}: ", missing.display())), "{}", lines[0]);
    assert_eq!(snapshot(t.path()), before, "nothing removed");
    let last = t.path().join("nothing-here");
    let r = mf(&["rm".as_ref(), a.as_os_str(), last.as_os_str()]);
    r.expect_code(2);
    assert!(r.stderr.contains("no such file or directory"), "{}", r.stderr);
    assert_eq!(snapshot(t.path()), before, "nothing removed");
}

#[test]
fn symlinks_are_removed_never_followed() {
    let t = tempfile::tempdir().unwrap();
    let outside = t.path().join("outside");
    make_tree(&outside, 40, 10);
    let before = exact_tree_hash(&outside);
    // A PATH that is a symlink to a directory: the link goes, the directory stays.
    let link = t.path().join("link");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let r = mf(&["rm".as_ref(), link.as_os_str()]);
    r.ok();
    assert!(r.stdout.contains("removed 1 files and 0 directories"), "{}", r.stdout);
    assert!(std::fs::symlink_metadata(&link).is_err(), "the link is gone");
    assert_eq!(exact_tree_hash(&outside), before, "outside untouched");
    // Symlinks inside the tree pointing outside (to the directory, a file in it, and /).
    let tree = t.path().join("tree");
    make_tree(&tree, 40, 10);
    std::os::unix::fs::symlink(&outside, tree.join("out-dir")).unwrap();
    let a_file = walk(&outside, false).into_iter().find(|e| !e.is_dir).unwrap().path;
    std::os::unix::fs::symlink(&a_file, tree.join("out-file")).unwrap();
    std::os::unix::fs::symlink("/", tree.join("root")).unwrap();
    let (files, dirs) = counts(&tree);
    let r = mf(&["rm".as_ref(), tree.as_os_str()]);
    r.ok();
    assert!(r.stdout.contains(&format!("removed {files} files and {dirs} directories")), "{}", r.stdout);
    assert!(!tree.exists());
    assert_eq!(exact_tree_hash(&outside), before, "outside untouched");
}

#[test]
fn mount_points_are_left_alone_unless_cross_mounts() {
    let t = tempfile::tempdir().unwrap();
    let tree = t.path().join("tree");
    let mnt = tree.join("sub/mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let Some(_fs) = Tmpfs::mount(&mnt) else {
        println!("skipped: mounting a tmpfs needs root");
        return;
    };
    for i in 0..10 {
        std::fs::write(mnt.join(format!("m{i}")), vec![1u8; 8192]).unwrap();
        std::fs::write(tree.join(format!("sub/f{i}")), b"x").unwrap();
        std::fs::write(tree.join(format!("g{i}")), b"x").unwrap();
    }
    std::fs::create_dir(mnt.join("deeper")).unwrap();
    std::fs::write(mnt.join("deeper/x"), b"x").unwrap();
    let inside = exact_tree_hash(&mnt);

    // Default: the mount is not entered; it is listed as a failure (exit 1), everything
    // beside it goes, and the directories above it stay.
    let json = t.path().join("rm.json");
    let r = mf(&["rm".as_ref(), tree.as_os_str(), "--json".as_ref(), json.as_os_str()]);
    r.expect_code(1);
    assert!(r.stdout.contains("1 failed:") && r.stdout.contains("sub/mnt: a mount point: not crossed"), "{}", r.stdout);
    assert!(r.stderr.contains("1 entry could not be removed"), "{}", r.stderr);
    assert_eq!(exact_tree_hash(&mnt), inside, "the mount's contents untouched");
    let left: Vec<String> =
        walk(&tree, false).into_iter().filter(|e| !e.rel.starts_with("sub/mnt/")).map(|e| e.rel).collect();
    assert_eq!(left, vec!["sub", "sub/mnt"], "all else removed");
    let v = json_of(&json);
    assert_eq!((u(&v, "files"), u(&v, "dirs"), u(&v, "failed")), (20, 0, 1), "{v}");
    assert!(s(&arr(&v, "failures")[0], "path").ends_with("tree/sub/mnt"), "{v}");

    // --cross-mounts: the mount is emptied; the mount point itself cannot be removed while
    // mounted (EBUSY), so it is the one failure and sub/ and tree/ stay above it.
    let r = mf(&["rm".as_ref(), tree.as_os_str(), "--cross-mounts".as_ref(), "--json".as_ref(), json.as_os_str()]);
    r.expect_code(1);
    assert!(r.stdout.contains("1 failed:") && r.stdout.contains("sub/mnt: Device or resource busy"), "{}", r.stdout);
    assert!(walk(&mnt, false).is_empty(), "the mount's contents removed");
    assert!(mnt.is_dir() && tree.join("sub").is_dir());
    let v = json_of(&json);
    assert_eq!((u(&v, "files"), u(&v, "dirs"), u(&v, "failed")), (11, 1, 1), "{v}");
    // Bytes freed: the tmpfs's pages (10 × 8 KiB) at least.
    assert!(u(&v, "bytes_freed") >= 10 * 8192, "{v}");
}

#[test]
fn a_tree_vanishing_mid_walk_is_no_failure() {
    for round in 0..6 {
        let t = tempfile::tempdir().unwrap();
        let tree = t.path().join("tree");
        make_tree(&tree, 4000, 50);
        let victim = tree.clone();
        let other = std::thread::spawn(move || {
            // Someone else removing the same tree at the same time.
            let _ = std::fs::remove_dir_all(&victim);
        });
        let r = mf(&["rm".as_ref(), tree.as_os_str(), "-q".as_ref()]);
        other.join().unwrap();
        println!("round {round}: exit {:?}, {}", r.code, r.stdout.trim());
        assert!(!r.stderr.contains("panicked"), "round {round}: {}", r.stderr);
        match r.code {
            // Common: every ENOENT along the way was ignored.
            Some(0) => assert_eq!(r.stderr, ""),
            // The whole tree vanished before rm resolved it: a clean one-line refusal.
            Some(2) => {
                assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
                assert!(r.stderr.contains("no such file or directory"), "{}", r.stderr);
            }
            _ => panic!("round {round}: {r:?}"),
        }
        let _ = std::fs::remove_dir_all(&tree);
        assert!(!tree.exists());
    }
}

#[test]
fn an_unreadable_directory_is_a_listed_failure() {
    if !is_root() {
        println!("skipped: needs root to make a directory of another user (run as nobody via setpriv)");
        return;
    }
    const NOBODY: u32 = 65534;
    let t = tempfile::tempdir().unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let tree = t.path().join("tree");
    make_tree(&tree, 60, 20);
    // Someone else's unreadable directory (root's, mode 000): cannot be emptied.
    let foreign = tree.join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("secret"), b"x").unwrap();
    // Our own unreadable directory: rm grants itself u+rwx, as the owner may, and removes it.
    let own = tree.join("own");
    std::fs::create_dir(&own).unwrap();
    std::fs::write(own.join("f"), b"x").unwrap();
    for e in walk(&tree, false).into_iter().filter(|e| !e.rel.starts_with("foreign")) {
        std::os::unix::fs::chown(&e.path, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    std::os::unix::fs::chown(&tree, Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o000)).unwrap();
    // The JSON is written through a temp file beside it: a directory nobody may write.
    let out_dir = t.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    std::os::unix::fs::chown(&out_dir, Some(NOBODY), Some(NOBODY)).unwrap();
    let json = out_dir.join("rm.json");
    let o = std::process::Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups", "--"])
        .arg(bin())
        .args(["rm".as_ref(), tree.as_os_str(), "--json".as_ref(), json.as_os_str()])
        .output()
        .expect("setpriv (util-linux)");
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(out.contains("1 failed:") && out.contains("tree/foreign: Permission denied"), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let left: Vec<String> = walk(&tree, false).into_iter().map(|e| e.rel).collect();
    assert_eq!(left, vec!["foreign", "foreign/secret"], "all else removed, our own 000 directory too");
    let v = json_of(&json);
    assert_eq!(u(&v, "failed"), 1);
    assert!(s(&arr(&v, "failures")[0], "error").contains("Permission denied"), "{v}");
}

/// Issue 40, item 4: on exFAT (a FUSE file system) rm said `0 B freed`: the free space was
/// asked of the removed directory, which FUSE answers no statfs for. Now asked of its parent.
#[test]
fn rm_on_exfat_counts_the_bytes_it_freed() {
    let tools = |path: &std::ffi::OsStr| {
        ["mkfs.exfat", "mount.exfat-fuse"].iter().find_map(|tool| {
            manyfiles::storage::managed::find_in_path(tool, path)
                .is_none()
                .then(|| format!("needs {tool} (Debian packages exfatprogs, exfat-fuse)"))
        })
    };
    if skipped(missing(&[&tools])) {
        return;
    }
    let _s = serial();
    let t = tempfile::tempdir().unwrap();
    let mnt = t.path().join("ex");
    std::fs::create_dir(&mnt).unwrap();
    let _mounted = Mounted::new("exfat@ram", &mnt, "128MiB");
    let tree = mnt.join("t");
    run(["gen", tree.to_str().unwrap(), "--files", "500", "--size", "16k", "--quiet"]).ok();
    let json = t.path().join("rm.json");
    run(["rm", "--json", json.to_str().unwrap(), tree.to_str().unwrap()]).ok();
    // 500 × 16 KiB of data, in exFAT clusters of at least 4 KiB.
    let freed = u(&json_of(&json), "bytes_freed");
    assert!((500 * 16384..=500 * 16384 * 3).contains(&freed), "bytes_freed {freed}");
}
