//! `manyfiles rm` under MPI: every rank removes part of the same trees (on a file system
//! every rank sees).
//!
//! Phase 1, on the distributed walk ([`crate::engine::walker::Walker`]): a rank that takes a
//! directory lists it, spawns its subdirectories, and unlinks its non-directories in
//! inode order — itself, or as chunks of [`CHUNK`] names that other ranks can take — so
//! one huge directory is emptied by every rank. Each rank remembers the directories it
//! listed (relative paths, by depth): the only state that grows with the tree, one path
//! per directory, never per file.
//!
//! Phase 2: directories removed deepest first — every rank removes its own directories
//! of one depth, then a barrier, then the next depth up — so a directory is removed only
//! after every rank finished everything below it. A failure anywhere (known to every rank
//! after phase 1) keeps the directories above it quietly, as the local engine does.
//!
//! Checks are the local engine's (`engine::rm`): every PATH resolved before anything is
//! removed, on every rank, and the ranks agree; nothing below a PATH is reached through a
//! symlink ([`crate::engine::walker::open_below`]); other file systems are not entered unless
//! `--cross-mounts`.

use crate::engine::rm::{Options, Part, Summary, Tally, targets};
use crate::engine::timing::Timing;
use crate::engine::walker::{MpiWalk, Walker, depth, join, open_below, split_last};
use crate::engine::walker::{RankCounts, WalkTotals};
use crate::error::{Error, Result};
use crate::fs::remove::{self, BATCH};
use crate::fs::walk::{self, Kind};
use crate::ranks;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::io::Errno;
use std::ffi::{CStr, CString};
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Instant;

const DIR: u8 = b'D';
const FILES: u8 = b'F';

/// A PATH that is a directory, open on this rank.
struct Root {
    shown: String,
    parent: OwnedFd,
    name: CString,
    fd: OwnedFd,
    dev: u64,
}

struct RankRmShared<'a> {
    o: &'a Options,
    roots: Vec<Root>,
    t: Tally,
    /// Directories this rank listed: (depth, root, relative path).
    listed: Mutex<Vec<(u32, u32, Vec<u8>)>>,
}

fn item(kind: u8, root: u32, rest: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(5 + rest.len());
    v.push(kind);
    v.extend_from_slice(&root.to_le_bytes());
    v.extend_from_slice(rest);
    v
}

