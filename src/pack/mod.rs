//! Containers for the pack experiment: one file that holds a whole tree, made on the
//! source, copied, then unpacked or mounted (read-only) at the destination. One trait,
//! one file per container; the work is done by the tools people use (tar, zstd,
//! mksquashfs, mkfs.erofs, mkfs.ext4), run through [`tool`] with stdin from /dev/null and
//! their output captured.
//!
//! Mounts are registered (`/run/manyfiles`, as root) before they exist, so `manyfiles
//! cleanup` can undo a killed run, and [`Mounted`] unmounts on drop.

pub mod erofs;
pub mod ext4img;
pub mod shards;
pub mod squashfs;
pub mod tar;

use crate::fs::walk::{self, Kind};
use crate::storage::kinds::{KindRecord, container::ContainerRecord};
use crate::storage::registry::{self, Registration};
use rustix::fd::AsFd;
use rustix::fs::{Mode, OFlags, openat};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A tool and the Debian package that provides it.
pub type Tool = (&'static str, &'static str);

/// One kind of container.
pub trait Container: Sync + Send {
    /// Name in results and on the command line: tar, tar.zst, squashfs, erofs, ext4.
    fn name(&self) -> &'static str;
    /// Tools `pack` (and `unpack`, when there is one) need.
    fn tools(&self) -> Vec<Tool>;
    /// Pack the tree `src` into the new file `out`.
    fn pack(&self, src: &Path, out: &Path, threads: usize) -> Result<(), String>;
    /// Unpack `file` into `dst` (an empty directory); None when the
    /// container is only mounted (an ext4 image).
    fn unpack(&self, _file: &Path, _dst: &Path, _threads: usize) -> Option<Result<(), String>> {
        None
    }
    /// File system type for a kernel mount; None: not mountable (tar).
    fn kernel_fs(&self) -> Option<&'static str> {
        None
    }
    /// The FUSE mounter (tool, package) and its argv for `file` at `mp`, read-only.
    fn fuse(&self, _file: &Path, _mp: &Path) -> Option<(Tool, Vec<String>)> {
        None
    }
    /// Whether [`unpack`](Self::unpack) does anything.
    fn can_unpack(&self) -> bool {
        false
    }
}

/// Every container, in the order tables show them.
pub const NAMES: [&str; 5] = ["tar", "tar.zst", "squashfs", "erofs", "ext4"];

pub fn by_name(name: &str) -> Option<Box<dyn Container>> {
    Some(match name {
        "tar" => Box::new(tar::Tar { zstd: false }),
        "tar.zst" | "tar+zstd" => Box::new(tar::Tar { zstd: true }),
        "squashfs" => Box::new(squashfs::Squashfs),
        "erofs" => Box::new(erofs::Erofs),
        "ext4" => Box::new(ext4img::Ext4Image),
        _ => return None,
    })
}

/// Who will open the containers at the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consumer {
    /// Linux: every container (squashfs, EROFS and ext4 images mount there).
    Linux,
    /// Any system (Windows, macOS too): only what they open without extra software.
    Any,
}

impl Consumer {
    pub fn parse(s: &str) -> Option<Consumer> {
        match s {
            "linux" => Some(Consumer::Linux),
            "any" => Some(Consumer::Any),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Consumer::Linux => "linux",
            Consumer::Any => "any",
        }
    }
    /// The default for a destination of file system type `fs_type`: `any` on the file
    /// systems removable media and Windows volumes use (exFAT, NTFS, FAT; `fuseblk` is
    /// how ntfs-3g and exfat-fuse show), `linux` otherwise.
    pub fn for_destination(fs_type: &str) -> Consumer {
        match fs_type {
            "exfat" | "ntfs" | "ntfs3" | "vfat" | "msdos" | "fuseblk" => Consumer::Any,
            _ => Consumer::Linux,
        }
    }
    /// Whether this consumer can open the container `name`.
    pub fn opens(self, name: &str) -> bool {
        self == Consumer::Linux || !linux_only(name)
    }
}

/// Containers only Linux opens (mounts): squashfs, EROFS, an ext4 image. tar and
/// tar.zst every system can unpack.
pub fn linux_only(name: &str) -> bool {
    matches!(name, "squashfs" | "erofs" | "ext4")
}

