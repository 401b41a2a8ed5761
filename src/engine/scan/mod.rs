//! `scan`: walk a tree, statx every entry and index the metadata into SQLite or
//! PostgreSQL; a second scan of the same index writes only what changed.
//!
//! Threads: the walk runs on the shared walker's pool (one task per directory) and sends
//! row batches over a bounded channel to one writer (the calling thread), which diffs
//! them against the index map ([`diff::Index`]) and writes batched transactions through
//! an [`IndexBackend`]. Phases are timed apart: reading the index, walk (getdents +
//! open), statx, diff, database write, commit, and the time each side waited for the
//! other, so the report says whether the storage or the database bounds the scan.

pub mod backend;
pub mod diff;
pub mod mpi;
pub mod postgres;
pub mod producer;
pub mod sqlite;

pub use backend::IndexBackend;

use crate::engine::timing::{self, Timing};
use crate::error::{Error, Result};
use crate::fs::walk;
use crate::measure::provenance::Provenance;
use crate::signals;
use crate::tree::inventory::Inventory;
use crate::units::{fmt_rate, fmt_secs, fmt_size};
use backend::Changes;
use diff::{DiffCounts, Index};
use producer::{Batch, Counts, WalkStats, path_key};
use rustix::fd::OwnedFd;
use serde::Serialize;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Where the index goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbUrl {
    Sqlite(PathBuf),
    Postgres(String),
}

impl DbUrl {
    /// `sqlite:FILE`, `postgres://…` / `postgresql://…`, or a plain file name (SQLite).
    pub fn parse(s: &str) -> std::result::Result<DbUrl, String> {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(DbUrl::Postgres(s.to_string()));
        }
        let file = s.strip_prefix("sqlite:").unwrap_or(s);
        if file.is_empty() {
            return Err("expected sqlite:FILE or postgres://USER@HOST/DB".into());
        }
        if file.contains("://") {
            return Err(format!("'{s}': unknown database (expected sqlite:FILE or postgres://USER@HOST/DB)"));
        }
        Ok(DbUrl::Sqlite(PathBuf::from(file)))
    }

    /// Open the index: every connection or schema problem is bad input for `--db`,
    /// found before any walking.
    pub fn open(&self) -> Result<Box<dyn IndexBackend>> {
        let bad = |r: String| Error::bad("--db", r);
        match self {
            DbUrl::Sqlite(p) => {
                if p.is_dir() {
                    return Err(bad(format!("{} is a directory", p.display())));
                }
                let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
                if !dir.is_dir() {
                    return Err(bad(format!("directory {} does not exist", dir.display())));
                }
                let db = sqlite::Sqlite::open(p).map_err(|e| bad(format!("{}: {e}", p.display())))?;
                Ok(Box::new(db))
            }
            DbUrl::Postgres(u) => Ok(Box::new(postgres::Postgres::connect(u).map_err(bad)?)),
        }
    }
}

/// Everything a scan needs; no CLI types.
#[derive(Debug, Clone)]
pub struct ScanConfig {
    pub root: PathBuf,
    /// None: walk and statx only (what the storage costs without a database).
    pub db: Option<DbUrl>,
    /// Write the tree's shape (an inventory) here, from the same walk.
    pub inventory: Option<PathBuf>,
    pub threads: usize,
    /// Some(max): the statx calls' in-flight starts at `threads` and is moved up to `max`
    /// while the scan runs (`engine::inflight`); None: `threads`, fixed.
    pub in_flight_max: Option<usize>,
    pub json: Option<PathBuf>,
    pub command_line: Vec<String>,
    /// Evict the tree from the caches before the clock starts (`--cold`).
    pub cold: bool,
    /// End the time with a syncfs of the SQLite index's file system (`--durable`).
    pub durable: bool,
    /// Filter rules: what they exclude is neither indexed nor entered (a rescan with other
    /// rules drops the rows of what is now excluded).
    pub filter: Option<std::sync::Arc<crate::engine::filter::Filter>>,
}

