//! Scenario 12: external helpers that misbehave. A fake `mkfs.ext4` placed first in PATH
//! daemonises with its stdio kept open, sleeps forever, or prints 100 MB; a signal
//! arrives while the tool waits on the hanging one. The tool must never hang, must name
//! the helper, and must leave nothing behind (mounts, loop devices, images).

mod reliability_common;

use reliability_common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(180);

/// The real tool, found without the fake directory in PATH.
fn real(tool: &str) -> Option<PathBuf> {
    ["/usr/sbin", "/sbin", "/usr/bin", "/bin"].iter().map(|d| Path::new(d).join(tool)).find(|p| p.exists())
}

/// A directory with an executable `mkfs.ext4` running `body` (a sh script).
fn fake_mkfs(body: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("mkfs.ext4");
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

fn ladder_on_ext4(fake: &Path, timeout_s: &str) -> std::process::Command {
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap_or_default());
    let args = ["ladder", "--fs", "ext4", "--total", "64k", "--to", "4", "--runs", "1", "-q"];
    let a: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_ref()).collect();
    let mut c = command(&a, None);
    c.env("PATH", path).env("MANYFILES_HELPER_TIMEOUT", timeout_s);
    c
}

fn run(mut c: std::process::Command) -> (Out, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let (o, e) = (dir.path().join("o"), dir.path().join("e"));
    let t = Instant::now();
    let mut child =
        c.stdout(std::fs::File::create(&o).unwrap()).stderr(std::fs::File::create(&e).unwrap()).spawn().unwrap();
    let code = wait_bounded(&mut child, LIMIT);
    let out = Out {
        code,
        stdout: std::fs::read_to_string(&o).unwrap_or_default(),
        stderr: std::fs::read_to_string(&e).unwrap_or_default(),
    };
    assert!(code.is_some(), "hung: killed after {LIMIT:?}\n{}", out.show());
    (out, t.elapsed())
}

/// Mounts and RAM-backed images that look like ours (tests here run one at a time).
fn ours() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains("manyfiles"))
        .map(String::from)
        .collect();
    if let Ok(rd) = std::fs::read_dir("/dev/shm") {
        v.extend(
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("manyfiles-img")),
        );
    }
    v
}

/// Kill what a fake helper left running (marked by its unusual sleep length).
fn reap(marker: &str) {
    let _ = std::process::Command::new("pkill").args(["-f", marker]).status();
}

#[test]
fn reliability_helpers_daemon_keeping_stdio_does_not_hold_the_tool() {
    let Some(_g) = root_only("managed file systems need root") else { return };
    let Some(mkfs) = real("mkfs.ext4") else { panic!("mkfs.ext4 missing (e2fsprogs)") };
    let before = ours();
    // Forks a child that keeps stdout/stderr open for 600 s, then formats for real.
    let fake = fake_mkfs(&format!("sleep 601.5 &\nexec {} \"$@\"", mkfs.display()));
    let (out, took) = run(ladder_on_ext4(fake.path(), "60"));
    reap("sleep 601.5");
    assert_eq!(out.code, Some(0), "{}", out.show());
    assert!(took < Duration::from_secs(60), "waited for the daemon: {took:?}");
    assert_eq!(ours(), before);
}

#[test]
fn reliability_helpers_hanging_helper_is_killed_at_its_deadline() {
    let Some(_g) = root_only("managed file systems need root") else { return };
    let before = ours();
    let fake = fake_mkfs("echo 'formatting, slowly' >&2\nexec sleep 602.5");
    let (out, took) = run(ladder_on_ext4(fake.path(), "2"));
    reap("sleep 602.5");
    assert_eq!(out.code, Some(1), "{}", out.show());
    assert!(took < Duration::from_secs(30), "{took:?}");
    let line = out.lines().into_iter().find(|l| l.contains("mkfs.ext4")).unwrap_or_else(|| panic!("{}", out.show()));
    assert!(line.contains("did not finish within 2 s") && line.contains("formatting, slowly"), "{line}");
    assert_eq!(ours(), before, "{}", out.show());
}

#[test]
fn reliability_helpers_flood_of_output_is_drained() {
    let Some(_g) = root_only("managed file systems need root") else { return };
    let Some(mkfs) = real("mkfs.ext4") else { panic!("mkfs.ext4 missing (e2fsprogs)") };
    let before = ours();
    let fake = fake_mkfs(&format!(
        "head -c 100000000 /dev/zero | tr '\\0' x\nhead -c 1000000 /dev/zero | tr '\\0' y >&2\nexec {} \"$@\"",
        mkfs.display()
    ));
    let (out, _) = run(ladder_on_ext4(fake.path(), "120"));
    assert_eq!(out.code, Some(0), "{}", out.show());
    assert_eq!(ours(), before);
}

#[test]
fn reliability_helpers_signal_while_waiting_ends_the_wait() {
    let Some(_g) = root_only("managed file systems need root") else { return };
    let before = ours();
    let fake = fake_mkfs("exec sleep 603.5");
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let mut child = ladder_on_ext4(fake.path(), "300")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until the fake helper runs, then signal the tool.
        let t = Instant::now();
        while !std::process::Command::new("pgrep").args(["-f", "sleep 603.5"]).status().unwrap().success() {
            assert!(t.elapsed() < Duration::from_secs(60), "the helper never started");
            std::thread::sleep(Duration::from_millis(50));
        }
        let t = Instant::now();
        signal(&child, sig);
        let code = wait_bounded(&mut child, Duration::from_secs(30));
        assert_eq!(code, Some(128 + sig), "signal {sig}");
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert!(err.contains("interrupted"), "{err}");
        assert!(
            !std::process::Command::new("pgrep").args(["-f", "sleep 603.5"]).status().unwrap().success(),
            "the helper was killed with the tool's wait"
        );
        assert_eq!(ours(), before);
    }
}
