//! Ops: one timed kind of work over a generated tree. Each op is one file implementing
//! [`Op`]; all of them share one runner ([`run_phase`]) and so one measurement path.
//!
//! Hot path rules: `*at()` syscalls relative to directory fds, one reused buffer and
//! name buffer per thread, no allocation or formatting per file, no locks: threads take
//! work units from one atomic cursor (units are ~1,000 files, so the cursor is touched
//! rarely) and keep their own counters and histograms, merged at the end.

pub mod allocated;
pub mod copy;
pub mod create;
pub mod delete;
pub mod list;
pub mod object;
pub mod pack;
pub mod read;
pub mod registry;
pub mod rm;
pub mod scan;
pub mod stat;
pub mod sync;

use crate::measure::progress::Progress;
use crate::measure::{self, Latency, PhaseResult, new_histogram, portions_from_points};
use crate::signals;
use crate::tree::content::ContentSource;
use crate::tree::layout::NAME_BUF;
use crate::tree::{Plan, Prepared, TreeSpec, Unit};
use hdrhistogram::Histogram;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags, openat};
use rustix::io::Errno;
use std::ffi::CStr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub use create::{Create, CreateOptions, FsyncMode};
pub use delete::Delete;
pub use list::List;
pub use read::Read;
pub use stat::Stat;

pub use registry::{OP_NAMES, PairOp, REFORMAT, op_by_name, pair_op_by_name, parse_ops, reads_tree, removes_tree};

/// One timed kind of work over a tree.
pub trait Op: Sync {
    fn name(&self) -> &'static str;
    /// Work is cut per directory (list) instead of per ~1,000 files.
    fn per_directory(&self) -> bool {
        false
    }
    /// Sequential work before the parallel part (timed): e.g. mkdir of every directory.
    fn before(&self, _w: &mut Worker) {}
    /// One unit of parallel work.
    fn unit(&self, w: &mut Worker, unit: Unit);
    /// Sequential work after the parallel part (timed): e.g. rmdir, syncfs.
    fn after(&self, _w: &mut Worker) {}
    /// Changes the file system: the phase ends with a timed flush to the device
    /// (syncfs), so it has a returned and a durable time.
    fn writes(&self) -> bool {
        false
    }
}

/// What every worker of a phase shares.
pub struct Shared<'a> {
    pub plan: &'a Plan,
    pub spec: &'a TreeSpec,
    pub content: &'a ContentSource,
    /// The tree's root directory; every path is resolved below it.
    pub root: BorrowedFd<'a>,
    start: Instant,
    done: AtomicU64,
    portion_files: u64,
    abort: AtomicBool,
    failure: Mutex<Option<String>>,
    progress: &'a Progress,
    /// `.r<rank>` appended to file names with --shared-dir under MPI.
    rank_tag: Option<Vec<u8>>,
}

/// Errors that make going on pointless: the phase stops and reports how far it got.
/// (EINVAL: e.g. O_DIRECT on a file system without it; every file would fail alike.)
fn is_fatal(e: Errno) -> bool {
    matches!(e, Errno::NOSPC | Errno::DQUOT | Errno::ROFS | Errno::IO | Errno::INVAL)
}

/// A buffer aligned for O_DIRECT (4 KiB), reused for every file a thread touches.
pub struct IoBuf {
    raw: Vec<u8>,
    off: usize,
    len: usize,
}

impl IoBuf {
    pub const ALIGN: usize = 4096;
    pub fn new(len: usize) -> IoBuf {
        let raw = vec![0u8; len + Self::ALIGN];
        let off = raw.as_ptr().align_offset(Self::ALIGN);
        IoBuf { raw, off, len }
    }
    #[inline]
    pub fn get(&mut self) -> &mut [u8] {
        &mut self.raw[self.off..self.off + self.len]
    }
}

/// Per-thread state: buffers, counters and the latency histogram.
pub struct Worker<'a> {
    pub shared: &'a Shared<'a>,
    pub buf: IoBuf,
    pub name: [u8; NAME_BUF],
    chain: Vec<u32>,
    hist: Histogram<u64>,
    pub files: u64,
    pub bytes: u64,
    pub dirs: u64,
    pub errors: u64,
    first_error: Option<String>,
    points: Vec<(u64, f64)>,
    last_point: Instant,
    finish_s: f64,
}

