//! Sync's deletions: a DST entry with no SRC counterpart is deleted with `--delete`
//! (through fds, never following a symlink, never entering a mount, SRC or one of its
//! ancestors), counted in a dry run, and kept and counted otherwise.

use super::engine::{CopyShared, DELETE, Node, Tally};
use super::file::is_tmp_name;
use super::itemize;
use super::listing::Item;
use crate::fs::remove::remove_contents_crossing;
use crate::fs::walk::{self, Kind, Meta, open_dir_at};
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
    let (gone, r) = remove(ctx, dst.as_fd(), d.name, &d.m);
    t.deleted += gone;
    match r {
        Ok(()) if ctx.o.itemize && !own_tmp => itemize::say(ctx.o, &deleted(node, d, gone)),
        Ok(()) => {}
        // A temporary file already gone: an rclone mount lists the probe's scratch file
        // for a while after it was removed. Nothing of the user's is left behind.
        Err(Unremoved::Failed(Errno::NOENT)) if own_tmp => {}
        Err(Unremoved::Refused(why)) => ctx.refuse(&node.path, Some(d.name), &why),
        Err(Unremoved::Failed(e)) => ctx.fail(&node.path, Some(d.name), "delete", e),
    }
    t.phase[DELETE] += clock.elapsed();
}

/// The `--itemize` change of a deletion of `n` entries, `d` included.
fn deleted(node: &Node, d: &Item, n: u64) -> itemize::Change {
    let rel = super::engine::rel_join(&node.rel, d.name.to_bytes());
    let below = Some(n.saturating_sub(1));
    let c = itemize::Change::new(itemize::Verb::Deleted, itemize::kind_word(&d.m), &rel);
    itemize::Change { below, type_letter: itemize::type_letter(&d.m), ..c }
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

/// Why a DST entry was not removed.
pub(super) enum Unremoved {
    Failed(Errno),
    /// The tool's own refusal (a mount point, SRC behind a bind mount), its words.
    Refused(String),
}

/// Remove `name` (listed as `m`) from `dir`: a directory with everything below it,
/// through fds without following symlinks (a symlink in DST pointing outside is
/// unlinked, never followed), never entering SRC or one of its ancestors (a bind mount)
/// nor, without `--cross-mounts`, a mount point at or below it (with it: the mounts
/// are emptied, their mount points stay). Returns the entries removed (itself
/// included) and why it is not all gone.
pub(super) fn remove(ctx: &CopyShared, dir: BorrowedFd<'_>, name: &CStr, m: &Meta) -> (u64, Result<(), Unremoved>) {
    if m.kind != Kind::Dir {
        if m.attrs & walk::ATTR_MOUNT_ROOT != 0 {
            return (0, Err(Unremoved::Refused("not deleted: a mount point in DST (a file bind mount)".into())));
        }
        return match unlinkat(dir, name, AtFlags::empty()) {
            Ok(()) => (1, Ok(())),
            Err(e) => (0, Err(Unremoved::Failed(e))),
        };
    }
    let sub = match open_dir_at(dir, name) {
        Ok(fd) => fd,
        Err(e) => return (0, Err(Unremoved::Failed(e))),
    };
    if let Some(why) = ctx.wall(sub.as_fd(), false, Some(dir)) {
        return (
            0,
            Err(Unremoved::Refused(format!(
                "not deleted: {}",
                why.replace("not entered;", "not entered nor emptied;")
            ))),
        );
    }
    let mount_point = walk::dir_id(sub.as_fd()).is_ok_and(|id| id.mount_root == Some(true));
    // A read-only directory cannot have its entries removed: make it writable first.
    let _ = rustix::fs::fchmod(&sub, FsMode::from_raw_mode(0o700));
    let mut n = 0;
    let r = remove_contents_crossing(sub.as_fd(), &mut n, ctx.o.cross_mounts, &ctx.walls.src_chain);
    if mount_point && r.is_ok() {
        let desc = crate::engine::overlap::describe_mount(sub.as_fd());
        let why = format!(
            "not deleted: a mount point in DST ({desc}): emptied (--cross-mounts); the mount point itself stays"
        );
        return (n, Err(Unremoved::Refused(why)));
    }
    match r {
        Ok(()) => {}
        Err(Errno::XDEV) => {
            let why = match ctx.o.cross_mounts {
                false => {
                    "not all deleted: a mount point below it (or SRC, through a bind mount) was not entered nor emptied; --cross-mounts to enter mounts"
                }
                true => "not all deleted: SRC or a directory holding it is below it (a bind mount): not entered",
            };
            return (n, Err(Unremoved::Refused(why.into())));
        }
        Err(e) => return (n, Err(Unremoved::Failed(e))),
    }
    match unlinkat(dir, name, AtFlags::REMOVEDIR) {
        Ok(()) => (n + 1, Ok(())),
        Err(e) => (n, Err(Unremoved::Failed(e))),
    }
}

/// An immutable or append-only DST file (its flags kept from SRC by an earlier sync)
/// cannot be renamed over: sync keeps DST's inode flags, so it lifts them first.
pub(super) fn unguard(o: &super::Options, d: Option<&Item>, dst: BorrowedFd<'_>) {
    if let Some(d) = d.filter(|d| o.keep.flags && d.m.kind == Kind::File && d.m.attrs & super::attrs::GUARD_ATTRS != 0)
    {
        let _ = super::attrs::lift_guard_flags(dst, d.name);
    }
}
