//! How many file operations an engine keeps in flight: fixed (`--threads`, `--in-flight`),
//! or moved while it runs to what the storage sustains (the default of copy, sync, scan
//! and rm on the local walker; the MPI variants keep their fixed threads).
//!
//! Where a file costs a network round trip (a share at 5 ms), one operation per core
//! leaves the link idle: the cost of an operation is waiting, and more of them in flight
//! finish more per second until the server, the client or the link saturates. On local
//! storage the same operations are CPU (µs of kernel time each) and more threads than
//! cores only add switches. So the engines run their per-entry work (statx, copy, unlink)
//! in *batches* through a [`Gate`] whose limit a controller moves:
//!
//! - the directory walk stays on the engine's walk threads (the cores); a directory's
//!   entries are split into batches claimed one after another by the directory's thread
//!   and by helpers on a second pool of up to `max` threads ([`for_ranges`],
//!   [`map_range`]), so a directory of 10,000 files is worked on by many threads at once;
//!   a batch's size follows the last per-operation latency (about 1 ms of work: 64
//!   entries locally, one entry at a round trip of 5 ms);
//! - every batch passes the gate: at most `limit` batches run at once; a batch measures
//!   its wall time and its thread's voluntary context switches (getrusage
//!   RUSAGE_THREAD: the thread slept, on a reply or a device; being preempted on a busy
//!   machine is an involuntary switch and does not count);
//! - every [`PERIOD`] the controller ([`Climb`]) takes the completions, wall and CPU time
//!   of the period and moves the limit.
//!
//! The rule is a hill climb on throughput with a waiting test, the kind of gradient rule
//! rcp's adaptive throttle and Netflix's concurrency-limits (gradient) use, simplified:
//! - raise (double) only when the operations slept (at least one voluntary switch per
//!   two operations: they wait on storage) and some batch had to queue at the gate (there
//!   is more work than the limit lets through);
//! - keep a raise if the next period's throughput rose by [`GAIN`], or if at least the
//!   latency per operation did not climb (by more than [`LATENCY_RISE`]: the period had
//!   too little work to show a gain, but the storage is not full); latency that climbed
//!   without throughput is a raise that did not pay: back to the previous limit, held
//!   [`HOLD`] periods before probing again;
//! - lower (×¾, never below the start) when the operations hardly sleep (fewer than
//!   one switch per ten operations): they are CPU, and more in flight than cores would
//!   only compete for the cores.
//!
//! Doubling reaches 64 from 2 in five periods (under a second), and a failed probe costs
//! one period at twice the limit. Why not pure AIMD: its additive increase needs tens of
//! periods to reach the tens of operations a 5 ms round trip wants, longer than a whole
//! run of a few thousand files; and why the sleeping test rather than wall against CPU
//! time: a throughput comparison alone is noisy on a loaded machine, wall time includes
//! waiting for a core there, and on local storage (warm: no sleep) the test keeps the
//! limit at the start instead of probing. Where the gate goes and where it starts:
//! [`super::default_plan`] (local runs keep their threads and no gate: it cost 4–11%).
//!
//! Directories: with a gate the walk runs on up to `max` threads, and each directory
//! task is a pass of the gate's directory lane (same limit): on a share, opening and
//! listing a directory are round trips too, and a tree of small directories needs them
//! in flight. Locally the extra walk threads wait at the lane.
//!
//! `MANYFILES_INFLIGHT_TRACE=1` prints each period's sample and new limit on stderr.
//!
//! Deadlock freedom: an entries pass is held only around leaf work (no rayon wait
//! inside); a directory pass may be held across rayon waits, so a thread holding one
//! passes that lane again without waiting (a directory task stolen while it waits), and
//! so does a thread inside [`for_ranges`] (what it waits for may be the very thread that
//! stole); a [`for_ranges`] called inside a batch runs inline.

