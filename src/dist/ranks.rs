//! Many clients at once: the same experiment on every MPI rank (started by `mpirun` or
//! `srun`), phases started together behind a barrier and aggregated as HPC storage
//! benchmarks do (IOR, mdtest): the rate from the last finisher and from the first
//! finisher ("stonewall").
//!
//! Without the `mpi` feature, or when the process was not started by an MPI launcher,
//! there is one rank and every function here is a no-op: the tool behaves as before.
//! Only the few collective calls the tool needs are wrapped (barrier, all-gather of
//! bytes, abort), so the rest of the code never sees MPI.

use crate::error::{Error, Result};
use crate::measure::{Latency, PhaseResult, Portion, portions_from_points};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

#[cfg(feature = "mpi")]
mod world {
    use mpi::datatype::PartitionMut;
    use mpi::topology::{Communicator, SimpleCommunicator};
    use mpi::traits::CommunicatorCollectives;
    use std::sync::{Mutex, OnceLock};

    static UNIVERSE: OnceLock<Mutex<Option<mpi::environment::Universe>>> = OnceLock::new();

    /// Environment variables set by the launchers we know (OpenMPI, MPICH/Hydra, PMIx, Slurm).
    fn launched() -> bool {
        ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"]
            .iter()
            .any(|v| std::env::var_os(v).is_some())
    }

    pub fn init() {
        if !launched() {
            return;
        }
        // Funneled: only the main thread makes MPI calls (workers never do).
        if let Some((u, _)) = mpi::initialize_with_threading(mpi::Threading::Funneled) {
            let _ = UNIVERSE.set(Mutex::new(Some(u)));
        }
    }

    fn active() -> bool {
        UNIVERSE.get().is_some()
    }

    pub fn rank() -> usize {
        if active() { SimpleCommunicator::world().rank() as usize } else { 0 }
    }

    pub fn size() -> usize {
        if active() { SimpleCommunicator::world().size() as usize } else { 1 }
    }

    pub fn barrier() {
        if active() {
            SimpleCommunicator::world().barrier();
        }
    }

    pub fn all_gather(mine: &[u8]) -> Vec<Vec<u8>> {
        if !active() {
            return vec![mine.to_vec()];
        }
        let world = SimpleCommunicator::world();
        let n = world.size() as usize;
        // One leading byte so no rank sends or receives an empty buffer (which some MPI
        // libraries refuse in MPI_Allgatherv).
        let mut framed = Vec::with_capacity(mine.len() + 1);
        framed.push(1u8);
        framed.extend_from_slice(mine);
        let mine = &framed[..];
        let len = mine.len() as i32;
        let mut lens = vec![0i32; n];
        world.all_gather_into(&len, &mut lens[..]);
        let displs: Vec<i32> = lens.iter().scan(0, |acc, &l| Some(std::mem::replace(acc, *acc + l))).collect();
        let mut all = vec![0u8; lens.iter().map(|&l| l as usize).sum()];
        {
            let mut part = PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
            world.all_gather_varcount_into(mine, &mut part);
        }
        lens.iter().zip(&displs).map(|(&l, &d)| all[d as usize + 1..(d + l) as usize].to_vec()).collect()
    }

    pub fn abort(code: i32) -> ! {
        SimpleCommunicator::world().abort(code)
    }

    pub fn finalize() {
        if let Some(m) = UNIVERSE.get() {
            drop(m.lock().unwrap_or_else(|p| p.into_inner()).take());
        }
    }
}

#[cfg(not(feature = "mpi"))]
mod world {
    pub fn init() {}
    pub fn rank() -> usize {
        0
    }
    pub fn size() -> usize {
        1
    }
    pub fn barrier() {}
    pub fn all_gather(mine: &[u8]) -> Vec<Vec<u8>> {
        vec![mine.to_vec()]
    }
    pub fn abort(code: i32) -> ! {
        std::process::exit(code)
    }
    pub fn finalize() {}
}

/// Joins the MPI job when started by a launcher (call first thing in `main`).
pub fn init() {
    world::init()
}

/// Leaves the MPI job (call before exiting normally).
pub fn finalize() {
    world::finalize()
}

/// This process's rank (0 without MPI).
pub fn rank() -> usize {
    world::rank()
}

/// Number of ranks (1 without MPI).
pub fn size() -> usize {
    world::size()
}

/// Rank 0 prints, shows progress and writes results; the others only work.
pub fn is_root() -> bool {
    rank() == 0
}

pub fn barrier() {
    world::barrier()
}

