//! One entry's transfer: the cheapest path per file (reflink when asked, read/write with
//! a reused buffer for small files, copy_file_range for large ones), symlinks as symlinks,
//! permission bits and mtime set on the open descriptor.

use super::attrs::{Loc, Loss};
use super::finish::{self, Attr, PathFn};
use crate::fs::walk::Meta;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags, openat, readlinkat, symlinkat, unlinkat};
use rustix::io::Errno;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicU64, Ordering};

/// Files up to this size go through read/write with the thread's buffer (one read, one
/// write); larger ones through copy_file_range (no copy through user space).
pub const SMALL: u64 = 256 * 1024;

/// Prefix of the temporary names sync writes to before renaming; names with it in DST
/// are the tool's own leftovers (a killed sync) and are removed by the next sync.
pub const TMP_PREFIX: &[u8] = b".manyfiles-tmp.";

static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// A fresh temporary name: short whatever the final name (a 255-byte name plus a suffix
/// would not fit NAME_MAX), unique per process and call.
pub fn tmp_name() -> CString {
    // The pid read once (a getpid a file showed in the object download's syscalls).
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let n = TMP_SEQ.fetch_add(1, Ordering::Relaxed);
    let pid = PID.get_or_init(std::process::id);
    CString::new(format!(".manyfiles-tmp.{pid}.{n:x}")).expect("no NUL in a formatted number")
}

pub fn is_tmp_name(name: &CStr) -> bool {
    name.to_bytes().starts_with(TMP_PREFIX)
}

/// Which step of a transfer failed, for the failure list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    OpenSource,
    Read,
    Create,
    Write,
    Metadata,
    Rename,
    /// The entry opened is not the one listed (another inode, or no longer a regular
    /// file: a FIFO swapped in would block a read forever).
    Changed,
}

impl Step {
    pub fn name(self) -> &'static str {
        match self {
            Step::OpenSource => "open source",
            Step::Read => "read",
            Step::Create => "create",
            Step::Write => "write",
            Step::Metadata => "set mode/mtime",
            Step::Rename => "rename into place",
            Step::Changed => "changed during the copy (not the file listed)",
        }
    }
}

pub type StepResult<T> = Result<T, (Step, Errno)>;

/// Set permission bits and mtime on an open file or directory.
pub fn set_meta(fd: BorrowedFd<'_>, m: &Meta) -> Result<(), Errno> {
    rustix::fs::fchmod(fd, Mode::from_raw_mode(m.perm))?;
    rustix::fs::futimens(fd, &finish::mtime(m))
}

/// A directory's attributes once its contents are in place: owner, permission bits,
/// xattrs and ACLs (a default ACL set last cannot be inherited by what was made below
/// it during the copy), mtime, then inode flags.
pub fn finish_dir(src: BorrowedFd<'_>, dst: BorrowedFd<'_>, m: &Meta, a: &Attr, path: PathFn) -> Result<(), Errno> {
    finish::apply(Loc::Fd(src), Loc::Fd(dst), m, a, true, path)?;
    finish::flags(src, dst, m, a, path)
}

/// Copy file `name` of `src_dir` (described by `m`) to `dst_name` in `dst_dir`, which
/// must not exist (O_EXCL; never follows a symlink there). Returns the bytes copied.
/// On failure the partial destination is removed.
///
/// The file is created with its final permission bits (the engine runs with umask 0),
/// so only the mtime is set afterwards; setuid/setgid bits, which a write may clear,
/// are set again with fchmod.
#[allow(clippy::too_many_arguments)]
pub fn copy_file(
    src_dir: BorrowedFd<'_>,
    name: &CStr,
    m: &Meta,
    dst_dir: BorrowedFd<'_>,
    dst_name: &CStr,
    reflink: bool,
    buf: &mut [u8],
    a: &Attr,
    path: PathFn,
) -> StepResult<u64> {
    if m.size == 0 && m.perm & 0o7000 == 0 {
        return copy_empty(src_dir, name, m, dst_dir, dst_name, a, path);
    }
    let src = open_source(src_dir, name).map_err(|e| (Step::OpenSource, e))?;
    check_same(&src, m.ino)?;
    let dst = openat(
        dst_dir,
        dst_name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(m.perm & 0o777),
    )
    .map_err(|e| (Step::Create, e))?;
    let meta = |n: u64| {
        finish::apply(Loc::Fd(src.as_fd()), Loc::Fd(dst.as_fd()), m, a, m.perm & 0o7000 != 0, path)
            .map(|_| n)
            .map_err(|e| (Step::Metadata, e))
    };
    let r = fill(&src, &dst, m, reflink, buf, a, path).and_then(meta);
    if r.is_err() {
        let _ = unlinkat(dst_dir, dst_name, AtFlags::empty());
    }
    r
}