use serde::{Deserialize, Serialize};
use std::cell::Cell;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Most operations an adaptive engine keeps in flight by default (helpers in its pool).
pub const DEFAULT_MAX: usize = 64;
/// Where the adaptive limit starts on storage known to cost a round trip per operation
/// (FUSE, network file systems): a scan of 10,000 files through sshfs at 1 ms lasts
/// ~0.4 s, under three periods, so climbing from the cores ended at 8 in flight and 0.385
/// s; started at 16 it took 0.229 s (bench/shares_race.sh, BENCHMARKS).
pub const ROUND_TRIP_START: usize = 16;
/// The controller's sampling period.
pub const PERIOD: Duration = Duration::from_millis(150);
/// Throughput a raise must add to be kept (×).
pub const GAIN: f64 = 1.2;
/// Latency per operation a raise may add (×) and still be kept without a gain.
pub const LATENCY_RISE: f64 = 1.3;
/// Periods a limit is held after a raise that did not pay.
pub const HOLD: u32 = 10;
/// Completions a period needs before it is judged.
const MIN_OPS: u64 = 4;
/// Work per batch the batch size aims at.
const BATCH_NS: u64 = 1_000_000;
/// Largest batch (local storage: a batch per 64 entries costs nothing measurable).
const MAX_BATCH: usize = 64;
/// Operations that sleep (a voluntary context switch for every two or fewer) and take at
/// least this long (wall, each) get helper threads: a FUSE or network round trip, a device
/// read. Warm local ones never sleep, however much CPU they cost (statx 1–5 µs, a small
/// file's copy with its ACLs 10–100 µs): they stay on the thread that listed their
/// directory, in its order, as before.
pub const HELPER_NS: u64 = 20_000;

/// What an engine was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// `n` threads, no controller (as `--threads N` or `--in-flight N`).
    Fixed(usize),
    /// Start at `start`, move between `start` and `max`.
    Adaptive { start: usize, max: usize },
}

impl Plan {
    /// The engines' options: threads, and the in-flight limit's most (None: no gate).
    pub fn threads_and_max(self) -> (usize, Option<usize>) {
        match self {
            Plan::Fixed(n) => (n, None),
            Plan::Adaptive { start, max } => (start, Some(max)),
        }
    }
}

/// The in-flight an engine used, for its summary and JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InFlightReport {
    /// `fixed` or `adaptive`.
    pub mode: String,
    /// Fixed (`--threads N`: no gate; `--in-flight N`: a gate held at N): the number;
    /// adaptive: where the limit started.
    pub start: usize,
    /// The limit's median and maximum over the run's periods (fixed: the number).
    pub median: usize,
    pub max: usize,
    /// With a gate: most passes seen running at once in one lane (directories, or batches
    /// of entries; each runs one operation at a time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak: Option<usize>,
    /// With a gate: periods of [`PERIOD`] sampled (the last, partial one too when it
    /// lasted a third of a period or more).
    pub samples: usize,
}

impl InFlightReport {
    pub fn fixed(n: usize) -> InFlightReport {
        InFlightReport { mode: "fixed".into(), start: n, median: n, max: n, peak: None, samples: 0 }
    }

    /// One line for a summary.
    pub fn text(&self) -> String {
        match self.peak {
            None => format!(
                "in flight: {} (one operation per thread; adaptive on FUSE and network file systems, or fixed by --in-flight)\n",
                self.start
            ),
            Some(peak) if self.mode == "fixed" => {
                format!("in flight: {} (fixed; at most {peak} ran at once)\n", self.start)
            }
            Some(peak) => format!(
                "in flight: adaptive from {}: median {}, max {} over {} periods of {} ms (at most {} ran at once)\n",
                self.start,
                self.median,
                self.max,
                self.samples,
                PERIOD.as_millis(),
                peak
            ),
        }
    }
}

/// One period's measurements.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    /// Operations of the passes that ended (a directory: one; a batch: its entries).
    pub ops: u64,
    pub secs: f64,
    /// Entries done, gated or not (the throughput: one unit whatever the lane).
    pub done: u64,
    /// Mean wall time of a pass's operation: of the directory lane when it ended
    /// [`MIN_OPS`] or more, else of the entries lane.
    pub lat_ns: f64,
    /// The passes' threads' voluntary context switches (sleeps).
    pub sleeps: u64,
    /// Passes that had to wait at the gate.
    pub queued: u64,
}

