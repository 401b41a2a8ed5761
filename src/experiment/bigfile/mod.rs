//! `bigfile`: what one large file costs. One file of `size` bytes is written in
//! `block`-byte write(2) calls, and three phases are timed separately, as in the
//! published comparison this reproduces (one 16 GB and one 32 GB file in 1 MiB writes
//! on btrfs, ext2, ext4, jfs and xfs, fresh mkfs, caches dropped, 10 runs, 95% CIs):
//!
//! - `bigfile-write`: the write loop (the open before it is not timed), then fsync:
//!   returned = the loop, durable = loop + fsync (the flush, timed apart too);
//! - `bigfile-close`: close;
//! - `bigfile-unlink`: unlinkat of the file.
//!
//! Trials run like a tree experiment's: in `order` over the targets, a managed file
//! system formatted afresh before each (unless `reuse`), the JSON rewritten after every
//! measurement, warmup runs not recorded. Summaries, first-run flags (btrfs was fast
//! only on its first run) and warnings come from [`ResultSet::derive`].
//!
//! Its command line, config and view (`view.rs`) are here.

pub mod view;

use super::flags::{CommandLine, Common, Flag, Group, Values};
use super::kinds::{Config, Finished, Kind};
use super::{CacheMode, Driver, LiveTarget, Order, Stop, TargetSpec, TreeMeta, drive};
use crate::error::{Error, Result};
use crate::fs::write_all;
use crate::measure::TargetWatch;
use crate::measure::progress::Progress;
use crate::measure::provenance::Provenance;
use crate::measure::{Latency, PhaseResult, cpu_times, new_histogram, portions_from_points};
use crate::ops::{CreateOptions, FsyncMode};
use crate::results::{ExperimentInfo, ResultSet};
use crate::signals;
use crate::storage::cache::CacheState;
use crate::storage::cache::drop_caches;
use crate::storage::rundir::RunDir;
use crate::tree::content::{ContentSource, PAGE, POOL};
use crate::tree::spec::MAX_FILE_SIZE;
use crate::tree::{Content, Layout, SizeDist, TreeSpec};
use crate::units::fmt_size;
use rustix::fd::{AsFd, IntoRawFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags, fcntl_setfl, fstat, fsync, openat, unlinkat};
use std::ffi::CStr;
use std::path::PathBuf;
use std::time::Instant;

/// Its entry in `experiment::kinds::KINDS`.
pub const KIND: Kind = Kind { name: "bigfile", mpi: false, run_file: true, command: Some(COMMAND), view: &view::VIEW };

const COMMAND: CommandLine = CommandLine {
    about: "One big file written in blocks: write loop, close (fsync) and unlink timed apart",
    flags: &[
        Flag::size("size", "SIZE", "Size of the file").default("1GiB"),
        Flag::size("block", "BLOCK", "Bytes per write() call (at most 4 MiB)").default("1MiB"),
        Flag::switch(
            "fsync",
            "No effect, kept for old command lines: the write phase always ends with a timed fsync (its durable \
             time); `--until returned` shows the write loop alone",
        ),
        Flag::switch("direct", "Write with O_DIRECT (block a multiple of 4 KiB)"),
        Flag::text("content", "CONTENT", "File content: zeros, random or compressible:RATIO")
            .default("random")
            .hints(&["random", "zeros", "compressible:2"]),
        Flag::number("seed", "SEED", "Seed of the content").default("1"),
    ],
    groups: &[Group::Own, Group::Run],
    defaults: &[],
    config,
};