/// An empty file (as listed: a file that grows meanwhile is copied as it was, as for any
/// size) needs neither the source opened nor a descriptor of the copy: mknodat with the
/// final permission bits (umask is 0 in the engine), then its attributes by name. EEXIST
/// on an existing name and no symlink followed, as with O_CREAT | O_EXCL.
/// (setuid/setgid files take the general path: creation may strip those bits.)
fn copy_empty(
    src_dir: BorrowedFd<'_>,
    name: &CStr,
    m: &Meta,
    dst_dir: BorrowedFd<'_>,
    dst_name: &CStr,
    a: &Attr,
    path: PathFn,
) -> StepResult<u64> {
    rustix::fs::mknodat(dst_dir, dst_name, rustix::fs::FileType::RegularFile, Mode::from_raw_mode(m.perm & 0o777), 0)
        .map_err(|e| (Step::Create, e))?;
    if let Err(e) = finish::apply(Loc::At(src_dir, name), Loc::At(dst_dir, dst_name), m, a, false, path) {
        let _ = unlinkat(dst_dir, dst_name, AtFlags::empty());
        return Err((Step::Metadata, e));
    }
    Ok(0)
}

/// A FIFO, socket or device node: made with mknodat (devices need root), then its
/// attributes by name. A destination that refuses is a loss ([`Loss::Specials`]):
/// Ok(false), nothing made.
#[allow(clippy::too_many_arguments)]
pub fn copy_special(
    src_dir: BorrowedFd<'_>,
    name: &CStr,
    m: &Meta,
    dst_dir: BorrowedFd<'_>,
    dst_name: &CStr,
    a: &Attr,
    path: PathFn,
) -> StepResult<bool> {
    if a.losses.unsupported(Loss::Specials) {
        a.losses.add(Loss::Specials, path);
        return Ok(false);
    }
    let ft = rustix::fs::FileType::from_raw_mode(m.ifmt);
    match rustix::fs::mknodat(dst_dir, dst_name, ft, Mode::from_raw_mode(m.perm), m.rdev) {
        Ok(()) => {}
        Err(e) if super::attrs::is_unsupported(e) => {
            // EPERM: a device node without root (others may still be made).
            if e != Errno::PERM {
                a.losses.mark_unsupported(Loss::Specials);
            }
            a.losses.add(Loss::Specials, path);
            return Ok(false);
        }
        Err(e) => {
            // Some FUSE file systems make the entry, then fail.
            if e != Errno::EXIST {
                let _ = unlinkat(dst_dir, dst_name, AtFlags::empty());
            }
            return Err((Step::Create, e));
        }
    }
    if let Err(e) = finish::apply(Loc::At(src_dir, name), Loc::At(dst_dir, dst_name), m, a, m.perm & 0o7000 != 0, path)
    {
        let _ = unlinkat(dst_dir, dst_name, AtFlags::empty());
        return Err((Step::Metadata, e));
    }
    Ok(true)
}

/// Open a source file for reading without updating its access time where allowed (the
/// owner or root): with relatime, the first read after a write would otherwise dirty
/// every source inode. Falls back to a plain open (EPERM: someone else's file).
/// O_NONBLOCK: a FIFO swapped in for the file listed must not block the open (a writer
/// would never come); what was opened is checked by [`check_same`] before any read.
fn open_source(dir: BorrowedFd<'_>, name: &CStr) -> Result<OwnedFd, Errno> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    match openat(dir, name, flags | OFlags::NOATIME, Mode::empty()) {
        Err(Errno::PERM) => openat(dir, name, flags, Mode::empty()),
        r => r,
    }
}

/// Is the open file a regular file with the inode listed (`ino` 0: any inode)? Else
/// [`Step::Changed`]: an entry swapped between the listing and the open is not read.
pub fn check_same(fd: &OwnedFd, ino: u64) -> StepResult<()> {
    let st = rustix::fs::fstat(fd).map_err(|e| (Step::OpenSource, e))?;
    let regular = rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile;
    if !regular || (ino != 0 && st.st_ino != ino) {
        return Err((Step::Changed, Errno::STALE));
    }
    Ok(())
}

