//! What one phase produced: times, counts, portions, latency percentiles, CPU.

pub mod diskstats;
pub mod machine;
pub mod progress;
pub mod provenance;
pub mod spread;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// What is watched around every phase on one target: its block device (none for tmpfs
/// and shares) and the processes serving it (a FUSE daemon; a device class's nbdkit and
/// nbdfuse; a share's server, proxy and client), whose CPU is the file system's own
/// work, not a neighbour's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TargetWatch {
    pub device: Option<diskstats::DeviceWatch>,
    pub serving: Vec<u32>,
}

impl TargetWatch {
    /// Run `phase`; what the device did meanwhile, and the rest of the machine.
    pub fn around<T>(&self, phase: impl FnOnce() -> T) -> (T, Option<diskstats::DeviceIo>, Option<machine::Activity>) {
        let ((r, io), act) =
            machine::around(&self.serving, || diskstats::DeviceWatch::around(self.device.as_ref(), phase));
        (r, io, act)
    }
}

/// One slice of a phase: `files` more files done in `elapsed_s`; `end_files` is the
/// running total at the slice's end. A slice ends every N files or at least once a second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Portion {
    pub files: u64,
    pub elapsed_s: f64,
    pub end_files: u64,
}

/// Per-operation latency percentiles in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Latency {
    pub fn from_histogram(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Latency {
            count: h.len(),
            mean: h.mean() / 1000.0,
            p50: us(h.value_at_quantile(0.50)),
            p90: us(h.value_at_quantile(0.90)),
            p99: us(h.value_at_quantile(0.99)),
            max: us(h.max()),
        }
    }
}

/// A latency histogram in nanoseconds: 3 significant digits, up to an hour.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("static histogram bounds are valid")
}

/// The raw result of one timed phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    pub elapsed_s: f64,
    pub files: u64,
    pub bytes: u64,
    pub dirs: u64,
    pub threads: usize,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Stopped by a signal before it finished.
    pub interrupted: bool,
    /// Stopped by a fatal error (out of space, read-only, I/O error).
    pub failed: Option<String>,
    pub portions: Vec<Portion>,
    pub latency_us: Latency,
    /// When the first and the last worker thread ran out of work (seconds from start).
    pub first_finish_s: f64,
    pub last_finish_s: f64,
    /// create: bytes the file system allocated for the tree (statvfs before/after).
    #[serde(default)]
    pub space_used_bytes: Option<i64>,
    /// create, when asked (clusters): sum of the files' st_blocks × 512.
    #[serde(default)]
    pub allocated_bytes: Option<u64>,
    /// Under MPI with more than one rank: how the phase spread across ranks (the counts
    /// and times above are then the whole job's: sums, and the last finisher's time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<crate::measure::spread::RankSpread>,
    /// External tools: peak resident set size of the tool's process (wait4 rusage).
    #[serde(default)]
    pub peak_rss_bytes: Option<u64>,
    /// Write phases: seconds until the last close returned (what the application saw).
    /// `elapsed_s` is then the durable time: it also holds the flush to the device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returned_s: Option<f64>,
    /// Write phases: seconds the flush (syncfs of the target, fsync for bigfile) took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_s: Option<f64>,
    /// What was done to the caches before the phase: `warm`, `data-evicted`,
    /// `all-dropped` or `not-applicable` (memory file systems).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<String>,
    /// What the target's block device did during the phase (/proc/diskstats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<diskstats::DeviceIo>,
    /// What the rest of the machine did meanwhile (others' CPU, iowait, steal) and
    /// whether that disturbed the run ([`machine::Activity::disturbed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<machine::Activity>,
    /// Object-store ops: the requests the phase sent, by kind (absent for file ops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<RequestCounts>,
    /// Object-store ops: what those requests cost at a provider's list prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<RequestCost>,
}

/// A phase's requests at list prices (`results::prices`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestCost {
    pub amount: f64,
    pub currency: String,
    /// The price table: what it prices and when the prices were published.
    pub prices: String,
}

