//! Helpers for the fault-injection suite (tests/reliability_*.rs): bounded runs of the
//! binary, leftovers of managed file systems, and tree snapshots taken through directory
//! fds (so trees deeper than PATH_MAX and names that are not UTF-8 can be compared).
#![allow(dead_code)]

use manyfiles::fs::walk::{self, Kind};
use rustix::fd::AsFd;
use rustix::fs::{Mode, OFlags};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_manyfiles"))
}

/// What a finished run printed.
#[derive(Debug)]
pub struct Out {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn show(&self) -> String {
        format!("exit {:?}\n--- stdout:\n{}\n--- stderr:\n{}", self.code, self.stdout, self.stderr)
    }
    pub fn lines(&self) -> Vec<&str> {
        self.stderr.lines().filter(|l| !l.trim().is_empty()).collect()
    }
}

/// A command for the binary; `nofile` (soft, hard) sets RLIMIT_NOFILE in the child.
pub fn command(args: &[&std::ffi::OsStr], nofile: Option<(u64, u64)>) -> Command {
    let mut c = Command::new(bin());
    c.args(args).stdin(Stdio::null());
    if let Some((soft, hard)) = nofile {
        // SAFETY: setrlimit is async-signal-safe; runs in the child before exec.
        unsafe {
            c.pre_exec(move || {
                let l = libc::rlimit { rlim_cur: soft, rlim_max: hard };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &l) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    c
}

/// Run to the end, killing it (and failing) after `limit`: every scenario is bounded.
pub fn run_bounded<S: AsRef<std::ffi::OsStr>>(args: &[S], limit: Duration, nofile: Option<(u64, u64)>) -> Out {
    let a: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_ref()).collect();
    let dir = tempfile::tempdir().unwrap();
    let (o, e) = (dir.path().join("o"), dir.path().join("e"));
    let mut child = command(&a, nofile)
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap())
        .spawn()
        .unwrap();
    let code = wait_bounded(&mut child, limit);
    let out = Out {
        code,
        stdout: String::from_utf8_lossy(&std::fs::read(&o).unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&std::fs::read(&e).unwrap()).into_owned(),
    };
    assert!(code.is_some(), "{:?} did not finish within {limit:?} (killed)\n{}", a, out.show());
    out
}

/// Wait for the child's exit code; after `limit` kill it and return None.
pub fn wait_bounded(child: &mut Child, limit: Duration) -> Option<i32> {
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code().or_else(|| {
                use std::os::unix::process::ExitStatusExt;
                st.signal().map(|s| 128 + s)
            });
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
}

/// A small deterministic random number source (xorshift), so trials are reproducible
/// from the seed printed on failure.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[path = "../common/mod.rs"]
mod common;
/// Mounts, loop devices and images of manyfiles (all, or of one process); the serial
/// lock and the root check, shared with tests/common.
#[allow(unused_imports)]
pub use common::{SERIAL, is_root, leftovers, leftovers_of, root_only, serial};

/// `manyfiles-run-*` entries directly inside `dir`.
pub fn run_dirs(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("manyfiles-run-"))
                .collect()
        })
        .unwrap_or_default()
}

/// What a snapshot holds per entry: kind, permission bits, size, content hash (files) or
/// link target (symlinks).
pub type Snap = BTreeMap<Vec<u8>, (Kind, u64, u64)>;

/// Every entry below `root` (relative path bytes → kind, size, content/target hash),
/// walked through directory fds without following symlinks; `skip` names (top level)
/// are left out.
pub fn snapshot(root: &Path, skip: &[&str]) -> Snap {
    let mut out = Snap::new();
    let fd = walk::open_root(root).unwrap();
    let mut stack = vec![(fd, Vec::<u8>::new())];
    while let Some((dir, rel)) = stack.pop() {
        let mut entries = walk::read_dir(dir.as_fd()).unwrap();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for e in entries {
            let n = e.name.to_bytes();
            if rel.is_empty() && skip.iter().any(|s| s.as_bytes() == n) {
                continue;
            }
            let mut p = rel.clone();
            if !p.is_empty() {
                p.push(b'/');
            }
            p.extend_from_slice(n);
            let m = walk::meta_at(dir.as_fd(), &e.name).unwrap();
            let h = match m.kind {
                Kind::File => {
                    let f = rustix::fs::openat(dir.as_fd(), &e.name, OFlags::RDONLY | OFlags::NOFOLLOW, Mode::empty());
                    match f {
                        Ok(f) => {
                            let mut buf = vec![0u8; 65536];
                            let mut h = 0xcbf29ce484222325u64;
                            loop {
                                let k = rustix::io::read(&f, &mut buf).unwrap();
                                if k == 0 {
                                    break;
                                }
                                for b in &buf[..k] {
                                    h = (h ^ *b as u64).wrapping_mul(0x100000001b3);
                                }
                            }
                            h
                        }
                        Err(_) => u64::MAX, // unreadable: recorded as such
                    }
                }
                Kind::Symlink => {
                    let t = rustix::fs::readlinkat(dir.as_fd(), &e.name, Vec::new()).unwrap();
                    t.to_bytes().iter().fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(*b as u64))
                }
                _ => 0,
            };
            let size = if m.kind == Kind::Dir { 0 } else { m.size };
            out.insert(p.clone(), (m.kind, size, h));
            if m.kind == Kind::Dir {
                if let Ok(sub) = walk::open_dir_at(dir.as_fd(), &e.name) {
                    stack.push((sub, p));
                }
            }
        }
    }
    out
}

