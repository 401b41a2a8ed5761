//! One mdtest trial, run by every rank at once: its directories (untimed), then create
//! (to the stonewall, if any, and on to the fastest rank's count), stat, read (hard) and
//! delete, each on the files of the rank `-N 1` points at, then the directories removed.

use super::by_path::{ByPath, Call};
use super::{Paths, Preset, STONEWALL_OP};
use crate::error::{Error, Result};
use crate::experiment::all_ranks::{run_phase_everywhere, run_phase_on_every_rank};
use crate::experiment::{Stop, TrialOutcome, prepare_caches, watched};
use crate::measure::progress::Progress;
use crate::measure::{Latency, PhaseResult, Portion, TargetWatch};
use crate::ops::{self, Create, Delete, Op, PhaseSettings, Read, SharedDir, Stat, Worker};
use crate::ranks;
use crate::results::Until;
use crate::signals;
use crate::storage::cache::CacheMode;
use crate::storage::rundir::RunDir;
use crate::tree::{Prepared, Unit};
use hdrhistogram::Histogram;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags, mkdirat, openat, unlinkat};
use std::ffi::{CStr, CString};
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What every trial runs with.
pub(super) struct Env<'a> {
    pub preset: Preset,
    /// Creates stop this long after they began (mdtest -W).
    pub stonewall: Option<Duration>,
    pub paths: Paths,
    pub until: Until,
    pub portion_files: u64,
    pub caches: CacheMode,
    pub create: Create,
    pub progress: &'a Progress,
}

const TREE: &CStr = c"tree";
const DIR_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);
/// With a stonewall, creates are begun in pieces of this many files, the clock read
/// before each piece.
const PIECE: u64 = 128;

/// mdtest's index of a phase in its neighbour shift (`-N 1`): create 0, stat 1, read 2,
/// delete 3 (`mk_name`, `stat_name`, `read_name`, `rm_name`).
fn shift(op: &str) -> usize {
    match op {
        "stat" => 1,
        "read" => 2,
        "delete" => 3,
        _ => 0,
    }
}

/// The rank whose files phase `k` works on (mdtest -N 1).
fn neighbour(k: usize) -> usize {
    (ranks::rank() + k) % ranks::size()
}

/// Easy's directory of rank `r`; hard's shared one is rank 0's name.
fn rank_dir(r: usize) -> CString {
    CString::new(format!("mdtest_tree.{r}")).expect("no NUL")
}

/// The directory phase `k`'s files are in, below `tree/`: easy, the neighbour's; hard,
/// the shared one.
fn dir_name(preset: Preset, k: usize) -> String {
    match preset {
        Preset::Easy => format!("mdtest_tree.{}", neighbour(k)),
        Preset::Hard => "mdtest_tree.0".into(),
    }
}

/// Phase `k`'s settings: one thread; under MPI the neighbour's file names (its
/// `.r<rank>` tag) and a barrier before and after the timed work. A write phase ends
/// with a timed syncfs only when `flush` and the time is durable (mdtest `-Y`); with
/// `--until returned` nothing is synced, as mdtest without `-Y` leaves the next phase a
/// file system with its writes still in memory (deleting files whose blocks are not
/// allocated yet is cheaper: hard's delete ran 1.35× faster so on RAM ext4).
fn settings(env: &Env, k: usize, flush: bool) -> PhaseSettings {
    PhaseSettings {
        threads: 1,
        portion_files: env.portion_files,
        buf_len: 64 * 1024,
        flush: flush && env.until == Until::Durable,
        shared_dir: (ranks::size() > 1).then(|| SharedDir {
            rank: neighbour(k),
            makes_dirs: ranks::is_root(),
            meet: ranks::barrier,
        }),
    }
}

/// Run one trial; the phases done and why it stopped early, if it did.
pub(super) fn run(rundir: &RunDir, tree: &mut Prepared, all: &[Unit], env: &Env, watch: &TargetWatch) -> TrialOutcome {
    let mut done = Vec::new();
    let stop = phases(rundir, tree, all, env, watch, &mut done).err();
    (done, stop)
}

