//! The engines that work on trees they did not generate — `copy`/`sync` ([`copy`]),
//! `scan` ([`scan`]) and `rm` ([`rm`]) — and the walk they share ([`walk`]):
//! fd-relative directory reading (getdents, `O_NOFOLLOW` opens) and a work-stealing
//! task tree with one task per directory; [`overlap`] tells whether two directories
//! are one inside the other by identity (bind mounts included); [`timing`] what their
//! times include (`--cold`, `--durable`).

pub mod copy;
pub mod filter;
pub mod inflight;
pub mod object;
pub mod overlap;
pub mod rm;
pub mod scan;
pub mod timing;
pub mod walker;

use inflight::Plan;

/// What an engine runs with when the user gives neither `--threads` nor `--in-flight`:
/// `threads` (the cores; copy: twice the cores), fixed, on local storage; where one of
/// `roots` is on a file system whose calls may each wait on a network or a daemon (FUSE,
/// NFS, SMB…), an in-flight limit that starts at [`inflight::ROUND_TRIP_START`] (a short
/// run ends before a climb from the cores gets far) and climbs to [`inflight::DEFAULT_MAX`].
/// The CLI and the experiments' engine ops both use it, so that `predict` calibrates
/// with what the user's check runs (on exFAT over FUSE a check's scan ran on 16 threads
/// and the calibration's on 2: predicted 3× too slow).
pub fn default_plan(threads: usize, roots: &[&std::path::Path]) -> Plan {
    match roots.iter().any(|r| crate::storage::cache::round_trip_fs(r).is_some()) {
        true => {
            Plan::Adaptive { start: threads.max(inflight::ROUND_TRIP_START), max: inflight::DEFAULT_MAX.max(threads) }
        }
        false => Plan::Fixed(threads),
    }
}