impl RankRmShared<'_> {
    fn shown(&self, root: u32, rel: &[u8], name: &[u8]) -> String {
        let mut p = self.roots[root as usize].shown.clone();
        for part in [rel, name] {
            if !part.is_empty() {
                p.push('/');
                p.push_str(&String::from_utf8_lossy(part));
            }
        }
        p
    }

    fn fail(&self, root: u32, rel: &[u8], name: &[u8], err: impl ToString) {
        self.t.fail(|| self.shown(root, rel, name), err);
    }

    /// Do the filters keep `rel` (counted when they do)?
    fn spared(&self, rel: &[u8], is_dir: bool) -> bool {
        let kept = self.o.filter.as_deref().is_some_and(|f| f.spares(rel, is_dir));
        if kept {
            self.t.excluded.fetch_add(1, Ordering::Relaxed);
        }
        kept
    }

    fn unlink(&self, dir: BorrowedFd<'_>, name: &CStr) -> std::result::Result<(), Errno> {
        remove::unlink_one(dir, name)?;
        self.t.files.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn work(&self, it: &[u8], spawn: &mut dyn FnMut(Vec<u8>)) {
        let (kind, root) = (it[0], u32::from_le_bytes([it[1], it[2], it[3], it[4]]));
        let rest = &it[5..];
        if crate::signals::pending() != 0 {
            return;
        }
        match kind {
            DIR => self.dir(root, rest, spawn),
            FILES => {
                let n = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                let (rel, names) = (&rest[4..4 + n], &rest[4 + n..]);
                match open_below(self.roots[root as usize].fd.as_fd(), rel) {
                    Ok(fd) => self.unlink_all(root, rel, fd.as_fd(), names, spawn),
                    Err(Errno::NOENT) => {}
                    Err(e) => self.fail(root, rel, b"", e),
                }
            }
            _ => unreachable!("an rm item starts with its kind"),
        }
    }

    fn unlink_all(&self, root: u32, rel: &[u8], fd: BorrowedFd<'_>, names: &[u8], spawn: &mut dyn FnMut(Vec<u8>)) {
        // What the filters keep stays (its directory's removal then fails quietly).
        let kept = self.t.spare(self.o.filter.as_deref(), rel, names);
        let names = kept.as_deref().unwrap_or(names);
        let n = remove::unlink_names(
            fd,
            names,
            |name| spawn(item(DIR, root, &join(rel, name.to_bytes()))),
            |name, e| self.fail(root, rel, name.to_bytes(), e),
        );
        self.t.files.fetch_add(n, Ordering::Relaxed);
    }

    fn dir(&self, root: u32, rel: &[u8], spawn: &mut dyn FnMut(Vec<u8>)) {
        let r = &self.roots[root as usize];
        let fd = if rel.is_empty() {
            walk::open_dir_at(r.parent.as_fd(), &r.name)
        } else {
            let (up, name) = split_last(rel);
            let Ok(cname) = CString::new(name) else { return self.fail(root, rel, b"", "NUL in a name") };
            match open_below(r.fd.as_fd(), up) {
                Ok(pfd) => {
                    let opened = remove::open_to_empty(pfd.as_fd(), &cname);
                    if matches!(opened, Err(Errno::NOTDIR) | Err(Errno::LOOP)) && self.spared(rel, false) {
                        return;
                    }
                    if matches!(opened, Err(Errno::NOTDIR) | Err(Errno::LOOP)) {
                        // Replaced by a non-directory (or a symlink) since it was listed.
                        match self.unlink(pfd.as_fd(), &cname) {
                            Ok(()) | Err(Errno::NOENT) => {}
                            Err(e) => self.fail(root, rel, b"", e),
                        }
                        return;
                    }
                    opened
                }
                Err(e) => Err(e),
            }
        };
        let fd = match fd {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return,
            Err(e) => return self.fail(root, rel, b"", e),
        };
        match remove::crossing(fd.as_fd(), r.dev) {
            Ok((_, crosses)) => {
                if !rel.is_empty() && crosses && !self.o.cross_mounts {
                    return self.fail(root, rel, b"", "a mount point: not crossed (use --cross-mounts)");
                }
            }
            Err(e) => return self.fail(root, rel, b"", e),
        }
        self.listed.lock().unwrap_or_else(|p| p.into_inner()).push((depth(rel), root, rel.to_vec()));
        let (listed, r) = remove::list(fd.as_fd(), |name| {
            let sub = join(rel, name.to_bytes());
            if !self.spared(&sub, true) {
                spawn(item(DIR, root, &sub));
            }
        });
        match r {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => self.fail(root, rel, b"", format!("cannot list: {e}")),
        }
        if listed.len() <= BATCH {
            if let Some(all) = listed.batches(BATCH).next() {
                self.unlink_all(root, rel, fd.as_fd(), &all, spawn);
            }
            return;
        }
        for batch in listed.batches(BATCH) {
            let mut c = (rel.len() as u32).to_le_bytes().to_vec();
            c.extend_from_slice(rel);
            c.extend_from_slice(&batch);
            spawn(item(FILES, root, &c));
        }
    }

    /// Phase 2: this rank's directories of `depth`, once everything below is gone.
    fn remove_dirs(&self, at: u32, quiet_not_empty: bool) {
        let listed = self.listed.lock().unwrap_or_else(|p| p.into_inner());
        for (_, root, rel) in listed.iter().filter(|(d, _, _)| *d == at) {
            let r = &self.roots[*root as usize];
            let (pfd, name) = if rel.is_empty() {
                (r.parent.try_clone(), r.name.clone())
            } else {
                let (up, name) = split_last(rel);
                (open_below(r.fd.as_fd(), up).map_err(std::io::Error::from), CString::new(name).expect("no NUL"))
            };
            let pfd = match pfd {
                Ok(p) => p,
                Err(e) if e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => continue,
                Err(e) => {
                    self.fail(*root, rel, b"", e);
                    continue;
                }
            };
            match remove::rmdir_one(pfd.as_fd(), name.as_c_str()) {
                Ok(()) => {
                    self.t.dirs.fetch_add(1, Ordering::Relaxed);
                }
                Err(Errno::NOENT) => {}
                Err(Errno::NOTEMPTY) | Err(Errno::EXIST) if quiet_not_empty => {}
                Err(e) => self.fail(*root, rel, b"", e),
            }
        }
    }
}