impl ScanConfig {
    /// `--cold` and `--durable` possible here? Bad input (exit 2) before anything is
    /// opened or written: a tree on a memory file system cannot be made cold; a scan
    /// without an index writes nothing to make durable, and a PostgreSQL index is made
    /// durable by its server's commit, not by a syncfs here.
    pub fn check_timing(&self) -> Result<()> {
        if self.durable {
            match &self.db {
                None => return Err(Error::bad("--durable", "scan without --db writes nothing to make durable")),
                Some(DbUrl::Postgres(_)) => {
                    return Err(Error::bad(
                        "--durable",
                        "a PostgreSQL index is made durable by the server's commit, not by a syncfs here (give sqlite:FILE)",
                    ));
                }
                Some(DbUrl::Sqlite(_)) => {}
            }
        }
        if self.cold {
            timing::check_cold(&[("PATH", &self.root)])?;
        }
        Ok(())
    }

    /// The directory holding the SQLite index, opened for `--durable`'s syncfs.
    pub(crate) fn durable_dir(&self) -> Option<(String, std::io::Result<OwnedFd>)> {
        let Some(DbUrl::Sqlite(p)) = self.db.as_ref().filter(|_| self.durable) else { return None };
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        Some((p.display().to_string(), walk::open_root(dir).map_err(std::io::Error::from)))
    }
}

/// End a scan's time: with `--durable` (and a complete walk) a syncfs of the index's file
/// system (on rank 0, which writes it), inside `elapsed_s`.
pub(crate) fn end_timing(cfg: &ScanConfig, report: &mut ScanReport, returned_s: f64, writes: bool) {
    let durable = cfg.durable && report.interrupted_by.is_none();
    let dir = cfg.durable_dir().filter(|_| writes && durable);
    let fds: Vec<(String, rustix::fd::BorrowedFd<'_>)> = match &dir {
        Some((shown, Ok(fd))) => vec![(shown.clone(), rustix::fd::AsFd::as_fd(fd))],
        _ => Vec::new(),
    };
    report.elapsed_s = report.timing.end(returned_s, durable, &fds);
    if let Some((shown, Err(e))) = &dir {
        report.timing.sync_error = Some(format!("cannot open the directory of {shown} to sync it: {e}"));
    }
}

/// Phase times. Walk, stat and blocked are summed over the walk threads
/// (thread-seconds); the others are the writer's wall time.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Phases {
    pub load_index_s: f64,
    pub walk_thread_s: f64,
    pub stat_thread_s: f64,
    /// Walk threads blocked on a full channel: the database is behind.
    pub walk_blocked_thread_s: f64,
    /// Writer waiting for rows: the walk (storage) is behind.
    pub writer_wait_s: f64,
    pub diff_s: f64,
    pub db_write_s: f64,
    pub commit_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScanReport {
    pub root: String,
    /// None for a walk without index.
    pub db: Option<String>,
    pub threads: usize,
    /// The in-flight the walk's statx calls used (fixed, or adaptive with its median and max).
    pub in_flight: crate::engine::inflight::InFlightReport,
    pub elapsed_s: f64,
    pub phases: Phases,
    /// Entries found (the root included).
    pub entries: u64,
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub other: u64,
    pub bytes: u64,
    pub allocated_bytes: u64,
    /// Rows the index held before this scan.
    pub indexed_before: u64,
    pub diff: DiffCounts,
    /// Directories that could not be read (permission denied): their contents are not
    /// indexed, and rows below them are kept.
    pub denied: u64,
    pub unread_dirs: Vec<String>,
    /// Entries that disappeared while the scan ran.
    pub vanished: u64,
    /// Entries the filters left out (a directory counts once: nothing below it is read);
    /// None: no filter given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded: Option<u64>,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Signal that stopped the scan (the index holds every committed batch).
    pub interrupted_by: Option<i32>,
    /// Where the inventory was written.
    pub inventory: Option<PathBuf>,
    pub provenance: Provenance,
    /// Under MPI: how the entries spread over the ranks (absent with one rank).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<crate::engine::walker::RankCounts>,
    /// Cold or warm, durable or returned: what `elapsed_s` includes.
    #[serde(flatten)]
    pub timing: Timing,
}

