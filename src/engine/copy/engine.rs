//! The per-directory engine behind copy and sync.
//!
//! One task per directory: open the SRC directory from its parent's fd and the DST
//! directory from its parent's (O_NOFOLLOW), list both at once (getdents + statx), pair
//! their entries by name, delete what only DST has, transfer, and spawn one task per
//! subdirectory. A directory's node holds its two fds and a countdown (itself + pending
//! subdirectories); when it reaches zero the DST directory gets SRC's permission bits
//! and mtime (so writes below it cannot disturb its mtime, and a read-only directory is
//! filled before it becomes read-only), the fds are closed and the parent counts down in
//! turn.

use super::attrs::{self, Caps, Loc, Loss, Losses};
use super::delete::extraneous;
use super::file::finish_dir;
use super::finish::{self, Attr};
use super::itemize;
use super::links::Links;
use super::listing::{Listing, NO_MATCH, list};
use super::losses;
use super::summary::{Part, summary};
use super::unmade::{count_below, fail_below, fail_below_because, name_lost};
use super::{Counters, Failures, Mode, Options, Summary, Walls};
use crate::engine::inflight::{self, Gate, Plan};
use crate::error::{Error, Result};
use crate::fs::walk::{self, Kind, Meta, meta_of, open_dir_at};
use crate::signals;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode as FsMode, mkdirat};
use rustix::io::Errno;
use std::cell::RefCell;
use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

/// Per-thread I/O buffer (read/write copies, content comparison).
const BUF: usize = 256 * 1024;

thread_local! {
    static IO: RefCell<Vec<u8>> = RefCell::new(vec![0u8; BUF]);
}

/// What every task shares.
pub(crate) struct CopyShared<'a> {
    pub(crate) o: &'a Options,
    pub(crate) c: Counters,
    pub(crate) f: Failures,
    /// Under MPI: takes a file to copy in chunks on every rank (true: taken; its bytes
    /// are counted here, copied later). None: every file is copied where it is found.
    pub(crate) big: Option<&'a BigFiles<'a>>,
    /// Directories never entered: on the SRC side DST's root and its ancestors, on the
    /// DST side SRC's (a bind mount that shows one side inside the other).
    pub(crate) walls: Walls,
    /// What DST holds (probed once).
    pub(crate) caps: Caps,
    /// What DST could not hold, per kind.
    pub(crate) losses: Losses,
    /// Files with more than one link: where the first of each inode went.
    pub(crate) links: Links,
    /// DST's root, for the relative paths hard links are made from.
    pub(crate) dst_root: Option<OwnedFd>,
    /// The in-flight gate of the per-entry work (None: fixed threads, the MPI variant).
    pub(crate) gate: Option<&'a Gate>,
}

/// See [`CopyShared::big`]: (the directory's node, SRC's name, SRC's metadata) → taken.
pub(crate) type BigFiles<'a> = dyn Fn(&Node, &CStr, &Meta) -> bool + Sync + 'a;

impl CopyShared<'_> {
    pub(crate) fn stopping(&self) -> bool {
        signals::pending() != 0
    }
    pub(crate) fn fail(&self, path: &str, name: Option<&CStr>, what: &str, e: Errno) {
        self.f.push(&self.c, format!("{}: {what}: {e}", join(path, name)));
    }
    /// A SRC entry (not a directory) that was not copied: counted apart too, so that
    /// copied + skipped + failed entries adds up to the entries seen.
    pub(crate) fn fail_entry(&self, path: &str, name: Option<&CStr>, what: &str, e: Errno) {
        self.c.failed_entries.fetch_add(1, Ordering::Relaxed);
        self.fail(path, name, what, e);
    }
    /// A failure whose reason is the tool's own words, not an errno.
    pub(crate) fn refuse(&self, path: &str, name: Option<&CStr>, what: &str) {
        self.f.push(&self.c, format!("{}: {what}", join(path, name)));
    }
    /// The attribute context for entries of `node`.
    pub(crate) fn attr(&self, node: &Node) -> Attr<'_> {
        Attr {
            keep: &self.o.keep,
            caps: &self.caps,
            losses: &self.losses,
            dst_may_have: self.o.mode == Mode::Sync && node.dst_meta.is_some(),
        }
    }
}

/// `path/name` for messages ("." is the root).
pub(crate) fn join(path: &str, name: Option<&CStr>) -> String {
    match name {
        None => {
            if path.is_empty() {
                ".".into()
            } else {
                path.to_string()
            }
        }
        Some(n) => {
            let n = OsStr::from_bytes(n.to_bytes()).to_string_lossy();
            if path.is_empty() { n.into_owned() } else { format!("{path}/{n}") }
        }
    }
}

