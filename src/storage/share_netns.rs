//! A share stack's own network namespace and its unprivileged proxy account (issue 38).
//!
//! Every process of a share stack (server, proxy, FUSE client) runs in a network
//! namespace of the stack's own: loopback only, so nothing it listens on is reachable
//! from the host's addresses, 127.0.0.1 included, and no local user can connect to the
//! server or to the proxy's unauthenticated API (entering the namespace takes
//! CAP_SYS_ADMIN). The namespace is made by `unshare(CLONE_NEWNET)` on a thread of the
//! tool's own and kept by a bind mount of that thread's `ns/net` on the file `netns` in
//! the stack's private directory, which the registry recorded before anything started:
//! [`remove`] (teardown and `cleanup`) unmounts it. Processes are started inside it by
//! `setns` between fork and exec ([`confine`]), not by `ip netns exec`, which would also
//! give them a mount namespace of their own and hide the client's FUSE mount. The tool's
//! own connections (readiness probes, the proxy's API) are made from a short-lived thread
//! that joined the namespace ([`within`]): network namespaces are per thread.
//!
//! The namespace is also the stack's identity: a process whose `/proc/PID/ns/net` is the
//! namespace's inode is the stack's ([`pids_in`]), whatever its argv.

use crate::error::{Error, Result};
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The file the namespace of the stack in `dir` is bound to.
pub fn file(dir: &Path) -> PathBuf {
    dir.join("netns")
}

fn os_err(what: &str) -> Error {
    Error::failed(format!("{what}: {}", std::io::Error::last_os_error()))
}

fn cpath(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| Error::failed(format!("{}: a NUL in the path", p.display())))
}

/// Make a new network namespace with its loopback up, bound to `ns` (created here; it
/// must not exist).
pub fn create(ns: &Path) -> Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(ns)
        .map_err(|e| Error::failed(format!("cannot create {}: {e}", ns.display())))?;
    let target = cpath(ns)?;
    std::thread::scope(|s| s.spawn(|| new_bound(&target)).join())
        .unwrap_or_else(|_| Err(Error::failed("the network namespace's thread panicked")))
}

/// On a thread of its own (the namespace stays with the thread, which then ends).
fn new_bound(target: &CString) -> Result<()> {
    // SAFETY: plain syscall; CLONE_NEWNET moves only the calling thread.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(os_err("cannot make a network namespace (unshare)"));
    }
    loopback_up()?;
    let src = c"/proc/thread-self/ns/net";
    // SAFETY: both paths are NUL-terminated; a bind mount takes no data.
    let r = unsafe { libc::mount(src.as_ptr(), target.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()) };
    if r != 0 {
        return Err(os_err("cannot keep the network namespace (bind mount)"));
    }
    Ok(())
}

/// `ip link set lo up` in the calling thread's namespace (a new one has it down).
fn loopback_up() -> Result<()> {
    // SAFETY: a socket for the ioctls, closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(os_err("cannot bring the namespace's loopback up (socket)"));
    }
    // SAFETY: ifreq is plain data; all zeroes is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
        *d = *s as libc::c_char;
    }
    // SAFETY: fd is a socket and ifr names an interface; the kernel fills/reads ifru_flags.
    let ok = unsafe {
        libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr) == 0 && {
            ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr) == 0
        }
    };
    let e = os_err("cannot bring the namespace's loopback up");
    // SAFETY: closing the socket made above.
    unsafe { libc::close(fd) };
    if ok { Ok(()) } else { Err(e) }
}

/// Is `ns` a bound network namespace (nsfs), not the plain file it was before?
fn is_bound(ns: &Path) -> bool {
    let Ok(p) = cpath(ns) else { return false };
    // SAFETY: statfs fills the zeroed struct; p is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    (unsafe { libc::statfs(p.as_ptr(), &mut st) } == 0) && st.f_type == libc::NSFS_MAGIC
}

/// The namespace's identity (device, inode), while it is bound at `ns`.
pub fn identity(ns: &Path) -> Option<(u64, u64)> {
    if !is_bound(ns) {
        return None;
    }
    std::fs::metadata(ns).ok().map(|m| (m.dev(), m.ino()))
}

/// Processes in the namespace of identity `id` (the tool itself excluded: only a thread
/// of it visits).
pub fn pids_in(id: (u64, u64)) -> Vec<u32> {
    let me = std::process::id();
    let Ok(rd) = std::fs::read_dir("/proc") else { return Vec::new() };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| std::fs::metadata(format!("/proc/{pid}/ns/net")).is_ok_and(|m| (m.dev(), m.ino()) == id))
        .collect()
}

