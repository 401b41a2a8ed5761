//! `manyfiles rm`: a parallel remover on the shared walker (one task per directory, as
//! the fastest removers do).
//!
//! Safety rules: every name is removed with `unlinkat` relative to its directory's fd;
//! directories are opened with `O_NOFOLLOW` (a symlink is unlinked, never followed, also
//! when it is a PATH itself); a directory on another file system (another device, or a
//! mount root) is left alone unless `cross_mounts`; `/` and anything resolving to it are
//! refused, and every PATH is resolved up to its last component before anything is removed.
//!
//! Order: a directory task runs the one remover's per-directory step (`fs::remove`: list
//! completely, subdirectories spawned as tasks, the other names unlinked in inode order)
//! — itself, or in batches of [`BATCH`] names on several tasks when the directory is large
//! (the directory lock serialises only part of an unlink; inode eviction runs outside
//! it); the last task to finish below a directory removes it. A failure below a directory
//! keeps it (and its ancestors) without a second error for each. Entry types come from
//! getdents' `d_type`: no per-file `stat`.
//!
//! Bytes freed: the free space each file system involved gained, from `statvfs` before
//! and after (a per-file `statx` of the blocks freed cost more than the 3% the benchmark
//! allowed: BENCHMARKS.md, "rm").

pub mod mpi;
mod resolve;

use crate::engine::inflight::{self, Gate, Plan};
use crate::engine::timing::{self, Timing};
use crate::error::{Error, Result};
use crate::fs::remove::{self, BATCH};
use crate::fs::walk::{self, Kind};
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What to remove and how.
#[derive(Debug, Clone)]
pub struct Options {
    pub paths: Vec<PathBuf>,
    pub threads: usize,
    /// Some(max): the unlinks' in-flight starts at `threads` and is moved up to `max`
    /// while the removal runs (`engine::inflight`); None: `threads`, fixed.
    pub in_flight_max: Option<usize>,
    /// Descend into directories on other file systems (mount points) too.
    pub cross_mounts: bool,
    /// No progress line.
    pub quiet: bool,
    /// Evict the trees from the caches before the clock starts (`--cold`).
    pub cold: bool,
    /// End the time with a syncfs of every file system removed from (`--durable`).
    pub durable: bool,
    /// Filter rules: what they exclude below a PATH (matched by its path from that PATH)
    /// stays, with the directories holding it; the PATHs themselves are what was named.
    pub filter: Option<Arc<crate::engine::filter::Filter>>,
}

/// Failures listed in the summary; the rest are counted.
pub(crate) const LIST_FAILURES: usize = 1000;

/// One entry that could not be removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub path: String,
    pub error: String,
}

/// What a removal did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub paths: Vec<String>,
    /// Non-directories removed (files, symlinks, FIFOs, sockets, device nodes).
    pub files: u64,
    pub dirs: u64,
    /// Space freed: the free space (statvfs `f_bfree`) the file systems of the PATHs (and,
    /// with `--cross-mounts`, of the mounts entered) gained between start and end. It
    /// counts directories' blocks too and nothing of files still linked or open elsewhere;
    /// other writers on those file systems, and file systems that free blocks in the
    /// background (btrfs, XFS), make it approximate.
    pub bytes_freed: u64,
    pub elapsed_s: f64,
    pub threads: usize,
    /// The in-flight the unlinks used (fixed, or adaptive with its median and max).
    #[serde(default)]
    pub in_flight: crate::engine::inflight::InFlightReport,
    /// Entries that could not be removed (the directories above them are kept silently).
    pub failed: u64,
    /// Entries the filters kept (a directory counts once: nothing below it is read); the
    /// directories holding them stay too, not counted here.
    #[serde(default)]
    pub excluded: u64,
    /// Filters were given (the summary says `excluded` then).
    #[serde(default)]
    pub filtered: bool,
    /// The first failures (at most 1,000).
    pub failures: Vec<Failure>,
    pub interrupted: bool,
    /// PATHs that are mount points, emptied with --cross-mounts and kept (a mount point
    /// cannot be removed while mounted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_mount_points: Vec<String>,
    /// Under MPI: how the work spread over the ranks (absent with one rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<crate::engine::walker::RankCounts>,
    /// Cold or warm, durable or returned: what `elapsed_s` includes.
    #[serde(flatten)]
    pub timing: Timing,
}

