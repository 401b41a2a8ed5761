//! The disk behind a device class (`@class:`): nbdkit's memory plugin with its delay and
//! rate filters on a Unix socket in a private directory, exposed as a file by nbdfuse;
//! [`super::managed`] then attaches that file to a loop device with direct I/O, formats
//! and mounts it as for any image. Both daemons are the Debian packages' (nbdkit,
//! libnbd-bin), started through `setsid -f` (their own session: a terminal's SIGINT
//! reaches the tool, which tears them down, not them).
//!
//! The private directory `/run/manyfiles/nbd-<key>/` (0700) is recorded in the registry
//! record before either daemon starts; it holds the socket `sock`, the pid files, the
//! daemons' logs and the FUSE mount `fuse/` whose file `fuse/nbd` is the disk. Every
//! process of the stack names the socket's path in its argv, so [`stop`] (teardown and
//! `cleanup` alike) finds them by it even when a kill came before a pid file was
//! written: unmount `fuse/` (nbdfuse exits), SIGTERM then SIGKILL whatever nbdkit or
//! nbdfuse still names the socket, remove the directory.
//!
//! nbdkit 1.32 (Debian 12) takes delays in whole milliseconds: the delay each request
//! gets is the class's rounded to the nearest millisecond (at least 1 ms when the class
//! asks for any), and the results record the rounded value.

use super::daemon::{self, end_processes, last_line, remove_private_dir, spawn_detached};
use super::device_class::{DeviceClass, Side};
use super::registry::{mounts_at, unmount};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Tools the stack needs and their Debian packages.
pub const TOOLS: [(&str, &str); 3] = [("nbdkit", "nbdkit"), ("nbdfuse", "libnbd-bin"), ("setsid", "util-linux")];

/// What the results record about the stack under a device class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassDetails {
    pub class: DeviceClass,
    /// Milliseconds nbdkit's delay filter holds each read / write request.
    pub delay_read_ms: u64,
    pub delay_write_ms: u64,
    /// Requests served at once: nbdfuse connections, one nbdkit thread each.
    pub threads: u32,
    /// Requests per second the model expects at queue depth 1 and at depth ≥ `threads`
    /// (reads, writes), for requests small enough that no bandwidth cap binds; None when
    /// the direction has no delay (only a bandwidth cap).
    pub expected_read_iops: Option<[f64; 2]>,
    pub expected_write_iops: Option<[f64; 2]>,
    pub nbdkit_command: Vec<String>,
    pub nbdkit_version: String,
    pub nbdfuse_command: Vec<String>,
    pub nbdfuse_version: String,
}

/// Milliseconds of delay for a direction: the class's delay rounded (nbdkit ≤ 1.38).
pub fn delay_ms(class: &DeviceClass, s: &Side) -> u64 {
    class.served_delay_us(s) / 1000
}

fn expected(class: &DeviceClass, s: &Side) -> Option<[f64; 2]> {
    let d = delay_ms(class, s);
    (d > 0).then(|| [1000.0 / d as f64, class.qd as f64 * 1000.0 / d as f64])
}

/// The private directory of stack `key`.
pub fn dir_for(key: &str) -> PathBuf {
    super::registry::state_dir().join(format!("nbd-{key}"))
}

fn sock(dir: &Path) -> PathBuf {
    dir.join("sock")
}

fn fuse_dir(dir: &Path) -> PathBuf {
    dir.join("fuse")
}

/// The file nbdfuse serves: the disk the loop device is attached to.
pub fn disk_file(dir: &Path) -> PathBuf {
    fuse_dir(dir).join("nbd")
}