/// Collective: `at_depth(d)` for every depth `d` from the deepest of any rank (`mine`:
/// this rank's deepest) up to 0, a barrier after each, so that no rank starts a depth
/// before every rank has finished the one below (directories removed or their metadata
/// set after everything below them).
pub fn deepest_first(mine: u32, mut at_depth: impl FnMut(u32)) {
    let max =
        all_gather(&mine.to_le_bytes()).iter().map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).max().unwrap_or(0);
    for d in (0..=max).rev() {
        at_depth(d);
        barrier();
    }
}

/// Every rank's bytes, in rank order, on every rank.
pub fn all_gather(mine: &[u8]) -> Vec<Vec<u8>> {
    world::all_gather(mine)
}

/// Rank 0's values on every rank: a decision every rank must follow alike (one rank:
/// the values themselves).
pub fn from_root(mine: Vec<u32>) -> Vec<u32> {
    if size() < 2 {
        return mine;
    }
    let bytes: Vec<u8> = mine.iter().flat_map(|v| v.to_le_bytes()).collect();
    let all = all_gather(&bytes);
    all.first().map_or(mine, |r| r.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// Ends every rank of the job at once with `code` (a rank that failed alone would
/// otherwise leave the others waiting at the next barrier).
pub fn abort(code: i32) -> ! {
    world::abort(code)
}

static SHARED_DIR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `--shared-dir`: every rank works in the same directories (rank 0's run directory and
/// tree), each on its own files (names end in `.r<rank>`), to load directories from many
/// clients at once. Directories are made and removed by rank 0 alone, behind barriers.
pub fn set_shared_dir(on: bool) {
    SHARED_DIR.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// `--shared-dir` in a job of more than one rank.
pub fn shared_dir() -> bool {
    SHARED_DIR.load(std::sync::atomic::Ordering::Relaxed) && size() > 1
}

/// Does this rank make and remove the directories? (All ranks do, except with
/// `--shared-dir`, where only rank 0 does.)
pub fn makes_dirs() -> bool {
    !shared_dir() || is_root()
}

/// With `--shared-dir`: wait for every rank (e.g. until rank 0 made the directories).
pub fn shared_barrier() {
    if shared_dir() {
        barrier();
    }
}

/// Collective: whether `mine` is true on any rank (the same answer on every rank).
pub fn any(mine: bool) -> bool {
    all_gather(&[mine as u8]).iter().any(|b| b.first() == Some(&1))
}

/// Collective: every rank must have opened the same directories (a file system every rank
/// sees), compared by their inode numbers `inos` (device numbers of one network file system
/// differ between hosts); otherwise bad input for `flag` on every rank, saying `why`.
pub fn same_dirs(inos: &[u64], flag: &str, why: &str) -> Result<()> {
    let mine: Vec<u8> = inos.iter().flat_map(|i| i.to_le_bytes()).collect();
    let same = all_gather(&mine).iter().all(|b| *b == mine);
    agree(if same { Ok(()) } else { Err(Error::bad(flag, why)) })
}

static AGREED_FAILURE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Every rank learns whether every rank succeeded; if one failed, all return an error
/// naming the first failed rank (with its exit code), so all ranks stop at the same point
/// and leave cleanly instead of waiting at a barrier. With one rank, returns `r` as is.
pub fn agree<T>(r: Result<T>) -> Result<T> {
    if size() == 1 {
        return r;
    }
    let mine = match &r {
        Ok(_) => String::new(),
        Err(e) => format!("{}\t{e}", e.exit_code()),
    };
    let all = all_gather(mine.as_bytes());
    let failed = all.iter().enumerate().find(|(_, b)| !b.is_empty());
    match (r, failed) {
        (Ok(v), None) => Ok(v),
        (r, Some((i, b))) => {
            AGREED_FAILURE.store(true, std::sync::atomic::Ordering::Relaxed);
            if let Err(e) = r {
                if i == rank() {
                    return Err(e);
                }
            }
            let text = String::from_utf8_lossy(b);
            let (code, msg) = text.split_once('\t').unwrap_or(("1", &text));
            let msg = format!("rank {i}: {msg}");
            Err(match code.parse::<i32>() {
                Ok(2) => Error::bad("MPI", msg),
                Ok(c) if c > 128 => Error::Interrupted { signal: c - 128 },
                _ => Error::failed(msg),
            })
        }
        (Err(e), None) => Err(e), // cannot happen: our own failure is in `all`
    }
}

/// A failure every rank knows of (from [`agree`]): each rank can leave normally.
pub fn failure_agreed() -> bool {
    AGREED_FAILURE.load(std::sync::atomic::Ordering::Relaxed)
}

/// Host names of every rank, in rank order.
pub fn hosts() -> Vec<String> {
    let me = rustix::system::uname().nodename().to_string_lossy().into_owned();
    all_gather(me.as_bytes()).into_iter().map(|b| String::from_utf8_lossy(&b).into_owned()).collect()
}

/// `{rank}` in a target path becomes this rank's number (a directory per rank, e.g. on
/// node-local storage or to load one shared file system from per-rank subtrees).
pub fn expand(path: &std::path::Path) -> std::path::PathBuf {
    let s = path.to_string_lossy();
    if s.contains("{rank}") { s.replace("{rank}", &rank().to_string()).into() } else { path.to_path_buf() }
}

/// How a phase spread across ranks (present only when more than one rank ran it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankSpread {
    pub ranks: usize,
    /// Each rank's own elapsed time, in rank order.
    pub rank_elapsed_s: Vec<f64>,
    /// Each rank's files, in rank order.
    pub rank_files: Vec<u64>,
    /// First rank to finish (seconds from the common start).
    pub stonewall_s: f64,
    /// Files done by all ranks together when the first rank finished (from each rank's
    /// per-portion progress, interpolated linearly within a portion).
    pub stonewall_files: u64,
}

/// What each rank sends after a phase: its result and its latency histogram
/// (percentiles cannot be merged, histograms can).
#[derive(Serialize, Deserialize)]
struct RankReport {
    result: PhaseResult,
    /// Latency histogram as (value ns, count) pairs.
    latency_ns: Vec<(u64, u64)>,
}

/// Runs `phase` on every rank at once (a barrier first) and returns the aggregate on
/// every rank, so all ranks take the same decisions afterwards (stop or go on).
/// With one rank, returns the phase's own result.
pub fn run_phase_everywhere(phase: impl FnOnce() -> (PhaseResult, Histogram<u64>)) -> PhaseResult {
    if size() == 1 {
        return phase().0;
    }
    barrier();
    let (result, hist) = phase();
    let report = RankReport {
        result,
        latency_ns: hist.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect(),
    };
    let bytes = serde_json::to_vec(&report).expect("a phase result serialises");
    let reports: Vec<RankReport> = all_gather(&bytes)
        .iter()
        .map(|b| serde_json::from_slice(b).expect("every rank runs the same manyfiles"))
        .collect();
    let agg = aggregate(reports.into_iter().map(|r| (r.result, r.latency_ns)).collect());
    if agg.failed.is_some() || agg.interrupted {
        // Every rank has this same result and stops the same way.
        AGREED_FAILURE.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    agg
}

/// Files a rank had done `t` seconds into its phase, from its portions.
fn files_at(r: &PhaseResult, t: f64) -> u64 {
    if t >= r.elapsed_s {
        return r.files;
    }
    let (mut at, mut done) = (0.0, 0u64);
    for p in &r.portions {
        if at + p.elapsed_s >= t {
            let frac = if p.elapsed_s > 0.0 { (t - at) / p.elapsed_s } else { 1.0 };
            return done + (p.files as f64 * frac.clamp(0.0, 1.0)).round() as u64;
        }
        at += p.elapsed_s;
        done = p.end_files;
    }
    done
}

/// One result for the job from every rank's (result, latency histogram), in rank order:
/// counts add up, time is the last finisher's, the stonewall the first's.
fn aggregate(ranks: Vec<(PhaseResult, Vec<(u64, u64)>)>) -> PhaseResult {
    let mut hist = crate::measure::new_histogram();
    for (_, h) in &ranks {
        for &(v, c) in h {
            let _ = hist.record_n(v.max(1), c);
        }
    }
    let rs: Vec<&PhaseResult> = ranks.iter().map(|(r, _)| r).collect();
    let elapsed = rs.iter().map(|r| r.elapsed_s).fold(0.0, f64::max);
    let stonewall = rs.iter().map(|r| r.elapsed_s).fold(f64::INFINITY, f64::min);
    let tagged = |i: usize, m: &Option<String>| m.as_ref().map(|m| format!("rank {i}: {m}"));
    // Portions of the whole job: every rank's slice ends as cumulative points, merged in time.
    let mut events: Vec<(f64, u64)> = Vec::new();
    for r in &rs {
        let mut t = 0.0;
        for p in &r.portions {
            t += p.elapsed_s;
            events.push((t, p.files));
        }
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0;
    let points: Vec<(u64, f64)> = events
        .into_iter()
        .map(|(t, n)| {
            total += n;
            (total, t)
        })
        .collect();
    let files: u64 = rs.iter().map(|r| r.files).sum();
    let portions: Vec<Portion> = portions_from_points(points, files, elapsed);
    PhaseResult {
        elapsed_s: elapsed,
        files,
        bytes: rs.iter().map(|r| r.bytes).sum(),
        dirs: rs.iter().map(|r| r.dirs).sum(),
        threads: rs.iter().map(|r| r.threads).sum(),
        cpu_user_s: rs.iter().map(|r| r.cpu_user_s).sum(),
        cpu_sys_s: rs.iter().map(|r| r.cpu_sys_s).sum(),
        errors: rs.iter().map(|r| r.errors).sum(),
        first_error: rs.iter().enumerate().find_map(|(i, r)| tagged(i, &r.first_error)),
        interrupted: rs.iter().any(|r| r.interrupted),
        failed: rs.iter().enumerate().find_map(|(i, r)| tagged(i, &r.failed)),
        portions,
        latency_us: Latency::from_histogram(&hist),
        first_finish_s: rs.iter().map(|r| r.first_finish_s).fold(f64::INFINITY, f64::min),
        last_finish_s: rs.iter().map(|r| r.last_finish_s).fold(0.0, f64::max),
        // Each rank sees the whole file system's change when the ranks share one.
        space_used_bytes: rs.iter().filter_map(|r| r.space_used_bytes).max(),
        allocated_bytes: rs.iter().map(|r| r.allocated_bytes).sum(),
        peak_rss_bytes: rs.iter().filter_map(|r| r.peak_rss_bytes).max(),
        // The job returned when the last rank's files were closed, and was durable when the
        // last rank's flush returned; the cache state and device view are rank 0's.
        returned_s: rs.iter().filter_map(|r| r.returned_s).reduce(f64::max),
        flush_s: rs.iter().filter_map(|r| r.flush_s).reduce(f64::max),
        cache: rs.first().and_then(|r| r.cache.clone()),
        device: rs.first().and_then(|r| r.device.clone()),
        // Set around the whole phase by the experiment, per rank (rank 0's decides).
        machine: None,
        ranks: Some(RankSpread {
            ranks: rs.len(),
            rank_elapsed_s: rs.iter().map(|r| r.elapsed_s).collect(),
            rank_files: rs.iter().map(|r| r.files).collect(),
            stonewall_s: stonewall,
            stonewall_files: rs.iter().map(|r| files_at(r, stonewall)).sum(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank_result(files: u64, elapsed: f64, slices: usize) -> PhaseResult {
        let per = files / slices as u64;
        PhaseResult {
            elapsed_s: elapsed,
            files,
            bytes: files * 10,
            threads: 2,
            portions: (1..=slices as u64)
                .map(|i| Portion { files: per, elapsed_s: elapsed / slices as f64, end_files: per * i })
                .collect(),
            first_finish_s: elapsed * 0.9,
            last_finish_s: elapsed,
            ..Default::default()
        }
    }

    #[test]
    fn aggregate_adds_counts_and_takes_last_and_first_finisher() {
        let a = rank_result(1000, 2.0, 10);
        let b = rank_result(1000, 1.0, 10);
        let mut f = a.clone();
        f.failed = Some("no space".into());
        let agg = aggregate(vec![(a.clone(), vec![(1000, 5)]), (b, vec![(3000, 5)])]);
        assert_eq!(agg.files, 2000);
        assert_eq!(agg.bytes, 20000);
        assert_eq!(agg.threads, 4);
        assert_eq!(agg.elapsed_s, 2.0);
        let s = agg.ranks.as_ref().unwrap();
        assert_eq!(s.ranks, 2);
        assert_eq!(s.stonewall_s, 1.0);
        // At t = 1 s the slow rank had done half its files, the fast one all.
        assert_eq!(s.stonewall_files, 1500);
        assert_eq!(agg.latency_us.count, 10);
        assert_eq!(agg.portions.iter().map(|p| p.files).sum::<u64>(), 2000);
        let agg = aggregate(vec![(a, vec![]), (f, vec![])]);
        assert_eq!(agg.failed.as_deref(), Some("rank 1: no space"));
    }

    #[test]
    fn one_rank_without_mpi() {
        assert_eq!(size(), 1);
        assert!(is_root());
        assert_eq!(all_gather(b"x"), vec![b"x".to_vec()]);
        assert_eq!(expand(std::path::Path::new("/a/{rank}/b")), std::path::PathBuf::from("/a/0/b"));
    }
}
