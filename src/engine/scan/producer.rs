//! The walk + statx producer: one task per directory on the shared walker
//! ([`crate::fs::walk::par_tasks`]); each task reads its directory (getdents), statx'es every
//! entry asking only for the fields the index keeps, and sends rows in batches to the
//! one database writer over a bounded channel (a slow database holds the walk back
//! instead of filling memory).

use super::backend::Meta;
use crate::engine::inflight::Gate;
use crate::fs::walk::{self, Kind};
use crate::signals;
use crate::tree::inventory::Inventory;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, StatxFlags, statx};
use rustix::io::Errno;
use std::ffi::CString;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Only what the index keeps: some file systems skip work for fields not asked for.
pub(crate) const FIELDS: StatxFlags = StatxFlags::TYPE
    .union(StatxFlags::MODE)
    .union(StatxFlags::SIZE)
    .union(StatxFlags::MTIME)
    .union(StatxFlags::INO)
    .union(StatxFlags::BLOCKS)
    .union(StatxFlags::NLINK);

/// Entries per statx chunk: a directory with more is stat'ed on several threads.
const CHUNK: usize = 2048;

/// Paths listed in the report (the counts are always complete).
pub const LISTED: usize = 100;

/// A 64-bit key of a path (SipHash with fixed keys: the walker and the writer agree).
/// The writer keys its index map by it: 8 bytes instead of the path keeps a rescan of
/// millions of rows small. Two of n paths collide with probability about n²/2⁶⁵
/// (3·10⁻⁸ for a million); a new path colliding with an indexed one would be taken for
/// it (its row updated instead of a new row inserted).
pub fn path_key(path: &[u8]) -> u64 {
    let mut h = std::hash::BuildHasherDefault::<std::hash::DefaultHasher>::default().build_hasher();
    h.write(path);
    h.finish()
}

/// The parent path of an indexed path (`a/b/c` → `a/b`, `a` → ``); None for the root.
pub fn parent_path(path: &[u8]) -> Option<&[u8]> {
    if path.is_empty() {
        return None;
    }
    Some(match path.iter().rposition(|&b| b == b'/') {
        Some(i) => &path[..i],
        None => &[],
    })
}

/// One entry found by the walk. Path and name live in the batch's byte arena.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    path: (u32, u32),
    name_start: u32,
    pub key: u64,
    /// Key of the parent directory; None for the root.
    pub parent: Option<u64>,
    pub depth: u32,
    pub meta: Meta,
}

/// Rows of one directory (or part of a big one), sent to the writer in one message; or,
/// when the walk only counts ([`WalkStats::count_only`]), no rows and their counts.
#[derive(Debug, Default)]
pub struct Batch {
    bytes: Vec<u8>,
    pub rows: Vec<Row>,
    /// Entries counted without a row.
    pub counted: Counts,
}

/// What a walk found, counted: a scan's totals.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub entries: u64,
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub other: u64,
    /// Apparent size of the files.
    pub bytes: u64,
    /// Allocated size of every entry.
    pub allocated: u64,
}

impl Counts {
    pub fn add(&mut self, m: &Meta) {
        self.entries += 1;
        match m.kind {
            Kind::File => {
                self.files += 1;
                self.bytes += m.size;
            }
            Kind::Dir => self.dirs += 1,
            Kind::Symlink => self.symlinks += 1,
            Kind::Other => self.other += 1,
        }
        self.allocated += m.allocated;
    }

    pub fn merge(&mut self, o: &Counts) {
        self.entries += o.entries;
        self.files += o.files;
        self.dirs += o.dirs;
        self.symlinks += o.symlinks;
        self.other += o.other;
        self.bytes += o.bytes;
        self.allocated += o.allocated;
    }
}

impl Batch {
    pub fn path(&self, r: &Row) -> &[u8] {
        &self.bytes[r.path.0 as usize..r.path.1 as usize]
    }
    pub fn name(&self, r: &Row) -> &[u8] {
        &self.bytes[r.name_start as usize..r.path.1 as usize]
    }
    pub(crate) fn push(&mut self, dir: &[u8], name: &[u8], parent: Option<u64>, depth: u32, meta: Meta) -> &Row {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(dir);
        if !dir.is_empty() {
            self.bytes.push(b'/');
        }
        let name_start = self.bytes.len();
        self.bytes.extend_from_slice(name);
        let end = self.bytes.len();
        let key = path_key(&self.bytes[start..end]);
        self.rows.push(Row {
            path: (start as u32, end as u32),
            name_start: name_start as u32,
            key,
            parent,
            depth,
            meta,
        });
        self.rows.last().expect("just pushed")
    }
}

