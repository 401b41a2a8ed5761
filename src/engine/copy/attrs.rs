//! What a copy keeps beyond bytes, modes and mtimes — owner and group, extended
//! attributes and POSIX ACLs (`system.posix_acl_*` are xattrs), inode flags — and what
//! the destination could not hold ([`Losses`], counted per kind with the first paths:
//! `losses.rs`).
//!
//! Every extra call is decided from the entry's statx fields first: flags only when
//! statx reports one (immutable, append, nodump, compressed), owner only when it differs
//! from what a new entry gets anyway, xattrs by one listxattr (the only signal there is).
//! Once the destination refuses a kind as unsupported, that kind is not tried again:
//! every later entry that needs it is counted as a loss without a system call.

pub use super::losses::{LOSS_KINDS, LOSS_PATHS, Loss, LossRow, Losses, merge_rows};
use crate::fs::walk::Meta;
use rustix::fd::{AsFd, AsRawFd, BorrowedFd};
use rustix::io::Errno;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};

/// What is kept (all of it by default, as `cp -a`); each `--no-…` flag turns one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep {
    pub owner: bool,
    pub xattrs: bool,
    pub acls: bool,
    pub hard_links: bool,
    pub sparse: bool,
    pub specials: bool,
    pub flags: bool,
    /// Losses are reported but do not make the run fail.
    pub lossy: bool,
    /// xattr namespaces not compared: those the destination drops ([`Caps::compared`]).
    pub skip_ns: u8,
}

/// `trusted.*` and `security.*` xattrs, as bits of `skip_ns` and `dropped_ns`.
pub const NS_TRUSTED: u8 = 1;
pub const NS_SECURITY: u8 = 2;

/// The namespace bit of an xattr name (0: user.* and system.*, never skipped).
pub(crate) fn ns_bit(name: &[u8]) -> u8 {
    if name.starts_with(b"trusted.") {
        NS_TRUSTED
    } else if name.starts_with(b"security.") {
        NS_SECURITY
    } else {
        0
    }
}

impl Default for Keep {
    fn default() -> Keep {
        Keep {
            owner: true,
            xattrs: true,
            acls: true,
            hard_links: true,
            sparse: true,
            specials: true,
            flags: true,
            lossy: false,
            skip_ns: 0,
        }
    }
}

impl Keep {
    /// Nothing beyond bytes, modes, mtimes and symlinks (the engine before issue 28).
    pub fn minimal() -> Keep {
        Keep {
            owner: false,
            xattrs: false,
            acls: false,
            hard_links: false,
            sparse: false,
            specials: false,
            flags: false,
            lossy: false,
            skip_ns: 0,
        }
    }
    pub fn any_xattr(&self) -> bool {
        self.xattrs || self.acls
    }
}

/// An errno that says "this destination cannot hold that" rather than a failure.
pub fn is_unsupported(e: Errno) -> bool {
    matches!(e, Errno::OPNOTSUPP | Errno::NOSYS | Errno::NOTTY | Errno::PERM | Errno::INVAL)
}

/// Can `src`'s xattrs be listed? Asked once of SRC's root: a file system that answers
/// listxattr with EIO or "unsupported" there holds none a copy could read (an rclone
/// mount answers EIO for every file: a copy from an SMB share failed every file with it),
/// so its files are not asked one by one. The error is said in the summary.
pub fn lists_xattrs(src: BorrowedFd<'_>) -> Result<(), Errno> {
    match list(Loc::Fd(src)) {
        Err(e) if is_unsupported(e) || e == Errno::IO => Err(e),
        _ => Ok(()),
    }
}

