//! `manyfiles scan` under MPI: every rank walks and statx'es part of the same tree on the
//! distributed walk; the index has one writer, on rank 0.
//!
//! - Every rank reads directories with the local scan's own code
//!   (`engine::scan::producer::dir_rows`): the same rows, keys and inventory.
//! - Rank 0 runs the local engine's writer ([`Writer`]: diff against the index map,
//!   batched transactions) on a thread of its own (its main thread makes the MPI calls)
//!   and feeds it its own rows while it walks. The other ranks spool their rows to an
//!   unlinked temporary file while they walk and send it to rank 0 afterwards, in
//!   messages of a few MiB: memory stays bounded on every rank, and the database — one
//!   writer for SQLite anyway — works while the walk runs. PostgreSQL goes through
//!   rank 0 too (one connection, binary COPY as in the local engine): ids of new rows and
//!   their parents' ids come from rank 0's index map, so rows cannot be written by
//!   several connections without a round trip per directory.
//! - A directory's row is made by the rank that listed its parent, its children's rows
//!   by the rank that read it: rows reach the writer out of order. [`Orderer`] holds a
//!   row back until its parent's row has passed (the local writer relies on parents
//!   first), so the index is the one a single process writes.
//! - Counts, denied directories (never deleted below) and the inventory are gathered on
//!   every rank; a writer failure on rank 0 stops every rank with its reason.

use crate::engine::scan::backend::IndexBackend;
use crate::engine::scan::backend::Meta;
use crate::engine::scan::producer::{self, Batch, Counts, WalkStats};
use crate::engine::scan::{
    Phases, ScanConfig, ScanReport, Walked, Writer, finish_writer, index_files_inside, load_index, open_root, report,
    save,
};
use crate::engine::timing::Timing;
use crate::engine::walker::{MpiWalk, Walker, open_below};
use crate::engine::walker::{RankCounts, WalkTotals, kind_byte, kind_of};
use crate::error::{Error, Result};
use crate::fs::walk::Kind;
use crate::measure::provenance::Provenance;
use crate::ranks;
use crate::signals;
use crate::tree::inventory::Inventory;
use rustix::fd::{AsFd, OwnedFd};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::Instant;

/// Tag of the spooled rows sent to rank 0.
const ROWS_TAG: i32 = 7101;
/// Bytes of rows per message to rank 0.
const MESSAGE: usize = 4 << 20;

/// A batch as bytes: per row path, name length, parent, depth and metadata.
fn encode_batch(b: &Batch, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0u8; 4]); // frame length, below
    for r in &b.rows {
        let (path, name) = (b.path(r), b.name(r));
        out.extend_from_slice(&(path.len() as u32).to_le_bytes());
        out.extend_from_slice(path);
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.push(r.parent.is_some() as u8);
        out.extend_from_slice(&r.parent.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&r.depth.to_le_bytes());
        let m = &r.meta;
        out.push(kind_byte(m.kind));
        out.extend_from_slice(&m.size.to_le_bytes());
        out.extend_from_slice(&m.mtime_ns.to_le_bytes());
        out.extend_from_slice(&m.mode.to_le_bytes());
        out.extend_from_slice(&m.inode.to_le_bytes());
        out.extend_from_slice(&m.allocated.to_le_bytes());
    }
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
}

struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().expect("4 bytes"))
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().expect("8 bytes"))
    }
}

/// The batches of frames made by [`encode_batch`], back to back.
fn decode_batches(bytes: &[u8]) -> Vec<Batch> {
    let mut out = Vec::new();
    let mut c = Cursor(bytes);
    while c.0.len() >= 4 {
        let n = c.u32() as usize;
        let mut f = Cursor(c.take(n));
        let mut b = Batch::default();
        while !f.0.is_empty() {
            let pl = f.u32() as usize;
            let path = f.take(pl);
            let nl = f.u32() as usize;
            let has_parent = f.take(1)[0] == 1;
            let parent = f.u64();
            let depth = f.u32();
            let kind = kind_of(f.take(1)[0]);
            let meta = Meta {
                kind,
                size: f.u64(),
                mtime_ns: f.u64() as i64,
                mode: f.u32(),
                inode: f.u64(),
                allocated: f.u64(),
            };
            let dir_len = if pl == nl { 0 } else { pl - nl - 1 };
            b.push(&path[..dir_len], &path[pl - nl..], has_parent.then_some(parent), depth, meta);
        }
        out.push(b);
    }
    out
}

