//! Mounts as /proc/self/mountinfo lists them (moved out of `registry.rs`, which
//! re-exports them).

use std::path::{Path, PathBuf};

/// One line of /proc/self/mountinfo.
#[derive(Debug, Clone)]
pub struct MountEntry {
    /// The kernel's id of this mount (field 1): what a mount is, wherever its path moves
    /// (a parent renamed); reused only after it is unmounted.
    pub mount_id: u64,
    /// The id of the mount it sits on (field 2).
    pub parent_id: u64,
    /// The directory of its file system that is mounted here (`/`, or a bind mount's
    /// subdirectory).
    pub root: PathBuf,
    /// `major:minor` of the mounted device (btrfs and FUSE show an anonymous 0:N).
    pub major_minor: String,
    pub mount_point: PathBuf,
    pub fs_type: String,
    pub source: String,
    pub options: String,
}

/// All mounts of this process's namespace.
pub fn mounts() -> Vec<MountEntry> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else { continue };
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if l.len() < 6 || r.len() < 3 {
            continue;
        }
        out.push(MountEntry {
            mount_id: l[0].parse().unwrap_or(0),
            parent_id: l[1].parse().unwrap_or(0),
            root: PathBuf::from(unescape(l[3])),
            major_minor: l[2].to_string(),
            mount_point: PathBuf::from(unescape(l[4])),
            fs_type: r[0].to_string(),
            source: unescape(r[1]),
            options: format!("{},{}", l[5], r[2]),
        });
    }
    out
}

/// Mounts at exactly `mp` (stacked mounts give several; the last is on top).
pub fn mounts_at(mp: &Path) -> Vec<MountEntry> {
    mounts().into_iter().filter(|m| m.mount_point == mp).collect()
}

/// The mounts that sit on mount `id`, on those, and so on (by parent id: wherever their
/// paths are now).
pub fn mounts_inside(id: u64, all: &[MountEntry]) -> Vec<MountEntry> {
    let mut ids = vec![id];
    let mut out: Vec<MountEntry> = Vec::new();
    while let Some(parent) = ids.pop() {
        for m in all.iter().filter(|m| m.parent_id == parent && m.mount_id != parent) {
            if !out.iter().any(|o| o.mount_id == m.mount_id) {
                ids.push(m.mount_id);
                out.push(m.clone());
            }
        }
    }
    out
}

/// `major:minor` as numbers (mountinfo writes them in decimal).
pub fn dev_numbers(major_minor: &str) -> Option<(u32, u32)> {
    let (a, b) = major_minor.split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

pub(crate) fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
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
    #[test]
    fn unescapes_mountinfo() {
        assert_eq!(super::unescape("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(super::unescape("plain"), "plain");
    }

    #[test]
    fn parses_ids_and_finds_mounts_inside() {
        let all = super::mounts();
        let root = all.iter().find(|m| m.mount_point == std::path::Path::new("/")).expect("/ is mounted");
        assert!(root.mount_id > 0);
        let inside = super::mounts_inside(root.mount_id, &all);
        assert!(inside.iter().all(|m| m.mount_id != root.mount_id));
        assert!(inside.iter().any(|m| m.mount_point == std::path::Path::new("/proc")), "/proc sits on /");
        assert_eq!(super::dev_numbers("7:12"), Some((7, 12)));
        assert_eq!(super::dev_numbers("x"), None);
    }
}
