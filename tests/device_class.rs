//! Device classes (`@class:`): every preset set up and torn down with nothing left (no
//! nbdkit, nbdfuse, loop device or mount), `manyfiles mount`/`umount`, SIGINT and kill -9
//! of a ladder followed by `cleanup`, and a missing tool named with its package. Needs
//! root, nbdkit and nbdfuse: without them each test prints why it skipped, except under
//! CI (CI=true), where .ci/run installs them and a skip is a failure.

mod common;
mod unprivileged;

use common::serial;
use manyfiles::storage::fsspec::FsSpec;
use manyfiles::storage::kinds::KindRecord;
use manyfiles::storage::managed::ManagedFs;
use manyfiles::storage::registry;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;

/// Why this machine cannot run the tests, if it cannot.
fn missing() -> Option<String> {
    let nbd = |path: &std::ffi::OsStr| {
        manyfiles::storage::nbd_stack::TOOLS.iter().find_map(|(tool, pkg)| {
            manyfiles::storage::managed::find_in_path(tool, path)
                .is_none()
                .then(|| format!("needs {tool} (Debian package {pkg})"))
        })
    };
    let fuse = |_: &std::ffi::OsStr| (!Path::new("/dev/fuse").exists()).then(|| "needs /dev/fuse".to_string());
    common::missing(&[&nbd, &fuse])
}

/// Skip (return) with the reason printed, unless under CI.
macro_rules! need_stack {
    () => {
        if common::skipped(missing()) {
            return;
        }
    };
}

/// nbdkit and nbdfuse processes whose argv names something under `dir`.
fn daemons_in(dir: &Path) -> Vec<(u32, String)> {
    let d = dir.display().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else { continue };
        let args: Vec<String> =
            cmd.split(|&b| b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        let Some(tool) = args.first().map(|a| a.rsplit('/').next().unwrap_or(a).to_string()) else { continue };
        if (tool == "nbdkit" || tool == "nbdfuse") && args.iter().any(|a| a.starts_with(&d)) {
            out.push((pid, tool));
        }
    }
    out
}

/// Everything a stack leaves if it is not torn down: daemons, the FUSE mount, loop
/// devices on its disk, the directory. Empty when all is gone.
fn leftovers(nbd_dir: &Path, mount_point: &Path) -> Vec<String> {
    let mut v: Vec<String> = daemons_in(nbd_dir).into_iter().map(|(p, t)| format!("{t} pid {p}")).collect();
    let disk = manyfiles::storage::nbd_stack::disk_file(nbd_dir);
    v.extend(registry::loops_backed_by(&disk).into_iter().map(|d| format!("loop {d}")));
    v.extend(
        registry::mounts()
            .into_iter()
            .filter(|m| m.mount_point.starts_with(nbd_dir))
            .map(|m| format!("mount {:?}", m.mount_point)),
    );
    v.extend(
        registry::mounts_at(mount_point)
            .into_iter()
            .map(|m| format!("mount {} ({})", mount_point.display(), m.fs_type)),
    );
    if nbd_dir.exists() {
        v.push(format!("directory {}", nbd_dir.display()));
    }
    v
}