impl Summary {
    /// The summary of a removal from its parts (one per rank; the local engine's one):
    /// counts summed, the failures listed in rank order up to [`LIST_FAILURES`].
    pub(crate) fn of(
        paths: Vec<String>,
        parts: &[Part],
        bytes_freed: u64,
        elapsed_s: f64,
        threads: usize,
        ranks: Option<crate::engine::walker::RankCounts>,
    ) -> Summary {
        let mut failures: Vec<Failure> = parts.iter().flat_map(|p| p.failures.iter().cloned()).collect();
        failures.truncate(LIST_FAILURES);
        Summary {
            paths,
            files: parts.iter().map(|p| p.files).sum(),
            dirs: parts.iter().map(|p| p.dirs).sum(),
            bytes_freed,
            elapsed_s,
            threads,
            in_flight: crate::engine::inflight::InFlightReport::fixed(threads),
            failed: parts.iter().map(|p| p.failed).sum(),
            excluded: parts.iter().map(|p| p.excluded).sum(),
            filtered: false,
            failures,
            interrupted: parts.iter().any(|p| p.interrupted),
            kept_mount_points: Vec::new(),
            ranks,
            timing: Timing::default(),
        }
    }

    pub fn ok(&self) -> bool {
        self.failed == 0 && !self.interrupted && self.timing.ok()
    }

    pub fn text(&self) -> String {
        use crate::units::{fmt_secs, fmt_size, sig3};
        let mut s = format!(
            "removed {} files and {} directories, {} freed, in {} ({} entries/s, {} threads)\n",
            self.files,
            self.dirs,
            fmt_size(self.bytes_freed as f64),
            fmt_secs(self.elapsed_s),
            sig3((self.files + self.dirs) as f64 / self.elapsed_s.max(1e-9)),
            self.threads
        );
        if self.filtered {
            s.push_str(&format!(
                "excluded {} (kept by the filters, with the directories holding them)\n",
                self.excluded
            ));
        }
        s.push_str(&self.timing.text());
        for p in &self.kept_mount_points {
            s.push_str(&format!("kept {p}: a mount point, emptied (--cross-mounts); unmount it to remove it\n"));
        }
        if let Some(r) = &self.ranks {
            s.push_str(&r.text());
        }
        if self.failed > 0 {
            s.push_str(&format!("{} failed:\n", self.failed));
            for f in &self.failures {
                s.push_str(&format!("  {}: {}\n", f.path, f.error));
            }
            if self.failed > self.failures.len() as u64 {
                s.push_str(&format!("  … and {} more\n", self.failed - self.failures.len() as u64));
            }
        }
        if self.interrupted {
            s.push_str("interrupted: the rest was left in place\n");
        }
        s
    }
}

/// What a removal (or one rank's part of it) counts while it runs.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) files: AtomicU64,
    pub(crate) dirs: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) excluded: AtomicU64,
    pub(crate) failures: Mutex<Vec<Failure>>,
}

/// A [`Tally`] at the end (under MPI, what one rank sends the others).
#[derive(Default, Serialize, Deserialize)]
pub(crate) struct Part {
    pub(crate) files: u64,
    pub(crate) dirs: u64,
    pub(crate) failed: u64,
    #[serde(default)]
    pub(crate) excluded: u64,
    pub(crate) failures: Vec<Failure>,
    pub(crate) interrupted: bool,
}