/// The controller's state (see the module doc for the rule).
#[derive(Debug, Clone)]
pub struct Climb {
    pub limit: usize,
    floor: usize,
    max: usize,
    /// After a raise: the limit before it, and the throughput and latency it had.
    probe: Option<(usize, f64, f64)>,
    hold: u32,
}

impl Climb {
    pub fn new(start: usize, max: usize) -> Climb {
        let start = start.max(1);
        Climb { limit: start, floor: start, max: max.max(start), probe: None, hold: 0 }
    }

    /// The limit for the next period, given this one's sample.
    pub fn step(&mut self, s: &Sample) -> usize {
        if s.done < MIN_OPS || s.ops == 0 || s.secs <= 0.0 {
            return self.limit;
        }
        let x = s.done as f64 / s.secs;
        let lat = s.lat_ns;
        let sleeps = s.sleeps as f64 / s.ops as f64;
        // A raise is kept when throughput followed it, or when at least the latency did
        // not climb (the period lacked work to show a gain, but the storage is not full);
        // latency that climbed without throughput means the storage (or a lock in front
        // of it) is full: back, and hold.
        if let Some((prev, px, plat)) = self.probe.take()
            && x < px * GAIN
            && lat > plat * LATENCY_RISE
        {
            self.limit = prev;
            self.hold = HOLD;
            return self.limit;
        }
        if self.hold > 0 {
            self.hold -= 1;
            return self.limit;
        }
        if sleeps >= 0.5 && s.queued > 0 && self.limit < self.max {
            self.probe = Some((self.limit, x, lat));
            self.limit = (self.limit * 2).min(self.max);
        } else if sleeps < 0.1 && self.limit > self.floor {
            self.limit = (self.limit * 3 / 4).max(self.floor);
        }
        self.limit
    }
}

/// The gate's lanes: a directory's own work (open, getdents, what is not split) and
/// batches of its entries. Each has the limit; a thread holding a pass of a lane passes
/// that lane again without waiting (work stolen while it waits on rayon).
const ENTRIES: usize = 0;
const DIRS: usize = 1;

thread_local! {
    /// Passes this thread holds, per lane.
    static HELD: [Cell<u32>; 2] = const { [Cell::new(0), Cell::new(0)] };
}

fn held(lane: usize) -> u32 {
    HELD.with(|h| h[lane].get())
}

/// Marks this thread as inside work a directory pass waits for (see [`for_ranges`]).
struct Nest;

impl Nest {
    fn new() -> Nest {
        HELD.with(|h| h[DIRS].set(h[DIRS].get() + 1));
        Nest
    }
}

impl Drop for Nest {
    fn drop(&mut self) {
        HELD.with(|h| h[DIRS].set(h[DIRS].get() - 1));
    }
}

/// This thread's voluntary context switches so far.
fn thread_sleeps() -> u64 {
    // rustix has no getrusage; RUSAGE_THREAD is one call through libc.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc == 0 { ru.ru_nvcsw as u64 } else { 0 }
}

/// One lane's count of passes and its waiters.
#[derive(Default)]
struct Lane {
    running: AtomicUsize,
    waiting: AtomicUsize,
    peak: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
}

/// The limit on passes in flight, its measurements, and the helpers' pool.
pub struct Gate {
    limit: AtomicUsize,
    lanes: [Lane; 2],
    /// Per lane: operations and wall time of the passes that ended this period.
    ops: [AtomicU64; 2],
    wall_ns: [AtomicU64; 2],
    /// Entries done this period (every batch of [`for_ranges`]).
    done: AtomicU64,
    sleeps: AtomicU64,
    queued: AtomicU64,
    start: usize,
    max: usize,
    pool: OnceLock<rayon::ThreadPool>,
    samples: Mutex<Vec<usize>>,
}

