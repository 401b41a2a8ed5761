//! Mounts as /proc/self/mountinfo lists them (moved out of `registry.rs`, which
//! re-exports them).

use std::path::{Path, PathBuf};

/// One line of /proc/self/mountinfo.
#[derive(Debug, Clone)]
pub struct MountEntry {
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
}
