//! Target: where the work happens. For now an existing directory; the tool works only
//! inside a run directory it creates there (see [`rundir`]).

pub mod allocation;
pub mod azblob_stack;
pub mod busy;
pub mod cache;
mod daemon;
pub mod device;
pub mod device_class;
pub mod format;
pub mod fsspec;
pub mod kinds;
pub mod loopdev;
pub mod managed;
pub mod mountinfo;
pub mod nbd_stack;
pub mod object_client;
pub mod object_endpoint;
pub mod object_endpoint_azure;
pub mod object_owner;
pub mod object_stack;
pub mod registry;
pub mod rundir;
pub mod share;
pub mod share_netns;
pub mod share_stack;
pub mod user_mount;

use rustix::fs::{StatVfsMountFlags, statvfs};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What the results record about a target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    pub id: String,
    pub kind: String,
    pub path: PathBuf,
    pub fs_type: String,
    pub mount_point: String,
    pub mount_source: String,
    pub mount_options: String,
    pub block_size: u64,
    pub free_bytes: u64,
    pub total_bytes: u64,
    pub read_only: bool,
    /// How a managed test file system was made (None for an existing directory).
    pub managed: Option<managed::ManagedDetails>,
    /// The block device whose activity measurements record (`vda`, `loop3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// What the target is, as every table, comparison, chart and page names it:
    /// `/var/tmp (ext4 on vda)` for a directory, `TYPE[:BLOCK]@BACKING` for a managed
    /// file system (`xfs@dev:/dev/sdb` on a real device), or the user's `--label`.
    /// Empty in files written before labels existed (then [`TargetInfo::shown`] makes
    /// one from the rest). `id` stays the key measurements are matched by.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
}

impl TargetInfo {
    /// A target with no mount behind it (an object store reached by URL, a peer tool's
    /// run): what it is, where, and how tables name it; no file-system figures.
    pub fn unmounted(id: &str, kind: &str, path: &str, fs_type: &str, label: &str) -> TargetInfo {
        TargetInfo {
            id: id.into(),
            kind: kind.into(),
            path: path.into(),
            fs_type: fs_type.into(),
            mount_point: String::new(),
            mount_source: String::new(),
            mount_options: String::new(),
            block_size: 0,
            free_bytes: 0,
            total_bytes: 0,
            read_only: false,
            managed: None,
            device: None,
            label: label.into(),
        }
    }

    /// False for file systems that keep no POSIX permission bits or owners (exFAT, FAT,
    /// NTFS through ntfs-3g without a user mapping, counted with ntfs3; FUSE block mounts
    /// are those two): a `manyfiles copy` onto them reports what it drops as losses and
    /// fails without `--lossy`. Decided by name: the copy engine learns it per
    /// destination (`Caps`), but a target already torn down cannot be asked.
    pub fn keeps_posix_modes(&self) -> bool {
        let fs = self.managed.as_ref().map_or(self.fs_type.as_str(), |m| m.fs_type.as_str());
        !matches!(fs, "exfat" | "vfat" | "msdos" | "ntfs" | "ntfs3" | "fuseblk")
    }

    /// Describe the directory `path` (which must exist).
    pub fn probe(id: &str, path: &Path) -> std::io::Result<TargetInfo> {
        let abs = std::fs::canonicalize(path)?;
        let vfs = statvfs(&abs).map_err(std::io::Error::from)?;
        let mount = mount_of(&abs);
        let fs_type = mount.as_ref().map(|m| m.fs_type.clone()).unwrap_or_default();
        let source = mount.as_ref().map(|m| m.source.clone()).unwrap_or_default();
        let label = dir_label(&abs, &fs_type, &source);
        Ok(TargetInfo {
            id: id.to_string(),
            kind: "dir".into(),
            path: abs,
            fs_type,
            mount_point: mount.as_ref().map(|m| m.mount_point.display().to_string()).unwrap_or_default(),
            mount_source: source,
            mount_options: mount.as_ref().map(|m| m.options.clone()).unwrap_or_default(),
            block_size: vfs.f_bsize,
            free_bytes: vfs.f_bavail.saturating_mul(vfs.f_frsize),
            total_bytes: vfs.f_blocks.saturating_mul(vfs.f_frsize),
            read_only: vfs.f_flag.contains(StatVfsMountFlags::RDONLY),
            managed: None,
            device: None,
            label,
        })
    }

