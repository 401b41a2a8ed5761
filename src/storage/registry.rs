//! Registry of everything the tool created for managed test file systems (image files,
//! loop devices, mount points, mounts), so what a killed run left can be removed.
//!
//! State lives in /run/manyfiles (mode 0700, root only): one JSON record per resource set,
//! `<runid>-<n>.json`, written (atomically: temp file + rename) BEFORE each resource is
//! created. A loop device's name is known only after `losetup --find` made it, so cleanup
//! also finds loop devices by their backing file (the recorded image) — a kill between
//! `losetup` and the record update is still cleanable.
//!
//! Who is alive: a run holds an exclusive `flock` on `<key>.lock` (created and locked
//! BEFORE its record is written, held by an O_CLOEXEC fd until the record is removed, so
//! helper children do not inherit it). The kernel releases it when the process dies,
//! whatever PID namespace it runs in: [`cleanup`] removes a record only when it can take
//! that lock (LOCK_NB). Records from before locks (`lock` false) fall back to the pid +
//! start time check, which is wrong for a run in another PID namespace.
//!
//! A record is the fields every record has (process, lock, mount point, a share's stack
//! directory, `manyfiles mount`'s) and its storage kind's own, tagged `"kind"`
//! ([`super::kinds`]; the flat records of builds before kinds are read too). [`cleanup`]
//! touches only what a record names, and only after checking that it is what the record
//! says, through the kind: a mount at the recorded mount point whose source is the
//! kind's (`Kind::owns_mount`: the recorded loop device or one backed by the recorded
//! image, a tmpfs or FUSE source name, the recorded real device), then what lies under
//! it (`Kind::stop`: loop devices backed by the recorded image, an image only if it is a
//! regular file named `manyfiles-img-*.img`, a device class's or a share's daemons; a
//! real device is never touched beyond its mount). Records of kinds that hold files on
//! another record's file system (a mounted container, a share's client) go first.

use super::kinds::{Kind, KindRecord, StoredKind};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub use super::loopdev::{loop_backing_file, loops_backed_by};
pub use super::mountinfo::{MountEntry, mounts, mounts_at};

/// Where records (and mount point directories) live.
pub const STATE_DIR: &str = "/run/manyfiles";

/// Extension of a `manyfiles mount`'s record (`<key>.mount`; a run's is `<key>.json`).
/// Builds before it (all read only `*.json`) never see a user's mount: the oldest ones
/// did not know `persistent` and took such a record, its process gone, for a killed
/// run's leftovers (RELIABILITY.md, the user-mount row).
pub const MOUNT_EXT: &str = "mount";

/// Is `path` a `manyfiles mount`'s record by its name?
pub fn is_mount_record(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == MOUNT_EXT)
}

pub fn state_dir() -> PathBuf {
    PathBuf::from(STATE_DIR)
}

/// One resource set: what every record has, and its kind's own fields
/// ([`KindRecord`], tagged `"kind"`; a record of a build before kinds is read by its
/// flat fields, see [`super::kinds`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "StoredRecord")]
pub struct Record {
    pub pid: u32,
    /// Field 22 of /proc/<pid>/stat (start time in clock ticks after boot): a pid reused
    /// by another process has a different one.
    pub start_time: u64,
    pub mount_point: Option<PathBuf>,
    /// Spec label, for messages.
    pub fs: String,
    /// The process holds `<key>.lock` (flock) while it lives; false in records written
    /// before locks existed.
    #[serde(default)]
    pub lock: bool,
    /// A share's private directory ([`super::share_stack`]): in the client mount's record
    /// (its server, proxy and client are stopped with it) and in its export's (for `umount`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_dir: Option<PathBuf>,
    /// Made by `manyfiles mount`: outlives its process; removed only by `manyfiles
    /// umount DIR` or `cleanup --mounts`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub persistent: bool,
    /// The kernel's id of the mount at `mount_point` when a `manyfiles mount` finished:
    /// `umount` finds it by this (and its source) wherever its path has moved since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_id: Option<u64>,
    /// What lies under the mount point, and how to undo it.
    #[serde(flatten)]
    pub kind: KindRecord,
}

