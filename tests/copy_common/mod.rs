//! Helpers for the copy and sync tests: a small seeded generator of awkward trees, seeded
//! mutations, and a snapshot of a tree (kind, mode, mtime, size, content hash, symlink
//! target per path) made with std only, independent of the code under test.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};

/// xorshift64*: deterministic, no crate.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// A name from a pool of awkward ones, made unique with a counter.
pub fn name(r: &mut Rng, n: &mut u32) -> OsString {
    *n += 1;
    let base: Vec<u8> = match r.below(7) {
        0 => format!("with space {n}").into_bytes(),
        1 => format!("ünïcødé-名前-{n}").into_bytes(),
        2 => format!("new\nline{n}").into_bytes(),
        3 => {
            // 255 bytes: the longest name most file systems take.
            let mut v = format!("long{n}-").into_bytes();
            v.resize(255, b'x');
            v
        }
        4 => format!(".hidden{n}").into_bytes(),
        5 => format!("-dash {n}").into_bytes(),
        _ => format!("f{n}").into_bytes(),
    };
    OsString::from_vec(base)
}

pub fn set_mtime(p: &Path, secs: i64, nsec: u32) {
    let t = rustix::fs::Timestamps {
        last_access: rustix::fs::Timespec { tv_sec: secs, tv_nsec: 0 },
        last_modification: rustix::fs::Timespec { tv_sec: secs, tv_nsec: nsec as _ },
    };
    rustix::fs::utimensat(rustix::fs::CWD, p, &t, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).unwrap();
}

const FILE_MODES: [u32; 6] = [0o644, 0o600, 0o755, 0o400, 0o640, 0o777];
const DIR_MODES: [u32; 4] = [0o755, 0o700, 0o750, 0o555];

/// Write a file of a random kind of size (mostly small, some empty, rarely multi-MiB).
pub fn write_file(r: &mut Rng, p: &Path, big_ok: bool) {
    let size = match r.below(20) {
        0 | 1 => 0,
        2 if big_ok => 3 * 1024 * 1024 + r.below(4096) as usize,
        3 => 70_000 + r.below(300_000) as usize,
        _ => r.below(5000) as usize,
    };
    std::fs::write(p, r.bytes(size)).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(FILE_MODES[r.below(6) as usize])).unwrap();
    set_mtime(p, 1_500_000_000 + r.below(100_000_000) as i64, r.below(1_000_000_000) as u32);
}

/// A random tree under `root` (created): about `entries` entries with deep nesting,
/// empty directories, symlinks (relative, absolute, dangling), zero-byte and multi-MiB
/// files, varied modes and mtimes. Directory modes and mtimes are set last.
pub fn gen_tree(root: &Path, seed: u64, entries: usize) {
    let mut r = Rng::new(seed);
    let mut n = 0u32;
    std::fs::create_dir_all(root).unwrap();
    let mut dirs = vec![root.to_path_buf()];
    // A deep chain: 40 levels.
    let mut deep = root.join("deep");
    for i in 0..40 {
        deep = deep.join(format!("d{i}"));
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("bottom"), b"deep").unwrap();
    let mut bigs = 0;
    for _ in 0..entries {
        let parent = dirs[r.below(dirs.len() as u64) as usize].clone();
        let p = parent.join(name(&mut r, &mut n));
        match r.below(10) {
            0 | 1 => {
                std::fs::create_dir(&p).unwrap();
                dirs.push(p);
            }
            2 => {
                let target: OsString = match r.below(3) {
                    0 => "/etc/hostname".into(),
                    1 => format!("dangling-{n}").into(),
                    _ => "../sibling".into(),
                };
                symlink(&target, &p).unwrap();
                set_mtime(&p, 1_400_000_000 + r.below(1000) as i64, 0);
            }
            _ => {
                let big = bigs < 1 && r.chance(50);
                write_file(&mut r, &p, big);
                bigs += big as usize;
            }
        }
    }
    dirs.push(root.to_path_buf());
    finish_dirs(&mut r, root);
}

/// Set random modes and mtimes on every directory, deepest first.
fn finish_dirs(r: &mut Rng, root: &Path) {
    let mut all = Vec::new();
    collect_dirs(root, &mut all);
    all.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for d in all {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(DIR_MODES[r.below(4) as usize])).unwrap();
        set_mtime(&d, 1_300_000_000 + r.below(100_000_000) as i64, r.below(1_000_000_000) as u32);
    }
}

fn collect_dirs(p: &Path, out: &mut Vec<PathBuf>) {
    out.push(p.to_path_buf());
    for e in std::fs::read_dir(p).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            collect_dirs(&e.path(), out);
        }
    }
}

/// Make every directory writable (so the test can change the tree).
pub fn open_up(root: &Path) {
    let mut all = Vec::new();
    collect_dirs(root, &mut all);
    for d in all {
        let m = std::fs::metadata(&d).unwrap().permissions().mode();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(m | 0o700)).unwrap();
    }
}

