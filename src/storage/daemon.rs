//! What the stacks under a device class ([`super::nbd_stack`]) and a share
//! ([`super::share_stack`]) do alike with their daemons: start one in its own session
//! (`setsid -f`), wait until it is ready, end what still runs, remove the stack's private
//! directory.

use crate::error::{Error, Result};
use std::path::Path;
use std::time::{Duration, Instant};

/// Start `argv` in its own session (`setsid -f`), output to `log`; it is not our child.
pub(super) fn spawn_detached(argv: &[String], log: &Path) -> Result<()> {
    spawn_detached_with(argv, log, &[], || Ok(()))
}

/// [`spawn_detached`] with `env` added to its environment (an object store's access key:
/// never in argv) and `pre_exec` run in the child before `setsid` (a share stack's
/// network namespace and account: [`super::share_netns::confine`]).
pub(super) fn spawn_detached_with(
    argv: &[String],
    log: &Path,
    env: &[(&str, &str)],
    pre_exec: impl FnMut() -> std::io::Result<()> + Send + Sync + 'static,
) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let out = std::fs::File::create(log).map_err(|e| Error::failed(format!("cannot create {}: {e}", log.display())))?;
    let err = out.try_clone().map_err(|e| Error::failed(format!("{}: {e}", log.display())))?;
    let mut cmd = std::process::Command::new("setsid");
    // SAFETY: the hooks given here make syscalls only (no allocation, no locks).
    unsafe { cmd.pre_exec(pre_exec) };
    let st = cmd
        .arg("-f")
        .args(argv)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| Error::failed(format!("cannot start {}: {e}", argv[0])))?;
    if !st.success() {
        return Err(Error::failed(format!("`setsid -f {}` failed: {st}", argv.join(" "))));
    }
    Ok(())
}

pub(super) fn last_line(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default().lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").into()
}

/// Wait until `ready()`, or fail when 30 s pass, a signal comes, or no process of the
/// stack named `what` runs any more (`running()`: after one was seen, or 2 s without one).
pub(super) fn wait_ready(what: &str, log: &Path, ready: impl Fn() -> bool, running: impl Fn() -> bool) -> Result<()> {
    let t0 = Instant::now();
    let mut seen = false;
    // Since when no process of it was found. A daemon that forks into the background
    // (`setsid -f`, then nbdkit's own fork) passes from parent to child, and one /proc
    // scan can miss both: the listing taken before the fork, the parent's cmdline read
    // after it exited. Seen in CI under load: "nbdkit did not become ready (it exited)"
    // with nothing in its log. So "gone" must hold for a while, not for one scan.
    let mut missing_since: Option<Instant> = None;
    loop {
        if ready() {
            return Ok(());
        }
        if crate::signals::pending() != 0 {
            return Err(Error::failed(format!("interrupted while starting {what}")));
        }
        let alive = running();
        seen |= alive;
        let missing = if alive { None } else { Some(*missing_since.get_or_insert_with(Instant::now)) };
        missing_since = missing;
        let missing_for = missing.map_or(Duration::ZERO, |m| m.elapsed());
        // Gone a second after it was seen, never seen within 5 s (it failed at once), or
        // too slow.
        let gone = !alive
            && ((seen && missing_for > Duration::from_secs(1)) || (!seen && t0.elapsed() > Duration::from_secs(5)));
        if gone || t0.elapsed() > Duration::from_secs(30) {
            return Err(Error::failed(format!(
                "{what} did not become ready{}: {}",
                if alive { " in 30 s" } else { " (it exited)" },
                last_line(log)
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGTERM what `pids()` finds, wait up to 3 s, then SIGKILL what is left and wait up to
/// 2 s; an error names what still runs (`dir`: the stack's directory, for the message).
/// Shared by the device-class and share stacks.
pub(super) fn end_processes<T: std::fmt::Debug>(
    dir: &Path,
    pids: impl Fn() -> Vec<(u32, T)>,
) -> std::result::Result<(), String> {
    for (sig, wait) in [(rustix::process::Signal::TERM, 3000), (rustix::process::Signal::KILL, 2000)] {
        let found = pids();
        if found.is_empty() {
            break;
        }
        for (pid, _) in &found {
            if let Some(p) = rustix::process::Pid::from_raw(*pid as i32) {
                let _ = rustix::process::kill_process(p, sig);
            }
        }
        let t0 = Instant::now();
        while !pids().is_empty() && t0.elapsed() < Duration::from_millis(wait) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let left = pids();
    if !left.is_empty() {
        return Err(format!("{} still running after SIGKILL: {left:?}", dir.display()));
    }
    Ok(())
}

/// Remove a stack's private directory (gone already is fine).
pub(super) fn remove_private_dir(dir: &Path) -> std::result::Result<(), String> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot remove {}: {e}", dir.display())),
    }
}