/// nbdkit's argv for `class` over `bytes` of memory.
pub fn nbdkit_argv(dir: &Path, class: &DeviceClass, bytes: u64) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "nbdkit".into(),
        "--foreground".into(),
        "--unix".into(),
        sock(dir).display().to_string(),
        "--pidfile".into(),
        dir.join("nbdkit.pid").display().to_string(),
        "--threads".into(),
        "1".into(),
    ];
    let (rd, wd) = (delay_ms(class, &class.read), delay_ms(class, &class.write));
    let rate = class.read.bw.is_some() || class.write.bw.is_some();
    // Filters listed first are outermost: the rate filter's token bucket, then the delay.
    if rate {
        v.push("--filter=rate".into());
    }
    if rd > 0 || wd > 0 {
        v.push("--filter=delay".into());
    }
    v.push("memory".into());
    v.push(format!("size={bytes}"));
    if rd > 0 || wd > 0 {
        v.push(format!("delay-read={rd}ms"));
        v.push(format!("delay-write={wd}ms"));
        // Zeroing and trimming write the medium too.
        v.push(format!("delay-zero={wd}ms"));
        v.push(format!("delay-trim={wd}ms"));
    }
    // nbdkit 1.32's rate filter has one rate for reads and writes (rate=, bits/s): the
    // slower direction's cap when they differ (recorded; see README).
    let bw = match (class.read.bw, class.write.bw) {
        (Some(r), Some(w)) => Some(r.min(w)),
        (a, b) => a.or(b),
    };
    if let Some(b) = bw {
        v.push(format!("rate={}", b.saturating_mul(8)));
        v.push(format!("burstiness={:.6}", burst_seconds(b)));
    }
    v
}

/// Bytes the rate filter lets pass unthrottled after a pause (its bucket's capacity):
/// above the largest request the stack sends (the loop device's 1,280 KiB), because the
/// filter credits a request that slept for its remainder with at most the bucket's
/// capacity, so a smaller bucket would slow big requests far below the cap.
pub const RATE_BURST_BYTES: u64 = 2 << 20;

/// The rate filter's `burstiness=` for a cap of `bw` bytes/s: [`RATE_BURST_BYTES`] worth.
/// nbdkit's default is 2 s: an ebs-gp2 (250 MiB/s) then wrote 500 MiB after every pause
/// at memory speed, so no create of the default ladder (64 MiB) met the cap (fitted
/// 423 MiB/s), and fio's sequential 1 MiB writes streamed 280 MiB/s (session 14).
fn burst_seconds(bw: u64) -> f64 {
    RATE_BURST_BYTES as f64 / bw.max(1) as f64
}

/// Connections nbdfuse is asked for so that `qd` of them carry requests: nbdfuse
/// (libnbd 1.14.2, Debian 12, and upstream at least to 1.15.12) hands requests out
/// round-robin with `i % (connections - 1)` (fuse/operations.c, `next_thread`), so the
/// last connection never gets one. Measured before this was known, fio 4 KiB random
/// reads at queue depth 32 reached 4/5, 2/3 and 2/3 of the model on ebs-magnetic (-C 5:
/// 387 IOPS of 500), ebs-gp2 and ebs-io1 (-C 3: 926 of 1,500, 1,753 of 3,000). One slot
/// needs one connection (nbdfuse uses connection 0 when it has one).
pub fn nbdfuse_connections(qd: u32) -> u32 {
    if qd <= 1 { 1 } else { qd + 1 }
}

/// The class's slots are nbdfuse's connections (`-C`, see [`nbdfuse_connections`]), each
/// served by one nbdkit thread (`--threads 1`): nbdkit's threads count per connection,
/// and nbdfuse opens 4 connections to a multi-conn server by default, which multiplied
/// the slots (measured: an `hdd`, one slot, served 222 random reads/s at queue depth 32
/// instead of 77: 3 used connections); one connection with `qd` threads carried only ~3
/// requests at a time (ebs-magnetic: 286 IOPS at queue depth 32 instead of 500).
fn nbdfuse_argv(dir: &Path, qd: u32) -> Vec<String> {
    vec![
        "nbdfuse".into(),
        "-C".into(),
        nbdfuse_connections(qd).to_string(),
        "-P".into(),
        dir.join("nbdfuse.pid").display().to_string(),
        fuse_dir(dir).display().to_string(),
        "--unix".into(),
        sock(dir).display().to_string(),
    ]
}

pub(super) fn version(tool: &str) -> String {
    let (so, se) = crate::helper::run_output(&[tool.to_string(), "--version".into()], crate::helper::DEFAULT_TIMEOUT);
    so.lines().chain(se.lines()).map(str::trim).find(|l| !l.is_empty()).unwrap_or("").to_string()
}

