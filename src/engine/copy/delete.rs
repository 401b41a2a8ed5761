//! Sync's deletions: a DST entry with no SRC counterpart is deleted with `--delete`
//! (through fds, never following a symlink, never entering a mount, SRC or one of its
//! ancestors), counted in a dry run, and kept and counted otherwise.

use super::engine::{CopyShared, DELETE, Node, Tally};
use super::file::is_tmp_name;
use super::itemize;
use super::listing::Item;
use crate::engine::filter::Filter;
use crate::fs::remove::remove_contents_crossing;
use crate::fs::walk::{self, Kind, Meta, open_dir_at};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode as FsMode, unlinkat};
use rustix::io::Errno;
use std::ffi::{CStr, CString};
use std::time::Instant;

/// A DST entry with no SRC counterpart: deleted with --delete (and always when it is a
/// temporary file a killed sync left), else counted and kept.
pub(super) fn extraneous(ctx: &CopyShared, node: &Node, d: &Item, t: &mut Tally) {
    let own_tmp = is_tmp_name(d.name) && d.m.kind == Kind::File;
    let rel = || super::engine::rel_join(&node.rel, d.name.to_bytes());
    // What the filters protect is kept, whatever its name (the user's rule wins).
    let protecting = ctx.o.filter.as_deref().filter(|f| f.protects());
    if !(ctx.o.delete || own_tmp) || protecting.is_some_and(|f| f.protected(&rel(), d.m.kind == Kind::Dir)) {
        t.extraneous += 1;
        return;
    }
    if ctx.o.dry_run {
        let (n, whole) = match protecting {
            Some(f) if d.m.kind == Kind::Dir => node.dst.as_ref().map_or((1, true), |dst| {
                let (n, kept) = sparing(ctx, f, dst.as_fd(), d.name, &rel(), true);
                t.extraneous += kept;
                (n, kept == 0)
            }),
            _ => (would_remove(node, d), true),
        };
        t.deleted += n;
        if ctx.o.itemize && !own_tmp && whole {
            itemize::say(ctx.o, &deleted(node, d, n));
        }
        return;
    }
    let Some(dst) = &node.dst else { return };
    let clock = Instant::now();
    // `whole`: the entry went with all below it (a directory holding protected entries
    // stays, and what went from inside it is counted, not itemized).
    let (gone, r, whole) = match protecting {
        Some(f) if d.m.kind == Kind::Dir => {
            let (n, kept) = sparing(ctx, f, dst.as_fd(), d.name, &rel(), false);
            t.extraneous += kept;
            (n, Ok(()), kept == 0)
        }
        _ => {
            let (n, r) = remove(ctx, dst.as_fd(), d.name, &d.m);
            (n, r, true)
        }
    };
    t.deleted += gone;
    match r {
        Ok(()) if ctx.o.itemize && !own_tmp && whole => itemize::say(ctx.o, &deleted(node, d, gone)),
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
    if ctx.o.filter.as_deref().is_some_and(|f| f.protects()) {
        // Called for a type change, without the directory's path: the filters could not
        // be asked what in it they protect, so nothing in it is removed.
        let why = "not replaced: a directory in DST, and the filters in force may protect entries in it (remove it by hand, or sync without filters)";
        return (0, Err(Unremoved::Refused(why.into())));
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

/// One directory of [`sparing`]'s walk: its fd, path, entries and how far through them.
struct Level {
    fd: OwnedFd,
    rel: Vec<u8>,
    name: CString,
    entries: Vec<walk::Entry>,
    next: usize,
    /// Something in it stays (protected, refused or failed): it is not removed.
    stays: bool,
}

/// Remove DST's directory `name` of `dir` (path `rel`) and what is below it, except what
/// the filters protect, which stays with the directories holding it (as `rsync --delete`
/// leaves them: "cannot delete non-empty directory"). Through fds, never following a
/// symlink nor entering a mount (unless `--cross-mounts`) or SRC; iterative (a deep tree
/// holds one fd per level, no stack frames). `dry`: count only. Returns the entries
/// removed (or that would be) and those kept (protected ones and the directories left
/// holding them); failures are reported here.
pub(super) fn sparing(
    ctx: &CopyShared,
    f: &Filter,
    dir: BorrowedFd<'_>,
    name: &CStr,
    rel: &[u8],
    dry: bool,
) -> (u64, u64) {
    let (mut removed, mut kept) = (0, 0);
    let shown = |rel: &[u8]| String::from_utf8_lossy(rel).into_owned();
    let Some(first) = open_level(ctx, dir, name, rel, dry) else {
        return (0, 1);
    };
    let mut stack = vec![first];
    while let Some(top) = stack.last_mut() {
        if let Some(e) = top.entries.get(top.next) {
            top.next += 1;
            let rel = super::engine::rel_join(&top.rel, e.name.to_bytes());
            let is_dir = e.kind == Kind::Dir;
            if f.protected(&rel, is_dir) {
                kept += 1;
                top.stays = true;
            } else if is_dir {
                match open_level(ctx, top.fd.as_fd(), &e.name, &rel, dry) {
                    Some(l) => stack.push(l),
                    None => top.stays = true,
                }
            } else if dry {
                removed += 1;
            } else {
                match unlinkat(top.fd.as_fd(), &e.name, AtFlags::empty()) {
                    Ok(()) | Err(Errno::NOENT) => removed += 1,
                    Err(err) => {
                        ctx.fail(&shown(&rel), None, "delete", err);
                        top.stays = true;
                    }
                }
            }
            continue;
        }
        let done = stack.pop().expect("a level");
        let parent = stack.last().map_or(dir, |l| l.fd.as_fd());
        let stays = done.stays || (!dry && !rmdir_below(ctx, parent, &done));
        if stays {
            kept += 1;
            if let Some(up) = stack.last_mut() {
                up.stays = true;
            }
        } else {
            removed += 1;
        }
    }
    (removed, kept)
}

/// Open and list DST's directory `name` of `dir` for [`sparing`] (None: it stays, and
/// why is reported when it is not just gone).
fn open_level(ctx: &CopyShared, dir: BorrowedFd<'_>, name: &CStr, rel: &[u8], dry: bool) -> Option<Level> {
    let shown = String::from_utf8_lossy(rel).into_owned();
    let fd = match open_dir_at(dir, name) {
        Ok(fd) => fd,
        Err(e) => {
            ctx.fail(&shown, None, "open to delete", e);
            return None;
        }
    };
    if let Some(why) = ctx.wall(fd.as_fd(), false, Some(dir)) {
        ctx.refuse(&shown, None, &format!("not deleted: {}", why.replace("not entered;", "not entered nor emptied;")));
        return None;
    }
    if !dry {
        // A read-only directory cannot have its entries removed: make it writable first.
        let _ = rustix::fs::fchmod(&fd, FsMode::from_raw_mode(0o700));
    }
    let entries = match walk::read_dir(fd.as_fd()) {
        Ok(v) => v,
        Err(e) => {
            ctx.fail(&shown, None, "list to delete", e);
            return None;
        }
    };
    Some(Level { fd, rel: rel.to_vec(), name: name.to_owned(), entries, next: 0, stays: false })
}

/// Remove [`sparing`]'s emptied directory `l` from `parent`; false: it stays (a mount
/// point entered with --cross-mounts, or a failure, reported).
fn rmdir_below(ctx: &CopyShared, parent: BorrowedFd<'_>, l: &Level) -> bool {
    if walk::dir_id(l.fd.as_fd()).is_ok_and(|id| id.mount_root == Some(true)) {
        let desc = crate::engine::overlap::describe_mount(l.fd.as_fd());
        let why = format!(
            "not deleted: a mount point in DST ({desc}): emptied (--cross-mounts); the mount point itself stays"
        );
        ctx.refuse(&String::from_utf8_lossy(&l.rel), None, &why);
        return false;
    }
    match unlinkat(parent, &l.name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => true,
        Err(e) => {
            ctx.fail(&String::from_utf8_lossy(&l.rel), None, "delete", e);
            false
        }
    }
}