fn config(v: &Values, common: &dyn Common) -> Result<Box<dyn Config>> {
    let r = common.run_settings()?;
    let block = v.number("block");
    if block > usize::MAX as u64 {
        return Err(Error::bad("--block", "too large"));
    }
    // Run flags bigfile shares with the tree experiments but has no use for: refused, not ignored.
    if r.threads.is_some() {
        return Err(Error::bad("--threads", "bigfile writes its one file from one thread"));
    }
    if r.portion != r.portion_default {
        return Err(Error::bad("--portion", "bigfile has one file: no portions of files"));
    }
    if r.shared_dir {
        return Err(Error::bad("--shared-dir", "bigfile does not run under MPI"));
    }
    let content = v.text("content").unwrap_or_default();
    Ok(Box::new(BigfileConfig {
        targets: r.targets,
        labels: r.labels,
        fs_size: r.fs_size,
        reuse: r.reuse,
        order: r.order,
        size: v.number("size"),
        block: block as usize,
        fsync: v.switch("fsync"),
        direct: v.switch("direct"),
        content: Content::parse(content).map_err(|e| Error::bad("--content", e))?,
        seed: v.number("seed"),
        runs: r.runs.unwrap_or(10),
        adaptive: r.adaptive,
        mock: r.mock,
        warmup: r.warmup,
        keep: r.keep,
        json: r.json,
        exports: r.exports,
        quiet: r.quiet,
        command_line: r.command_line,
        drop_caches: r.caches == CacheMode::Drop,
        until: r.until,
    }))
}

impl Config for BigfileConfig {
    fn name(&self) -> &str {
        "bigfile"
    }
    fn run(&self) -> Result<Finished> {
        run(self).map(Finished::results)
    }
    fn json(&self) -> Option<&std::path::Path> {
        self.json.as_deref()
    }
}

/// Everything a bigfile experiment needs; no CLI types.
#[derive(Debug, Clone)]
pub struct BigfileConfig {
    pub targets: Vec<TargetSpec>,
    /// The user's names for the targets, in order (`--label`; empty: what each is).
    pub labels: Vec<String>,
    /// Image size for managed file systems (None: from the file size).
    pub fs_size: Option<u64>,
    /// Keep a managed file system between trials instead of formatting it afresh.
    pub reuse: bool,
    pub order: Order,
    /// Bytes in the file (`--size`).
    pub size: u64,
    /// Bytes per write(2) call (`--block`), 1 … 4 MiB.
    pub block: usize,
    /// Kept for old command lines: the write phase now always ends with a timed fsync.
    pub fsync: bool,
    /// O_DIRECT (block must be a multiple of 4 KiB).
    pub direct: bool,
    pub content: Content,
    pub seed: u64,
    pub runs: u32,
    /// Adaptive runs to a precision (see `rounds`); `runs` is then unused.
    pub adaptive: Option<crate::results::adaptive::Adaptive>,
    /// Synthetic times (hidden `--mock-timing`).
    pub mock: Option<super::rounds::MockTiming>,
    pub warmup: u32,
    pub keep: bool,
    pub json: Option<PathBuf>,
    /// CSV / Markdown exports, rewritten with the JSON.
    pub exports: Vec<crate::report::export::Output>,
    pub quiet: bool,
    pub command_line: Vec<String>,
    /// sync and drop the page, dentry and inode caches before each trial's write phase
    /// (needs root).
    pub drop_caches: bool,
    /// Which time of the write phase statistics use (durable: with its fsync).
    pub until: crate::results::Until,
}

/// Op names of the three phases, in the order they run.
pub use crate::ops::registry::BIGFILE_OPS as OPS;
/// Name of the file, inside the run directory.
pub const FILE_NAME: &CStr = c"bigfile";
const FILE_MODE: u32 = 0o644;
/// A portion point is taken after at least this many bytes (or a second).
const PORTION_BYTES: u64 = 1 << 30;

/// The tree a bigfile trial amounts to: one file of `size` bytes, so free-space checks
/// and managed image sizing work as for tree experiments.
pub fn tree_spec(cfg: &BigfileConfig) -> TreeSpec {
    TreeSpec {
        files: 1,
        size: SizeDist::Fixed { bytes: cfg.size },
        layout: Layout::Flat,
        name_len: 16,
        content: cfg.content.clone(),
        seed: cfg.seed,
    }
}