/// A chain of `depth` nested directories below `dir` (each name `len` bytes), with one
/// small file in every level; returns nothing (paths are longer than PATH_MAX).
pub fn deep_chain(dir: &Path, depth: usize, len: usize) {
    let mut fd = walk::open_root(dir).unwrap();
    for i in 0..depth {
        let name = std::ffi::CString::new(format!("{:0>len$}", i)).unwrap();
        rustix::fs::mkdirat(&fd, name.as_c_str(), Mode::from_raw_mode(0o755)).unwrap();
        let f = rustix::fs::openat(&fd, c"f", OFlags::WRONLY | OFlags::CREATE, Mode::from_raw_mode(0o644)).unwrap();
        rustix::io::write(&f, b"x").unwrap();
        fd = walk::open_dir_at(fd.as_fd(), &name).unwrap();
    }
}

/// Panic with the first differences (not the whole maps) unless `a == b`.
pub fn assert_same(a: &Snap, b: &Snap, what: &str) {
    if a == b {
        return;
    }
    let show = |k: &Vec<u8>| {
        let s = String::from_utf8_lossy(k);
        if s.len() > 80 { format!("…{}", &s[s.len() - 60..]) } else { s.into_owned() }
    };
    let mut d = Vec::new();
    for (k, v) in a {
        match b.get(k) {
            None => d.push(format!("only in left: {} {v:?}", show(k))),
            Some(w) if w != v => d.push(format!("differs: {} {v:?} vs {w:?}", show(k))),
            _ => {}
        }
    }
    for (k, v) in b {
        if !a.contains_key(k) {
            d.push(format!("only in right: {} {v:?}", show(k)));
        }
    }
    let n = d.len();
    d.truncate(12);
    panic!("{what}: {n} differences ({} vs {} entries), first:\n{}", a.len(), b.len(), d.join("\n"));
}

/// A source tree for copy/sync/scan trials: `dirs` directories of `per_dir` files of
/// 0–8 KiB with content derived from their index, plus a symlink per directory.
pub fn source_tree(root: &Path, dirs: usize, per_dir: usize) {
    std::fs::create_dir_all(root).unwrap();
    for d in 0..dirs {
        let dir = root.join(format!("d{d:03}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..per_dir {
            let i = d * per_dir + f;
            let len = (i * 2654435761) % 8192;
            let body: Vec<u8> = (0..len).map(|k| (k as u64 ^ i as u64).wrapping_mul(31) as u8).collect();
            std::fs::write(dir.join(format!("f{f:05}")), body).unwrap();
        }
        std::os::unix::fs::symlink(format!("f{:05}", 0), dir.join("link")).unwrap();
    }
}

/// Start the binary with output discarded.
pub fn spawn_quiet<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Child {
    Command::new(bin()).args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Every regular file in `dst` under a final name (not a `.manyfiles-tmp.*` name) equals
/// the file of the same path in `src` (`src_snap`): no partial file under a final name.
pub fn no_partial_files(src_snap: &Snap, dst: &Path) -> usize {
    let mut tmp = 0;
    for (k, v) in snapshot(dst, &[]) {
        let name = k.rsplit(|&b| b == b'/').next().unwrap();
        if name.starts_with(b".manyfiles-tmp.") {
            tmp += 1;
            continue;
        }
        if v.0 == Kind::File {
            assert_eq!(
                src_snap.get(&k),
                Some(&v),
                "partial or wrong file under a final name: {}",
                String::from_utf8_lossy(&k)
            );
        }
    }
    tmp
}
