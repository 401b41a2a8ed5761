//! `manyfiles copy` and `sync` under MPI: every rank copies part of one tree (SRC and DST
//! on file systems every rank sees).
//!
//! A work item is one directory pair (its relative path, SRC's metadata, DST's if it
//! exists, whether DST's is known empty): the rank that takes it lists both sides,
//! merges them and transfers, deletes (`--delete`) or counts (`--dry-run`) with the local
//! engine's own code (`engine::copy::engine::do_dir`, `--checksum` included), so each
//! pair is compared on one rank. The subdirectories it finds are made in DST by that
//! same rank (every change to a directory's entries happens in its own task) and become
//! items any rank can take.
//!
//! Directory metadata (mode, mtime) cannot follow the local engine's countdown across
//! ranks: each rank records the directories it handled and, after the walk, the ranks
//! set them deepest first with a barrier per depth — a directory gets its mode and mtime
//! after every rank finished below it, and a read-only directory after it was filled.
//! Files go to a temporary name and are renamed (sync), or into a directory this job
//! made (copy): an interrupted job leaves no partial file under a final name.
//!
//! A huge directory is listed and compared by one rank, but past its first [`BATCH`]
//! files to write, the rest go out as items of [`BATCH`] files that any rank copies (with
//! the local engine's `copy_file`; temporary + rename for sync).
//!
//! Large files (at least [`CHUNK`] bytes; `MANYFILES_DIST_CHUNK` overrides it, e.g. for
//! tests) are split as dcp does: the directory's rank creates a temporary file of the
//! final size and hands out one item per chunk; any rank copies a chunk into it
//! (`copy_file_range` at the chunk's offset, or pread/pwrite); after the walk — every
//! chunk done — the creating rank sets the file's mode and mtime and renames it to its
//! final name, or removes it if a chunk failed or the job was interrupted.

mod wire;

use crate::engine::copy::attrs::{self, Caps, Loc, Loss, Losses};
use crate::engine::copy::engine::{CopyShared, Node, Task, do_dir, join, release};
use crate::engine::copy::file::{Step, copy_file, finish_dir, tmp_name};
use crate::engine::copy::finish::{self, Attr};
use crate::engine::copy::links::{self, Links};
use crate::engine::copy::summary::{Part, summary};
use crate::engine::copy::unmade::{count_below, name_lost};
use crate::engine::copy::{self, Counters, Failures, Mode, Options, Summary, Walls, verify};
use crate::engine::timing::Timing;
use crate::engine::walker::{MpiWalk, RankCounts, WalkStats, WalkTotals, Walker, depth, join as join_rel, open_below};
use crate::error::{Error, Result};
use crate::fs::walk::{self, Meta, meta_of};
use crate::ranks;
use crate::signals;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode as FsMode, OFlags, mkdirat, openat, renameat, unlinkat};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use wire::{FILES, PIECE};

/// Files this large or larger are copied in chunks of this size by every rank.
pub const CHUNK: u64 = 64 << 20;

/// Files a directory's own task copies; past that many, the rest go out in items of this
/// many files that any rank copies (a directory of 100,000 files is not one rank's work).
const BATCH: usize = 2048;

