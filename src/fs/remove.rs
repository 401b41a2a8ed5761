//! The one recursive remover. Its per-directory step is shared by every driver:
//! [`list`] a directory completely (unlinking while getdents walks can skip entries),
//! its subdirectories handed to the caller and its other names kept in inode order (as
//! GNU rm: consecutive unlinks touch the same inode-table blocks), then [`unlink_names`]
//! in batches (`unlinkat` relative to the directory's fd: a symlink is unlinked, never
//! followed; ENOENT is someone else's removal, not a failure; an own directory without
//! write or search permission gets u+rwx first: [`grant`], [`grant_below`]). A
//! directory is entered only when [`crossing`] says it is on the same file system and
//! not a mount root, unless the caller allows it.
//!
//! Three drivers run that step:
//! - [`remove_contents`] / [`remove_contents_counted`] here: one thread, a bounded number
//!   of directory fds (parents reopened through `..` and checked by device and inode), no
//!   recursion, never entering a mount. Serves run-directory cleanup, the experiments'
//!   delete of their trees, pack's leftovers and sync's deletions: a tree of any depth is
//!   removed with at most 33 fds.
//! - `engine::rm`: `manyfiles rm`, one task per directory on `walk::par_tasks`, a large
//!   directory's names unlinked in batches on several tasks.
//! - `engine::rm::mpi`: the same on every MPI rank, by paths.

use crate::fs::walk::{self, DIR_FLAGS, Kind};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags, openat, unlinkat};
use rustix::io::Errno;
use std::ffi::{CStr, CString};

/// Names per unlink batch: a directory with more is emptied by several tasks in the
/// parallel drivers. Large enough that a task costs nothing beside its unlinks
/// (~2,000 × a few µs).
pub const BATCH: usize = 2048;

/// A directory's non-directory names, listed completely, in inode order.
#[derive(Default)]
pub struct Listed {
    /// NUL-terminated names back to back.
    names: Vec<u8>,
    /// (inode, offset of the name in `names`), sorted by inode.
    files: Vec<(u64, u32)>,
}

impl Listed {
    /// Non-directory names listed.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The names in inode order, in batches of at most `max` (each NUL-terminated
    /// names back to back, as [`unlink_names`] takes them).
    pub fn batches(&self, max: usize) -> impl Iterator<Item = Vec<u8>> + '_ {
        self.files.chunks(max.max(1)).map(|part| {
            let mut b = Vec::with_capacity(part.len() * 16);
            for &(_, off) in part {
                let name = CStr::from_bytes_until_nul(&self.names[off as usize..]).expect("NUL-terminated");
                b.extend_from_slice(name.to_bytes_with_nul());
            }
            b
        })
    }
}

/// List directory `dir` completely: each subdirectory's name goes to `on_dir` as it is
/// read, the other names are kept ([`Listed`], inode order). `dir` must be a fresh open
/// (at offset 0: getdents goes on from where the fd was). A listing that fails part
/// way keeps what it read and returns the error beside it. Entry types come from
/// getdents' `d_type` (a statx only where the file system gives none).
pub fn list(dir: BorrowedFd<'_>, mut on_dir: impl FnMut(&CStr)) -> (Listed, Result<(), Errno>) {
    let mut l = Listed::default();
    let r = walk::for_each_entry(dir, dir, |name, kind, ino| {
        if kind == Kind::Dir {
            on_dir(name);
        } else {
            l.files.push((ino, l.names.len() as u32));
            l.names.extend_from_slice(name.to_bytes_with_nul());
        }
    });
    l.files.sort_unstable();
    (l, r)
}

/// Unlink the NUL-terminated `names` (back to back) of `dir`, non-directories when they
/// were listed. A name that has become a directory meanwhile goes to `became_dir`; one
/// that cannot be unlinked to `failed`; one already gone is skipped. Returns the number
/// unlinked.
pub fn unlink_names(
    dir: BorrowedFd<'_>,
    names: &[u8],
    mut became_dir: impl FnMut(&CStr),
    mut failed: impl FnMut(&CStr, Errno),
) -> u64 {
    let mut n = 0;
    for raw in names.split_inclusive(|&b| b == 0) {
        let name = CStr::from_bytes_with_nul(raw).expect("one NUL-terminated name");
        match unlink_one(dir, name) {
            Ok(()) => n += 1,
            Err(Errno::NOENT) => {}
            Err(Errno::ISDIR) | Err(Errno::PERM) if walk::kind_of(dir, name) == Ok(Kind::Dir) => became_dir(name),
            Err(e) => failed(name, e),
        }
    }
    n
}