/// `rel/name` as bytes.
pub(crate) fn rel_join(rel: &[u8], name: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(rel.len() + 1 + name.len());
    if !rel.is_empty() {
        v.extend_from_slice(rel);
        v.push(b'/');
    }
    v.extend_from_slice(name);
    v
}

/// One directory in flight.
pub(crate) struct Node {
    pub(crate) src: OwnedFd,
    /// None in a dry run where DST has no such directory.
    pub(crate) dst: Option<OwnedFd>,
    /// Relative path, for messages.
    pub(crate) path: String,
    /// Relative path as bytes (names need not be UTF-8), for hard links.
    pub(crate) rel: Vec<u8>,
    /// SRC's metadata, applied to DST when the countdown ends (unless already equal).
    pub(crate) meta: Meta,
    pub(crate) dst_meta: Option<Meta>,
    pub(crate) pending: AtomicUsize,
    /// Something was created, renamed or deleted in it (its mtime moved): set it again.
    pub(crate) changed: AtomicBool,
    pub(crate) parent: Option<Arc<Node>>,
}

/// A subdirectory waiting for a thread.
pub(crate) struct Task {
    pub(crate) parent: Arc<Node>,
    pub(crate) name: CString,
    pub(crate) meta: Meta,
    /// DST's entry of that name, if it is a directory (None: make it).
    pub(crate) dst_meta: Option<Meta>,
}

pub(super) use super::tally::{COMPARE, DELETE, SCAN_DST, SCAN_SRC, TRANSFER, Tally};

/// Run the engine over `o.src` → `o.dst` (already checked by [`super::check`]).
pub fn run(o: &Options) -> Result<Summary> {
    walk::raise_fd_limit();
    // Before DST is made, and before the clock starts (mountinfo and the ancestors' stats
    // are not part of the copy an experiment times): SRC and DST must not overlap.
    let mut walls = super::walls(o)?;
    let t0 = Instant::now();
    let (u0, s0) = crate::measure::cpu_times();
    let src = walk::open_root(&o.src).map_err(|e| super::src_error(&o.src, e))?;
    let src_meta = meta_of(src.as_fd()).map_err(|e| super::src_error(&o.src, e))?;
    // DST itself: made if missing (not in a dry run).
    let mut made = false;
    let dst = match walk::open_root(&o.dst) {
        Ok(fd) => Some(fd),
        Err(Errno::NOENT) if o.dry_run => None,
        Err(Errno::NOENT) => {
            made = true;
            // Nothing was made yet: a DST that cannot be made is bad input (exit 2).
            rustix::fs::mkdir(&o.dst, FsMode::from_raw_mode(0o700))
                .map_err(|e| Error::bad("DST", format!("cannot create {}: {e}", o.dst.display())))?;
            Some(walk::open_root(&o.dst).map_err(|e| Error::failed(format!("cannot open {}: {e}", o.dst.display())))?)
        }
        Err(e) => return Err(Error::failed(format!("cannot open {}: {e}", o.dst.display()))),
    };
    if o.itemize && dst.is_none() | made {
        itemize::say(o, &itemize::Change::new(itemize::Verb::New, "dir", b""));
    }
    // A DST made here has nothing of SRC's yet (its root is finished as a new directory).
    let dst_meta = match &dst {
        Some(_) if made => None,
        Some(fd) => Some(meta_of(fd.as_fd()).map_err(|e| Error::failed(format!("{}: {e}", o.dst.display())))?),
        None => None,
    };
    if let Some(fd) = &dst
        && let Ok(st) = rustix::fs::fstat(fd)
    {
        walls.dst_chain.insert(0, (st.st_dev, st.st_ino));
    }
    let mut caps = match &dst {
        Some(fd) => attrs::probe(fd.as_fd(), o.dry_run),
        None => Caps::default(),
    };
    let src_xattrs = super::src_xattrs(o, src.as_fd(), &mut caps);
    let dst_root = dst.as_ref().and_then(|fd| rustix::io::fcntl_dupfd_cloexec(fd, 0).ok());
    let losses = Losses::default();
    caps.mark(&losses);
    let plan = match o.in_flight_max {
        Some(max) => Plan::Adaptive { start: o.threads, max },
        None => Plan::Fixed(o.threads),
    };
    let gate = Gate::for_plan(plan);
    let ctx = CopyShared {
        o,
        c: Counters::default(),
        f: Failures::default(),
        big: None,
        walls,
        caps,
        losses,
        links: Links::default(),
        dst_root,
        gate: gate.as_ref(),
    };
    // Files are created with their final permission bits (one fchmod less per file).
    let umask = rustix::process::umask(FsMode::empty());
    let root = Arc::new(Node {
        src,
        dst,
        path: String::new(),
        rel: Vec::new(),
        meta: src_meta,
        dst_meta,
        pending: AtomicUsize::new(1),
        changed: AtomicBool::new(false),
        parent: None,
    });
    // A fresh copy's DST was checked empty: no need to list it.
    let fresh = o.mode == Mode::Copy;
    std::thread::scope(|sc| {
        let reporter = super::progress::Reporter::start(sc, o, &ctx.c, t0);
        inflight::controlled(ctx.gate, || {
            let threads = inflight::walk_threads(ctx.gate, o.threads);
            walk::par_tasks(threads, vec![Work::Open(root, fresh)], |w: Work, spawn| {
                let _pass = inflight::enter_dir(ctx.gate);
                let (node, fresh) = match w {
                    Work::Open(node, fresh) => (node, fresh),
                    Work::Waiting(t) if ctx.stopping() => return release(&ctx, t.parent),
                    Work::Waiting(t) => match open_task(&ctx, *t) {
                        Some(opened) => opened,
                        None => return,
                    },
                };
                do_dir(&ctx, node, fresh, &mut |t| spawn(Work::Waiting(Box::new(t))));
            })
        });
        reporter.stop();
    });
    rustix::process::umask(umask);
    let (u1, s1) = crate::measure::cpu_times();
    let mut s = summary(o, o.threads, &[Part::of(&ctx.c, &ctx.f, &ctx.losses, (u1 - u0, s1 - s0))], t0);
    s.modify_window_ns = ctx.caps.window_ns;
    s.dst_keeps_modes = Some(ctx.caps.modes);
    s.src_xattrs_unread = src_xattrs;
    s.in_flight = inflight::report(ctx.gate, o.threads);
    Ok(s)
}