/// Check the settings; errors name the flag at fault. Nothing is created.
pub fn validate(cfg: &BigfileConfig) -> Result<()> {
    if cfg.size == 0 {
        return Err(Error::bad("--size", "must be at least 1 byte"));
    }
    if cfg.size > MAX_FILE_SIZE {
        return Err(Error::bad(
            "--size",
            format!(
                "{} is more than the {} a file may have",
                fmt_size(cfg.size as f64),
                fmt_size(MAX_FILE_SIZE as f64)
            ),
        ));
    }
    if cfg.block == 0 || cfg.block > POOL {
        return Err(Error::bad(
            "--block",
            format!("{} bytes: must be between 1 byte and {}", cfg.block, fmt_size(POOL as f64)),
        ));
    }
    if cfg.direct && cfg.block % PAGE != 0 {
        return Err(Error::bad("--block", format!("{} bytes: --direct needs a multiple of {PAGE}", cfg.block)));
    }
    if cfg.runs == 0 {
        return Err(Error::bad("--runs", "must be at least 1"));
    }
    if cfg.targets.is_empty() {
        return Err(Error::bad("--target", "no target given"));
    }
    if cfg.drop_caches && rustix::fs::access("/proc/sys/vm/drop_caches", rustix::fs::Access::WRITE_OK).is_err() {
        return Err(Error::bad("--drop-caches", "cannot write /proc/sys/vm/drop_caches (needs root)"));
    }
    tree_spec(cfg).validate().map_err(|(flag, reason)| Error::bad(flag, reason))
}

/// Run `cfg`; the ResultSet is returned (and written to `cfg.json` after every
/// measurement). Run directories are removed and managed file systems torn down at the
/// end, and on every error path (by drop).
pub fn run(cfg: &BigfileConfig) -> Result<ResultSet> {
    signals::install();
    validate(cfg)?;
    super::targets::refuse_urls(&cfg.targets, "bigfile")?;
    let tree = tree_spec(cfg);
    let mut targets =
        LiveTarget::open_all(&cfg.targets, std::slice::from_ref(&tree), cfg.fs_size, 1, cfg.keep, cfg.reuse)?;
    LiveTarget::set_labels(&mut targets, &cfg.labels);
    let experiment = ExperimentInfo {
        name: "bigfile".into(),
        ops: OPS.iter().map(|s| s.to_string()).collect(),
        runs: super::rounds::Runs::of(cfg.runs, cfg.adaptive).max(),
        warmup: cfg.warmup,
        threads: 1,
        portion_files: 1,
        order: cfg.order.name().into(),
        // Drop: before each trial's write phase (the only phase that starts cold).
        caches: if cfg.drop_caches { CacheMode::Drop } else { CacheMode::Warm },
        until: cfg.until,
        adaptive: cfg.adaptive,
        side_trees: Vec::new(),
        create: CreateOptions {
            block_size: cfg.block,
            fsync: if cfg.fsync { FsyncMode::File } else { FsyncMode::None },
            direct: cfg.direct,
        },
    };
    let infos = targets.iter().map(|t| t.info.clone()).collect();
    let rs = ResultSet::new(Provenance::collect(cfg.command_line.clone()), experiment, infos);
    let progress = Progress::new(cfg.quiet);
    // Built once, outside any timed region.
    let content = ContentSource::new(&cfg.content, cfg.seed, cfg.direct);
    let metas = [TreeMeta { spec: tree, bytes: cfg.size, dirs: 0 }];
    let driver = Driver {
        name: "bigfile",
        runs: super::rounds::Runs::of(cfg.runs, cfg.adaptive),
        warmup: cfg.warmup,
        order: cfg.order,
        outputs: super::outputs(cfg.json.as_deref(), &cfg.exports),
        mock: cfg.mock,
        reformat: false,
    };
    drive(&driver, targets, rs, &metas, &progress, |rundir, _, watch| {
        let cache = match cfg.drop_caches {
            true => match drop_caches() {
                Ok(()) => CacheState::AllDropped,
                Err(e) => return (Vec::new(), Some(Stop::Failed(e.to_string()))),
            },
            false => CacheState::Warm,
        };
        let (done, stop) = run_trial(rundir, cfg, &content, &progress, watch, cache);
        (done.into_iter().map(|(op, r)| (op.to_string(), r)).collect(), stop)
    })
}