/// Apply `count` random mutations to the tree: add, modify (new content, new mtime),
/// delete, file ↔ directory, symlink retarget, chmod. Directory metadata is re-randomised.
pub fn mutate(root: &Path, seed: u64, count: usize) {
    let mut r = Rng::new(seed ^ 0xABCDEF);
    let mut n = 100_000 + (seed as u32 % 1000) * 1000;
    open_up(root);
    for _ in 0..count {
        let all = list(root);
        let pick = &all[r.below(all.len() as u64) as usize];
        let md = std::fs::symlink_metadata(pick).unwrap();
        match r.below(6) {
            0 => {
                let dir = if md.is_dir() { pick.clone() } else { pick.parent().unwrap().to_path_buf() };
                let p = dir.join(name(&mut r, &mut n));
                write_file(&mut r, &p, false);
            }
            1 if md.is_file() => {
                std::fs::set_permissions(pick, std::fs::Permissions::from_mode(0o644)).unwrap();
                write_file(&mut r, pick, false);
            }
            2 if pick != root => remove(pick),
            3 if pick != root && md.is_file() => {
                remove(pick);
                std::fs::create_dir(pick).unwrap();
                write_file(&mut r, &pick.join("inside"), false);
            }
            3 if pick != root && md.is_dir() => {
                remove(pick);
                write_file(&mut r, pick, false);
            }
            4 if md.file_type().is_symlink() => {
                remove(pick);
                symlink(format!("retargeted-{n}"), pick).unwrap();
            }
            5 if md.is_file() => {
                std::fs::set_permissions(pick, std::fs::Permissions::from_mode(FILE_MODES[r.below(6) as usize]))
                    .unwrap();
            }
            _ => {
                let p = root.join(name(&mut r, &mut n));
                write_file(&mut r, &p, false)
            }
        }
    }
    finish_dirs(&mut r, root);
}

fn remove(p: &Path) {
    let md = std::fs::symlink_metadata(p).unwrap();
    if md.is_dir() {
        std::fs::remove_dir_all(p).unwrap();
    } else {
        std::fs::remove_file(p).unwrap();
    }
}

/// Every path below `root` (and root), not following symlinks.
pub fn list(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        let p = out[i].clone();
        if std::fs::symlink_metadata(&p).unwrap().is_dir() {
            let mut kids: Vec<PathBuf> = std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()).collect();
            kids.sort();
            out.extend(kids);
        }
        i += 1;
    }
    out
}

/// What a path is, for comparing trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub kind: &'static str,
    pub mode: u32,
    pub mtime: (i64, i64),
    pub size: u64,
    pub content: u64,
    pub link: Option<OsString>,
}

/// Snapshot of a tree: relative path → node. `with_root_meta`: include the root's own
/// mode and mtime.
pub fn snapshot(root: &Path) -> BTreeMap<Vec<u8>, Node> {
    let mut m = BTreeMap::new();
    for p in list(root) {
        let md = std::fs::symlink_metadata(&p).unwrap();
        let ft = md.file_type();
        let kind = if ft.is_dir() {
            "dir"
        } else if ft.is_symlink() {
            "symlink"
        } else if ft.is_file() {
            "file"
        } else {
            "other"
        };
        let content = if ft.is_file() {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::fs::read(&p).unwrap().hash(&mut h);
            h.finish()
        } else {
            0
        };
        let rel = p.strip_prefix(root).unwrap().as_os_str().as_bytes().to_vec();
        m.insert(
            rel,
            Node {
                kind,
                mode: md.mode() & 0o7777,
                mtime: (md.mtime(), md.mtime_nsec()),
                size: if ft.is_dir() { 0 } else { md.size() },
                content,
                link: ft.is_symlink().then(|| std::fs::read_link(&p).unwrap().into_os_string()),
            },
        );
    }
    m
}

/// Assert two trees are equal, naming the first few differences.
pub fn assert_same(src: &Path, dst: &Path) {
    let (a, b) = (snapshot(src), snapshot(dst));
    let mut diffs = Vec::new();
    for (k, v) in &a {
        match b.get(k) {
            None => diffs.push(format!("missing in dst: {:?}", String::from_utf8_lossy(k))),
            Some(w) if w != v => diffs.push(format!("differs: {:?}: src {v:?} dst {w:?}", String::from_utf8_lossy(k))),
            _ => {}
        }
    }
    for k in b.keys().filter(|k| !a.contains_key(*k)) {
        diffs.push(format!("only in dst: {:?}", String::from_utf8_lossy(k)));
    }
    assert!(diffs.is_empty(), "{} differences, first: {:#?}", diffs.len(), &diffs[..diffs.len().min(8)]);
}

/// Run the binary; returns (exit code, stdout, stderr).
pub fn mf(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_manyfiles")).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Run `manyfiles <cmd> src dst <extra> --json J -q` and return (code, summary JSON, stdout+stderr).
pub fn run_json(cmd: &str, src: &Path, dst: &Path, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let j = dst.with_extension("summary.json");
    let _ = std::fs::remove_file(&j);
    let mut args: Vec<&std::ffi::OsStr> = vec![cmd.as_ref(), src.as_os_str(), dst.as_os_str()];
    args.extend(extra.iter().map(|s| std::ffi::OsStr::new(*s)));
    args.extend(["--json".as_ref(), j.as_os_str(), "-q".as_ref()]);
    let (code, out, err) = mf(&args);
    let v = std::fs::read(&j).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or(serde_json::Value::Null);
    (code, v, format!("{out}{err}"))
}