/// Remove one non-directory: one `unlinkat`, nothing else on the way of success.
pub fn unlink_one(dir: BorrowedFd<'_>, name: &CStr) -> Result<(), Errno> {
    match unlinkat(dir, name, AtFlags::empty()) {
        Err(Errno::ACCESS) if grant(dir) => unlinkat(dir, name, AtFlags::empty()),
        r => r,
    }
}

/// Remove the (now empty) directory `name` of `dir`.
pub fn rmdir_one(dir: BorrowedFd<'_>, name: &CStr) -> Result<(), Errno> {
    match unlinkat(dir, name, AtFlags::REMOVEDIR) {
        Err(Errno::ACCESS) if grant(dir) => unlinkat(dir, name, AtFlags::REMOVEDIR),
        r => r,
    }
}

/// Open subdirectory `name` of `dir` to empty it (no symlink followed), granting an own
/// directory that cannot be read u+rwx first.
pub fn open_to_empty(dir: BorrowedFd<'_>, name: &CStr) -> Result<OwnedFd, Errno> {
    match walk::open_dir_at(dir, name) {
        Err(Errno::ACCESS) if grant_below(dir, name) => walk::open_dir_at(dir, name),
        r => r,
    }
}

/// The directory at `fd`: its device, and whether entering it crosses into another file
/// system (another device than `parent_dev`, or a mount root: a bind mount of the same
/// file system included).
pub fn crossing(fd: BorrowedFd<'_>, parent_dev: u64) -> Result<(u64, bool), Errno> {
    let id = walk::dir_id(fd)?;
    Ok((id.dev, id.crosses(parent_dev)))
}

/// A directory of our own without write or search permission (a read-only tree, as Go's
/// module cache is): add u+rwx so it can be emptied, as the owner could. Never for a
/// directory of someone else (that fails as `rm -rf` fails).
pub fn grant(dir: BorrowedFd<'_>) -> bool {
    match rustix::fs::fstat(dir) {
        Ok(st) if st.st_uid == rustix::process::geteuid().as_raw() && st.st_mode & 0o700 != 0o700 => {
            rustix::fs::fchmod(dir, Mode::from_raw_mode((st.st_mode | 0o700) & 0o7777)).is_ok()
        }
        _ => false,
    }
}

/// [`grant`] for a directory we cannot open for reading: reach it with `O_PATH` (no
/// symlink followed) and change it through its /proc/self/fd link, which names exactly
/// that inode.
pub fn grant_below(parent: BorrowedFd<'_>, name: &CStr) -> bool {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let Ok(fd) = openat(parent, name, flags, Mode::empty()) else { return false };
    let Ok(st) = rustix::fs::fstat(&fd) else { return false };
    if st.st_uid != rustix::process::geteuid().as_raw() || st.st_mode & 0o700 == 0o700 {
        return false;
    }
    let link = format!("/proc/self/fd/{}", rustix::fd::AsRawFd::as_raw_fd(&fd));
    rustix::fs::chmod(link.as_str(), Mode::from_raw_mode((st.st_mode | 0o700) & 0o7777)).is_ok()
}

/// Remove everything inside `dir` (a run directory's marker included). Never follows
/// symlinks: subdirectories are opened with O_NOFOLLOW relative to their parent's fd,
/// and symlinks are unlinked, not followed.
pub fn remove_contents(dir: BorrowedFd<'_>) -> Result<(), Errno> {
    remove_below(dir, &mut 0, false, &[])
}

/// [`remove_contents`], adding the entries removed to `removed` (also when it fails
/// part-way). A directory on another device or that is a mount root (a bind mount of
/// the same file system included) is not entered: its mount point is left, EXDEV.
pub fn remove_contents_counted(dir: BorrowedFd<'_>, removed: &mut u64) -> Result<(), Errno> {
    remove_below(dir, removed, false, &[])
}

/// [`remove_contents_counted`] that, with `cross_mounts`, also empties the mounts below
/// (`sync --delete --cross-mounts`, as `rm --cross-mounts`): their mount points stay
/// (busy while mounted), which is the error returned (EBUSY).
/// Directories whose (device, inode) is in `never` are not entered either way (SRC
/// and its ancestors, for sync: a bind mount of them below DST).
pub fn remove_contents_crossing(
    dir: BorrowedFd<'_>,
    removed: &mut u64,
    cross_mounts: bool,
    never: &[(u64, u64)],
) -> Result<(), Errno> {
    remove_below(dir, removed, cross_mounts, never)
}

