//! An entry's attributes once its bytes are in place, in the order that keeps each:
//! owner (chown clears setuid/setgid), permission bits, xattrs and ACLs, mtime, and —
//! last, after any rename — inode flags (an immutable entry takes no more changes).
//! What the destination cannot hold is counted in [`Losses`], never dropped silently.

use super::attrs::{self, Caps, Keep, Loc, Loss, Losses};
use crate::fs::walk::{Kind, Meta};
use rustix::fd::BorrowedFd;
use rustix::fs::{AtFlags, Mode, Timespec, Timestamps, UTIME_OMIT};
use rustix::io::Errno;
use std::ffi::CStr;

/// What every transfer needs to keep attributes: the choice, the destination's
/// capabilities and where losses go.
#[derive(Clone, Copy)]
pub struct Attr<'a> {
    pub keep: &'a Keep,
    pub caps: &'a Caps,
    pub losses: &'a Losses,
    /// The entry may already carry xattrs (sync: a rewritten file or directory, or one
    /// made in a directory with a default ACL): DST's extra names are removed.
    pub dst_may_have: bool,
}

/// The path of the entry for loss and failure lines (made only when needed).
pub type PathFn<'a> = &'a dyn Fn() -> String;

pub fn mtime(m: &Meta) -> Timestamps {
    times(m, true)
}

/// `m`'s mtime with the access time left alone, or (`omit` false: a file system that
/// ignores the mtime when the access time is UTIME_OMIT, as exfat-fuse does) set to now.
pub fn times(m: &Meta, omit: bool) -> Timestamps {
    Timestamps {
        last_access: Timespec { tv_sec: 0, tv_nsec: if omit { UTIME_OMIT } else { rustix::fs::UTIME_NOW } },
        last_modification: Timespec { tv_sec: m.mtime_s, tv_nsec: m.mtime_ns as _ },
    }
}

/// Is `m`'s mtime finer than the destination keeps?
pub fn time_lost(m: &Meta, caps: &Caps) -> bool {
    caps.window_ns > 1 && (m.mtime_s as i128 * 1_000_000_000 + m.mtime_ns as i128) % caps.window_ns as i128 != 0
}

/// Do two mtimes compare equal on this destination (rsync's --modify-window: the
/// coarser granularity)?
pub fn same_time(a: &Meta, b: &Meta, caps: &Caps) -> bool {
    if caps.window_ns <= 1 {
        return a.mtime_s == b.mtime_s && a.mtime_ns == b.mtime_ns;
    }
    let t = |m: &Meta| m.mtime_s as i128 * 1_000_000_000 + m.mtime_ns as i128;
    (t(a) - t(b)).unsigned_abs() < caps.window_ns as u128
}

/// Do permission bits compare equal here (a file system without modes: always)?
pub fn same_perm(a: &Meta, b: &Meta, caps: &Caps) -> bool {
    !caps.modes || a.perm == b.perm
}

/// Do owners compare equal here (not kept, or not held by the destination: always)?
pub fn same_owner(s: &Meta, d: &Meta, a: &Attr) -> bool {
    match attrs::owner_for(s, a.keep) {
        _ if !a.caps.owner => true,
        None => true,
        Some((u, g)) => u.is_none_or(|u| u == d.uid) && g.is_none_or(|g| g == d.gid),
    }
}