/// What the walk counts, shared by its threads (touched once per directory).
#[derive(Debug, Default)]
pub struct WalkStats {
    /// Thread-seconds in getdents and opening directories, in ns.
    pub walk_ns: AtomicU64,
    /// Thread-seconds in statx, in ns.
    pub stat_ns: AtomicU64,
    /// Thread-seconds blocked on a full channel (the database is behind), in ns.
    pub blocked_ns: AtomicU64,
    pub dirs_read: AtomicU64,
    /// Directories that could not be opened or read (EACCES, EPERM): their entries are unknown.
    pub denied: AtomicU64,
    /// Entries gone between getdents and statx/open.
    pub vanished: AtomicU64,
    pub errors: AtomicU64,
    pub denied_paths: Mutex<Vec<Vec<u8>>>,
    pub first_error: Mutex<Option<String>>,
    /// The writer failed: stop walking.
    pub stop: AtomicBool,
    /// The tree's shape, one part per walk thread (None: not asked for).
    pub inventory: Option<Vec<Mutex<Inventory>>>,
    /// Filter rules: what they exclude is neither indexed nor entered.
    pub filter: Option<Arc<crate::engine::filter::Filter>>,
    /// Entries the filter left out (a directory counts once).
    pub excluded: AtomicU64,
    /// No index to write: entries are counted into each batch's `counted`, not sent as
    /// rows (no path joined, hashed or copied per entry: ~5% of a warm scan's CPU).
    pub count_only: bool,
}

impl WalkStats {
    pub fn new(threads: usize, inventory: bool) -> WalkStats {
        let parts = inventory.then(|| (0..threads.max(1)).map(|_| Mutex::new(Inventory::empty())).collect());
        WalkStats { inventory: parts, ..Default::default() }
    }

    /// Add to this thread's part of the inventory, if one is kept.
    fn inventory(&self, f: impl FnOnce(&mut Inventory)) {
        if let Some(parts) = &self.inventory {
            let me = rayon::current_thread_index().unwrap_or(0) % parts.len();
            f(&mut parts[me].lock().unwrap_or_else(|p| p.into_inner()));
        }
    }

    /// The whole inventory (after the walk).
    pub fn take_inventory(&mut self) -> Option<Inventory> {
        self.inventory.take().map(|parts| {
            let mut all = Inventory::empty();
            for p in parts {
                all.merge(&p.into_inner().unwrap_or_else(|p| p.into_inner()));
            }
            all.vanished = self.vanished.load(Ordering::Relaxed);
            all
        })
    }

    pub(crate) fn denied(&self, path: &[u8], depth: u32, name_len: Option<usize>) {
        self.denied.fetch_add(1, Ordering::Relaxed);
        self.inventory(|inv| {
            inv.unreadable_dirs += 1;
            inv.add_dir(depth as u64, name_len, 0, 0);
        });
        let mut l = self.denied_paths.lock().unwrap_or_else(|p| p.into_inner());
        l.push(path.to_vec()); // all kept: the writer must not delete what it could not see
    }
    pub(crate) fn error(&self, what: &[u8], e: Errno) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut f = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
        if f.is_none() {
            *f = Some(format!("{}: {e}", String::from_utf8_lossy(what)));
        }
    }
}

/// Entries the walk leaves out: the index's own files when it lives inside the tree
/// (else every rescan would find them changed).
#[derive(Debug, Clone)]
pub struct Skip {
    /// Directory (relative path, as indexed) holding them.
    pub dir: Vec<u8>,
    pub names: Vec<Vec<u8>>,
}

/// A directory to read: opened by its own task (so a huge directory does not hold a
/// descriptor for every subdirectory waiting in the queue).
struct Task {
    parent: Arc<OwnedFd>,
    name: CString,
    path: Vec<u8>,
    key: u64,
    depth: u32,
}

pub(crate) fn meta_of(st: &rustix::fs::Statx) -> Meta {
    Meta {
        kind: Kind::from_mode(st.stx_mode as u32),
        size: st.stx_size,
        mtime_ns: st.stx_mtime.tv_sec * 1_000_000_000 + st.stx_mtime.tv_nsec as i64,
        mode: st.stx_mode as u32 & 0o7777,
        inode: st.stx_ino,
        allocated: st.stx_blocks * 512,
    }
}

