//! What a copy could not keep, counted per kind with the first paths: [`Loss`] (the
//! kinds, their names, what each means and the flag that accepts it), [`Losses`] (the
//! counters a copy adds to from every thread), [`merge_rows`] (every rank's rows as one).
//! A name the destination cannot hold (not UTF-8 on exFAT or NTFS, a character they
//! forbid) is one of these kinds too: [`unholdable_name`].

use super::attrs::ns_bit;
use rustix::io::Errno;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Kinds of loss: what the destination (or the user's rights there) could not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    Owner,
    Modes,
    Times,
    Xattrs,
    Acls,
    HardLinks,
    Symlinks,
    Specials,
    Flags,
    Sparse,
    /// An entry whose name the destination cannot hold: not made (nor anything below it).
    Names,
}

pub const LOSS_KINDS: usize = 11;

impl Loss {
    pub const ALL: [Loss; LOSS_KINDS] = [
        Loss::Owner,
        Loss::Modes,
        Loss::Times,
        Loss::Xattrs,
        Loss::Acls,
        Loss::HardLinks,
        Loss::Symlinks,
        Loss::Specials,
        Loss::Flags,
        Loss::Sparse,
        Loss::Names,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Loss::Owner => "owner",
            Loss::Modes => "modes",
            Loss::Times => "times",
            Loss::Xattrs => "xattrs",
            Loss::Acls => "acls",
            Loss::HardLinks => "hard_links",
            Loss::Symlinks => "symlinks",
            Loss::Specials => "specials",
            Loss::Flags => "flags",
            Loss::Sparse => "sparse",
            Loss::Names => "names",
        }
    }
    /// What the loss means, for the summary.
    pub fn what(self) -> &'static str {
        match self {
            Loss::Owner => "owner/group not kept",
            Loss::Modes => "permission bits not kept",
            Loss::Times => {
                "mtime not kept exactly (coarser timestamps, or a symlink whose time a share sets through it)"
            }
            Loss::Xattrs => "extended attributes not kept",
            Loss::Acls => "POSIX ACLs not kept",
            Loss::HardLinks => "hard links copied as separate files",
            Loss::Symlinks => "symlinks not made",
            Loss::Specials => "fifos, sockets or device nodes not made",
            Loss::Flags => "inode flags (chattr) not kept",
            Loss::Sparse => "holes filled (sparse file written whole)",
            Loss::Names => {
                "names the destination cannot hold (not UTF-8, a character it forbids, or only the case differs from another name on a destination that ignores case): not copied"
            }
        }
    }
    /// The flag that turns this kind off (and with it its losses).
    pub fn flag(self) -> &'static str {
        match self {
            Loss::Owner => "--no-owner",
            Loss::Xattrs => "--no-xattrs",
            Loss::Acls => "--no-acls",
            Loss::HardLinks => "--no-hard-links",
            Loss::Sparse => "--no-sparse",
            Loss::Specials => "--no-specials",
            Loss::Flags => "--no-flags",
            Loss::Modes | Loss::Times | Loss::Symlinks | Loss::Names => "--lossy",
        }
    }
    fn idx(self) -> usize {
        self as usize
    }
}

/// Paths kept per kind of loss.
pub const LOSS_PATHS: usize = 10;

/// One kind of loss in the summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LossRow {
    pub kind: String,
    pub count: u64,
    /// The first paths (at most [`LOSS_PATHS`]).
    pub paths: Vec<String>,
}

/// Losses counted while copying: one relaxed add per loss, the first paths under a lock.
#[derive(Default)]
pub struct Losses {
    counts: [AtomicU64; LOSS_KINDS],
    paths: Mutex<Vec<(usize, String)>>,
    /// A kind the destination refused as unsupported: not tried again.
    unsupported: [AtomicBool; LOSS_KINDS],
    /// xattr namespaces the destination drops ([`Caps::dropped_ns`]): losses, never set.
    pub(crate) dropped_ns: std::sync::atomic::AtomicU8,
}

