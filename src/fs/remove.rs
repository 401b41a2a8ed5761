//! Removing a tree below a directory fd: iterative with a bounded number of directory
//! fds (parents reopened through `..` and checked by device and inode), never following
//! a symlink, never entering a mount. Serves run-directory cleanup, the experiments'
//! delete of their trees, pack's leftovers and sync's deletions.

use crate::fs::walk::{self, DIR_FLAGS, Kind};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, openat, unlinkat};
use rustix::io::Errno;
use std::ffi::CString;

/// Remove everything inside `dir` (a run directory's marker included). Never follows symlinks: subdirectories are opened with O_NOFOLLOW relative
/// to their parent's fd, and symlinks are unlinked, not followed.
pub fn remove_contents(dir: BorrowedFd<'_>) -> std::result::Result<(), Errno> {
    remove_below(dir, &mut 0)
}

/// [`remove_contents`], adding the entries removed to `removed` (also when it fails
/// part-way). A directory on another device or that is a mount root (a bind mount of
/// the same file system included) is not entered: its mount point is left, EXDEV.
pub fn remove_contents_counted(dir: BorrowedFd<'_>, removed: &mut u64) -> std::result::Result<(), Errno> {
    remove_below(dir, removed)
}

/// Directory fds kept open during removal: deeper trees reopen a parent through `..`
/// (checked by device and inode), so a tree of any depth needs a bounded number of fds
/// and no recursion (a depth-1,000 tree once hit EMFILE / deep recursion here).
const REMOVE_OPEN_FDS: usize = 32;

/// One directory being emptied: its fd (None once evicted), identity, the entries
/// still to remove, and its name in its parent.
struct Frame {
    fd: Option<OwnedFd>,
    id: (u64, u64),
    todo: Vec<walk::Entry>,
    name: Option<CString>,
}

fn dev_ino(fd: BorrowedFd<'_>) -> std::result::Result<(u64, u64), Errno> {
    let st = rustix::fs::fstat(fd)?;
    Ok((st.st_dev, st.st_ino))
}

/// Is the directory at `fd` a mount root, or on another device than `dev`?
fn mount_boundary(fd: BorrowedFd<'_>, dev: u64) -> std::result::Result<bool, Errno> {
    use rustix::fs::{StatxAttributes, StatxFlags};
    let st = rustix::fs::statx(fd, c"", AtFlags::EMPTY_PATH, StatxFlags::BASIC_STATS)?;
    let other = rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor) != dev;
    Ok(other || st.stx_attributes.contains(StatxAttributes::MOUNT_ROOT))
}

fn remove_below(dir: BorrowedFd<'_>, removed: &mut u64) -> std::result::Result<(), Errno> {
    // Collect names first (read_dir does): unlinking while getdents walks can skip entries.
    let todo = walk::read_dir(dir)?;
    let root = rustix::io::fcntl_dupfd_cloexec(dir, 0)?;
    let id = dev_ino(root.as_fd())?;
    let mut stack = vec![Frame { fd: Some(root), id, todo, name: None }];
    let mut first_err = None;
    loop {
        let top = stack.last_mut().expect("the root frame stays until the end");
        let tfd = top.fd.as_ref().expect("the top frame always has its fd");
        if let Some(e) = top.todo.pop() {
            if e.kind != Kind::Dir {
                match unlinkat(tfd, e.name.as_c_str(), AtFlags::empty()) {
                    Ok(()) => *removed += 1,
                    Err(Errno::NOENT) => {}
                    Err(err) => {
                        first_err.get_or_insert(err);
                    }
                }
                continue;
            }
            let root_dev = stack[0].id.0;
            let tfd = stack.last().and_then(|f| f.fd.as_ref()).expect("the top frame always has its fd");
            let opened = walk::open_dir_at(tfd.as_fd(), &e.name).and_then(|sub| {
                // A mount below (a bind mount of someone's directory): never entered.
                if mount_boundary(sub.as_fd(), root_dev)? {
                    return Err(Errno::XDEV);
                }
                Ok((walk::read_dir(sub.as_fd())?, dev_ino(sub.as_fd())?, sub))
            });
            match opened {
                Ok((todo, id, sub)) => {
                    stack.push(Frame { fd: Some(sub), id, todo, name: Some(e.name) });
                    // Keep the newest fds only (the root's is kept too).
                    if stack.len() > REMOVE_OPEN_FDS + 1 {
                        let i = stack.len() - 1 - REMOVE_OPEN_FDS;
                        stack[i].fd = None;
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
        match unlinkat(pfd, done.name.as_deref().expect("named"), AtFlags::REMOVEDIR) {
            Ok(()) => *removed += 1,
            Err(err) => {
                first_err.get_or_insert(err);
            }
        }
    }
    first_err.map_or(Ok(()), Err)
}