/// Directory fds kept open during removal: deeper trees reopen a parent through `..`
/// (checked by device and inode), so a tree of any depth needs a bounded number of fds
/// and no recursion (a depth-1,000 tree once hit EMFILE / deep recursion here).
const REMOVE_OPEN_FDS: usize = 32;

/// One directory being emptied: its fd (None once evicted), identity, the
/// subdirectories still to empty, and its name in its parent.
struct Frame {
    fd: Option<OwnedFd>,
    id: (u64, u64),
    subdirs: Vec<CString>,
    name: Option<CString>,
}

fn dev_ino(fd: BorrowedFd<'_>) -> Result<(u64, u64), Errno> {
    let st = rustix::fs::fstat(fd)?;
    Ok((st.st_dev, st.st_ino))
}

/// Empty `dir`'s non-directories (the shared step), returning its subdirectories.
fn empty_files(dir: BorrowedFd<'_>, removed: &mut u64, first_err: &mut Option<Errno>) -> Vec<CString> {
    let mut subdirs = Vec::new();
    let (listed, r) = list(dir, |name| subdirs.push(name.to_owned()));
    if let Err(e) = r {
        first_err.get_or_insert(e);
    }
    for batch in listed.batches(BATCH) {
        *removed += unlink_names(
            dir,
            &batch,
            |name| subdirs.push(name.to_owned()),
            |_, e| {
                first_err.get_or_insert(e);
            },
        );
    }
    subdirs
}

