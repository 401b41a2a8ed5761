//! Run directories: the only places the tool writes. Each holds a marker file naming
//! the process that made it; removal works through directory fds, never follows a
//! symlink, and removes a run directory only while its marker is there.

use crate::engine::walk::{self, DIR_FLAGS, Kind};
use crate::error::{Error, Result};
use crate::target::registry;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, mkdirat, openat, unlinkat};
use rustix::io::Errno;
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Name of the marker file in every directory the tool made to write into.
pub const MARKER: &str = ".manyfiles-run";

/// A run directory `manyfiles-run-<id>` the tool created; removed on drop unless kept.
pub struct RunDir {
    pub path: PathBuf,
    parent: OwnedFd,
    name: CString,
    fd: OwnedFd,
    keep: bool,
    /// On a file system formatted afresh after this trial: what is left in it need not
    /// be removed first (see [`RunDir::disposable`]).
    disposable: bool,
    /// Registry record (when /run/manyfiles is writable, i.e. as root), so that
    /// `manyfiles cleanup` can remove the directory after a kill -9.
    registration: std::sync::Mutex<Option<registry::Registration>>,
}

/// A unique run id: UTC time and pid, e.g. `20261122T031500Z-4242`.
pub fn run_id() -> String {
    let t = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let compact: String = t.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    format!("{compact}-{}", std::process::id())
}

impl RunDir {
    /// Create `manyfiles-run-<id>` inside `parent` with its marker.
    pub fn create(parent: &Path, keep: bool) -> Result<RunDir> {
        let pfd = openat(rustix::fs::CWD, parent, DIR_FLAGS, Mode::empty())
            .map_err(|e| Error::bad("--target", format!("cannot open {}: {e}", parent.display())))?;
        let name = format!("manyfiles-run-{}", run_id());
        let cname = CString::new(name.clone()).expect("no NUL");
        mkdirat(&pfd, cname.as_c_str(), Mode::from_raw_mode(0o755)).map_err(|e| {
            Error::bad("--target", format!("cannot create a run directory in {}: {e}", parent.display()))
        })?;
        let fd = openat(&pfd, cname.as_c_str(), DIR_FLAGS, Mode::empty())
            .map_err(|e| Error::failed(format!("cannot open the new run directory: {e}")))?;
        let path = parent.join(&name);
        let registration = registry::register(
            &format!("{}-rundir", name.trim_start_matches("manyfiles-run-")),
            registry::Record { run_dir: Some(path.clone()), ..registry::own_record("run directory") },
        )
        .ok(); // best effort: without root there is no registry, and a normal exit cleans up anyway
        let rd = RunDir {
            path,
            parent: pfd,
            name: cname,
            fd,
            keep,
            disposable: false,
            registration: std::sync::Mutex::new(registration),
        };
        write_marker(rd.fd.as_fd())
            .map_err(|e| Error::failed(format!("cannot write the marker in {}: {e}", rd.path.display())))?;
        Ok(rd)
    }

    /// Use a run directory another process (MPI rank 0, with --shared-dir) created: never
    /// removed from here (its creator removes it), and only while its marker is there.
    pub fn attach(path: &Path) -> Result<RunDir> {
        let (parent, name) = match (path.parent(), path.file_name()) {
            (Some(p), Some(n)) => (p, n),
            _ => return Err(Error::failed(format!("{}: not a run directory", path.display()))),
        };
        let pfd = openat(rustix::fs::CWD, parent, DIR_FLAGS, Mode::empty())
            .map_err(|e| Error::failed(format!("cannot open {}: {e}", parent.display())))?;
        let cname = CString::new(name.as_encoded_bytes()).map_err(|_| Error::failed("NUL in a path"))?;
        let fd = openat(&pfd, cname.as_c_str(), DIR_FLAGS, Mode::empty())
            .map_err(|e| Error::failed(format!("cannot open the shared run directory {}: {e}", path.display())))?;
        if !has_marker(fd.as_fd()) {
            return Err(Error::failed(format!("{} holds no manyfiles marker", path.display())));
        }
        let rd = RunDir {
            path: path.to_path_buf(),
            parent: pfd,
            name: cname,
            fd,
            keep: true,
            disposable: false,
            registration: std::sync::Mutex::new(None),
        };
        Ok(rd)
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    pub fn set_keep(&mut self, keep: bool) {
        self.keep = keep;
    }

    /// Will the file system holding it be formatted afresh before anything else runs
    /// there? Then untimed clean-up inside it (deleting a tree nobody timed) is skipped:
    /// on exFAT and NTFS it can take longer than the measured phases.
    pub fn disposable(&self) -> bool {
        self.disposable
    }

    pub fn set_disposable(&mut self, d: bool) {
        self.disposable = d;
    }

    /// Remove the run directory and everything in it.
    pub fn remove(&self) -> std::result::Result<(), Errno> {
        if !has_marker(self.fd.as_fd()) {
            // Not ours any more (someone replaced it): leave it alone.
            return Err(Errno::PERM);
        }
        remove_contents(self.fd.as_fd())?;
        unlinkat(&self.parent, self.name.as_c_str(), AtFlags::REMOVEDIR)?;
        self.unregister();
        Ok(())
    }

    /// Forget the registry record (the directory is gone, or kept on purpose).
    fn unregister(&self) {
        if let Some(r) = self.registration.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = r.unregister();
        }
    }
}

