//! Directory reading relative to directory fds, shared by every engine that walks a tree
//! it did not generate (copy, sync, scan, inventory, removal of run directories).
//!
//! Rules: directories are opened one component at a time with `O_NOFOLLOW | O_DIRECTORY`
//! (a symlink swapped in for a directory makes the open fail with ELOOP/ENOTDIR instead
//! of leading outside the tree); entry types come from getdents' `d_type`, with one
//! `statx` only when the file system does not fill it in (DT_UNKNOWN).
//!
//! [`par_tasks`] runs a tree of tasks (typically one per directory) on a fixed number of
//! threads with work stealing (rayon), as the fastest copiers do (one task per directory).

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, StatxFlags, openat, statx};
use rustix::io::Errno;
use std::cell::RefCell;
use std::ffi::{CStr, CString};
use std::mem::MaybeUninit;
use std::path::Path;

/// Flags for opening a directory below a root: never follow a symlink.
pub const DIR_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);

/// What an entry is, as far as walking cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// FIFOs, sockets, device nodes: reported, never opened.
    Other,
}

impl Kind {
    pub fn from_file_type(ft: FileType) -> Option<Kind> {
        Some(match ft {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Symlink,
            FileType::Unknown => return None,
            _ => Kind::Other,
        })
    }

    pub fn from_mode(mode: u32) -> Kind {
        Kind::from_file_type(FileType::from_raw_mode(mode)).unwrap_or(Kind::Other)
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Dir => "dir",
            Kind::Symlink => "symlink",
            Kind::Other => "other",
        }
    }
}

/// One directory entry (never `.` or `..`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: CString,
    pub kind: Kind,
    pub ino: u64,
}

/// getdents64 buffer: 64 KiB holds ~2,000 entries of short names per call.
const DENTS_BUF: usize = 64 * 1024;

thread_local! {
    // One getdents buffer per thread, reused for every directory.
    static DENTS: RefCell<Vec<MaybeUninit<u8>>> = RefCell::new(vec![MaybeUninit::uninit(); DENTS_BUF]);
}

/// Opens directory `name` below `parent` without following a symlink.
pub fn open_dir_at(parent: BorrowedFd<'_>, name: &CStr) -> Result<OwnedFd, Errno> {
    openat(parent, name, DIR_FLAGS, Mode::empty())
}

/// Opens a root directory given by the user. The root itself may be reached through
/// symlinks (the user named it); everything below it is opened with [`open_dir_at`].
pub fn open_root(path: &Path) -> Result<OwnedFd, Errno> {
    openat(rustix::fs::CWD, path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
}

/// All entries of directory `dir` except `.` and `..`, in the order the file system
/// returns them. Reads from a fresh descriptor of the same directory, so `dir`'s own
/// position is left alone and the call can be repeated.
pub fn read_dir(dir: BorrowedFd<'_>) -> Result<Vec<Entry>, Errno> {
    let own = openat(dir, c".", DIR_FLAGS, Mode::empty())?;
    read_dir_fd(own.as_fd(), dir)
}

/// Like [`read_dir`] but reads `fd` itself (which must be at position 0 and is used up);
/// saves the extra open when the caller has just opened the directory.
pub fn read_dir_fd(fd: BorrowedFd<'_>, parent_for_stat: BorrowedFd<'_>) -> Result<Vec<Entry>, Errno> {
    let mut out = Vec::new();
    for_each_entry(fd, parent_for_stat, |name, kind, ino| out.push(Entry { name: name.to_owned(), kind, ino }))?;
    Ok(out)
}

/// Calls `f(name, kind, ino)` for every entry of the directory `fd` (at position 0; used
/// up) except `.` and `..`, without collecting them: for callers that keep their own
/// compact form of a listing (a directory can hold millions of entries).
pub fn for_each_entry(
    fd: BorrowedFd<'_>,
    parent_for_stat: BorrowedFd<'_>,
    mut f: impl FnMut(&CStr, Kind, u64),
) -> Result<(), Errno> {
    DENTS.with(|buf| {
        let mut buf = buf.borrow_mut();
        let mut it = RawDir::new(fd, &mut buf[..]);
        while let Some(e) = it.next() {
            let e = e?;
            let name = e.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            let kind = match Kind::from_file_type(e.file_type()) {
                Some(k) => k,
                None => kind_of(parent_for_stat, name)?,
            };
            f(name, kind, e.ino());
        }
        Ok(())
    })
}

/// The kind of `name` below `dir` by `statx` (for DT_UNKNOWN), not following symlinks.
pub fn kind_of(dir: BorrowedFd<'_>, name: &CStr) -> Result<Kind, Errno> {
    let st = statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::TYPE)?;
    Ok(Kind::from_mode(st.stx_mode as u32))
}

/// What the copy, sync and verify engines need of an entry: one `statx` (no symlink
/// followed) gives type, permission bits, size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub kind: Kind,
    /// Permission bits (mode & 0o7777).
    pub perm: u32,
    pub size: u64,
    pub mtime_s: i64,
    pub mtime_ns: u32,
}