/// Free bytes (statvfs `f_bfree`) of every file system of `fds`, each counted once.
fn free_space(fds: &[BorrowedFd<'_>]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for fd in fds {
        let (Ok(st), Ok(v)) = (rustix::fs::fstat(fd), rustix::fs::fstatvfs(fd)) else { continue };
        if !out.iter().any(|(d, _)| *d == st.st_dev) {
            out.push((st.st_dev, v.f_bfree.saturating_mul(v.f_frsize)));
        }
    }
    out
}

/// Every rank removes its part of every PATH; every rank returns the job's summary.
pub fn run(o: &Options) -> Result<Summary> {
    let targets = targets(o, ranks::agree)?;
    crate::signals::install();
    walk::raise_fd_limit();
    let shown: Vec<String> = targets.iter().map(|t| t.shown.display().to_string()).collect();
    let ctx = RankRmShared { o, roots: Vec::new(), t: Tally::default(), listed: Mutex::new(Vec::new()) };
    let mut ctx = ctx;
    let mut others = Vec::new();
    let mut opened: Vec<Result<()>> = Vec::new();
    for t in targets {
        if t.kind == Kind::Dir {
            match walk::open_dir_at(t.parent.as_fd(), &t.name) {
                Ok(fd) => ctx.roots.push(Root {
                    shown: t.shown.display().to_string(),
                    parent: t.parent,
                    name: t.name,
                    fd,
                    dev: t.dev,
                }),
                Err(e) => opened.push(Err(Error::bad("rm", format!("{}: cannot open: {e}", t.shown.display())))),
            }
        } else {
            others.push(t);
        }
    }
    ranks::agree(opened.into_iter().collect::<Result<Vec<()>>>())?;
    let inos: Vec<u64> = ctx.roots.iter().map(|r| rustix::fs::fstat(&r.fd).map_or(0, |st| st.st_ino)).collect();
    ranks::same_dirs(
        &inos,
        "rm",
        "the PATHs are not the same directories on every rank: rm under MPI needs a file system every rank sees",
    )?;
    let fds: Vec<BorrowedFd<'_>> =
        ctx.roots.iter().map(|r| r.fd.as_fd()).chain(others.iter().map(|t| t.parent.as_fd())).collect();
    // Free space asked of each root's parent where on the same file system: the root is
    // gone by the end, and FUSE answers no statfs on a removed inode (as `engine::rm`).
    let space_fds: Vec<BorrowedFd<'_>> = ctx
        .roots
        .iter()
        .map(|r| if super::same_fs(r.parent.as_fd(), r.fd.as_fd()) { r.parent.as_fd() } else { r.fd.as_fd() })
        .chain(others.iter().map(|t| t.parent.as_fd()))
        .collect();
    let before = free_space(&space_fds);
    // --cold: every rank evicts from its own caches, then all start together.
    let cold: Vec<&std::path::Path> = ctx.roots.iter().map(|r| std::path::Path::new(&r.shown)).collect();
    let mut timing = ranks::agree(Timing::start(o.cold, &cold, o.threads))?;
    ranks::barrier();
    let t0 = Instant::now();
    // PATHs that are not directories: rank 0 unlinks them.
    if ranks::is_root() {
        for t in &others {
            let shown = t.shown.display().to_string();
            if let Err(e) = ctx.unlink(t.parent.as_fd(), &t.name) {
                ctx.t.fail(|| shown, e);
            }
        }
    }
    let roots: Vec<Vec<u8>> =
        if ranks::is_root() { (0..ctx.roots.len() as u32).map(|i| item(DIR, i, b"")).collect() } else { Vec::new() };
    let c = &ctx;
    let stats =
        MpiWalk { threads: o.threads }.run(roots, &|it: &[u8], spawn: &mut dyn FnMut(Vec<u8>)| c.work(it, spawn));
    // Did anything fail or stop anywhere? Then directories that stay non-empty are no news.
    // With filters, a directory holding what they keep stays non-empty: no news either.
    let troubled =
        ranks::any(ctx.t.failed.load(Ordering::Relaxed) > 0 || crate::signals::pending() != 0 || o.filter.is_some());
    let interrupted_anywhere = ranks::any(crate::signals::pending() != 0);
    if !interrupted_anywhere {
        let deepest = ctx.listed.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|e| e.0).max().unwrap_or(0);
        ranks::deepest_first(deepest, |d| ctx.remove_dirs(d, troubled));
    }
    // --durable: every rank syncs the file systems, the time ends when all have.
    let shown_all =
        ctx.roots.iter().map(|r| r.shown.clone()).chain(others.iter().map(|t| t.shown.display().to_string()));
    let shown_fds: Vec<(String, BorrowedFd<'_>)> = shown_all.zip(&fds).map(|(s, fd)| (s, *fd)).collect();
    let elapsed_s = timing.end(t0.elapsed().as_secs_f64(), o.durable && !interrupted_anywhere, &shown_fds);
    let after = free_space(&space_fds);
    let bytes_freed: u64 = before
        .iter()
        .map(|(dev, b)| after.iter().find(|(d, _)| d == dev).map_or(0, |(_, a)| a.saturating_sub(*b)))
        .sum();
    let part = ctx.t.part();
    let parts: Vec<Part> = ranks::all_gather(&serde_json::to_vec(&part).expect("serialisable"))
        .iter()
        .map(|b| serde_json::from_slice(b).expect("every rank runs the same manyfiles"))
        .collect();
    let walks = WalkTotals::gather(stats);
    let counts = RankCounts::new("entries removed", parts.iter().map(|p| p.files + p.dirs).collect(), walks);
    let mut s = Summary::of(shown, &parts, bytes_freed, elapsed_s, o.threads * ranks::size(), Some(counts));
    s.timing = timing;
    s.filtered = o.filter.is_some();
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn opts(p: &Path) -> Options {
        Options {
            paths: vec![p.to_path_buf()],
            threads: 3,
            in_flight_max: None,
            cross_mounts: false,
            quiet: true,
            cold: false,
            durable: false,
            filter: None,
        }
    }

    /// Every path below `root`, sorted.
    fn left(root: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                out.push(e.path().strip_prefix(root).unwrap().display().to_string());
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn one_rank_keeps_what_the_filters_keep_as_the_local_engine_does() {
        let t = tempfile::tempdir().unwrap();
        let filter = crate::engine::filter::Filter::from_rules(&["- f1", "- /2/", "- big/g1*"]).unwrap();
        let mut kept = Vec::new();
        for (name, local) in [("local", true), ("mpi", false)] {
            let top = t.path().join(name);
            crate::engine::rm::tests::tree_with_root_link(&top, b"x");
            let big = top.join("big");
            std::fs::create_dir_all(&big).unwrap();
            for i in 0..2 * BATCH + 5 {
                std::fs::write(big.join(format!("g{i}")), b"").unwrap();
            }
            let mut o = opts(&top);
            o.filter = Some(std::sync::Arc::new(filter.clone()));
            let s = if local { crate::engine::rm::run(&o).unwrap() } else { run(&o).unwrap() };
            assert!(s.ok(), "{name}: {s:?}");
            // f1 in the 9 directories not below 2/, 2/ itself, g1 and g10..g19, g100..g199, …
            let g1 = (0..2 * BATCH + 5).filter(|i| format!("g{i}").starts_with("g1")).count() as u64;
            assert_eq!(s.excluded, 9 + 1 + g1, "{name}");
            kept.push(left(&top));
        }
        assert!(kept[0].contains(&"2/0/f3".to_string()) && kept[0].contains(&"big/g1".to_string()));
        assert!(!kept[0].contains(&"0/0/f0".to_string()));
        assert_eq!(kept[0], kept[1], "the MPI variant keeps what the local engine keeps");
    }

    #[test]
    fn one_rank_removes_like_the_local_engine() {
        let t = tempfile::tempdir().unwrap();
        let top = t.path().join("top");
        crate::engine::rm::tests::tree_with_root_link(&top, b"x");
        let big = top.join("big");
        std::fs::create_dir_all(&big).unwrap();
        for i in 0..2 * BATCH + 5 {
            std::fs::write(big.join(format!("g{i}")), b"").unwrap();
        }
        let s = run(&opts(&top)).unwrap();
        assert!(s.ok(), "{s:?}");
        assert_eq!((s.files, s.dirs), (4 * 3 * 5 + 1 + 2 * BATCH as u64 + 5, 1 + 1 + 4 + 4 * 3));
        assert!(!top.exists());
        assert!(t.path().exists());
        let r = s.ranks.unwrap();
        assert_eq!(r.ranks, 1);
        assert_eq!(r.work, vec![s.files + s.dirs]);
    }

    #[test]
    fn one_rank_refuses_bad_paths() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(run(&opts(&t.path().join("missing"))).unwrap_err().exit_code(), 2);
        assert_eq!(run(&opts(Path::new("/"))).unwrap_err().exit_code(), 2);
    }
}