/// How containers are mounted at the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MountWith {
    /// `mount -t TYPE -o loop,ro` (root).
    Kernel,
    /// squashfuse, erofsfuse, fuse2fs (no root needed).
    Fuse,
}

impl MountWith {
    /// Kernel as root, FUSE otherwise.
    pub fn auto() -> MountWith {
        if rustix::process::geteuid().is_root() { MountWith::Kernel } else { MountWith::Fuse }
    }
    pub fn name(self) -> &'static str {
        match self {
            MountWith::Kernel => "kernel",
            MountWith::Fuse => "fuse",
        }
    }
}

/// Run one external tool: stdin from /dev/null, output captured, Ok(stdout) or the last
/// line of its error output. The one place pack spawns processes (to switch later to a
/// bounded runner).
pub fn tool(argv: &[String]) -> Result<String, String> {
    registry::run_tool(argv)
}

pub fn argv(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

pub fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Tools missing from $PATH among `tools`.
pub fn missing(tools: &[Tool]) -> Vec<Tool> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    tools.iter().copied().filter(|(t, _)| crate::storage::managed::find_in_path(t, &path).is_none()).collect()
}

/// Files, directories, bytes and 4 KiB blocks of a tree (never following symlinks).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub bytes: u64,
    /// Σ file sizes rounded up to 4 KiB.
    pub blocks_4k: u64,
}