impl<'a> Worker<'a> {
    fn new(shared: &'a Shared<'a>, buf_len: usize) -> Worker<'a> {
        Worker {
            shared,
            buf: IoBuf::new(buf_len),
            name: [0; NAME_BUF],
            chain: Vec::new(),
            hist: new_histogram(),
            files: 0,
            bytes: 0,
            dirs: 0,
            errors: 0,
            first_error: None,
            points: Vec::new(),
            last_point: shared.start,
            finish_s: 0.0,
        }
    }

    /// Name of file `index` as a C string in this worker's name buffer.
    #[inline]
    pub fn file_name(&mut self, index: u64) -> &CStr {
        let mut n = self.shared.plan.file_name(index, &mut self.name);
        if let Some(tag) = &self.shared.rank_tag {
            // --shared-dir under MPI: every rank's own files in the same directories. A name
            // too long for the tag gets it over its (random) tail, after the unique index.
            n = n.min(255 - tag.len());
            self.name[n..n + tag.len()].copy_from_slice(tag);
            n += tag.len();
            self.name[n] = 0;
        }
        CStr::from_bytes_with_nul(&self.name[..=n]).expect("generated names hold no NUL")
    }

    /// Open directory `dir` of the plan, one component at a time, never following a
    /// symlink (O_NOFOLLOW on every component).
    pub fn open_dir(&mut self, dir: u32) -> Result<OwnedFd, Errno> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let plan = self.shared.plan;
        plan.chain(dir, &mut self.chain);
        let mut fd = openat(self.shared.root, c".", flags, Mode::empty())?;
        for &d in &self.chain {
            fd = openat(&fd, plan.dirs[d as usize].name.as_c_str(), flags, Mode::empty())?;
        }
        Ok(fd)
    }

    /// Count one finished file that started at `t0`.
    #[inline]
    pub fn done(&mut self, t0: Instant, bytes: u64) {
        self.done_many(t0, 1, bytes)
    }

    /// Count one finished operation that covered `files` entries (list: a directory).
    #[inline]
    pub fn done_many(&mut self, t0: Instant, files: u64, bytes: u64) {
        let now = Instant::now();
        let ns = now.saturating_duration_since(t0).as_nanos() as u64;
        let _ = self.hist.record(ns.clamp(1, 3_600_000_000_000));
        self.files += files;
        self.bytes += bytes;
        let before = self.shared.done.fetch_add(files, Ordering::Relaxed);
        let d = before + files;
        let p = self.shared.portion_files;
        if d / p != before / p || now.duration_since(self.last_point) >= Duration::from_secs(1) {
            self.points.push((d, now.duration_since(self.shared.start).as_secs_f64()));
            self.last_point = now;
        }
        if d / 1024 != before / 1024 {
            self.shared.progress.set(d);
        }
    }

    /// Count an error on `what` (a file or directory of the plan). Fatal kinds stop the phase.
    #[cold]
    pub fn error(&mut self, op: &str, dir: u32, file: Option<u64>, e: Errno, count: u64) {
        self.errors += count;
        let path = self.shared.plan.dir_path(dir);
        let what = match file {
            Some(i) => {
                let name = self.file_name(i).to_string_lossy().into_owned();
                if path == "." { name } else { format!("{path}/{name}") }
            }
            None => path,
        };
        let msg = format!("{op} {what}: {e}");
        if is_fatal(e) {
            let mut f = self.shared.failure.lock().unwrap_or_else(|p| p.into_inner());
            if f.is_none() {
                *f = Some(msg.clone());
            }
            self.shared.abort.store(true, Ordering::Relaxed);
        }
        if self.first_error.is_none() {
            self.first_error = Some(msg);
        }
    }

    /// A failure that is not one syscall's errno (e.g. an engine's error): stops the phase.
    #[cold]
    pub fn fail(&mut self, msg: String) {
        self.errors += 1;
        let mut f = self.shared.failure.lock().unwrap_or_else(|p| p.into_inner());
        if f.is_none() {
            *f = Some(msg.clone());
        }
        self.shared.abort.store(true, Ordering::Relaxed);
        if self.first_error.is_none() {
            self.first_error = Some(msg);
        }
    }

    /// The phase should stop: a signal arrived or another thread hit a fatal error.
    #[inline]
    pub fn stopping(&self) -> bool {
        self.shared.abort.load(Ordering::Relaxed) || signals::pending() != 0
    }
}