/// One pass through the gate (a directory's work, or a batch of entries); released when
/// dropped.
pub struct Pass<'a> {
    gate: &'a Gate,
    lane: usize,
    nested: bool,
    ops: u64,
    t0: Instant,
    sleeps0: u64,
}

impl Pass<'_> {
    /// The pass did `n` operations.
    pub fn count(&mut self, n: usize) {
        self.ops += n as u64;
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        HELD.with(|h| h[self.lane].set(h[self.lane].get() - 1));
        if self.nested {
            return;
        }
        let g = self.gate;
        if self.ops > 0 {
            let wall = self.t0.elapsed().as_nanos() as u64;
            let sleeps = thread_sleeps().saturating_sub(self.sleeps0);
            g.ops[self.lane].fetch_add(self.ops, Ordering::Relaxed);
            g.wall_ns[self.lane].fetch_add(wall, Ordering::Relaxed);
            g.sleeps.fetch_add(sleeps, Ordering::Relaxed);
        }
        let l = &g.lanes[self.lane];
        l.running.fetch_sub(1, Ordering::SeqCst);
        if l.waiting.load(Ordering::SeqCst) > 0 {
            let _l = l.lock.lock().unwrap_or_else(|p| p.into_inner());
            l.cv.notify_one();
        }
    }
}

impl Gate {
    pub fn new(start: usize, max: usize) -> Gate {
        let start = start.max(1);
        Gate {
            limit: AtomicUsize::new(start),
            lanes: Default::default(),
            ops: Default::default(),
            wall_ns: Default::default(),
            done: AtomicU64::new(0),
            sleeps: AtomicU64::new(0),
            queued: AtomicU64::new(0),
            start,
            max: max.max(start),
            pool: OnceLock::new(),
            samples: Mutex::new(Vec::new()),
        }
    }

    /// A gate for `plan` (None for a fixed plan: no gate, no cost).
    pub fn for_plan(plan: Plan) -> Option<Gate> {
        match plan {
            Plan::Fixed(_) => None,
            Plan::Adaptive { start, max } => Some(Gate::new(start, max)),
        }
    }

    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    fn set_limit(&self, n: usize) {
        let old = self.limit.swap(n, Ordering::SeqCst);
        if n > old {
            for l in &self.lanes {
                let _l = l.lock.lock().unwrap_or_else(|p| p.into_inner());
                l.cv.notify_all();
            }
        }
    }

