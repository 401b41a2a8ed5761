//! What the copy/sync walk never enters (issue 25, 38): SRC's and DST's roots and
//! ancestors on either side (a bind mount showing one side inside the other, or a side
//! inside itself: a loop), and on DST's side a mount point (another file system, or a
//! bind mount of the same one) unless `--cross-mounts`. Judged on the directory's fd
//! by one statx (identity and the mount-root attribute), once per directory.

use super::engine::CopyShared;
use super::listing::Item;
use crate::fs::walk::{self, Kind};
use rustix::fd::BorrowedFd;
use std::sync::atomic::Ordering;

impl CopyShared<'_> {
    /// Why the walk must not enter the directory open at `fd` on this side (None: it
    /// may): SRC's or DST's root or one of their ancestors on either side (a bind mount
    /// that shows one side inside the other, or a side inside itself: a loop), and on
    /// DST's side a mount point (another file system or a bind mount: never written
    /// into nor emptied) unless `--cross-mounts`. One statx per directory, none per file.
    pub(crate) fn wall(&self, fd: BorrowedFd<'_>, src_side: bool, parent: Option<BorrowedFd<'_>>) -> Option<String> {
        let Ok(id) = walk::dir_id(fd) else { return None };
        let me = (id.dev, id.ino);
        let w = &self.walls;
        let said = |s: &str| Some(s.to_string());
        match src_side {
            true if w.dst_chain.contains(&me) => said("is DST or holds it (a bind mount?): not entered"),
            true if w.src_chain.contains(&me) => said("is SRC or holds it (a bind mount: a loop): not entered"),
            false if w.src_chain.contains(&me) => said("in DST is SRC or holds it (a bind mount?): not entered"),
            false if w.dst_chain.contains(&me) => said("in DST is DST or holds it (a bind mount: a loop): not entered"),
            false if !self.o.cross_mounts && self.crosses(&id, parent) => Some(format!(
                "a mount point in DST ({}): not entered; --cross-mounts to enter it",
                crate::engine::overlap::describe_mount(fd)
            )),
            _ if self.crosses(&id, parent) && self.shows_other_side(fd, src_side) => Some(format!(
                "a mount of {} or a directory of it ({}): not entered",
                if src_side { "DST" } else { "SRC" },
                crate::engine::overlap::describe_mount(fd)
            )),
            _ => None,
        }
    }
    /// A mount point met on one side that shows (a directory of) the other side.
    fn shows_other_side(&self, fd: BorrowedFd<'_>, src_side: bool) -> bool {
        let other = if src_side { &self.walls.dst_inside } else { &self.walls.src_inside };
        match (other, crate::engine::overlap::mount_shows(fd)) {
            (Some(other), Some(shown)) => crate::engine::overlap::inside_overlap(other, &shown),
            _ => false,
        }
    }
    /// Is `id` (a DST directory) a mount root, or on another device than its `parent`?
    /// The kernel's mount-root attribute says (5.8 on); before it, the parent's device.
    fn crosses(&self, id: &walk::DirId, parent: Option<BorrowedFd<'_>>) -> bool {
        match (id.mount_root, parent) {
            (Some(true), _) => true,
            (Some(false), _) | (None, None) => false,
            (None, Some(p)) => rustix::fs::fstat(p).is_ok_and(|st| st.st_dev != id.dev),
        }
    }
}

/// A DST file (not a directory) that is a mount point (a file bind-mounted over it, as
/// the listing's statx says): neither written into nor renamed over; refused (true).
pub(super) fn file_mount_refused(ctx: &CopyShared, path: &str, d: Option<&Item>) -> bool {
    let Some(d) = d.filter(|d| d.m.attrs & walk::ATTR_MOUNT_ROOT != 0 && d.m.kind != Kind::Dir) else {
        return false;
    };
    ctx.refuse(path, Some(d.name), "a mount point in DST (a file bind mount): not replaced");
    ctx.c.failed_entries.fetch_add(1, Ordering::Relaxed);
    true
}