thread_local! {
    /// The relative path of the directory pair this thread works on (for the big-file hook).
    static CURRENT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Files of the current directory seen by the hook so far.
    static SEEN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Files of the current directory waiting to go out as one item.
    static PENDING: std::cell::RefCell<Vec<(CString, Meta)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A file being copied in chunks, remembered by the rank that made its temporary.
struct Big {
    rel: Vec<u8>,
    name: CString,
    tmp: CString,
    meta: Meta,
}

/// A directory whose metadata waits for the final phase.
struct Later {
    depth: u32,
    rel: Vec<u8>,
    meta: Meta,
}

/// One rank's counts, gathered by every rank.
#[derive(Default, Serialize, Deserialize)]
struct RankPart {
    /// Files and symlinks this rank wrote (chunked files count where they were made).
    written: u64,
    part: Part,
}

/// A lock that a panicking holder did not spoil.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Copy bytes [off, off + len) of `src` into `dst` at the same offset.
fn copy_range(src: BorrowedFd<'_>, dst: BorrowedFd<'_>, off: u64, len: u64) -> std::result::Result<(), Errno> {
    let end = off + len;
    let (mut i, mut o) = (off, off);
    while i < end {
        let want = (end - i).min(1 << 30) as usize;
        match rustix::fs::copy_file_range(src, Some(&mut i), dst, Some(&mut o), want) {
            Ok(0) => return Ok(()), // the source shrank: a sync later sees the difference
            Ok(_) => {}
            Err(Errno::XDEV | Errno::INVAL | Errno::OPNOTSUPP | Errno::NOSYS) => break,
            Err(e) => return Err(e),
        }
    }
    let mut buf = vec![0u8; 1 << 20];
    while i < end {
        let want = ((end - i) as usize).min(buf.len());
        let n = rustix::io::pread(src, &mut buf[..want], i)?;
        if n == 0 {
            return Ok(());
        }
        let mut w = 0;
        while w < n {
            w += rustix::io::pwrite(dst, &buf[w..n], i + w as u64)?;
        }
        i += n as u64;
    }
    Ok(())
}

/// A DST subdirectory that is a mount point (the listing's statx reached its root): not
/// entered without --cross-mounts, as in one process; refused (true).
fn mount_refused(ctx: &CopyShared, t: &Task) -> bool {
    if ctx.o.cross_mounts || t.dst_meta.is_none_or(|m| m.attrs & walk::ATTR_MOUNT_ROOT == 0) {
        return false;
    }
    let path = join(&t.parent.path, Some(&t.name));
    ctx.refuse(&path, None, "a mount point in DST: not entered; --cross-mounts to enter it");
    true
}

/// What the start of a job settles on every rank before the clock runs.
struct Start {
    walls: Walls,
    timing: Timing,
    t0: Instant,
    cpu0: (f64, f64),
}

/// Checks, DST made by rank 0 when missing (not in a dry run), --cold eviction on every
/// rank; then all start the clock together.
fn start(o: &Options) -> Result<Start> {
    ranks::agree(copy::check(o))?;
    let walls = ranks::agree(copy::walls(o))?;
    ranks::agree(if ranks::is_root() && !o.dry_run && !o.dst.exists() {
        rustix::fs::mkdir(&o.dst, FsMode::from_raw_mode(0o700))
            .map_err(|e| Error::bad("DST", format!("cannot create {}: {e}", o.dst.display())))
    } else {
        Ok(())
    })?;
    let timing = ranks::agree(Timing::start(o.cold, &copy::cold_roots(o), o.threads))?;
    ranks::barrier();
    Ok(Start { walls, timing, t0: Instant::now(), cpu0: crate::measure::cpu_times() })
}

/// SRC and DST opened on every rank (DST may be missing in a dry run), checked to be the
/// same directories everywhere.
fn open_roots(o: &Options) -> Result<(OwnedFd, Option<OwnedFd>, Meta)> {
    let src = ranks::agree(walk::open_root(&o.src).map_err(|e| copy::src_error(&o.src, e)))?;
    let dst: Option<OwnedFd> = ranks::agree(match walk::open_root(&o.dst) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT) if o.dry_run => Ok(None),
        Err(e) => Err(Error::failed(format!("cannot open {}: {e}", o.dst.display()))),
    })?;
    let ino = |fd: &OwnedFd| rustix::fs::fstat(fd).map_or(0, |st| st.st_ino);
    ranks::same_dirs(
        &[ino(&src), dst.as_ref().map_or(0, ino)],
        "SRC",
        "SRC or DST is not the same directory on every rank: copy under MPI needs file systems every rank sees",
    )?;
    let src_meta = meta_of(src.as_fd()).map_err(|e| copy::src_error(&o.src, e));
    let src_meta = ranks::agree(src_meta)?;
    Ok((src, dst, src_meta))
}

