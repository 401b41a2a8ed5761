//! `manyfiles mount` / `umount` against what a user does around a mount (issue 38, items
//! 2, 3, 12 and the unclear messages): a process still using it, a mount inside it, a bind
//! mount of it elsewhere, its parent renamed (twice), a `mount` killed during set-up.
//! Every refusal changes nothing (the mount, its data, its record and its daemons stay);
//! every run is bounded in time.

mod reliability_common;

use manyfiles::storage::registry;
use reliability_common::*;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

fn sh(cmd: &str) {
    let st = Command::new("sh").arg("-c").arg(cmd).status().unwrap();
    assert!(st.success(), "{cmd}: {st}");
}

fn mf(args: &[&str]) -> Out {
    run_bounded(args, LIMIT, None)
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The mount at exactly `mp` on top (type, source), from mountinfo.
fn top(mp: &Path) -> Option<(String, String)> {
    registry::mounts_at(mp).last().map(|m| (m.fs_type.clone(), m.source.clone()))
}

/// The `manyfiles mount` record whose mount point is `mp`.
fn record_at(mp: &Path) -> Option<PathBuf> {
    manyfiles::storage::user_mount::persistent_records()
        .into_iter()
        .find(|(_, r)| r.mount_point.as_deref() == Some(mp))
        .map(|(p, _)| p)
}

/// A scratch directory under /tmp (`mounts-*`); on drop, what the test mounted in it is
/// taken down deepest first: its `manyfiles mount`s by `umount`, anything else by umount(8).
struct Scratch {
    dir: tempfile::TempDir,
    children: Vec<Child>,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::Builder::new().prefix("mounts-").tempdir_in("/tmp").unwrap();
        Scratch { dir, children: Vec::new() }
    }
    fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }
    fn mkdir(&self, rel: &str) -> PathBuf {
        let d = self.root().join(rel);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
    /// `manyfiles mount SPEC DIR --size SIZE`, which must succeed.
    fn mount(&self, spec: &str, dir: &Path, size: &str) {
        let o = mf(&["mount", spec, p(dir), "--size", size]);
        assert_eq!(o.code, Some(0), "mount {spec} {}: {}", dir.display(), o.show());
    }
    /// A shell loop appending to `file` every 0.1 s, its working directory `cwd`.
    fn writer(&mut self, cwd: &Path, file: &str) -> u32 {
        let c = Command::new("sh")
            .arg("-c")
            .arg(format!("while :; do echo x >> {file} || exit 9; sleep 0.1; done"))
            .current_dir(cwd)
            .stdin(Stdio::null())
            // A group of its own: the loop's `sleep` (cwd inside too) dies with it, not
            // 0.1 s later, when the next umount may already be looking (CI flake).
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = c.id();
        self.children.push(c);
        pid
    }
}

/// Kill `c`'s process group (the writer and its `sleep`) and reap it.
fn kill_group(c: &mut Child) {
    if let Some(pid) = rustix::process::Pid::from_raw(c.id() as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = c.kill();
    let _ = c.wait();
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for c in &mut self.children {
            kill_group(c);
        }
        let root = self.root();
        let mut mine: Vec<PathBuf> =
            registry::mounts().into_iter().map(|m| m.mount_point).filter(|m| m.starts_with(&root)).collect();
        mine.sort_by_key(|m| std::cmp::Reverse(m.components().count()));
        for m in mine {
            if registry::mounts_at(&m).is_empty() {
                continue;
            }
            let _ = mf(&["umount", p(&m)]);
            if !registry::mounts_at(&m).is_empty() {
                let _ = Command::new("umount").arg(&m).status();
            }
        }
    }
}

/// A refusal: exit `code`, one stderr line with none of the old shapes (a literal `\n`,
/// cleanup's prefix), every `want` in it.
fn assert_refused(o: &Out, code: i32, want: &[&str]) {
    assert_eq!(o.code, Some(code), "{}", o.show());
    assert_eq!(o.lines().len(), 1, "one line: {}", o.show());
    let line = o.lines()[0];
    assert!(!line.contains("\\n") && !line.contains("cleanup:"), "{line}");
    for w in want {
        assert!(line.contains(w), "{w:?} not in: {line}");
    }
}