/// Owner, then modes, xattrs and mtime of a new or rewritten entry at `dst`; `src` is
/// where SRC's xattrs are read. `chmod`: set the permission bits (setuid/setgid bits
/// that creation or a write may have cleared, a directory made 0700, a rewrite).
pub fn apply(src: Loc<'_>, dst: Loc<'_>, m: &Meta, a: &Attr, mut chmod: bool, path: PathFn) -> Result<(), Errno> {
    // Owner.
    if let Some(ids) = attrs::owner_for(m, a.keep) {
        let fixed = (a.caps.fixed_uid, a.caps.fixed_gid);
        if !a.caps.owner || a.losses.unsupported(Loss::Owner) {
            if ids.0.is_some_and(|u| u != fixed.0) || ids.1.is_some_and(|g| g != fixed.1) {
                a.losses.add(Loss::Owner, path);
            }
        } else {
            let (euid, egid) = attrs::effective_ids();
            let needed = a.dst_may_have || ids.0.is_some_and(|u| u != euid) || ids.1.is_some_and(|g| g != egid);
            if needed {
                match attrs::chown(dst, ids) {
                    Ok(()) => chmod |= m.perm & 0o6000 != 0,
                    Err(e) if attrs::is_unsupported(e) => {
                        if attrs::is_root() {
                            a.losses.mark_unsupported(Loss::Owner);
                        }
                        a.losses.add(Loss::Owner, path);
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    // Modes (symlinks have none).
    if m.kind != Kind::Symlink {
        if !a.caps.modes {
            let fixed = if m.kind == Kind::Dir { a.caps.fixed_dir_perm } else { a.caps.fixed_file_perm };
            if m.perm != fixed {
                a.losses.add(Loss::Modes, path);
            }
        } else if chmod {
            match dst {
                Loc::Fd(fd) => rustix::fs::fchmod(fd, Mode::from_raw_mode(m.perm))?,
                Loc::At(d, name) => rustix::fs::chmodat(d, name, Mode::from_raw_mode(m.perm), AtFlags::empty())?,
            }
        }
    }
    // Xattrs and ACLs.
    if a.keep.any_xattr() && a.caps.src_xattrs {
        attrs::copy(src, dst, a.keep, a.dst_may_have, a.losses, path)?;
    }
    // Mtime, last of what changes it.
    match dst {
        Loc::Fd(fd) => rustix::fs::futimens(fd, &times(m, a.caps.omit_ok))?,
        Loc::At(d, name) => {
            match rustix::fs::utimensat(d, name, &times(m, a.caps.omit_ok), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(()) => {}
                // An SFTP share sets times through the link (its setstat follows it): a
                // dangling one says ENOENT, one pointing outside the export EPERM. The link
                // itself is there, only its time cannot be held: a loss, not a failure.
                Err(_) if m.kind == Kind::Symlink && is_symlink_at(d, name) => {
                    a.losses.add(Loss::Times, path);
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }
    if time_lost(m, a.caps) {
        a.losses.add(Loss::Times, path);
    }
    Ok(())
}

/// Is `d/name` a symlink (not followed)?
fn is_symlink_at(d: BorrowedFd<'_>, name: &CStr) -> bool {
    rustix::fs::statat(d, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink)
}

/// Inode flags of `src` onto `dst` when statx says `m` has any worth copying; a
/// destination that cannot hold them is a loss.
pub fn flags(src: BorrowedFd<'_>, dst: BorrowedFd<'_>, m: &Meta, a: &Attr, path: PathFn) -> Result<(), Errno> {
    if !a.keep.flags || m.attrs & attrs::FLAG_ATTRS == 0 {
        return Ok(());
    }
    if a.losses.unsupported(Loss::Flags) {
        a.losses.add(Loss::Flags, path);
        return Ok(());
    }
    match attrs::copy_flags(src, dst) {
        Ok(()) => Ok(()),
        Err(e) if attrs::is_unsupported(e) => {
            if e != Errno::PERM {
                a.losses.mark_unsupported(Loss::Flags);
            }
            a.losses.add(Loss::Flags, path);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Flags of a file by name (after the rename that put it in place): opened only when
/// statx reported a flag on the source.
pub fn flags_at(
    src_dir: BorrowedFd<'_>,
    src_name: &CStr,
    dst_dir: BorrowedFd<'_>,
    dst_name: &CStr,
    m: &Meta,
    a: &Attr,
    path: PathFn,
) -> Result<(), Errno> {
    if !a.keep.flags || m.attrs & attrs::FLAG_ATTRS == 0 || m.kind != Kind::File {
        return Ok(());
    }
    use rustix::fs::{OFlags, openat};
    let fl = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let s = openat(src_dir, src_name, fl, Mode::empty())?;
    let d = openat(dst_dir, dst_name, fl, Mode::empty())?;
    flags(rustix::fd::AsFd::as_fd(&s), rustix::fd::AsFd::as_fd(&d), m, a, path)
}