    /// A batch of entries: waits for room (unless this thread holds such a pass already).
    pub fn enter(&self) -> Pass<'_> {
        self.enter_lane(ENTRIES)
    }

    /// A directory's own work, as [`Gate::enter`]; counts one operation.
    pub fn enter_dir(&self) -> Pass<'_> {
        let mut p = self.enter_lane(DIRS);
        p.count(1);
        p
    }

    fn enter_lane(&self, lane: usize) -> Pass<'_> {
        let nested = HELD.with(|h| {
            h[lane].set(h[lane].get() + 1);
            h[lane].get() > 1
        });
        if nested {
            return Pass { gate: self, lane, nested, ops: 0, t0: Instant::now(), sleeps0: 0 };
        }
        let l = &self.lanes[lane];
        let mut waited = false;
        let now = loop {
            let r = l.running.load(Ordering::SeqCst);
            if r < self.limit.load(Ordering::SeqCst) {
                if l.running.compare_exchange_weak(r, r + 1, Ordering::SeqCst, Ordering::Relaxed).is_ok() {
                    break r + 1;
                }
                continue;
            }
            waited = true;
            let g = l.lock.lock().unwrap_or_else(|p| p.into_inner());
            l.waiting.fetch_add(1, Ordering::SeqCst);
            if l.running.load(Ordering::SeqCst) >= self.limit.load(Ordering::SeqCst) {
                // The timeout only guards against a wake-up lost to a race.
                drop(l.cv.wait_timeout(g, Duration::from_millis(20)).unwrap_or_else(|p| p.into_inner()));
            }
            l.waiting.fetch_sub(1, Ordering::SeqCst);
        };
        if waited {
            self.queued.fetch_add(1, Ordering::Relaxed);
        }
        l.peak.fetch_max(now, Ordering::Relaxed);
        Pass { gate: self, lane, nested, ops: 0, t0: Instant::now(), sleeps0: thread_sleeps() }
    }

    fn pool(&self) -> &rayon::ThreadPool {
        self.pool.get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(self.max)
                .thread_name(|i| format!("manyfiles-io-{i}"))
                .build()
                .expect("a thread pool can be built")
        })
    }

    /// This period's measurements (and a fresh start for the next).
    fn take(&self, secs: f64) -> Sample {
        let ops = [0, 1].map(|l| self.ops[l].swap(0, Ordering::Relaxed));
        let wall = [0, 1].map(|l| self.wall_ns[l].swap(0, Ordering::Relaxed));
        let lane = if ops[DIRS] >= MIN_OPS { DIRS } else { ENTRIES };
        Sample {
            ops: ops[0] + ops[1],
            secs,
            done: self.done.swap(0, Ordering::Relaxed),
            lat_ns: if ops[lane] == 0 { 0.0 } else { wall[lane] as f64 / ops[lane] as f64 },
            sleeps: self.sleeps.swap(0, Ordering::Relaxed),
            queued: self.queued.swap(0, Ordering::Relaxed),
        }
    }

    /// What the run used.
    pub fn report(&self) -> InFlightReport {
        let mut s = self.samples.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let samples = s.len();
        if s.is_empty() {
            s.push(self.start);
        }
        s.sort_unstable();
        InFlightReport {
            // `--in-flight N`: a gate whose limit cannot move.
            mode: if self.start == self.max { "fixed" } else { "adaptive" }.into(),
            start: self.start,
            median: s[s.len() / 2],
            max: *s.last().expect("one at least"),
            peak: Some(self.lanes.iter().map(|l| l.peak.load(Ordering::Relaxed)).max().unwrap_or(0)),
            samples,
        }
    }
}

/// The report of a run with `gate` (or fixed at `threads` without one).
pub fn report(gate: Option<&Gate>, threads: usize) -> InFlightReport {
    gate.map_or_else(|| InFlightReport::fixed(threads), Gate::report)
}

/// Runs `body` with the controller moving `gate`'s limit every [`PERIOD`] (without a
/// gate: `body` alone).
pub fn controlled<T>(gate: Option<&Gate>, body: impl FnOnce() -> T) -> T {
    let Some(g) = gate else { return body() };
    let done = (Mutex::new(false), Condvar::new());
    std::thread::scope(|s| {
        let done = &done;
        s.spawn(move || {
            let mut climb = Climb::new(g.start, g.max);
            let trace = std::env::var_os("MANYFILES_INFLIGHT_TRACE").is_some();
            let mut last = Instant::now();
            let mut stop = done.0.lock().unwrap_or_else(|p| p.into_inner());
            while !*stop {
                stop = done.1.wait_timeout(stop, PERIOD).unwrap_or_else(|p| p.into_inner()).0;
                if *stop || last.elapsed() < PERIOD {
                    continue;
                }
                let sample = g.take(last.elapsed().as_secs_f64());
                last = Instant::now();
                // The limit in force during this period.
                g.samples.lock().unwrap_or_else(|p| p.into_inner()).push(climb.limit);
                let was = climb.limit;
                g.set_limit(climb.step(&sample));
                if trace {
                    eprintln!("manyfiles: in flight {was} → {}: {sample:?}", climb.limit);
                }
            }
            // The last, partial period counts when it lasted a third of one or more.
            if last.elapsed() >= PERIOD / 3 {
                g.samples.lock().unwrap_or_else(|p| p.into_inner()).push(climb.limit);
            }
        });
        let out = body();
        *done.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
        done.1.notify_all();
        out
    })
}

/// Entries per batch at `ns` per operation (0: not measured yet): about [`BATCH_NS`].
fn batch_for(ns: u64) -> usize {
    match ns {
        0 => 8,
        ns => ((BATCH_NS / ns) as usize).clamp(1, MAX_BATCH),
    }
}

