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

/// Names (and inodes) of a part of a directory listing, kinds not looked up (for callers
/// that statx every entry anyway: see [`for_each_name`]), kept in one buffer: one
/// allocation a part instead of one a name, which was 2–3% of a warm scan's CPU (issue 41).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Names {
    /// Every name with its NUL, one after another.
    bytes: Vec<u8>,
    /// Where each name ends (past its NUL) in `bytes`.
    ends: Vec<usize>,
    inos: Vec<u64>,
}

impl Names {
    fn push(&mut self, name: &CStr, ino: u64) {
        self.bytes.extend_from_slice(name.to_bytes_with_nul());
        self.ends.push(self.bytes.len());
        self.inos.push(ino);
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The `i`-th name.
    pub fn name(&self, i: usize) -> &CStr {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        CStr::from_bytes_with_nul(&self.bytes[start..self.ends[i]]).expect("one NUL, at the end: pushed from a CStr")
    }

    /// The `i`-th entry's inode, as getdents gave it.
    pub fn ino(&self, i: usize) -> u64 {
        self.inos[i]
    }

    /// The names in order.
    pub fn iter(&self) -> impl Iterator<Item = &CStr> {
        (0..self.len()).map(|i| self.name(i))
    }
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

/// The listing of `fd` (at position 0; used up) in parts of `chunk` names, each part
/// with what `map_part` returns for it (one result a name, in order), parts in directory
/// order, and the nanoseconds spent reading (getdents). Once `chunk` entries have been
/// read, they go to the pool's other threads while getdents goes on here: a large
/// directory's getdents is one thread's work, and with the per-entry work (statx) waiting
/// for it to end, a 1,000,000-entry directory spent ~0.4 s of a warm 1.7 s scan on one
/// core (issue 15).
pub fn read_dir_parts<R: Send>(
    fd: BorrowedFd<'_>,
    chunk: usize,
    map_part: impl Fn(&Names) -> Vec<R> + Sync,
) -> Result<(Vec<(Names, Vec<R>)>, u64), Errno> {
    let done = std::sync::Mutex::new(Vec::new());
    let read = rayon::scope(|s| {
        let (map_part, done) = (&map_part, &done);
        let mut cur = Names::default();
        let mut parts = 0;
        let t0 = std::time::Instant::now();
        let read = for_each_name(fd, |name, ino| {
            cur.push(name, ino);
            if cur.len() == chunk.max(1) {
                let (part, i) = (std::mem::take(&mut cur), parts);
                parts += 1;
                s.spawn(move |_| {
                    let out = map_part(&part);
                    done.lock().expect("no panic while holding it").push((i, part, out));
                });
            }
        });
        let read_ns = t0.elapsed().as_nanos() as u64;
        let last = map_part(&cur);
        done.lock().expect("no panic while holding it").push((parts, cur, last));
        read.map(|()| read_ns)
    });
    let read_ns = read?;
    let mut parts = done.into_inner().expect("no panic while holding it");
    parts.sort_unstable_by_key(|p| p.0);
    Ok((parts.into_iter().map(|(_, names, out)| (names, out)).collect(), read_ns))
}

/// Calls `f(name, kind, ino)` for every entry of the directory `fd` (at position 0; used
/// up) except `.` and `..`, without collecting them: for callers that keep their own
/// compact form of a listing (a directory can hold millions of entries).
pub fn for_each_entry(
    fd: BorrowedFd<'_>,
    parent_for_stat: BorrowedFd<'_>,
    mut f: impl FnMut(&CStr, Kind, u64),
) -> Result<(), Errno> {
    for_each_typed(fd, |name, ft, ino| {
        let kind = match Kind::from_file_type(ft) {
            Some(k) => k,
            None => kind_of(parent_for_stat, name)?,
        };
        f(name, kind, ino);
        Ok(())
    })
}

/// Calls `f(name, ino)` for every entry of the directory `fd` (at position 0; used up)
/// except `.` and `..`: [`for_each_entry`] without the kinds, for callers that statx
/// every entry anyway. A file system that leaves d_type unknown (sshfs) would otherwise
/// cost a second statx per entry, one at a time on the listing thread.
pub fn for_each_name(fd: BorrowedFd<'_>, mut f: impl FnMut(&CStr, u64)) -> Result<(), Errno> {
    for_each_typed(fd, |name, _, ino| {
        f(name, ino);
        Ok(())
    })
}

/// getdents on `fd` with d_type as the file system gave it (maybe unknown).
fn for_each_typed(
    fd: BorrowedFd<'_>,
    mut f: impl FnMut(&CStr, FileType, u64) -> Result<(), Errno>,
) -> Result<(), Errno> {
    DENTS.with(|buf| {
        let mut buf = buf.borrow_mut();
        let mut it = RawDir::new(fd, &mut buf[..]);
        while let Some(e) = it.next() {
            let e = e?;
            let name = e.file_name();
            if name != c"." && name != c".." {
                f(name, e.file_type(), e.ino())?;
            }
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
/// followed) gives type, permission bits, size, modification time, inode, owner, link
/// count, allocated blocks and the inode flags statx reports — everything needed to
/// decide, without another call, whether an entry needs more than its bytes copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub kind: Kind,
    /// Permission bits (mode & 0o7777).
    pub perm: u32,
    pub size: u64,
    pub mtime_s: i64,
    pub mtime_ns: u32,
    /// The inode listed: what is opened later is checked to be this one (an entry
    /// swapped for another, a FIFO say, between the listing and the open is not read).
    pub ino: u64,
    /// File type bits (mode & S_IFMT): which kind of [`Kind::Other`] it is.
    pub ifmt: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    /// 512-byte blocks allocated (fewer than the size needs: a sparse file).
    pub blocks: u64,
    /// The device holding the entry (hard links are one inode of one device).
    pub dev: u64,
    /// The device a character or block device node stands for.
    pub rdev: u64,
    /// statx attributes (STATX_ATTR_*: immutable, append, nodump, compressed …).
    pub attrs: u32,
    /// Inode change time: any change of the inode (xattrs, owner, mode, links) moves it.
    pub ctime_s: i64,
    pub ctime_ns: u32,
}

impl Meta {
    #[inline]
    pub fn of(st: &rustix::fs::Statx) -> Meta {
        Meta {
            kind: Kind::from_mode(st.stx_mode as u32),
            perm: st.stx_mode as u32 & 0o7777,
            size: st.stx_size,
            mtime_s: st.stx_mtime.tv_sec,
            mtime_ns: st.stx_mtime.tv_nsec,
            ino: st.stx_ino,
            ifmt: st.stx_mode as u32 & 0o170000,
            uid: st.stx_uid,
            gid: st.stx_gid,
            nlink: st.stx_nlink,
            blocks: st.stx_blocks,
            dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
            rdev: rustix::fs::makedev(st.stx_rdev_major, st.stx_rdev_minor),
            attrs: (st.stx_attributes & st.stx_attributes_mask).bits() as u32,
            ctime_s: st.stx_ctime.tv_sec,
            ctime_ns: st.stx_ctime.tv_nsec,
        }
    }

    /// Changed after `other` was (inode change times): xattrs, owner or mode of this
    /// entry may differ from what `other` got when it was last written.
    pub fn changed_after(&self, other: &Meta) -> bool {
        (self.ctime_s, self.ctime_ns) > (other.ctime_s, other.ctime_ns)
    }

    /// Plain metadata for tests and synthetic entries.
    pub fn plain(kind: Kind, perm: u32, size: u64) -> Meta {
        Meta {
            kind,
            perm,
            size,
            mtime_s: 0,
            mtime_ns: 0,
            ino: 0,
            ifmt: 0,
            uid: 0,
            gid: 0,
            nlink: 1,
            blocks: size.div_ceil(512),
            dev: 0,
            rdev: 0,
            attrs: 0,
            ctime_s: 0,
            ctime_ns: 0,
        }
    }
}

/// An open directory's identity, and whether it is the root of a mount: a mount point
/// seen from above (another file system, or a bind mount of the same one, which
/// `st_dev` alone does not tell). One statx on the fd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirId {
    pub dev: u64,
    pub ino: u64,
    /// None: the kernel does not report STATX_ATTR_MOUNT_ROOT (before 5.8).
    pub mount_root: Option<bool>,
}

impl DirId {
    /// Entering this directory from one on `parent_dev` crosses into another mount.
    pub fn crosses(&self, parent_dev: u64) -> bool {
        self.dev != parent_dev || self.mount_root == Some(true)
    }
}

/// [`DirId`] of the directory open at `fd`.
pub fn dir_id(fd: BorrowedFd<'_>) -> Result<DirId, Errno> {
    use rustix::fs::StatxAttributes;
    let st = statx(fd, c"", AtFlags::EMPTY_PATH, StatxFlags::TYPE | StatxFlags::INO)?;
    let known = st.stx_attributes_mask.contains(StatxAttributes::MOUNT_ROOT);
    Ok(DirId {
        dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
        ino: st.stx_ino,
        mount_root: known.then(|| st.stx_attributes.contains(StatxAttributes::MOUNT_ROOT)),
    })
}

/// statx's STATX_ATTR_MOUNT_ROOT in [`Meta::attrs`]: the entry listed is a mount point
/// (its statx, by name from the parent, reached the mounted root).
pub const ATTR_MOUNT_ROOT: u32 = 0x2000;

/// [`Meta`] of `name` below `dir`, not following a symlink.
#[inline]
pub fn meta_at(dir: BorrowedFd<'_>, name: &CStr) -> Result<Meta, Errno> {
    let want = StatxFlags::TYPE
        | StatxFlags::MODE
        | StatxFlags::SIZE
        | StatxFlags::MTIME
        | StatxFlags::CTIME
        | StatxFlags::INO
        | StatxFlags::UID
        | StatxFlags::GID
        | StatxFlags::NLINK
        | StatxFlags::BLOCKS;
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

/// A directory task of a [`par_tasks`] walk: the root, open; or a subdirectory by name
/// below its parent, opened only when a thread takes it. A queued subdirectory holds no fd
/// of its own (it shares its parent's), so a directory of 10,000 subdirectories queues
/// 10,000 names rather than 10,000 open fds: opened eagerly, they ran past RLIMIT_NOFILE
/// and every subdirectory beyond it failed with EMFILE (issue 41's 10,000,000-file copy).
/// Open at once are the directories being worked on and the parents of queued ones.
pub enum DirTask {
    Root(OwnedFd),
    Below(std::sync::Arc<OwnedFd>, CString),
}

impl DirTask {
    /// The directory, opened (`O_NOFOLLOW`: a subdirectory swapped for a symlink since
    /// it was listed is not entered).
    pub fn open(self) -> Result<std::sync::Arc<OwnedFd>, Errno> {
        match self {
            DirTask::Root(fd) => Ok(std::sync::Arc::new(fd)),
            DirTask::Below(parent, name) => open_dir_at(parent.as_fd(), &name).map(std::sync::Arc::new),
        }
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
    fn read_dir_parts_keeps_directory_order_across_chunks() {
        // 5,000 entries in chunks of 512: most are mapped on other threads while
        // getdents goes on, and the result must still be read_dir's order, each entry
        // with its own result.
        let t = tempfile::tempdir().unwrap();
        for i in 0..5000 {
            std::fs::write(t.path().join(format!("f{i}")), b"").unwrap();
        }
        let root = open_root(t.path()).unwrap();
        let plain: Vec<Entry> = read_dir(root.as_fd()).unwrap();
        let own = open_dir_at(root.as_fd(), c".").unwrap();
        let len_of = |p: &Names| p.iter().map(|n| n.to_bytes().len()).collect();
        let (parts, _) = read_dir_parts(own.as_fd(), 512, len_of).unwrap();
        assert_eq!(parts.len(), 10);
        assert!(parts.iter().all(|(names, out)| names.len() == out.len() && names.len() <= 512));
        let mapped: Vec<(&CStr, u64, usize)> =
            parts.iter().flat_map(|(p, out)| (0..p.len()).map(move |i| (p.name(i), p.ino(i), out[i]))).collect();
        let want: Vec<(&CStr, u64, usize)> =
            plain.iter().map(|e| (e.name.as_c_str(), e.ino, e.name.to_bytes().len())).collect();
        assert_eq!(mapped, want);
        // Fewer entries than a chunk: mapped here, same result.
        let small = tempfile::tempdir().unwrap();
        std::fs::write(small.path().join("only"), b"").unwrap();
        let fd = open_root(small.path()).unwrap();
        let (one, _) = read_dir_parts(fd.as_fd(), 512, |p| vec![7u8; p.len()]).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!((one[0].0.name(0), one[0].1[0]), (c"only", 7));
    }

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