/// What the destination holds, probed once on a scratch file in DST's root (modes,
/// owners and timestamps are dropped silently by some file systems: exFAT, FAT, NTFS
/// through FUSE; the rest fail loudly and are learnt from the first refusal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// chmod is kept.
    pub modes: bool,
    /// chown is kept (root only: a normal user cannot give files away anyway).
    pub owner: bool,
    /// Timestamp granularity in nanoseconds: mtimes closer than this compare equal
    /// (as rsync's --modify-window), and a source mtime finer than it is a loss.
    pub window_ns: u64,
    /// What the file system shows for every entry when it keeps no owner.
    pub fixed_uid: u32,
    pub fixed_gid: u32,
    /// Permission bits of every file and directory when it keeps no modes.
    pub fixed_file_perm: u32,
    pub fixed_dir_perm: u32,
    /// Hard links can be made.
    pub hard_links: bool,
    /// An mtime set with the access time UTIME_OMIT is kept (exfat-fuse ignores it).
    pub omit_ok: bool,
    /// user.* xattrs, POSIX ACLs, FIFOs, symlinks can be made (an rclone mount of an SMB
    /// share answers symlink with EIO: a loss, learnt once here rather than per link).
    pub xattrs: bool,
    pub acls: bool,
    pub specials: bool,
    pub symlinks: bool,
    /// xattr namespaces accepted and then not listed (ntfs-3g: trusted.*, security.*).
    pub dropped_ns: u8,
    /// Names that are not UTF-8 can be made (exFAT, NTFS: no), and names with a control
    /// character (exFAT, FAT: no; NTFS through ntfs-3g: yes).
    pub names_bytes: bool,
    pub names_ctrl: bool,
    /// Names that differ only in case are one entry (exFAT, FAT): of SRC's names that
    /// fold to one, only one can be made ([`super::case::lost_to_case`]).
    pub folds_case: bool,
    /// SRC's xattrs can be listed ([`lists_xattrs`], asked of SRC's root; each rank asks
    /// its own, so not on the MPI wire). When not, no file's are asked for.
    pub src_xattrs: bool,
}

impl Caps {
    /// Can DST hold an entry named `name`? (What the probe found; a character only some
    /// file systems forbid is learnt from the refusal: [`super::losses::unholdable_name`].)
    pub fn holds_name(&self, name: &[u8]) -> bool {
        (self.names_bytes || std::str::from_utf8(name).is_ok()) && (self.names_ctrl || !name.iter().any(|b| *b < 0x20))
    }
    /// What sync compares: a kind the destination cannot hold is not compared (it would
    /// differ every time, and every sync would copy again).
    pub fn compared(&self, keep: &Keep) -> Keep {
        Keep {
            xattrs: keep.xattrs && self.xattrs && self.src_xattrs,
            acls: keep.acls && self.acls && self.src_xattrs,
            skip_ns: keep.skip_ns | self.dropped_ns,
            ..*keep
        }
    }
    /// Mark what the probe found missing as unsupported: no call is tried for it.
    pub fn mark(&self, losses: &Losses) {
        for (ok, kind) in [
            (self.xattrs, Loss::Xattrs),
            (self.acls, Loss::Acls),
            (self.specials, Loss::Specials),
            (self.symlinks, Loss::Symlinks),
            (self.hard_links, Loss::HardLinks),
        ] {
            if !ok {
                losses.mark_unsupported(kind);
            }
        }
        losses.dropped_ns.store(self.dropped_ns, Ordering::Relaxed);
    }
}

impl Default for Caps {
    fn default() -> Caps {
        Caps {
            modes: true,
            owner: true,
            window_ns: 1,
            fixed_uid: 0,
            fixed_gid: 0,
            fixed_file_perm: 0,
            fixed_dir_perm: 0,
            omit_ok: true,
            hard_links: true,
            xattrs: true,
            acls: true,
            specials: true,
            dropped_ns: 0,
            names_bytes: true,
            names_ctrl: true,
            folds_case: false,
            src_xattrs: true,
            symlinks: true,
        }
    }
}

/// This process's effective user and group ids, read once: a copy asks for every
/// entry, and a system call each time cost a flat copy of empty files 3 calls a file.
pub fn effective_ids() -> (u32, u32) {
    static IDS: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();
    *IDS.get_or_init(|| (rustix::process::geteuid().as_raw(), rustix::process::getegid().as_raw()))
}

