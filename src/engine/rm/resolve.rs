//! One PATH of `manyfiles rm`, checked and resolved before anything is removed (issue
//! 38): every component before the last is opened without following a symlink (a
//! symlink there is refused: `rm LINK/x` with LINK → /etc removed /etc/x, though rm
//! follows no symlink), the last is looked at without following it, and a directory
//! that is a mount point is refused unless `--cross-mounts` (then emptied and kept).

use super::Target;
use crate::error::{Error, Result};
use crate::fs::walk::{self, Kind};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, StatxAttributes, StatxFlags, statx};
use rustix::io::Errno;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Resolve one PATH: a bad one is bad input (exit 2).
pub(super) fn resolve(path: &Path, cross_mounts: bool) -> Result<Target> {
    // One line: "rm: PATH: reason".
    let bad = |why: String| Error::bad("rm", format!("{}: {why}", path.display()));
    let bytes = path.as_os_str().as_bytes();
    if bytes.is_empty() {
        return Err(bad("an empty path".into()));
    }
    let last = bytes.split(|&b| b == b'/').rfind(|c| !c.is_empty());
    match last {
        None => return Err(bad("refusing to remove the root directory /".into())),
        Some(b".") | Some(b"..") => {
            return Err(bad("refusing to remove a path ending in . or .. (name the directory itself)".into()));
        }
        _ => {}
    }
    let name = path.file_name().ok_or_else(|| bad("no last component".into()))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // Every component before the last is opened without following a symlink: `LINK/x`
    // with LINK → /etc would otherwise remove /etc/x, though no symlink is followed.
    let pfd = open_no_symlinks(parent).map_err(bad)?;
    let canon = shown_path(pfd.as_fd()).unwrap_or_else(|| parent.to_path_buf());
    let cname = CString::new(name.as_bytes()).map_err(|_| bad("NUL in the path".into()))?;
    let want = StatxFlags::TYPE | StatxFlags::INO;
    let st = statx(&pfd, cname.as_c_str(), AtFlags::SYMLINK_NOFOLLOW, want).map_err(|e| match e {
        Errno::NOENT => bad("no such file or directory".into()),
        e => bad(format!("cannot see it: {e}")),
    })?;
    let kind = Kind::from_mode(st.stx_mode as u32);
    let root = statx(rustix::fs::CWD, "/", AtFlags::empty(), want).map_err(|e| bad(format!("stat /: {e}")))?;
    let same = |a: &rustix::fs::Statx, b: &rustix::fs::Statx| {
        (a.stx_dev_major, a.stx_dev_minor, a.stx_ino) == (b.stx_dev_major, b.stx_dev_minor, b.stx_ino)
    };
    if kind == Kind::Dir && same(&st, &root) {
        return Err(bad("resolves to the root directory /: refused".into()));
    }
    if kind == Kind::Symlink {
        // The link itself would be removed, never what it leads to; still, a link to `/`
        // as a PATH is refused, in case the user meant what it leads to.
        if statx(&pfd, cname.as_c_str(), AtFlags::empty(), want).is_ok_and(|t| same(&t, &root)) {
            return Err(bad("a symlink to the root directory /: refused (unlink(1) removes the link)".into()));
        }
        // `link/` asks for what the link leads to (rm -r would empty that): say so instead.
        if bytes.ends_with(b"/") {
            return Err(bad(
                "a symlink named with a trailing /: refused (name it without the / to remove the link; symlinks are never followed)"
                    .into(),
            ));
        }
    }
    let dev = rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor);
    // A PATH that is a mount point: removing it would empty the mounted file system and
    // then fail on the mount point (busy). Only with --cross-mounts: emptied, kept.
    if kind != Kind::Dir && st.stx_attributes.contains(StatxAttributes::MOUNT_ROOT) {
        return Err(bad("a mount point (a file bind mount): refused (unmount it to remove the file below it)".into()));
    }
    let mount_point = kind == Kind::Dir
        && (st.stx_attributes.contains(StatxAttributes::MOUNT_ROOT)
            || rustix::fs::fstat(&pfd).is_ok_and(|p| p.st_dev != dev));
    if mount_point && !cross_mounts {
        let desc = walk::open_dir_at(pfd.as_fd(), &cname)
            .map(|fd| crate::engine::overlap::describe_mount(fd.as_fd()))
            .unwrap_or_else(|_| "a mount".into());
        return Err(bad(format!(
            "a mount point ({desc}): refused (it would empty the mounted file system; --cross-mounts empties it and keeps the mount point)"
        )));
    }
    Ok(Target { shown: canon.join(name), parent: pfd, name: cname, kind, dev, ino: st.stx_ino, mount_point })
}

/// Open directory `path` with no symlink followed on the way (each component `O_PATH |
/// O_NOFOLLOW`, from `/` or the working directory), then for real (`O_RDONLY`) to remove
/// in it. A symlink among the components is refused, naming it.
fn open_no_symlinks(path: &Path) -> std::result::Result<OwnedFd, String> {
    use rustix::fs::{Mode, OFlags, openat};
    let step = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let start = if path.is_absolute() { Path::new("/") } else { Path::new(".") };
    let mut cur = openat(rustix::fs::CWD, start, step, Mode::empty())
        .map_err(|e| format!("cannot open {}: {e}", start.display()))?;
    let mut walked = PathBuf::from(if path.is_absolute() { "/" } else { "" });
    for c in path.components() {
        let part = match c {
            std::path::Component::Normal(n) => n,
            std::path::Component::ParentDir => std::ffi::OsStr::new(".."),
            _ => continue,
        };
        walked.push(part);
        cur = match openat(&cur, part, step, Mode::empty()) {
            Ok(fd) => fd,
            Err(e @ (Errno::NOTDIR | Errno::LOOP)) => {
                let link = statx(&cur, part, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::TYPE)
                    .is_ok_and(|st| Kind::from_mode(st.stx_mode as u32) == Kind::Symlink);
                return Err(match link {
                    true => format!(
                        "{} is a symlink: refused (symlinks in a PATH are never followed; name the directory it leads to{})",
                        walked.display(),
                        std::fs::canonicalize(&walked).map(|p| format!(", {}", p.display())).unwrap_or_default()
                    ),
                    false => format!("cannot resolve {}: {e}", walked.display()),
                });
            }
            Err(e) => return Err(format!("cannot resolve {}: {e}", walked.display())),
        };
    }
    openat(&cur, c".", walk::DIR_FLAGS, Mode::empty()).map_err(|e| format!("cannot open {}: {e}", path.display()))
}

/// Where the directory open at `fd` is, for messages (its path as the kernel tells it).
fn shown_path(fd: rustix::fd::BorrowedFd<'_>) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", rustix::fd::AsRawFd::as_raw_fd(&fd))).ok()
}