/// Give the walk room for many open directories (soft limit up to the hard one).
fn raise_fd_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut l = getrlimit(Resource::Nofile);
    if l.current < l.maximum {
        l.current = l.maximum;
        let _ = setrlimit(Resource::Nofile, l);
    }
}

/// Open the tree's root; errors name `PATH`.
pub fn open_root(root: &Path) -> Result<(OwnedFd, String)> {
    let bad = |r: String| Error::bad("PATH", r);
    let md = std::fs::metadata(root).map_err(|e| bad(format!("{}: {e}", root.display())))?;
    if !md.is_dir() {
        return Err(bad(format!("{} is not a directory", root.display())));
    }
    let canon = std::fs::canonicalize(root).map_err(|e| bad(format!("{}: {e}", root.display())))?;
    let fd = walk::open_root(&canon).map_err(|e| bad(format!("{}: {e}", root.display())))?;
    Ok((fd, canon.display().to_string()))
}

/// The SQLite index's files, when they lie inside the tree being scanned.
pub(crate) fn index_files_inside(db: &DbUrl, root: &str) -> Option<producer::Skip> {
    use std::os::unix::ffi::OsStrExt;
    let DbUrl::Sqlite(p) = db else { return None };
    let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = std::fs::canonicalize(dir).ok()?;
    let rel = dir.strip_prefix(root).ok()?;
    let name = p.file_name()?.as_bytes();
    let names = ["", "-wal", "-shm", "-journal"].iter().map(|s| [name, s.as_bytes()].concat()).collect();
    Some(producer::Skip { dir: rel.as_os_str().as_bytes().to_vec(), names })
}

/// The writer's running totals: every row's entry and what the walk counted without rows.
pub(crate) fn add_batch(totals: &mut Counts, b: &Batch) {
    for r in &b.rows {
        totals.add(&r.meta);
    }
    totals.merge(&b.counted);
}

/// The database side of the scan: pending batches, diff and timed writes.
pub(crate) struct Writer<'a> {
    pub(crate) db: &'a mut dyn IndexBackend,
    pub(crate) index: Index,
    pub(crate) pending: Vec<Batch>,
    pub(crate) pending_rows: usize,
    pub(crate) phases: Phases,
}

impl Writer<'_> {
    /// Diff the pending batches and write what changed in one transaction. `last`:
    /// the walk is complete, so also delete what it did not see (except below the
    /// directories in the set, which it could not read).
    pub(crate) fn flush(&mut self, last: Option<&HashSet<u64>>) -> std::result::Result<(), String> {
        let t = Instant::now();
        let mut ch = Changes::default();
        for b in &self.pending {
            self.index.diff(b, &mut ch);
        }
        if let Some(unread) = last {
            ch.deletes = self.index.missing(unread);
        }
        self.phases.diff_s += t.elapsed().as_secs_f64();
        if !ch.is_empty() {
            let t = Instant::now();
            self.db.apply(&ch)?;
            self.phases.db_write_s += t.elapsed().as_secs_f64();
        }
        drop(ch);
        let t = Instant::now();
        self.db.commit()?;
        self.phases.commit_s += t.elapsed().as_secs_f64();
        self.pending.clear();
        self.pending_rows = 0;
        Ok(())
    }
}

