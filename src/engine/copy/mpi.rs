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

use crate::engine::copy::attrs::{self, Caps, Loc, Loss, Losses};
use crate::engine::copy::engine::{CopyShared, Node, Task, do_dir, join, release};
use crate::engine::copy::file::{Step, copy_file, finish_dir, tmp_name};
use crate::engine::copy::finish::{self, Attr};
use crate::engine::copy::links::{self, Links};
use crate::engine::copy::summary::{Part, summary};
use crate::engine::copy::unmade::{count_below, name_lost};
use crate::engine::copy::{self, Counters, Failures, Mode, Options, Summary, verify};
use crate::engine::walker::{MpiWalk, Walker, depth, join as join_rel, open_below};
use crate::engine::walker::{RankCounts, WalkTotals, kind_byte, kind_of};
use crate::error::{Error, Result};
use crate::fs::walk::{self, Meta, meta_of};
use crate::ranks;
use crate::signals;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode as FsMode, mkdirat};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Files this large or larger are copied in chunks of this size by every rank.
pub const CHUNK: u64 = 64 << 20;

const DIR: u8 = b'D';
const PIECE: u8 = b'C';
const FILES: u8 = b'B';

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

/// One item of files to copy: [B][dir][count][per file: name, SRC metadata].
fn files_item(rel: &[u8], files: &[(CString, Meta)]) -> Vec<u8> {
    let mut v = vec![FILES];
    put_bytes(&mut v, rel);
    v.extend_from_slice(&(files.len() as u32).to_le_bytes());
    for (name, m) in files {
        put_bytes(&mut v, name.to_bytes());
        put_meta(&mut v, m);
    }
    v
}

/// A file being copied in chunks, remembered by the rank that made its temporary.
struct Big {
    rel: Vec<u8>,
    name: CString,
    tmp: CString,
    meta: Meta,
}

fn put_bytes(v: &mut Vec<u8>, b: &[u8]) {
    v.extend_from_slice(&(b.len() as u32).to_le_bytes());
    v.extend_from_slice(b);
}

fn get_bytes<'a>(b: &mut &'a [u8]) -> &'a [u8] {
    let n = u32::from_le_bytes(b[..4].try_into().expect("4")) as usize;
    let out = &b[4..4 + n];
    *b = &b[4 + n..];
    out
}