pub fn is_root() -> bool {
    effective_ids().0 == 0
}

/// Probe DST's root: a scratch file (a sync's temporary name, so a killed run's is
/// removed by the next sync) and directory, chmod, chown (root), a timestamp with odd
/// seconds and nanoseconds; what comes back tells what the file system keeps.
/// `dry`: nothing may be written — the file system's type decides instead.
pub fn probe(dst: BorrowedFd<'_>, dry: bool) -> Caps {
    use rustix::fs::{Timespec, Timestamps, fstat};
    if dry {
        let mut caps = caps_of_type(dst);
        caps.folds_case = super::case::folds_listed(dst).unwrap_or(caps.folds_case);
        return caps;
    }
    // The probe's entries move DST root's mtime: put back (an unchanged sync changes nothing).
    let before = fstat(dst).ok();
    let caps = probe_entries(dst);
    if let Some(st) = before {
        let ts = |sec, nsec| Timespec { tv_sec: sec, tv_nsec: nsec as _ };
        let times = Timestamps {
            last_access: ts(st.st_atime, st.st_atime_nsec),
            last_modification: ts(st.st_mtime, st.st_mtime_nsec),
        };
        let _ = rustix::fs::futimens(dst, &times);
    }
    caps
}

/// [`probe`]'s scratch entries in DST's root, and what they tell.
fn probe_entries(dst: BorrowedFd<'_>) -> Caps {
    use rustix::fs::{AtFlags, Mode, OFlags, Timespec, Timestamps, fstat, openat, unlinkat};
    let name = super::file::tmp_name();
    let Ok(fd) = openat(
        dst,
        name.as_c_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    ) else {
        return caps_of_type(dst);
    };
    // The scratch file's name in capitals: the same entry on a case-insensitive DST.
    let mut caps = Caps { folds_case: super::case::same_entry_by_other_case(dst, name.as_c_str()), ..Caps::default() };
    let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o604));
    if let Ok(st) = fstat(&fd) {
        caps.modes = st.st_mode & 0o7777 == 0o604;
        caps.fixed_file_perm = st.st_mode & 0o7777;
        caps.fixed_uid = st.st_uid;
        caps.fixed_gid = st.st_gid;
    }
    if is_root() {
        let (u, g) = (caps.fixed_uid ^ 1, caps.fixed_gid ^ 1);
        let _ = rustix::fs::fchown(&fd, Some(rustix::fs::Uid::from_raw(u)), Some(rustix::fs::Gid::from_raw(g)));
        caps.owner = fstat(&fd).is_ok_and(|st| st.st_uid == u && st.st_gid == g);
    }
    let want = Timespec { tv_sec: 1_000_000_001, tv_nsec: 123_456_789 };
    let omit = Timespec { tv_sec: 0, tv_nsec: rustix::fs::UTIME_OMIT };
    let _ = rustix::fs::futimens(&fd, &Timestamps { last_access: omit, last_modification: want });
    caps.omit_ok = fstat(&fd).is_ok_and(|st| (st.st_mtime - want.tv_sec).abs() <= 2);
    if !caps.omit_ok {
        let _ = rustix::fs::futimens(&fd, &Timestamps { last_access: want, last_modification: want });
    }
    if let Ok(st) = fstat(&fd) {
        let got = st.st_mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128;
        let diff = (got - (want.tv_sec as i128 * 1_000_000_000 + want.tv_nsec as i128)).unsigned_abs();
        caps.window_ns = [1u64, 100, 1_000, 1_000_000, 10_000_000, 1_000_000_000, 2_000_000_000]
            .into_iter()
            .find(|&g| (diff as u64) < g)
            .unwrap_or(2_000_000_000);
    }
    // xattrs and a minimal access ACL (version 2; user::rw-, group::r--, other::r--).
    caps.xattrs = set_raw(Loc::Fd(fd.as_fd()), c"user.manyfiles-probe", b"1").is_ok()
        && get(Loc::Fd(fd.as_fd()), c"user.manyfiles-probe").is_ok_and(|v| v == b"1");
    // Other namespaces (root only): some file systems say yes and keep nothing.
    if caps.xattrs && is_root() {
        for (name, bit) in [(c"trusted.manyfiles-probe", NS_TRUSTED), (c"security.manyfiles-probe", NS_SECURITY)] {
            // Listed too: ntfs-3g keeps these readable by name but leaves them out of
            // listxattr, so no copy or comparison from there would ever find them.
            let ok = set_raw(Loc::Fd(fd.as_fd()), name, b"1").is_ok()
                && get(Loc::Fd(fd.as_fd()), name).is_ok_and(|v| v == b"1")
                && list(Loc::Fd(fd.as_fd())).is_ok_and(|l| l.split(|&b| b == 0).any(|n| n == name.to_bytes()));
            if !ok {
                caps.dropped_ns |= bit;
            }
        }
    }
    // A POSIX ACL with a named user (a minimal one is only mode bits, never stored as
    // an xattr), read back: ntfs-3g without `acl` accepts it and stores nothing.
    let mut acl = 2u32.to_le_bytes().to_vec();
    for (tag, perm, id) in
        [(0x01u16, 6u16, u32::MAX), (0x02, 4, 65534), (0x04, 4, u32::MAX), (0x10, 4, u32::MAX), (0x20, 4, u32::MAX)]
    {
        acl.extend_from_slice(&tag.to_le_bytes());
        acl.extend_from_slice(&perm.to_le_bytes());
        acl.extend_from_slice(&id.to_le_bytes());
    }
    let access = c"system.posix_acl_access";
    caps.acls =
        set_raw(Loc::Fd(fd.as_fd()), access, &acl).is_ok() && get(Loc::Fd(fd.as_fd()), access).is_ok_and(|v| v == acl);
    drop(fd);
    let link = super::file::tmp_name();
    caps.hard_links = rustix::fs::linkat(dst, name.as_c_str(), dst, link.as_c_str(), AtFlags::empty()).is_ok();
    let _ = unlinkat(dst, link.as_c_str(), AtFlags::empty());
    let _ = unlinkat(dst, name.as_c_str(), AtFlags::empty());
    // A FIFO (some FUSE file systems make the entry and then fail: removed either way).
    caps.specials =
        rustix::fs::mknodat(dst, name.as_c_str(), rustix::fs::FileType::Fifo, Mode::from_raw_mode(0o600), 0).is_ok();
    let _ = unlinkat(dst, name.as_c_str(), AtFlags::empty());
    caps.symlinks = rustix::fs::symlinkat(c"manyfiles-probe", dst, name.as_c_str()).is_ok();
    let _ = unlinkat(dst, name.as_c_str(), AtFlags::empty());
    // Names: one not UTF-8, one with a newline (an empty file each, removed).
    for (tail, held) in [(&b"\xff"[..], &mut caps.names_bytes), (b"\n", &mut caps.names_ctrl)] {
        let Ok(odd) = CString::new([name.to_bytes(), tail].concat()) else { continue };
        let made =
            rustix::fs::mknodat(dst, odd.as_c_str(), rustix::fs::FileType::RegularFile, Mode::from_raw_mode(0o600), 0);
        match made {
            Ok(()) => drop(unlinkat(dst, odd.as_c_str(), AtFlags::empty())),
            Err(e) => *held = !super::losses::unholdable_name(odd.to_bytes(), e),
        }
    }
    if !caps.modes {
        let dname = super::file::tmp_name();
        if rustix::fs::mkdirat(dst, dname.as_c_str(), Mode::from_raw_mode(0o700)).is_ok() {
            if let Ok(st) = rustix::fs::statat(dst, dname.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
                caps.fixed_dir_perm = st.st_mode & 0o7777;
            }
            let _ = unlinkat(dst, dname.as_c_str(), AtFlags::REMOVEDIR);
        }
    }
    caps
}

