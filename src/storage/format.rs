//! File system types: what formats and mounts each (mkfs and its argv, the FUSE daemons
//! of ntfs and exfat), the sizes and inodes an image needs, and the kernel's support.
//! Independent of the storage kind under it ([`super::kinds`]).

use super::fsspec::{FsSpec, FsType, fmt_block};
use super::registry::run_tool;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The modes an exFAT or NTFS mount shows (they keep no owners or modes): root's, not
/// writable by others (see [`mount_argv`]).
pub const FUSE_MODES: &str = "umask=022";

/// Inodes to ask of mkfs for `entries` files and directories: a quarter more, and room
/// for the run directory and the file system's own.
pub fn inodes_for(entries: u64) -> u64 {
    entries + entries / 4 + 1024
}

/// Bytes of metadata one file or directory costs beyond its data blocks, per type (an
/// upper bound, for sizing images): ext inode 256 B; xfs inode 512 B + directory entry;
/// btrfs inode, references and up to 2 KiB of inline data, twice (DUP metadata); NTFS
/// one 1 KiB MFT record + index entry; exFAT three 32 B directory entries.
pub fn entry_overhead(t: FsType) -> u64 {
    match t {
        FsType::Ext2 | FsType::Ext3 | FsType::Ext4 => 256 + 64,
        FsType::Xfs => 512 + 64,
        FsType::Btrfs => 2 * (2048 + 512),
        FsType::Ntfs => 1024 + 128,
        FsType::Exfat => 96,
        FsType::Tmpfs => 0,
    }
}

/// Minimum image sizes mkfs accepts (measured with xfsprogs 6.1, btrfs-progs 6.2).
pub fn min_image_bytes(spec: &FsSpec) -> u64 {
    const MIB: u64 = 1 << 20;
    match spec.fs_type {
        FsType::Xfs => 300 * MIB,
        FsType::Btrfs => 114_294_784,
        FsType::Exfat => (4 * MIB).max(spec.block.unwrap_or(0) * 64),
        FsType::Ntfs => 4 * MIB,
        FsType::Ext2 | FsType::Ext3 | FsType::Ext4 => 4 * MIB,
        FsType::Tmpfs => MIB,
    }
}

/// The tools that format and mount a type (mkfs, and the FUSE daemon of ntfs and exfat)
/// and the Debian packages that provide them.
pub fn format_tools(t: FsType) -> Vec<(&'static str, &'static str)> {
    match t {
        FsType::Ext2 => vec![("mkfs.ext2", "e2fsprogs")],
        FsType::Ext3 => vec![("mkfs.ext3", "e2fsprogs")],
        FsType::Ext4 => vec![("mkfs.ext4", "e2fsprogs")],
        FsType::Xfs => vec![("mkfs.xfs", "xfsprogs")],
        FsType::Btrfs => vec![("mkfs.btrfs", "btrfs-progs")],
        FsType::Ntfs => vec![("mkfs.ntfs", "ntfs-3g"), ("ntfs-3g", "ntfs-3g")],
        FsType::Exfat => vec![("mkfs.exfat", "exfatprogs"), ("mount.exfat-fuse", "exfat-fuse")],
        FsType::Tmpfs => vec![],
    }
}

