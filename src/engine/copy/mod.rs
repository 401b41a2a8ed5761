//! Copy and sync engines: one task per directory on a work-stealing pool
//! ([`walk::par_tasks`]), every access relative to directory fds with `O_NOFOLLOW`, so
//! nothing outside SRC is read and nothing outside DST is written or deleted.
//!
//! - **copy** writes into a new or empty DST: directories are made fresh, so DST is never
//!   listed, and files are created under their final names with `O_EXCL`.
//! - **sync** lists SRC and DST directory by directory, decides per entry by size + mtime
//!   (or content with `--checksum`), writes new and changed files to a temporary name and
//!   renames them into place (an interrupted sync never leaves a partial file under a
//!   final name), and deletes extraneous entries only with `--delete`.
//!
//! Directory permissions and mtimes are applied last: each directory counts down its
//! pending children and is finished when the last one is (see `engine`).
//! Memory is bounded by directories in flight, never by the tree: no global entry list.

pub mod attrs;
mod case;
mod delete;
pub mod engine;
mod entry;
pub mod file;
pub mod finish;
pub mod itemize;

mod links;
mod listing;
pub mod losses;
pub mod mpi;
mod ordered;
pub mod progress;
pub mod summary;
mod tally;
mod unmade;
pub mod verify;
mod walls;

use super::overlap;
use super::timing::Timing;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Copy into a new or empty destination, or sync into any destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Copy,
    Sync,
}

/// Everything the engine needs; no CLI types.
#[derive(Debug, Clone)]
pub struct Options {
    pub mode: Mode,
    pub src: PathBuf,
    pub dst: PathBuf,
    pub threads: usize,
    /// Some(max): the per-entry work's in-flight starts at `threads` and is moved up to
    /// `max` while the copy runs (`engine::inflight`); None: `threads`, fixed.
    pub in_flight_max: Option<usize>,
    /// Try a reflink (FICLONE) first for every file.
    pub reflink: bool,
    /// sync: decide by content instead of size + mtime.
    pub checksum: bool,
    /// sync: delete what DST has and SRC has not.
    pub delete: bool,
    /// sync: compare only; write and delete nothing.
    pub dry_run: bool,
    /// copy: compare DST with SRC afterwards, content included.
    pub verify: bool,
    pub quiet: bool,
    /// Print one line per change on stdout, in order when the run ends (`--itemize`).
    pub itemize: bool,
    /// How those lines are written.
    pub itemize_format: itemize::Format,
    /// The changes held until the run ends ([`itemize::flush`]).
    pub listed: std::sync::Arc<itemize::Listed>,
    /// With `itemize`: the `--json` document the changes stream into (rank 0 only).
    pub changes: Option<std::sync::Arc<itemize::JsonLog>>,
    /// What is kept beyond bytes, modes, mtimes and symlinks (all of it by default).
    pub keep: attrs::Keep,
    /// Evict SRC (and sync's DST) from the caches before the clock starts (`--cold`).
    pub cold: bool,
    /// End the time with a syncfs of DST's file system (`--durable`).
    pub durable: bool,
    /// Enter mount points met below DST (write into them; with --delete empty them, the
    /// mount point itself staying), as `rm --cross-mounts`. Without it they are left
    /// alone and reported.
    pub cross_mounts: bool,
    /// Filter rules (`--exclude`, `--include`, `--filter`, …): what they exclude in SRC is
    /// not copied nor descended into; what they protect in DST is not deleted.
    pub filter: Option<std::sync::Arc<crate::engine::filter::Filter>>,
}

/// The threads a copy or sync runs on by default with `cores` cores. A job that copies
/// gets two threads a core: a cold source file's read blocks its thread on the device
/// while the other thread of that core goes on (100,000 × 1 KiB cold on a RAM-backed
/// ext4, 2 cores: 4 threads 1.20× faster than 2, 8 no faster than 4; BENCHMARKS.md). A
/// walk (a dry run) gains nothing from more threads than cores. `predict` calibrates
/// its copies with the same number, as the user's check `manyfiles copy` runs.
pub fn default_threads(cores: usize, writes: bool) -> usize {
    if writes { 2 * cores } else { cores }
}