/// Without a probe (a dry run): by the file system's type. FAT and exFAT (kernel or
/// FUSE) keep neither modes nor owners, and mtimes in 2 s (FAT) or 10 ms (exFAT) steps;
/// FUSE in general is taken as coarse (1 s … 2 s): a dry run never writes to find out.
fn caps_of_type(dst: BorrowedFd<'_>) -> Caps {
    let Ok(st) = rustix::fs::fstatfs(dst) else { return Caps::default() };
    let coarse = |window_ns| Caps {
        modes: false,
        owner: false,
        window_ns,
        xattrs: false,
        acls: false,
        specials: false,
        hard_links: false,
        names_bytes: false,
        names_ctrl: false,
        folds_case: true,
        ..Caps::default()
    };
    match st.f_type as u64 {
        0x4d44 => coarse(2_000_000_000),      // msdos / vfat
        0x2011_BAB0 => coarse(10_000_000),    // exfat (kernel)
        0x6573_5546 => coarse(2_000_000_000), // fuse / fuseblk (exfat-fuse, ntfs-3g): unknown
        _ => Caps::default(),
    }
}

/// Where an xattr call goes: an open file, or a name below a directory (not followed).
#[derive(Clone, Copy)]
pub enum Loc<'a> {
    Fd(BorrowedFd<'a>),
    At(BorrowedFd<'a>, &'a CStr),
}