/// [`daemon::wait_ready`] for the stack's `what` (nbdkit or nbdfuse), found by the socket
/// its argv names.
fn wait_ready(dir: &Path, what: &str, log: &Path, ready: impl Fn() -> bool) -> Result<()> {
    let s = sock(dir).display().to_string();
    daemon::wait_ready(what, log, ready, || stack_pids(&s).iter().any(|(_, n)| *n == what))
}

/// Start nbdkit and nbdfuse for `class` in `dir` (which the caller recorded in the
/// registry first). On error, what was started is left for [`stop`].
pub fn start(dir: &Path, class: &DeviceClass, bytes: u64) -> Result<ClassDetails> {
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::failed(format!("cannot create {}: {e}", dir.display())))?;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(fuse_dir(dir))
        .map_err(|e| Error::failed(format!("cannot create {}: {e}", fuse_dir(dir).display())))?;
    let kit = nbdkit_argv(dir, class, bytes);
    let log = dir.join("nbdkit.log");
    spawn_detached(&kit, &log)?;
    let pidfile = dir.join("nbdkit.pid");
    // Ready when it accepts a connection: a socket file alone may have no listener.
    let accepts = || std::os::unix::net::UnixStream::connect(sock(dir)).is_ok();
    wait_ready(dir, "nbdkit", &log, || pidfile.exists() && accepts())?;
    owner_only(&sock(dir))?;
    let fuse = nbdfuse_argv(dir, class.qd);
    let flog = dir.join("nbdfuse.log");
    let fpid = dir.join("nbdfuse.pid");
    let file = disk_file(dir);
    let fuse_ready = || fpid.exists() && std::fs::metadata(&file).is_ok_and(|m| m.len() == bytes);
    spawn_detached(&fuse, &flog)?;
    if let Err(first) = wait_ready(dir, "nbdfuse", &flog, fuse_ready) {
        // nbdfuse could not connect to an nbdkit that was accepting a moment ago (seen
        // once in CI: "Connection refused"). Say which daemon failed, with its own log;
        // start nbdfuse once more when nbdkit is still serving.
        let running = |name: &str| stack_pids(&sock(dir).display().to_string()).iter().any(|(_, n)| *n == name);
        if !accepts() {
            let state = if running("nbdkit") { "runs but no longer accepts connections" } else { "has exited" };
            let first = format!("{first}; nbdkit {state}: {}", last_line(&log));
            // Seen once in CI (session 14): nbdkit gone, its log empty, right after it
            // had accepted the readiness probe. Nothing of it is left to serve: start
            // the whole stack once more, and say both failures if that fails too.
            if state == "runs but no longer accepts connections"
                || crate::signals::pending() != 0
                || running("nbdfuse")
                || !mounts_at(&fuse_dir(dir)).is_empty()
            {
                return Err(Error::failed(first));
            }
            for stale in [sock(dir), pidfile.clone()] {
                let _ = std::fs::remove_file(stale);
            }
            spawn_detached(&kit, &log)?;
            wait_ready(dir, "nbdkit", &log, || pidfile.exists() && accepts())
                .map_err(|e| Error::failed(format!("{first}; then, started again: {e}")))?;
            owner_only(&sock(dir))?;
        } else if crate::signals::pending() != 0 || running("nbdfuse") || !mounts_at(&fuse_dir(dir)).is_empty() {
            return Err(first);
        }
        spawn_detached(&fuse, &flog)?;
        wait_ready(dir, "nbdfuse", &flog, fuse_ready)
            .map_err(|e| Error::failed(format!("{first}; then, started again: {e}")))?;
    }
    Ok(ClassDetails {
        class: class.clone(),
        delay_read_ms: delay_ms(class, &class.read),
        delay_write_ms: delay_ms(class, &class.write),
        threads: class.qd,
        expected_read_iops: expected(class, &class.read),
        expected_write_iops: expected(class, &class.write),
        nbdkit_command: kit,
        nbdkit_version: version("nbdkit"),
        nbdfuse_command: fuse,
        nbdfuse_version: version("nbdfuse"),
    })
}