impl Options {
    pub fn new(mode: Mode, src: &Path, dst: &Path, threads: usize) -> Options {
        Options {
            mode,
            src: src.to_path_buf(),
            dst: dst.to_path_buf(),
            threads,
            in_flight_max: None,
            reflink: false,
            checksum: false,
            delete: false,
            dry_run: false,
            verify: false,
            quiet: true,
            itemize: false,
            itemize_format: itemize::Format::Words,
            listed: Default::default(),
            changes: None,
            keep: attrs::Keep::default(),
            cold: false,
            durable: false,
            cross_mounts: false,
            filter: None,
        }
    }
}

/// Thread time spent in each phase, summed over threads (the phases of one directory
/// run one after another on one thread, but directories run in parallel, so these add up
/// to about threads × elapsed rather than to elapsed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseTimes {
    pub scan_src_s: f64,
    pub scan_dst_s: f64,
    pub compare_s: f64,
    pub transfer_s: f64,
    pub delete_s: f64,
}

/// What a copy or sync did. Counts are entries (files, symlinks, directories) unless named.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub mode: String,
    pub src: String,
    pub dst: String,
    pub dry_run: bool,
    pub threads: usize,
    /// The in-flight the run used (fixed, or adaptive with its median and max).
    #[serde(default)]
    pub in_flight: crate::engine::inflight::InFlightReport,
    /// Entries found at the source (files + symlinks + directories + others), and their parts.
    pub src_entries: u64,
    pub src_files: u64,
    pub src_dirs: u64,
    pub src_bytes: u64,
    /// Entries found at the destination before anything changed.
    pub dst_entries: u64,
    /// Files and symlinks written (or that would be, with --dry-run).
    pub copied: u64,
    /// Directories created.
    pub dirs_created: u64,
    /// Entries removed from DST (--delete, type changes, stale temporary files), every
    /// entry below a removed directory included.
    pub deleted: u64,
    /// Files and symlinks already equal at the destination.
    pub skipped: u64,
    /// Files whose content was equal but whose mode, owner, xattrs or ACLs were not:
    /// set in place (or, with --dry-run, would be), no data moved.
    #[serde(default)]
    pub attrs_updated: u64,
    /// Entries only at the destination, kept (no --delete, or protected by the filters,
    /// with the directories that hold them).
    pub extraneous: u64,
    /// SRC entries the filters left out (a directory counts once: nothing below it is read).
    #[serde(default)]
    pub excluded: u64,
    /// Filters were given (the summary's line names `excluded` then).
    #[serde(default)]
    pub filtered: bool,
    /// Failures of any kind (entries not copied, directories not made or not set,
    /// deletions that failed).
    pub failed: u64,
    /// SRC entries other than directories that were not copied: without an interruption,
    /// copied + attrs_updated + skipped + failed_entries = src_entries − src_dirs.
    #[serde(default)]
    pub failed_entries: u64,
    /// SRC entries the destination could not hold at all (symlinks on exFAT, device
    /// nodes without root): copied + attrs_updated + skipped + failed_entries +
    /// lost_entries adds up.
    #[serde(default)]
    pub lost_entries: u64,
    /// What the destination could not hold, per kind (owner, modes, times, xattrs, acls,
    /// hard_links, symlinks, specials, flags, sparse) with the first paths.
    #[serde(default)]
    pub losses: Vec<attrs::LossRow>,
    /// Losses were accepted (`--lossy`): reported, not a failure.
    #[serde(default)]
    pub losses_accepted: bool,
    /// The destination's timestamp granularity in nanoseconds: mtimes closer than this
    /// compared equal (1: exact).
    #[serde(default)]
    pub modify_window_ns: u64,
    /// The destination keeps permission bits (the probe's answer; not in the JSON, which
    /// lists the modes lost): `--verify` compares them only then.
    #[serde(skip)]
    pub dst_keeps_modes: Option<bool>,
    /// SRC's extended attributes and ACLs were not read, and why (listxattr on SRC's
    /// root failed: [`attrs::lists_xattrs`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_xattrs_unread: Option<String>,
    pub bytes_transferred: u64,
    pub elapsed_s: f64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub phases: PhaseTimes,
    pub interrupted: bool,
    /// The first [`MAX_FAILURES`] failures, "path: reason"; `failed` counts them all.
    pub failures: Vec<String>,
    /// Failures counted but not listed in `failures` (past [`MAX_FAILURES`], or entries
    /// below a directory that could not be made, which its line counts).
    #[serde(default)]
    pub failures_omitted: u64,
    /// copy --verify: differences found afterwards (None: not verified).
    pub verify: Option<verify::Report>,
    /// Where and how it ran (standalone commands).
    pub provenance: Option<crate::measure::provenance::Provenance>,
    /// `--itemize --json`: the number of items in the document's `changes` array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes_listed: Option<u64>,
    /// Under MPI: how the work spread over the ranks (absent with one rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<crate::engine::walker::RankCounts>,
    /// Cold or warm, durable or returned: what `elapsed_s` includes.
    #[serde(flatten)]
    pub timing: Timing,
}

