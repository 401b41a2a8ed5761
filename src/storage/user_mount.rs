//! `manyfiles mount SPEC DIR` / `manyfiles umount DIR`: a managed target (a device
//! class, an exFAT or NTFS image, a tmpfs …) brought up at the user's DIR for their own
//! tools, and taken down completely.
//!
//! The mount outlives the command, so its registry record becomes `<key>.mount` (a
//! run's is `<key>.json`; [`registry::MOUNT_EXT`]): plain `manyfiles cleanup` leaves it
//! alone even though the process that made it is gone (that is how cleanup tells a
//! user's live mount from a killed run's leftovers), and so does every older build's
//! cleanup, which reads only `*.json` (records of builds that marked a `.json`
//! `persistent` instead are still honoured here). Only `manyfiles umount DIR` or
//! `manyfiles cleanup --mounts` removes it. A `mount` killed before it finished never
//! renamed its record: plain cleanup removes that.
//! DIR itself (the user's directory) is never removed, only unmounted. A share (`share:`)
//! has two records, its client's at DIR and its export's: `umount DIR` takes both.
//!
//! A mount is found by what /proc/self/mountinfo says now (its mount id, recorded when
//! `mount` finished, and its source), not by the path it was made at: a renamed parent
//! moves it, and `umount NEWPATH` takes it down. `umount` changes nothing while the
//! mount is in use (a process in it, a mount inside it, a bind mount of it elsewhere).

use super::fsspec::FsSpec;
use super::managed::ManagedFs;
use super::registry::{self, CleanupReport, MountEntry, Record, mounts, mounts_at, owns_mount};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// What `mount` made.
pub struct Mounted {
    pub dir: PathBuf,
    pub details: super::managed::ManagedDetails,
    pub record: PathBuf,
}

/// Check DIR for `mount`: an existing empty directory, not a mount point, not in the
/// state directory. Returns it canonical.
fn check_dir(dir: &Path) -> Result<PathBuf> {
    const FLAG: &str = "DIR";
    let abs = std::fs::canonicalize(dir)
        .map_err(|e| Error::bad(FLAG, format!("{}: {e} (mount needs an existing empty directory)", dir.display())))?;
    if !abs.is_dir() {
        return Err(Error::bad(FLAG, format!("{}: not a directory", abs.display())));
    }
    if abs.starts_with(registry::STATE_DIR) {
        return Err(Error::bad(FLAG, format!("{}: inside manyfiles' state directory", abs.display())));
    }
    if !mounts_at(&abs).is_empty() {
        return Err(Error::bad(FLAG, format!("{}: something is already mounted there", abs.display())));
    }
    let mut rd = std::fs::read_dir(&abs).map_err(|e| Error::bad(FLAG, format!("{}: {e}", abs.display())))?;
    if rd.next().is_some() {
        return Err(Error::bad(FLAG, format!("{}: not empty (mount would hide what is in it)", abs.display())));
    }
    Ok(abs)
}

/// Bring `spec` up at `dir` with `bytes` of image and leave it mounted (see the module docs).
/// Bad input names `mount`'s own arguments (SPEC, DIR, --size), not a ladder's flags.
pub fn mount(spec: &FsSpec, dir: &Path, bytes: u64) -> Result<Mounted> {
    if !rustix::process::geteuid().is_root() {
        return Err(Error::bad("SPEC", "mount needs root (it formats and mounts a file system)"));
    }
    check_size(spec, bytes)?;
    ManagedFs::preflight(std::slice::from_ref(spec), bytes).map_err(|e| match e {
        Error::BadInput { flag, reason } if flag == "--fs" => Error::bad("SPEC", reason),
        e => e,
    })?;
    let dir = check_dir(dir)?;
    let fs = ManagedFs::create_in(spec, bytes, 0, Some(&dir))?;
    let details = fs.details().clone();
    let record = fs.keep_mounted()?;
    Ok(Mounted { dir, details, record })
}