/// The size of a chunk of a large file (`MANYFILES_DIST_CHUNK`, e.g. for tests, or [`CHUNK`]).
fn chunk_size() -> u64 {
    std::env::var("MANYFILES_DIST_CHUNK")
        .ok()
        .and_then(|v| crate::units::parse_size(&v).ok())
        .filter(|&c| c > 0)
        .unwrap_or(CHUNK)
}

/// What DST holds: probed by rank 0 (one scratch file), told to the others.
fn shared_caps(dst: Option<&OwnedFd>, dry_run: bool) -> Caps {
    let mine = match (dst, ranks::is_root()) {
        (Some(fd), true) => attrs::probe(fd.as_fd(), dry_run),
        _ => Caps::default(),
    };
    wire::caps_from_words(&ranks::from_root(wire::caps_to_words(&mine)))
}

/// One rank's job: SRC and DST, and what its walk hands on to the final phases.
struct Job<'a> {
    o: &'a Options,
    src: OwnedFd,
    dst: Option<OwnedFd>,
    chunk: u64,
    /// Chunked files whose temporaries this rank made.
    bigs: Mutex<Vec<Big>>,
    /// Files a directory's task counted as copied but handed out in batches.
    deferred: AtomicU64,
    /// Files this rank copied from batches.
    batch_written: AtomicU64,
    /// Items made by the big-file hook, spawned when the directory's task ends.
    stash: Mutex<Vec<Vec<u8>>>,
    /// Chunked files (relative path) with a chunk that failed on this rank.
    failed_bigs: Mutex<Vec<Vec<u8>>>,
    /// Directories whose metadata waits for the final phase.
    later: Mutex<Vec<Later>>,
}