/// `name` looked up in `path` (a PATH value), as the shell would.
pub fn find_in_path(name: &str, path: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .map(|d| d.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

fn kernel_has(fs: &str) -> bool {
    std::fs::read_to_string("/proc/filesystems")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().last() == Some(fs))
}

/// Is `fs` known to the kernel (after trying `modprobe`)?
pub fn kernel_supports(fs: &str) -> bool {
    if kernel_has(fs) {
        return true;
    }
    let _ = run_tool(&argv(&["modprobe", "-q", fs]));
    kernel_has(fs)
}

/// mkfs's argv for `spec` on `dev`, sized for `entries` files and directories (ext2/3/4).
pub fn mkfs_argv(spec: &FsSpec, dev: &str, entries: Option<u64>) -> Vec<String> {
    let b = spec.block.map(|b| b.to_string());
    let mut v: Vec<String> = Vec::new();
    let t = spec.fs_type;
    match t {
        FsType::Ext2 | FsType::Ext3 | FsType::Ext4 => {
            // Initialise inode tables and journal now: no ext4lazyinit thread writing
            // in the background while we measure.
            v.extend(argv(&[
                &format!("mkfs.{}", t.name()),
                "-q",
                "-F",
                "-E",
                "lazy_itable_init=0,lazy_journal_init=0",
            ]));
            match &b {
                Some(b) => v.extend(argv(&["-b", b])),
                // mke2fs gives images under 512 MiB 1 KiB blocks ("small" usage type);
                // a test file system should behave like a real one: 4 KiB.
                None => v.extend(argv(&["-b", "4096"])),
            }
            // The inode count is fixed at mkfs (one per 16 KiB by default: 32,768 in
            // 512 MiB, too few for 65,536 small files): a quarter more than the tree.
            if let Some(n) = entries {
                v.extend(argv(&["-N", &inodes_for(n).to_string()]));
            }
        }
        FsType::Xfs => {
            v.extend(argv(&["mkfs.xfs", "-q", "-f"]));
            if let Some(b) = &b {
                v.extend(argv(&["-b", &format!("size={b}")]));
            }
        }
        FsType::Btrfs => {
            v.extend(argv(&["mkfs.btrfs", "-q", "-f"]));
            if let Some(b) = &b {
                v.extend(argv(&["-s", b]));
            }
        }
        FsType::Ntfs => {
            // -Q: quick format (no zeroing), -F: our loop device has no partition geometry.
            v.extend(argv(&["mkfs.ntfs", "-Q", "-q", "-F"]));
            if let Some(b) = &b {
                v.extend(argv(&["-c", b]));
            }
        }
        FsType::Exfat => {
            v.push("mkfs.exfat".into());
            if let Some(b) = &b {
                v.extend(argv(&["-c", &fmt_block(b.parse::<u64>().unwrap_or(0))]));
            }
        }
        FsType::Tmpfs => return v,
    }
    v.push(dev.to_string());
    v
}

/// The argv mounting a file system of type `t` on `dev` at `mp` (not tmpfs: that is a
/// kind of its own, [`super::kinds::tmpfs`]).
pub fn mount_argv(t: FsType, dev: &str, mp: &Path) -> Vec<String> {
    let mp = mp.to_string_lossy().into_owned();
    match t {
        // Both daemons mount with allow_other (exfat-fuse always, ntfs-3g by default)
        // and, for file systems without owners, mode 0777: any local user could
        // write. umask=022 shows everything as root's 0755 and turns on the kernel's
        // permission checks (default_permissions), as on a freshly made ext4.
        FsType::Ntfs => argv(&["ntfs-3g", "-o", &format!("big_writes,{FUSE_MODES}"), dev, &mp]),
        FsType::Exfat => argv(&["mount.exfat-fuse", "-o", FUSE_MODES, dev, &mp]),
        t => argv(&["mount", "-t", t.name(), dev, &mp]),
    }
}

pub(crate) fn argv(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

pub(crate) fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string()
}

/// First line of the mkfs tool's version output.
pub(crate) fn tool_version(t: FsType) -> String {
    let (tool, flag) = match t {
        FsType::Ext2 | FsType::Ext3 | FsType::Ext4 => ("mke2fs", "-V"),
        FsType::Xfs => ("mkfs.xfs", "-V"),
        FsType::Btrfs => ("mkfs.btrfs", "--version"),
        FsType::Ntfs => ("mkfs.ntfs", "--version"),
        FsType::Exfat => ("mkfs.exfat", "-V"),
        FsType::Tmpfs => return format!("kernel {}", kernel_release()),
    };
    // Some tools print their version on stderr, some exit non-zero after printing it.
    let (so, se) = crate::helper::run_output(&argv(&[tool, flag]), crate::helper::DEFAULT_TIMEOUT);
    so.lines().chain(se.lines()).map(str::trim).find(|l| !l.is_empty()).unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimums_and_rounding() {
        assert_eq!(min_image_bytes(&FsSpec::parse("xfs").unwrap()), 300 << 20);
        assert!(min_image_bytes(&FsSpec::parse("btrfs").unwrap()) > 100 << 20);
    }

    #[test]
    fn finds_tools_in_a_given_path() {
        assert!(find_in_path("sh", OsStr::new("/usr/bin:/bin")).is_some());
        assert!(find_in_path("sh", OsStr::new("/nonexistent")).is_none());
    }
}