/// Walk `root` and count it; with `read`, also read every file to the end (the timed
/// "read every file" of a mounted container). Errors are counted, the first kept.
pub fn walk_tree(root: &Path, threads: usize, read: bool) -> (Usage, u64, Option<String>) {
    let c: [AtomicU64; 6] = Default::default(); // files dirs symlinks bytes blocks errors
    let first = std::sync::Mutex::new(None::<String>);
    let err = |what: String| {
        c[5].fetch_add(1, Ordering::Relaxed);
        first.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(what);
    };
    match walk::open_root(root) {
        Err(e) => err(format!("{}: {e}", root.display())),
        Ok(fd) => walk::par_tasks(threads, vec![walk::DirTask::Root(fd)], |t: walk::DirTask, spawn| {
            let dir = match t.open() {
                Ok(d) => d,
                Err(e) => return err(format!("open directory: {e}")),
            };
            c[1].fetch_add(1, Ordering::Relaxed);
            let entries = match walk::read_dir(dir.as_fd()) {
                Ok(v) => v,
                Err(e) => return err(format!("list: {e}")),
            };
            let mut buf = if read { vec![0u8; 256 << 10] } else { Vec::new() };
            for e in entries {
                match e.kind {
                    Kind::Dir => spawn(walk::DirTask::Below(std::sync::Arc::clone(&dir), e.name)),
                    Kind::File => {
                        c[0].fetch_add(1, Ordering::Relaxed);
                        let size = if read {
                            read_file(dir.as_fd(), &e.name, &mut buf)
                        } else {
                            walk::meta_at(dir.as_fd(), &e.name).map(|m| m.size)
                        };
                        match size {
                            Ok(n) => {
                                c[3].fetch_add(n, Ordering::Relaxed);
                                c[4].fetch_add(n.div_ceil(4096), Ordering::Relaxed);
                            }
                            Err(x) => err(format!("{:?}: {x}", e.name)),
                        }
                    }
                    Kind::Symlink => {
                        c[2].fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {}
                }
            }
        }),
    }
    let v = |i: usize| c[i].load(Ordering::Relaxed);
    let u = Usage { files: v(0), dirs: v(1), symlinks: v(2), bytes: v(3), blocks_4k: v(4) };
    (u, v(5), first.into_inner().unwrap_or_else(|p| p.into_inner()))
}

fn read_file(dir: rustix::fd::BorrowedFd<'_>, name: &std::ffi::CStr, buf: &mut [u8]) -> rustix::io::Result<u64> {
    let fd = openat(dir, name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())?;
    let mut total = 0u64;
    loop {
        match rustix::io::read(&fd, &mut *buf) {
            Ok(0) => return Ok(total),
            Ok(n) => total += n as u64,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// A container mounted read-only; unmounted (and unregistered) on drop.
pub struct Mounted {
    pub mount_point: PathBuf,
    reg: Option<Registration>,
    mp_created: bool,
    fuse: bool,
    done: bool,
}

fn next_key() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("pack-{}-{}", crate::storage::rundir::run_id(), N.fetch_add(1, Ordering::Relaxed))
}

/// Mount `file` (canonical path) read-only at a new mount point: under the registry's
/// state directory as root, else `beside` (a new directory inside a run directory).
pub fn mount(c: &dyn Container, file: &Path, with: MountWith, beside: &Path) -> Result<Mounted, String> {
    let key = next_key();
    let root = rustix::process::geteuid().is_root();
    let mp = if root { registry::state_dir().join(format!("mnt-{key}")) } else { beside.to_path_buf() };
    let (cmd, fuse_source) = match with {
        MountWith::Kernel => {
            let fs = c.kernel_fs().ok_or_else(|| format!("{} cannot be mounted", c.name()))?;
            (argv(&["mount", "-t", fs, "-o", "loop,ro", &path_arg(file), &path_arg(&mp)]), None)
        }
        MountWith::Fuse => {
            let ((t, _), v) = c.fuse(file, &mp).ok_or_else(|| format!("{} has no FUSE mounter", c.name()))?;
            (v, Some(t.to_string()))
        }
    };
    let mut rec = registry::own_record(&format!("pack {}", c.name()));
    rec.mount_point = Some(mp.clone());
    rec.kind = KindRecord::Container(ContainerRecord::new(file.to_path_buf(), fuse_source));
    // Without root there is no registry: a normal exit (or a signal) still unmounts.
    let reg = if root { Some(registry::register(&key, rec).map_err(|e| e.to_string())?) } else { None };
    let mut m = Mounted { mount_point: mp, reg, mp_created: false, fuse: with == MountWith::Fuse, done: false };
    std::fs::create_dir(&m.mount_point).map_err(|e| format!("cannot create {}: {e}", m.mount_point.display()))?;
    m.mp_created = true;
    tool(&cmd)?;
    if registry::mounts_at(&m.mount_point).is_empty() {
        return Err(format!("{} is not mounted after `{}`", m.mount_point.display(), cmd.join(" ")));
    }
    Ok(m)
}

impl Mounted {
    /// Unmount, remove the mount point, unregister. Idempotent.
    pub fn unmount(&mut self) -> Result<(), String> {
        if self.done {
            return Ok(());
        }
        if !registry::mounts_at(&self.mount_point).is_empty() {
            if self.fuse && !rustix::process::geteuid().is_root() {
                let mp = path_arg(&self.mount_point);
                tool(&argv(&["fusermount3", "-u", &mp])).or_else(|_| tool(&argv(&["fusermount", "-u", &mp])))?;
            } else {
                registry::unmount(&self.mount_point)?;
            }
        }
        if self.mp_created {
            std::fs::remove_dir(&self.mount_point)
                .map_err(|e| format!("cannot remove {}: {e}", self.mount_point.display()))?;
            self.mp_created = false;
        }
        if let Some(r) = self.reg.take() {
            r.unregister().map_err(|e| e.to_string())?;
        }
        self.done = true;
        Ok(())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Err(e) = self.unmount() {
            eprintln!("manyfiles: {e} (run `manyfiles cleanup` later to remove what is left)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve() {
        for n in NAMES {
            assert_eq!(by_name(n).unwrap().name(), n);
        }
        assert!(by_name("zip").is_none());
    }

    #[test]
    fn walk_counts_and_reads() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("d")).unwrap();
        std::fs::write(t.path().join("d/a"), vec![1u8; 5000]).unwrap();
        std::fs::write(t.path().join("b"), b"xy").unwrap();
        std::os::unix::fs::symlink("b", t.path().join("l")).unwrap();
        for read in [false, true] {
            let (u, errors, _) = walk_tree(t.path(), 2, read);
            assert_eq!(errors, 0);
            assert_eq!(u, Usage { files: 2, dirs: 2, symlinks: 1, bytes: 5002, blocks_4k: 3 });
        }
    }
}