impl Meta {
    pub fn of(st: &rustix::fs::Statx) -> Meta {
        Meta {
            kind: Kind::from_mode(st.stx_mode as u32),
            perm: st.stx_mode as u32 & 0o7777,
            size: st.stx_size,
            mtime_s: st.stx_mtime.tv_sec,
            mtime_ns: st.stx_mtime.tv_nsec,
        }
    }
}

/// [`Meta`] of `name` below `dir`, not following a symlink.
pub fn meta_at(dir: BorrowedFd<'_>, name: &CStr) -> Result<Meta, Errno> {
    let want = StatxFlags::TYPE | StatxFlags::MODE | StatxFlags::SIZE | StatxFlags::MTIME;
    Ok(Meta::of(&statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, want)?))
}

/// [`Meta`] of the directory `dir` itself.
pub fn meta_of(dir: BorrowedFd<'_>) -> Result<Meta, Errno> {
    meta_at(dir, c".")
}

/// Raise the soft open-file limit to the hard one. Walkers hold a directory fd per level
/// in flight (two for copy/sync), so a tree 1,000 levels deep needs more than the usual
/// soft limit of 1,024, which exists only for select(2); past the hard limit the entries
/// that cannot be opened are reported as failed (EMFILE), never crash the walk.
pub fn raise_fd_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut l = getrlimit(Resource::Nofile);
    let want = l.maximum.unwrap_or(1 << 20).min(1 << 20);
    if l.current.is_some_and(|c| c < want) {
        l.current = Some(want);
        let _ = setrlimit(Resource::Nofile, l);
    }
}

/// Runs a tree of tasks on `threads` threads with work stealing. `work(task, spawn)`
/// handles one task and calls `spawn` for each child task (e.g. each subdirectory);
/// children run on any thread. Returns when every task has finished.
///
/// Errors are the tasks' business (they record them); a panic in a task is re-raised here.
pub fn par_tasks<T, F>(threads: usize, roots: Vec<T>, work: F)
where
    T: Send,
    F: Fn(T, &mut dyn FnMut(T)) + Sync,
{
    fn run<'s, T: Send + 's, F: Fn(T, &mut dyn FnMut(T)) + Sync>(s: &rayon::Scope<'s>, task: T, work: &'s F) {
        let mut kids = Vec::new();
        work(task, &mut |k| kids.push(k));
        for k in kids {
            s.spawn(move |s| run(s, k, work));
        }
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("manyfiles-walk-{i}"))
        .build()
        .expect("a thread pool of a few threads can be built");
    let work = &work;
    pool.scope(|s| {
        for t in roots {
            s.spawn(move |s| run(s, t, work));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;
    use std::sync::Mutex;

    #[test]
    fn read_dir_reports_kinds_and_skips_dots() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("f"), b"x").unwrap();
        std::fs::create_dir(t.path().join("d")).unwrap();
        std::os::unix::fs::symlink("/nonexistent", t.path().join("l")).unwrap();
        let root = open_root(t.path()).unwrap();
        let mut got: Vec<(String, Kind)> = read_dir(root.as_fd())
            .unwrap()
            .into_iter()
            .map(|e| (e.name.to_str().unwrap().to_string(), e.kind))
            .collect();
        got.sort();
        assert_eq!(got, vec![("d".into(), Kind::Dir), ("f".into(), Kind::File), ("l".into(), Kind::Symlink)]);
        // Repeatable: the caller's fd position is untouched.
        assert_eq!(read_dir(root.as_fd()).unwrap().len(), 3);
    }

    #[test]
    fn open_dir_at_refuses_a_symlink() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("real")).unwrap();
        std::os::unix::fs::symlink("real", t.path().join("link")).unwrap();
        let root = open_root(t.path()).unwrap();
        assert!(open_dir_at(root.as_fd(), c"real").is_ok());
        let e = open_dir_at(root.as_fd(), c"link").unwrap_err();
        assert!(e == Errno::LOOP || e == Errno::NOTDIR, "{e:?}");
    }

    #[test]
    fn par_tasks_visits_every_directory_once() {
        let t = tempfile::tempdir().unwrap();
        for a in 0..5 {
            for b in 0..4 {
                std::fs::create_dir_all(t.path().join(format!("{a}/{b}"))).unwrap();
            }
        }
        let seen = Mutex::new(Vec::new());
        let root = open_root(t.path()).unwrap();
        par_tasks(3, vec![(root, String::new())], |(fd, path): (OwnedFd, String), spawn| {
            seen.lock().unwrap().push(path.clone());
            for e in read_dir(fd.as_fd()).unwrap() {
                if e.kind == Kind::Dir {
                    let sub = open_dir_at(fd.as_fd(), &e.name).unwrap();
                    let name = std::ffi::OsStr::from_bytes(e.name.as_bytes()).to_string_lossy().into_owned();
                    spawn((sub, format!("{path}/{name}")));
                }
            }
        });
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        assert_eq!(seen.len(), 1 + 5 + 20);
        seen.dedup();
        assert_eq!(seen.len(), 26);
    }
}