// The *xattrat system calls (Linux 6.13): fd-relative, no path string to build. One
// number on every architecture (after the unified table).
const SYS_SETXATTRAT: libc::c_long = 463;
const SYS_GETXATTRAT: libc::c_long = 464;
const SYS_LISTXATTRAT: libc::c_long = 465;
const SYS_REMOVEXATTRAT: libc::c_long = 466;

static NO_XATTRAT: AtomicBool = AtomicBool::new(false);

#[repr(C)]
struct XattrArgs {
    value: u64,
    size: u32,
    flags: u32,
}

fn ret(r: libc::c_long) -> Result<usize, Errno> {
    if r < 0 {
        Err(Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(0)))
    } else {
        Ok(r as usize)
    }
}

/// /proc/self/fd/DIR/NAME: the path for kernels without *xattrat.
fn proc_path(dir: BorrowedFd<'_>, name: &CStr) -> CString {
    let mut p = format!("/proc/self/fd/{}/", dir.as_raw_fd()).into_bytes();
    p.extend_from_slice(name.to_bytes());
    CString::new(p).expect("no NUL in a name")
}

fn list_raw(loc: Loc<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    let (p, n) = (buf.as_mut_ptr() as *mut libc::c_char, buf.len());
    // SAFETY: buf is valid for n bytes; names are NUL-terminated.
    ret(unsafe {
        match loc {
            Loc::Fd(fd) => libc::flistxattr(fd.as_raw_fd(), p, n) as libc::c_long,
            Loc::At(d, name) if !NO_XATTRAT.load(Ordering::Relaxed) => {
                let r = libc::syscall(SYS_LISTXATTRAT, d.as_raw_fd(), name.as_ptr(), libc::AT_SYMLINK_NOFOLLOW, p, n);
                if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
                    NO_XATTRAT.store(true, Ordering::Relaxed);
                    return list_raw(loc, buf);
                }
                r
            }
            Loc::At(d, name) => libc::llistxattr(proc_path(d, name).as_ptr(), p, n) as libc::c_long,
        }
    })
}

fn get_raw(loc: Loc<'_>, attr: &CStr, buf: &mut [u8]) -> Result<usize, Errno> {
    let (p, n) = (buf.as_mut_ptr(), buf.len());
    // SAFETY: as above.
    ret(unsafe {
        match loc {
            Loc::Fd(fd) => libc::fgetxattr(fd.as_raw_fd(), attr.as_ptr(), p as *mut libc::c_void, n) as libc::c_long,
            Loc::At(d, name) if !NO_XATTRAT.load(Ordering::Relaxed) => {
                let mut a = XattrArgs { value: p as u64, size: n as u32, flags: 0 };
                libc::syscall(
                    SYS_GETXATTRAT,
                    d.as_raw_fd(),
                    name.as_ptr(),
                    libc::AT_SYMLINK_NOFOLLOW,
                    attr.as_ptr(),
                    &mut a as *mut XattrArgs,
                    std::mem::size_of::<XattrArgs>(),
                )
            }
            Loc::At(d, name) => {
                libc::lgetxattr(proc_path(d, name).as_ptr(), attr.as_ptr(), p as *mut libc::c_void, n) as libc::c_long
            }
        }
    })
}