/// Settings for one phase.
pub struct PhaseSettings {
    pub threads: usize,
    /// Close a portion every this many files (and at least once a second).
    pub portion_files: u64,
    /// Size of each thread's I/O buffer.
    pub buf_len: usize,
    /// A writing op ends with a timed syncfs (its durable time). Experiments measure
    /// storage and keep it; `gen` makes a tree and leaves writeback to the kernel (with
    /// `--fsync end` it still syncs, in the op's own `after`).
    pub flush: bool,
    /// Several processes run this phase in one directory at once (MPI `--shared-dir`);
    /// `None`: this process alone.
    pub shared_dir: Option<SharedDir>,
}

/// How this process takes part in a phase run by several processes in one directory:
/// each tags its file names with its number, one makes and removes the directories,
/// and all meet before and after the timed work. The experiment driver fills it in
/// (`experiment::ranks`); ops know nothing of ranks.
#[derive(Debug, Clone, Copy)]
pub struct SharedDir {
    /// This process's number, in its files' names (`.rN`).
    pub rank: usize,
    /// This process makes (and removes) the directories; the others wait for it.
    pub makes_dirs: bool,
    /// Returns when every process has called it.
    pub meet: fn(),
}

/// Run `op` over the tree below `root` and measure it, in this process (the driver
/// runs it on every rank and aggregates: `experiment::all_ranks::run_phase_on_every_rank`); also hands
/// back the latency histogram.
pub fn run_phase(
    op: &dyn Op,
    tree: &Prepared,
    root: BorrowedFd<'_>,
    settings: &PhaseSettings,
    progress: &Progress,
) -> (PhaseResult, Histogram<u64>) {
    let plan = &tree.plan;
    let units: &[Unit] = if op.per_directory() { &plan.dir_units } else { &plan.file_units };
    let threads = settings.threads.clamp(1, units.len().max(1));
    let total = if op.per_directory() { plan.dirs.len() as u64 } else { plan.files };
    progress.phase(op.name(), total);
    let (u0, s0) = measure::cpu_times();
    let shared = Shared {
        plan,
        spec: &tree.spec,
        content: &tree.content,
        root: root.as_fd(),
        start: Instant::now(),
        done: AtomicU64::new(0),
        portion_files: settings.portion_files.max(1),
        abort: AtomicBool::new(false),
        failure: Mutex::new(None),
        progress,
        rank_tag: settings.shared_dir.map(|d| format!(".r{}", d.rank).into_bytes()),
    };
    let cursor = AtomicUsize::new(0);
    let work = |w: &mut Worker| {
        loop {
            if w.stopping() {
                break;
            }
            let i = cursor.fetch_add(1, Ordering::Relaxed);
            let Some(&u) = units.get(i) else { break };
            op.unit(w, u);
        }
        w.finish_s = shared.start.elapsed().as_secs_f64();
    };

    let mut main = Worker::new(&shared, settings.buf_len);
    // In a shared directory one process alone makes (and removes) the directories, the
    // others wait.
    let makes_dirs = settings.shared_dir.is_none_or(|d| d.makes_dirs);
    let meet = || settings.shared_dir.inspect(|d| (d.meet)());
    if makes_dirs {
        op.before(&mut main);
    }
    meet();
    let mut workers = Vec::with_capacity(threads);
    if threads == 1 {
        work(&mut main);
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (1..threads)
                .map(|_| {
                    let shared = &shared;
                    let work = &work;
                    s.spawn(move || {
                        let mut w = Worker::new(shared, settings.buf_len);
                        work(&mut w);
                        WorkerStats::from(w)
                    })
                })
                .collect();
            work(&mut main);
            for h in handles {
                match h.join() {
                    Ok(st) => workers.push(st),
                    Err(p) => std::panic::resume_unwind(p),
                }
            }
        });
    }
    let first_finish_main = main.finish_s;
    meet();
    if !main.stopping() && makes_dirs {
        op.after(&mut main);
    }
    let returned = shared.start.elapsed().as_secs_f64();
    // Durable: until the file system has the phase's changes on its device.
    let flush = (settings.flush && op.writes() && !main.stopping()).then(|| {
        let t = Instant::now();
        if let Err(e) = rustix::fs::syncfs(root) {
            main.error("syncfs", 0, None, e, 1);
        }
        t.elapsed().as_secs_f64()
    });
    // Exactly the sum of the portions: the returned part and the flush.
    let elapsed = returned + flush.unwrap_or(0.0);
    let (u1, s1) = measure::cpu_times();
    let mut finishes: Vec<f64> = workers.iter().map(|w| w.finish_s).collect();
    finishes.push(first_finish_main);
    let mut all = WorkerStats::from(main);
    for w in workers {
        all.merge(w);
    }
    progress.set(all.files);
    let failure = shared.failure.lock().unwrap_or_else(|p| p.into_inner()).take();
    let result = PhaseResult {
        elapsed_s: elapsed,
        files: all.files,
        bytes: all.bytes,
        dirs: all.dirs,
        threads,
        cpu_user_s: u1 - u0,
        cpu_sys_s: s1 - s0,
        errors: all.errors,
        first_error: all.first_error,
        interrupted: signals::pending() != 0,
        failed: failure,
        portions: with_flush(portions_from_points(all.points, all.files, returned), flush),
        latency_us: Latency::from_histogram(&all.hist),
        first_finish_s: finishes.iter().cloned().fold(f64::INFINITY, f64::min),
        last_finish_s: finishes.iter().cloned().fold(0.0, f64::max),
        space_used_bytes: None,
        allocated_bytes: None,
        ranks: None,
        peak_rss_bytes: None,
        returned_s: flush.map(|_| returned),
        flush_s: flush,
        ..Default::default()
    };
    (result, all.hist)
}