/// Runs `f` over `0..n` in ranges. Without a gate (fixed plans): `f(0..n)` here, as
/// before. With one: batches (about [`BATCH_NS`] of work each) claimed in turn; while
/// this call's operations do not wait on storage (see [`HELPER_NS`]: warm local storage)
/// this thread runs them all, in order (no pass, no helper, no second pool: today's work
/// on today's threads); once they do (a share, a cold device) every batch is a pass of
/// the gate and helpers on the gate's pool claim batches too, so a directory of 10,000
/// files is worked on by as many threads as the limit lets through.
pub fn for_ranges(gate: Option<&Gate>, n: usize, f: impl Fn(Range<usize>) + Sync) {
    for_ranges_split(gate, n, &f, &f)
}

/// [`for_ranges`] with the calling thread's ranges given to `here` (which may hold what
/// only this thread may touch: the walk's spawn) and the helpers' to `shared`.
pub fn for_ranges_split(
    gate: Option<&Gate>,
    n: usize,
    mut here: impl FnMut(Range<usize>),
    shared: impl Fn(Range<usize>) + Sync,
) {
    let Some(g) = gate else { return here(0..n) };
    if held(ENTRIES) > 0 {
        // Inside a batch (nested work): here, in one go.
        return here(0..n);
    }
    // While this call waits for its helpers, rayon may hand this thread another
    // directory task: it must not wait at the directory lane (what it waits for could be
    // this very call), so it counts as holding a directory pass meanwhile.
    let _nest = Nest::new();
    let next = AtomicUsize::new(0);
    // This call's latest wall time per operation, and whether its operations wait.
    let op_ns = AtomicU64::new(0);
    let waits = AtomicBool::new(false);
    // Claims and runs one batch with `run` (through the gate when `gated`); false when
    // none is left.
    let one = |gated: bool, run: &mut dyn FnMut(Range<usize>)| {
        let b = batch_for(op_ns.load(Ordering::Relaxed));
        let s = next.fetch_add(b, Ordering::Relaxed);
        if s >= n {
            return false;
        }
        let e = (s + b).min(n);
        let t0 = Instant::now();
        if gated {
            let mut p = g.enter();
            run(s..e);
            p.count(e - s);
        } else {
            let s0 = thread_sleeps();
            run(s..e);
            let slept = thread_sleeps().saturating_sub(s0);
            let ns = t0.elapsed().as_nanos() as u64 / (e - s) as u64;
            waits.store(2 * slept >= (e - s) as u64 && ns >= HELPER_NS, Ordering::Relaxed);
        }
        op_ns.store((t0.elapsed().as_nanos() as u64 / (e - s) as u64).max(1), Ordering::Relaxed);
        g.done.fetch_add((e - s) as u64, Ordering::Relaxed);
        true
    };
    while !waits.load(Ordering::Relaxed) {
        if !one(false, &mut here) {
            return;
        }
    }
    let left = n.saturating_sub(next.load(Ordering::Relaxed));
    if left == 0 {
        return;
    }
    // Helpers only for the room the directory lane leaves, looked at again after every
    // batch (the limit moves): with the limit's worth of directories in flight (a scan of
    // many small directories) the operations are in flight already, and helpers would
    // only add thread switches on the cores the share's client needs (a 10,000-file scan
    // through sshfs: 16,000 sched_yield and as many getrusage calls from helpers of
    // 100-entry directories; 0.22 s, 0.19 s with helpers kept to the room).
    let most = (left.div_ceil(batch_for(op_ns.load(Ordering::Relaxed))) - 1).min(g.max);
    let room = || g.limit().saturating_sub(g.lanes[DIRS].running.load(Ordering::Relaxed)).min(most);
    let stop = AtomicBool::new(false);
    let (one, shared, stop) = (&one, &shared, &stop);
    g.pool().in_place_scope(|sc| {
        let mut helpers = 0;
        loop {
            while helpers < room() {
                helpers += 1;
                sc.spawn(move |_| {
                    // Until nothing is left (or the call is over before this helper started).
                    while !stop.load(Ordering::Relaxed) {
                        if !one(true, &mut |r| shared(r)) {
                            break;
                        }
                    }
                });
            }
            if !one(true, &mut here) {
                break;
            }
        }
        // Helpers not started yet have nothing left to claim.
        stop.store(true, Ordering::Relaxed);
    });
}