/// `--size` against the type's minimum and the backing directory's free space (the
/// preflight checks them too, but names a ladder's `--fs`).
fn check_size(spec: &FsSpec, bytes: u64) -> Result<()> {
    use crate::units::fmt_size;
    let fs = spec.share().map(|s| &s.export).unwrap_or(spec);
    let rounded = bytes.div_ceil(4096) * 4096;
    let min = super::managed::min_image_bytes(fs);
    if rounded < min {
        return Err(Error::bad(
            "--size",
            format!(
                "{} is below the minimum for {} ({})",
                fmt_size(bytes as f64),
                fs.fs_type.name(),
                fmt_size(min as f64)
            ),
        ));
    }
    if fs.device().is_none() {
        let dir = fs.backing_dir();
        if let Ok(v) = rustix::fs::statvfs(&dir) {
            let free = v.f_bavail.saturating_mul(v.f_frsize);
            if free < rounded {
                return Err(Error::bad(
                    "--size",
                    format!(
                        "{} does not fit: {} (where the image goes) has {} free",
                        fmt_size(bytes as f64),
                        dir.display(),
                        fmt_size(free as f64)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The records of `manyfiles mount`s (path, record).
pub fn persistent_records() -> Vec<(PathBuf, Record)> {
    let Ok(rd) = std::fs::read_dir(registry::state_dir()) else { return Vec::new() };
    let mut v: Vec<(PathBuf, Record)> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") || registry::is_mount_record(p))
        .filter_map(|p| {
            let r: Record = serde_json::from_slice(&std::fs::read(&p).ok()?).ok()?;
            (r.persistent || registry::is_mount_record(&p)).then_some((p, r))
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// Where the mount of record `rec` is now, by identity, not by the path recorded when
/// it was made (a parent renamed moves it): the mount with the recorded mount id and
/// the recorded source; for a record without an id, the one at the recorded path, else
/// the only mount of its whole file system.
pub fn locate(rec: &Record, all: &[MountEntry]) -> Option<MountEntry> {
    let owned: Vec<&MountEntry> = all.iter().filter(|m| owns_mount(rec, m)).collect();
    if let Some(id) = rec.mount_id {
        return owned.into_iter().find(|m| m.mount_id == id).cloned();
    }
    if let Some(m) = owned.iter().rev().find(|m| Some(&m.mount_point) == rec.mount_point.as_ref()) {
        return Some((*m).clone());
    }
    let whole: Vec<&&MountEntry> = owned.iter().filter(|m| m.root == Path::new("/")).collect();
    (whole.len() == 1).then(|| (*whole[0]).clone())
}

/// `rec` with its mount point where its mount is now (see [`locate`]), for `cleanup
/// --mounts`; as it was if it is not mounted.
pub(crate) fn follow_moved(mut rec: Record) -> Record {
    if let Some(m) = locate(&rec, &mounts()) {
        rec.mount_point = Some(m.mount_point);
    }
    rec
}

/// What `umount` took down.
pub struct Umounted {
    pub dir: PathBuf,
    pub fs: String,
    pub report: CleanupReport,
}

impl std::fmt::Display for Umounted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = &self.report;
        write!(f, "umount: took {} down at {}", self.fs, self.dir.display())?;
        let mut done = Vec::new();
        if !r.detached.is_empty() {
            done.push(format!("loop device {} detached", r.detached.join(", ")));
        }
        if !r.deleted.is_empty() {
            done.push(format!("{} image(s) deleted", r.deleted.len()));
        }
        if !r.stopped.is_empty() {
            done.push(format!("{} stopped", super::registry::counted(&r.stopped)));
        }
        if !done.is_empty() {
            write!(f, " ({})", done.join(", "))?;
        }
        write!(f, "; {} stays", self.dir.display())
    }
}

/// A `manyfiles mount`'s record: its file, what it says, where its mount is now.
type Found = (PathBuf, Record, Option<MountEntry>);

/// DIR made absolute: canonical if it exists, else as given (the old path of a mount
/// whose parent was renamed), `.` and `..` taken out by name.
fn absolute(dir: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(dir) {
        return p;
    }
    let joined = std::env::current_dir().map(|c| c.join(dir)).unwrap_or_else(|_| dir.to_path_buf());
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Take down the `manyfiles mount` at `dir` (wherever it was made: found by its mount id,
/// see [`locate`]): unmount, detach, stop its daemons, delete its image; DIR stays.
/// Refused (exit 2) when no `manyfiles mount` is there (the old path of a moved one
/// says where it went); refused (exit 1, nothing changed) while it is in use
/// ([`refuse_if_busy`]).
pub fn umount(dir: &Path) -> Result<Umounted> {
    if !rustix::process::geteuid().is_root() {
        return Err(Error::bad("DIR", "umount of a manyfiles mount needs root (as mount did)"));
    }
    let abs = absolute(dir);
    let _lock = registry::cleanup_lock(&registry::ensure_state_dir()?)?;
    let all_mounts = mounts();
    let all = persistent_records();
    // A share's export is its own record, mounted in the state directory: not the user's.
    let users: Vec<Found> = all
        .iter()
        .filter(|(_, r)| !r.mount_point.as_ref().is_some_and(|m| m.starts_with(registry::STATE_DIR)))
        .map(|(p, r)| (p.clone(), r.clone(), locate(r, &all_mounts)))
        .collect();
    let here = users
        .iter()
        .find(|(_, _, now)| now.as_ref().is_some_and(|m| m.mount_point == abs))
        .or_else(|| users.iter().find(|(_, r, now)| now.is_none() && r.mount_point.as_deref() == Some(&abs)));
    let Some((path, rec, now)) = here.cloned() else {
        if let Some((_, _, Some(m))) = users.iter().find(|(_, r, _)| r.mount_point.as_deref() == Some(&abs)) {
            return Err(Error::bad(
                "DIR",
                format!(
                    "{}: the manyfiles mount made here is now at {} (a parent directory was renamed or moved): manyfiles umount {}",
                    abs.display(),
                    m.mount_point.display(),
                    m.mount_point.display()
                ),
            ));
        }
        return Err(Error::bad("DIR", format!("{}: no manyfiles mount is recorded there", abs.display())));
    };
    match &now {
        Some(m) => refuse_if_busy(&abs, m, &rec, &all_mounts, &users)?,
        None => {
            // Not mounted as made: if its file system is mounted anyway (by hand, a bind
            // mount left behind), its loop device and daemons must stay.
            let left: Vec<String> = all_mounts
                .iter()
                .filter(|m| owns_mount(&rec, m))
                .map(|m| m.mount_point.display().to_string())
                .collect();
            if !left.is_empty() {
                return Err(Error::failed(format!(
                    "{}: its file system is still mounted at {}; nothing was changed (umount that first)",
                    abs.display(),
                    left.join(", ")
                )));
            }
        }
    }
    let mut rec = rec;
    if rec.mount_point.as_deref() != Some(abs.as_path()) {
        rec.mount_point = Some(abs.clone());
        registry::rewrite_record(&path, &rec)?;
    }
    if now.is_some() {
        if let Err(e) = unmount_in_use_refused(&abs) {
            // Something came in after the checks: name it if it can be seen.
            let again = mounts();
            if let Some(m) = locate(&rec, &again) {
                refuse_if_busy(&abs, &m, &rec, &again, &users)?;
            }
            return Err(e);
        }
    }
    // A share's export has its own record naming the share's stack directory: taken
    // down after the share's client, server and proxy.
    let stack = rec.share_dir.clone();
    let fs = rec.fs.clone();
    let mut mine: Vec<(PathBuf, Record)> = vec![(path.clone(), rec)];
    mine.extend(all.into_iter().filter(|(p, r)| *p != path && stack.is_some() && r.share_dir == stack));
    let mut rep = CleanupReport::default();
    let mut kept = Vec::new();
    for (path, rec) in mine {
        let before = rep.problems.len();
        registry::clean_record(&rec, &mut rep);
        if rep.problems.len() == before {
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_file(path.with_extension("lock"));
            let _ = std::fs::remove_file(path.with_extension("mount.tmp"));
        } else {
            kept.push(path.display().to_string());
        }
    }
    if !rep.problems.is_empty() {
        return Err(Error::failed(format!(
            "umount {}: {} (record {} kept: run umount again once fixed)",
            abs.display(),
            rep.problems.join("; "),
            kept.join(", ")
        )));
    }
    Ok(Umounted { dir: abs, fs, report: rep })
}

/// Refuse (exit 1, nothing changed) to take down mount `m` (at `abs`) while anything
/// uses it: a mount inside it (a `manyfiles mount` or any other; it would be lost with
/// it), another mount of its file system (a bind mount elsewhere: it would be left on
/// a detached device), or a process with its working or root directory, an open or a
/// mapped file in it (it would get EIO). One line naming them all, as fuser would.
fn refuse_if_busy(abs: &Path, m: &MountEntry, rec: &Record, all: &[MountEntry], users: &[Found]) -> Result<()> {
    let mut why: Vec<String> = Vec::new();
    for inner in super::mountinfo::mounts_inside(m.mount_id, all) {
        let p = inner.mount_point.display();
        let ours = users.iter().any(|(_, _, now)| now.as_ref().is_some_and(|n| n.mount_id == inner.mount_id));
        why.push(if inner.mount_point == abs {
            format!("{} from {} is mounted on top of it (umount that first)", inner.fs_type, inner.source)
        } else if ours {
            format!("the manyfiles mount {p} is inside it (manyfiles umount {p} first)")
        } else {
            format!("{p} ({} from {}) is mounted inside it (umount it first)", inner.fs_type, inner.source)
        });
    }
    let same_fs: Vec<&MountEntry> = all
        .iter()
        .filter(|e| e.mount_id != m.mount_id && (e.major_minor == m.major_minor || owns_mount(rec, e)))
        .collect();
    for e in &same_fs {
        why.push(format!(
            "its file system is also mounted at {} (a bind mount; umount it first)",
            e.mount_point.display()
        ));
    }
    let ids: Vec<u64> = std::iter::once(m.mount_id).chain(same_fs.iter().map(|e| e.mount_id)).collect();
    let holders = super::busy::holders(&ids, super::mountinfo::dev_numbers(&m.major_minor));
    if !holders.is_empty() {
        const SHOWN: usize = 10;
        let me = std::process::id();
        let mut list: Vec<String> = holders
            .iter()
            .take(SHOWN)
            .map(|h| {
                if h.pid == me {
                    format!("this umount itself ({}: cd out of it)", h.uses.join(", "))
                } else {
                    h.to_string()
                }
            })
            .collect();
        if holders.len() > SHOWN {
            list.push(format!("{} more", holders.len() - SHOWN));
        }
        why.push(format!("used by {}", list.join(", ")));
    }
    if why.is_empty() {
        return Ok(());
    }
    Err(Error::failed(format!("umount {}: in use, nothing was changed: {}", abs.display(), why.join("; "))))
}

/// Unmount `mp`, never lazily: a mount something started using after the check stays
/// mounted and nothing else is torn down (EBUSY right after use is common with FUSE:
/// a few tries).
fn unmount_in_use_refused(mp: &Path) -> Result<()> {
    let mps = mp.to_string_lossy().into_owned();
    let mut last = String::new();
    for i in 0..5 {
        match registry::run_tool(&["umount".to_string(), mps.clone()]) {
            Ok(_) => return Ok(()),
            Err(e) => last = e,
        }
        std::thread::sleep(std::time::Duration::from_millis(100 * (i + 1)));
    }
    Err(Error::failed(format!("umount {}: {last}; nothing was changed (still in use?)", mp.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unmount `umount` does after its checks is never lazy: a process that came in
    /// after them keeps the mount mounted (umount(8) fails with EBUSY), and it says so.
    #[test]
    fn the_unmount_after_the_checks_is_never_lazy() {
        if !rustix::process::geteuid().is_root() {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI runs as root");
            eprintln!("skipped: mount needs root");
            return;
        }
        let scratch = tempfile::Builder::new().prefix("mounts-unit-").tempdir_in("/tmp").unwrap();
        let dir = scratch.path().canonicalize().unwrap().join("m");
        std::fs::create_dir(&dir).unwrap();
        let m = mount(&FsSpec::parse("tmpfs").unwrap(), &dir, 4 << 20).unwrap();
        let mut late = std::process::Command::new("sleep").arg("30").current_dir(&dir).spawn().unwrap();
        let r = unmount_in_use_refused(&dir);
        let still = !mounts_at(&dir).is_empty();
        let _ = late.kill();
        let _ = late.wait();
        let done = umount(&dir);
        if done.is_err() {
            let _ = std::process::Command::new("umount").arg(&dir).status();
            let _ = std::fs::remove_file(&m.record);
        }
        let e = r.expect_err("refused while a process works in it").to_string();
        assert!(e.contains("nothing was changed"), "{e}");
        assert!(still, "not detached lazily");
        assert!(done.is_ok() && !m.record.exists());
    }

    /// A `manyfiles mount` whose parent was renamed twice is found where it is now, by
    /// its mount id (what `cleanup --mounts` and `umount` take down), and `umount` of the
    /// new path takes it down.
    #[test]
    fn a_mount_is_followed_past_a_renamed_parent() {
        if !rustix::process::geteuid().is_root() {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI runs as root");
            eprintln!("skipped: mount needs root");
            return;
        }
        let scratch = tempfile::Builder::new().prefix("mounts-unit-").tempdir_in("/tmp").unwrap();
        let root = scratch.path().canonicalize().unwrap();
        let dir = root.join("a/mnt");
        std::fs::create_dir_all(&dir).unwrap();
        let m = mount(&FsSpec::parse("tmpfs").unwrap(), &dir, 4 << 20).unwrap();
        let rec: Record = serde_json::from_slice(&std::fs::read(&m.record).unwrap()).unwrap();
        assert!(rec.mount_id.is_some(), "mount records its mount id");
        std::fs::rename(root.join("a"), root.join("b")).unwrap();
        std::fs::rename(root.join("b"), root.join("c")).unwrap();
        let now = root.join("c/mnt");
        let moved = follow_moved(rec.clone());
        let ok = moved.mount_point.as_deref() == Some(now.as_path());
        let done = umount(&now);
        if done.is_err() {
            let _ = std::process::Command::new("umount").arg(&now).status();
            let _ = std::fs::remove_file(&m.record);
        }
        assert!(ok, "followed to {:?}", moved.mount_point);
        assert!(done.is_ok() && !m.record.exists() && mounts_at(&now).is_empty());
    }

    /// A `manyfiles mount`'s record is `<key>.mount` (no `.json`, no lock file) and plain
    /// cleanup keeps it, its process gone or not; builds before the rename read only
    /// `*.json` (RELIABILITY.md, the user-mount row, for what an older build was seen to do).
    #[test]
    fn a_mount_record_is_kept_by_plain_cleanup() {
        if !rustix::process::geteuid().is_root() {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI runs as root");
            eprintln!("skipped: the registry needs root");
            return;
        }
        let key = format!("00000000T000000Z-{}-mounttest", std::process::id());
        // A record naming nothing (cleanup would have nothing to undo), of a dead pid.
        let rec = Record { pid: u32::MAX, start_time: 1, ..registry::own_record("mount test") };
        let reg = registry::register(&key, rec).unwrap();
        let json = reg.path().to_path_buf();
        let path = reg.into_persistent().unwrap();
        assert_eq!(path, json.with_extension("mount"));
        assert!(!json.exists() && !json.with_extension("lock").exists() && !json.with_extension("mount.tmp").exists());
        let back: Record = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(back.persistent);
        assert!(persistent_records().iter().any(|(p, _)| *p == path), "umount finds it");
        let rep = registry::cleanup().unwrap();
        assert!(rep.kept_mounts >= 1 && path.exists(), "plain cleanup keeps a mount record: {rep}");
        // (cleanup --mounts would take every user's mount on this machine: not run here.)
        std::fs::remove_file(&path).unwrap();
    }
}