impl Tally {
    /// One entry that could not be removed: counted, and listed (`path` made only then)
    /// while fewer than [`LIST_FAILURES`] are.
    /// The NUL-terminated `names` (non-directories of the directory at `rel`) less those
    /// `filter` keeps, counted; None: none is kept (use `names`).
    pub(crate) fn spare(
        &self,
        filter: Option<&crate::engine::filter::Filter>,
        rel: &[u8],
        names: &[u8],
    ) -> Option<Vec<u8>> {
        let f = filter?;
        let spared = |raw: &[u8]| f.spares(&crate::engine::walker::join(rel, &raw[..raw.len() - 1]), false);
        if !names.split_inclusive(|&b| b == 0).any(spared) {
            return None;
        }
        let mut kept = Vec::with_capacity(names.len());
        let mut n = 0;
        for raw in names.split_inclusive(|&b| b == 0) {
            match spared(raw) {
                true => n += 1,
                false => kept.extend_from_slice(raw),
            }
        }
        self.excluded.fetch_add(n, Ordering::Relaxed);
        Some(kept)
    }

    pub(crate) fn fail(&self, path: impl FnOnce() -> String, err: impl ToString) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        let mut f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if f.len() < LIST_FAILURES {
            f.push(Failure { path: path(), error: err.to_string() });
        }
    }

    /// The counts now, the failures taken; interrupted if a signal came.
    pub(crate) fn part(&self) -> Part {
        let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Part {
            files: ld(&self.files),
            dirs: ld(&self.dirs),
            failed: ld(&self.failed),
            excluded: ld(&self.excluded),
            failures: std::mem::take(&mut *self.failures.lock().unwrap_or_else(|p| p.into_inner())),
            interrupted: crate::signals::pending() != 0,
        }
    }
}

/// A PATH checked and resolved, ready to remove.
pub(crate) struct Target {
    pub(crate) shown: PathBuf,
    pub(crate) parent: OwnedFd,
    pub(crate) name: CString,
    pub(crate) kind: Kind,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    /// A directory that is a mount point (only with --cross-mounts): emptied, kept.
    pub(crate) mount_point: bool,
}

/// Every PATH checked and resolved before anything is removed (bad ones are bad input,
/// exit 2), each entry once however often it is named. `agree` sees the resolutions
/// first (under MPI, [`crate::ranks::agree`]: every rank's; locally none: `|r| r`).
pub(crate) fn targets(
    o: &Options,
    agree: impl FnOnce(Result<Vec<Target>>) -> Result<Vec<Target>>,
) -> Result<Vec<Target>> {
    if o.paths.is_empty() {
        return Err(Error::bad("PATH", "name at least one path to remove"));
    }
    let resolved =
        o.paths.iter().map(|p| resolve::resolve(p, o.cross_mounts)).collect::<Result<Vec<_>>>().and_then(|t| {
            if o.cold {
                let dirs: Vec<(&str, &Path)> = cold_roots(&t).into_iter().map(|p| ("PATH", p)).collect();
                timing::check_cold(&dirs)?;
            }
            Ok(t)
        });
    let mut targets = agree(resolved)?;
    // The same entry named twice is removed once.
    let mut seen = std::collections::HashSet::new();
    targets.retain(|t| seen.insert((t.dev, t.ino)));
    Ok(targets)
}

/// What `--cold` evicts: the directories among the PATHs (a file PATH's inode goes with
/// the caches dropped as root).
pub(crate) fn cold_roots(targets: &[Target]) -> Vec<&Path> {
    targets.iter().filter(|t| t.kind == Kind::Dir).map(|t| t.shown.as_path()).collect()
}

/// A directory being emptied (or, for a PATH, the directory holding it: `top`).
struct Node {
    fd: OwnedFd,
    /// Name in the parent; for a top node the shown path of the directory.
    name: CString,
    parent: Option<Arc<Node>>,
    /// Tasks still running below this directory, plus one for its own listing.
    pending: AtomicUsize,
    /// Something below could not be removed: keep this directory, quietly.
    blocked: AtomicBool,
    dev: u64,
    /// A top node whose PATH is a mount point (--cross-mounts): emptied, not removed.
    keeps_mount: bool,
    /// Path from the PATH (empty for the PATH and its top node), for the filters.
    rel: Vec<u8>,
}