impl Summary {
    /// Anything failed, was interrupted, or verification found a difference.
    pub fn ok(&self) -> bool {
        self.failed == 0
            && !self.interrupted
            && self.verify.as_ref().is_none_or(|v| v.differences == 0)
            && (self.losses_accepted || self.losses.is_empty())
            && self.timing.ok()
    }

    /// Human summary, several lines, ending in a newline.
    pub fn text(&self) -> String {
        use crate::units::{fmt_rate, fmt_secs, fmt_size};
        let verb = if self.dry_run { "would copy" } else { "copied" };
        let mut s = format!(
            "{} {} → {}{}\n",
            self.mode,
            self.src,
            self.dst,
            if self.dry_run { " (dry run: nothing written or deleted)" } else { "" }
        );
        s.push_str(&format!(
            "scanned: {} entries at source ({} files, {} dirs, {}), {} at destination\n",
            self.src_entries,
            self.src_files,
            self.src_dirs,
            fmt_size(self.src_bytes as f64),
            self.dst_entries
        ));
        s.push_str(&format!(
            "{verb} {} ({} transferred), {} dirs {}, {}skipped {} unchanged, deleted {}, extraneous kept {}{}, failed {}{}\n",
            self.copied,
            fmt_size(self.bytes_transferred as f64),
            self.dirs_created,
            if self.dry_run { "to create" } else { "created" },
            match (self.attrs_updated, self.dry_run) {
                (0, _) => String::new(),
                (n, false) => format!("attributes updated {n} (no data moved), "),
                (n, true) => format!("attributes to update {n} (no data moved), "),
            },
            self.skipped,
            self.deleted,
            self.extraneous,
            if self.filtered { format!(", excluded {}", self.excluded) } else { String::new() },
            self.failed,
            if self.failed > 0 { format!(" ({} entries not copied)", self.failed_entries) } else { String::new() }
        ));
        if !self.losses.is_empty() {
            let total: u64 = self.losses.iter().map(|l| l.count).sum();
            s.push_str(&format!(
                "lost: {total} ({}; {}{})\n",
                self.losses.iter().map(|l| format!("{} {}", l.kind, l.count)).collect::<Vec<_>>().join(", "),
                if self.losses_accepted {
                    "accepted with --lossy"
                } else {
                    "the destination cannot hold them: --lossy or --no-… accepts"
                },
                if self.lost_entries > 0 { format!("; {} entries not made", self.lost_entries) } else { String::new() }
            ));
            for l in &self.losses {
                let what = attrs::Loss::ALL.iter().find(|k| k.name() == l.kind).map_or("", |k| k.what());
                let flag = attrs::Loss::ALL.iter().find(|k| k.name() == l.kind).map_or("--lossy", |k| k.flag());
                s.push_str(&format!("  {} {}: {what} ({flag}), e.g. {}\n", l.kind, l.count, l.paths.join(", ")));
            }
        }
        if let Some(why) = &self.src_xattrs_unread {
            s.push_str(&format!("not read: {why}\n"));
        }
        let p = &self.phases;
        s.push_str(&format!(
            "elapsed {} ({}) on {} threads; thread time: scan source {}, scan destination {}, compare {}, transfer {}, delete {}; cpu user {} sys {}\n",
            fmt_secs(self.elapsed_s),
            fmt_rate(self.src_entries as f64 / self.elapsed_s.max(1e-9), "entries"),
            self.threads,
            fmt_secs(p.scan_src_s),
            fmt_secs(p.scan_dst_s),
            fmt_secs(p.compare_s),
            fmt_secs(p.transfer_s),
            fmt_secs(p.delete_s),
            fmt_secs(self.cpu_user_s),
            fmt_secs(self.cpu_sys_s)
        ));
        s.push_str(&self.in_flight.text());
        s.push_str(&self.timing.text());
        if let Some(r) = &self.ranks {
            s.push_str(&r.text());
        }
        if let Some(v) = &self.verify {
            s.push_str(&format!("verify: {}\n", v.text()));
        }
        if let Some(p) = &self.provenance {
            s.push_str(&format!("{}\n", p.machine_line().trim_end()));
        }
        if self.interrupted {
            s.push_str("interrupted: the rest was not copied (run again to finish)\n");
        }
        if !self.failures.is_empty() {
            s.push_str("failures:\n");
            for f in &self.failures {
                s.push_str(&format!("  {f}\n"));
            }
            if self.failures_omitted > 0 {
                s.push_str(&format!("  … and {} more (counted, not listed)\n", self.failures_omitted));
            }
        }
        s
    }
}

