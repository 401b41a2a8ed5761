//! The experiment driver's MPI calls, in one place: phases run on every rank at once
//! and aggregated ([`run_phase_everywhere`]), the shared-directory roles a phase gets,
//! and the rank-0 decisions every rank follows. Phases and ops know nothing of ranks.

use crate::measure::PhaseResult;
use crate::measure::progress::Progress;
use crate::measure::spread;
use crate::ops::{Op, PhaseSettings, SharedDir};
use crate::ranks;
use crate::tree::Prepared;
use hdrhistogram::Histogram;
use rustix::fd::BorrowedFd;

/// Run `op` over the tree below `root` on every rank at once and measure it: the job's
/// aggregate on every rank (with one rank, this process's result).
pub fn run_phase_on_every_rank(
    op: &dyn Op,
    tree: &Prepared,
    root: BorrowedFd<'_>,
    settings: &PhaseSettings,
    progress: &Progress,
) -> PhaseResult {
    run_phase_everywhere(|| crate::ops::run_phase(op, tree, root, settings, progress))
}

/// This rank's part in phases run in one shared directory (`--shared-dir` in a job of
/// more than one rank): rank 0 makes the directories, every rank tags its files.
pub fn shared_dir() -> Option<SharedDir> {
    ranks::shared_dir().then(|| SharedDir {
        rank: ranks::rank(),
        makes_dirs: ranks::makes_dirs(),
        meet: ranks::barrier,
    })
}

/// Runs `phase` on every rank at once (a barrier first) and returns the aggregate on
/// every rank, so all ranks take the same decisions afterwards (stop or go on).
/// With one rank, returns the phase's own result.
pub fn run_phase_everywhere(phase: impl FnOnce() -> (PhaseResult, Histogram<u64>)) -> PhaseResult {
    if ranks::size() == 1 {
        return phase().0;
    }
    ranks::barrier();
    let (result, hist) = phase();
    let report = spread::RankReport {
        result,
        latency_ns: hist.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect(),
    };
    let bytes = serde_json::to_vec(&report).expect("a phase result serialises");
    let reports: Vec<spread::RankReport> = ranks::all_gather(&bytes)
        .iter()
        .map(|b| serde_json::from_slice(b).expect("every rank runs the same manyfiles"))
        .collect();
    let agg = spread::aggregate(reports.into_iter().map(|r| (r.result, r.latency_ns)).collect());
    if agg.failed.is_some() || agg.interrupted {
        // Every rank has this same result and stops the same way.
        ranks::set_failure_agreed();
    }
    agg
}