/// Move the bytes: reflink, then copy_file_range (large files), then read/write.
fn fill(
    src: &OwnedFd,
    dst: &OwnedFd,
    m: &Meta,
    reflink: bool,
    buf: &mut [u8],
    a: &Attr,
    path: PathFn,
) -> StepResult<u64> {
    if reflink && m.size > 0 && rustix::fs::ioctl_ficlone(dst, src).is_ok() {
        return Ok(m.size);
    }
    // Fewer blocks than the size needs (statx, no call): holes to keep.
    if a.keep.sparse && m.size > 0 && m.blocks.saturating_mul(512) < m.size {
        return fill_sparse(src, dst, m, buf, a, path);
    }
    let mut done = 0u64;
    if m.size == 0 {
        return Ok(0);
    }
    if m.size > SMALL {
        loop {
            if crate::signals::pending() != 0 {
                return Err((Step::Write, Errno::INTR));
            }
            // 64 MiB a call: a signal is seen between calls (well within a second).
            match rustix::fs::copy_file_range(src, None, dst, None, 64 << 20) {
                Ok(0) => return Ok(done),
                Ok(n) => {
                    done += n as u64;
                    // The size listed is copied, as in the read/write loop below: no
                    // call just to learn of the end.
                    if done == m.size {
                        return Ok(done);
                    }
                }
                // Not supported here (old kernel, cross-device on some, special files):
                // go on with read/write from where it stopped.
                Err(Errno::XDEV | Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) if done == 0 => break,
                Err(e) => return Err((Step::Write, e)),
            }
        }
    }
    loop {
        let n = match rustix::io::read(src, &mut *buf) {
            Ok(0) => return Ok(done),
            Ok(n) => n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err((Step::Read, e)),
        };
        crate::fs::write_all(dst.as_fd(), &buf[..n]).map_err(|e| (Step::Write, e))?;
        done += n as u64;
        if done % (64 << 20) < n as u64 && crate::signals::pending() != 0 {
            return Err((Step::Write, Errno::INTR));
        }
        // The size statx saw is copied: no read just to learn of the end (a file that
        // grows meanwhile is copied as it was when listed, as a snapshot would be).
        if done == m.size {
            return Ok(done);
        }
    }
}

/// Copy a sparse file: only its data ranges (SEEK_DATA / SEEK_HOLE), then the size set
/// with ftruncate, so holes stay holes. A destination that allocates them anyway (no
/// sparse files: exFAT, FAT) is a loss ([`Loss::Sparse`]), seen by one fstat.
fn fill_sparse(src: &OwnedFd, dst: &OwnedFd, m: &Meta, buf: &mut [u8], a: &Attr, path: PathFn) -> StepResult<u64> {
    use rustix::fs::{SeekFrom, seek};
    let mut off = 0u64;
    let mut done = 0u64;
    while off < m.size {
        if crate::signals::pending() != 0 {
            return Err((Step::Write, Errno::INTR));
        }
        let data = match seek(src, SeekFrom::Data(off)) {
            Ok(d) => d,
            Err(Errno::NXIO) => break,
            Err(e) => return Err((Step::Read, e)),
        };
        let hole = seek(src, SeekFrom::Hole(data)).map_err(|e| (Step::Read, e))?.min(m.size);
        let mut at = data;
        while at < hole {
            let want = ((hole - at) as usize).min(buf.len());
            let n = rustix::io::pread(src, &mut buf[..want], at).map_err(|e| (Step::Read, e))?;
            if n == 0 {
                break;
            }
            let mut w = 0;
            while w < n {
                w += rustix::io::pwrite(dst, &buf[w..n], at + w as u64).map_err(|e| (Step::Write, e))?;
            }
            at += n as u64;
            done += n as u64;
        }
        off = hole;
    }
    rustix::fs::ftruncate(dst, m.size).map_err(|e| (Step::Write, e))?;
    if let Ok(st) = rustix::fs::fstat(dst)
        && (st.st_blocks as u64).saturating_mul(512) >= m.size
        && m.blocks.saturating_mul(512) < m.size
    {
        a.losses.add(Loss::Sparse, path);
    }
    Ok(done)
}

/// Make symlink `dst_name` in `dst_dir` with `target`, then its owner, xattrs and the
/// source's mtime. A destination without symlinks (exFAT, FAT) is a loss
/// ([`Loss::Symlinks`]): Ok(false), nothing made.
#[allow(clippy::too_many_arguments)]
pub fn copy_symlink(
    src_dir: BorrowedFd<'_>,
    name: &CStr,
    target: &CStr,
    m: &Meta,
    dst_dir: BorrowedFd<'_>,
    dst_name: &CStr,
    a: &Attr,
    path: PathFn,
) -> StepResult<bool> {
    if a.losses.unsupported(Loss::Symlinks) {
        a.losses.add(Loss::Symlinks, path);
        return Ok(false);
    }
    match symlinkat(target, dst_dir, dst_name) {
        Ok(()) => {}
        Err(e) if super::attrs::is_unsupported(e) => {
            a.losses.mark_unsupported(Loss::Symlinks);
            a.losses.add(Loss::Symlinks, path);
            return Ok(false);
        }
        Err(e) => return Err((Step::Create, e)),
    }
    finish::apply(Loc::At(src_dir, name), Loc::At(dst_dir, dst_name), m, a, false, path)
        .map(|_| true)
        .map_err(|e| (Step::Metadata, e))
}

