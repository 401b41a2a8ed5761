//! Compare a destination tree with its source: names, kinds, sizes and symlink targets
//! always; file contents and (for our own copies) permission bits and mtimes on request,
//! and every other attribute the copy kept ([`Kept`]: owner, xattrs, ACLs, hard-link
//! groups, holes, inode flags, special files' type and device), each difference named by
//! its kind.
//! Used by `copy --verify` and to check what an external tool produced. Walks both
//! trees in parallel (one task per directory), never following a symlink.

use super::attrs::{self, FLAG_ATTRS, Keep, Loc, LossRow};
use super::file::{read_link, same_content};
use super::{Failures, MAX_FAILURES};
use crate::fs::walk::{self, Kind, Meta, meta_at, open_dir_at};
use rustix::fd::{AsFd, OwnedFd};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What to compare beyond names, kinds, sizes and symlink targets.
#[derive(Debug, Clone, Copy, Default)]
pub struct Checks {
    pub content: bool,
    /// Permission bits and mtimes of files, symlinks (mtime) and directories.
    pub meta: bool,
}

/// The attributes a copy kept, checked beyond contents, modes and mtimes: what `keep`
/// asked for, less the kinds the destination could not hold (already reported as losses).
#[derive(Debug, Clone, Copy)]
pub struct Kept {
    pub keep: Keep,
    /// Permission bits, mtimes, symlinks and names are compared unless counted as lost
    /// (exFAT keeps none of the first three; `--lossy --verify` accepted them and then
    /// failed on every one: issue 38).
    pub modes: bool,
    pub times: bool,
    pub symlinks: bool,
    pub names: bool,
    /// mtimes closer than this are equal (the destination's granularity, as sync
    /// compares them).
    pub window_ns: u64,
}

impl Kept {
    /// `keep` less every kind with losses.
    pub fn new(keep: &Keep, losses: &[LossRow]) -> Kept {
        let lost = |k: &str| losses.iter().any(|l| l.kind == k && l.count > 0);
        Kept {
            keep: Keep {
                owner: keep.owner && !lost("owner"),
                xattrs: keep.xattrs && !lost("xattrs"),
                acls: keep.acls && !lost("acls"),
                hard_links: keep.hard_links && !lost("hard_links"),
                sparse: keep.sparse && !lost("sparse"),
                specials: keep.specials && !lost("specials"),
                flags: keep.flags && !lost("flags"),
                lossy: keep.lossy,
                skip_ns: keep.skip_ns,
            },
            modes: !lost("modes"),
            times: !lost("times"),
            symlinks: !lost("symlinks"),
            names: !lost("names"),
            window_ns: 1,
        }
    }

    /// What the destination holds, as the copy found it: mtimes compared within its
    /// granularity, permission bits only where it keeps them.
    pub fn on_dst(self, window_ns: u64, keeps_modes: Option<bool>) -> Kept {
        Kept { window_ns: window_ns.max(1), modes: self.modes && keeps_modes != Some(false), ..self }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub bytes: u64,
    pub content_checked: bool,
    pub differences: u64,
    /// Attributes were compared too (owner, xattrs, ACLs, hard links, holes, flags).
    #[serde(default)]
    pub attrs_checked: bool,
    /// Differences per kind (`missing`, `extra`, `kind`, `size`, `content`, `mode_mtime`,
    /// `symlink`, `owner`, `xattrs`, `acls`, `hard_links`, `sparse`, `flags`, `special`,
    /// `error`).
    #[serde(default)]
    pub kinds: BTreeMap<String, u64>,
    /// The first differences, "path: what".
    pub examples: Vec<String>,
    pub elapsed_s: f64,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.differences == 0
    }
    pub fn text(&self) -> String {
        let what = match (self.content_checked, self.attrs_checked) {
            (true, true) => "names, kinds, sizes, contents, attributes",
            (true, false) => "names, kinds, sizes, contents",
            (false, true) => "names, kinds, sizes, attributes",
            (false, false) => "names, kinds, sizes",
        };
        let mut s = format!(
            "{} files, {} dirs, {} symlinks ({} bytes) compared ({what}) in {}: {} differences",
            self.files,
            self.dirs,
            self.symlinks,
            self.bytes,
            crate::units::fmt_secs(self.elapsed_s),
            self.differences
        );
        if !self.kinds.is_empty() {
            let k: Vec<String> = self.kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
            s.push_str(&format!(" ({})", k.join(", ")));
        }
        for e in self.examples.iter().take(10) {
            s.push_str(&format!("\n  {e}"));
        }
        s
    }
}