fn phases(
    rundir: &RunDir,
    tree: &mut Prepared,
    all: &[Unit],
    env: &Env,
    watch: &TargetWatch,
    done: &mut Vec<(String, PhaseResult)>,
) -> std::result::Result<(), Stop> {
    let fail = |e: Error| Stop::Failed(e.to_string());
    let tree_fd = make_dirs(rundir, env.preset).map_err(fail)?;
    let path = rundir.path.join("tree");
    let root = phase_root(&tree_fd, env.preset, 0).map_err(fail)?;
    let create_op = env.op(Call::Create, &root, &path.join(dir_name(env.preset, 0))).map_err(fail)?;
    let (create, wall, count) = create_phase(env, &*create_op, tree, all, &root, watch, &path).map_err(fail)?;
    keep(done, "create", create)?;
    if let Some(w) = wall {
        done.push((STONEWALL_OP.into(), w));
    }
    tree.plan.file_units = clip(all, 0, count);
    for name in &env.preset.ops()[1..] {
        let call = match *name {
            "stat" => Call::Stat,
            "read" => Call::Read,
            _ => Call::Delete,
        };
        let k = shift(name);
        let root = phase_root(&tree_fd, env.preset, k).map_err(fail)?;
        let op = env.op(call, &root, &path.join(dir_name(env.preset, k))).map_err(fail)?;
        let cache = ranks::agree(prepare_caches(env.caches, name, &[path.as_path()], 1)).map_err(fail)?;
        let r = watched(watch, cache, || {
            run_phase_on_every_rank(&*op, tree, root.as_fd(), &settings(env, k, true), env.progress)
        });
        keep(done, name, r)?;
    }
    remove_dirs(rundir, tree_fd, env.preset).map_err(fail)
}

impl Env<'_> {
    /// The op making `call` on the files of `dir` (open as `fd`): mdtest's whole-path
    /// calls, or manyfiles' own relative to `fd`.
    fn op(&self, call: Call, fd: &OwnedFd, dir: &Path) -> Result<Box<dyn Op>> {
        if self.paths == Paths::Relative {
            return Ok(match call {
                Call::Create => Box::new(Create { opts: self.create.opts.clone() }),
                Call::Stat => Box::new(Stat),
                Call::Read => Box::new(Read),
                Call::Delete => Box::new(Delete),
            });
        }
        Ok(Box::new(ByPath { call, dir: whole_path(fd, dir)?, bytes: self.preset.bytes() }))
    }
}