/// A directory for a walk thread: open (the root), or a subdirectory waiting to be
/// opened. A waiting one holds no fd of its own: its directories are opened when a thread
/// takes it, so a directory of 10,000 subdirectories queues 10,000 names, not 20,000 open
/// fds (which ran past the fd limit: `open source directory: Too many open files` for
/// every subdirectory beyond it, issue 41's ten-million-file copy). Open nodes are the
/// ones being worked on and their ancestors, whose DST metadata waits for their children.
enum Work {
    Open(Arc<Node>, bool),
    Waiting(Box<Task>),
}

/// Open a subdirectory task's SRC and DST directories (making DST's when missing) and
/// turn it into a node; on failure record it and release the parent. Returns the node
/// and whether its DST directory is fresh (known empty).
fn open_task(ctx: &CopyShared, t: Task) -> Option<(Arc<Node>, bool)> {
    let path = join(&t.parent.path, Some(&t.name));
    let src = match open_dir_at(t.parent.src.as_fd(), &t.name) {
        Ok(fd) => fd,
        Err(e) => {
            ctx.fail(&path, None, "open source directory", e);
            release(ctx, t.parent);
            return None;
        }
    };
    if let Some(why) = ctx.wall(src.as_fd(), true, Some(t.parent.src.as_fd())) {
        ctx.refuse(&path, None, &why);
        release(ctx, t.parent);
        return None;
    }
    let mut fresh = t.dst_meta.is_none();
    if fresh && ctx.o.dry_run {
        ctx.c.dirs_created.fetch_add(1, Ordering::Relaxed); // would be
    }
    let dst = match (&t.parent.dst, ctx.o.dry_run) {
        (None, _) => None,
        (Some(_), true) if fresh => None,
        (Some(pd), _) => {
            if fresh {
                // A name DST cannot hold (the probe says) is not tried: as if refused.
                let made = match ctx.caps.holds_name(t.name.to_bytes()) {
                    true => mkdirat(pd.as_fd(), &t.name, FsMode::from_raw_mode(0o700)),
                    false => Err(Errno::ILSEQ),
                };
                match made {
                    Ok(()) => {
                        ctx.c.dirs_created.fetch_add(1, Ordering::Relaxed);
                        t.parent.changed.store(true, Ordering::Relaxed);
                    }
                    Err(Errno::EXIST) if ctx.o.mode == Mode::Sync => fresh = false,
                    Err(e) if losses::unholdable_name(t.name.to_bytes(), e) => {
                        // A name DST cannot hold: the directory and all below it are lost.
                        let below = count_below(ctx, src.as_fd());
                        ctx.c.lost_entries.fetch_add(below.entries - below.dirs, Ordering::Relaxed);
                        ctx.losses.add(Loss::Names, || below.said(name_lost(&t.parent.path, &t.name)));
                        release(ctx, t.parent);
                        return None;
                    }
                    Err(e) => {
                        ctx.fail(&path, None, "create directory", e);
                        fail_below(ctx, src.as_fd(), &path);
                        release(ctx, t.parent);
                        return None;
                    }
                }
            }
            match open_dir_at(pd.as_fd(), &t.name) {
                Ok(fd) => match ctx.wall(fd.as_fd(), false, Some(pd.as_fd())) {
                    Some(why) => {
                        ctx.refuse(&path, None, &why);
                        fail_below_because(ctx, src.as_fd(), &path, "its destination directory was not entered");
                        release(ctx, t.parent);
                        return None;
                    }
                    None => Some(fd),
                },
                Err(e) => {
                    ctx.fail(&path, None, "open destination directory", e);
                    fail_below(ctx, src.as_fd(), &path);
                    release(ctx, t.parent);
                    return None;
                }
            }
        }
    };
    let node = Arc::new(Node {
        src,
        dst,
        path,
        rel: rel_join(&t.parent.rel, t.name.to_bytes()),
        meta: t.meta,
        dst_meta: t.dst_meta,
        pending: AtomicUsize::new(1),
        changed: AtomicBool::new(false),
        parent: Some(t.parent),
    });
    Some((node, fresh))
}