/// The walk's threads: with a gate, enough for its largest limit (directory tasks wait
/// at the gate's directory lane: at most the limit run at once); without, `threads`.
pub fn walk_threads(gate: Option<&Gate>, threads: usize) -> usize {
    gate.map_or(threads, |g| g.max.max(threads))
}

/// A directory task's pass (None without a gate).
pub fn enter_dir(gate: Option<&Gate>) -> Option<Pass<'_>> {
    gate.map(Gate::enter_dir)
}

/// Above this many entries [`for_chunks`] spreads a call over the calling pool's
/// threads in chunks of this size, as the engines split a large directory without a gate.
const PAR_CHUNK: usize = 2048;

/// [`for_ranges`] for work in any order (statx, unlink): more than [`PAR_CHUNK`] entries
/// go in chunks of that size to at most the gate's limit of the calling pool's threads
/// (each chunk through [`for_ranges`]): warm local storage gets a large directory's work
/// on as many threads as the engine had before the gate.
pub fn for_chunks(gate: Option<&Gate>, n: usize, f: impl Fn(Range<usize>) + Sync) {
    let Some(g) = gate else { return f(0..n) };
    if n <= PAR_CHUNK || held(ENTRIES) > 0 {
        return for_ranges(gate, n, f);
    }
    let next = AtomicUsize::new(0);
    let claim = || {
        loop {
            let s = next.fetch_add(PAR_CHUNK, Ordering::Relaxed);
            if s >= n {
                return;
            }
            let e = (s + PAR_CHUNK).min(n);
            for_ranges(gate, e - s, |r| f(s + r.start..s + r.end));
        }
    };
    let k = g.limit().min(n.div_ceil(PAR_CHUNK));
    let claim = &claim;
    rayon::scope(|sc| {
        for _ in 1..k {
            sc.spawn(move |_| claim());
        }
        claim();
    });
}