fn set_raw(loc: Loc<'_>, attr: &CStr, value: &[u8]) -> Result<(), Errno> {
    let (p, n) = (value.as_ptr(), value.len());
    // SAFETY: as above.
    ret(unsafe {
        match loc {
            Loc::Fd(fd) => {
                libc::fsetxattr(fd.as_raw_fd(), attr.as_ptr(), p as *const libc::c_void, n, 0) as libc::c_long
            }
            Loc::At(d, name) if !NO_XATTRAT.load(Ordering::Relaxed) => {
                let a = XattrArgs { value: p as u64, size: n as u32, flags: 0 };
                libc::syscall(
                    SYS_SETXATTRAT,
                    d.as_raw_fd(),
                    name.as_ptr(),
                    libc::AT_SYMLINK_NOFOLLOW,
                    attr.as_ptr(),
                    &a as *const XattrArgs,
                    std::mem::size_of::<XattrArgs>(),
                )
            }
            Loc::At(d, name) => {
                libc::lsetxattr(proc_path(d, name).as_ptr(), attr.as_ptr(), p as *const libc::c_void, n, 0)
                    as libc::c_long
            }
        }
    })
    .map(|_| ())
}

fn remove_raw(loc: Loc<'_>, attr: &CStr) -> Result<(), Errno> {
    // SAFETY: as above.
    ret(unsafe {
        match loc {
            Loc::Fd(fd) => libc::fremovexattr(fd.as_raw_fd(), attr.as_ptr()) as libc::c_long,
            Loc::At(d, name) if !NO_XATTRAT.load(Ordering::Relaxed) => {
                libc::syscall(SYS_REMOVEXATTRAT, d.as_raw_fd(), name.as_ptr(), libc::AT_SYMLINK_NOFOLLOW, attr.as_ptr())
            }
            Loc::At(d, name) => libc::lremovexattr(proc_path(d, name).as_ptr(), attr.as_ptr()) as libc::c_long,
        }
    })
    .map(|_| ())
}

/// The names of `loc`'s xattrs (NUL-separated), read into a small buffer first: most
/// entries have none, and then this is one call with no allocation beyond the Vec.
pub fn list(loc: Loc<'_>) -> Result<Vec<u8>, Errno> {
    let mut small = [0u8; 1024];
    match list_raw(loc, &mut small) {
        Ok(n) => Ok(small[..n].to_vec()),
        Err(Errno::RANGE) => loop {
            let n = list_raw(loc, &mut [])?;
            let mut v = vec![0u8; n];
            match list_raw(loc, &mut v) {
                Ok(n) => {
                    v.truncate(n);
                    return Ok(v);
                }
                Err(Errno::RANGE) => continue,
                Err(e) => return Err(e),
            }
        },
        Err(e) => Err(e),
    }
}

pub fn get(loc: Loc<'_>, attr: &CStr) -> Result<Vec<u8>, Errno> {
    let mut small = [0u8; 4096];
    match get_raw(loc, attr, &mut small) {
        Ok(n) => Ok(small[..n].to_vec()),
        Err(Errno::RANGE) => loop {
            let n = get_raw(loc, attr, &mut [])?;
            let mut v = vec![0u8; n];
            match get_raw(loc, attr, &mut v) {
                Ok(n) => {
                    v.truncate(n);
                    return Ok(v);
                }
                Err(Errno::RANGE) => continue,
                Err(e) => return Err(e),
            }
        },
        Err(e) => Err(e),
    }
}