/// Count one child (or the directory's own work) done; finish directories whose count
/// reaches zero, walking up.
pub(crate) fn release(ctx: &CopyShared, node: Arc<Node>) {
    let mut cur = Some(node);
    while let Some(n) = cur {
        if n.pending.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        if let Some(d) = &n.dst {
            let a = ctx.attr(&n);
            let same = !n.changed.load(Ordering::Relaxed)
                && n.dst_meta.is_some_and(|m| {
                    finish::same_perm(&m, &n.meta, &ctx.caps)
                        && finish::same_time(&m, &n.meta, &ctx.caps)
                        && finish::same_owner(&n.meta, &m, &a)
                })
                // xattrs compared only when SRC's inode changed after DST's (a DST made
                // from it since has them): one listxattr a side would cost every
                // unchanged directory.
                && (!ctx.o.keep.any_xattr()
                    || !n.dst_meta.is_some_and(|m| n.meta.changed_after(&m))
                    || attrs::same(Loc::Fd(n.src.as_fd()), Loc::Fd(d.as_fd()), &ctx.caps.compared(&ctx.o.keep))
                        .unwrap_or(false));
            if ctx.o.itemize {
                itemize::dir(ctx, &n, d.as_fd(), &a);
            }
            if !same && !ctx.o.dry_run && !ctx.stopping() {
                let path = || join(&n.path, None);
                if let Err(e) = finish_dir(n.src.as_fd(), d.as_fd(), &n.meta, &a, &path) {
                    ctx.fail(&n.path, None, "set directory attributes", e);
                }
            }
        }
        cur = n.parent.clone();
    }
}

