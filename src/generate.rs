//! `gen`: write a TreeSpec's tree into a directory, which must be new, empty, or one an
//! earlier `gen` wrote.
//!
//! The tree holds exactly the spec's entries: ownership ("an earlier gen wrote this") is
//! an extended attribute on the directory itself (`user.manyfiles`), read and written
//! through an O_NOFOLLOW directory fd, never a file in the tree. Where the file system
//! keeps no user xattrs (vfat, exfat, ramfs, some NFS), nothing is recorded and a later
//! `gen` needs the directory empty or new: refusing is the safe side. A directory with
//! the `.manyfiles-run` marker file of older versions is still recognised (and the
//! marker removed with the old tree).

use crate::error::{Error, Result};
use crate::experiment::estimate_space;
use crate::measure::PhaseResult;
use crate::measure::progress::Progress;
use crate::ops::{Create, CreateOptions, PhaseSettings, run_phase};
use crate::signals;
use crate::target::TargetInfo;
use crate::target::rundir::{has_marker, remove_contents};
use crate::tree::{Prepared, TreeSpec};
use crate::units::fmt_size;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags, XattrFlags, fgetxattr, fremovexattr, fsetxattr, mkdir, openat};
use rustix::io::Errno;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct GenConfig {
    pub dir: PathBuf,
    pub spec: TreeSpec,
    pub create: CreateOptions,
    pub threads: usize,
    pub quiet: bool,
}

#[derive(Debug)]
pub struct GenOutcome {
    pub result: PhaseResult,
    pub dirs: u64,
    /// Threads that created files: `--threads`, at most one per directory with files.
    pub threads: usize,
    pub info: TargetInfo,
}

const DIR_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);

enum DirState {
    Missing,
    Empty,
    /// Written by an earlier `gen` (ownership attribute, or an older version's marker).
    Ours,
}

/// The extended attribute that marks a directory as `gen` output, and its value.
pub const OWNER_XATTR: &str = "user.manyfiles";
const OWNER_VALUE: &[u8] = b"gen";

/// Does `dir` carry gen's ownership attribute? Err when the file system keeps no xattrs.
pub fn gen_owned(dir: BorrowedFd<'_>) -> std::result::Result<bool, Errno> {
    let mut buf = [0u8; 16];
    match fgetxattr(dir, OWNER_XATTR, &mut buf) {
        Ok(n) => Ok(&buf[..n] == OWNER_VALUE),
        Err(Errno::NODATA) | Err(Errno::RANGE) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Record that gen owns `dir` (on the directory, not in it).
pub fn claim(dir: BorrowedFd<'_>) -> std::result::Result<(), Errno> {
    fsetxattr(dir, OWNER_XATTR, OWNER_VALUE, XattrFlags::empty())
}

fn no_xattrs(e: Errno) -> bool {
    e == Errno::NOTSUP || e == Errno::OPNOTSUPP
}

fn inspect(dir: &Path) -> Result<DirState> {
    let bad = |r: String| Error::bad("DIR", r);
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if !parent.is_dir() {
                return Err(bad(format!("{}: parent directory {} does not exist", dir.display(), parent.display())));
            }
            Ok(DirState::Missing)
        }
        Err(e) => Err(bad(format!("{}: {e}", dir.display()))),
        Ok(md) if md.file_type().is_symlink() => {
            Err(bad(format!("{} is a symlink; give the real directory", dir.display())))
        }
        Ok(md) if !md.is_dir() => Err(bad(format!("{} is not a directory", dir.display()))),
        Ok(_) => {
            let mut entries = std::fs::read_dir(dir).map_err(|e| bad(format!("{}: {e}", dir.display())))?;
            if entries.next().is_none() {
                return Ok(DirState::Empty);
            }
            let fd = openat(rustix::fs::CWD, dir, DIR_FLAGS, Mode::empty())
                .map_err(|e| bad(format!("{}: {e}", dir.display())))?;
            match gen_owned(fd.as_fd()) {
                Ok(true) => return Ok(DirState::Ours),
                _ if has_marker(fd.as_fd()) => return Ok(DirState::Ours),
                Ok(false) => {}
                Err(e) if no_xattrs(e) => {
                    return Err(bad(format!(
                        "{} is not empty, and its file system keeps no extended attributes, so manyfiles cannot tell \
                         whether an earlier gen wrote it: refusing to write into it (empty it or give a new directory)",
                        dir.display()
                    )));
                }
                Err(e) => return Err(bad(format!("{}: cannot read its attributes: {e}", dir.display()))),
            }
            Err(bad(format!(
                "{} is not empty and not written by manyfiles gen (no {OWNER_XATTR} attribute): refusing to write into it",
                dir.display()
            )))
        }
    }
}

