//! Ops over a pair of trees: the generated tree (SRC) and a destination beside it in the
//! run directory (DST). `copy` and the sync family run the engine of `crate::engine::copy`;
//! external tools (`--cmd`, in `experiment::external`) implement the same trait, so all
//! of them are prepared, timed and checked alike by the experiment runner.

use super::registry::PairOp;
use crate::engine::copy::{self, Mode, Summary};
use crate::engine::inflight::Plan;
use crate::measure::{Latency, PhaseResult, Portion};
use std::path::Path;

/// `copy`: the parallel copy into an empty DST.
pub struct Copy;

impl PairOp for Copy {
    fn name(&self) -> String {
        "copy".into()
    }
    fn run(&self, src: &Path, dst: &Path, plan: Plan) -> PhaseResult {
        engine(Mode::Copy, src, dst, plan)
    }
}

/// Run the engine quietly and turn its summary into a measurement.
pub fn engine(mode: Mode, src: &Path, dst: &Path, plan: Plan) -> PhaseResult {
    let (threads, in_flight_max) = plan.threads_and_max();
    let mut o = copy::Options::new(mode, src, dst, threads);
    o.in_flight_max = in_flight_max;
    match copy::engine::run(&o) {
        Ok(s) => phase_result(&s),
        Err(e) => failed_result(e.to_string()),
    }
}

/// A measurement from an engine summary: files are the source's files, bytes those
/// transferred, errors the failures.
pub fn phase_result(s: &Summary) -> PhaseResult {
    PhaseResult {
        elapsed_s: s.elapsed_s,
        files: s.src_files,
        bytes: s.bytes_transferred,
        dirs: s.src_dirs,
        threads: s.threads,
        cpu_user_s: s.cpu_user_s,
        cpu_sys_s: s.cpu_sys_s,
        errors: s.failed,
        first_error: s.failures.first().cloned(),
        interrupted: s.interrupted,
        failed: None,
        portions: vec![Portion { files: s.src_files, elapsed_s: s.elapsed_s, end_files: s.src_files }],
        latency_us: Latency::default(),
        first_finish_s: s.elapsed_s,
        last_finish_s: s.elapsed_s,
        space_used_bytes: None,
        allocated_bytes: None,
        peak_rss_bytes: None,
        ranks: None,
        ..Default::default()
    }
}

/// A measurement that did not happen: counted as an error, so it stays out of the
/// statistics and shows up in the warnings.
pub fn failed_result(msg: String) -> PhaseResult {
    PhaseResult { errors: 1, first_error: Some(msg), ..PhaseResult::default() }
}