fn is_acl(name: &[u8]) -> bool {
    name.starts_with(b"system.posix_acl_")
}

/// The kept names of a NUL-separated list, sorted.
fn kept<'a>(list: &'a [u8], keep: &Keep) -> Vec<&'a [u8]> {
    let mut v: Vec<&[u8]> = list
        .split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .filter(|n| if is_acl(n) { keep.acls } else { keep.xattrs && ns_bit(n) & keep.skip_ns == 0 })
        .collect();
    v.sort_unstable();
    v
}

/// Do `a` and `b` hold the same kept xattrs (names and values)?
pub fn same(a: Loc<'_>, b: Loc<'_>, keep: &Keep) -> Result<bool, Errno> {
    if !keep.any_xattr() {
        return Ok(true);
    }
    let none = |e: Errno| if is_unsupported(e) { Ok(Vec::new()) } else { Err(e) };
    let (la, lb) = (list(a).or_else(none)?, list(b).or_else(none)?);
    let (ka, kb) = (kept(&la, keep), kept(&lb, keep));
    if ka != kb {
        return Ok(false);
    }
    for n in ka {
        let c = CString::new(n).expect("split at NUL");
        if get(a, &c)? != get(b, &c)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Copy the kept xattrs of `src` to `dst`; with `dst_may_have` (an entry not made just
/// now, or one that may have inherited a default ACL) remove DST's kept names SRC lacks.
/// A name the destination refuses is a loss of its kind (xattrs or acls), reported
/// through `lost`; other errors are returned.
pub fn copy(
    src: Loc<'_>,
    dst: Loc<'_>,
    keep: &Keep,
    dst_may_have: bool,
    losses: &Losses,
    lost: &dyn Fn() -> String,
) -> Result<(), Errno> {
    let names = match list(src) {
        Ok(v) => v,
        Err(e) if is_unsupported(e) => Vec::new(),
        Err(e) => return Err(e),
    };
    let mine = kept(&names, keep);
    if dst_may_have {
        let theirs = match list(dst) {
            Ok(v) => v,
            Err(e) if is_unsupported(e) => Vec::new(),
            Err(e) => return Err(e),
        };
        for n in kept(&theirs, keep) {
            if mine.binary_search(&n).is_err() {
                let c = CString::new(n).expect("split at NUL");
                remove_raw(dst, &c).or_else(|e| if e == Errno::NODATA { Ok(()) } else { Err(e) })?;
            }
        }
    }
    let (mut lost_x, mut lost_a) = (false, false);
    for n in mine {
        let kind = if is_acl(n) { Loss::Acls } else { Loss::Xattrs };
        if losses.unsupported(kind) || losses.dropped(n) {
            if kind == Loss::Acls {
                lost_a = true
            } else {
                lost_x = true
            }
            continue;
        }
        let c = CString::new(n).expect("split at NUL");
        let v = match get(src, &c) {
            Ok(v) => v,
            Err(Errno::NODATA) => continue,
            Err(e) => return Err(e),
        };
        match set_raw(dst, &c, &v) {
            Ok(()) => {}
            Err(e) if is_unsupported(e) || e == Errno::NOSPC || e == Errno::TOOBIG || e == Errno::ACCESS => {
                // Not supported at all here (as opposed to this name refused: a
                // security.* one for a normal user, a value too large).
                if matches!(e, Errno::OPNOTSUPP | Errno::NOSYS) && !n.starts_with(b"security.") {
                    losses.mark_unsupported(kind);
                }
                if kind == Loss::Acls { lost_a = true } else { lost_x = true }
            }
            Err(e) => return Err(e),
        }
    }
    if lost_x {
        losses.add(Loss::Xattrs, lost);
    }
    if lost_a {
        losses.add(Loss::Acls, lost);
    }
    Ok(())
}

/// statx attributes that stand for inode flags worth copying: compressed, immutable,
/// append-only, nodump (STATX_ATTR_*). Anything else is not looked at (no call).
pub const FLAG_ATTRS: u32 = 0x04 | 0x10 | 0x20 | 0x40;

/// FS_IOC_GETFLAGS / FS_IOC_SETFLAGS (an int, whatever the ioctl's encoded size says).
const FS_IOC_GETFLAGS: libc::c_ulong = 0x8008_6601;
const FS_IOC_SETFLAGS: libc::c_ulong = 0x4008_6602;
/// Flags a user (or root) may set: secrm, unrm, compr, sync, immutable, append, nodump,
/// noatime, journal data, notail, dirsync, topdir, nocow, projinherit.
const USER_FLAGS: libc::c_int = 0x0000_00FF | 0x4000 | 0x8000 | 0x1_0000 | 0x2_0000 | 0x80_0000 | 0x2000_0000;

/// statx's immutable and append-only attributes: a file with either cannot be renamed
/// over or unlinked.
pub const GUARD_ATTRS: u32 = 0x10 | 0x20;

/// Take FS_IMMUTABLE_FL and FS_APPEND_FL off DST's file `name` of `dir` (root only:
/// CAP_LINUX_IMMUTABLE), so that a sync can replace it; SRC's flags are set on the new
/// file afterwards.
pub fn lift_guard_flags(dir: BorrowedFd<'_>, name: &CStr) -> Result<(), Errno> {
    use rustix::fs::{OFlags, openat};
    let fl = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let fd = openat(dir, name, fl, rustix::fs::Mode::empty())?;
    let have = get_flags(fd.as_fd())?;
    let new = have & !(0x10 | 0x20);
    // SAFETY: the ioctl reads one int.
    ret(unsafe { libc::ioctl(fd.as_raw_fd(), FS_IOC_SETFLAGS, &new as *const libc::c_int) } as libc::c_long).map(|_| ())
}

pub fn get_flags(fd: BorrowedFd<'_>) -> Result<libc::c_int, Errno> {
    let mut f: libc::c_int = 0;
    // SAFETY: the ioctl writes one int.
    ret(unsafe { libc::ioctl(fd.as_raw_fd(), FS_IOC_GETFLAGS, &mut f as *mut libc::c_int) } as libc::c_long)?;
    Ok(f)
}

/// Give `dst` the flags `src` has (of the settable ones). Called last: an immutable or
/// append-only file takes no more changes.
pub fn copy_flags(src: BorrowedFd<'_>, dst: BorrowedFd<'_>) -> Result<(), Errno> {
    let want = get_flags(src)? & USER_FLAGS;
    let have = get_flags(dst)?;
    let new = (have & !USER_FLAGS) | want;
    if new == have {
        return Ok(());
    }
    // SAFETY: the ioctl reads one int.
    ret(unsafe { libc::ioctl(dst.as_raw_fd(), FS_IOC_SETFLAGS, &new as *const libc::c_int) } as libc::c_long)
        .map(|_| ())
}

/// Owner to give a new entry made from `m`, or None when nothing is to be done:
/// root gives both ids; a normal user only the group (where allowed, a group of theirs).
pub fn owner_for(m: &Meta, keep: &Keep) -> Option<(Option<u32>, Option<u32>)> {
    if !keep.owner {
        return None;
    }
    if is_root() {
        return Some((Some(m.uid), Some(m.gid)));
    }
    (m.gid != effective_ids().1).then_some((None, Some(m.gid)))
}

/// Apply the owner (see [`owner_for`]) to an open entry or a name below a directory.
pub fn chown(loc: Loc<'_>, ids: (Option<u32>, Option<u32>)) -> Result<(), Errno> {
    let (u, g) = (ids.0.map(rustix::fs::Uid::from_raw), ids.1.map(rustix::fs::Gid::from_raw));
    match loc {
        Loc::Fd(fd) => rustix::fs::fchown(fd, u, g),
        Loc::At(d, name) => rustix::fs::chownat(d, name, u, g, rustix::fs::AtFlags::SYMLINK_NOFOLLOW),
    }
}