/// Failures listed in full; the rest are only counted.
pub const MAX_FAILURES: usize = 100;

/// Bytes of one failure line kept: a path thousands of levels deep made one line of
/// 80 KB (issue 38). The middle goes, and the line says how much of it.
pub const MAX_LINE: usize = 1024;

/// `line` cut to about [`MAX_LINE`] bytes (its start and end kept, at character
/// boundaries), saying how many bytes were left out.
pub fn capped(line: String) -> String {
    if line.len() <= MAX_LINE {
        return line;
    }
    let half = MAX_LINE / 2;
    let mut head = half;
    while !line.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = line.len() - half;
    while !line.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{} … ({} bytes more) … {}", &line[..head], tail - head, &line[tail..])
}

/// Counters shared by every task: one relaxed add per directory, not per file.
#[derive(Default)]
pub struct Counters {
    pub src_entries: AtomicU64,
    pub src_files: AtomicU64,
    pub src_dirs: AtomicU64,
    pub src_bytes: AtomicU64,
    pub dst_entries: AtomicU64,
    pub copied: AtomicU64,
    pub dirs_created: AtomicU64,
    pub deleted: AtomicU64,
    pub skipped: AtomicU64,
    pub attrs_updated: AtomicU64,
    pub extraneous: AtomicU64,
    pub excluded: AtomicU64,
    pub failed: AtomicU64,
    pub failed_entries: AtomicU64,
    pub lost_entries: AtomicU64,
    pub bytes: AtomicU64,
    /// Phase times in nanoseconds, in [`PhaseTimes`] order.
    pub phase_ns: [AtomicU64; 5],
    /// For the progress line only: copied, unchanged and bytes, added after every range
    /// of a directory's entries (the counts above come once per directory, so a share's
    /// directory of 1,000 files showed 0 done for half a minute).
    pub progress: [AtomicU64; 3],
}

/// The failures list: capped, the rest counted in [`Counters::failed`].
#[derive(Default)]
pub struct Failures(Mutex<Vec<(String, u64)>>);