enum Task {
    /// Empty this subdirectory of the node and remove it.
    Dir(Arc<Node>, CString),
    /// Unlink these non-directories of the node (NUL-terminated names, back to back).
    Files(Arc<Node>, Vec<u8>),
}

/// Free space of one file system when first met, and an fd to ask it again at the end.
struct FsFree {
    /// The first PATH (or mount entered) met on it.
    shown: String,
    dev: u64,
    fd: OwnedFd,
    free_before: u64,
}

struct RmShared<'a> {
    o: Options,
    t: Tally,
    fs: Mutex<Vec<FsFree>>,
    /// PATHs kept as mount points (see [`Summary::kept_mount_points`]).
    kept: Mutex<Vec<String>>,
    /// The in-flight gate of the unlinks (None: fixed threads).
    gate: Option<&'a Gate>,
}

/// Are `a` and `b` on one file system (one st_dev)?
pub(super) fn same_fs(a: rustix::fd::BorrowedFd<'_>, b: rustix::fd::BorrowedFd<'_>) -> bool {
    matches!((rustix::fs::fstat(a), rustix::fs::fstat(b)), (Ok(x), Ok(y)) if x.st_dev == y.st_dev)
}

/// Free bytes by statvfs (`f_bfree`: root's reserve included, as a removal frees it).
fn free_bytes(fd: rustix::fd::BorrowedFd<'_>) -> Option<u64> {
    rustix::fs::fstatvfs(fd).ok().map(|v| v.f_bfree.saturating_mul(v.f_frsize))
}