/// Generate the tree. On failure or interrupt the partial tree is removed.
pub fn generate(cfg: &GenConfig) -> Result<GenOutcome> {
    signals::install();
    cfg.spec.validate().map_err(|(flag, reason)| Error::bad(flag, reason))?;
    let state = inspect(&cfg.dir)?;
    let probe_at = match state {
        DirState::Missing => cfg.dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")),
        _ => cfg.dir.as_path(),
    };
    let info = TargetInfo::probe("target", probe_at).map_err(|e| Error::bad("DIR", format!("{e}")))?;
    if info.read_only {
        return Err(Error::bad("DIR", format!("{} is on a read-only file system", cfg.dir.display())));
    }
    let need = estimate_space(&info, &cfg.spec);
    // A file system that reports no size at all (ramfs) keeps no account to check against.
    if info.total_bytes > 0 && need > info.free_bytes {
        return Err(Error::bad(
            "DIR",
            format!(
                "the tree needs about {} but only {} is free there",
                fmt_size(need as f64),
                fmt_size(info.free_bytes as f64)
            ),
        ));
    }
    let created = matches!(state, DirState::Missing);
    if created {
        mkdir(&cfg.dir, Mode::from_raw_mode(0o755))
            .map_err(|e| Error::bad("DIR", format!("cannot create {}: {e}", cfg.dir.display())))?;
    }
    let root: OwnedFd = openat(rustix::fs::CWD, &cfg.dir, DIR_FLAGS, Mode::empty())
        .map_err(|e| Error::failed(format!("cannot open {}: {e}", cfg.dir.display())))?;
    let cleanup = |root: &OwnedFd| {
        let _ = remove_contents(root.as_fd());
        if created {
            let _ = std::fs::remove_dir(&cfg.dir);
        } else if matches!(state, DirState::Empty) {
            let _ = fremovexattr(root.as_fd(), OWNER_XATTR); // the user's empty directory, as it was
        }
    };
    if matches!(state, DirState::Ours) {
        // Checked again on the fd that will be cleared: DIR may have been swapped since.
        if !(gen_owned(root.as_fd()) == Ok(true) || has_marker(root.as_fd())) {
            return Err(Error::failed(format!("{} changed while gen looked at it: left alone", cfg.dir.display())));
        }
        // Clears an older version's marker file too.
        remove_contents(root.as_fd())
            .map_err(|e| Error::failed(format!("cannot clear the earlier tree in {}: {e}", cfg.dir.display())))?;
    }
    if let Err(e) = claim(root.as_fd()) {
        // The tree is still exact; only a later gen into it will want it emptied first.
        eprintln!(
            "manyfiles: note: cannot record ownership of {} ({OWNER_XATTR}: {e}); a later gen into it needs it empty",
            cfg.dir.display()
        );
    }
    let tree = Prepared::new(&cfg.spec, cfg.create.direct);
    let progress = Progress::new(cfg.quiet);
    let op = Create { opts: cfg.create.clone() };
    // No syncfs at the end unless asked for (`--fsync end`): like every other tool that
    // writes files, gen leaves writeback to the kernel. (Session 3 gave every write phase
    // a timed syncfs; through run_phase gen took it too, and its time doubled against ftzz.)
    // At most one thread per directory that gets files: creates in one directory take
    // turns at its lock, and a second thread there only spins (1,000,000 files in one
    // ext4 directory: the same 29 s on one thread or two, with twice the CPU on two).
    let dirs_with_files = tree.plan.dirs.iter().filter(|d| d.nfiles > 0).count().max(1);
    let settings = PhaseSettings {
        threads: cfg.threads.min(dirs_with_files),
        portion_files: 10_000,
        buf_len: cfg.create.block_size,
        flush: false,
    };
    let result = run_phase(&op, &tree, root.as_fd(), &settings, &progress);
    progress.finish();
    if let Some(f) = &result.failed {
        cleanup(&root);
        return Err(Error::failed(format!(
            "gen failed in {} after {} of {} files: {f}; the partial tree was removed",
            cfg.dir.display(),
            result.files,
            cfg.spec.files
        )));
    }
    if result.interrupted {
        cleanup(&root);
        return Err(Error::Interrupted { signal: signals::pending() });
    }
    if result.errors > 0 {
        return Err(Error::failed(format!(
            "gen in {}: {} errors, first: {}",
            cfg.dir.display(),
            result.errors,
            result.first_error.unwrap_or_default()
        )));
    }
    Ok(GenOutcome { dirs: result.dirs, result, info, threads: settings.threads })
}