impl Record {
    /// The record's kind, to reach through [`Kind`].
    pub fn kind(&self) -> &dyn Kind {
        self.kind.kind()
    }
}

/// A record as stored, by this build or one before kinds.
#[derive(Deserialize)]
struct StoredRecord {
    pid: u32,
    start_time: u64,
    mount_point: Option<PathBuf>,
    fs: String,
    #[serde(default)]
    lock: bool,
    #[serde(default)]
    share_dir: Option<PathBuf>,
    #[serde(default)]
    persistent: bool,
    #[serde(default)]
    mount_id: Option<u64>,
    #[serde(flatten)]
    kind: StoredKind,
}

impl From<StoredRecord> for Record {
    fn from(s: StoredRecord) -> Record {
        Record {
            kind: s.kind.into_kind(s.share_dir.is_some()),
            pid: s.pid,
            start_time: s.start_time,
            mount_point: s.mount_point,
            fs: s.fs,
            lock: s.lock,
            share_dir: s.share_dir,
            persistent: s.persistent,
            mount_id: s.mount_id,
        }
    }
}

/// A record this process owns; `save` after every change, `remove` when all is gone.
#[derive(Debug)]
pub struct Registration {
    path: PathBuf,
    pub record: Record,
    /// The locked `<key>.lock` (O_CLOEXEC: helpers do not inherit it); closing it (or
    /// dying) releases the lock.
    lock: std::fs::File,
}

/// Create the state directory (0700) if needed.
pub fn ensure_state_dir() -> Result<PathBuf> {
    let dir = state_dir();
    if !dir.is_dir() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| Error::failed(format!("cannot create {}: {e}", dir.display())))?;
    }
    Ok(dir)
}