/// The work of one directory: list, pair by name, delete, transfer, spawn subdirectories.
pub(crate) fn do_dir(ctx: &CopyShared, node: Arc<Node>, fresh: bool, spawn: &mut dyn FnMut(Task)) {
    if ctx.stopping() {
        release(ctx, node);
        return;
    }
    let mut t = Tally::default();
    let path = node.path.as_str();

    // Both sides are listed at once: one side's getdents (one thread) overlaps the
    // other's statx calls.
    let timed_list = |dir: BorrowedFd<'_>| {
        let clock = Instant::now();
        (list(ctx, dir, path), clock.elapsed())
    };
    let ((src_items, src_time), dst_listed) = match (&node.dst, fresh) {
        (Some(d), false) => {
            let (s, d) = rayon::join(|| timed_list(node.src.as_fd()), || timed_list(d.as_fd()));
            (s, Some(d))
        }
        _ => (timed_list(node.src.as_fd()), None),
    };
    t.phase[SCAN_SRC] += src_time;
    // An unlistable SRC directory is skipped whole: taken as empty, its DST counterpart's
    // entries would all count as extraneous, and --delete would remove them.
    let mut src_items = match src_items {
        Ok(v) => v,
        Err(e) => {
            ctx.fail(path, None, "list source directory", e);
            release(ctx, node);
            return;
        }
    };
    // Entries the filters leave out are neither copied nor descended into; DST's
    // entries of those names are extraneous (kept unless --delete and not protected).
    if let Some(f) = &ctx.o.filter {
        t.excluded += src_items.exclude(f, &node.rel);
    }
    // What is listed goes into the counters at once, not with the directory's tallies
    // after its work: the progress line's pending count is listed and not yet done.
    let (mut listed_dirs, mut listed_bytes) = (0, 0);
    for &(_, _, m) in &src_items.items {
        match m.kind {
            Kind::Dir => listed_dirs += 1,
            Kind::File => listed_bytes += m.size,
            _ => {}
        }
    }
    ctx.c.src_entries.fetch_add(src_items.len() as u64, Ordering::Relaxed);
    ctx.c.src_dirs.fetch_add(listed_dirs, Ordering::Relaxed);
    ctx.c.src_bytes.fetch_add(listed_bytes, Ordering::Relaxed);
    let dst_items = match dst_listed {
        None => Listing::default(),
        Some((Ok(v), took)) => {
            t.phase[SCAN_DST] += took;
            v
        }
        Some((Err(e), _)) => {
            ctx.fail(path, None, "list destination directory", e);
            release(ctx, node);
            return;
        }
    };
    t.dst_entries = dst_items.len() as u64;

    let clock = Instant::now();
    let matched = dst_items.matches(&src_items);
    // A destination that folds case holds one of SRC's names that differ only in case.
    let lost_case = if ctx.caps.folds_case { super::case::lost_to_case(&src_items, &matched) } else { None };
    let mut extra = vec![true; dst_items.len()];
    for &j in &matched {
        if j != NO_MATCH {
            extra[j as usize] = false;
        }
    }
    t.phase[COMPARE] += clock.elapsed();
    // DST's entries with no SRC counterpart first: deleting them frees space for what is
    // copied, and on a case-insensitive DST a deleted "foo" cannot take SRC's "Foo" with it.
    for (j, _) in extra.iter().enumerate().filter(|(_, e)| **e) {
        if ctx.stopping() {
            break;
        }
        extraneous(ctx, &node, &dst_items.item(j), &mut t);
    }
    let entries = |range: std::ops::Range<usize>, t: &mut Tally, spawn: &mut dyn FnMut(Task)| {
        let before = [t.copied, t.skipped + t.attrs_updated, t.bytes];
        // Compare time: the range's time less what its entries spent transferring and
        // deleting (timed where they do it); no clock read per unchanged entry.
        let clock = Instant::now();
        let written = t.phase[TRANSFER] + t.phase[DELETE];
        IO.with(|buf| {
            let buf = &mut buf.borrow_mut()[..];
            for i in range {
                if ctx.stopping() {
                    break;
                }
                let j = matched[i];
                let s = src_items.item(i);
                let d = (j != NO_MATCH).then(|| dst_items.item(j as usize));
                if s.m.kind == Kind::File {
                    t.src_files += 1;
                }
                if lost_case.as_ref().is_some_and(|l| l[i]) {
                    super::case::lose(ctx, &node, s.name, &s.m);
                    continue;
                }
                super::entry::entry(ctx, &node, &s, d.as_ref(), t, buf, spawn);
            }
        });
        let spent = clock.elapsed();
        t.phase[COMPARE] += spent.saturating_sub(t.phase[TRANSFER] + t.phase[DELETE] - written);
        for (slot, (now, was)) in
            ctx.c.progress.iter().zip([t.copied, t.skipped + t.attrs_updated, t.bytes].into_iter().zip(before))
        {
            slot.fetch_add(now - was, Ordering::Relaxed);
        }
    };
    match ctx.gate {
        // Fixed threads: the directory's entries on this thread, as always.
        None => entries(0..matched.len(), &mut t, spawn),
        // In-flight gate: ranges of entries on as many threads as it lets through. This
        // thread's ranges spawn as they go (warm local storage: all of them, in order, as
        // without the gate); the helpers' tallies and subdirectories are gathered, their
        // tasks spawned here afterwards.
        Some(_) => {
            let gathered = std::sync::Mutex::new((Tally::default(), Vec::new()));
            inflight::for_ranges_split(
                ctx.gate,
                matched.len(),
                |r| entries(r, &mut t, spawn),
                |r| {
                    let (mut rt, mut tasks) = (Tally::default(), Vec::new());
                    entries(r, &mut rt, &mut |task| tasks.push(task));
                    let mut g = gathered.lock().unwrap_or_else(|p| p.into_inner());
                    g.0.add(&rt);
                    g.1.extend(tasks);
                },
            );
            let (rt, tasks) = gathered.into_inner().unwrap_or_else(|p| p.into_inner());
            t.add(&rt);
            for task in tasks {
                spawn(task);
            }
        }
    }
    t.flush(&ctx.c);
    if t.copied + t.deleted > 0 {
        node.changed.store(true, Ordering::Relaxed);
    }
    release(ctx, node);
}