/// A phase result for one file, one thread; `failed` also counts as its error.
fn phase_result(
    elapsed_s: f64,
    files: u64,
    bytes: u64,
    cpu0: (f64, f64),
    failed: Option<String>,
    interrupted: bool,
) -> PhaseResult {
    let (u1, s1) = cpu_times();
    PhaseResult {
        elapsed_s,
        files,
        bytes,
        dirs: 0,
        threads: 1,
        cpu_user_s: u1 - cpu0.0,
        cpu_sys_s: s1 - cpu0.1,
        errors: failed.is_some() as u64,
        first_error: failed.clone(),
        interrupted,
        failed,
        portions: Vec::new(),
        latency_us: Latency::default(),
        first_finish_s: elapsed_s,
        last_finish_s: elapsed_s,
        space_used_bytes: None,
        allocated_bytes: None,
        ranks: None,
        peak_rss_bytes: None,
        ..Default::default()
    }
}

/// One latency sample (nanoseconds, at least 1).
fn one_latency(secs: f64) -> Latency {
    let mut h = new_histogram();
    h.saturating_record(((secs * 1e9) as u64).max(1));
    Latency::from_histogram(&h)
}

/// Create, write, close and unlink the file in `rundir`; the timed phases done so far,
/// and why the trial stopped early, if it did.
fn run_trial(
    rundir: &RunDir,
    cfg: &BigfileConfig,
    content: &ContentSource,
    progress: &Progress,
    watch: &TargetWatch,
    cache: CacheState,
) -> (Vec<(&'static str, PhaseResult)>, Option<Stop>) {
    let mut done = Vec::new();
    let mut flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if cfg.direct {
        flags |= OFlags::DIRECT;
    }
    let fd = match openat(rundir.fd(), FILE_NAME, flags, Mode::from_raw_mode(FILE_MODE)) {
        Ok(fd) => fd,
        Err(e) => {
            let how = if cfg.direct { " with O_DIRECT" } else { "" };
            return (done, Some(Stop::Failed(format!("cannot create the file{how}: {e}"))));
        }
    };

    // Phase 1: the write loop (returned), then fsync (durable: the write phase's flush).
    let mut stop = None;
    let write = super::watched(watch, cache, || {
        let (mut write, s) = write_phase(&fd, flags, cfg, content, progress);
        stop = s;
        if stop.is_none() {
            let t = Instant::now();
            let synced = fsync(&fd);
            let flush = t.elapsed().as_secs_f64();
            match synced {
                Ok(()) => {
                    write.returned_s = Some(write.elapsed_s);
                    write.flush_s = Some(flush);
                    write.elapsed_s += flush;
                    write.last_finish_s = write.elapsed_s;
                    write.portions = crate::ops::with_flush(std::mem::take(&mut write.portions), Some(flush));
                }
                Err(e) => {
                    write.errors += 1;
                    write.failed = Some(format!("fsync: {e}"));
                    stop = Some(Stop::Failed(format!("fsync: {e}")));
                }
            }
        }
        write
    });
    done.push((OPS[0], write));
    if stop.is_some() {
        return (done, stop); // fd and file go with the run directory
    }

    // Phase 2: close. rustix has no fallible close, so the fd is closed with libc::close
    // to see its error (e.g. a delayed ENOSPC on NFS).
    let mut failure = None;
    let r = super::watched(watch, CacheState::Warm, || {
        let cpu0 = cpu_times();
        let start = Instant::now();
        let raw = fd.into_raw_fd();
        // SAFETY: `raw` came from into_raw_fd, so it is open and owned by nobody else; it
        // is closed exactly once (close is not retried on EINTR: Linux frees the fd anyway).
        let rc = unsafe { libc::close(raw) };
        let close_err = (rc != 0).then(std::io::Error::last_os_error);
        let elapsed = start.elapsed().as_secs_f64();
        failure = close_err.map(|e| format!("close: {e}"));
        let mut r = phase_result(elapsed, 1, 0, cpu0, failure.clone(), false);
        r.latency_us = one_latency(elapsed);
        r.portions = portions_from_points(Vec::new(), 1, elapsed);
        r
    });
    done.push((OPS[1], r));
    if let Some(f) = failure {
        return (done, Some(Stop::Failed(f)));
    }

    // Phase 3: unlink.
    let mut failure = None;
    let r = super::watched(watch, CacheState::Warm, || {
        let cpu0 = cpu_times();
        let start = Instant::now();
        let res = unlinkat(rundir.fd(), FILE_NAME, AtFlags::empty());
        let elapsed = start.elapsed().as_secs_f64();
        failure = res.err().map(|e| format!("unlink: {e}"));
        let mut r = phase_result(elapsed, 1, 0, cpu0, failure.clone(), false);
        r.latency_us = one_latency(elapsed);
        r.portions = portions_from_points(Vec::new(), 1, elapsed);
        r
    });
    done.push((OPS[2], r));
    (done, failure.map(Stop::Failed))
}

/// The timed write loop.
///
/// Portions count write calls, not files: `Portion::files` is the number of
/// `block`-sized write_all calls in the slice and `end_files` the running total, so
/// bytes are `files × block` (the last call may be shorter). A slice ends every 1 GiB
/// or at least once a second. The latency histogram has one sample per write_all call.
fn write_phase(
    fd: &OwnedFd,
    flags: OFlags,
    cfg: &BigfileConfig,
    content: &ContentSource,
    progress: &Progress,
) -> (PhaseResult, Option<Stop>) {
    let size = cfg.size;
    let block = cfg.block as u64;
    let total_calls = size.div_ceil(block);
    progress.phase("write", total_calls);
    let mut hist = new_histogram();
    let mut points: Vec<(u64, f64)> = Vec::new();
    let (mut last_pt_s, mut last_pt_off) = (0.0f64, 0u64);
    let mut direct = cfg.direct;
    let (mut off, mut calls) = (0u64, 0u64);
    let mut failure: Option<String> = None;
    let mut signal = 0;
    let cpu0 = cpu_times();
    let start = Instant::now();
    while off < size {
        signal = signals::pending();
        if signal != 0 {
            break;
        }
        let n = (size - off).min(block) as usize;
        let t0 = Instant::now();
        let mut res = Ok(());
        if direct && n % PAGE != 0 {
            // O_DIRECT needs aligned lengths: write the unaligned tail buffered.
            res = fcntl_setfl(fd, flags.difference(OFlags::DIRECT | OFlags::CREATE | OFlags::EXCL));
            direct = false;
        }
        if res.is_ok() {
            res = write_all(fd.as_fd(), content.bytes(0, off, n));
        }
        let t1 = Instant::now();
        if let Err(e) = res {
            // Bytes on disk, including a partly written last block.
            let written = fstat(fd).map(|st| (st.st_size.max(0) as u64).max(off)).unwrap_or(off);
            off = written;
            failure = Some(format!(
                "write failed after {written} of {size} bytes ({} of {}): {e}",
                fmt_size(written as f64),
                fmt_size(size as f64)
            ));
            break;
        }
        hist.saturating_record(((t1 - t0).as_nanos() as u64).max(1));
        off += n as u64;
        calls += 1;
        let now_s = (t1 - start).as_secs_f64();
        if off - last_pt_off >= PORTION_BYTES || now_s - last_pt_s >= 1.0 {
            points.push((calls, now_s));
            (last_pt_s, last_pt_off) = (now_s, off);
            progress.set(calls);
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    progress.set(calls);
    let complete = off >= size && failure.is_none() && signal == 0;
    let mut r = phase_result(elapsed, complete as u64, off, cpu0, failure.clone(), signal != 0);
    r.portions = portions_from_points(points, calls, elapsed);
    r.latency_us = Latency::from_histogram(&hist);
    let stop = match (failure, signal) {
        (Some(f), _) => Some(Stop::Failed(f)),
        (None, 0) => None,
        (None, s) => Some(Stop::Signal(s)),
    };
    (r, stop)
}