impl Failures {
    pub fn push(&self, counters: &Counters, what: String) {
        counters.failed.fetch_add(1, Ordering::Relaxed);
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if v.len() < MAX_FAILURES {
            v.push((capped(what), 1));
        }
    }
    /// A line that stands for `n` failures counted elsewhere (not counted again).
    pub fn note(&self, what: String, n: u64) {
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if v.len() < MAX_FAILURES {
            v.push((capped(what), n));
        }
    }
    /// The lines, each with the number of failures it stands for.
    pub fn take(&self) -> Vec<(String, u64)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Check SRC and DST before anything is created: SRC a directory, DST's parent there,
/// neither inside the other (a copy into itself never ends; a sync --delete of a parent
/// would eat the source), copy's DST new or empty.
pub fn check(o: &Options) -> Result<()> {
    let src = std::fs::canonicalize(&o.src).map_err(|e| src_error(&o.src, e))?;
    if !std::fs::metadata(&src).map_err(|e| src_error(&o.src, e))?.is_dir() {
        return Err(Error::bad("SRC", format!("{} is not a directory", o.src.display())));
    }
    let dst = match std::fs::symlink_metadata(&o.dst) {
        Ok(md) => {
            let md = if md.file_type().is_symlink() { std::fs::metadata(&o.dst).ok() } else { Some(md) };
            if !md.is_some_and(|m| m.is_dir()) {
                return Err(Error::bad("DST", format!("{} exists and is not a directory", o.dst.display())));
            }
            if o.mode == Mode::Copy
                && std::fs::read_dir(&o.dst)
                    .map_err(|e| Error::bad("DST", format!("{}: {e}", o.dst.display())))?
                    .next()
                    .is_some()
            {
                return Err(Error::bad(
                    "DST",
                    format!("{} is not empty (copy writes into a new or empty directory; use sync)", o.dst.display()),
                ));
            }
            std::fs::canonicalize(&o.dst).map_err(|e| Error::bad("DST", format!("{}: {e}", o.dst.display())))?
        }
        Err(_) => {
            let parent = o.dst.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let p = std::fs::canonicalize(parent)
                .map_err(|e| Error::bad("DST", format!("parent directory {}: {e}", parent.display())))?;
            if !p.is_dir() {
                return Err(Error::bad("DST", format!("{} is not a directory", parent.display())));
            }
            p.join(o.dst.file_name().unwrap_or_default())
        }
    };
    if dst.starts_with(&src) || src.starts_with(&dst) {
        return Err(Error::bad(
            "DST",
            format!("{} and {} overlap (one is inside the other)", src.display(), dst.display()),
        ));
    }
    // By identity too: a bind mount shows a directory under an unrelated path.
    let _ = walls(o)?;
    if o.threads == 0 {
        return Err(Error::bad("--threads", "must be at least 1"));
    }
    if o.durable && o.dry_run {
        return Err(Error::bad("--durable", "sync --dry-run writes nothing to make durable"));
    }
    if o.cold {
        super::timing::check_cold(&[("SRC", &o.src)])?;
    }
    Ok(())
}

/// Is SRC's xattr listing readable ([`attrs::lists_xattrs`])? When not, `caps` says so
/// (no file's xattrs are asked for) and the summary's line says why.
pub(crate) fn src_xattrs(o: &Options, src: rustix::fd::BorrowedFd<'_>, caps: &mut attrs::Caps) -> Option<String> {
    if !o.keep.any_xattr() {
        return None;
    }
    let e = attrs::lists_xattrs(src).err()?;
    caps.src_xattrs = false;
    Some(format!(
        "{}: listxattr says {e}: its extended attributes and ACLs are not read (--no-xattrs --no-acls says so quietly)",
        o.src.display()
    ))
}

/// SRC could not be reached: bad input (exit 2) when what the user named is wrong
/// (missing, not a directory, a symlink loop, forbidden, a name too long), a failure
/// (exit 1) otherwise: an I/O error on a disk that is there is no mistake of the user's.
pub(crate) fn src_error(path: &Path, e: impl Into<std::io::Error>) -> Error {
    let e: std::io::Error = e.into();
    let named_wrong = [libc::ENOENT, libc::ENOTDIR, libc::ELOOP, libc::EACCES, libc::ENAMETOOLONG, libc::EINVAL];
    match e.raw_os_error() {
        Some(n) if !named_wrong.contains(&n) => Error::failed(format!("SRC {}: {e}", path.display())),
        _ => Error::bad("SRC", format!("{}: {e}", path.display())),
    }
}

/// What the timed work reads, evicted by `--cold`: SRC, and the DST sync lists.
pub(crate) fn cold_roots(o: &Options) -> Vec<&Path> {
    let dst = o.mode == Mode::Sync && o.dst.is_dir();
    std::iter::once(o.src.as_path()).chain(dst.then_some(o.dst.as_path())).collect()
}

/// End a copy's time: with `--durable` (and not interrupted) a syncfs of DST's file
/// system inside `elapsed_s` (every rank's under MPI).
pub(crate) fn end_timing(o: &Options, s: &mut Summary) {
    let durable = o.durable && !s.interrupted;
    let dst = if durable { Some(crate::fs::walk::open_root(&o.dst)) } else { None };
    let fds: Vec<(String, rustix::fd::BorrowedFd<'_>)> = match &dst {
        Some(Ok(fd)) => vec![(o.dst.display().to_string(), rustix::fd::AsFd::as_fd(fd))],
        _ => Vec::new(),
    };
    s.elapsed_s = s.timing.end(s.elapsed_s, durable, &fds);
    if let Some(Err(e)) = dst {
        s.timing.sync_error = Some(format!("cannot open {} to sync it: {e}", o.dst.display()));
    }
}

/// The identities of SRC and DST and of their ancestors: the walk never enters, on one
/// side, a directory that is the other side's root or one of its ancestors (a bind mount
/// made during the walk), and [`check`] refuses SRC and DST that overlap by identity.
#[derive(Debug, Clone, Default)]
pub struct Walls {
    /// SRC's root and its ancestors: never entered or removed in DST.
    pub src_chain: Vec<overlap::Id>,
    /// DST's root (or, when it does not exist yet, its parent) and their ancestors:
    /// never entered in SRC.
    pub dst_chain: Vec<overlap::Id>,
    /// SRC and DST inside their file systems (mountinfo): a mount met on one side that
    /// shows the other side, or a directory of it, is not entered (a bind mount of a
    /// DST subdirectory inside SRC: sync --delete emptied SRC through it).
    pub src_inside: Option<(String, PathBuf)>,
    pub dst_inside: Option<(String, PathBuf)>,
}

/// SRC's and DST's places compared by identity (device + inode of each and of every
/// ancestor, and the path inside the file system from mountinfo): one inside the other,
/// or the same directory → bad input naming both. DST that does not exist yet is judged
/// by its parent (DST would be made inside it).
pub fn walls(o: &Options) -> Result<Walls> {
    let src = overlap::place(&o.src).map_err(|e| src_error(&o.src, e))?;
    let (dst, exists) = match overlap::place(&o.dst) {
        Ok(p) => (p, true),
        Err(_) => {
            let parent = o.dst.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let p = overlap::place(parent)
                .map_err(|e| Error::bad("DST", format!("parent directory {}: {e}", parent.display())))?;
            (p, false)
        }
    };
    let hit = overlap::overlap(&src, &dst);
    let refuse = |how: &str| {
        Err(Error::bad(
            "DST",
            format!(
                "{} and {} overlap by identity ({how}; a bind mount or another path to the same directory)",
                o.src.display(),
                o.dst.display()
            ),
        ))
    };
    // Through an overlayfs mount: one side on the merged view (or holding it), the
    // other one of the directories it shows. DST not made yet is where it would be.
    let dst_at = match exists {
        true => dst.clone(),
        false => overlap::Place { path: dst.path.join(o.dst.file_name().unwrap_or_default()), ..dst.clone() },
    };
    for (side, at, other, other_place) in [("DST", &dst_at, "SRC", &src), ("SRC", &src, "DST", &dst_at)] {
        let path = &at.path;
        if let Some((point, layer)) = overlap::through_overlay(at, other_place) {
            return Err(Error::bad(
                "DST",
                format!(
                    "{side} {} is on the overlay mounted at {}, which shows {layer}, and {other} {} is that or overlaps it: refused (writing one side would change the other)",
                    path.display(),
                    point.display(),
                    other_place.path.display()
                ),
            ));
        }
    }
    match (hit, exists) {
        (None, _) => {}
        (Some(overlap::Overlap::Same), true) => return refuse("the same directory"),
        (Some(overlap::Overlap::FirstInside), true) => return refuse("SRC is inside DST"),
        // DST's parent is SRC or inside it: DST would be made inside SRC.
        (Some(overlap::Overlap::Same | overlap::Overlap::SecondInside), _) => return refuse("DST is inside SRC"),
        // SRC inside DST's parent: DST is made beside it, not around it.
        (Some(overlap::Overlap::FirstInside), false) => {}
    }
    let dst_inside = dst_at.inside.clone().map(|(dev, p)| match exists {
        true => (dev, p),
        false => (dev, p.join(o.dst.file_name().unwrap_or_default())),
    });
    // A mount inside SRC that shows DST or a directory inside it (a bind mount of a DST
    // subdirectory below SRC): SRC holds part of DST, and sync --delete emptied it
    // through DST. (One that shows an ancestor of DST is walked around: see `wall`.)
    if let Some(d) = &dst_inside
        && let Some((point, _)) =
            overlap::mounts_below(&src.path).into_iter().find(|(_, (dev, root))| *dev == d.0 && root.starts_with(&d.1))
    {
        return Err(Error::bad(
            "DST",
            format!(
                "{} holds a mount of DST {} or a directory inside it at {}: refused (writing DST would change SRC)",
                o.src.display(),
                o.dst.display(),
                point.display()
            ),
        ));
    }
    Ok(Walls { src_chain: src.chain, dst_chain: dst.chain, src_inside: src.inside, dst_inside })
}

/// Run a copy or sync as a standalone command: check, run with progress, verify (copy
/// --verify). The summary is returned whatever happened; an error only for bad input or
/// when DST cannot be made at all.
pub fn run(o: &Options, command_line: Vec<String>) -> Result<Summary> {
    crate::signals::install();
    check(o)?;
    let timing = Timing::start(o.cold, &cold_roots(o), o.threads)?;
    let mut s = engine::run(o)?;
    if o.itemize {
        itemize::flush(o);
    }
    s.timing = timing;
    end_timing(o, &mut s);
    s.provenance = Some(crate::measure::provenance::Provenance::collect(command_line));
    if o.verify && !s.interrupted {
        let checks = verify::Checks { content: true, meta: true };
        let kept = verify::Kept::new(&o.keep, &s.losses).on_dst(s.modify_window_ns, s.dst_keeps_modes);
        s.verify = Some(verify::compare_kept(&o.src, &o.dst, &checks, Some(&kept), o.threads));
    }
    Ok(s)
}

/// Write the `--json` summary to `path`: with `--itemize`, after the `changes` array
/// already streamed there ([`itemize::JsonLog`]), else as one document.
pub fn write_json(o: &Options, s: &mut Summary, path: &Path) -> Result<()> {
    match &o.changes {
        Some(log) => {
            s.changes_listed = Some(log.count());
            log.finish(s)
        }
        None => {
            let text = serde_json::to_vec_pretty(s).map_err(|e| Error::failed(e.to_string()))?;
            crate::fs::output::write_file(path, &text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_error_on_src_is_a_failure_not_bad_input() {
        let p = Path::new("/src");
        let code = |n: i32| src_error(p, std::io::Error::from_raw_os_error(n)).exit_code();
        assert_eq!(code(libc::EIO), 1);
        assert_eq!(code(libc::ENOTCONN), 1);
        assert_eq!(code(libc::ENOENT), 2);
        assert_eq!(code(libc::ENOTDIR), 2);
        assert_eq!(src_error(p, rustix::io::Errno::IO).exit_code(), 1);
    }

    #[test]
    fn a_long_failure_line_is_capped_and_says_how_much_went() {
        let deep = format!("{}: open source directory: Too many open files", "new/".repeat(20_016));
        let c = capped(deep.clone());
        assert!(c.len() < MAX_LINE + 64, "{}", c.len());
        assert!(c.starts_with("new/new/") && c.ends_with("Too many open files"), "{c}");
        let (head, rest) = c.split_once(" … (").unwrap();
        let (n, tail) = rest.split_once(" bytes more) … ").unwrap();
        assert_eq!(head.len() + n.parse::<usize>().unwrap() + tail.len(), deep.len(), "says how much went");
        // Short lines, and multi-byte characters at the cut, are fine.
        assert_eq!(capped("x: y".into()), "x: y");
        let wide = "é".repeat(2_000);
        assert!(capped(wide).contains("bytes more"));
    }
}
