//! Cold reads: before a read-side phase, evict what the experiment itself put in the
//! kernel's caches, as fio does before every job (`invalidate=1`): a `syncfs` (dirty
//! pages cannot be dropped), then `posix_fadvise(POSIX_FADV_DONTNEED)` on every file
//! of the trees to be read; with root, the page, dentry and inode caches are dropped
//! as well (`/proc/sys/vm/drop_caches`), which also takes the directories' blocks and
//! a loop device's backing image out of memory. Memory file systems have no cache apart
//! from their storage: nothing to do there, and the results say so. The engines' `--cold`
//! (copy, sync, scan, rm: `engine::timing`) uses the same [`evict`].

use crate::fs::walk::{self, Kind};
use rustix::fd::AsFd;
use rustix::fs::{Advice, Mode, OFlags, fadvise, openat};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// What was done to the caches before a phase (recorded with every measurement).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheState {
    /// Left as the previous phases left it.
    Warm,
    /// The trees' file data evicted (fadvise); metadata may still be cached.
    DataEvicted,
    /// File data evicted and page, dentry and inode caches dropped (root).
    AllDropped,
    /// A memory file system (tmpfs, ramfs): its storage is the cache.
    NotApplicable,
}

impl CacheState {
    pub fn name(self) -> &'static str {
        match self {
            CacheState::Warm => "warm",
            CacheState::DataEvicted => "data-evicted",
            CacheState::AllDropped => "all-dropped",
            CacheState::NotApplicable => "not-applicable",
        }
    }
}

/// statfs magic numbers of the file systems whose storage is memory, and of FUSE.
const TMPFS_MAGIC: i64 = 0x0102_1994;
const RAMFS_MAGIC: i64 = 0x8584_58f6;
const FUSE_MAGIC: i64 = 0x6573_5546;

const EXT4_MAGIC: i64 = 0xEF53;
/// `EXT4_IOC_CHECKPOINT` (Linux 5.13): `_IOW('f', 43, __u32)`.
const EXT4_IOC_CHECKPOINT: libc::c_ulong = 0x4004_662B;

/// Write ext4's journal back to its home blocks. Until then, metadata written in the last
/// seconds (a freshly made tree's directories and inode tables) stay attached to the
/// journal and drop_caches cannot free them: a "cold" walk right after a copy found them
/// in memory. Measured on RAM-backed ext4 (2-core VM, 2026-11-24, 5,504 files in 1,139
/// directories): the first cold scan of a new tree took 40–46 ms, every later one 60–96
/// ms; after a checkpoint (fsfreeze) the first took 65–73 ms. The journal's content is
/// unchanged (a checkpoint is what the kernel does anyway when the journal fills or the
/// file system unmounts); an older kernel or a journal-less ext2 refuses it, and then
/// nothing is done (rustix has no ext4 ioctls: libc).
pub fn checkpoint_ext4_journal(fd: &impl rustix::fd::AsRawFd) -> std::io::Result<()> {
    let flags: u32 = 0;
    // SAFETY: the ioctl reads one u32 from a valid pointer; the fd is open.
    match unsafe { libc::ioctl(fd.as_raw_fd(), EXT4_IOC_CHECKPOINT as _, &flags as *const u32) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Make the trees below `roots` cold for reading. Returns what could be done, and a
/// caveat when the phase may still be partly warm.
pub fn make_cold(roots: &[&Path], threads: usize) -> Result<(CacheState, Option<String>), String> {
    evict(roots, threads).map(|e| (e.state, e.caveat))
}

/// What [`evict`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eviction {
    pub state: CacheState,
    /// What may still be cached (no root: metadata; FUSE: the daemon's own cache).
    pub caveat: Option<String>,
    /// Regular files whose cached pages were dropped (fadvise DONTNEED).
    pub files: u64,
}

/// File systems where one operation may cost a network round trip (or a user-space
/// daemon's), by statfs magic: FUSE (sshfs, rclone, ntfs-3g), NFS, SMB/CIFS, 9p, Ceph, AFS.
const ROUND_TRIP_FS: [(i64, &str); 8] = [
    (FUSE_MAGIC, "fuse"),
    (0x6969, "nfs"),
    (0x517B, "smb"),
    (0xFE53_4D42, "smb2"),
    (0xFF53_4D42, "cifs"),
    (0x0102_1997, "9p"),
    (0x00C3_6400, "ceph"),
    (0x5346_414F, "afs"),
];

/// The kind of file system `path` (or, when it does not exist yet, its nearest existing
/// ancestor) is on when an operation there may wait on a network or a daemon; None for
/// local storage or when it cannot be told.
pub fn round_trip_fs(path: &Path) -> Option<&'static str> {
    let mut p = Some(path);
    while let Some(q) = p {
        if let Ok(st) = rustix::fs::statfs(q) {
            let magic = st.f_type as i64;
            return ROUND_TRIP_FS.iter().find(|(m, _)| *m == magic).map(|(_, n)| *n);
        }
        p = q.parent().filter(|x| !x.as_os_str().is_empty());
    }
    None
}