/// The registry records naming a device class stack: (record path, stack dir, mount point).
fn class_records() -> Vec<(PathBuf, PathBuf, PathBuf)> {
    std::fs::read_dir(registry::state_dir())
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json" || x == "mount"))
                .filter_map(|p| {
                    let r: registry::Record = serde_json::from_slice(&std::fs::read(&p).ok()?).ok()?;
                    let KindRecord::Class(class) = r.kind else { return None };
                    Some((p, class.nbd_dir, r.mount_point?))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn every_preset_sets_up_and_tears_down() {
    need_stack!();
    // Beside another test's cleanup, which stops stacks, this test's checks of what a
    // stack leaves would also see that one's.
    let _g = serial();
    for p in manyfiles::storage::device_class::PRESETS {
        let spec = FsSpec::parse(&format!("ext4@class:{}", p.name)).unwrap();
        let t0 = Instant::now();
        let mut fs = ManagedFs::create(&spec, 64 * MIB).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        let mp = fs.mount_point().to_path_buf();
        let d = fs.details().clone();
        let c = d.class.clone().expect("class details recorded");
        assert_eq!(c.class.name, p.name);
        assert!(c.nbdkit_version.starts_with("nbdkit"), "{}", c.nbdkit_version);
        assert!(c.nbdfuse_version.contains("nbdfuse"), "{}", c.nbdfuse_version);
        assert!(c.nbdkit_command.iter().any(|a| a == "--filter=delay"));
        assert_eq!(registry::mounts_at(&mp).last().unwrap().fs_type, "ext4");
        std::fs::write(mp.join("f"), vec![7u8; 65536]).unwrap();
        let nbd_dir = d.image.parent().unwrap().parent().unwrap().to_path_buf();
        assert_eq!(daemons_in(&nbd_dir).len(), 2, "{}: nbdkit and nbdfuse serve it", p.name);
        assert!(fs.serving_pids().len() >= 2);
        fs.teardown().unwrap();
        let left = leftovers(&nbd_dir, &mp);
        assert!(left.is_empty(), "{}: left {left:?}", p.name);
        println!("{}: set up, written, torn down in {:.1} s", p.name, t0.elapsed().as_secs_f64());
    }
}

#[test]
fn mount_and_umount_leave_nothing() {
    need_stack!();
    let _g = serial();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let mp = dir.path().canonicalize().unwrap();
    let r = common::run(["mount", "ext4@class:ebs-magnetic", mp.to_str().unwrap(), "--size", "128MiB"]);
    r.ok();
    assert!(r.stdout.contains("class ebs-magnetic") && r.stdout.contains("umount"), "{}", r.stdout);
    assert_eq!(registry::mounts_at(&mp).last().map(|m| m.fs_type.clone()).as_deref(), Some("ext4"));
    let (rec, nbd_dir, _) = class_records().into_iter().find(|(_, _, m)| *m == mp).expect("registered");
    // A `.mount` record (older builds' cleanups read only `*.json`), no lock file left.
    assert!(registry::is_mount_record(&rec), "{}", rec.display());
    assert!(!rec.with_extension("json").exists() && !rec.with_extension("lock").exists());
    assert_eq!(daemons_in(&nbd_dir).len(), 2, "nbdkit and nbdfuse outlive the mount command");
    std::fs::write(mp.join("data"), b"user data").unwrap();
    // Plain cleanup leaves the user's mount alone.
    let c = common::run(["cleanup"]);
    c.ok();
    assert!(registry::mounts_at(&mp).last().is_some() && rec.exists(), "cleanup kept the mount: {}", c.stdout);
    // umount of a directory with no manyfiles mount is refused.
    let other = tempfile::tempdir_in("/var/tmp").unwrap();
    common::run(["umount", other.path().to_str().unwrap()]).expect_code(2);
    let u = common::run(["umount", mp.to_str().unwrap()]);
    u.ok();
    let left = leftovers(&nbd_dir, &mp);
    assert!(left.is_empty(), "umount left {left:?}");
    assert!(!rec.exists() && !rec.with_extension("lock").exists());
    assert!(mp.is_dir(), "the user's directory stays");
}

/// Start a ladder on a class target, wait until its stack serves a mount, signal it.
fn ladder_then(sig: i32) -> (PathBuf, PathBuf, std::process::ExitStatus) {
    let out = tempfile::tempdir().unwrap();
    let mut child = Command::new(common::bin())
        .args(["ladder", "--fs", "ext4@class:ebs-gp2", "--total", "2MiB", "--to", "64", "--runs", "50", "--quiet"])
        .arg("--target")
        .arg(out.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let found = loop {
        let mine = class_records().into_iter().find(|(r, _, mp)| {
            let rec: Option<registry::Record> = serde_json::from_slice(&std::fs::read(r).unwrap_or_default()).ok();
            rec.is_some_and(|x| x.pid == child.id()) && !registry::mounts_at(mp).is_empty()
        });
        if let Some(f) = mine {
            break f;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "the ladder's class target never came up");
        assert!(child.try_wait().unwrap().is_none(), "the ladder ended before its target came up");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(500)); // into the trials
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
    let st = child.wait().unwrap();
    (found.1, found.2, st)
}

#[test]
fn sigint_tears_the_stack_down() {
    need_stack!();
    let _g = serial();
    let (nbd_dir, mp, st) = ladder_then(libc::SIGINT);
    assert!(!st.success(), "interrupted: {st}");
    let left = leftovers(&nbd_dir, &mp);
    assert!(left.is_empty(), "after SIGINT the run left {left:?}");
}

#[test]
fn kill_9_then_cleanup_removes_the_stack() {
    need_stack!();
    let _g = serial();
    let (nbd_dir, mp, _) = ladder_then(libc::SIGKILL);
    assert_eq!(daemons_in(&nbd_dir).len(), 2, "nbdkit and nbdfuse outlive a kill -9");
    // The mount too, unless the kill came while a trial re-formatted the target (its
    // `refresh` unmounts, runs mkfs on the slow class device, mounts again).
    let mounted = !registry::mounts_at(&mp).is_empty();
    println!("kill -9 left the stack{}", if mounted { " and its mount" } else { " (between formats: no mount)" });
    let rep = registry::cleanup().unwrap();
    assert!(rep.problems.is_empty(), "{rep}");
    let left = leftovers(&nbd_dir, &mp);
    assert!(left.is_empty(), "cleanup left {left:?}: {rep}");
    assert!(!mp.exists());
}

#[test]
fn a_missing_tool_names_its_package() {
    need_stack!();
    let specs = vec![FsSpec::parse("ext4@class:hdd").unwrap()];
    // Everything an ext4 needs, but not nbdkit; then nbdkit but not nbdfuse.
    let dir = tempfile::tempdir().unwrap();
    let link = |t: &str| {
        let real = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"].iter().map(|d| Path::new(d).join(t)).find(|p| p.exists());
        std::os::unix::fs::symlink(real.unwrap(), dir.path().join(t)).unwrap();
    };
    for t in ["mkfs.ext4", "losetup", "mount", "umount", "setsid"] {
        link(t);
    }
    let e = ManagedFs::preflight_in(&specs, 64 * MIB, dir.path().as_os_str()).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("nbdkit not found: install the Debian package nbdkit"), "{e}");
    assert!(!e.to_string().contains('\n'));
    link("nbdkit");
    let e = ManagedFs::preflight_in(&specs, 64 * MIB, dir.path().as_os_str()).unwrap_err();
    assert!(e.to_string().contains("nbdfuse not found: install the Debian package libnbd-bin"), "{e}");
}

/// What a process with `pid` left in the state directory, as mounts, loop devices and
/// nbd daemons: every key it made holds `-<pid>-`.
fn left_by(pid: u32) -> Vec<String> {
    let tag = format!("-{pid}-");
    let mut v: Vec<String> = std::fs::read_dir(registry::state_dir())
        .map(|rd| rd.flatten().map(|e| e.path().display().to_string()).filter(|p| p.contains(&tag)).collect())
        .unwrap_or_default();
    v.extend(
        registry::mounts()
            .into_iter()
            .filter(|m| m.mount_point.display().to_string().contains(&tag) || m.source.contains(&tag))
            .map(|m| format!("mount {}", m.mount_point.display())),
    );
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(f) = registry::loop_backing_file(&format!("/dev/{name}")) {
            if f.display().to_string().contains(&tag) {
                v.push(format!("loop {name} on {}", f.display()));
            }
        }
    }
    v.extend(daemons_in(&registry::state_dir()).into_iter().filter_map(|(p, t)| {
        let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
        String::from_utf8_lossy(&cmd).contains(&tag).then(|| format!("{t} pid {p}"))
    }));
    v
}

#[test]
fn a_ladder_far_over_its_budget_is_refused_before_anything_starts() {
    need_stack!();
    let out = tempfile::tempdir().unwrap();
    let child = Command::new(common::bin())
        .args(["ladder", "--fs", "ext4@class:hdd", "--to", "4096", "--max-time", "20s", "--quiet"])
        .current_dir(out.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let t0 = Instant::now();
    let r = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "refused as bad input: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    for want in [
        "manyfiles: --max-time: 6 runs of every cell would take about",
        "ext4@class:hdd",
        "× the budget 20 s",
        "--to N",
    ] {
        assert!(err.contains(want), "{want:?} in {err}");
    }
    assert!(t0.elapsed() < Duration::from_secs(10), "refused before any format: {:?}", t0.elapsed());
    let left = left_by(pid);
    assert!(left.is_empty(), "the refused ladder left {left:?}");
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0, "no run directory or results");
}

/// nbdkit gone right after it accepted the readiness probe (seen once in CI): the stack
/// starts it once more and comes up. A stand-in `nbdkit` first in PATH (for the child
/// only) listens on the socket, writes the pid file, accepts one connection and exits;
/// called a second time it runs the real nbdkit.
#[test]
fn an_nbdkit_that_exits_after_the_probe_is_started_again() {
    need_stack!();
    let _g = serial();
    let real = ["/usr/sbin/nbdkit", "/usr/bin/nbdkit", "/sbin/nbdkit"].into_iter().find(|p| Path::new(p).exists());
    let real = real.expect("nbdkit found above");
    let bin = tempfile::tempdir().unwrap();
    let marker = bin.path().join("started-once");
    let fake = format!(
        r#"#!/usr/bin/python3
import os, socket, sys
if os.path.exists("{marker}"):
    os.execv("{real}", ["nbdkit"] + sys.argv[1:])
open("{marker}", "w").close()
a = sys.argv
sock, pidfile = a[a.index("--unix") + 1], a[a.index("--pidfile") + 1]
s = socket.socket(socket.AF_UNIX)
s.bind(sock)
s.listen(1)
open(pidfile, "w").write(str(os.getpid()))
s.accept()[0].close()
"#,
        marker = marker.display()
    );
    let script = bin.path().join("nbdkit");
    std::fs::write(&script, fake).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.path().display(), std::env::var("PATH").unwrap_or_default());
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let mp = dir.path().canonicalize().unwrap();
    let out = Command::new(common::bin())
        .args(["mount", "ext4@class:ebs-gp2", mp.to_str().unwrap(), "--size", "64MiB"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(marker.exists(), "the stand-in ran first");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (_, nbd_dir, _) = class_records().into_iter().find(|(_, _, m)| *m == mp).expect("registered");
    assert_eq!(daemons_in(&nbd_dir).len(), 2, "the real nbdkit and nbdfuse serve it");
    std::fs::write(mp.join("f"), b"x").unwrap();
    common::run(["umount", mp.to_str().unwrap()]).ok();
    let left = leftovers(&nbd_dir, &mp);
    assert!(left.is_empty(), "umount left {left:?}");
}

/// Issue 38, reproduction 8: another local user (nobody) writes nothing to a mount the
/// tool made: exFAT and NTFS (FUSE daemons that mount with allow_other, once with mode
/// 0777), and ext4, exFAT and NTFS on a device class; nor reaches the class's disk (the
/// nbdkit socket, nbdfuse's file, the loop device). Mounted at a directory nobody may
/// enter the parent of, so that only the mount stands in the way.
#[test]
fn another_user_writes_nothing_to_a_mount_the_tool_made() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    need_stack!();
    let _g = serial();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let have = |t: &str| manyfiles::storage::managed::find_in_path(t, &path).is_some();
    if !have("setpriv") {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI must run this test: needs setpriv");
        println!("skipped: needs setpriv (util-linux)");
        return;
    }
    for label in ["exfat", "ntfs", "ext4@class:lat=1ms", "exfat@class:lat=1ms", "ntfs@class:lat=1ms"] {
        let tools =
            if label.starts_with("exfat") { ["mkfs.exfat", "mount.exfat-fuse"] } else { ["mkfs.ntfs", "ntfs-3g"] };
        if !label.starts_with("ext4") && !tools.iter().all(|t| have(t)) {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI must run this test: needs {tools:?}");
            println!("skipped {label}: needs {tools:?}");
            continue;
        }
        let parent = tempfile::tempdir_in("/var/tmp").unwrap();
        std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mp = parent.path().join("mnt");
        std::fs::create_dir(&mp).unwrap();
        let spec = FsSpec::parse(label).unwrap();
        let mut fs = ManagedFs::create_in(&spec, 64 * MIB, 0, Some(&mp)).unwrap_or_else(|e| panic!("{label}: {e}"));
        let d = fs.details().clone();
        let wrote = unprivileged::writes_by_nobody(&mp);
        assert!(wrote.is_empty(), "{label}: nobody, on the mount ({}): {wrote:?}", d.mount_options);
        let m = std::fs::metadata(&mp).unwrap();
        assert_eq!(m.permissions().mode() & 0o022, 0, "{label}: the mount's root is writable by others");
        if let Some(c) = &d.class {
            let nbd_dir = d.image.parent().unwrap().parent().unwrap().to_path_buf();
            let sock = nbd_dir.join("sock");
            let sm = std::fs::symlink_metadata(&sock).unwrap();
            assert!(sm.file_type().is_socket() && sm.permissions().mode() & 0o077 == 0, "{label}: {sm:?}");
            let dev = d.device.clone().unwrap();
            let script = format!(
                "(: >> '{dev}') 2>/dev/null && echo 'opened {dev} for writing'; \
                 (: >> '{}') 2>/dev/null && echo 'opened the disk file for writing'; \
                 test -e '{}' && echo 'sees the socket'; true",
                d.image.display(),
                sock.display()
            );
            let (code, out) = unprivileged::as_nobody(&script, Duration::from_secs(30));
            assert_eq!(code, Some(0), "{label}: {out}");
            assert!(out.trim().is_empty(), "{label} ({}): nobody {out}", c.class.name);
        }
        fs.teardown().unwrap();
    }
}