/// Start time (field 22 of /proc/<pid>/stat), None if the process does not exist.
pub fn start_time(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parens: fields after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    // rest starts with field 3 (state); field 22 is index 19 here.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Path of the lock file of record `json` (`<key>.json` → `<key>.lock`).
fn lock_path(json: &Path) -> PathBuf {
    json.with_extension("lock")
}

/// Does `f` (open) still sit at `path` (not unlinked or replaced meanwhile)?
fn same_file(f: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (f.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Try to take the exclusive lock on `f` without waiting: Ok(true) taken, Ok(false) held
/// by a live process.
fn try_lock(f: &std::fs::File) -> std::io::Result<bool> {
    match rustix::fs::flock(f, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Create and lock `<key>.lock`. A cleanup that took the lock of a file of the same name
/// (left by a dead run) unlinks it while holding it: after locking, the file must still
/// be the one at the path, else try again with a new one.
fn take_lock(path: &Path) -> Result<std::fs::File> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        // std opens with O_CLOEXEC.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| Error::failed(format!("cannot create the registry lock {}: {e}", path.display())))?;
        let taken = try_lock(&f)
            .map_err(|e| Error::failed(format!("cannot lock the registry lock {}: {e}", path.display())))?;
        if taken && same_file(&f, path) {
            return Ok(f);
        }
        if std::time::Instant::now() > deadline {
            return Err(Error::failed(format!("the registry lock {} is held by another process", path.display())));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Register a new resource set under `key` (`<runid>-<n>`) before creating anything: the
/// lock first, then the record (so no record of a live run is ever unlocked).
pub fn register(key: &str, mut record: Record) -> Result<Registration> {
    let dir = ensure_state_dir()?;
    let path = dir.join(format!("{key}.json"));
    let lock = take_lock(&lock_path(&path))?;
    record.lock = true;
    let reg = Registration { path, record, lock };
    if let Err(e) = reg.save() {
        let _ = std::fs::remove_file(lock_path(&reg.path));
        return Err(e);
    }
    Ok(reg)
}

/// A record for this process, with nothing in it yet.
pub fn own_record(fs: &str) -> Record {
    let pid = std::process::id();
    Record {
        pid,
        start_time: start_time(pid).unwrap_or(0),
        mount_point: None,
        fs: fs.to_string(),
        lock: false,
        share_dir: None,
        persistent: false,
        mount_id: None,
        kind: KindRecord::default(),
    }
}

impl Registration {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Change the record and write it out (atomically) before the caller acts on it.
    pub fn update(&mut self, f: impl FnOnce(&mut Record)) -> Result<()> {
        f(&mut self.record);
        self.save()
    }

    fn save(&self) -> Result<()> {
        rewrite_record(&self.path, &self.record)
    }

    /// Make this the record of a `manyfiles mount`, which outlives its process: renamed
    /// `<key>.json` → `<key>.mount` in one step (no build, old or new, ever sees it as a
    /// run's record), then rewritten with `persistent` set. The lock file goes: the
    /// record is kept for its kind, not for a live holder. Returns the new path.
    pub fn into_persistent(mut self) -> Result<PathBuf> {
        let to = self.path.with_extension(MOUNT_EXT);
        std::fs::rename(&self.path, &to)
            .map_err(|e| Error::failed(format!("cannot rename {} to {}: {e}", self.path.display(), to.display())))?;
        self.path = to;
        self.record.persistent = true;
        if let Some(mp) = &self.record.mount_point {
            self.record.mount_id =
                mounts_at(mp).into_iter().rev().find(|m| owns_mount(&self.record, m)).map(|m| m.mount_id);
        }
        self.save()?;
        let lp = lock_path(&self.path);
        if same_file(&self.lock, &lp) {
            let _ = std::fs::remove_file(&lp);
        }
        Ok(self.path)
    }

    /// Delete the record (everything it named is gone), then its lock file (still
    /// holding the lock), then release the lock.
    pub fn unregister(self) -> Result<()> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::failed(format!("cannot remove {}: {e}", self.path.display()))),
        }
        let lp = lock_path(&self.path);
        if same_file(&self.lock, &lp) {
            let _ = std::fs::remove_file(&lp);
        }
        drop(self.lock);
        Ok(())
    }
}

/// What [`cleanup`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CleanupReport {
    pub unmounted: Vec<String>,
    pub detached: Vec<String>,
    pub deleted: Vec<String>,
    pub skipped_live: usize,
    /// `manyfiles mount`s left in place (`cleanup --mounts` or `umount DIR` removes them).
    pub kept_mounts: usize,
    /// Daemons stopped (a device class's nbdkit and nbdfuse, a share's stack), by name.
    pub stopped: Vec<String>,
    /// Objects a killed run left below its own prefix in a bucket of the user's, deleted:
    /// `s3://BUCKET/PREFIX/manyfiles-ladder-PID-RANDOM/: N object(s)` each.
    pub objects: Vec<String>,
    /// Objects below such a prefix that the run did not write (no mark of its own), left
    /// as they are: `s3://…/: N object(s) that this run did not write` each.
    pub left_objects: Vec<String>,
    pub problems: Vec<String>,
}

impl CleanupReport {
    /// Add what `other` did and found.
    pub fn merge(&mut self, other: CleanupReport) {
        self.unmounted.extend(other.unmounted);
        self.detached.extend(other.detached);
        self.deleted.extend(other.deleted);
        self.skipped_live += other.skipped_live;
        self.kept_mounts += other.kept_mounts;
        self.stopped.extend(other.stopped);
        self.objects.extend(other.objects);
        self.left_objects.extend(other.left_objects);
        self.problems.extend(other.problems);
    }
}

impl fmt::Display for CleanupReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cleanup: {} unmounted, {} loop device(s) detached, {} image(s) or run directories deleted, {} record(s) of running processes left alone",
            self.unmounted.len(),
            self.detached.len(),
            self.deleted.len(),
            self.skipped_live
        )?;
        if !self.stopped.is_empty() {
            write!(f, ", {} daemon(s) stopped ({})", self.stopped.len(), counted(&self.stopped))?;
        }
        if self.kept_mounts > 0 {
            write!(f, ", {} `manyfiles mount`(s) kept (umount DIR or cleanup --mounts)", self.kept_mounts)?;
        }
        for o in &self.objects {
            write!(f, "\n  deleted below a killed run's own prefix: {o}")?;
        }
        for o in &self.left_objects {
            write!(f, "\n  left below a killed run's own prefix: {o}")?;
        }
        for p in &self.problems {
            write!(f, "\n  problem: {p}")?;
        }
        Ok(())
    }
}