/// The path that names `dir` (already open as `fd`) on every call: its symlinks resolved
/// once, checked out of other users' reach (a path walked per call goes wherever its
/// directories point then), and checked to still name the directory opened.
fn whole_path(fd: &OwnedFd, dir: &Path) -> Result<CString> {
    let checked = crate::fs::trusted_path::trusted(dir).map_err(|why| super::untrusted(&why));
    let checked = ranks::agree(checked)?;
    let same = match (rustix::fs::stat(&checked), rustix::fs::fstat(fd)) {
        (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
        _ => false,
    };
    let named = match same {
        true => CString::new(checked.into_os_string().into_encoded_bytes()).map_err(|_| Error::failed("NUL in a path")),
        false => Err(Error::failed(format!("{} is no longer the directory this run made", dir.display()))),
    };
    ranks::agree(named)
}

/// Record a phase; a failed or interrupted one stops the trial (every rank has the same
/// aggregate, so all stop here).
fn keep(done: &mut Vec<(String, PhaseResult)>, name: &str, r: PhaseResult) -> std::result::Result<(), Stop> {
    let stop = match (&r.failed, r.interrupted) {
        (Some(f), _) => Some(Stop::Failed(format!("{name} failed after {} files: {f}", r.files))),
        (None, true) => Some(Stop::Signal(signals::pending())),
        (None, false) => None,
    };
    done.push((name.to_string(), r));
    stop.map_or(Ok(()), Err)
}

/// `tree/` (rank 0 makes it) and, for easy, every rank's own `tree/mdtest_tree.<rank>`:
/// untimed, as mdtest makes its unique directories outside the clock.
fn make_dirs(rundir: &RunDir, preset: Preset) -> Result<OwnedFd> {
    let made = match ranks::is_root() {
        true => mkdirat(rundir.fd(), TREE, Mode::from_raw_mode(0o755)).and_then(|()| match preset {
            // Hard's one shared directory, as deep as mdtest's.
            Preset::Hard => {
                let tree = openat(rundir.fd(), TREE, DIR_FLAGS, Mode::empty())?;
                mkdirat(&tree, rank_dir(0).as_c_str(), Mode::from_raw_mode(0o755))
            }
            Preset::Easy => Ok(()),
        }),
        false => Ok(()),
    };
    ranks::agree(made.map_err(|e| Error::failed(format!("cannot create the tree root: {e}"))))?;
    let opened = openat(rundir.fd(), TREE, DIR_FLAGS, Mode::empty());
    let tree = ranks::agree(opened.map_err(|e| Error::failed(format!("cannot open the tree root: {e}"))))?;
    if preset == Preset::Easy {
        let made = mkdirat(&tree, rank_dir(ranks::rank()).as_c_str(), Mode::from_raw_mode(0o755));
        ranks::agree(made.map_err(|e| Error::failed(format!("cannot create this rank's directory: {e}"))))?;
    }
    Ok(tree)
}

/// Open where phase `k` works.
fn phase_root(tree: &OwnedFd, preset: Preset, k: usize) -> Result<OwnedFd> {
    let name = CString::new(dir_name(preset, k)).expect("no NUL");
    let opened = openat(tree, name.as_c_str(), DIR_FLAGS, Mode::empty());
    ranks::agree(opened.map_err(|e| Error::failed(format!("cannot open tree/{}: {e}", name.to_string_lossy()))))
}

/// Remove easy's directories (each rank its own, all emptied by the delete phase) and
/// `tree/` (rank 0, once every rank is done).
fn remove_dirs(rundir: &RunDir, tree: OwnedFd, preset: Preset) -> Result<()> {
    if preset == Preset::Easy {
        let removed = unlinkat(&tree, rank_dir(ranks::rank()).as_c_str(), AtFlags::REMOVEDIR);
        ranks::agree(removed.map_err(|e| Error::failed(format!("cannot remove this rank's directory: {e}"))))?;
    }
    ranks::shared_barrier();
    let removed = match ranks::is_root() {
        true => match preset {
            Preset::Hard => unlinkat(&tree, rank_dir(0).as_c_str(), AtFlags::REMOVEDIR),
            Preset::Easy => Ok(()),
        }
        .and_then(|()| {
            drop(tree);
            unlinkat(rundir.fd(), TREE, AtFlags::REMOVEDIR)
        }),
        false => Ok(()),
    };
    ranks::agree(removed.map_err(|e| Error::failed(format!("cannot remove the tree root: {e}"))))
}

/// The plan's units cut to the files `from..to`.
fn clip(all: &[Unit], from: u64, to: u64) -> Vec<Unit> {
    all.iter()
        .filter_map(|u| {
            let (a, b) = (u.first.max(from), (u.first + u.count).min(to));
            (a < b).then(|| Unit { dir: u.dir, first: a, count: b - a })
        })
        .collect()
}

/// The create phase: the job's result, the files made by the stonewall (with one), and
/// the files every rank has at its end.
fn create_phase(
    env: &Env,
    create: &dyn Op,
    tree: &mut Prepared,
    all: &[Unit],
    root: &OwnedFd,
    watch: &TargetWatch,
    path: &std::path::Path,
) -> Result<(PhaseResult, Option<PhaseResult>, u64)> {
    let files = tree.plan.files;
    tree.plan.file_units = all.to_vec();
    let cache = ranks::agree(prepare_caches(env.caches, "create", &[path], 1))?;
    let Some(wall) = env.stonewall else {
        let r = watched(watch, cache, || {
            run_phase_on_every_rank(create, tree, root.as_fd(), &settings(env, 0, true), env.progress)
        });
        return Ok((r, None, files));
    };
    // Every rank's (files begun by the wall, seconds until every rank was there).
    let mut walls: Vec<(u64, f64)> = Vec::new();
    let r = watched(watch, cache, || {
        run_phase_everywhere(|| {
            let walled = Walled::new(create, wall);
            let (a, ha) = ops::run_phase(&walled, tree, root.as_fd(), &settings(env, 0, false), env.progress);
            let reached = walled.reached.load(Ordering::Relaxed);
            let mine = [reached.to_le_bytes(), a.elapsed_s.to_le_bytes()].concat();
            walls = ranks::all_gather(&mine).iter().map(|b| decode_wall(b)).collect();
            // mdtest: every rank goes on to the count the fastest reached (MPI_MAX).
            let most = walls.iter().map(|w| w.0).max().unwrap_or(reached);
            let to = if a.complete() { most } else { reached };
            tree.plan.file_units = clip(all, reached, to);
            let (b, hb) = ops::run_phase(create, tree, root.as_fd(), &settings(env, 0, true), env.progress);
            chain(a, ha, b, hb)
        })
    });
    let most = walls.iter().map(|w| w.0).max().unwrap_or(0);
    let at = walls.iter().map(|w| w.1).fold(0.0, f64::max);
    let made: u64 = walls.iter().map(|w| w.0).sum();
    let stonewall = PhaseResult {
        elapsed_s: at,
        files: made,
        bytes: made * env.preset.bytes(),
        threads: walls.len(),
        first_finish_s: at,
        last_finish_s: at,
        cache: r.cache.clone(),
        ..PhaseResult::default()
    };
    Ok((r, Some(stonewall), most))
}

fn decode_wall(b: &[u8]) -> (u64, f64) {
    let word = |i: usize| b.get(i * 8..i * 8 + 8).and_then(|s| s.try_into().ok()).unwrap_or([0; 8]);
    (u64::from_le_bytes(word(0)), f64::from_le_bytes(word(1)))
}

/// One phase after another as one: times and counts add up, the latency histograms merge.
fn chain(a: PhaseResult, ha: Histogram<u64>, b: PhaseResult, mut hb: Histogram<u64>) -> (PhaseResult, Histogram<u64>) {
    let _ = hb.add(&ha);
    let mut portions = a.portions.clone();
    portions.extend(b.portions.iter().map(|p| Portion { end_files: p.end_files + a.files, ..p.clone() }));
    let r = PhaseResult {
        elapsed_s: a.elapsed_s + b.elapsed_s,
        files: a.files + b.files,
        bytes: a.bytes + b.bytes,
        dirs: a.dirs + b.dirs,
        threads: a.threads.max(b.threads),
        cpu_user_s: a.cpu_user_s + b.cpu_user_s,
        cpu_sys_s: a.cpu_sys_s + b.cpu_sys_s,
        errors: a.errors + b.errors,
        first_error: a.first_error.or(b.first_error),
        interrupted: a.interrupted || b.interrupted,
        failed: a.failed.or(b.failed),
        portions,
        latency_us: Latency::from_histogram(&hb),
        first_finish_s: a.elapsed_s + b.first_finish_s,
        last_finish_s: a.elapsed_s + b.last_finish_s,
        returned_s: b.returned_s.map(|t| a.elapsed_s + t),
        flush_s: b.flush_s,
        ..b
    };
    (r, hb)
}

/// Create, stopped at the stonewall: files are begun in pieces of [`PIECE`], none after
/// `wall` from the first. One thread takes the units in order, so the files made are the
/// plan's first `reached`.
struct Walled<'a> {
    inner: &'a dyn Op,
    wall: Duration,
    start: OnceLock<Instant>,
    reached: AtomicU64,
    hit: AtomicBool,
}

impl<'a> Walled<'a> {
    fn new(inner: &'a dyn Op, wall: Duration) -> Walled<'a> {
        Walled { inner, wall, start: OnceLock::new(), reached: AtomicU64::new(0), hit: AtomicBool::new(false) }
    }
}

impl Op for Walled<'_> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn writes(&self) -> bool {
        true
    }
    fn before(&self, w: &mut Worker) {
        self.inner.before(w)
    }
    fn after(&self, w: &mut Worker) {
        self.inner.after(w)
    }
    fn unit(&self, w: &mut Worker, u: Unit) {
        let start = *self.start.get_or_init(Instant::now);
        let end = u.first + u.count;
        let mut f = u.first;
        while f < end && !w.stopping() {
            if self.hit.load(Ordering::Relaxed) || start.elapsed() >= self.wall {
                self.hit.store(true, Ordering::Relaxed);
                return;
            }
            let count = (end - f).min(PIECE);
            self.inner.unit(w, Unit { first: f, count, ..u });
            f += count;
            self.reached.store(f, Ordering::Relaxed);
        }
    }
}
