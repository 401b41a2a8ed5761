//! The whole scratch root, mounts included, as path → what a user would call "changed":
//! kind, mode, owner, size, content hash and inode of files, link targets. Walked by path
//! with lstat (symlinks never followed), FIFOs never opened. Directory times are left
//! out (an entry added or removed shows as that entry); file times are kept.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: char,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub ino: u64,
    pub mtime_ns: i128,
    pub hash: u64,
    pub link: Option<PathBuf>,
}

pub type Snap = BTreeMap<PathBuf, Entry>;

/// Deeper than this is not walked (a copy recursing into itself is seen by its count).
pub const MAX_DEPTH: usize = 40;
const MAX_ENTRIES: usize = 200_000;

fn fnv(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn file_hash(p: &Path) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325;
    let Ok(mut f) = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(p)
    else {
        return 1;
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match f.read(&mut buf) {
            Ok(0) => return h,
            Ok(n) => h = fnv(&buf[..n], h),
            Err(_) => return 2,
        }
    }
}

fn entry(p: &Path, md: &std::fs::Metadata) -> Entry {
    let ft = md.file_type();
    let kind = if ft.is_dir() {
        'd'
    } else if ft.is_file() {
        'f'
    } else if ft.is_symlink() {
        'l'
    } else {
        'o'
    };
    let dir = kind == 'd';
    Entry {
        kind,
        mode: md.mode() & 0o7777,
        uid: md.uid(),
        gid: md.gid(),
        size: if dir { 0 } else { md.size() },
        ino: if dir { 0 } else { md.ino() },
        mtime_ns: if dir { 0 } else { i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec()) },
        hash: if kind == 'f' { file_hash(p) } else { 0 },
        link: if kind == 'l' { std::fs::read_link(p).ok() } else { None },
    }
}

/// Snapshot `root` (its own entry included), leaving out `skip` and what is below them.
pub fn take(root: &Path, skip: &[PathBuf]) -> Snap {
    let mut out = Snap::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((p, depth)) = stack.pop() {
        if skip.iter().any(|s| p.starts_with(s)) || out.len() >= MAX_ENTRIES {
            continue;
        }
        let Ok(md) = std::fs::symlink_metadata(&p) else { continue };
        out.insert(p.clone(), entry(&p, &md));
        if md.is_dir() && depth < MAX_DEPTH {
            if let Ok(rd) = std::fs::read_dir(&p) {
                for e in rd.flatten() {
                    stack.push((e.path(), depth + 1));
                }
            }
        }
    }
    out
}

/// Paths whose entry was added, removed or changed, with a word for what.
pub fn diff(before: &Snap, after: &Snap) -> Vec<(PathBuf, String)> {
    let mut v = Vec::new();
    for (p, a) in before {
        match after.get(p) {
            None => v.push((p.clone(), "removed".to_string())),
            Some(b) if a != b => v.push((p.clone(), what_changed(a, b))),
            _ => {}
        }
    }
    for p in after.keys() {
        if !before.contains_key(p) {
            v.push((p.clone(), "added".to_string()));
        }
    }
    v
}

fn what_changed(a: &Entry, b: &Entry) -> String {
    let mut w = Vec::new();
    if a.kind != b.kind {
        w.push(format!("kind {}→{}", a.kind, b.kind));
    }
    if a.mode != b.mode {
        w.push(format!("mode {:o}→{:o}", a.mode, b.mode));
    }
    if (a.uid, a.gid) != (b.uid, b.gid) {
        w.push("owner".into());
    }
    if a.size != b.size || a.hash != b.hash {
        w.push("content".into());
    }
    if a.ino != b.ino {
        w.push("inode".into());
    }
    if a.mtime_ns != b.mtime_ns {
        w.push("mtime".into());
    }
    if a.link != b.link {
        w.push("link target".into());
    }
    format!("changed ({})", w.join(", "))
}
