//! Target: where the work happens. For now an existing directory; the tool works only
//! inside a run directory it creates there (see [`rundir`]).

pub mod fsspec;
pub mod managed;
pub mod registry;
pub mod rundir;

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
}

impl TargetInfo {
    /// Describe the directory `path` (which must exist).
    pub fn probe(id: &str, path: &Path) -> std::io::Result<TargetInfo> {
        let abs = std::fs::canonicalize(path)?;
        let vfs = statvfs(&abs).map_err(std::io::Error::from)?;
        let mount = mount_of(&abs).unwrap_or_default();
        Ok(TargetInfo {
            id: id.to_string(),
            kind: "dir".into(),
            path: abs,
            fs_type: mount.fs_type,
            mount_point: mount.mount_point,
            mount_source: mount.source,
            mount_options: mount.options,
            block_size: vfs.f_bsize,
            free_bytes: vfs.f_bavail.saturating_mul(vfs.f_frsize),
            total_bytes: vfs.f_blocks.saturating_mul(vfs.f_frsize),
            read_only: vfs.f_flag.contains(StatVfsMountFlags::RDONLY),
            managed: None,
        })
    }

    /// Bytes a file of `size` bytes occupies (rounded up to whole blocks, at least one
    /// block for the inode's share on most file systems).
    pub fn allocated(&self, size: u64) -> u64 {
        let b = self.block_size.max(512);
        size.div_ceil(b).max(1) * b
    }
}

#[derive(Debug, Default, Clone)]
struct Mount {
    mount_point: String,
    fs_type: String,
    source: String,
    options: String,
}

/// The mount holding `path`: the longest mount point that is a prefix of it, from
/// /proc/self/mountinfo (statfs' magic number cannot tell ext2/3/4 apart; this can).
fn mount_of(path: &Path) -> Option<Mount> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<Mount> = None;
    for line in text.lines() {
        // id parent major:minor root mount_point options [optional...] - fstype source super_options
        let (left, right) = line.split_once(" - ")?;
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if l.len() < 6 || r.len() < 3 {
            continue;
        }
        let mp = unescape(l[4]);
        if path.starts_with(&mp) && best.as_ref().is_none_or(|b| mp.len() >= b.mount_point.len()) {
            best = Some(Mount {
                mount_point: mp,
                fs_type: r[0].to_string(),
                source: unescape(r[1]),
                options: format!("{},{}", l[5], r[2]),
            });
        }
    }
    best
}

/// mountinfo escapes space, tab, newline and backslash as octal (\040).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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
    }

    #[test]
    fn unescapes_mountinfo() {
        assert_eq!(unescape("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape("plain"), "plain");
    }
}