fn alive(rec: &Record) -> bool {
    match start_time(rec.pid) {
        None => false,
        Some(t) => t == rec.start_time,
    }
}

/// Is the process of record `json` alive? `Dead(lock)` carries the lock of a locked
/// record, held by cleanup until the record and its lock file are gone.
enum Liveness {
    Alive,
    Dead(Option<std::fs::File>),
}

fn liveness(json: &Path, rec: Option<&Record>) -> std::io::Result<Liveness> {
    let lp = lock_path(json);
    match std::fs::OpenOptions::new().read(true).write(true).open(&lp) {
        Ok(f) => {
            if !try_lock(&f)? {
                return Ok(Liveness::Alive);
            }
            if !same_file(&f, &lp) {
                // Replaced meanwhile (its process is re-registering): look again next time.
                return Ok(Liveness::Alive);
            }
            Ok(Liveness::Dead(Some(f)))
        }
        // No lock file: a record from before locks (today's pid + start time check), or
        // a locked record whose lock file someone removed (the same check is all we have).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let alive = match rec {
                Some(r) => alive(r),
                // A temporary with no readable record: the pid in its name.
                None => json
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.split('-').nth(1))
                    .and_then(|p| p.parse::<u32>().ok())
                    .is_some_and(|p| start_time(p).is_some()),
            };
            Ok(if alive { Liveness::Alive } else { Liveness::Dead(None) })
        }
        Err(e) => Err(e),
    }
}

/// Remove the lock file of record `json`, while holding its lock.
fn drop_lock(json: &Path, lock: Option<std::fs::File>) {
    if let Some(f) = lock {
        let lp = lock_path(json);
        if same_file(&f, &lp) {
            let _ = std::fs::remove_file(&lp);
        }
    }
}

/// Is `name` the name of an image this tool makes?
pub fn is_image_name(name: &str) -> bool {
    name.starts_with("manyfiles-img-") && name.ends_with(".img") && !name.contains('/')
}

/// Run a tool (mount, umount, losetup: the tools people use and trust) with the default
/// deadline (see [`crate::helper`]): Ok(stdout), or the command and its last line of output.
pub(crate) fn run_tool(argv: &[String]) -> std::result::Result<String, String> {
    crate::helper::run(argv).map_err(|e| e.to_string())
}

/// [`run_tool`] for a helper whose work grows with an image of `bytes` (mkfs).
pub(crate) fn run_tool_sized(argv: &[String], bytes: u64) -> std::result::Result<String, String> {
    crate::helper::run_with(argv, crate::helper::timeout_for(bytes)).map_err(|e| e.to_string())
}