fn remove_below(dir: BorrowedFd<'_>, removed: &mut u64, cross_mounts: bool, never: &[(u64, u64)]) -> Result<(), Errno> {
    // A fresh open, not a dup: a dup shares the caller's directory offset, and a run
    // directory's fd that was listed before would list nothing (and its rmdir fail).
    let root = openat(dir, c".", DIR_FLAGS, Mode::empty())?;
    let id = dev_ino(root.as_fd())?;
    let mut first_err = None;
    let subdirs = empty_files(root.as_fd(), removed, &mut first_err);
    let mut stack = vec![Frame { fd: Some(root), id, subdirs, name: None }];
    loop {
        let root_dev = stack[0].id.0;
        let top = stack.last_mut().expect("the root frame stays until the end");
        if let Some(name) = top.subdirs.pop() {
            let tfd = top.fd.as_ref().expect("the top frame always has its fd");
            let opened = open_to_empty(tfd.as_fd(), &name).and_then(|sub| {
                // A mount below (a bind mount of someone's directory): never entered.
                if !cross_mounts && crossing(sub.as_fd(), root_dev)?.1 {
                    return Err(Errno::XDEV);
                }
                let id = dev_ino(sub.as_fd())?;
                if never.contains(&id) {
                    return Err(Errno::XDEV);
                }
                Ok((id, sub))
            });
            match opened {
                Ok((id, sub)) => {
                    let subdirs = empty_files(sub.as_fd(), removed, &mut first_err);
                    stack.push(Frame { fd: Some(sub), id, subdirs, name: Some(name) });
                    // Keep the newest fds only (the root's is kept too).
                    if stack.len() > REMOVE_OPEN_FDS + 1 {
                        let i = stack.len() - 1 - REMOVE_OPEN_FDS;
                        stack[i].fd = None;
                    }
                }
                Err(Errno::NOENT) => {}
                Err(Errno::NOTDIR) | Err(Errno::LOOP) => {
                    // Replaced by a non-directory (or a symlink) since it was listed.
                    match unlink_one(tfd.as_fd(), &name) {
                        Ok(()) => *removed += 1,
                        Err(Errno::NOENT) => {}
                        Err(e) => {
                            first_err.get_or_insert(e);
                        }
                    }
                }
                Err(err) => {
                    first_err.get_or_insert(err);
                }
            }
            continue;
        }
        // This directory is empty (or holds what could not be removed): go up.
        if stack.len() == 1 {
            break;
        }
        let done = stack.pop().expect("more than one frame");
        let parent = stack.last_mut().expect("a parent frame");
        if parent.fd.is_none() {
            // Reopen the parent through `..` and make sure it is the same directory (it
            // could have been moved meanwhile); if not, stop rather than remove elsewhere.
            let up = openat(done.fd.as_ref().expect("fd"), c"..", DIR_FLAGS, Mode::empty())?;
            if dev_ino(up.as_fd())? != parent.id {
                return Err(Errno::XDEV);
            }
            parent.fd = Some(up);
        }
        drop(done.fd);
        let pfd = parent.fd.as_ref().expect("reopened");
        match rmdir_one(pfd.as_fd(), done.name.as_deref().expect("named")) {
            Ok(()) => *removed += 1,
            Err(err) => {
                first_err.get_or_insert(err);
            }
        }
    }
    first_err.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_directory_is_listed_in_inode_order_and_batches() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("d");
        std::fs::create_dir(&d).unwrap();
        for i in 0..(2 * BATCH + 7) {
            std::fs::write(d.join(format!("f{i}")), b"").unwrap();
        }
        std::fs::create_dir(d.join("sub")).unwrap();
        let fd = walk::open_root(&d).unwrap();
        let mut dirs = Vec::new();
        let (l, r) = list(fd.as_fd(), |n| dirs.push(n.to_owned()));
        r.unwrap();
        assert_eq!(dirs, vec![c"sub".to_owned()]);
        assert_eq!(l.len(), 2 * BATCH + 7);
        let batches: Vec<Vec<u8>> = l.batches(BATCH).collect();
        let counts: Vec<usize> = batches.iter().map(|b| b.iter().filter(|&&c| c == 0).count()).collect();
        assert_eq!(counts, vec![BATCH, BATCH, 7]);
        // Inode order across the batches.
        let inos: Vec<u64> = batches
            .iter()
            .flat_map(|b| b.split(|&c| c == 0).filter(|n| !n.is_empty()).map(|n| n.to_vec()).collect::<Vec<_>>())
            .map(|n| std::fs::symlink_metadata(d.join(String::from_utf8(n).unwrap())).unwrap())
            .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
            .collect();
        assert!(inos.windows(2).all(|w| w[0] < w[1]));
        let mut gone = 0;
        for b in &batches {
            gone += unlink_names(fd.as_fd(), b, |n| panic!("{n:?} is no directory"), |n, e| panic!("{n:?}: {e}"));
        }
        assert_eq!(gone, 2 * BATCH as u64 + 7);
        // Unlinking again: every name is gone, which is not a failure.
        assert_eq!(unlink_names(fd.as_fd(), &batches[2], |_| panic!(), |n, e| panic!("{n:?}: {e}")), 0);
    }

    #[test]
    fn a_name_that_became_a_directory_is_handed_back() {
        let t = tempfile::tempdir().unwrap();
        let fd = walk::open_root(t.path()).unwrap();
        std::fs::create_dir(t.path().join("x")).unwrap();
        let mut back = Vec::new();
        let n = unlink_names(fd.as_fd(), b"x\0", |n| back.push(n.to_owned()), |n, e| panic!("{n:?}: {e}"));
        assert_eq!((n, back), (0, vec![c"x".to_owned()]));
    }

    #[test]
    fn an_fd_that_was_listed_before_is_emptied_all_the_same() {
        let t = tempfile::tempdir().unwrap();
        for i in 0..50 {
            std::fs::write(t.path().join(format!("f{i}")), b"x").unwrap();
        }
        std::fs::create_dir(t.path().join("d")).unwrap();
        let fd = walk::open_root(t.path()).unwrap();
        // Read to the end on this very fd, as a run directory's owner may have.
        walk::for_each_entry(fd.as_fd(), fd.as_fd(), |_, _, _| {}).unwrap();
        let mut n = 0;
        remove_contents_counted(fd.as_fd(), &mut n).unwrap();
        assert_eq!(n, 51);
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0);
    }

    #[test]
    fn remove_contents_counts_every_entry_and_keeps_the_directory() {
        let t = tempfile::tempdir().unwrap();
        let top = t.path().join("top");
        for a in 0..3 {
            let d = top.join(format!("{a}/deeper"));
            std::fs::create_dir_all(&d).unwrap();
            for f in 0..4 {
                std::fs::write(d.join(format!("f{f}")), b"x").unwrap();
            }
            std::os::unix::fs::symlink("/", top.join(format!("{a}/to-root"))).unwrap();
        }
        let fd = walk::open_root(&top).unwrap();
        let mut n = 0;
        remove_contents_counted(fd.as_fd(), &mut n).unwrap();
        // 3 × (directory, deeper, 4 files, symlink).
        assert_eq!(n, 3 * 7);
        assert!(top.is_dir());
        assert_eq!(std::fs::read_dir(&top).unwrap().count(), 0);
    }
}