pub fn read_link(dir: BorrowedFd<'_>, name: &CStr) -> Result<CString, Errno> {
    readlinkat(dir, name, Vec::new())
}

/// Are the contents of `a/name_a` and `b/name_b` equal? Compared byte for byte (both
/// trees are local, so reading both is what a hash would cost, without the hashing).
pub fn same_content(
    a: BorrowedFd<'_>,
    name_a: &CStr,
    b: BorrowedFd<'_>,
    name_b: &CStr,
    buf: &mut [u8],
) -> Result<bool, Errno> {
    // O_NONBLOCK and a type check: a FIFO swapped in on either side must not block.
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let fa = openat(a, name_a, flags, Mode::empty())?;
    let fb = openat(b, name_b, flags, Mode::empty())?;
    for f in [&fa, &fb] {
        check_same(f, 0).map_err(|(_, e)| e)?;
    }
    let half = buf.len() / 2;
    let (ba, bb) = buf.split_at_mut(half);
    loop {
        if crate::signals::pending() != 0 {
            return Err(Errno::INTR);
        }
        let na = read_full(&fa, ba)?;
        let nb = read_full(&fb, &mut bb[..half])?;
        if na != nb || ba[..na] != bb[..nb] {
            return Ok(false);
        }
        if na == 0 {
            return Ok(true);
        }
    }
}

/// Read until `buf` is full or the file ends.
fn read_full(fd: &OwnedFd, buf: &mut [u8]) -> Result<usize, Errno> {
    let mut got = 0;
    while got < buf.len() {
        match rustix::io::read(fd, &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::walk::{meta_at, open_root};

    #[test]
    fn copies_small_and_large_files_with_mode_and_mtime() {
        let t = tempfile::tempdir().unwrap();
        let (s, d) = (t.path().join("s"), t.path().join("d"));
        std::fs::create_dir_all(&s).unwrap();
        std::fs::create_dir_all(&d).unwrap();
        let big: Vec<u8> = (0..(SMALL as usize * 3 + 7)).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(s.join("big"), &big).unwrap();
        std::fs::write(s.join("small"), b"hello").unwrap();
        let (sf, df) = (open_root(&s).unwrap(), open_root(&d).unwrap());
        let mut buf = vec![0u8; 64 * 1024];
        let (keep, caps, losses) = (super::super::attrs::Keep::default(), Default::default(), Default::default());
        let a = Attr { keep: &keep, caps: &caps, losses: &losses, dst_may_have: false };
        let p = || String::new();
        for n in [c"big", c"small"] {
            let mut m = meta_at(sf.as_fd(), n).unwrap();
            m.perm = 0o640;
            m.mtime_s = 1_000_000_000;
            m.mtime_ns = 123;
            let got = copy_file(sf.as_fd(), n, &m, df.as_fd(), n, false, &mut buf, &a, &p).unwrap();
            assert_eq!(got, m.size);
            let dm = meta_at(df.as_fd(), n).unwrap();
            assert_eq!((dm.perm, dm.mtime_s, dm.mtime_ns, dm.size), (0o640, 1_000_000_000, 123, m.size));
            assert!(same_content(sf.as_fd(), n, df.as_fd(), n, &mut buf).unwrap());
        }
        assert_eq!(std::fs::read(d.join("big")).unwrap(), big);
        // O_EXCL: an existing destination is never overwritten by copy_file.
        let m = meta_at(sf.as_fd(), c"small").unwrap();
        assert_eq!(
            copy_file(sf.as_fd(), c"small", &m, df.as_fd(), c"small", false, &mut buf, &a, &p).unwrap_err().1,
            Errno::EXIST
        );
        std::fs::write(d.join("small"), b"hellO").unwrap();
        assert!(!same_content(sf.as_fd(), c"small", df.as_fd(), c"small", &mut buf).unwrap());
    }

    #[test]
    fn tmp_names_are_short_and_recognised() {
        let a = tmp_name();
        assert!(is_tmp_name(&a) && a.to_bytes().len() < 64);
        assert_ne!(a, tmp_name());
        assert!(!is_tmp_name(c"file"));
    }
}
