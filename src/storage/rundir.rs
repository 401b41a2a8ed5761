//! Run directories: the only places the tool writes. Each holds a marker file naming
//! the process that made it; removal works through directory fds, never follows a
//! symlink, and removes a run directory only while its marker is there.

use crate::error::{Error, Result};
use crate::fs::remove::remove_contents;
use crate::fs::walk::DIR_FLAGS;
use crate::storage::kinds::{KindRecord, directory::DirectoryRecord};
use crate::storage::registry;
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
        // A second run directory of this process (a new block of runs, another target
        // on the same parent) within the same second gets a count of its own.
        static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let name = match MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
            0 => format!("manyfiles-run-{}", run_id()),
            n => format!("manyfiles-run-{}.{n}", run_id()),
        };
        let cname = CString::new(name.clone()).expect("no NUL");
        mkdirat(&pfd, cname.as_c_str(), Mode::from_raw_mode(0o755)).map_err(|e| {
            Error::bad("--target", format!("cannot create a run directory in {}: {e}", parent.display()))
        })?;
        let fd = openat(&pfd, cname.as_c_str(), DIR_FLAGS, Mode::empty())
            .map_err(|e| Error::failed(format!("cannot open the new run directory: {e}")))?;
        let path = parent.join(&name);
        let registration = registry::register(
            &format!("{}-rundir", name.trim_start_matches("manyfiles-run-")),
            registry::Record {
                kind: KindRecord::Directory(DirectoryRecord { run_dir: Some(path.clone()) }),
                ..registry::own_record("run directory")
            },
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
    crate::fs::write_all(fd.as_fd(), text.as_bytes())
}

/// Does `dir` hold a marker file (a regular file, not a symlink)?
pub fn has_marker(dir: BorrowedFd<'_>) -> bool {
    rustix::fs::statx(dir, MARKER, AtFlags::SYMLINK_NOFOLLOW, rustix::fs::StatxFlags::TYPE)
        .map(|st| FileType::from_raw_mode(st.stx_mode as u32) == FileType::RegularFile)
        .unwrap_or(false)
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
            fd = crate::fs::walk::open_dir_at(fd.as_fd(), &name).unwrap();
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