impl Job<'_> {
    /// The big-file hook (`CopyShared::big`): a file of a huge directory past its first
    /// [`BATCH`] goes out in a batch, a file of at least a chunk goes out in chunks.
    fn divert(&self, node: &Node, name: &CStr, m: &Meta) -> bool {
        let Some(dd) = &node.dst else { return false };
        let o = self.o;
        // Hard-linked and sparse files are the engine's own (the link map, the holes).
        if (o.keep.hard_links && m.nlink > 1) || (o.keep.sparse && m.blocks.saturating_mul(512) < m.size) {
            return false;
        }
        if m.size < self.chunk { self.batch(node, name, m) } else { self.split(node, dd.as_fd(), name, m) }
    }

    /// A large directory: past the first BATCH files, any rank copies the rest.
    fn batch(&self, node: &Node, name: &CStr, m: &Meta) -> bool {
        let seen = SEEN.with(|c| {
            c.set(c.get() + 1);
            c.get()
        });
        if seen <= BATCH {
            return false;
        }
        node.changed.store(true, Ordering::Relaxed);
        self.deferred.fetch_add(1, Ordering::Relaxed);
        PENDING.with(|p| {
            let mut p = p.borrow_mut();
            p.push((name.to_owned(), *m));
            if p.len() >= BATCH {
                let it = CURRENT.with(|r| wire::files_item(&r.borrow(), &p));
                p.clear();
                lock(&self.stash).push(it);
            }
        });
        true
    }

    /// A file of at least a chunk: a temporary of the final size, and one item per chunk.
    fn split(&self, node: &Node, dd: BorrowedFd<'_>, name: &CStr, m: &Meta) -> bool {
        let tmp = tmp_name();
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        // Anything wrong here: the engine copies the file itself (and reports its errors).
        let Ok(fd) = openat(dd, tmp.as_c_str(), flags, FsMode::from_raw_mode(m.perm & 0o777)) else { return false };
        if rustix::fs::ftruncate(&fd, m.size).is_err() {
            let _ = unlinkat(dd, tmp.as_c_str(), AtFlags::empty());
            return false;
        }
        node.changed.store(true, Ordering::Relaxed);
        let rel = CURRENT.with(|r| r.borrow().clone());
        let mut items = Vec::new();
        let mut off = 0;
        while off < m.size {
            let len = self.chunk.min(m.size - off);
            items.push(wire::piece(&rel, name, &tmp, off, len));
            off += len;
        }
        lock(&self.stash).extend(items);
        lock(&self.bigs).push(Big { rel, name: name.to_owned(), tmp, meta: *m });
        true
    }

    /// One walker item: a chunk, a batch of files, or a directory pair.
    fn work(&self, ctx: &CopyShared, it: &[u8], spawn: &mut dyn FnMut(Vec<u8>)) {
        if ctx.stopping() {
            return;
        }
        match it[0] {
            PIECE => self.copy_piece(ctx, it),
            FILES => self.copy_files(ctx, it),
            _ => self.copy_dir(ctx, it, spawn),
        }
    }

    /// One chunk of a large file into its temporary.
    fn copy_piece(&self, ctx: &CopyShared, it: &[u8]) {
        let p = wire::un_piece(it);
        let Some(d) = &self.dst else { return };
        let r = (|| {
            let sdir = open_below(self.src.as_fd(), p.rel)?;
            let sf =
                openat(&sdir, p.name.as_c_str(), OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, FsMode::empty())?;
            let ddir = open_below(d.as_fd(), p.rel)?;
            let df =
                openat(&ddir, p.tmp.as_c_str(), OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, FsMode::empty())?;
            copy_range(sf.as_fd(), df.as_fd(), p.off, p.len)
        })();
        if let Err(e) = r {
            let what = format!("copy bytes {}..{}", p.off, p.off + p.len);
            ctx.fail(&String::from_utf8_lossy(p.rel), Some(&p.name), &what, e);
            lock(&self.failed_bigs).push(join_rel(p.rel, p.name.to_bytes()));
        }
    }

    /// A batch of a huge directory's files, with the local engine's `copy_file`.
    fn copy_files(&self, ctx: &CopyShared, it: &[u8]) {
        let o = self.o;
        let (rel, files) = wire::un_files_item(it);
        let path = String::from_utf8_lossy(rel).into_owned();
        let Some(d) = &self.dst else { return };
        let dirs = open_below(self.src.as_fd(), rel).and_then(|s| Ok((s, open_below(d.as_fd(), rel)?)));
        let (sdir, ddir) = match dirs {
            Ok(x) => x,
            Err(e) => return ctx.fail(&path, None, "open directories", e),
        };
        let mut buf = vec![0u8; 256 * 1024];
        for (name, m) in files {
            if ctx.stopping() {
                return;
            }
            // As the local engine: sync writes beside the final name and renames, copy
            // writes into the directory it made.
            let tmp = (o.mode == Mode::Sync).then(tmp_name);
            let target = tmp.as_deref().unwrap_or(&name);
            let lost = || join(&path, Some(&name));
            let a = Attr { keep: &o.keep, caps: &ctx.caps, losses: &ctx.losses, dst_may_have: o.mode == Mode::Sync };
            let r = copy_file(sdir.as_fd(), &name, &m, ddir.as_fd(), target, o.reflink, &mut buf, &a, &lost).and_then(
                |n| match &tmp {
                    Some(t) => renameat(&ddir, t.as_c_str(), &ddir, name.as_c_str()).map(|_| n).map_err(|e| {
                        let _ = unlinkat(&ddir, t.as_c_str(), AtFlags::empty());
                        (Step::Rename, e)
                    }),
                    None => Ok(n),
                },
            );
            match r {
                Ok(_) => {
                    self.batch_written.fetch_add(1, Ordering::Relaxed);
                }
                Err((step, e)) => ctx.fail(&path, Some(&name), step.name(), e),
            }
        }
    }

    /// A directory pair: compared and transferred by the local engine's `do_dir`; its
    /// subdirectories, chunks and batches go out as items; its metadata waits.
    fn copy_dir(&self, ctx: &CopyShared, it: &[u8], spawn: &mut dyn FnMut(Vec<u8>)) {
        let o = self.o;
        let (fresh, meta, dmeta, rel) = wire::un_item(it);
        CURRENT.with(|r| *r.borrow_mut() = rel.to_vec());
        SEEN.with(|c| c.set(0));
        let path = String::from_utf8_lossy(rel).into_owned();
        let sfd = match open_below(self.src.as_fd(), rel) {
            Ok(fd) => fd,
            Err(e) => return ctx.fail(&path, None, "open source directory", e),
        };
        let dfd = match (&self.dst, o.dry_run && fresh) {
            (None, _) | (_, true) => None,
            (Some(d), false) => match open_below(d.as_fd(), rel) {
                Ok(fd) => Some(fd),
                Err(e) => return ctx.fail(&path, None, "open destination directory", e),
            },
        };
        let has_dst = dfd.is_some();
        // One count more than the engine's own: the countdown never reaches zero here,
        // the metadata waits for the final phase instead.
        let node = Arc::new(Node {
            src: sfd,
            dst: dfd,
            path,
            rel: rel.to_vec(),
            meta,
            dst_meta: dmeta,
            pending: AtomicUsize::new(2),
            changed: AtomicBool::new(false),
            parent: None,
        });
        let mine = Arc::clone(&node);
        do_dir(ctx, node, fresh, &mut |t: Task| {
            if let Some(sub) = self.make_subdir(ctx, rel, &t) {
                spawn(sub);
            }
            release(ctx, t.parent);
        });
        self.spawn_stashed(rel, spawn);
        if has_dst {
            let same = !mine.changed.load(Ordering::Relaxed)
                && mine.dst_meta.is_some_and(|m| {
                    m.perm == mine.meta.perm && m.mtime_s == mine.meta.mtime_s && m.mtime_ns == mine.meta.mtime_ns
                });
            if !same && !o.dry_run {
                lock(&self.later).push(Later { depth: depth(rel), rel: rel.to_vec(), meta });
            }
        }
    }

    /// What the local engine does when it opens a subdirectory's task: make it in DST
    /// (here, in the parent's task); then its item, for any rank (None: not entered).
    fn make_subdir(&self, ctx: &CopyShared, rel: &[u8], t: &Task) -> Option<Vec<u8>> {
        let o = self.o;
        let sub_rel = join_rel(rel, t.name.to_bytes());
        if mount_refused(ctx, t) {
            return None;
        }
        let mut fresh = t.dst_meta.is_none();
        if fresh && o.dry_run {
            ctx.c.dirs_created.fetch_add(1, Ordering::Relaxed); // would be
        }
        if let (Some(pd), false, true) = (&t.parent.dst, o.dry_run, fresh) {
            // A name DST cannot hold: lost with all below it, as in one process.
            if !ctx.caps.holds_name(t.name.to_bytes()) {
                if let Ok(sd) = walk::open_dir_at(t.parent.src.as_fd(), &t.name) {
                    let below = count_below(ctx, sd.as_fd());
                    ctx.c.lost_entries.fetch_add(below.entries - below.dirs, Ordering::Relaxed);
                    ctx.losses.add(Loss::Names, || below.said(name_lost(&t.parent.path, &t.name)));
                }
                return None;
            }
            match mkdirat(pd.as_fd(), &t.name, FsMode::from_raw_mode(0o700)) {
                Ok(()) => {
                    ctx.c.dirs_created.fetch_add(1, Ordering::Relaxed);
                    t.parent.changed.store(true, Ordering::Relaxed);
                }
                Err(Errno::EXIST) if o.mode == Mode::Sync => fresh = false,
                Err(e) => {
                    ctx.fail(&join(&t.parent.path, Some(&t.name)), None, "create directory", e);
                    return None;
                }
            }
        }
        Some(wire::item(fresh, &t.meta, t.dst_meta.as_ref(), &sub_rel))
    }

    /// The directory's last batch and the chunks its hook made, handed out.
    fn spawn_stashed(&self, rel: &[u8], spawn: &mut dyn FnMut(Vec<u8>)) {
        PENDING.with(|p| {
            let mut p = p.borrow_mut();
            if !p.is_empty() {
                let it = wire::files_item(rel, &p);
                p.clear();
                lock(&self.stash).push(it);
            }
        });
        let pieces = std::mem::take(&mut *lock(&self.stash));
        for p in pieces {
            spawn(p);
        }
    }

    /// Every chunk is done: chunked files get their metadata and final names, or go
    /// (interrupted, or a chunk failed on any rank).
    fn finish_chunked(&self, ctx: &CopyShared, stopped: bool) {
        let o = self.o;
        let mine = lock(&self.failed_bigs);
        let failed: HashSet<Vec<u8>> =
            ranks::all_gather(&crate::engine::walker::encode_items(mine.iter().map(|k| &k[..])))
                .iter()
                .flat_map(|b| crate::engine::walker::decode_items(b))
                .collect();
        drop(mine);
        let Some(d) = &self.dst else { return };
        for b in std::mem::take(&mut *lock(&self.bigs)) {
            let path = String::from_utf8_lossy(&b.rel).into_owned();
            let Ok(ddir) = open_below(d.as_fd(), &b.rel) else { continue };
            let drop_tmp = || {
                let _ = unlinkat(&ddir, b.tmp.as_c_str(), AtFlags::empty());
            };
            if stopped || failed.contains(&join_rel(&b.rel, b.name.to_bytes())) {
                drop_tmp();
                continue;
            }
            let r =
                openat(&ddir, b.tmp.as_c_str(), OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, FsMode::empty())
                    .and_then(|fd| {
                        let sdir = open_below(self.src.as_fd(), &b.rel)?;
                        let lost = || join(&path, Some(&b.name));
                        let a = Attr { keep: &o.keep, caps: &ctx.caps, losses: &ctx.losses, dst_may_have: false };
                        finish::apply(Loc::At(sdir.as_fd(), &b.name), Loc::Fd(fd.as_fd()), &b.meta, &a, true, &lost)
                    })
                    .and_then(|()| renameat(&ddir, b.tmp.as_c_str(), &ddir, b.name.as_c_str()));
            if let Err(e) = r {
                ctx.fail(&path, Some(&b.name), "finish chunked file", e);
                drop_tmp();
            }
        }
    }

    /// Directory metadata, deepest first, once every rank is done below.
    fn set_dir_meta(&self, ctx: &CopyShared) {
        let o = self.o;
        let Some(d) = &self.dst else { return };
        let later = std::mem::take(&mut *lock(&self.later));
        ranks::deepest_first(later.iter().map(|l| l.depth).max().unwrap_or(0), |at| {
            for l in later.iter().filter(|l| l.depth == at) {
                let path = String::from_utf8_lossy(&l.rel).into_owned();
                let a =
                    Attr { keep: &o.keep, caps: &ctx.caps, losses: &ctx.losses, dst_may_have: o.mode == Mode::Sync };
                let lost = || join(&path, None);
                let r = open_below(d.as_fd(), &l.rel).and_then(|fd| {
                    let sfd = open_below(self.src.as_fd(), &l.rel)?;
                    finish_dir(sfd.as_fd(), fd.as_fd(), &l.meta, &a, &lost)
                });
                if let Err(e) = r {
                    ctx.fail(&path, None, "set directory attributes", e)
                }
            }
        });
    }

    /// Files this rank wrote: its own, and its batches', less those it handed out.
    fn written(&self, ctx: &CopyShared) -> u64 {
        (ctx.c.copied.load(Ordering::Relaxed) + self.batch_written.load(Ordering::Relaxed))
            .saturating_sub(self.deferred.load(Ordering::Relaxed))
    }
}