fn sv(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Unmount `mp`: a few tries (EBUSY right after use is common, e.g. a FUSE daemon or an
/// fsnotify user finishing), then a lazy unmount as the last resort.
pub(crate) fn unmount(mp: &Path) -> std::result::Result<(), String> {
    let mps = mp.to_string_lossy().into_owned();
    let mut last = String::new();
    for i in 0..5 {
        if mounts_at(mp).is_empty() {
            return Ok(());
        }
        match run_tool(&sv(&["umount", &mps])) {
            Ok(_) => {
                if mounts_at(mp).is_empty() {
                    return Ok(());
                }
            }
            Err(e) => last = e,
        }
        std::thread::sleep(std::time::Duration::from_millis(100 * (i + 1)));
    }
    run_tool(&sv(&["umount", "-l", &mps])).map_err(|e| format!("{last}; lazy unmount: {e}"))?;
    Ok(())
}

/// One cleanup (or `umount`) at a time, across processes: two would race on the same
/// records. Held while the returned file is open.
pub(crate) fn cleanup_lock(dir: &Path) -> Result<std::fs::File> {
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(dir.join(".cleanup.lock"))
        .map_err(|e| Error::failed(format!("cannot open the cleanup lock in {}: {e}", dir.display())))?;
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| Error::failed(format!("cannot lock {}: {e}", dir.display())))?;
    Ok(lock)
}

/// Remove what dead runs left (see the module docs). Records of live processes are left
/// alone, and so are `manyfiles mount`s (persistent records) unless `mounts`.
pub fn cleanup() -> Result<CleanupReport> {
    cleanup_with(false)
}
/// [`cleanup`]; with `mounts` also `manyfiles mount`s (`cleanup --mounts`).
pub fn cleanup_with(mounts: bool) -> Result<CleanupReport> {
    let mut rep = CleanupReport::default();
    let dir = state_dir();
    if !dir.is_dir() {
        return Ok(rep);
    }
    let _lock = cleanup_lock(&dir)?;
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(rep),
        Err(e) => return Err(Error::failed(format!("cannot read {}: {e}", dir.display()))),
    };
    let mut paths: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") || is_mount_record(p))
        .collect();
    paths.sort();
    let mut records: Vec<(PathBuf, Option<Record>)> = paths
        .into_iter()
        .map(|p| {
            let r = std::fs::read(&p).ok().and_then(|b| serde_json::from_slice(&b).ok());
            (p, r)
        })
        .collect();
    // Mounted containers and shares' clients first: they hold files on another record's
    // file system (a share's server: its export's).
    records.sort_by_key(|(_, r)| !r.as_ref().is_some_and(|r| r.kind().cleaned_first()));
    for (path, rec) in records {
        let rec: Record = match rec {
            Some(r) => r,
            None => {
                rep.problems.push(format!("{}: not a readable record; left alone", path.display()));
                continue;
            }
        };
        if (rec.persistent || is_mount_record(&path)) && !mounts {
            rep.kept_mounts += 1;
            continue;
        }
        let lock = match liveness(&path, Some(&rec)) {
            Ok(Liveness::Alive) => {
                rep.skipped_live += 1;
                continue;
            }
            Ok(Liveness::Dead(lock)) => lock,
            Err(e) => {
                rep.problems.push(format!("{}: cannot check its lock: {e}; left alone", path.display()));
                continue;
            }
        };
        // Read again under the lock: the record may have changed (or gone) since listed.
        let rec: Record = match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                drop_lock(&path, lock);
                continue;
            }
            Err(_) => rec,
            Ok(b) => serde_json::from_slice(&b).unwrap_or(rec),
        };
        // A `manyfiles mount` is taken down where it is now (a renamed parent moves it).
        let rec = if is_mount_record(&path) || rec.persistent { super::user_mount::follow_moved(rec) } else { rec };
        wait_for_helpers(&rec);
        let before = rep.problems.len();
        clean_record(&rec, &mut rep);
        if rep.problems.len() == before {
            match std::fs::remove_file(&path) {
                Ok(()) => drop_lock(&path, lock),
                Err(e) => rep.problems.push(format!("cannot remove {}: {e}", path.display())),
            }
        } else {
            rep.problems.push(format!("{}: kept because of the problems above", path.display()));
        }
        // A leftover temp record of the same key.
        let _ = std::fs::remove_file(path.with_extension("json.tmp"));
        let _ = std::fs::remove_file(path.with_extension("mount.tmp"));
    }
    // What a process killed while registering or unregistering left: a temporary
    // `<key>.json.tmp` or a `<key>.lock` with no record beside it. Removed once that
    // process is gone (its lock can be taken; without a lock file, the pid in the key).
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(key) = name.strip_suffix(".json.tmp").or_else(|| name.strip_suffix(".lock")) else { continue };
        if key.is_empty() || key.starts_with('.') {
            continue; // .cleanup.lock
        }
        let json = dir.join(format!("{key}.json"));
        if json.exists() || dir.join(format!("{key}.{MOUNT_EXT}")).exists() {
            continue;
        }
        if let Ok(Liveness::Dead(lock)) = liveness(&json, None) {
            let _ = std::fs::remove_file(json.with_extension("json.tmp"));
            drop_lock(&json, lock);
        }
    }
    Ok(rep)
}