/// The per-portion series is what the application saw (returned); the flush to the
/// device, when there was one, is its own last portion (no files).
pub fn with_flush(mut portions: Vec<measure::Portion>, flush_s: Option<f64>) -> Vec<measure::Portion> {
    if let Some(f) = flush_s {
        let end_files = portions.last().map_or(0, |p| p.end_files);
        portions.push(measure::Portion { files: 0, elapsed_s: f, end_files });
    }
    portions
}

/// What a worker hands back when its thread ends (the buffers stay behind).
struct WorkerStats {
    hist: Histogram<u64>,
    files: u64,
    bytes: u64,
    dirs: u64,
    errors: u64,
    first_error: Option<String>,
    points: Vec<(u64, f64)>,
    finish_s: f64,
}

impl From<Worker<'_>> for WorkerStats {
    fn from(w: Worker<'_>) -> Self {
        WorkerStats {
            hist: w.hist,
            files: w.files,
            bytes: w.bytes,
            dirs: w.dirs,
            errors: w.errors,
            first_error: w.first_error,
            points: w.points,
            finish_s: w.finish_s,
        }
    }
}

impl WorkerStats {
    fn merge(&mut self, o: WorkerStats) {
        let _ = self.hist.add(&o.hist);
        self.files += o.files;
        self.bytes += o.bytes;
        self.dirs += o.dirs;
        self.errors += o.errors;
        if self.first_error.is_none() {
            self.first_error = o.first_error;
        }
        self.points.extend(o.points);
    }
}

/// Open the unit's directory and call `f` on each of its files in turn, timing each
/// call; `f` returns the bytes it moved. Returns the directory fd (None if it could
/// not be opened: every file of the unit then counts as an error).
#[inline]
pub fn for_each_file(
    w: &mut Worker,
    op: &str,
    u: Unit,
    mut f: impl FnMut(&mut Worker, BorrowedFd<'_>, u64) -> Result<u64, Errno>,
) -> Option<OwnedFd> {
    let dir = match w.open_dir(u.dir) {
        Ok(fd) => fd,
        Err(e) => {
            w.error(op, u.dir, None, e, u.count);
            return None;
        }
    };
    for i in u.first..u.first + u.count {
        if w.stopping() {
            break;
        }
        let t0 = Instant::now();
        match f(w, dir.as_fd(), i) {
            Ok(bytes) => w.done(t0, bytes),
            Err(e) => w.error(op, u.dir, Some(i), e, 1),
        }
    }
    Some(dir)
}

/// Walk the plan's directories (except the root) in `order`, calling `f` with each
/// directory's parent fd. Children of one parent are contiguous in BFS order, so each
/// parent is opened once.
pub fn for_each_dir_in_parent(
    w: &mut Worker,
    order: impl Iterator<Item = u32>,
    mut f: impl FnMut(&mut Worker, BorrowedFd<'_>, u32) -> Result<(), Errno>,
    op: &str,
) {
    let mut cached: Option<(u32, OwnedFd)> = None;
    for d in order {
        if w.stopping() {
            return;
        }
        let parent = w.shared.plan.dirs[d as usize].parent;
        if cached.as_ref().map(|c| c.0) != Some(parent) {
            match w.open_dir(parent) {
                Ok(fd) => cached = Some((parent, fd)),
                Err(e) => {
                    w.error(op, parent, None, e, 1);
                    cached = None;
                    continue;
                }
            }
        }
        let fd = &cached.as_ref().expect("set above").1;
        if let Err(e) = f(w, fd.as_fd(), d) {
            w.error(op, d, None, e, 1);
        }
    }
}