/// Make the socket root's alone (0600): nbdkit makes it with the tool's umask, and the
/// disk behind it serves anyone who connects (the private directory bars others too).
fn owner_only(p: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| Error::failed(format!("cannot make {} private: {e}", p.display())))
}

/// Processes named nbdkit or nbdfuse whose argv names `sock`: (pid, name).
fn stack_pids(sock: &str) -> Vec<(u32, &'static str)> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return out };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else { continue };
        let mut args = cmd.split(|&b| b == 0).filter(|a| !a.is_empty());
        let Some(tool) = args.next().map(|a| a.rsplit(|&b| b == b'/').next().unwrap_or(a)) else { continue };
        let name = match tool {
            b"nbdkit" => "nbdkit",
            b"nbdfuse" => "nbdfuse",
            _ => continue,
        };
        if args.any(|a| a == sock.as_bytes()) {
            out.push((pid, name));
        }
    }
    out
}

/// The daemons of the stack in `dir` that are running (pids), for CPU accounting.
pub fn daemon_pids(dir: &Path) -> Vec<u32> {
    stack_pids(&sock(dir).display().to_string()).into_iter().map(|(p, _)| p).collect()
}

/// Take the stack in `dir` down (see the module docs); idempotent. The caller has
/// unmounted the file system on it and detached the loop device.
pub fn stop(dir: &Path) -> std::result::Result<(), String> {
    let fd = fuse_dir(dir);
    if !mounts_at(&fd).is_empty() {
        unmount(&fd)?;
    }
    let s = sock(dir).display().to_string();
    end_processes(dir, || stack_pids(&s))?;
    if !mounts_at(&fd).is_empty() {
        return Err(format!("{} is still mounted", fd.display()));
    }
    remove_private_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nbdkit_argv_of_presets() {
        let c = DeviceClass::parse("ebs-magnetic").unwrap();
        let a = nbdkit_argv(Path::new("/run/manyfiles/nbd-k"), &c, 1 << 30);
        let s = a.join(" ");
        assert!(s.contains("--threads 1"), "{s}");
        assert!(s.contains("--filter=rate --filter=delay memory size=1073741824"), "{s}");
        assert!(s.contains("delay-read=10ms delay-write=10ms"), "{s}");
        assert!(s.contains(&format!("rate={}", (90u64 * 8) << 20)), "{s}");
        // A burst of 2 MiB at 90 MiB/s, not nbdkit's default 2 s (180 MiB).
        assert!(s.contains(&format!("burstiness={:.6}", 2.0 / 90.0)), "{s}");
        assert_eq!(expected(&c, &c.read), Some([100.0, 500.0]));
        let h = DeviceClass::parse("hdd").unwrap();
        assert_eq!((delay_ms(&h, &h.read), delay_ms(&h, &h.write)), (13, 14));
        let n = DeviceClass::parse("lat=2ms").unwrap();
        let s = nbdkit_argv(Path::new("/d"), &n, 4096).join(" ");
        assert!(!s.contains("rate") && s.contains("--threads 1"), "{s}");
        let sub = DeviceClass::parse("lat=300us").unwrap();
        assert_eq!(delay_ms(&sub, &sub.read), 1, "at least 1 ms when a delay is asked");
        // nbdfuse never uses its last connection: one more than the slots, except for one.
        let f = nbdfuse_argv(Path::new("/d"), c.qd).join(" ");
        assert!(f.starts_with("nbdfuse -C 6 "), "{f}");
        assert!(nbdfuse_argv(Path::new("/d"), 1).join(" ").starts_with("nbdfuse -C 1 "));
        assert_eq!(nbdfuse_connections(2), 3);
    }

    #[test]
    fn paths() {
        let d = dir_for("20260101T000000Z-1-0");
        assert_eq!(d, Path::new("/run/manyfiles/nbd-20260101T000000Z-1-0"));
        assert_eq!(disk_file(&d), d.join("fuse/nbd"));
    }
}