/// Puts rows in parent-first order: a row waits until its parent's row has passed.
#[derive(Default)]
struct Orderer {
    passed: HashSet<u64>,
    waiting: HashMap<u64, Batch>,
}

impl Orderer {
    fn feed(&mut self, b: Batch) -> Batch {
        let mut out = Batch::default();
        let mut ready: Vec<Batch> = vec![b];
        while let Some(b) = ready.pop() {
            for r in &b.rows {
                let (path, name) = (b.path(r), b.name(r));
                let dir = &path[..path.len() - name.len() - usize::from(path.len() > name.len())];
                match r.parent {
                    Some(p) if !self.passed.contains(&p) => {
                        self.waiting.entry(p).or_default().push(dir, name, r.parent, r.depth, r.meta);
                    }
                    _ => {
                        out.push(dir, name, r.parent, r.depth, r.meta);
                        if r.meta.kind == Kind::Dir {
                            self.passed.insert(r.key);
                            if let Some(w) = self.waiting.remove(&r.key) {
                                ready.push(w);
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// Rows whose parent never came (a walk cut short): written as they are.
    fn rest(&mut self) -> Vec<Batch> {
        self.waiting.drain().map(|(_, b)| b).collect()
    }
}

/// A work item: the directory's key, depth and relative path.
fn item(key: u64, depth: u32, path: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(12 + path.len());
    v.extend_from_slice(&key.to_le_bytes());
    v.extend_from_slice(&depth.to_le_bytes());
    v.extend_from_slice(path);
    v
}

/// What one rank's walk found, for every rank.
#[derive(Default, Serialize, Deserialize)]
struct RankScan {
    rows: u64,
    walk_ns: u64,
    stat_ns: u64,
    blocked_ns: u64,
    dirs_read: u64,
    denied: u64,
    vanished: u64,
    errors: u64,
    denied_paths: Vec<Vec<u8>>,
    first_error: Option<String>,
    inventory: Option<Inventory>,
    interrupted: i32,
    walk: crate::engine::walker::WalkStats,
    /// Entries the filters left out on this rank.
    #[serde(default)]
    excluded: u64,
}

/// A spool for rows: an unlinked temporary file, or memory where none can be made.
enum Spool {
    File(std::io::BufWriter<std::fs::File>),
    Memory(Vec<u8>),
}

impl Spool {
    fn new() -> Spool {
        use rustix::fs::{Mode, OFlags, openat};
        match openat(
            rustix::fs::CWD,
            std::env::temp_dir(),
            OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        ) {
            Ok(fd) => Spool::File(std::io::BufWriter::new(std::fs::File::from(fd))),
            Err(_) => Spool::Memory(Vec::new()),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Spool::File(f) => f.write_all(bytes),
            Spool::Memory(m) => {
                m.extend_from_slice(bytes);
                Ok(())
            }
        }
    }

    /// Send everything to rank 0 in messages of about [`MESSAGE`] bytes (whole frames),
    /// then an end marker.
    fn send(self) -> std::io::Result<()> {
        let mut all: Box<dyn Read> = match self {
            Spool::File(f) => {
                let mut f = f.into_inner().map_err(|e| e.into_error())?;
                f.rewind()?;
                Box::new(std::io::BufReader::new(f))
            }
            Spool::Memory(m) => Box::new(std::io::Cursor::new(m)),
        };
        let mut msg = vec![1u8];
        let mut len = [0u8; 4];
        loop {
            match all.read_exact(&mut len) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                Err(e) => return Err(e),
            }
            let n = u32::from_le_bytes(len) as usize;
            msg.extend_from_slice(&len);
            let at = msg.len();
            msg.resize(at + n, 0);
            all.read_exact(&mut msg[at..])?;
            if msg.len() >= MESSAGE {
                ranks_send(&msg);
                msg.truncate(1);
            }
        }
        if msg.len() > 1 {
            ranks_send(&msg);
        }
        ranks_send(&[0u8]);
        Ok(())
    }
}

fn ranks_send(b: &[u8]) {
    crate::ranks::send_bytes(0, ROWS_TAG, b)
}

/// A directory's rows go to the consumer in batches of this many (as in the local scan).
const FLUSH: usize = 4096;

/// What the start of a job settles on every rank before the clock runs.
struct Begun {
    root_fd: OwnedFd,
    root: String,
    /// Rank 0's index (None elsewhere, and without --db).
    db: Option<Box<dyn IndexBackend>>,
    provenance: Provenance,
    timing: Timing,
    start: Instant,
}

/// The root opened and checked to be the same directory on every rank, rank 0's index
/// opened, --cold eviction on every rank; then all start the clock together.
fn begin(cfg: &ScanConfig) -> Result<Begun> {
    let (root_fd, root) = ranks::agree(open_root(&cfg.root))?;
    ranks::same_dirs(
        &[rustix::fs::fstat(&root_fd).map_or(0, |st| st.st_ino)],
        "PATH",
        "not the same directory on every rank: scan under MPI needs a file system every rank sees",
    )?;
    ranks::agree(cfg.check_timing())?;
    let db = ranks::agree(match (&cfg.db, ranks::is_root()) {
        (Some(u), true) => u.open().map(Some),
        _ => Ok(None),
    })?;
    let provenance = Provenance::collect(cfg.command_line.clone());
    let timing = ranks::agree(Timing::start(cfg.cold, &[std::path::Path::new(&root)], cfg.threads))?;
    ranks::barrier();
    Ok(Begun { root_fd, root, db, provenance, timing, start: Instant::now() })
}

/// Rank 0's end of the rows: the index's writer (None without --db), the totals, and
/// the writer's failure.
struct Sink<'w> {
    writer: Option<(Writer<'w>, usize)>,
    totals: Counts,
    failure: Option<String>,
}

impl Sink<'_> {
    /// One batch (parents first) counted and handed to the writer, which writes once it
    /// holds a batch's rows (false: the writer failed, and the walk stops).
    fn take(&mut self, b: Batch, stats: &WalkStats) -> bool {
        super::add_batch(&mut self.totals, &b);
        let Some((w, batch_rows)) = self.writer.as_mut() else { return true };
        w.pending_rows += b.rows.len();
        w.pending.push(b);
        if w.pending_rows >= *batch_rows
            && let Err(e) = w.flush(None)
        {
            self.failure = Some(e);
            stats.stop.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Rank 0's consumer: every batch from the channel, in parent-first order, into the
    /// writer (after a failure, drained and dropped).
    fn consume(&mut self, rx: Receiver<Batch>, stats: &WalkStats) {
        let mut order = Orderer::default();
        let mut wait = 0.0;
        let mut ok = true;
        loop {
            let t = Instant::now();
            let Ok(b) = rx.recv() else { break };
            wait += t.elapsed().as_secs_f64();
            if ok {
                ok = self.take(order.feed(b), stats);
            }
        }
        for b in order.rest() {
            if ok {
                ok = self.take(b, stats);
            }
        }
        if let Some((w, _)) = self.writer.as_mut() {
            w.phases.writer_wait_s = wait;
        }
    }
}

/// The other ranks' consumer: every batch from the channel into a spool.
fn spool_rows(rx: Receiver<Batch>) -> Spool {
    let mut spool = Spool::new();
    let mut buf = Vec::new();
    let mut err = None;
    for b in rx {
        buf.clear();
        encode_batch(&b, &mut buf);
        if err.is_none()
            && let Err(e) = spool.write(&buf)
        {
            err = Some(e);
        }
    }
    if let Some(e) = err {
        // Nothing can be sent that was not kept: say so, send what was.
        eprintln!("manyfiles: rank {}: spooling rows: {e}", ranks::rank());
    }
    spool
}

/// On rank 0: the other ranks' rows, rank by rank, into the writer's channel.
fn receive_rows(tx: &SyncSender<Batch>) {
    for r in 1..ranks::size() {
        loop {
            let m = crate::ranks::recv_bytes(r, ROWS_TAG);
            if m.first() != Some(&1) {
                break;
            }
            for b in decode_batches(&m[1..]) {
                let _ = tx.send(b);
            }
        }
    }
}

/// On rank 0: the root's own row sent, and the walk's first item (none if the root
/// cannot be statx'ed).
fn root_item(root_fd: &OwnedFd, send: &dyn Fn(Batch), stats: &WalkStats) -> Vec<Vec<u8>> {
    use rustix::fs::{AtFlags, statx};
    match statx(root_fd, c"", AtFlags::EMPTY_PATH, producer::FIELDS) {
        Ok(st) => {
            let mut first = Batch::default();
            let key = first.push(b"", b"", None, 0, producer::meta_of(&st)).key;
            send(first);
            vec![item(key, 0, b"")]
        }
        Err(e) => {
            stats.error(b".", e);
            Vec::new()
        }
    }
}

/// One walker item: a directory read with the local scan's code, its rows sent, its
/// subdirectories handed to any rank.
fn read_dir_item(
    root_fd: &OwnedFd,
    it: &[u8],
    skip: Option<&producer::Skip>,
    send: &dyn Fn(Batch),
    stats: &WalkStats,
    spawn: &mut dyn FnMut(Vec<u8>),
) {
    if stats.stop.load(Ordering::Relaxed) || signals::pending() != 0 {
        return;
    }
    let key = u64::from_le_bytes(it[..8].try_into().expect("8 bytes"));
    let depth = u32::from_le_bytes(it[8..12].try_into().expect("4 bytes"));
    let path = &it[12..];
    let t0 = Instant::now();
    let opened = open_below(root_fd.as_fd(), path);
    let name_len = (depth > 0).then(|| crate::engine::walker::split_last(path).1.len());
    let mut sub = |_: &std::sync::Arc<OwnedFd>, _: std::ffi::CString, p: Vec<u8>, k: u64, d: u32| spawn(item(k, d, &p));
    producer::dir_rows(opened, t0, path, key, depth, name_len, FLUSH, skip, send, stats, &mut sub, None);
}

/// The walk on every rank, with the consumer on a thread of its own (rank 0: the
/// writer; elsewhere the spool, sent to rank 0 after the walk). Returns the walker's
/// counts and a failure to send the spool.
fn walk(
    cfg: &ScanConfig,
    root_fd: &OwnedFd,
    skip: Option<&producer::Skip>,
    stats: &WalkStats,
    rows: &AtomicU64,
    sink: &mut Sink,
) -> (crate::engine::walker::WalkStats, Option<String>) {
    let me_root = ranks::is_root();
    let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(32);
    std::thread::scope(|s| {
        let consumer = s.spawn(move || -> Option<Spool> {
            if me_root {
                sink.consume(rx, stats);
                None
            } else {
                Some(spool_rows(rx))
            }
        });
        let send = |b: Batch| {
            rows.fetch_add(b.rows.len() as u64, Ordering::Relaxed);
            let t = Instant::now();
            if tx.send(b).is_err() {
                stats.stop.store(true, Ordering::Relaxed);
            }
            stats.blocked_ns.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        };
        let roots = if me_root { root_item(root_fd, &send, stats) } else { Vec::new() };
        let work = |it: &[u8], spawn: &mut dyn FnMut(Vec<u8>)| read_dir_item(root_fd, it, skip, &send, stats, spawn);
        let walked = MpiWalk { threads: cfg.threads }.run(roots, &work);
        if me_root {
            receive_rows(&tx);
        }
        drop(tx);
        let spool = consumer.join().expect("the row consumer does not panic");
        let spool_failure = match spool.map(Spool::send) {
            Some(Err(e)) => Some(format!("rank {}: sending rows to rank 0: {e}", ranks::rank())),
            _ => None,
        };
        (walked, spool_failure)
    })
}

/// What this rank's walk found.
fn rank_scan(stats: &mut WalkStats, rows: &AtomicU64, walk: crate::engine::walker::WalkStats) -> RankScan {
    let inventory = stats.take_inventory();
    let denied_paths = std::mem::take(&mut *stats.denied_paths.lock().unwrap_or_else(|p| p.into_inner()));
    let first_error = stats.first_error.lock().unwrap_or_else(|p| p.into_inner()).take();
    RankScan {
        rows: rows.load(Ordering::Relaxed),
        walk_ns: stats.walk_ns.load(Ordering::Relaxed),
        stat_ns: stats.stat_ns.load(Ordering::Relaxed),
        blocked_ns: stats.blocked_ns.load(Ordering::Relaxed),
        dirs_read: stats.dirs_read.load(Ordering::Relaxed),
        denied: stats.denied.load(Ordering::Relaxed),
        vanished: stats.vanished.load(Ordering::Relaxed),
        errors: stats.errors.load(Ordering::Relaxed),
        excluded: stats.excluded.load(Ordering::Relaxed),
        denied_paths,
        first_error,
        inventory,
        interrupted: signals::pending(),
        walk,
    }
}

/// Every rank's walk, on every rank, as one.
fn walked(all: &[RankScan]) -> Walked {
    let sum = |f: fn(&RankScan) -> u64| all.iter().map(f).sum::<u64>();
    Walked {
        walk_ns: sum(|r| r.walk_ns),
        stat_ns: sum(|r| r.stat_ns),
        blocked_ns: sum(|r| r.blocked_ns),
        denied: sum(|r| r.denied),
        vanished: sum(|r| r.vanished),
        errors: sum(|r| r.errors),
        first_error: all.iter().enumerate().find_map(|(i, r)| r.first_error.as_ref().map(|e| format!("rank {i}: {e}"))),
        unread: all.iter().flat_map(|r| r.denied_paths.iter().cloned()).collect(),
        interrupted: all.iter().map(|r| r.interrupted).find(|&s| s != 0).unwrap_or(0),
    }
}

/// Every rank's entries and walker counts, for the ranks' table.
fn rank_counts(all: &[RankScan]) -> RankCounts {
    let walks = WalkTotals {
        items: all.iter().map(|r| r.walk.items).collect(),
        given: all.iter().map(|r| r.walk.given).collect(),
        received: all.iter().map(|r| r.walk.received).collect(),
        requests: all.iter().map(|r| r.walk.requests).collect(),
    };
    RankCounts::new("entries", all.iter().map(|r| r.rows).collect(), walks)
}

/// Every rank's inventory merged (None when no rank took one).
fn merged_inventory(all: &[RankScan]) -> Option<Inventory> {
    let mut inv: Option<Inventory> = None;
    for r in all {
        if let Some(i) = &r.inventory {
            inv.get_or_insert_with(Inventory::empty).merge(i);
        }
    }
    inv
}

/// Every rank scans part of the tree; rank 0 writes the index. Every rank returns the
/// job's report (rank 0 prints it).
pub fn run(cfg: &ScanConfig) -> Result<ScanReport> {
    signals::install();
    crate::fs::walk::raise_fd_limit();
    let Begun { root_fd, root, mut db, provenance, timing, start } = begin(cfg)?;
    let me_root = ranks::is_root();
    let mut phases = Phases::default();
    let index = ranks::agree(load_index(db.as_deref_mut(), &root, &mut phases))?;
    let indexed_before = index.indexed() as u64;
    let skip = cfg.db.as_ref().and_then(|d| index_files_inside(d, &root));
    let mut stats = WalkStats::new(cfg.threads, cfg.inventory.is_some());
    stats.filter = cfg.filter.clone();
    let rows = AtomicU64::new(0);
    let writer = db.as_deref_mut().map(|db| {
        let batch_rows = db.batch_rows();
        (Writer { db, index, pending: Vec::new(), pending_rows: 0, phases: Phases::default() }, batch_rows)
    });
    let mut sink = Sink { writer, totals: Counts::default(), failure: None };
    let (walk_stats, spool_failure) = walk(cfg, &root_fd, skip.as_ref(), &stats, &rows, &mut sink);
    // Every rank's counts on every rank.
    let mine = rank_scan(&mut stats, &rows, walk_stats);
    let all: Vec<RankScan> = ranks::all_gather(&serde_json::to_vec(&mine).expect("serialisable"))
        .iter()
        .map(|b| serde_json::from_slice(b).expect("every rank runs the same manyfiles"))
        .collect();
    let walked = walked(&all);
    let Sink { writer, totals, mut failure } = sink;
    let complete =
        failure.is_none() && spool_failure.is_none() && walked.interrupted == 0 && !stats.stop.load(Ordering::Relaxed);
    let diff = finish_writer(writer.map(|(w, _)| w), complete, &walked.unread, &mut failure, &mut phases);
    let failed = failure
        .map(|e| Error::failed(format!("writing the index failed after {} entries: {e}", totals.entries)))
        .or(spool_failure.map(Error::failed));
    ranks::agree(match failed {
        Some(e) => Err(e),
        None => Ok(()),
    })?;
    let db = db.as_ref().map(|d| d.describe()).or(cfg.db.as_ref().map(|_| "rank 0's index".into()));
    let threads = cfg.threads * ranks::size();
    let returned_s = start.elapsed().as_secs_f64();
    let mut report = report(root, db, threads, start, phases, &totals, indexed_before, diff, walked, provenance);
    report.ranks = Some(rank_counts(&all));
    report.excluded = cfg.filter.as_ref().map(|_| all.iter().map(|r| r.excluded).sum());
    report.timing = timing;
    super::end_timing(cfg, &mut report, returned_s, me_root);
    if me_root {
        save(cfg, &mut report, merged_inventory(&all))?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::scan::producer::path_key;

    fn meta(kind: Kind) -> Meta {
        Meta { kind, size: 3, mtime_ns: -5, mode: 0o644, inode: 9, allocated: 4096 }
    }

    #[test]
    fn batches_survive_the_wire() {
        let mut b = Batch::default();
        let root = b.push(b"", b"", None, 0, meta(Kind::Dir)).key;
        let a = b.push(b"", b"a", Some(root), 1, meta(Kind::Dir)).key;
        b.push(b"a", b"\xffx", Some(a), 2, meta(Kind::File));
        let mut bytes = Vec::new();
        encode_batch(&b, &mut bytes);
        encode_batch(&b, &mut bytes);
        let got = decode_batches(&bytes);
        assert_eq!(got.len(), 2);
        for g in got {
            assert_eq!(g.rows.len(), 3);
            for (x, y) in g.rows.iter().zip(&b.rows) {
                assert_eq!(
                    (g.path(x), g.name(x), x.key, x.parent, x.depth, x.meta),
                    (b.path(y), b.name(y), y.key, y.parent, y.depth, y.meta)
                );
            }
        }
    }

    #[test]
    fn orderer_puts_parents_first() {
        let mut o = Orderer::default();
        let mut late = Batch::default();
        let a = path_key(b"a");
        let ab = path_key(b"a/b");
        late.push(b"a/b", b"f", Some(ab), 3, meta(Kind::File));
        assert!(o.feed(late).rows.is_empty(), "waits for a/b");
        let mut mid = Batch::default();
        mid.push(b"a", b"b", Some(a), 2, meta(Kind::Dir));
        assert!(o.feed(mid).rows.is_empty(), "waits for a");
        let mut first = Batch::default();
        let root = first.push(b"", b"", None, 0, meta(Kind::Dir)).key;
        first.push(b"", b"a", Some(root), 1, meta(Kind::Dir));
        let out = o.feed(first);
        let paths: Vec<&[u8]> = out.rows.iter().map(|r| out.path(r)).collect();
        assert_eq!(paths, vec![&b""[..], b"a", b"a/b", b"a/b/f"]);
        assert!(o.rest().is_empty());
    }
}