/// Open the namespace at `ns` (checked to be one) for [`within`] or [`confine`].
pub fn open(ns: &Path) -> Result<std::fs::File> {
    if !is_bound(ns) {
        return Err(Error::failed(format!("{} is not a network namespace", ns.display())));
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(ns)
        .map_err(|e| Error::failed(format!("cannot open {}: {e}", ns.display())))
}

/// Run `f` on a thread that joined the namespace at `ns` (its sockets are the namespace's).
pub fn within<T: Send>(ns: &Path, f: impl FnOnce() -> T + Send) -> Result<T> {
    let file = open(ns)?;
    std::thread::scope(|s| {
        s.spawn(move || {
            // SAFETY: plain syscall on an open namespace fd; only this thread moves.
            if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(os_err("cannot enter the share's network namespace"));
            }
            Ok(f())
        })
        .join()
        .unwrap_or_else(|_| Err(Error::failed("a thread in the share's network namespace panicked")))
    })
}

/// An account with no name for the stack's proxy: uid and gid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Account {
    pub uid: u32,
    pub gid: u32,
}

/// First id tried for [`Account`]: far above the ranges useradd (1000–60000), systemd's
/// dynamic users (61184–65519) and the usual subordinate ids (100000 + 65536·n) hand out.
const ACCOUNT_BASE: u32 = 1_835_401_216; // 0x6d66_0000

/// An unnamed uid = gid of the stack's own: no passwd or group entry, no process running
/// as it; tried from a point that depends on the tool's pid, so stacks of concurrent runs
/// differ. Not `nobody`: every process of `nobody` could signal or ptrace the proxy.
pub fn free_account() -> Result<Account> {
    free_account_besides(&[])
}

/// [`free_account`] other than the ids in `taken` (a second account for the same stack:
/// a process that dropped root is not dumpable, its /proc entry is root's, so an id in
/// use by the stack is not seen there).
pub fn free_account_besides(taken: &[u32]) -> Result<Account> {
    let used: std::collections::HashSet<u32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::metadata(e.path()).ok().map(|m| m.uid()))
        .collect();
    let start = std::process::id() % 65_536;
    for i in 0..65_536u32 {
        let id = ACCOUNT_BASE + (start + i) % 65_536;
        // SAFETY: getpwuid/getgrgid return a pointer into static storage or NULL; only
        // NULL-ness is read.
        let named = unsafe { !libc::getpwuid(id).is_null() || !libc::getgrgid(id).is_null() };
        if !named && !used.contains(&id) && !taken.contains(&id) {
            return Ok(Account { uid: id, gid: id });
        }
    }
    Err(Error::failed("no free unnamed uid for the share's proxy"))
}

/// A hook for `Command::pre_exec`: join the namespace `ns` (an fd open in the parent)
/// and, with `account`, become it (no groups, no way back to privilege). Runs between
/// fork and exec: syscalls only.
pub fn confine(ns: std::sync::Arc<std::fs::File>, account: Option<Account>) -> impl FnMut() -> std::io::Result<()> {
    move || {
        let check = |r: libc::c_int| if r == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) };
        // SAFETY: syscalls on values owned by this closure; nothing allocates.
        unsafe {
            check(libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET))?;
            if let Some(a) = account {
                check(libc::setgroups(0, std::ptr::null()))?;
                check(libc::setresgid(a.gid, a.gid, a.gid))?;
                check(libc::setresuid(a.uid, a.uid, a.uid))?;
                check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
            }
        }
        Ok(())
    }
}

/// Unbind the namespace at `ns` (it ends with its last process) and remove the file;
/// gone already is fine.
pub fn remove(ns: &Path) -> std::result::Result<(), String> {
    if is_bound(ns) {
        let p = cpath(ns).map_err(|e| e.to_string())?;
        // SAFETY: p is NUL-terminated; UMOUNT_NOFOLLOW: a symlink there is not followed.
        if unsafe { libc::umount2(p.as_ptr(), libc::MNT_DETACH | libc::UMOUNT_NOFOLLOW) } != 0 {
            return Err(format!("cannot unmount {}: {}", ns.display(), std::io::Error::last_os_error()));
        }
    }
    match std::fs::remove_file(ns) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot remove {}: {e}", ns.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_is_unnamed() {
        let a = free_account().unwrap();
        assert!(a.uid >= ACCOUNT_BASE && a.uid == a.gid);
        // SAFETY: NULL-ness only.
        assert!(unsafe { libc::getpwuid(a.uid).is_null() });
    }

    #[test]
    fn a_plain_file_is_no_namespace() {
        let d = tempfile::tempdir().unwrap();
        let f = file(d.path());
        std::fs::write(&f, b"").unwrap();
        assert_eq!(identity(&f), None);
        assert!(open(&f).is_err());
        remove(&f).unwrap();
        assert!(!f.exists());
        remove(&f).unwrap();
    }
}