/// Remove a run directory left by a dead process (from `cleanup`): only a directory,
/// not a symlink, holding the marker. Ok(false) when it is gone or no longer marked.
pub fn remove_run_dir(path: &Path) -> std::result::Result<bool, String> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err("not a run directory path".into());
    };
    if !name.to_string_lossy().starts_with("manyfiles-run-") {
        return Err("not named manyfiles-run-*; left alone".into());
    }
    let pfd = match openat(rustix::fs::CWD, parent, DIR_FLAGS, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(false),
        Err(e) => return Err(e.to_string()),
    };
    let fd = match openat(&pfd, name, DIR_FLAGS, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(false),
        Err(e) => return Err(format!("{e} (a symlink or not a directory: left alone)")),
    };
    if !has_marker(fd.as_fd()) {
        return Ok(false); // not (or no longer) ours: nothing to remove, forget the record
    }
    remove_contents(fd.as_fd()).map_err(|e| e.to_string())?;
    unlinkat(&pfd, name, AtFlags::REMOVEDIR).map_err(|e| e.to_string())?;
    Ok(true)
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if self.keep {
            self.unregister();
        } else {
            if let Err(e) = self.remove() {
                eprintln!("manyfiles: could not remove run directory {}: {e}", self.path.display());
            }
        }
    }
}

/// Write the marker file (tool, version, pid) into `dir`.
pub fn write_marker(dir: BorrowedFd<'_>) -> std::result::Result<(), Errno> {
    let fd = openat(
        dir,
        MARKER,
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )?;
    let text = format!("manyfiles {} pid {}\n", env!("CARGO_PKG_VERSION"), std::process::id());
    crate::ops::create::write_all(fd.as_fd(), text.as_bytes())
}

/// Does `dir` hold a marker file (a regular file, not a symlink)?
pub fn has_marker(dir: BorrowedFd<'_>) -> bool {
    rustix::fs::statx(dir, MARKER, AtFlags::SYMLINK_NOFOLLOW, rustix::fs::StatxFlags::TYPE)
        .map(|st| FileType::from_raw_mode(st.stx_mode as u32) == FileType::RegularFile)
        .unwrap_or(false)
}

/// Remove everything inside `dir`, marker included. Never follows symlinks: subdirectories are opened with O_NOFOLLOW relative
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_and_removes_without_following_symlinks() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("precious"), b"keep me").unwrap();
        let parent = tempfile::tempdir().unwrap();
        let path;
        {
            let rd = RunDir::create(parent.path(), false).unwrap();
            path = rd.path.clone();
            assert!(path.join(MARKER).is_file());
            std::fs::create_dir_all(path.join("a/b/c")).unwrap();
            std::fs::write(path.join("a/b/c/f"), b"x").unwrap();
            std::os::unix::fs::symlink(outside.path(), path.join("a/link")).unwrap();
        }
        assert!(!path.exists(), "run dir removed on drop");
        assert!(outside.path().join("precious").exists(), "symlink target untouched");
    }

    #[test]
    fn keep_and_refuse_without_marker() {
        let parent = tempfile::tempdir().unwrap();
        let mut rd = RunDir::create(parent.path(), true).unwrap();
        let path = rd.path.clone();
        std::fs::remove_file(path.join(MARKER)).unwrap();
        assert_eq!(rd.remove(), Err(Errno::PERM));
        rd.set_keep(true);
        drop(rd);
        assert!(path.exists());
    }

    /// Scenario 6 (hostile trees) regression: a tree deeper than PATH_MAX and than the
    /// fd bound is removed without recursion and with few fds.
    #[test]
    fn reliability_hostile_deep_tree_is_removed() {
        let parent = tempfile::tempdir().unwrap();
        let rd = RunDir::create(parent.path(), false).unwrap();
        let mut fd = rustix::io::fcntl_dupfd_cloexec(rd.fd(), 0).unwrap();
        for i in 0..1200 {
            let name = CString::new(format!("d{:0>200}", i)).unwrap();
            mkdirat(&fd, name.as_c_str(), Mode::from_raw_mode(0o755)).unwrap();
            let f = openat(&fd, c"f", OFlags::WRONLY | OFlags::CREATE, Mode::from_raw_mode(0o644));
            drop(f.unwrap());
            fd = walk::open_dir_at(fd.as_fd(), &name).unwrap();
        }
        drop(fd);
        let path = rd.path.clone();
        rd.remove().unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn bad_parent_is_bad_input() {
        let e = RunDir::create(Path::new("/nonexistent/dir"), false).err().unwrap();
        assert_eq!(e.exit_code(), 2);
    }
}