/// Item 2: `umount DIR` while a process writes in it (the reproduction, on a
/// device class): refused, naming the process; the writer keeps writing, the loop device
/// and daemons stay. Once it is gone, umount takes everything down. Without the fix:
/// exit 1 after a lazy unmount, the writer failing with EIO.
#[test]
fn umount_refuses_a_mount_a_process_uses() {
    let Some(_g) = root_only("mount needs root") else { return };
    let mut s = Scratch::new();
    let m = s.mkdir("m");
    s.mount("ext4@class:ebs-gp2", &m, "64MiB");
    let (_, loopdev) = top(&m).expect("mounted");
    let rec = record_at(&m).expect("recorded");
    let pid = s.writer(&m, "f");
    std::thread::sleep(Duration::from_millis(500));
    let o = mf(&["umount", p(&m)]);
    assert_refused(&o, 1, &[p(&m), &format!("pid {pid} (sh: cwd"), "nothing was changed"]);
    let len = std::fs::metadata(m.join("f")).unwrap().len();
    std::thread::sleep(Duration::from_millis(500));
    assert!(std::fs::metadata(m.join("f")).unwrap().len() > len, "the writer still writes");
    assert!(s.children[0].try_wait().unwrap().is_none(), "the writer did not fail");
    assert_eq!(top(&m).map(|t| t.1), Some(loopdev.clone()), "still mounted");
    assert!(registry::loop_backing_file(&loopdev).is_some() && rec.exists(), "loop device and record stay");
    // An open file alone (no working directory inside) holds it too.
    kill_group(&mut s.children[0]);
    s.children.clear();
    let f = std::fs::File::open(m.join("f")).unwrap();
    assert_refused(&mf(&["umount", p(&m)]), 1, &[&format!("pid {} (", std::process::id()), "open file"]);
    drop(f);
    let o = mf(&["umount", p(&m)]);
    assert_eq!(o.code, Some(0), "{}", o.show());
    assert!(o.stdout.starts_with("umount: took ext4@class:ebs-gp2 down at"), "{}", o.stdout);
    assert!(o.stdout.contains("nbdkit") && !o.stdout.contains("cleanup:"), "{}", o.stdout);
    assert!(top(&m).is_none() && registry::loop_backing_file(&loopdev).is_none() && !rec.exists());
    assert!(m.is_dir(), "DIR stays");
}

/// Item 3: `umount OUTER` with a `manyfiles mount` inside it (and, hostile, one two deep,
/// a foreign mount inside, a bind mount of a subdirectory elsewhere): refused, naming what
/// is in the way; the inner data and records stay. Without the fix: the inner tmpfs and
/// its data were gone, its record orphaned.
#[test]
fn umount_refuses_a_mount_with_mounts_inside_or_bound_elsewhere() {
    let Some(_g) = root_only("mount needs root") else { return };
    let s = Scratch::new();
    let ex = s.mkdir("ex");
    s.mount("exfat", &ex, "32MiB");
    let inner = ex.join("inner");
    std::fs::create_dir(&inner).unwrap();
    s.mount("tmpfs", &inner, "8MiB");
    std::fs::write(inner.join("x"), b"data").unwrap();
    let deep = inner.join("deep");
    std::fs::create_dir(&deep).unwrap();
    s.mount("tmpfs", &deep, "8MiB");
    std::fs::write(deep.join("y"), b"deeper").unwrap();
    let o = mf(&["umount", p(&ex)]);
    assert_refused(&o, 1, &[&format!("manyfiles umount {}", inner.display()), p(&deep)]);
    assert_refused(&mf(&["umount", p(&inner)]), 1, &[&format!("manyfiles umount {}", deep.display())]);
    assert_eq!(std::fs::read(inner.join("x")).unwrap(), b"data");
    assert_eq!(std::fs::read(deep.join("y")).unwrap(), b"deeper");
    for d in [&ex, &inner, &deep] {
        assert!(top(d).is_some() && record_at(d).is_some(), "{} kept", d.display());
    }
    // A mount that is not manyfiles' inside, and a bind mount elsewhere of a subdirectory.
    assert_eq!(mf(&["umount", p(&deep)]).code, Some(0));
    let foreign = inner.join("deep");
    sh(&format!("mount -t tmpfs someones {}", foreign.display()));
    assert_refused(&mf(&["umount", p(&inner)]), 1, &[&format!("{} (tmpfs from someones)", foreign.display())]);
    sh(&format!("umount {}", foreign.display()));
    std::fs::create_dir(inner.join("sub")).unwrap();
    let bound = s.mkdir("bound");
    sh(&format!("mount --bind {} {}", inner.join("sub").display(), bound.display()));
    assert_refused(&mf(&["umount", p(&inner)]), 1, &[&format!("also mounted at {}", bound.display())]);
    sh(&format!("umount {}", bound.display()));
    assert_eq!(std::fs::read(inner.join("x")).unwrap(), b"data");
    // Inner first, then outer: both go, nothing recorded is left.
    assert_eq!(mf(&["umount", p(&inner)]).code, Some(0));
    assert_eq!(mf(&["umount", p(&ex)]).code, Some(0));
    for d in [&ex, &inner, &deep] {
        assert!(record_at(d).is_none(), "{} record gone", d.display());
    }
    assert!(top(&ex).is_none() && ex.is_dir());
}