fn elapsed_ns(t: Instant) -> u64 {
    t.elapsed().as_nanos() as u64
}

/// Walk the tree below `root` on `threads` threads, sending rows (the root first) to
/// `tx` in batches of at most `flush` rows. Stops early on a signal or `stats.stop`.
#[allow(clippy::too_many_arguments)]
pub fn produce(
    root: OwnedFd,
    threads: usize,
    gate: Option<&Gate>,
    flush: usize,
    skip: Option<&Skip>,
    tx: &SyncSender<Batch>,
    stats: &WalkStats,
) {
    let send = |b: Batch| {
        let t = Instant::now();
        if tx.send(b).is_err() {
            stats.stop.store(true, Ordering::Relaxed); // the writer is gone
        }
        stats.blocked_ns.fetch_add(elapsed_ns(t), Ordering::Relaxed);
    };
    let st = match statx(&root, c"", AtFlags::EMPTY_PATH, FIELDS) {
        Ok(st) => st,
        Err(e) => return stats.error(b".", e),
    };
    let mut first = Batch::default();
    let root_key = if stats.count_only {
        first.counted.add(&meta_of(&st));
        0
    } else {
        first.push(b"", b"", None, 0, meta_of(&st)).key
    };
    send(first);
    // The root task reads the root through a fresh descriptor of ".".
    let root = Arc::new(root);
    let task = Task { parent: root, name: c".".into(), path: Vec::new(), key: root_key, depth: 0 };
    let threads = crate::engine::inflight::walk_threads(gate, threads);
    walk::par_tasks(threads, vec![task], |t: Task, spawn| {
        if stats.stop.load(Ordering::Relaxed) || signals::pending() != 0 {
            return;
        }
        let _pass = crate::engine::inflight::enter_dir(gate);
        let t0 = Instant::now();
        let opened = walk::open_dir_at(t.parent.as_fd(), &t.name);
        let name_len = (t.depth > 0).then_some(t.name.as_bytes().len());
        let mut sub = |fd: &Arc<OwnedFd>, name: CString, path: Vec<u8>, key: u64, depth: u32| {
            spawn(Task { parent: Arc::clone(fd), name, path, key, depth })
        };
        dir_rows(opened, t0, &t.path, t.key, t.depth, name_len, flush, skip, &send, stats, &mut sub, gate);
    });
}

/// A directory that could not be opened or read: denied, vanished or an error.
fn unreadable(stats: &WalkStats, path: &[u8], depth: u32, name_len: Option<usize>, e: Errno, t0: Instant) {
    stats.walk_ns.fetch_add(elapsed_ns(t0), Ordering::Relaxed);
    match e {
        Errno::ACCESS | Errno::PERM => stats.denied(path, depth, name_len),
        Errno::NOENT | Errno::NOTDIR | Errno::LOOP => {
            stats.vanished.fetch_add(1, Ordering::Relaxed);
        }
        e => stats.error(path, e),
    }
}

/// A subdirectory found by [`dir_rows`]: (its directory's fd, name, path, key, depth).
pub(crate) type SubDir<'a> = dyn FnMut(&Arc<OwnedFd>, CString, Vec<u8>, u64, u32) + 'a;