/// The index `db` holds of `root` (empty without a database): a database that indexes
/// another root is refused, a new one gets this root; the load is timed in `phases`.
pub(crate) fn load_index(db: Option<&mut (dyn IndexBackend + '_)>, root: &str, phases: &mut Phases) -> Result<Index> {
    let Some(db) = db else { return Ok(Index::default()) };
    match db.root().map_err(|e| Error::bad("--db", format!("{}: {e}", db.describe())))? {
        Some(old) if old != root => {
            return Err(Error::bad(
                "--db",
                format!("{} indexes {old}, not {root}: give another database", db.describe()),
            ));
        }
        Some(_) => {}
        // Written with the first batch (an unchanged rescan writes nothing).
        None => db.set_root(root).map_err(|e| Error::failed(format!("writing the index: {e}")))?,
    }
    let t = Instant::now();
    let ix = Index::load(db).map_err(|e| Error::failed(format!("reading the index: {e}")))?;
    phases.load_index_s = t.elapsed().as_secs_f64();
    Ok(ix)
}

/// Run a scan. Bad input (root, database) is reported before anything is walked. An
/// interrupted scan returns its report with `interrupted_by` set, after committing
/// what it had; rows are never deleted after an incomplete walk.
pub fn scan(cfg: &ScanConfig) -> Result<ScanReport> {
    signals::install();
    crate::fs::walk::raise_fd_limit();
    let (root_fd, root) = open_root(&cfg.root)?;
    cfg.check_timing()?;
    let mut db = match &cfg.db {
        Some(u) => Some(u.open()?),
        None => None,
    };
    let provenance = Provenance::collect(cfg.command_line.clone());
    let timing = Timing::start(cfg.cold, &[Path::new(&root)], cfg.threads)?;
    let start = Instant::now();
    let mut phases = Phases::default();
    let index = load_index(db.as_deref_mut(), &root, &mut phases)?;
    let indexed_before = index.indexed() as u64;
    let skip = cfg.db.as_ref().and_then(|d| index_files_inside(d, &root));
    raise_fd_limit();
    let mut stats = WalkStats::new(cfg.threads, cfg.inventory.is_some());
    stats.filter = cfg.filter.clone();
    stats.count_only = db.is_none();
    let gate = cfg.in_flight_max.and_then(|max| {
        crate::engine::inflight::Gate::for_plan(crate::engine::inflight::Plan::Adaptive { start: cfg.threads, max })
    });
    let flush = 4096;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(32);
    let mut totals = Counts::default();
    let mut failure: Option<String> = None;
    let mut writer = db.as_deref_mut().map(|db| {
        let batch_rows = db.batch_rows();
        (Writer { db, index, pending: Vec::new(), pending_rows: 0, phases: Phases::default() }, batch_rows)
    });
    std::thread::scope(|s| {
        let stats = &stats;
        let skip = skip.as_ref();
        let gate = gate.as_ref();
        s.spawn(move || {
            crate::engine::inflight::controlled(gate, || {
                producer::produce(root_fd, cfg.threads, gate, flush, skip, &tx, stats)
            })
        });
        let mut wait = 0.0;
        loop {
            let t = Instant::now();
            let Ok(b) = rx.recv() else { break };
            wait += t.elapsed().as_secs_f64();
            add_batch(&mut totals, &b);
            let Some((w, batch_rows)) = writer.as_mut() else { continue };
            w.pending_rows += b.rows.len();
            w.pending.push(b);
            if w.pending_rows >= *batch_rows {
                if let Err(e) = w.flush(None) {
                    failure = Some(e);
                    stats.stop.store(true, Ordering::Relaxed);
                    break;
                }
            }
        }
        drop(rx); // a walk still sending after a failure sees the channel closed
        phases.writer_wait_s = wait;
    });
    if let Some((w, _)) = writer.as_mut() {
        w.phases.writer_wait_s = phases.writer_wait_s; // the writer's times, as under MPI
    }
    let walked = Walked::of(&stats);
    let complete = failure.is_none() && walked.interrupted == 0 && !stats.stop.load(Ordering::Relaxed);
    let diff = finish_writer(writer.map(|(w, _)| w), complete, &walked.unread, &mut failure, &mut phases);
    if let Some(e) = failure {
        return Err(Error::failed(format!("writing the index failed after {} entries: {e}", totals.entries)));
    }
    let returned_s = start.elapsed().as_secs_f64();
    let db = db.as_ref().map(|d| d.describe());
    let mut report = report(root, db, cfg.threads, start, phases, &totals, indexed_before, diff, walked, provenance);
    report.in_flight = crate::engine::inflight::report(gate.as_ref(), cfg.threads);
    report.excluded = cfg.filter.as_ref().map(|_| stats.excluded.load(Ordering::Relaxed));
    report.timing = timing;
    end_timing(cfg, &mut report, returned_s, true);
    save(cfg, &mut report, stats.take_inventory())?;
    Ok(report)
}

/// What a walk found, for the report: one process's walk, or (under MPI) every rank's.
pub(crate) struct Walked {
    /// Thread-nanoseconds walking, in statx, and blocked on the writer.
    pub(crate) walk_ns: u64,
    pub(crate) stat_ns: u64,
    pub(crate) blocked_ns: u64,
    pub(crate) denied: u64,
    pub(crate) vanished: u64,
    pub(crate) errors: u64,
    pub(crate) first_error: Option<String>,
    /// Directories that could not be read (paths relative to the root).
    pub(crate) unread: Vec<Vec<u8>>,
    /// The signal that stopped the walk, or 0.
    pub(crate) interrupted: i32,
}

impl Walked {
    /// This process's walk (its paths and first error taken from `stats`).
    pub(crate) fn of(stats: &WalkStats) -> Walked {
        let ld = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        Walked {
            walk_ns: ld(&stats.walk_ns),
            stat_ns: ld(&stats.stat_ns),
            blocked_ns: ld(&stats.blocked_ns),
            denied: ld(&stats.denied),
            vanished: ld(&stats.vanished),
            errors: ld(&stats.errors),
            first_error: stats.first_error.lock().unwrap_or_else(|p| p.into_inner()).take(),
            unread: std::mem::take(&mut *stats.denied_paths.lock().unwrap_or_else(|p| p.into_inner())),
            interrupted: signals::pending(),
        }
    }
}

/// After the walk: the writer's last flush — rows of what is gone deleted only after a
/// `complete` walk, and never below an `unread` directory — unless a flush already
/// failed; a failure goes to `failure`. Returns the diff counts and puts the writer's
/// times in `phases` (no writer: nothing to count).
pub(crate) fn finish_writer(
    writer: Option<Writer<'_>>,
    complete: bool,
    unread: &[Vec<u8>],
    failure: &mut Option<String>,
    phases: &mut Phases,
) -> DiffCounts {
    let Some(mut w) = writer else { return DiffCounts::default() };
    if failure.is_none() {
        let keys: HashSet<u64> = unread.iter().map(|p| path_key(p)).collect();
        if let Err(e) = w.flush(complete.then_some(&keys)) {
            *failure = Some(e);
        }
    }
    let p = &w.phases;
    phases.diff_s = p.diff_s;
    phases.db_write_s = p.db_write_s;
    phases.commit_s = p.commit_s;
    phases.writer_wait_s = p.writer_wait_s;
    w.index.counts
}

/// A finished scan's report (without `ranks`, and `inventory` until [`save`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn report(
    root: String,
    db: Option<String>,
    threads: usize,
    start: Instant,
    mut phases: Phases,
    totals: &Counts,
    indexed_before: u64,
    diff: DiffCounts,
    walked: Walked,
    provenance: Provenance,
) -> ScanReport {
    phases.walk_thread_s = walked.walk_ns as f64 / 1e9;
    phases.stat_thread_s = walked.stat_ns as f64 / 1e9;
    phases.walk_blocked_thread_s = walked.blocked_ns as f64 / 1e9;
    ScanReport {
        root,
        db,
        threads,
        in_flight: crate::engine::inflight::InFlightReport::fixed(threads),
        elapsed_s: start.elapsed().as_secs_f64(),
        phases,
        entries: totals.entries,
        files: totals.files,
        dirs: totals.dirs,
        symlinks: totals.symlinks,
        other: totals.other,
        bytes: totals.bytes,
        allocated_bytes: totals.allocated,
        indexed_before,
        diff,
        denied: walked.denied,
        unread_dirs: walked.unread.iter().map(|p| display_path(p)).collect(),
        vanished: walked.vanished,
        excluded: None,
        errors: walked.errors,
        first_error: walked.first_error,
        interrupted_by: (walked.interrupted != 0).then_some(walked.interrupted),
        inventory: None,
        provenance,
        ranks: None,
        timing: Timing::default(),
    }
}