/// The kind of memory file system `path` is on (its storage is the page cache: nothing
/// can be evicted from it), or None.
pub fn memory_fs(path: &Path) -> Result<Option<&'static str>, String> {
    let fd = walk::open_root(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let magic = rustix::fs::fstatfs(&fd).map_err(|e| format!("statfs {}: {e}", path.display()))?.f_type as i64;
    Ok(match magic {
        TMPFS_MAGIC => Some("tmpfs"),
        RAMFS_MAGIC => Some("ramfs"),
        _ => None,
    })
}

/// Make the trees below `roots` cold for reading: on each root's file system (roots on
/// a memory file system are left out) a syncfs (on ext4 as root, a journal checkpoint:
/// [`checkpoint_ext4_journal`]), then every file's pages evicted; with root, every cache
/// dropped once. NotApplicable when every root is on memory.
pub fn evict(roots: &[&Path], threads: usize) -> Result<Eviction, String> {
    let mut files = 0;
    let mut fuse = false;
    let mut on_disk = 0;
    for r in roots {
        let fd = walk::open_root(r).map_err(|e| format!("cannot open {}: {e}", r.display()))?;
        let magic = rustix::fs::fstatfs(&fd).map_err(|e| format!("statfs {}: {e}", r.display()))?.f_type as i64;
        if magic == TMPFS_MAGIC || magic == RAMFS_MAGIC {
            continue;
        }
        on_disk += 1;
        fuse |= magic == FUSE_MAGIC;
        rustix::fs::syncfs(&fd).map_err(|e| format!("syncfs {}: {e}", r.display()))?;
        if magic == EXT4_MAGIC && rustix::process::geteuid().is_root() {
            let _ = checkpoint_ext4_journal(&fd); // refused: the walk is as cold as before
        }
        files += evict_tree(r, threads)?;
    }
    if on_disk == 0 {
        let state = if roots.is_empty() { CacheState::Warm } else { CacheState::NotApplicable };
        return Ok(Eviction { state, caveat: None, files });
    }
    if rustix::process::geteuid().is_root() {
        drop_caches().map_err(|e| e.to_string())?;
        let caveat = fuse.then(|| "a FUSE file system's daemon may keep a cache of its own".to_string());
        return Ok(Eviction { state: CacheState::AllDropped, caveat, files });
    }
    let mut caveat = String::from("without root only file data are evicted: directories and inodes stay cached");
    if fuse {
        caveat.push_str("; a FUSE file system's daemon may keep a cache of its own");
    }
    Ok(Eviction { state: CacheState::DataEvicted, caveat: Some(caveat), files })
}