/// `f(0) … f(n - 1)`, in order, through [`for_chunks`].
pub fn map_range<R: Send>(gate: Option<&Gate>, n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    if gate.is_none() {
        return (0..n).map(f).collect();
    }
    let parts = Mutex::new(Vec::new());
    for_chunks(gate, n, |r| {
        let start = r.start;
        let out: Vec<R> = r.map(&f).collect();
        parts.lock().unwrap_or_else(|p| p.into_inner()).push((start, out));
    });
    let mut parts = parts.into_inner().unwrap_or_else(|p| p.into_inner());
    parts.sort_unstable_by_key(|p| p.0);
    parts.into_iter().flat_map(|p| p.1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A period of `limit` operations in flight against a model where each waits `wait`
    /// µs (sleeping once, if it waits at all) and uses `cpu` µs of one of `cores` CPUs.
    fn model(limit: usize, wait_us: f64, cpu_us: f64, cores: usize) -> Sample {
        let per_op = wait_us + cpu_us;
        // Throughput: limited by in-flight over latency and by the CPUs.
        let x = (limit as f64 / per_op).min(cores as f64 / cpu_us) * 1e6;
        let secs = 0.15;
        let ops = (x * secs) as u64;
        Sample {
            ops,
            secs,
            done: ops,
            // Little's law: every slot busy for the whole period.
            lat_ns: limit as f64 * secs * 1e9 / ops.max(1) as f64,
            sleeps: if wait_us > 0.0 { ops } else { 0 },
            queued: 10,
        }
    }

    #[test]
    fn waiting_ops_raise_the_limit_until_throughput_stops_following() {
        // 5 ms waits, 50 µs of CPU on 2 cores: throughput follows the limit up to
        // 2 / 50 µs = 40,000/s, i.e. about 200 in flight; with max 64 the limit gets there.
        let mut c = Climb::new(2, 64);
        let mut seen = vec![];
        for _ in 0..20 {
            let s = model(c.limit, 5000.0, 50.0, 2);
            seen.push(c.step(&s));
        }
        assert_eq!(*seen.iter().max().unwrap(), 64, "{seen:?}");
        assert!(seen.iter().position(|&l| l >= 8).unwrap() <= 3, "{seen:?}");
        // CPU bound at 16: 1 ms waits, 500 µs CPU, 2 cores → 4,000/s from about 6 in
        // flight: the limit settles where raising stops paying.
        let mut c = Climb::new(2, 64);
        let mut last = vec![];
        for _ in 0..60 {
            let s = model(c.limit, 1000.0, 500.0, 2);
            last.push(c.step(&s));
        }
        let settled = &last[30..];
        assert!(settled.iter().filter(|&&l| l <= 8).count() >= settled.len() * 3 / 4, "{last:?}");
    }

    #[test]
    fn cpu_bound_ops_keep_the_start() {
        // No waits, 10 µs CPU: ops are CPU; the limit never leaves the start.
        let mut c = Climb::new(2, 64);
        for _ in 0..50 {
            let s = model(c.limit, 0.0, 10.0, 2);
            assert_eq!(c.step(&s), 2);
        }
        // Nothing queued (less work than the limit): no raise even while waiting.
        let mut c = Climb::new(2, 64);
        let mut s = model(2, 5000.0, 10.0, 2);
        s.queued = 0;
        assert_eq!(c.step(&s), 2);
        // Too few completions to judge: unchanged.
        assert_eq!(c.step(&Sample { ops: 1, secs: 0.15, done: 1, lat_ns: 1.0, sleeps: 1, queued: 5 }), 2);
    }

    #[test]
    fn gate_with_sleeping_ops_rises_and_with_cpu_ops_stays() {
        // Real threads: 3,000 operations of 2 ms sleep each (waiting on "storage"): about
        // 1,000/s at the start's 2, doubling each period while the limit doubles.
        let g = Gate::new(2, 32);
        controlled(Some(&g), || {
            for_ranges(Some(&g), 3000, |r| {
                for _ in r {
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        });
        let r = g.report();
        assert!(r.max >= 8 && r.peak.unwrap() >= 8, "{r:?}");
        // CPU-bound operations (a spin of 50 µs each) from 8 threads through the gate:
        // they never sleep, so the limit stays at 2.
        let g = Gate::new(2, 32);
        controlled(Some(&g), || {
            std::thread::scope(|s| {
                for _ in 0..8 {
                    s.spawn(|| {
                        let end = Instant::now() + Duration::from_millis(600);
                        while Instant::now() < end {
                            let mut p = g.enter();
                            let t = Instant::now();
                            while t.elapsed() < Duration::from_micros(50) {
                                std::hint::spin_loop();
                            }
                            p.count(1);
                        }
                    });
                }
            })
        });
        let r = g.report();
        assert!(r.samples >= 2 && r.max <= 2 && r.peak.unwrap() <= 2, "{r:?}");
        // Through for_ranges they are not even gated: this thread, in order.
        let seen = Mutex::new(Vec::new());
        for_ranges(Some(&g), 1000, |r| seen.lock().unwrap().push(r));
        let seen = seen.into_inner().unwrap();
        assert!(seen.windows(2).all(|w| w[0].end == w[1].start) && seen.last().unwrap().end == 1000, "{seen:?}");
    }

    #[test]
    fn map_range_keeps_order_and_every_item() {
        let items: Vec<u32> = (0..10_000).collect();
        let g = Gate::new(2, 8);
        assert_eq!(map_range(Some(&g), items.len(), |i| items[i] * 2), items.iter().map(|x| x * 2).collect::<Vec<_>>());
        assert_eq!(map_range(None, items.len(), |i| items[i] + 1)[9_999], 10_000);
        // Nested: a pass held while mapping runs inline, no deadlock.
        let _p = g.enter();
        assert_eq!(map_range(Some(&g), 100, |i| items[i]).len(), 100);
    }
}