/// Requests to an object store, by kind, as sent (a LIST page, a DeleteObjects batch
/// and a retry are one request each).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestCounts {
    pub put: u64,
    pub get: u64,
    pub head: u64,
    pub list: u64,
    pub delete: u64,
    /// DeleteObjects (`POST /?delete`, up to 1,000 keys each).
    pub delete_objects: u64,
    /// Every other POST: S3's multipart starts (`POST ?uploads`) and completions (`POST
    /// ?uploadId=…`), billed in S3's PUT/COPY/POST/LIST tier. Absent in result files
    /// written before it was counted apart (they counted these as `other`).
    #[serde(default)]
    pub post: u64,
    /// Anything else (a method none of the above: OPTIONS, PATCH, …).
    #[serde(default)]
    pub other: u64,
    /// Of all the above, the attempts that failed: HTTP 5xx or 429 (or, to an engine, S3's
    /// 200 whose body says `InternalError` or `SlowDown`), or no answer (a connection
    /// refused, reset or cut off mid-body; a timeout). An engine's client
    /// sent each again (up to 5 times a request); a measurement's sends none again.
    /// Absent when none failed (and in files written before it was counted).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl RequestCounts {
    pub fn total(&self) -> u64 {
        self.put + self.get + self.head + self.list + self.delete + self.delete_objects + self.post + self.other
    }

    /// The requests sent since `before` (counters only grow).
    pub fn since(&self, before: &RequestCounts) -> RequestCounts {
        RequestCounts {
            put: self.put - before.put,
            get: self.get - before.get,
            head: self.head - before.head,
            list: self.list - before.list,
            delete: self.delete - before.delete,
            delete_objects: self.delete_objects - before.delete_objects,
            post: self.post - before.post,
            other: self.other - before.other,
            failed: self.failed - before.failed,
        }
    }
}

impl PhaseResult {
    /// A measurement usable in statistics: it ran to the end without errors.
    pub fn complete(&self) -> bool {
        !self.interrupted && self.failed.is_none() && self.errors == 0
    }

    /// Other processes used the machine enough to disturb this run.
    pub fn disturbed(&self) -> bool {
        self.machine.as_ref().is_some_and(|m| m.disturbed)
    }
}

/// Process CPU time (user, system) in seconds, from getrusage(RUSAGE_SELF).
pub fn cpu_times() -> (f64, f64) {
    rusage_times(libc::RUSAGE_SELF)
}

/// CPU time (user, system) of the finished child processes waited for (external tools).
pub fn children_cpu_times() -> (f64, f64) {
    rusage_times(libc::RUSAGE_CHILDREN)
}

fn rusage_times(who: libc::c_int) -> (f64, f64) {
    // rustix has no getrusage, so this one call goes through libc.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid, writable rusage; RUSAGE_SELF and RUSAGE_CHILDREN are always accepted.
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    if rc != 0 {
        return (0.0, 0.0);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// Turn cumulative points (files done, seconds) into portions ending at `total`/`end_s`.
pub fn portions_from_points(mut points: Vec<(u64, f64)>, total: u64, end_s: f64) -> Vec<Portion> {
    points.push((total, end_s));
    points.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let mut out = Vec::with_capacity(points.len());
    let (mut last_f, mut last_t) = (0u64, 0.0f64);
    for (f, t) in points {
        if f <= last_f && !(out.is_empty() && f == 0 && total == 0) {
            continue;
        }
        out.push(Portion { files: f - last_f, elapsed_s: (t - last_t).max(0.0), end_files: f });
        last_f = f;
        last_t = t;
    }
    // Work after the last file (syncfs, rmdir) belongs to the last portion.
    if let Some(last) = out.last_mut() {
        if end_s > last_t {
            last.elapsed_s += end_s - last_t;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_percentiles() {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let l = Latency::from_histogram(&h);
        assert_eq!(l.count, 1000);
        assert!((l.p50 - 500.0).abs() < 1.0, "{}", l.p50);
        assert!((l.p99 - 990.0).abs() < 1.0, "{}", l.p99);
        assert!((l.max - 1000.0).abs() < 1.0);
    }

    #[test]
    fn portions_merge_sorted_and_monotonic() {
        let pts = vec![(20, 2.0), (10, 1.0), (10, 1.0), (25, 2.4)];
        let p = portions_from_points(pts, 30, 3.0);
        let files: Vec<u64> = p.iter().map(|x| x.files).collect();
        assert_eq!(files, vec![10, 10, 5, 5]);
        assert!((p.iter().map(|x| x.elapsed_s).sum::<f64>() - 3.0).abs() < 1e-12);
        assert_eq!(p.last().unwrap().end_files, 30);
        // a portion closed exactly at the total still gets the time after it
        let p = portions_from_points(vec![(10, 1.0), (20, 2.0)], 20, 2.5);
        assert_eq!(p.len(), 2);
        assert!((p.iter().map(|x| x.elapsed_s).sum::<f64>() - 2.5).abs() < 1e-12);
    }

    #[test]
    fn cpu_times_move_forward() {
        // Spin until the user time moves (its granularity can be a scheduler tick; a fixed
        // loop finished within one tick in a release build), for at most 5 s of wall time.
        let (u0, _) = cpu_times();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        let mut u1 = u0;
        while u1 <= u0 && start.elapsed().as_secs() < 5 {
            for i in 0..1_000_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            u1 = cpu_times().0;
        }
        assert!(u1 > u0, "5 s of spinning and no user time counted: {u0} -> {u1}");
    }
}