/// fadvise(DONTNEED) on every regular file below `root`, one task per directory.
/// Files that cannot be opened (no permission) are skipped: they stay as they are.
pub fn evict_tree(root: &Path, threads: usize) -> Result<u64, String> {
    let fd = walk::open_root(root).map_err(|e| format!("cannot open {}: {e}", root.display()))?;
    let evicted = AtomicU64::new(0);
    let file_flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    walk::par_tasks(threads, vec![walk::DirTask::Root(fd)], |t: walk::DirTask, spawn| {
        let Ok(dir) = t.open() else { return };
        let _ = fadvise(&*dir, 0, None, Advice::DontNeed);
        let Ok(listing) = walk::read_dir(dir.as_fd()) else { return };
        for e in listing {
            match e.kind {
                Kind::File => {
                    if let Ok(f) = openat(&*dir, e.name.as_c_str(), file_flags, Mode::empty()) {
                        if fadvise(&f, 0, None, Advice::DontNeed).is_ok() {
                            evicted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                Kind::Dir => spawn(walk::DirTask::Below(std::sync::Arc::clone(&dir), e.name)),
                Kind::Symlink | Kind::Other => {}
            }
        }
    });
    Ok(evicted.into_inner())
}

/// Pages of `path` in the page cache (mincore over a mapping), and the file's pages.
pub fn resident_pages(path: &Path) -> std::io::Result<(usize, usize)> {
    let f = std::fs::File::open(path)?;
    let len = f.metadata()?.len() as usize;
    if len == 0 {
        return Ok((0, 0));
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let pages = len.div_ceil(page);
    // SAFETY: a read-only shared mapping of a file we hold open, unmapped below; no
    // access to its memory is made (mincore only asks the kernel about it).
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            std::os::fd::AsRawFd::as_raw_fd(&f),
            0,
        );
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let mut vec = vec![0u8; pages];
        let rc = libc::mincore(p, len, vec.as_mut_ptr());
        let err = std::io::Error::last_os_error();
        libc::munmap(p, len);
        if rc != 0 {
            return Err(err);
        }
        Ok((vec.iter().filter(|b| **b & 1 == 1).count(), pages))
    }
}

/// sync, then drop the page, dentry and inode caches (needs root). Outside any timing.
pub fn drop_caches() -> crate::error::Result<()> {
    rustix::fs::sync();
    std::fs::write("/proc/sys/vm/drop_caches", "3")
        .map_err(|e| crate::error::Error::failed(format!("cannot drop caches (/proc/sys/vm/drop_caches): {e}")))
}

/// What happens to the kernel's caches between phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    /// Left alone: reads after create hit the page cache (`--cache warm`).
    Warm,
    /// Before every phase: sync + drop page, dentry and inode caches, and the read-side
    /// phases' trees evicted (`--cache drop`, `--drop-caches`; root).
    Drop,
    /// Before every read-side phase (read, stat, list, scan, copy/sync/tools' trees):
    /// the trees' data evicted (fadvise), and with root every cache dropped (the default).
    #[default]
    Cold,
}

impl CacheMode {
    /// Result files written before the cache setting existed measured warm.
    pub fn legacy() -> CacheMode {
        CacheMode::Warm
    }

    pub fn parse(s: &str) -> crate::error::Result<CacheMode> {
        match s {
            "cold" => Ok(CacheMode::Cold),
            "warm" => Ok(CacheMode::Warm),
            "drop" => Ok(CacheMode::Drop),
            _ => Err(crate::error::Error::bad("--cache", format!("'{s}': expected cold, warm or drop"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_takes_file_pages_out_of_the_page_cache() {
        // On tmpfs (where /tmp may be) pages cannot leave memory: use a disk directory.
        let base = ["/var/tmp", "/tmp", "."].into_iter().map(Path::new).find(|d| {
            let Ok(fd) = walk::open_root(d) else { return false };
            let m = rustix::fs::fstatfs(&fd).map(|s| s.f_type).unwrap_or(TMPFS_MAGIC);
            m != TMPFS_MAGIC && m != RAMFS_MAGIC && m != FUSE_MAGIC
        });
        let Some(base) = base else {
            eprintln!("skipped: no disk-backed directory to test eviction on");
            return;
        };
        let t = tempfile::tempdir_in(base).unwrap();
        std::fs::create_dir(t.path().join("d")).unwrap();
        let file = t.path().join("d/f");
        std::fs::write(&file, vec![7u8; 1 << 20]).unwrap();
        let _ = std::fs::read(&file).unwrap();
        let (before, pages) = resident_pages(&file).unwrap();
        assert_eq!(before, pages, "a file just written and read is cached");
        let (state, caveat) = make_cold(&[t.path()], 2).unwrap();
        let (after, _) = resident_pages(&file).unwrap();
        assert_eq!(after, 0, "{state:?}: {after} of {pages} pages still cached");
        assert!(matches!(state, CacheState::DataEvicted | CacheState::AllDropped));
        assert_eq!(caveat.is_some(), state == CacheState::DataEvicted);
    }

    #[test]
    fn memory_file_systems_are_not_applicable() {
        let Ok(fd) = walk::open_root(Path::new("/dev/shm")) else { return };
        if rustix::fs::fstatfs(&fd).map(|s| s.f_type).ok() != Some(TMPFS_MAGIC) {
            return;
        }
        let t = tempfile::tempdir_in("/dev/shm").unwrap();
        assert_eq!(make_cold(&[t.path()], 1).unwrap().0, CacheState::NotApplicable);
    }
}