    /// The name views show: the label, or for a file written before labels existed one
    /// made from what it recorded (a managed target's id is already its spec).
    pub fn shown(&self) -> String {
        if !self.label.is_empty() {
            self.label.clone()
        } else if self.managed.is_some() || self.path.as_os_str().is_empty() {
            self.id.clone()
        } else {
            dir_label(&self.path, &self.fs_type, &self.mount_source)
        }
    }

    /// Bytes a file of `size` bytes occupies (rounded up to whole blocks, at least one
    /// block for the inode's share on most file systems).
    pub fn allocated(&self, size: u64) -> u64 {
        let b = self.block_size.max(512);
        size.div_ceil(b).max(1) * b
    }
}

/// A directory's label: its path and what holds it, `/var/tmp (ext4 on vda)`,
/// `/dev/shm (tmpfs)`, `/mnt/x (nfs4 on srv:/export)`.
pub fn dir_label(path: &Path, fs_type: &str, source: &str) -> String {
    let on = if let Some(dev) = source.strip_prefix("/dev/") {
        let dev = dev.strip_prefix("mapper/").unwrap_or(dev);
        format!(" on {dev}")
    } else if source.contains(':') || source.starts_with("//") {
        format!(" on {source}")
    } else {
        String::new()
    };
    match (fs_type.is_empty(), on.is_empty()) {
        (true, true) => path.display().to_string(),
        (true, false) => format!("{} ({})", path.display(), on.trim_start()),
        _ => format!("{} ({fs_type}{on})", path.display()),
    }
}

/// Make every label in `labels` distinct: the second `x` becomes `x#2`, and so on.
pub fn distinct_labels(labels: &mut [String]) {
    for i in 1..labels.len() {
        if labels[..i].contains(&labels[i]) {
            let base = labels[i].clone();
            let mut k = 2;
            while labels.iter().any(|l| *l == format!("{base}#{k}")) {
                k += 1;
            }
            labels[i] = format!("{base}#{k}");
        }
    }
}

/// The mount holding `path`: the longest mount point that is a prefix of it, from
/// /proc/self/mountinfo (statfs' magic number cannot tell ext2/3/4 apart; this can).
fn mount_of(path: &Path) -> Option<registry::MountEntry> {
    registry::mounts()
        .into_iter()
        .filter(|m| path.starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.as_os_str().len())
}

/// Processes holding `device` open (an fd in /proc/PID/fd naming it), this one aside.
/// Processes this user cannot inspect are not seen.
pub fn holders_of(device: &Path) -> Vec<u32> {
    let Ok(want) = std::fs::canonicalize(device) else { return Vec::new() };
    let me = std::process::id();
    let mut out = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else { return out };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else { continue };
        if fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == want)) {
            out.push(pid);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_root() {
        let t = TargetInfo::probe("t", Path::new("/")).unwrap();
        assert_eq!(t.mount_point, "/");
        assert!(!t.fs_type.is_empty());
        assert!(t.block_size >= 512);
        assert_eq!(t.allocated(1), t.block_size);
        assert_eq!(t.allocated(0), t.block_size);
        assert!(t.label.starts_with("/ ("), "{}", t.label);
        assert_eq!(t.shown(), t.label);
    }

    #[test]
    fn labels_say_what_a_directory_is() {
        let p = Path::new("/var/tmp");
        assert_eq!(dir_label(p, "ext4", "/dev/vda"), "/var/tmp (ext4 on vda)");
        assert_eq!(dir_label(p, "xfs", "/dev/mapper/vg-root"), "/var/tmp (xfs on vg-root)");
        assert_eq!(dir_label(Path::new("/dev/shm"), "tmpfs", "tmpfs"), "/dev/shm (tmpfs)");
        assert_eq!(dir_label(p, "nfs4", "srv:/export"), "/var/tmp (nfs4 on srv:/export)");
        assert_eq!(dir_label(p, "", ""), "/var/tmp");
        let mut l = vec!["a".to_string(), "b".into(), "a".into(), "a".into()];
        distinct_labels(&mut l);
        assert_eq!(l, ["a", "b", "a#2", "a#3"]);
    }
}
