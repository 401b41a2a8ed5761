//! One phase run by many ranks at once, as one result: counts add up, the time is the
//! last finisher's and the stonewall the first finisher's, as HPC storage benchmarks
//! report them (IOR, mdtest). Pure: the ranks' results come in; gathering them is the
//! experiment driver's (`experiment::ranks`).

use super::{Latency, PhaseResult, Portion, portions_from_points};
use serde::{Deserialize, Serialize};

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
pub struct RankReport {
    pub result: PhaseResult,
    /// Latency histogram as (value ns, count) pairs.
    pub latency_ns: Vec<(u64, u64)>,
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
pub fn aggregate(ranks: Vec<(PhaseResult, Vec<(u64, u64)>)>) -> PhaseResult {
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
        // Object-store ops run in one process only.
        requests: None,
        cost: None,
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
}