struct VerifyShared {
    checks: Checks,
    kept: Option<Kept>,
    /// Hard links: SRC (device, inode) → DST inode and path of the first one met.
    links: Mutex<HashMap<(u64, u64), (u64, String)>>,
    kinds: Mutex<BTreeMap<&'static str, u64>>,
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

impl VerifyShared {
    /// Permission bits differ, and they were kept.
    fn perm_differs(&self, a: &Meta, b: &Meta) -> bool {
        self.kept.is_none_or(|k| k.modes) && a.perm != b.perm
    }
    /// Mtimes differ, and they were kept.
    fn time_differs(&self, a: &Meta, b: &Meta) -> bool {
        let ns = |m: &Meta| m.mtime_s as i128 * 1_000_000_000 + m.mtime_ns as i128;
        match &self.kept {
            None => ns(a) != ns(b),
            Some(k) => k.times && (ns(a) - ns(b)).unsigned_abs() >= k.window_ns as u128,
        }
    }
    /// An entry missing in DST that the copy counted as lost: a symlink where symlinks
    /// were lost, or, where names were lost, a name DST cannot hold (not UTF-8, a
    /// control or forbidden character) or one DST holds in another case.
    fn lost_entry(&self, e: &walk::Entry, dst: &[walk::Entry]) -> bool {
        let Some(k) = &self.kept else { return false };
        if e.kind == Kind::Symlink && !k.symlinks {
            return true;
        }
        if k.names {
            return false;
        }
        let n = e.name.to_bytes();
        let odd = std::str::from_utf8(n).map_or(true, |s| s.chars().any(|c| c < ' ' || "\"*:<>?\\|".contains(c)));
        odd || dst.iter().any(|x| super::case::folded(x.name.to_bytes()) == super::case::folded(n))
    }
    /// Count one difference of `kind`, listed as "path: what".
    fn diff(&self, kind: &'static str, what: String) {
        *self.kinds.lock().unwrap_or_else(|p| p.into_inner()).entry(kind).or_default() += 1;
        self.list.push(&self.diffs, what);
    }
}

/// Compare `dst` with `src` on `threads` threads.
pub fn compare(src: &Path, dst: &Path, checks: &Checks, threads: usize) -> Report {
    compare_kept(src, dst, checks, None, threads)
}

/// [`compare`], and with `kept` every attribute the copy kept.
pub fn compare_kept(src: &Path, dst: &Path, checks: &Checks, kept: Option<&Kept>, threads: usize) -> Report {
    let t0 = std::time::Instant::now();
    let ctx = VerifyShared {
        checks: *checks,
        kept: kept.copied(),
        links: Mutex::default(),
        kinds: Mutex::default(),
        files: AtomicU64::new(0),
        dirs: AtomicU64::new(0),
        symlinks: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        diffs: super::Counters::default(),
        list: Failures::default(),
    };
    let diff = |what: String| ctx.diff("error", what);
    match (walk::open_root(src), walk::open_root(dst)) {
        (Ok(s), Ok(d)) => {
            dir_meta(&ctx, &s, &d, ".");
            let root = Pair::Open(Arc::new((s, d)), String::new());
            walk::par_tasks(threads, vec![root], |pair: Pair, spawn| {
                let (fds, path) = match pair {
                    Pair::Open(fds, path) => (fds, path),
                    Pair::Waiting(parent, name, path) => {
                        match (open_dir_at(parent.0.as_fd(), &name), open_dir_at(parent.1.as_fd(), &name)) {
                            (Ok(a), Ok(b)) => {
                                dir_meta(&ctx, &a, &b, &path);
                                (Arc::new((a, b)), path)
                            }
                            (Err(err), _) | (_, Err(err)) => return diff(format!("{path}: open: {err}")),
                        }
                    }
                };
                one_dir(&ctx, &fds, &path, &mut |t| spawn(t))
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
        attrs_checked: kept.is_some(),
        kinds: ctx
            .kinds
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .into_iter()
            .map(|(k, n)| (k.into(), n))
            .collect(),
        examples,
        elapsed_s: t0.elapsed().as_secs_f64(),
    }
}

fn dir_meta(ctx: &VerifyShared, s: &OwnedFd, d: &OwnedFd, path: &str) {
    if !ctx.checks.meta && ctx.kept.is_none() {
        return;
    }
    if let (Ok(a), Ok(b)) = (walk::meta_of(s.as_fd()), walk::meta_of(d.as_fd())) {
        if ctx.checks.meta && (ctx.perm_differs(&a, &b) || ctx.time_differs(&a, &b)) {
            ctx.diff("mode_mtime", format!("{path}: directory mode/mtime differ"));
        }
        same_attrs(ctx, &a, &b, Loc::Fd(s.as_fd()), Loc::Fd(d.as_fd()), path);
    }
}

/// Owner, xattrs, ACLs and inode flags of one entry (with [`Kept`]).
fn same_attrs(ctx: &VerifyShared, ms: &Meta, md: &Meta, ls: Loc<'_>, ld: Loc<'_>, p: &str) {
    let Some(k) = &ctx.kept else { return };
    let keep = &k.keep;
    if let Some((u, g)) = attrs::owner_for(ms, keep)
        && (u.is_some_and(|u| u != md.uid) || g.is_some_and(|g| g != md.gid))
    {
        ctx.diff("owner", format!("{p}: owner {}:{} in source, {}:{} in destination", ms.uid, ms.gid, md.uid, md.gid));
    }
    let only = |xattrs: bool, acls: bool| Keep { xattrs: keep.xattrs && xattrs, acls: keep.acls && acls, ..*keep };
    for (kind, which, k) in [("xattrs", "extended attributes", only(true, false)), ("acls", "ACLs", only(false, true))]
    {
        if !k.any_xattr() {
            continue;
        }
        match attrs::same(ls, ld, &k) {
            Ok(true) => {}
            Ok(false) => ctx.diff(kind, format!("{p}: {which} differ")),
            Err(e) => ctx.diff(kind, format!("{p}: {which}: {e}")),
        }
    }
    if keep.flags && (ms.attrs ^ md.attrs) & FLAG_ATTRS != 0 {
        ctx.diff("flags", format!("{p}: inode flags differ"));
    }
}

/// Hard-link groups and holes of a regular file (with [`Kept`]).
fn file_attrs(ctx: &VerifyShared, ms: &Meta, md: &Meta, p: &str) {
    let Some(k) = &ctx.kept else { return };
    if k.keep.hard_links {
        if ms.nlink > 1 {
            let mut m = ctx.links.lock().unwrap_or_else(|e| e.into_inner());
            match m.get(&(ms.dev, ms.ino)) {
                None => {
                    m.insert((ms.dev, ms.ino), (md.ino, p.to_string()));
                }
                Some((ino, _)) if *ino == md.ino => {}
                Some((_, first)) => {
                    let what = format!("{p}: hard link to {first} in source, a separate file in destination");
                    drop(m);
                    ctx.diff("hard_links", what);
                }
            }
        } else if md.nlink > 1 {
            ctx.diff("hard_links", format!("{p}: one link in source, {} in destination", md.nlink));
        }
    }
    let sparse = |m: &Meta| m.blocks.saturating_mul(512) < m.size;
    if k.keep.sparse && sparse(ms) && !sparse(md) {
        ctx.diff(
            "sparse",
            format!(
                "{p}: holes not kept ({} B allocated in source, {} B in destination)",
                ms.blocks * 512,
                md.blocks * 512
            ),
        );
    }
}

/// A directory pair to compare: the roots, opened; or a subdirectory of the same name on
/// both sides, opened when a thread takes it, so a queued one holds no fd (a directory of
/// 10,000 subdirectories would otherwise hold 20,000 open fds: see `engine::Work`).
enum Pair {
    Open(Arc<(OwnedFd, OwnedFd)>, String),
    Waiting(Arc<(OwnedFd, OwnedFd)>, CString, String),
}

fn one_dir(ctx: &VerifyShared, fds: &Arc<(OwnedFd, OwnedFd)>, path: &str, spawn: &mut dyn FnMut(Pair)) {
    let (s, d) = (&fds.0, &fds.1);
    let diff = |kind: &'static str, what: String| ctx.diff(kind, what);
    let (mut a, mut b) = match (walk::read_dir(s.as_fd()), walk::read_dir(d.as_fd())) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            return diff("error", format!("{}: cannot list: {e}", if path.is_empty() { "." } else { path }));
        }
    };
    a.sort_by(|x, y| x.name.cmp(&y.name));
    b.sort_by(|x, y| x.name.cmp(&y.name));
    let mut bi = b.iter().peekable();
    let mut buf = vec![0u8; 128 * 1024];
    for e in &a {
        while let Some(x) = bi.next_if(|x| x.name < e.name) {
            diff("extra", format!("{}: only in destination", rel(path, &x.name)));
        }
        let p = rel(path, &e.name);
        let Some(x) = bi.next_if(|x| x.name == e.name) else {
            if !ctx.lost_entry(e, &b) {
                diff("missing", format!("{p}: missing in destination"));
            }
            continue;
        };
        let (ms, md) = match (meta_at(s.as_fd(), &e.name), meta_at(d.as_fd(), &x.name)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(err), _) | (_, Err(err)) => {
                diff("error", format!("{p}: stat: {err}"));
                continue;
            }
        };
        if ms.kind != md.kind {
            diff("kind", format!("{p}: {} in source, {} in destination", ms.kind.name(), md.kind.name()));
            continue;
        }
        let meta_differs = ctx.time_differs(&ms, &md);
        match ms.kind {
            Kind::File => {
                ctx.files.fetch_add(1, Ordering::Relaxed);
                ctx.bytes.fetch_add(ms.size, Ordering::Relaxed);
                if ms.size != md.size {
                    diff("size", format!("{p}: size {} in source, {} in destination", ms.size, md.size));
                } else if ctx.checks.content
                    && !same_content(s.as_fd(), &e.name, d.as_fd(), &x.name, &mut buf).unwrap_or(false)
                {
                    diff("content", format!("{p}: content differs"));
                } else if ctx.checks.meta && (meta_differs || ctx.perm_differs(&ms, &md)) {
                    diff("mode_mtime", format!("{p}: mode/mtime differ"));
                }
                file_attrs(ctx, &ms, &md, &p);
                same_attrs(ctx, &ms, &md, Loc::At(s.as_fd(), &e.name), Loc::At(d.as_fd(), &x.name), &p);
            }
            Kind::Symlink => {
                ctx.symlinks.fetch_add(1, Ordering::Relaxed);
                if read_link(s.as_fd(), &e.name).ok() != read_link(d.as_fd(), &x.name).ok() {
                    diff("symlink", format!("{p}: symlink target differs"));
                } else if ctx.checks.meta && meta_differs {
                    diff("mode_mtime", format!("{p}: symlink mtime differs"));
                }
                same_attrs(ctx, &ms, &md, Loc::At(s.as_fd(), &e.name), Loc::At(d.as_fd(), &x.name), &p);
            }
            Kind::Dir => {
                ctx.dirs.fetch_add(1, Ordering::Relaxed);
                spawn(Pair::Waiting(Arc::clone(fds), e.name.clone(), p))
            }
            Kind::Other => {
                if let Some(k) = &ctx.kept
                    && k.keep.specials
                {
                    if ms.ifmt != md.ifmt || ms.rdev != md.rdev {
                        diff("special", format!("{p}: special file type or device differs"));
                    } else if ctx.checks.meta && (meta_differs || ctx.perm_differs(&ms, &md)) {
                        diff("mode_mtime", format!("{p}: mode/mtime differ"));
                    }
                    same_attrs(ctx, &ms, &md, Loc::At(s.as_fd(), &e.name), Loc::At(d.as_fd(), &x.name), &p);
                }
            }
        }
    }
    for x in bi {
        diff("extra", format!("{}: only in destination", rel(path, &x.name)));
    }
}