/// A run killed while its `mount`, `mkfs.*` or `losetup` was running leaves that helper
/// alive for a moment: it can make a mount after cleanup looked (found by the kill -9
/// trials of RELIABILITY.md). Wait (at most 15 s) until no such short-lived helper names
/// the record's image, loop device or mount point. FUSE daemons (ntfs-3g, exfat) serve
/// live mounts and are not waited for: unmounting ends them.
fn wait_for_helpers(rec: &Record) {
    let mut names = rec.kind().helper_names();
    names.extend(rec.mount_point.as_ref().map(|p| p.display().to_string()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !names.is_empty() && helper_running(&names) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn helper_running(names: &[String]) -> bool {
    let Ok(rd) = std::fs::read_dir("/proc") else { return false };
    rd.flatten().any(|e| {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else { return false };
        let mut args = cmd.split(|&b| b == 0).filter(|a| !a.is_empty());
        let Some(tool) = args.next().map(|a| a.rsplit(|&b| b == b'/').next().unwrap_or(a)) else { return false };
        let helper = tool.starts_with(b"mkfs")
            || tool.starts_with(b"mke2fs")
            || [&b"mount"[..], b"losetup", b"umount"].contains(&tool);
        helper && args.any(|a| names.iter().any(|n| a == n.as_bytes()))
    })
}

/// Is mount `m` the one record `rec` names, by its source (its kind says which)? (A
/// bind mount of it has the same source: tell them apart by mount id.)
pub fn owns_mount(rec: &Record, m: &MountEntry) -> bool {
    rec.kind().owns_mount(m)
}

/// Write `rec` over the record file `path` (atomically), as `umount` does when the mount
/// it names has moved.
pub(crate) fn rewrite_record(path: &Path, rec: &Record) -> Result<()> {
    let json = serde_json::to_vec_pretty(rec).expect("record serializes");
    let tmp = path.with_extension(if is_mount_record(path) { "mount.tmp" } else { "json.tmp" });
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
        f.write_all(&json)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| Error::failed(format!("cannot write the registry record {}: {e}", path.display())))
}

/// Undo what `rec` names: its mounts at the recorded mount point whose source is ours
/// (the others are left alone, as a problem), then through its kind what lies under
/// them, then the mount point directory if it is ours (not a `manyfiles mount`'s DIR).
pub(crate) fn clean_record(rec: &Record, rep: &mut CleanupReport) {
    let mut mine = CleanupReport::default();
    if let Some(mp) = &rec.mount_point {
        for m in mounts_at(mp).into_iter().rev() {
            if !owns_mount(rec, &m) {
                mine.problems.push(format!(
                    "{}: mounted from {} ({}), which is not what the record names; left alone",
                    mp.display(),
                    m.source,
                    m.fs_type
                ));
                break;
            }
            match unmount(mp) {
                Ok(()) => mine.unmounted.push(mp.display().to_string()),
                Err(e) => {
                    mine.problems.push(e);
                    break;
                }
            }
        }
    }
    rec.kind().stop(rec, &mut mine);
    if let Some(mp) = rec.mount_point.as_ref().filter(|m| m.starts_with(STATE_DIR)) {
        if mounts_at(mp).is_empty() {
            match std::fs::remove_dir(mp) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => mine.problems.push(format!("cannot remove the mount point {}: {e}", mp.display())),
            }
        }
    }
    rep.merge(mine);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Scenario 1 (kill -9) regression: a killed run's `mount` helper could finish after
    /// cleanup looked; cleanup now waits for helpers naming the record's resources.
    #[test]
    fn reliability_kill_cleanup_waits_for_helpers() {
        let arg = format!("0.{}", 400 + std::process::id() % 500); // unique among processes
        let mut child = Command::new("bash").args(["-c", &format!("exec -a mount sleep {arg}")]).spawn().unwrap();
        let names = vec![arg.clone()];
        let t0 = std::time::Instant::now();
        while !helper_running(&names) && t0.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(helper_running(&names), "a process named mount with our argument is a helper");
        assert!(!helper_running(&["/nonexistent/loop".to_string()]));
        let image =
            super::super::kinds::image::ImageRecord { image: "/nonexistent/img".into(), loop_device: Some(arg) };
        let rec = Record { kind: KindRecord::Image(image), ..own_record("test") };
        wait_for_helpers(&rec);
        assert!(!helper_running(&names), "waited until the helper was gone");
        child.wait().unwrap();
    }

    #[test]
    fn own_start_time_is_found() {
        let t = start_time(std::process::id()).unwrap();
        assert!(t > 0);
        assert_eq!(start_time(std::process::id()), Some(t));
        let r = own_record("x");
        assert!(alive(&r));
        let dead = Record { pid: r.pid, start_time: t + 1, ..r.clone() };
        assert!(!alive(&dead), "same pid, other start time = pid reused");
    }

    /// Records from before locks (no `lock` field, no lock file) fall back to the pid +
    /// start time check: a live process's record is left alone, a dead one's removed.
    /// And a locked record whose lock file is held is left alone even with a dead pid.
    #[test]
    fn cleanup_lock_and_legacy_fallback() {
        if !rustix::process::geteuid().is_root() {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI runs as root");
            eprintln!("skipped: the registry needs root");
            return;
        }
        let dir = ensure_state_dir().unwrap();
        let me = own_record("legacy test");
        let mut legacy = serde_json::to_value(&me).unwrap();
        legacy.as_object_mut().unwrap().remove("lock");
        let key = format!("00000000T000000Z-{}-legacytest", std::process::id());
        let live = dir.join(format!("{key}-live.json"));
        let dead = dir.join(format!("{key}-dead.json"));
        std::fs::write(&live, serde_json::to_vec(&legacy).unwrap()).unwrap();
        legacy["start_time"] = (me.start_time + 1).into();
        std::fs::write(&dead, serde_json::to_vec(&legacy).unwrap()).unwrap();
        // A locked record (this process holds the lock) naming a pid that is not ours.
        let reg = register(&format!("{key}-locked"), Record { pid: 1, start_time: 1, ..me.clone() }).unwrap();
        assert!(reg.record.lock && lock_path(reg.path()).exists());
        let rep = cleanup().unwrap();
        assert!(rep.skipped_live >= 2, "{rep}");
        assert!(live.exists(), "a legacy record of a live process is left alone");
        assert!(!dead.exists(), "a legacy record of a dead process is removed");
        assert!(reg.path().exists() && lock_path(reg.path()).exists(), "a locked record is left alone");
        let (p, lp) = (reg.path().to_path_buf(), lock_path(reg.path()));
        reg.unregister().unwrap();
        assert!(!p.exists() && !lp.exists(), "unregister removes the record and its lock file");
        std::fs::remove_file(&live).unwrap();
    }

    #[test]
    fn image_names() {
        assert!(is_image_name("manyfiles-img-20260101T000000Z-1-0.img"));
        assert!(!is_image_name("important.img"));
        assert!(!is_image_name("manyfiles-img-x.raw"));
    }

    #[test]
    fn report_display() {
        let r = CleanupReport { unmounted: vec!["a".into()], problems: vec!["p".into()], ..Default::default() };
        let s = r.to_string();
        assert!(s.contains("1 unmounted") && s.contains("problem: p"));
    }
}

/// Names in first-seen order, each once, with a count where it repeats: `smbd ×12,
/// toxiproxy-server` (an SMB stack forks an smbd per connection).
pub fn counted(names: &[String]) -> String {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for n in names {
        match seen.iter_mut().find(|(s, _)| s == n) {
            Some((_, c)) => *c += 1,
            None => seen.push((n, 1)),
        }
    }
    let words: Vec<String> =
        seen.iter().map(|(n, c)| if *c > 1 { format!("{n} ×{c}") } else { n.to_string() }).collect();
    words.join(", ")
}

#[cfg(test)]
mod counted_tests {
    #[test]
    fn repeated_names_are_counted_once() {
        let names: Vec<String> = ["smbd", "toxiproxy-server", "smbd", "smbd"].map(String::from).to_vec();
        assert_eq!(super::counted(&names), "smbd ×3, toxiproxy-server");
        assert_eq!(super::counted(&[]), "");
    }
}
