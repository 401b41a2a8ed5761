//! Sync's deletions: a DST entry with no SRC counterpart is deleted with `--delete`
//! (through fds, never following a symlink, never entering a mount, SRC or one of its
//! ancestors), counted in a dry run, and kept and counted otherwise.

use super::engine::{CopyShared, DELETE, Node, Tally};
use super::file::is_tmp_name;
use super::itemize;
use super::listing::Item;
use crate::fs::remove::remove_contents_counted;
use crate::fs::walk::{self, Kind, open_dir_at};
use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::{AtFlags, Mode as FsMode, unlinkat};
use rustix::io::Errno;
use std::ffi::CStr;
use std::time::Instant;

/// A DST entry with no SRC counterpart: deleted with --delete (and always when it is a
/// temporary file a killed sync left), else counted and kept.
pub(super) fn extraneous(ctx: &CopyShared, node: &Node, d: &Item, t: &mut Tally) {
    let own_tmp = is_tmp_name(d.name) && d.m.kind == Kind::File;
    if !(ctx.o.delete || own_tmp) {
        t.extraneous += 1;
        return;
    }
    if ctx.o.dry_run {
        let n = would_remove(node, d);
        t.deleted += n;
        if ctx.o.itemize && !own_tmp {
            itemize::say(ctx.o, &deleted(node, d, n));
        }
        return;
    }
    let Some(dst) = &node.dst else { return };
    let clock = Instant::now();
    let (gone, r) = remove(ctx, dst.as_fd(), d.name, d.m.kind);
    t.deleted += gone;
    match r {
        Ok(()) if ctx.o.itemize && !own_tmp => itemize::say(ctx.o, &deleted(node, d, gone)),
        Ok(()) => {}
        Err(Errno::XDEV) => ctx.refuse(
            &node.path,
            Some(d.name),
            "not deleted: a mount, or SRC or a directory holding it (a bind mount?), is below or at it; not entered",
        ),
        Err(e) => ctx.fail(&node.path, Some(d.name), "delete", e),
    }
    t.phase[DELETE] += clock.elapsed();
}

/// The `--itemize` change of a deletion of `n` entries, `d` included.
fn deleted(node: &Node, d: &Item, n: u64) -> itemize::Change {
    let rel = super::engine::rel_join(&node.rel, d.name.to_bytes());
    let below = Some(n.saturating_sub(1));
    itemize::Change { below, ..itemize::Change::new(itemize::Verb::Deleted, itemize::kind_word(&d.m), &rel) }
}

/// Is directory `name` of `dir` empty? (Unreadable or gone: not known to be empty.)
pub(super) fn dir_is_empty(dir: BorrowedFd<'_>, name: &CStr) -> bool {
    open_dir_at(dir, name).and_then(|fd| walk::read_dir(fd.as_fd())).is_ok_and(|v| v.is_empty())
}

/// Entries a removal of DST's `d` would take, itself included (a dry run counts them).
pub(super) fn would_remove(node: &Node, d: &Item) -> u64 {
    if d.m.kind != Kind::Dir {
        return 1;
    }
    let Some(dst) = &node.dst else { return 1 };
    let mut n = 1;
    let mut stack = vec![open_dir_at(dst.as_fd(), d.name)];
    while let Some(fd) = stack.pop() {
        let Ok(fd) = fd else { continue };
        for e in walk::read_dir(fd.as_fd()).unwrap_or_default() {
            n += 1;
            if e.kind == Kind::Dir {
                stack.push(open_dir_at(fd.as_fd(), &e.name));
            }
        }
    }
    n
}

/// Remove `name` from `dir`: a directory with everything below it, through fds without
/// following symlinks (a symlink in DST pointing outside is unlinked, never followed),
/// never entering a mount below it nor SRC or one of its ancestors (a bind mount).
/// Returns the entries removed (itself included) and the first error.
pub(super) fn remove(
    ctx: &CopyShared,
    dir: BorrowedFd<'_>,
    name: &CStr,
    kind: Kind,
) -> (u64, std::result::Result<(), Errno>) {
    if kind != Kind::Dir {
        return match unlinkat(dir, name, AtFlags::empty()) {
            Ok(()) => (1, Ok(())),
            Err(e) => (0, Err(e)),
        };
    }
    let sub = match open_dir_at(dir, name) {
        Ok(fd) => fd,
        Err(e) => return (0, Err(e)),
    };
    if ctx.walled(sub.as_fd(), false) {
        return (0, Err(Errno::XDEV));
    }
    // A read-only directory cannot have its entries removed: make it writable first.
    let _ = rustix::fs::fchmod(&sub, FsMode::from_raw_mode(0o700));
    let mut n = 0;
    if let Err(e) = remove_contents_counted(sub.as_fd(), &mut n) {
        return (n, Err(e));
    }
    match unlinkat(dir, name, AtFlags::REMOVEDIR) {
        Ok(()) => (n + 1, Ok(())),
        Err(e) => (n, Err(e)),
    }
}
