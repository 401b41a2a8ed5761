//! What a copy or sync counted, as numbers one rank can send the others ([`Part`]), and
//! the [`Summary`] made from every part.

use super::engine::{COMPARE, DELETE, SCAN_DST, SCAN_SRC, TRANSFER};
use super::{Counters, Failures, Mode, Options, PhaseTimes, Summary};
use crate::signals;
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// What a copy or sync (or one rank's part of it) counted: [`Counters`] as numbers
/// (under MPI, what one rank sends the others).
#[derive(Default, Serialize, Deserialize)]
pub(crate) struct Part {
    /// In [`Summary`] order: src_entries, src_files, src_dirs, src_bytes, dst_entries,
    /// copied, dirs_created, deleted, skipped, extraneous, failed, bytes_transferred,
    /// failed_entries, lost_entries, excluded, attrs_updated.
    pub(crate) counts: [u64; 16],
    /// Losses per kind with their first paths.
    pub(crate) losses: Vec<super::attrs::LossRow>,
    pub(crate) phase_ns: [u64; 5],
    /// Failure lines, each with the number of failures it stands for.
    pub(crate) failures: Vec<(String, u64)>,
    pub(crate) interrupted: bool,
    /// CPU user and system seconds.
    pub(crate) cpu: (f64, f64),
}

impl Part {
    /// The counters now, the failures taken; interrupted if a signal came.
    pub(crate) fn of(c: &Counters, f: &Failures, losses: &super::attrs::Losses, cpu: (f64, f64)) -> Part {
        let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        Part {
            counts: [
                l(&c.src_entries),
                l(&c.src_files),
                l(&c.src_dirs),
                l(&c.src_bytes),
                l(&c.dst_entries),
                l(&c.copied),
                l(&c.dirs_created),
                l(&c.deleted),
                l(&c.skipped),
                l(&c.extraneous),
                l(&c.failed),
                l(&c.bytes),
                l(&c.failed_entries),
                l(&c.lost_entries),
                l(&c.excluded),
                l(&c.attrs_updated),
            ],
            losses: losses.rows(),
            phase_ns: std::array::from_fn(|i| l(&c.phase_ns[i])),
            failures: f.take(),
            interrupted: signals::pending() != 0,
            cpu,
        }
    }
}

/// The summary of a copy or sync that started at `t0` from its parts (one per rank; the
/// local engine's one): counts and times summed, failures in rank order up to
/// [`super::MAX_FAILURES`]; no verification, provenance or ranks (the caller's to add).
pub(crate) fn summary(o: &Options, threads: usize, parts: &[Part], t0: Instant) -> Summary {
    let total = |i: usize| parts.iter().map(|p| p.counts[i]).sum::<u64>();
    let secs = |i: usize| parts.iter().map(|p| p.phase_ns[i]).sum::<u64>() as f64 / 1e9;
    let mut lines: Vec<(String, u64)> = parts.iter().flat_map(|p| p.failures.iter().cloned()).collect();
    lines.truncate(super::MAX_FAILURES);
    let listed: u64 = lines.iter().map(|l| l.1).sum();
    let failures: Vec<String> = lines.into_iter().map(|l| l.0).collect();
    Summary {
        mode: match o.mode {
            Mode::Copy => "copy".into(),
            Mode::Sync => "sync".into(),
        },
        src: o.src.display().to_string(),
        dst: o.dst.display().to_string(),
        dry_run: o.dry_run,
        threads,
        // The local engine puts what its controller did here; the MPI variant is fixed.
        in_flight: crate::engine::inflight::InFlightReport::fixed(threads),
        src_entries: total(0),
        src_files: total(1),
        src_dirs: total(2),
        src_bytes: total(3),
        dst_entries: total(4),
        copied: total(5),
        dirs_created: total(6),
        deleted: total(7),
        skipped: total(8),
        attrs_updated: total(15),
        extraneous: total(9),
        failed: total(10),
        failed_entries: total(12),
        lost_entries: total(13),
        excluded: total(14),
        filtered: o.filter.is_some(),
        losses: super::attrs::merge_rows(parts.iter().map(|p| p.losses.clone())),
        losses_accepted: o.keep.lossy,
        modify_window_ns: 1,
        dst_keeps_modes: None,
        src_xattrs_unread: None,
        bytes_transferred: total(11),
        elapsed_s: t0.elapsed().as_secs_f64(),
        cpu_user_s: parts.iter().map(|p| p.cpu.0).sum(),
        cpu_sys_s: parts.iter().map(|p| p.cpu.1).sum(),
        phases: PhaseTimes {
            scan_src_s: secs(SCAN_SRC),
            scan_dst_s: secs(SCAN_DST),
            compare_s: secs(COMPARE),
            transfer_s: secs(TRANSFER),
            delete_s: secs(DELETE),
        },
        interrupted: parts.iter().any(|p| p.interrupted),
        failures_omitted: total(10).saturating_sub(listed),
        failures,
        verify: None,
        provenance: None,
        changes_listed: None,
        ranks: None,
        timing: Default::default(),
    }
}