/// Write what `cfg` asks for: the inventory (not after an interrupted walk) and the
/// JSON report.
pub(crate) fn save(cfg: &ScanConfig, report: &mut ScanReport, inventory: Option<Inventory>) -> Result<()> {
    if let (Some(path), Some(mut inv), None) = (&cfg.inventory, inventory, report.interrupted_by) {
        inv.vanished = report.vanished;
        inv.save(path)?;
        report.inventory = Some(path.clone());
    }
    if let Some(j) = &cfg.json {
        let bytes = serde_json::to_vec_pretty(report).map_err(|e| Error::failed(e.to_string()))?;
        crate::fs::output::write_file(j, &bytes)?;
    }
    Ok(())
}

pub(crate) fn display_path(p: &[u8]) -> String {
    if p.is_empty() { ".".into() } else { String::from_utf8_lossy(p).into_owned() }
}

impl ScanReport {
    /// The terminal report: counts, diff, phases, problems, machine.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let rate = |n: u64, t: f64| fmt_rate(n as f64 / t.max(1e-9), "entries");
        s.push_str(&format!(
            "scanned {}: {} entries ({} files, {} dirs, {} symlinks, {} other), {} ({} allocated)\n",
            self.root,
            self.entries,
            self.files,
            self.dirs,
            self.symlinks,
            self.other,
            fmt_size(self.bytes as f64),
            fmt_size(self.allocated_bytes as f64)
        ));
        s.push_str(&format!(
            "time: {} ({}), {} walk threads; one run, no spread measured\n",
            fmt_secs(self.elapsed_s),
            rate(self.entries, self.elapsed_s),
            self.threads
        ));
        s.push_str(&self.in_flight.text());
        if let Some(n) = self.excluded {
            s.push_str(&format!("excluded {n} (left out by the filters, not indexed)\n"));
        }
        s.push_str(&self.timing.text());
        match &self.db {
            Some(db) => {
                let d = &self.diff;
                s.push_str(&format!(
                    "index: {db} (held {} rows): {} new, {} changed, {} deleted, {} unchanged\n",
                    self.indexed_before, d.new, d.changed, d.deleted, d.unchanged
                ));
            }
            None => s.push_str("index: none (walk and statx only)\n"),
        }
        let p = &self.phases;
        s.push_str(&format!(
            "phases: walk {} + statx {} (thread-seconds), blocked on the database {}; \
             load index {}, diff {}, db write {}, commit {}, waiting for the walk {}\n",
            fmt_secs(p.walk_thread_s),
            fmt_secs(p.stat_thread_s),
            fmt_secs(p.walk_blocked_thread_s),
            fmt_secs(p.load_index_s),
            fmt_secs(p.diff_s),
            fmt_secs(p.db_write_s),
            fmt_secs(p.commit_s),
            fmt_secs(p.writer_wait_s)
        ));
        if self.db.is_some() {
            let db = p.load_index_s + p.diff_s + p.db_write_s + p.commit_s;
            let bound = if db > p.writer_wait_s { "the database" } else { "the walk (storage)" };
            s.push_str(&format!(
                "bound by: {bound} (database busy {}, idle {})\n",
                fmt_secs(db),
                fmt_secs(p.writer_wait_s)
            ));
        }
        if self.denied > 0 || self.vanished > 0 || self.errors > 0 {
            s.push_str(&format!(
                "problems: {} directories denied, {} entries vanished during the scan, {} other errors\n",
                self.denied, self.vanished, self.errors
            ));
            for d in self.unread_dirs.iter().take(producer::LISTED) {
                s.push_str(&format!("  not readable: {d}\n"));
            }
            if let Some(e) = &self.first_error {
                s.push_str(&format!("  first error: {e}\n"));
            }
        }
        if let Some(p) = &self.inventory {
            s.push_str(&format!("inventory: {}\n", p.display()));
        }
        if let Some(r) = &self.ranks {
            s.push_str(&r.text());
        }
        s.push_str(&self.provenance.machine_line());
        s.push('\n');
        s
    }
}