/// One chunk: [C][dir][name][temporary name][offset][length].
fn piece(rel: &[u8], name: &CStr, tmp: &CStr, off: u64, len: u64) -> Vec<u8> {
    let mut v = vec![PIECE];
    put_bytes(&mut v, rel);
    put_bytes(&mut v, name.to_bytes());
    put_bytes(&mut v, tmp.to_bytes());
    v.extend_from_slice(&off.to_le_bytes());
    v.extend_from_slice(&len.to_le_bytes());
    v
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

const META: usize = 1 + 4 + 8 + 8 + 4 + 8 + 4 * 5 + 8 * 3 + 8 + 4;

fn put_meta(v: &mut Vec<u8>, m: &Meta) {
    v.push(kind_byte(m.kind));
    v.extend_from_slice(&m.perm.to_le_bytes());
    v.extend_from_slice(&m.size.to_le_bytes());
    v.extend_from_slice(&m.mtime_s.to_le_bytes());
    v.extend_from_slice(&m.mtime_ns.to_le_bytes());
    v.extend_from_slice(&m.ino.to_le_bytes());
    for x in [m.ifmt, m.uid, m.gid, m.nlink, m.attrs] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    for x in [m.blocks, m.dev, m.rdev] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.extend_from_slice(&m.ctime_s.to_le_bytes());
    v.extend_from_slice(&m.ctime_ns.to_le_bytes());
}

fn get_meta(b: &[u8]) -> Meta {
    let u4 = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4"));
    let u8_ = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8"));
    Meta {
        kind: kind_of(b[0]),
        perm: u4(1),
        size: u8_(5),
        mtime_s: i64::from_le_bytes(b[13..21].try_into().expect("8")),
        mtime_ns: u4(21),
        ino: u8_(25),
        ifmt: u4(33),
        uid: u4(37),
        gid: u4(41),
        nlink: u4(45),
        attrs: u4(49),
        blocks: u8_(53),
        dev: u8_(61),
        rdev: u8_(69),
        ctime_s: i64::from_le_bytes(b[77..85].try_into().expect("8")),
        ctime_ns: u4(85),
    }
}

/// A directory pair to work on: [fresh][has DST meta][SRC meta][DST meta][relative path].
fn item(fresh: bool, meta: &Meta, dst_meta: Option<&Meta>, rel: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(3 + 2 * META + rel.len());
    v.push(DIR);
    v.push(fresh as u8);
    v.push(dst_meta.is_some() as u8);
    put_meta(&mut v, meta);
    put_meta(&mut v, dst_meta.unwrap_or(meta));
    v.extend_from_slice(rel);
    v
}

fn un_item(it: &[u8]) -> (bool, Meta, Option<Meta>, &[u8]) {
    let it = &it[1..];
    let fresh = it[0] == 1;
    let has_dst = it[1] == 1;
    let meta = get_meta(&it[2..2 + META]);
    let dst = get_meta(&it[2 + META..2 + 2 * META]);
    (fresh, meta, has_dst.then_some(dst), &it[2 + 2 * META..])
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

/// Every rank copies part of SRC → DST; every rank returns the job's summary.
pub fn run(o: &Options, command_line: Vec<String>) -> Result<Summary> {
    signals::install();
    walk::raise_fd_limit();
    ranks::agree(copy::check(o))?;
    let mut walls = ranks::agree(copy::walls(o))?;
    // DST made by rank 0 when missing (not in a dry run), then opened everywhere.
    ranks::agree(if ranks::is_root() && !o.dry_run && !o.dst.exists() {
        rustix::fs::mkdir(&o.dst, FsMode::from_raw_mode(0o700))
            .map_err(|e| Error::bad("DST", format!("cannot create {}: {e}", o.dst.display())))
    } else {
        Ok(())
    })?;
    // --cold: every rank evicts from its own caches, then all start together.
    let timing = ranks::agree(crate::engine::timing::Timing::start(o.cold, &copy::cold_roots(o), o.threads))?;
    ranks::barrier();
    let t0 = Instant::now();
    let (u0, s0) = crate::measure::cpu_times();
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
    let dst_meta = dst.as_ref().and_then(|d| meta_of(d.as_fd()).ok());
    let chunk = std::env::var("MANYFILES_DIST_CHUNK")
        .ok()
        .and_then(|v| crate::units::parse_size(&v).ok())
        .filter(|&c| c > 0)
        .unwrap_or(CHUNK);
    let bigs: Mutex<Vec<Big>> = Mutex::new(Vec::new());
    let deferred = std::sync::atomic::AtomicU64::new(0);
    let batch_written = std::sync::atomic::AtomicU64::new(0);
    let stash: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
    let failed_bigs: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
    let big = |node: &Node, name: &CStr, m: &Meta| -> bool {
        use rustix::fs::{OFlags, openat};
        let Some(dd) = &node.dst else { return false };
        // Hard-linked and sparse files are the engine's own (the link map, the holes).
        if (o.keep.hard_links && m.nlink > 1) || (o.keep.sparse && m.blocks.saturating_mul(512) < m.size) {
            return false;
        }
        if m.size < chunk {
            // A large directory: past the first BATCH files, any rank copies the rest.
            let seen = SEEN.with(|c| {
                c.set(c.get() + 1);
                c.get()
            });
            if seen <= BATCH {
                return false;
            }
            node.changed.store(true, Ordering::Relaxed);
            deferred.fetch_add(1, Ordering::Relaxed);
            PENDING.with(|p| {
                let mut p = p.borrow_mut();
                p.push((name.to_owned(), *m));
                if p.len() >= BATCH {
                    let it = CURRENT.with(|r| files_item(&r.borrow(), &p));
                    p.clear();
                    stash.lock().unwrap_or_else(|e| e.into_inner()).push(it);
                }
            });
            return true;
        }
        let tmp = tmp_name();
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        // Anything wrong here: the engine copies the file itself (and reports its errors).
        let Ok(fd) = openat(dd, tmp.as_c_str(), flags, FsMode::from_raw_mode(m.perm & 0o777)) else { return false };
        if rustix::fs::ftruncate(&fd, m.size).is_err() {
            let _ = rustix::fs::unlinkat(dd, tmp.as_c_str(), rustix::fs::AtFlags::empty());
            return false;
        }
        node.changed.store(true, Ordering::Relaxed);
        let rel = CURRENT.with(|r| r.borrow().clone());
        let mut items = Vec::new();
        let mut off = 0;
        while off < m.size {
            let len = chunk.min(m.size - off);
            items.push(piece(&rel, name, &tmp, off, len));
            off += len;
        }
        stash.lock().unwrap_or_else(|p| p.into_inner()).extend(items);
        bigs.lock().unwrap_or_else(|p| p.into_inner()).push(Big { rel, name: name.to_owned(), tmp, meta: *m });
        true
    };
    if let Some(fd) = &dst
        && let Ok(st) = rustix::fs::fstat(fd)
    {
        walls.dst_chain.insert(0, (st.st_dev, st.st_ino));
    }
    // What DST holds: probed by rank 0 (one scratch file), told to the others.
    let caps = {
        let mine = match (&dst, ranks::is_root()) {
            (Some(fd), true) => attrs::probe(fd.as_fd(), o.dry_run),
            _ => Caps::default(),
        };
        let w = ranks::from_root(vec![
            mine.modes as u32,
            mine.owner as u32,
            (mine.window_ns >> 32) as u32,
            mine.window_ns as u32,
            mine.fixed_uid,
            mine.fixed_gid,
            mine.fixed_file_perm,
            mine.fixed_dir_perm,
            mine.xattrs as u32
                | (mine.acls as u32) << 1
                | (mine.specials as u32) << 2
                | (mine.omit_ok as u32) << 3
                | (mine.hard_links as u32) << 4
                | (mine.names_bytes as u32) << 5
                | (mine.names_ctrl as u32) << 6
                | (mine.folds_case as u32) << 7
                | (mine.dropped_ns as u32) << 8,
        ]);
        Caps {
            modes: w[0] != 0,
            owner: w[1] != 0,
            window_ns: ((w[2] as u64) << 32) | w[3] as u64,
            fixed_uid: w[4],
            fixed_gid: w[5],
            fixed_file_perm: w[6],
            fixed_dir_perm: w[7],
            xattrs: w[8] & 1 != 0,
            acls: w[8] & 2 != 0,
            specials: w[8] & 4 != 0,
            omit_ok: w[8] & 8 != 0,
            hard_links: w[8] & 16 != 0,
            names_bytes: w[8] & 32 != 0,
            names_ctrl: w[8] & 64 != 0,
            folds_case: w[8] & 128 != 0,
            dropped_ns: (w[8] >> 8) as u8,
        }
    };
    let dst_root = dst.as_ref().and_then(|fd| rustix::io::fcntl_dupfd_cloexec(fd, 0).ok());
    let losses = Losses::default();
    caps.mark(&losses);
    let ctx = CopyShared {
        o,
        c: Counters::default(),
        f: Failures::default(),
        big: Some(&big),
        walls,
        caps,
        losses,
        links: Links::keeping_names(),
        dst_root,
        gate: None,
    };
    let later: Mutex<Vec<Later>> = Mutex::new(Vec::new());
    let umask = rustix::process::umask(FsMode::empty());
    let roots =
        if ranks::is_root() { vec![item(o.mode == Mode::Copy, &src_meta, dst_meta.as_ref(), b"")] } else { Vec::new() };
    let copy_piece = |it: &[u8]| {
        use rustix::fs::{OFlags, openat};
        let mut b = &it[1..];
        let rel = get_bytes(&mut b);
        let name = CString::new(get_bytes(&mut b)).expect("no NUL in a name");
        let tmp = CString::new(get_bytes(&mut b)).expect("no NUL in a name");
        let off = u64::from_le_bytes(b[..8].try_into().expect("8"));
        let len = u64::from_le_bytes(b[8..16].try_into().expect("8"));
        let Some(d) = &dst else { return };
        let r = (|| {
            let sdir = open_below(src.as_fd(), rel)?;
            let sf =
                openat(&sdir, name.as_c_str(), OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, FsMode::empty())?;
            let ddir = open_below(d.as_fd(), rel)?;
            let df =
                openat(&ddir, tmp.as_c_str(), OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, FsMode::empty())?;
            copy_range(sf.as_fd(), df.as_fd(), off, len)
        })();
        if let Err(e) = r {
            ctx.fail(&String::from_utf8_lossy(rel), Some(&name), &format!("copy bytes {off}..{}", off + len), e);
            failed_bigs.lock().unwrap_or_else(|p| p.into_inner()).push(join_rel(rel, name.to_bytes()));
        }
    };
    let copy_files = |it: &[u8]| {
        let mut b = &it[1..];
        let rel = get_bytes(&mut b);
        let n = u32::from_le_bytes(b[..4].try_into().expect("4")) as usize;
        b = &b[4..];
        let path = String::from_utf8_lossy(rel).into_owned();
        let Some(d) = &dst else { return };
        let dirs = open_below(src.as_fd(), rel).and_then(|s| Ok((s, open_below(d.as_fd(), rel)?)));
        let (sdir, ddir) = match dirs {
            Ok(x) => x,
            Err(e) => return ctx.fail(&path, None, "open directories", e),
        };
        let mut buf = vec![0u8; 256 * 1024];
        for _ in 0..n {
            let name = CString::new(get_bytes(&mut b)).expect("no NUL in a name");
            let m = get_meta(&b[..META]);
            b = &b[META..];
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
                    Some(t) => {
                        rustix::fs::renameat(&ddir, t.as_c_str(), &ddir, name.as_c_str()).map(|_| n).map_err(|e| {
                            let _ = rustix::fs::unlinkat(&ddir, t.as_c_str(), rustix::fs::AtFlags::empty());
                            (Step::Rename, e)
                        })
                    }
                    None => Ok(n),
                },
            );
            match r {
                Ok(_) => {
                    batch_written.fetch_add(1, Ordering::Relaxed);
                }
                Err((step, e)) => ctx.fail(&path, Some(&name), step.name(), e),
            }
        }
    };
    let work = |it: &[u8], spawn: &mut dyn FnMut(Vec<u8>)| {
        if ctx.stopping() {
            return;
        }
        if it[0] == PIECE {
            return copy_piece(it);
        }
        if it[0] == FILES {
            return copy_files(it);
        }
        let (fresh, meta, dmeta, rel) = un_item(it);
        CURRENT.with(|r| *r.borrow_mut() = rel.to_vec());
        SEEN.with(|c| c.set(0));
        let path = String::from_utf8_lossy(rel).into_owned();
        let sfd = match open_below(src.as_fd(), rel) {
            Ok(fd) => fd,
            Err(e) => return ctx.fail(&path, None, "open source directory", e),
        };
        let dfd = match (&dst, o.dry_run && fresh) {
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
        do_dir(&ctx, node, fresh, &mut |t: Task| {
            // What the local engine does when it opens a subdirectory's task: make it in
            // DST (here, in the parent's task), then hand it to any rank.
            let sub_rel = join_rel(rel, t.name.to_bytes());
            if mount_refused(&ctx, &t) {
                release(&ctx, t.parent);
                return;
            }
            let mut fresh = t.dst_meta.is_none();
            if fresh && o.dry_run {
                ctx.c.dirs_created.fetch_add(1, Ordering::Relaxed); // would be
            }
            if let (Some(pd), false, true) = (&t.parent.dst, o.dry_run, fresh) {
                // A name DST cannot hold: lost with all below it, as in one process.
                if !ctx.caps.holds_name(t.name.to_bytes()) {
                    if let Ok(sd) = walk::open_dir_at(t.parent.src.as_fd(), &t.name) {
                        let below = count_below(&ctx, sd.as_fd());
                        ctx.c.lost_entries.fetch_add(below.entries - below.dirs, Ordering::Relaxed);
                        ctx.losses.add(Loss::Names, || below.said(name_lost(&t.parent.path, &t.name)));
                    }
                    release(&ctx, t.parent);
                    return;
                }
                match mkdirat(pd.as_fd(), &t.name, FsMode::from_raw_mode(0o700)) {
                    Ok(()) => {
                        ctx.c.dirs_created.fetch_add(1, Ordering::Relaxed);
                        t.parent.changed.store(true, Ordering::Relaxed);
                    }
                    Err(Errno::EXIST) if o.mode == Mode::Sync => fresh = false,
                    Err(e) => {
                        ctx.fail(&join(&t.parent.path, Some(&t.name)), None, "create directory", e);
                        release(&ctx, t.parent);
                        return;
                    }
                }
            }
            spawn(item(fresh, &t.meta, t.dst_meta.as_ref(), &sub_rel));
            release(&ctx, t.parent);
        });
        PENDING.with(|p| {
            let mut p = p.borrow_mut();
            if !p.is_empty() {
                let it = files_item(rel, &p);
                p.clear();
                stash.lock().unwrap_or_else(|e| e.into_inner()).push(it);
            }
        });
        let pieces = std::mem::take(&mut *stash.lock().unwrap_or_else(|p| p.into_inner()));
        for p in pieces {
            spawn(p);
        }
        if has_dst {
            let same = !mine.changed.load(Ordering::Relaxed)
                && mine.dst_meta.is_some_and(|m| {
                    m.perm == mine.meta.perm && m.mtime_s == mine.meta.mtime_s && m.mtime_ns == mine.meta.mtime_ns
                });
            if !same && !o.dry_run {
                later.lock().unwrap_or_else(|p| p.into_inner()).push(Later {
                    depth: depth(rel),
                    rel: rel.to_vec(),
                    meta,
                });
            }
        }
    };
    let stats = MpiWalk { threads: o.threads }.run(roots, &work);
    // Every chunk is done: chunked files get their metadata and final names (or go).
    let stopped = ranks::any(signals::pending() != 0);
    let failed_keys: std::collections::HashSet<Vec<u8>> = ranks::all_gather(&crate::engine::walker::encode_items(
        failed_bigs.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|k| &k[..]),
    ))
    .iter()
    .flat_map(|b| crate::engine::walker::decode_items(b))
    .collect();
    if let Some(d) = &dst {
        let bigs = std::mem::take(&mut *bigs.lock().unwrap_or_else(|p| p.into_inner()));
        for b in bigs {
            let path = String::from_utf8_lossy(&b.rel).into_owned();
            let Ok(ddir) = open_below(d.as_fd(), &b.rel) else { continue };
            let drop_tmp = || {
                let _ = rustix::fs::unlinkat(&ddir, b.tmp.as_c_str(), rustix::fs::AtFlags::empty());
            };
            if stopped || failed_keys.contains(&join_rel(&b.rel, b.name.to_bytes())) {
                drop_tmp();
                continue;
            }
            let r = rustix::fs::openat(
                &ddir,
                b.tmp.as_c_str(),
                rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::CLOEXEC,
                FsMode::empty(),
            )
            .and_then(|fd| {
                let sdir = open_below(src.as_fd(), &b.rel)?;
                let lost = || join(&path, Some(&b.name));
                let a = Attr { keep: &o.keep, caps: &ctx.caps, losses: &ctx.losses, dst_may_have: false };
                finish::apply(Loc::At(sdir.as_fd(), &b.name), Loc::Fd(fd.as_fd()), &b.meta, &a, true, &lost)
            })
            .and_then(|()| rustix::fs::renameat(&ddir, b.tmp.as_c_str(), &ddir, b.name.as_c_str()));
            if let Err(e) = r {
                ctx.fail(&path, Some(&b.name), "finish chunked file", e);
                drop_tmp();
            }
        }
    }
    ranks::barrier();
    // Names of one inode that fell to different ranks: linked to one copy (before the
    // directories' mtimes are set: a rename moves them).
    if o.keep.hard_links && !o.dry_run {
        links::join_across_ranks(&ctx, dst.as_ref().filter(|_| !stopped).map(|d| d.as_fd()));
    }
    // Directory metadata, deepest first, once every rank is done below.
    if let (false, Some(d)) = (stopped, &dst) {
        let later = later.into_inner().unwrap_or_else(|p| p.into_inner());
        ranks::deepest_first(later.iter().map(|l| l.depth).max().unwrap_or(0), |at| {
            for l in later.iter().filter(|l| l.depth == at) {
                let path = String::from_utf8_lossy(&l.rel).into_owned();
                let a =
                    Attr { keep: &o.keep, caps: &ctx.caps, losses: &ctx.losses, dst_may_have: o.mode == Mode::Sync };
                let lost = || join(&path, None);
                let r = open_below(d.as_fd(), &l.rel).and_then(|fd| {
                    let sfd = open_below(src.as_fd(), &l.rel)?;
                    finish_dir(sfd.as_fd(), fd.as_fd(), &l.meta, &a, &lost)
                });
                if let Err(e) = r {
                    ctx.fail(&path, None, "set directory attributes", e)
                }
            }
        });
    }
    rustix::process::umask(umask);
    let (u1, s1) = crate::measure::cpu_times();
    let part = RankPart {
        written: (ctx.c.copied.load(Ordering::Relaxed) + batch_written.load(Ordering::Relaxed))
            .saturating_sub(deferred.load(Ordering::Relaxed)),
        part: Part::of(&ctx.c, &ctx.f, &ctx.losses, (u1 - u0, s1 - s0)),
    };
    let parts: Vec<RankPart> = ranks::all_gather(&serde_json::to_vec(&part).expect("serialisable"))
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
    let mut s = summary(o, o.threads * ranks::size(), &parts, t0);
    s.timing = timing;
    copy::end_timing(o, &mut s);
    s.provenance = Some(crate::measure::provenance::Provenance::collect(command_line));
    s.ranks = Some(RankCounts::new(unit, work, walks));
    s.modify_window_ns = ctx.caps.window_ns;
    s.dst_keeps_modes = Some(ctx.caps.modes);
    if o.verify && !s.interrupted && ranks::is_root() {
        let checks = verify::Checks { content: true, meta: true };
        let kept = verify::Kept::new(&o.keep, &s.losses).on_dst(s.modify_window_ns, s.dst_keeps_modes);
        s.verify = Some(verify::compare_kept(&o.src, &o.dst, &checks, Some(&kept), o.threads));
    }
    Ok(s)
}