/// Every rank's counts gathered into the job's summary (the same on every rank), and
/// --verify on rank 0.
fn gather_summary(o: &Options, ctx: &CopyShared, mine: RankPart, stats: WalkStats, start: Start) -> Summary {
    let parts: Vec<RankPart> = ranks::all_gather(&serde_json::to_vec(&mine).expect("serialisable"))
        .iter()
        .map(|b| serde_json::from_slice(b).expect("every rank runs the same manyfiles"))
        .collect();
    let walks = WalkTotals::gather(stats);
    let (unit, work): (&str, Vec<u64>) = if o.dry_run {
        ("entries compared", parts.iter().map(|p| p.part.counts[0]).collect())
    } else {
        ("files written", parts.iter().map(|p| p.written).collect())
    };
    let parts: Vec<Part> = parts.into_iter().map(|p| p.part).collect();
    let mut s = summary(o, o.threads * ranks::size(), &parts, start.t0);
    s.timing = start.timing;
    copy::end_timing(o, &mut s);
    s.ranks = Some(RankCounts::new(unit, work, walks));
    s.modify_window_ns = ctx.caps.window_ns;
    s.dst_keeps_modes = Some(ctx.caps.modes);
    if o.verify && !s.interrupted && ranks::is_root() {
        let checks = verify::Checks { content: true, meta: true };
        let kept = verify::Kept::new(&o.keep, &s.losses).on_dst(s.modify_window_ns, s.dst_keeps_modes);
        s.verify = Some(verify::compare_kept(&o.src, &o.dst, &checks, Some(&kept), o.threads));
    }
    s
}