/// One directory's part of the walk, shared by the local producer and the distributed
/// scan: read the directory `opened` (opened at `t0`; `path`, `key`, `depth` as
/// indexed), statx every entry, send its rows in batches of at most `flush`, and call
/// `sub` for each subdirectory (after its row is in a batch).
#[allow(clippy::too_many_arguments)]
pub(crate) fn dir_rows(
    opened: Result<OwnedFd, Errno>,
    t0: Instant,
    path: &[u8],
    key: u64,
    depth: u32,
    name_len: Option<usize>,
    flush: usize,
    skip: Option<&Skip>,
    send: &dyn Fn(Batch),
    stats: &WalkStats,
    sub: &mut SubDir<'_>,
    gate: Option<&Gate>,
) {
    let t_depth = depth;
    let fd = match opened {
        Ok(fd) => Arc::new(fd),
        Err(e) => return unreadable(stats, path, t_depth, name_len, e, t0),
    };
    let skip_here = skip.filter(|s| s.dir == path);
    // statx every entry (not those --skip names here): chunks already read go to other
    // threads while getdents goes on (lookups take the directory's lock shared, so they
    // run in parallel); what is kept of each (Meta and nlink) is small, and the rows are
    // made in order afterwards.
    // Thread-time in statx, taken per part: a clock read around every statx was 2–3% of
    // a warm scan's CPU (two vDSO calls a file), more than the figure is worth.
    let stat_ns = AtomicU64::new(0);
    let stat_one = |name: &std::ffi::CStr| {
        if skip_here.is_some_and(|s| s.names.iter().any(|n| n == name.to_bytes())) {
            return None;
        }
        Some(statx(fd.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW, FIELDS).map(|st| (meta_of(&st), st.stx_nlink)))
    };
    let opened_ns = elapsed_ns(t0);
    // With an in-flight gate, each part's statx calls go in batches on as many threads as
    // it lets through (on a share each is a round trip); the part's wall time counts
    // once, as the time its statx calls took. Without one, on this thread.
    let read = walk::read_dir_parts(fd.as_fd(), CHUNK, |part| {
        let t1 = Instant::now();
        let rs = crate::engine::inflight::map_range(gate, part.len(), |i| stat_one(part.name(i)));
        stat_ns.fetch_add(elapsed_ns(t1), Ordering::Relaxed);
        rs
    });
    let (parts, read_ns) = match read {
        Ok(x) => x,
        Err(e) => return unreadable(stats, path, t_depth, name_len, e, t0),
    };
    // Walk time: opening and getdents (the statx calls are stat time).
    stats.walk_ns.fetch_add(opened_ns + read_ns, Ordering::Relaxed);
    stats.dirs_read.fetch_add(1, Ordering::Relaxed);
    let depth = t_depth + 1;
    let mut batch = Batch::default();
    let (mut files, mut subdirs) = (0, 0);
    let entries = parts.iter().flat_map(|(names, rs)| rs.iter().enumerate().map(move |(i, r)| (names.name(i), r)));
    for (name, r) in entries.filter_map(|(n, r)| Some((n, r.as_ref()?))) {
        let (meta, nlink) = match r {
            Ok(x) => *x,
            Err(Errno::NOENT) => {
                stats.vanished.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            Err(err) => {
                stats.error(&crate::engine::walker::join(path, name.to_bytes()), *err);
                continue;
            }
        };
        if let Some(f) = &stats.filter
            && f.excluded(&crate::engine::walker::join(path, name.to_bytes()), meta.kind == Kind::Dir)
        {
            stats.excluded.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let name_len = name.to_bytes().len();
        match meta.kind {
            Kind::File => {
                files += 1;
                let nlink = nlink as u64;
                stats.inventory(|inv| inv.add_file(depth as u64, name_len, meta.size, meta.allocated, nlink));
            }
            Kind::Dir => subdirs += 1,
            k => stats.inventory(|inv| inv.add_special(k, depth as u64, name_len)),
        }
        if stats.count_only {
            batch.counted.add(&meta);
            if meta.kind == Kind::Dir {
                sub(&fd, name.to_owned(), crate::engine::walker::join(path, name.to_bytes()), 0, depth);
            }
            continue;
        }
        let row = *batch.push(path, name.to_bytes(), Some(key), depth, meta);
        if meta.kind == Kind::Dir {
            sub(&fd, name.to_owned(), batch.path(&row).to_vec(), row.key, depth);
        }
        if batch.rows.len() >= flush {
            send(std::mem::take(&mut batch));
        }
    }
    stats.stat_ns.fetch_add(stat_ns.into_inner(), Ordering::Relaxed);
    stats.inventory(|inv| inv.add_dir(t_depth as u64, name_len, files, subdirs));
    if !batch.rows.is_empty() || batch.counted.entries > 0 {
        send(batch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_parents() {
        assert_ne!(path_key(b"a"), path_key(b"b"));
        assert_eq!(path_key(b"a/b"), path_key(b"a/b"));
        assert_eq!(parent_path(b"a/b/c"), Some(&b"a/b"[..]));
        assert_eq!(parent_path(b"a"), Some(&b""[..]));
        assert_eq!(parent_path(b""), None);
    }

    #[test]
    fn batch_paths() {
        let m = Meta { kind: Kind::File, size: 1, mtime_ns: 0, mode: 0o644, inode: 1, allocated: 0 };
        let mut b = Batch::default();
        let k = b.push(b"", b"top", None, 1, m).key;
        let r = *b.push(b"top", b"x", Some(k), 2, m);
        assert_eq!(b.path(&r), b"top/x");
        assert_eq!(b.name(&r), b"x");
        assert_eq!(r.parent, Some(path_key(b"top")));
        assert_eq!(r.key, path_key(b"top/x"));
    }
}