impl RmShared<'_> {
    /// Remember the free space of `fd`'s file system before anything on it is removed
    /// (called for each PATH before the removal starts, and for each mount entered).
    fn note_fs(&self, fd: rustix::fd::BorrowedFd<'_>, shown: impl FnOnce() -> String) {
        let Ok(st) = rustix::fs::fstat(fd) else { return };
        let mut fs = self.fs.lock().unwrap_or_else(|p| p.into_inner());
        if fs.iter().any(|f| f.dev == st.st_dev) {
            return;
        }
        if let (Some(free_before), Ok(fd)) = (free_bytes(fd), fd.try_clone_to_owned()) {
            fs.push(FsFree { shown: shown(), dev: st.st_dev, fd, free_before });
        }
    }

    /// Free space gained on every file system noted.
    fn freed(&self) -> u64 {
        let fs = self.fs.lock().unwrap_or_else(|p| p.into_inner());
        fs.iter().map(|f| free_bytes(f.fd.as_fd()).map_or(0, |now| now.saturating_sub(f.free_before))).sum()
    }

    fn fail(&self, node: &Node, name: &CStr, err: impl ToString) {
        self.t.fail(|| path_of(node, name), err);
        node.blocked.store(true, Ordering::Relaxed);
    }

    /// One task has ended below `node`: the last one removes it, and so on upwards.
    fn finish(&self, mut node: Arc<Node>) {
        while node.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            let Some(parent) = node.parent.clone() else { return };
            if node.blocked.load(Ordering::Relaxed) {
                parent.blocked.store(true, Ordering::Relaxed);
            } else if parent.keeps_mount {
                self.kept.lock().unwrap_or_else(|p| p.into_inner()).push(path_of(&parent, &node.name));
            } else {
                let r = remove::rmdir_one(parent.fd.as_fd(), node.name.as_c_str());
                match r {
                    Ok(()) => {
                        self.t.dirs.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(Errno::NOENT) => {} // removed by someone else meanwhile
                    Err(e) => self.fail(&parent, &node.name, e),
                }
            }
            node = parent;
        }
    }

    /// Remove one non-directory of `dir`.
    fn unlink(&self, dir: &Node, name: &CStr) -> std::result::Result<(), Errno> {
        remove::unlink_one(dir.fd.as_fd(), name)?;
        self.t.files.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn task(&self, t: Task, spawn: &mut dyn FnMut(Task)) {
        match t {
            Task::Dir(parent, name) => self.dir_task(parent, name, spawn),
            Task::Files(node, names) => {
                if crate::signals::pending() != 0 {
                    node.blocked.store(true, Ordering::Relaxed);
                } else {
                    self.unlink_all(&node, &names, spawn);
                }
                self.finish(node);
            }
        }
    }

    /// [`Self::empty`]'s unlinks through the in-flight gate: ranges of names on as many
    /// threads as it lets through (on a share each unlink is a round trip).
    fn unlink_gated(&self, gate: &Gate, node: &Arc<Node>, listed: &remove::Listed, spawn: &mut dyn FnMut(Task)) {
        let Some(mut all) = listed.batches(usize::MAX).next() else { return };
        if let Some(kept) = self.t.spare(self.o.filter.as_deref(), &node.rel, &all) {
            node.blocked.store(true, Ordering::Relaxed);
            all = kept;
        }
        // Where each name starts, and the end: every name ends in its NUL.
        let starts: Vec<usize> =
            std::iter::once(0).chain(all.iter().enumerate().filter(|(_, b)| **b == 0).map(|(i, _)| i + 1)).collect();
        let n = starts.len() - 1;
        let became = Mutex::new(Vec::new());
        crate::engine::inflight::for_chunks(Some(gate), n, |r| {
            let names = &all[starts[r.start]..starts[r.end]];
            let k = remove::unlink_names(
                node.fd.as_fd(),
                names,
                |name| became.lock().unwrap_or_else(|p| p.into_inner()).push(name.to_owned()),
                |name, e| self.fail(node, name, e),
            );
            self.t.files.fetch_add(k, Ordering::Relaxed);
        });
        for name in became.into_inner().unwrap_or_else(|p| p.into_inner()) {
            // Became a directory since it was listed.
            node.pending.fetch_add(1, Ordering::AcqRel);
            spawn(Task::Dir(Arc::clone(node), name));
        }
    }

    /// Unlink the NUL-terminated `names` (non-directories when listed) of `node`.
    fn unlink_all(&self, node: &Arc<Node>, names: &[u8], spawn: &mut dyn FnMut(Task)) {
        let kept = self.t.spare(self.o.filter.as_deref(), &node.rel, names);
        if kept.is_some() {
            node.blocked.store(true, Ordering::Relaxed);
        }
        let names = kept.as_deref().unwrap_or(names);
        let n = remove::unlink_names(
            node.fd.as_fd(),
            names,
            |name| {
                // Became a directory since it was listed.
                node.pending.fetch_add(1, Ordering::AcqRel);
                spawn(Task::Dir(Arc::clone(node), name.to_owned()));
            },
            |name, e| self.fail(node, name, e),
        );
        self.t.files.fetch_add(n, Ordering::Relaxed);
    }

    fn dir_task(&self, parent: Arc<Node>, name: CString, spawn: &mut dyn FnMut(Task)) {
        if crate::signals::pending() != 0 {
            parent.blocked.store(true, Ordering::Relaxed);
            return self.finish(parent);
        }
        let top = parent.parent.is_none();
        let rel = if top { Vec::new() } else { crate::engine::walker::join(&parent.rel, name.to_bytes()) };
        // What the filters keep stays, and so does the directory holding it (quietly).
        let spared = |is_dir: bool| !top && self.o.filter.as_deref().is_some_and(|f| f.spares(&rel, is_dir));
        if spared(true) {
            self.t.excluded.fetch_add(1, Ordering::Relaxed);
            parent.blocked.store(true, Ordering::Relaxed);
            return self.finish(parent);
        }
        let fd = match remove::open_to_empty(parent.fd.as_fd(), &name) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return self.finish(parent), // vanished: nothing to remove
            Err(Errno::NOTDIR) | Err(Errno::LOOP) if spared(false) => {
                self.t.excluded.fetch_add(1, Ordering::Relaxed);
                parent.blocked.store(true, Ordering::Relaxed);
                return self.finish(parent);
            }
            Err(Errno::NOTDIR) | Err(Errno::LOOP) => {
                // Replaced by a non-directory (or a symlink) since it was listed: unlink that.
                if let Err(e) = self.unlink(&parent, &name)
                    && e != Errno::NOENT
                {
                    self.fail(&parent, &name, e);
                }
                return self.finish(parent);
            }
            Err(e) => {
                self.fail(&parent, &name, e);
                return self.finish(parent);
            }
        };
        match remove::crossing(fd.as_fd(), parent.dev) {
            Ok((dev, crosses)) => {
                if !top && crosses {
                    if !self.o.cross_mounts {
                        self.fail(&parent, &name, "a mount point: not crossed (use --cross-mounts)");
                        return self.finish(parent);
                    }
                    self.note_fs(fd.as_fd(), || path_of(&parent, &name));
                }
                let node = Arc::new(Node {
                    fd,
                    name,
                    parent: Some(parent),
                    pending: AtomicUsize::new(1),
                    blocked: AtomicBool::new(false),
                    dev,
                    keeps_mount: false,
                    rel,
                });
                self.empty(&node, spawn);
                self.finish(node);
            }
            Err(e) => {
                self.fail(&parent, &name, e);
                self.finish(parent);
            }
        }
    }

    /// The per-directory step (`fs::remove::list`): subdirectories spawned as tasks, the
    /// other names unlinked here, or on several tasks when there are more than [`BATCH`].
    fn empty(&self, node: &Arc<Node>, spawn: &mut dyn FnMut(Task)) {
        let mut dirs: Vec<CString> = Vec::new();
        let (listed, r) = remove::list(node.fd.as_fd(), |name| dirs.push(name.to_owned()));
        match r {
            // Removed meanwhile (getdents on a removed directory says ENOENT): not a
            // failure; anything left would show up when the directory is removed.
            Ok(()) | Err(Errno::NOENT) => {}
            // A listing that failed part way still removes what it saw; the error is kept.
            Err(e) => self.fail(node, c".", format!("cannot list: {e}")),
        }
        for name in dirs {
            node.pending.fetch_add(1, Ordering::AcqRel);
            spawn(Task::Dir(Arc::clone(node), name));
        }
        if let Some(gate) = self.gate {
            return self.unlink_gated(gate, node, &listed, spawn);
        }
        if listed.len() <= BATCH {
            if let Some(all) = listed.batches(BATCH).next() {
                self.unlink_all(node, &all, spawn);
            }
            return;
        }
        for batch in listed.batches(BATCH) {
            node.pending.fetch_add(1, Ordering::AcqRel);
            spawn(Task::Files(Arc::clone(node), batch));
        }
    }
}