/// Every rank copies part of SRC → DST; every rank returns the job's summary.
pub fn run(o: &Options, command_line: Vec<String>) -> Result<Summary> {
    signals::install();
    walk::raise_fd_limit();
    let mut start = start(o)?;
    let (src, dst, src_meta) = open_roots(o)?;
    let dst_meta = dst.as_ref().and_then(|d| meta_of(d.as_fd()).ok());
    if let Some(fd) = &dst
        && let Ok(st) = rustix::fs::fstat(fd)
    {
        start.walls.dst_chain.insert(0, (st.st_dev, st.st_ino));
    }
    let mut caps = shared_caps(dst.as_ref(), o.dry_run);
    let src_xattrs = copy::src_xattrs(o, src.as_fd(), &mut caps);
    let dst_root = dst.as_ref().and_then(|fd| rustix::io::fcntl_dupfd_cloexec(fd, 0).ok());
    let job = Job {
        o,
        src,
        dst,
        chunk: chunk_size(),
        bigs: Mutex::default(),
        deferred: AtomicU64::new(0),
        batch_written: AtomicU64::new(0),
        stash: Mutex::default(),
        failed_bigs: Mutex::default(),
        later: Mutex::default(),
    };
    let big = |node: &Node, name: &CStr, m: &Meta| job.divert(node, name, m);
    let losses = Losses::default();
    caps.mark(&losses);
    let ctx = CopyShared {
        o,
        c: Counters::default(),
        f: Failures::default(),
        big: Some(&big),
        walls: std::mem::take(&mut start.walls),
        caps,
        losses,
        links: Links::keeping_names(),
        dst_root,
        gate: None,
    };
    let umask = rustix::process::umask(FsMode::empty());
    let roots = if ranks::is_root() {
        vec![wire::item(o.mode == Mode::Copy, &src_meta, dst_meta.as_ref(), b"")]
    } else {
        Vec::new()
    };
    let stats = MpiWalk { threads: o.threads }.run(roots, &|it, spawn| job.work(&ctx, it, spawn));
    let stopped = ranks::any(signals::pending() != 0);
    job.finish_chunked(&ctx, stopped);
    ranks::barrier();
    // Names of one inode that fell to different ranks: linked to one copy (before the
    // directories' mtimes are set: a rename moves them).
    if o.keep.hard_links && !o.dry_run {
        links::join_across_ranks(&ctx, job.dst.as_ref().filter(|_| !stopped).map(|d| d.as_fd()));
    }
    if !stopped {
        job.set_dir_meta(&ctx);
    }
    rustix::process::umask(umask);
    let (u1, s1) = crate::measure::cpu_times();
    let (u0, s0) = start.cpu0;
    let mine = RankPart { written: job.written(&ctx), part: Part::of(&ctx.c, &ctx.f, &ctx.losses, (u1 - u0, s1 - s0)) };
    if o.itemize {
        super::itemize::flush(o);
    }
    let mut s = gather_summary(o, &ctx, mine, stats, start);
    s.src_xattrs_unread = src_xattrs;
    s.provenance = Some(crate::measure::provenance::Provenance::collect(command_line));
    Ok(s)
}
