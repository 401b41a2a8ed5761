//! A SRC directory whose DST counterpart could not be made: what it takes with it.
//! Every entry below it is counted as seen, then as failed ([`fail_below`]) or, when
//! DST cannot hold the directory's name, as lost with it ([`count_below`] and a
//! [`Loss::Names`](super::attrs::Loss::Names) row naming it by [`name_lost`]).

use super::engine::{CopyShared, join};
use super::losses;
use crate::fs::walk::{self, Kind, meta_at, open_dir_at};
use rustix::fd::{AsFd, BorrowedFd};
use std::ffi::CStr;
use std::sync::atomic::Ordering;

/// A SRC directory whose DST counterpart could not be made or opened: every entry below
/// it is counted as seen and failed (so copied + skipped + failed adds up to what SRC
/// holds), without being named one by one. SRC is only read, without following symlinks.
pub(super) fn fail_below(ctx: &CopyShared, dir: BorrowedFd<'_>, path: &str) {
    fail_below_because(ctx, dir, path, "its destination directory could not be made")
}

/// [`fail_below`], saying `why` the entries below were not copied.
pub(super) fn fail_below_because(ctx: &CopyShared, dir: BorrowedFd<'_>, path: &str, why: &str) {
    let Below { entries, dirs, unreadable } = count_below(ctx, dir);
    ctx.c.failed.fetch_add(entries, Ordering::Relaxed);
    ctx.c.failed_entries.fetch_add(entries - dirs, Ordering::Relaxed);
    if entries > 0 {
        let what = format!("{entries} entries below it not copied ({why})");
        let what = if unreadable > 0 { format!("{what}; {unreadable} directories below it not listed") } else { what };
        ctx.f.note(format!("{}: {what}", join(path, None)), entries);
    }
}

/// What [`count_below`] found below a directory not made.
pub(super) struct Below {
    pub entries: u64,
    pub dirs: u64,
    pub unreadable: u64,
}

impl Below {
    /// `path` with what went with it, for a loss's list.
    pub(super) fn said(&self, path: String) -> String {
        match self.entries {
            0 => path,
            1 => format!("{path} (and the entry below it)"),
            n => format!("{path} (and the {n} entries below it)"),
        }
    }
}

/// A SRC path whose name DST cannot hold, for the list of losses: the name's bytes that
/// are not UTF-8 shown as `\xFF`.
pub(super) fn name_lost(path: &str, name: &CStr) -> String {
    let shown = losses::shown_name(name.to_bytes());
    if path.is_empty() { shown } else { format!("{path}/{shown}") }
}

/// Count every entry below SRC directory `dir` as seen (SRC only read, no symlink
/// followed): what a directory that could not be made takes with it.
pub(super) fn count_below(ctx: &CopyShared, dir: BorrowedFd<'_>) -> Below {
    let mut stack = vec![rustix::io::fcntl_dupfd_cloexec(dir, 0)];
    let (mut entries, mut files, mut dirs, mut bytes, mut unreadable) = (0u64, 0u64, 0u64, 0u64, 0u64);
    while let Some(fd) = stack.pop() {
        if ctx.stopping() {
            break;
        }
        let Ok(fd) = fd else {
            unreadable += 1;
            continue;
        };
        let Ok(list) = walk::read_dir(fd.as_fd()) else {
            unreadable += 1;
            continue;
        };
        for e in list {
            entries += 1;
            match e.kind {
                Kind::Dir => {
                    dirs += 1;
                    stack.push(open_dir_at(fd.as_fd(), &e.name));
                }
                Kind::File => {
                    files += 1;
                    bytes += meta_at(fd.as_fd(), &e.name).map_or(0, |m| m.size);
                }
                _ => {}
            }
        }
    }
    let c = &ctx.c;
    c.src_entries.fetch_add(entries, Ordering::Relaxed);
    c.src_files.fetch_add(files, Ordering::Relaxed);
    c.src_dirs.fetch_add(dirs, Ordering::Relaxed);
    c.src_bytes.fetch_add(bytes, Ordering::Relaxed);
    Below { entries, dirs, unreadable }
}
