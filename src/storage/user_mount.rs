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

use super::fsspec::FsSpec;
use super::managed::ManagedFs;
use super::registry::{self, CleanupReport, Record, mounts_at};
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
pub fn mount(spec: &FsSpec, dir: &Path, bytes: u64) -> Result<Mounted> {
    ManagedFs::preflight(std::slice::from_ref(spec), bytes)?;
    let dir = check_dir(dir)?;
    let fs = ManagedFs::create_in(spec, bytes, 0, Some(&dir))?;
    let details = fs.details().clone();
    let record = fs.keep_mounted()?;
    Ok(Mounted { dir, details, record })
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

/// Take down the `manyfiles mount` at `dir`: unmount, detach, stop its daemons, delete
/// its image; DIR stays. Refused when no `manyfiles mount` is recorded there.
pub fn umount(dir: &Path) -> Result<CleanupReport> {
    if !rustix::process::geteuid().is_root() {
        return Err(Error::bad("DIR", "umount of a manyfiles mount needs root (as mount did)"));
    }
    let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let _lock = registry::cleanup_lock(&registry::ensure_state_dir()?)?;
    let all = persistent_records();
    let mut mine: Vec<(PathBuf, Record)> =
        all.iter().filter(|(_, r)| r.mount_point.as_deref() == Some(abs.as_path())).cloned().collect();
    // A share's export has its own record naming the share's stack directory: taken
    // down after the share's client, server and proxy.
    let stacks: Vec<PathBuf> = mine.iter().filter_map(|(_, r)| r.share_dir.clone()).collect();
    let firsts: Vec<PathBuf> = mine.iter().map(|(p, _)| p.clone()).collect();
    mine.extend(
        all.into_iter()
            .filter(|(p, r)| r.share_dir.as_ref().is_some_and(|d| stacks.contains(d)) && !firsts.contains(p)),
    );
    if mine.is_empty() {
        return Err(Error::bad("DIR", format!("{}: no manyfiles mount is recorded there", abs.display())));
    }
    let mut rep = CleanupReport::default();
    for (path, rec) in mine {
        let before = rep.problems.len();
        registry::clean_record(&rec, &mut rep);
        if rep.problems.len() == before {
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_file(path.with_extension("lock"));
            let _ = std::fs::remove_file(path.with_extension("mount.tmp"));
        } else {
            rep.problems.push(format!("{}: kept because of the problems above", path.display()));
        }
    }
    if !rep.problems.is_empty() {
        return Err(Error::failed(rep.to_string()));
    }
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

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