impl Losses {
    pub fn add(&self, kind: Loss, path: impl FnOnce() -> String) {
        let n = self.counts[kind.idx()].fetch_add(1, Ordering::Relaxed);
        if n < LOSS_PATHS as u64 {
            self.paths.lock().unwrap_or_else(|p| p.into_inner()).push((kind.idx(), path()));
        }
    }
    pub fn unsupported(&self, kind: Loss) -> bool {
        self.unsupported[kind.idx()].load(Ordering::Relaxed)
    }
    pub fn mark_unsupported(&self, kind: Loss) {
        self.unsupported[kind.idx()].store(true, Ordering::Relaxed)
    }
    /// Is xattr `name` in a namespace the destination drops?
    pub fn dropped(&self, name: &[u8]) -> bool {
        let bit = ns_bit(name);
        bit != 0 && self.dropped_ns.load(Ordering::Relaxed) & bit != 0
    }
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
    /// The rows with a count, in [`Loss::ALL`] order, paths sorted.
    pub fn rows(&self) -> Vec<LossRow> {
        let paths = self.paths.lock().unwrap_or_else(|p| p.into_inner());
        Loss::ALL
            .iter()
            .filter_map(|k| {
                let count = self.counts[k.idx()].load(Ordering::Relaxed);
                (count > 0).then(|| {
                    let mut p: Vec<String> =
                        paths.iter().filter(|(i, _)| *i == k.idx()).map(|(_, p)| p.clone()).collect();
                    p.sort();
                    LossRow { kind: k.name().into(), count, paths: p }
                })
            })
            .collect()
    }
}

/// Merge loss rows of several parts (ranks): counts summed, paths up to [`LOSS_PATHS`].
pub fn merge_rows(parts: impl IntoIterator<Item = Vec<LossRow>>) -> Vec<LossRow> {
    let mut out: Vec<LossRow> = Vec::new();
    for rows in parts {
        for r in rows {
            match out.iter_mut().find(|o| o.kind == r.kind) {
                Some(o) => {
                    o.count += r.count;
                    o.paths.extend(r.paths);
                    o.paths.sort();
                    o.paths.truncate(LOSS_PATHS);
                }
                None => out.push(r),
            }
        }
    }
    let order = |k: &str| Loss::ALL.iter().position(|l| l.name() == k).unwrap_or(LOSS_KINDS);
    out.sort_by_key(|r| order(&r.kind));
    out
}

/// Did making an entry named `name` fail because the destination cannot hold the name?
/// EILSEQ says so (ntfs-3g, exfat-fuse and the kernel's exFAT and FAT with a UTF-8
/// iocharset, for bytes that are not UTF-8); EINVAL or ENOENT do when the name is not
/// UTF-8 or holds a character FAT, exFAT and Windows names forbid (exfat-fuse answers
/// ENOENT for a control character). On a POSIX file system such a name never fails.
pub fn unholdable_name(name: &[u8], e: Errno) -> bool {
    let forbidden = |c: char| c < ' ' || "\"*/:<>?\\|".contains(c);
    match e {
        Errno::ILSEQ => true,
        Errno::INVAL | Errno::NOENT => std::str::from_utf8(name).map_or(true, |n| n.contains(forbidden)),
        _ => false,
    }
}

/// A name as a loss lists it: UTF-8 as it is, other bytes as `\xFF` (as `ls -b`).
pub fn shown_name(name: &[u8]) -> String {
    let mut out = String::new();
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                c if c < ' ' => out.push_str(&format!("\\x{:02x}", c as u32)),
                '\\' => out.push_str("\\\\"),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_destination_cannot_hold() {
        assert!(unholdable_name(b"bad\xffname", Errno::ILSEQ));
        assert!(unholdable_name(b"bad\xffname", Errno::INVAL));
        assert!(unholdable_name(b"new\nline", Errno::NOENT));
        assert!(unholdable_name(b"a:b", Errno::INVAL));
        // A plain name, or another errno: a failure, not a loss.
        assert!(!unholdable_name(b"plain", Errno::NOENT));
        assert!(!unholdable_name(b"bad\xffname", Errno::NOSPC));
        assert!(!unholdable_name(b"bad\xffname", Errno::ACCESS));
        assert_eq!(shown_name(b"bad\xffname"), "bad\\xffname");
        assert_eq!(shown_name(b"new\nline\\"), "new\\nline\\\\");
        assert_eq!(shown_name("caf\u{e9}".as_bytes()), "caf\u{e9}");
    }
}