/// Item 12: the mount's parent renamed (twice): `umount NEWPATH` takes it down, the old
/// path says where it went (exit 2). Without the fix both failed ("no manyfiles mount is
/// recorded there") and only `cleanup --mounts` removed it.
#[test]
fn umount_follows_a_renamed_parent() {
    let Some(_g) = root_only("mount needs root") else { return };
    let s = Scratch::new();
    let m = s.mkdir("a/mnt");
    s.mount("tmpfs", &m, "8MiB");
    let rec = record_at(&m).expect("recorded");
    std::fs::write(m.join("k"), b"kept").unwrap();
    let (a, b, c) = (s.root().join("a"), s.root().join("b"), s.root().join("c"));
    std::fs::rename(&a, &b).unwrap();
    std::fs::rename(&b, &c).unwrap();
    let now = c.join("mnt");
    assert_refused(&mf(&["umount", p(&m)]), 2, &["DIR:", &format!("manyfiles umount {}", now.display())]);
    assert_eq!(std::fs::read(now.join("k")).unwrap(), b"kept", "the refusal changed nothing");
    let o = mf(&["umount", p(&now)]);
    assert_eq!(o.code, Some(0), "{}", o.show());
    assert!(top(&now).is_none() && !rec.exists() && now.is_dir(), "{}", o.show());
}

/// Bad input to `mount` names mount's own arguments (SPEC, --size), not a ladder's --fs
/// or --target; exit 2, one line.
#[test]
fn mount_bad_input_names_its_own_arguments() {
    let Some(_g) = root_only("mount needs root") else { return };
    let s = Scratch::new();
    let d = s.mkdir("d");
    for (spec, size) in [("tmpfs", "0"), ("ext4@class:ebs-gp2", "0"), ("exfat", "1TiB")] {
        let o = mf(&["mount", spec, p(&d), "--size", size]);
        assert_refused(&o, 2, &["manyfiles: --size:"]);
        assert!(!o.stderr.contains("--fs") && !o.stderr.contains("--target"), "{}", o.show());
    }
    let mut c = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", p(&bin()), "mount", "tmpfs", p(&d)])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("setpriv (util-linux) is needed as root");
    let code = wait_bounded(&mut c, LIMIT);
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut c.stderr.take().unwrap(), &mut stderr).unwrap();
    let o = Out { code, stdout: String::new(), stderr };
    assert_refused(&o, 2, &["manyfiles: SPEC:", "root"]);
    assert!(!o.stderr.contains("--fs") && !o.stderr.contains("--target"), "{}", o.show());
    assert!(top(&d).is_none());
}

/// A `mount` of a device class killed (SIGKILL) once its nbdkit runs: plain `cleanup`
/// says it stopped the daemons (it said "0 unmounted" and nothing of them).
#[test]
fn cleanup_after_a_killed_mount_says_what_it_stopped() {
    let Some(_g) = root_only("mount needs root") else { return };
    let s = Scratch::new();
    let d = s.mkdir("d");
    // The kill must come while the mount is being set up: a mount that finished first
    // is taken down and tried again (three times at most).
    let mut caught = false;
    for _ in 0..3 {
        let mut child = command(
            &["mount".as_ref(), "ext4@class:ebs-gp2".as_ref(), d.as_os_str(), "--size".as_ref(), "64MiB".as_ref()],
            None,
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        // The child's own nbdkit: its socket is in /run/manyfiles/nbd-<time>-<pid>-<n>/.
        let key = format!("-{}-", child.id());
        let nbdkit_started = || {
            std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
                let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
                let cmd = String::from_utf8_lossy(&cmd);
                cmd.starts_with("nbdkit\0") && cmd.contains("/run/manyfiles/nbd-") && cmd.contains(&key)
            })
        };
        let t0 = std::time::Instant::now();
        while !nbdkit_started() && t0.elapsed() < LIMIT && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(2));
        }
        signal(&child, libc::SIGKILL);
        let _ = child.wait();
        if record_at(&d).is_none() {
            caught = true;
            break;
        }
        assert_eq!(mf(&["umount", p(&d)]).code, Some(0));
    }
    assert!(caught, "three mounts finished before the kill");
    let o = mf(&["cleanup"]);
    assert_eq!(o.code, Some(0), "{}", o.show());
    assert!(o.stdout.contains("stopped (nbdkit"), "{}", o.stdout);
    assert!(top(&d).is_none());
}