/// Path of `name` below `node`, for messages: the names up to the PATH's directory.
fn path_of(node: &Node, name: &CStr) -> String {
    let mut parts = vec![name.to_string_lossy().into_owned()];
    let mut n = Some(node);
    while let Some(x) = n {
        parts.push(x.name.to_string_lossy().into_owned());
        n = x.parent.as_deref();
    }
    parts.reverse();
    parts.retain(|p| p != ".");
    parts.join("/")
}

/// Check every PATH, then remove them all. Err only for bad input (nothing removed);
/// failures during removal are in the summary.
pub fn run(o: &Options) -> Result<Summary> {
    let targets = targets(o, |r| r)?;
    crate::signals::install();
    walk::raise_fd_limit();
    let mut timing = Timing::start(o.cold, &cold_roots(&targets), o.threads)?;
    let gate = o.in_flight_max.and_then(|max| Gate::for_plan(Plan::Adaptive { start: o.threads, max }));
    let ctx = RmShared {
        o: o.clone(),
        t: Tally::default(),
        fs: Mutex::new(Vec::new()),
        kept: Mutex::new(Vec::new()),
        gate: gate.as_ref(),
    };
    for t in &targets {
        let shown = || t.shown.display().to_string();
        match walk::open_dir_at(t.parent.as_fd(), &t.name) {
            // The parent where it is on the same file system: the directory itself is gone
            // by the end, and a FUSE file system answers no statfs on a removed inode
            // (exFAT said `0 B freed`). A mount point PATH (emptied, kept) stands for itself.
            Ok(fd) if t.kind == Kind::Dir => match same_fs(t.parent.as_fd(), fd.as_fd()) {
                true => ctx.note_fs(t.parent.as_fd(), shown),
                false => ctx.note_fs(fd.as_fd(), shown),
            },
            _ => ctx.note_fs(t.parent.as_fd(), shown),
        }
    }
    let t0 = Instant::now();
    let shown: Vec<String> = targets.iter().map(|t| t.shown.display().to_string()).collect();
    let mut roots = Vec::new();
    for t in targets {
        let dir_shown = t.shown.parent().unwrap_or(Path::new("/")).as_os_str().as_bytes().to_vec();
        let top = Arc::new(Node {
            fd: t.parent,
            name: CString::new(dir_shown).expect("a path has no NUL"),
            parent: None,
            // Never reaches 0: a PATH's directory is not ours to remove.
            pending: AtomicUsize::new(1),
            blocked: AtomicBool::new(false),
            dev: t.dev,
            keeps_mount: t.mount_point,
            rel: Vec::new(),
        });
        if t.kind == Kind::Dir {
            top.pending.fetch_add(1, Ordering::AcqRel);
            roots.push(Task::Dir(top, t.name));
        } else if let Err(e) = ctx.unlink(&top, &t.name) {
            ctx.fail(&top, &t.name, e);
        }
    }
    // A progress line on a terminal only (a log gets the summary alone).
    let quiet = o.quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr());
    std::thread::scope(|sc| {
        let c = &ctx;
        let reporter = crate::engine::copy::progress::Reporter::with_line(sc, quiet, move || {
            let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
            let secs = t0.elapsed().as_secs_f64().max(1e-9);
            format!(
                "{:.0}s: removed {} files, {} directories ({} entries/s), failed {}",
                secs,
                ld(&c.t.files),
                ld(&c.t.dirs),
                crate::units::sig3((ld(&c.t.files) + ld(&c.t.dirs)) as f64 / secs),
                ld(&c.t.failed)
            )
        });
        inflight::controlled(c.gate, || {
            walk::par_tasks(inflight::walk_threads(c.gate, o.threads), roots, |t, spawn| {
                let _pass = inflight::enter_dir(c.gate);
                c.task(t, spawn)
            })
        });
        reporter.stop();
    });
    let returned_s = t0.elapsed().as_secs_f64();
    let part = ctx.t.part();
    let elapsed_s = {
        let fs = ctx.fs.lock().unwrap_or_else(|p| p.into_inner());
        let fds: Vec<_> = fs.iter().map(|f| (f.shown.clone(), f.fd.as_fd())).collect();
        timing.end(returned_s, o.durable && !part.interrupted, &fds)
    };
    let bytes_freed = ctx.freed();
    let mut s = Summary::of(shown, &[part], bytes_freed, elapsed_s, o.threads, None);
    s.in_flight = inflight::report(ctx.gate, o.threads);
    s.timing = timing;
    s.filtered = o.filter.is_some();
    s.kept_mount_points = ctx.kept.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(s)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rustix::fs::{Mode, OFlags, openat};

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

    /// `top` with 4 × 3 directories of 5 files holding `content` (61 non-directories
    /// and 17 directories with `top`), and a symlink to `/` that must not be followed.
    pub(crate) fn tree_with_root_link(top: &Path, content: &[u8]) {
        for a in 0..4 {
            for b in 0..3 {
                let d = top.join(format!("{a}/{b}"));
                std::fs::create_dir_all(&d).unwrap();
                for f in 0..5 {
                    std::fs::write(d.join(format!("f{f}")), content).unwrap();
                }
            }
        }
        std::os::unix::fs::symlink("/", top.join("0/root-link")).unwrap();
    }

    #[test]
    fn removes_a_tree_and_counts_it() {
        let t = tempfile::tempdir().unwrap();
        let top = t.path().join("top");
        tree_with_root_link(&top, &[7u8; 5000]);
        let s = run(&opts(&top)).unwrap();
        assert!(s.ok(), "{s:?}");
        assert_eq!((s.files, s.dirs), (4 * 3 * 5 + 1, 1 + 4 + 4 * 3));
        // bytes_freed is the file system's free-space change: others write to /tmp too.
        assert!(!top.exists());
        assert!(t.path().exists(), "the PATH's parent stays");
    }

    #[test]
    fn refuses_root_and_dot_paths_before_removing_anything() {
        let t = tempfile::tempdir().unwrap();
        let keep = t.path().join("keep");
        std::fs::create_dir(&keep).unwrap();
        for bad in ["/", "//", "/tmp/..", "/.", ".", "..", "x/.."] {
            let mut o = opts(&keep);
            o.paths.push(PathBuf::from(bad));
            let e = run(&o).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}: {e}");
            assert!(keep.exists(), "{bad}: nothing removed when one PATH is refused");
        }
        let e = run(&opts(&t.path().join("missing"))).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn a_large_directory_is_unlinked_in_chunks() {
        let t = tempfile::tempdir().unwrap();
        let top = t.path().join("big");
        std::fs::create_dir_all(top.join("sub")).unwrap();
        let n = 3 * BATCH + 17;
        for i in 0..n {
            std::fs::write(top.join(format!("f{i}")), b"").unwrap();
        }
        std::fs::write(top.join("sub/x"), b"").unwrap();
        let s = run(&opts(&top)).unwrap();
        assert!(s.ok(), "{s:?}");
        assert_eq!((s.files, s.dirs), (n as u64 + 1, 2));
        assert!(!top.exists());
    }

    #[test]
    fn symlink_paths_are_removed_not_followed() {
        let t = tempfile::tempdir().unwrap();
        let outside = t.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), b"x").unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let mut slash = link.as_os_str().to_owned();
        slash.push("/");
        assert_eq!(run(&opts(Path::new(&slash))).unwrap_err().exit_code(), 2, "link/ is refused");
        let s = run(&opts(&link)).unwrap();
        assert_eq!((s.files, s.dirs, s.failed), (1, 0, 0));
        assert!(std::fs::symlink_metadata(&link).is_err());
        assert!(outside.join("keep").exists());
        let root_link = t.path().join("root");
        std::os::unix::fs::symlink("/", &root_link).unwrap();
        assert_eq!(run(&opts(&root_link)).unwrap_err().exit_code(), 2);
        assert!(std::fs::symlink_metadata(&root_link).is_ok());
    }

    #[test]
    fn deep_chain_is_removed() {
        let t = tempfile::tempdir().unwrap();
        let top = t.path().join("deep");
        std::fs::create_dir(&top).unwrap();
        let mut fd = walk::open_root(&top).unwrap();
        for _ in 0..1500 {
            rustix::fs::mkdirat(&fd, c"d", Mode::from_raw_mode(0o755)).unwrap();
            drop(openat(&fd, c"f", OFlags::WRONLY | OFlags::CREATE, Mode::from_raw_mode(0o644)).unwrap());
            fd = walk::open_dir_at(fd.as_fd(), c"d").unwrap();
        }
        drop(fd);
        let s = run(&opts(&top)).unwrap();
        assert!(s.ok(), "{:?}", &s.failures[..s.failures.len().min(3)]);
        assert_eq!((s.files, s.dirs), (1500, 1501));
        assert!(!top.exists());
    }
}
