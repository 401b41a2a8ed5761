//! Compare a destination tree with its source: names, kinds, sizes and symlink targets
//! always; file contents and (for our own copies) permission bits and mtimes on request.
//! Used by `copy --verify` and to check what an external tool produced. Walks both
//! trees in parallel (one task per directory), never following a symlink.

use super::file::{read_link, same_content};
use super::{Failures, MAX_FAILURES};
use crate::fs::walk::{self, Kind, meta_at, open_dir_at};
use rustix::fd::{AsFd, OwnedFd};
use serde::{Deserialize, Serialize};
use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// What to compare beyond names, kinds, sizes and symlink targets.
#[derive(Debug, Clone, Copy, Default)]
pub struct Checks {
    pub content: bool,
    /// Permission bits and mtimes of files, symlinks (mtime) and directories.
    pub meta: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub bytes: u64,
    pub content_checked: bool,
    pub differences: u64,
    /// The first differences, "path: what".
    pub examples: Vec<String>,
    pub elapsed_s: f64,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.differences == 0
    }
    pub fn text(&self) -> String {
        let what = if self.content_checked { "names, kinds, sizes, contents" } else { "names, kinds, sizes" };
        let mut s = format!(
            "{} files, {} dirs, {} symlinks ({} bytes) compared ({what}) in {}: {} differences",
            self.files,
            self.dirs,
            self.symlinks,
            self.bytes,
            crate::units::fmt_secs(self.elapsed_s),
            self.differences
        );
        for e in self.examples.iter().take(10) {
            s.push_str(&format!("\n  {e}"));
        }
        s
    }
}

struct VerifyShared {
    checks: Checks,
    files: AtomicU64,
    dirs: AtomicU64,
    symlinks: AtomicU64,
    bytes: AtomicU64,
    diffs: super::Counters,
    list: Failures,
}

fn rel(path: &str, name: &CStr) -> String {
    let n = OsStr::from_bytes(name.to_bytes()).to_string_lossy();
    if path.is_empty() { n.into_owned() } else { format!("{path}/{n}") }
}

/// Compare `dst` with `src` on `threads` threads.
pub fn compare(src: &Path, dst: &Path, checks: &Checks, threads: usize) -> Report {
    let t0 = std::time::Instant::now();
    let ctx = VerifyShared {
        checks: *checks,
        files: AtomicU64::new(0),
        dirs: AtomicU64::new(0),
        symlinks: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        diffs: super::Counters::default(),
        list: Failures::default(),
    };
    let diff = |what: String| ctx.list.push(&ctx.diffs, what);
    match (walk::open_root(src), walk::open_root(dst)) {
        (Ok(s), Ok(d)) => {
            if checks.meta {
                dir_meta(&ctx, &s, &d, ".");
            }
            walk::par_tasks(threads, vec![(s, d, String::new())], |(s, d, path): (OwnedFd, OwnedFd, String), spawn| {
                one_dir(&ctx, &s, &d, &path, &mut |t| spawn(t))
            })
        }
        (Err(e), _) => diff(format!("{}: {e}", src.display())),
        (_, Err(e)) => diff(format!("{}: {e}", dst.display())),
    }
    let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let mut examples: Vec<String> = ctx.list.take().into_iter().map(|l| l.0).collect();
    examples.sort();
    examples.truncate(MAX_FAILURES);
    Report {
        files: ld(&ctx.files),
        dirs: ld(&ctx.dirs),
        symlinks: ld(&ctx.symlinks),
        bytes: ld(&ctx.bytes),
        content_checked: checks.content,
        differences: ld(&ctx.diffs.failed),
        examples,
        elapsed_s: t0.elapsed().as_secs_f64(),
    }
}

fn dir_meta(ctx: &VerifyShared, s: &OwnedFd, d: &OwnedFd, path: &str) {
    if let (Ok(a), Ok(b)) = (walk::meta_of(s.as_fd()), walk::meta_of(d.as_fd())) {
        if a.perm != b.perm || a.mtime_s != b.mtime_s || a.mtime_ns != b.mtime_ns {
            ctx.list.push(&ctx.diffs, format!("{path}: directory mode/mtime differ"));
        }
    }
}

fn one_dir(
    ctx: &VerifyShared,
    s: &OwnedFd,
    d: &OwnedFd,
    path: &str,
    spawn: &mut dyn FnMut((OwnedFd, OwnedFd, String)),
) {
    let diff = |what: String| ctx.list.push(&ctx.diffs, what);
    let (mut a, mut b) = match (walk::read_dir(s.as_fd()), walk::read_dir(d.as_fd())) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            return diff(format!("{}: cannot list: {e}", if path.is_empty() { "." } else { path }));
        }
    };
    a.sort_by(|x, y| x.name.cmp(&y.name));
    b.sort_by(|x, y| x.name.cmp(&y.name));
    let mut bi = b.iter().peekable();
    let mut buf = vec![0u8; 128 * 1024];
    for e in &a {
        while let Some(x) = bi.next_if(|x| x.name < e.name) {
            diff(format!("{}: only in destination", rel(path, &x.name)));
        }
        let p = rel(path, &e.name);
        let Some(x) = bi.next_if(|x| x.name == e.name) else {
            diff(format!("{p}: missing in destination"));
            continue;
        };
        let (ms, md) = match (meta_at(s.as_fd(), &e.name), meta_at(d.as_fd(), &x.name)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(err), _) | (_, Err(err)) => {
                diff(format!("{p}: stat: {err}"));
                continue;
            }
        };
        if ms.kind != md.kind {
            diff(format!("{p}: {} in source, {} in destination", ms.kind.name(), md.kind.name()));
            continue;
        }
        let meta_differs = ms.mtime_s != md.mtime_s || ms.mtime_ns != md.mtime_ns;
        match ms.kind {
            Kind::File => {
                ctx.files.fetch_add(1, Ordering::Relaxed);
                ctx.bytes.fetch_add(ms.size, Ordering::Relaxed);
                if ms.size != md.size {
                    diff(format!("{p}: size {} in source, {} in destination", ms.size, md.size));
                } else if ctx.checks.content
                    && !same_content(s.as_fd(), &e.name, d.as_fd(), &x.name, &mut buf).unwrap_or(false)
                {
                    diff(format!("{p}: content differs"));
                } else if ctx.checks.meta && (meta_differs || ms.perm != md.perm) {
                    diff(format!("{p}: mode/mtime differ"));
                }
            }
            Kind::Symlink => {
                ctx.symlinks.fetch_add(1, Ordering::Relaxed);
                if read_link(s.as_fd(), &e.name).ok() != read_link(d.as_fd(), &x.name).ok() {
                    diff(format!("{p}: symlink target differs"));
                } else if ctx.checks.meta && meta_differs {
                    diff(format!("{p}: symlink mtime differs"));
                }
            }
            Kind::Dir => {
                ctx.dirs.fetch_add(1, Ordering::Relaxed);
                match (open_dir_at(s.as_fd(), &e.name), open_dir_at(d.as_fd(), &x.name)) {
                    (Ok(a), Ok(b)) => {
                        if ctx.checks.meta {
                            dir_meta(ctx, &a, &b, &p);
                        }
                        spawn((a, b, p))
                    }
                    (Err(err), _) | (_, Err(err)) => diff(format!("{p}: open: {err}")),
                }
            }
            Kind::Other => {}
        }
    }
    for x in bi {
        diff(format!("{}: only in destination", rel(path, &x.name)));
    }
}
