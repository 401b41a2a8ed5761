//! Managed test file systems: an image file → loop device → mkfs → mount, made by the
//! tool, reformatted between trials, and removed at the end (or by
//! [`registry::cleanup`](super::registry::cleanup) after a kill).
//!
//! External tools (mkfs.*, losetup, mount, umount, ntfs-3g and mount.exfat-fuse: what
//! people use and trust) run through [`crate::helper`], with deadlines and drained
//! output, and their exact argv is recorded in the results. Each resource is registered before it exists, so a `kill -9`
//! at any point leaves nothing the registry does not know about. A file share (`share:`)
//! is a FUSE client over a server and a proxy ([`super::share_stack`]) whose export is a
//! `ManagedFs` of its own; a fresh start re-makes the export with the client unmounted.

use super::fsspec::{FsSpec, FsType, fmt_block};
use super::registry::{
    self, Registration, detach_loop, loop_backing_file, loops_backed_by, mounts_at, run_tool, run_tool_sized, unmount,
};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::ffi::OsStr;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the results record about a managed file system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManagedDetails {
    pub spec: String,
    pub fs_type: String,
    pub block_size: Option<u64>,
    pub backing: String,
    pub image: PathBuf,
    pub image_bytes: u64,
    pub device: Option<String>,
    pub mkfs_command: Vec<String>,
    pub mkfs_version: String,
    pub mount_command: Vec<String>,
    pub mount_options: String,
    pub fuse: bool,
    pub formats: u64,
    /// Files and directories the image was sized for (ext2/3/4: inodes asked of mkfs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<u64>,
    /// A real device (`@dev:`): what sysfs says about it (None for images and tmpfs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_info: Option<super::device::DeviceInfo>,
    /// A device class (`@class:`): its parameters and the nbdkit + nbdfuse stack under
    /// the loop device (`image` is then nbdfuse's file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<super::nbd_stack::ClassDetails>,
    /// A file share (`share:`): server, proxy, client and the export under them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<super::share_stack::ShareDetails>,
}

/// A file system the tool made and mounted; torn down on drop.
pub struct ManagedFs {
    spec: FsSpec,
    mount_point: PathBuf,
    tmpfs_source: String,
    details: ManagedDetails,
    reg: Option<Registration>,
    image_created: bool,
    mp_created: bool,
    /// A device class's stack directory, while its daemons may run.
    nbd_dir: Option<PathBuf>,
    /// A share's stack directory and its exported file system.
    share_dir: Option<PathBuf>,
    export: Option<Box<ManagedFs>>,
    done: bool,
}

/// The modes an exFAT or NTFS mount shows (they keep no owners or modes): root's, not
/// writable by others (see [`ManagedFs::mount_argv`]).
pub const FUSE_MODES: &str = "umask=022";

/// Inodes to ask of mkfs for `entries` files and directories: a quarter more, and room
/// for the run directory and the file system's own.
pub fn inodes_for(entries: u64) -> u64 {
    entries + entries / 4 + 1024
}

/// Bytes of metadata one file or directory costs beyond its data blocks, per type (an
/// upper bound, for sizing images): ext inode 256 B; xfs inode 512 B + directory entry;
/// btrfs inode, references and up to 2 KiB of inline data, twice (DUP metadata); NTFS
/// one 1 KiB MFT record + index entry; exFAT three 32 B directory entries.
pub fn entry_overhead(t: FsType) -> u64 {
    match t {
        FsType::Ext2 | FsType::Ext3 | FsType::Ext4 => 256 + 64,
        FsType::Xfs => 512 + 64,
        FsType::Btrfs => 2 * (2048 + 512),
        FsType::Ntfs => 1024 + 128,
        FsType::Exfat => 96,
        FsType::Tmpfs => 0,
    }
}

/// Minimum image sizes mkfs accepts (measured with xfsprogs 6.1, btrfs-progs 6.2).
pub fn min_image_bytes(spec: &FsSpec) -> u64 {
    const MIB: u64 = 1 << 20;
    match spec.fs_type {
        FsType::Xfs => 300 * MIB,
        FsType::Btrfs => 114_294_784,
        FsType::Exfat => (4 * MIB).max(spec.block.unwrap_or(0) * 64),
        FsType::Ntfs => 4 * MIB,
        FsType::Ext2 | FsType::Ext3 | FsType::Ext4 => 4 * MIB,
        FsType::Tmpfs => MIB,
    }
}

/// The mkfs tool of a type and the Debian packages that provide its tools.
fn tools(spec: &FsSpec) -> Vec<(&'static str, &'static str)> {
    let t = spec.fs_type;
    let mut v = match t {
        FsType::Ext2 => vec![("mkfs.ext2", "e2fsprogs")],
        FsType::Ext3 => vec![("mkfs.ext3", "e2fsprogs")],
        FsType::Ext4 => vec![("mkfs.ext4", "e2fsprogs")],
        FsType::Xfs => vec![("mkfs.xfs", "xfsprogs")],
        FsType::Btrfs => vec![("mkfs.btrfs", "btrfs-progs")],
        FsType::Ntfs => vec![("mkfs.ntfs", "ntfs-3g"), ("ntfs-3g", "ntfs-3g")],
        FsType::Exfat => vec![("mkfs.exfat", "exfatprogs"), ("mount.exfat-fuse", "exfat-fuse")],
        FsType::Tmpfs => vec![],
    };
    if t != FsType::Tmpfs {
        v.push(("losetup", "mount"));
    }
    if spec.class().is_some() {
        v.extend(super::nbd_stack::TOOLS);
    }
    v.push(("mount", "mount"));
    v.push(("umount", "mount"));
    v
}

/// `name` looked up in `path` (a PATH value), as the shell would.
pub fn find_in_path(name: &str, path: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .map(|d| d.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

fn kernel_has(fs: &str) -> bool {
    std::fs::read_to_string("/proc/filesystems")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().last() == Some(fs))
}

/// Is `fs` known to the kernel (after trying `modprobe`)?
pub(crate) fn kernel_supports(fs: &str) -> bool {
    if kernel_has(fs) {
        return true;
    }
    let _ = run_tool(&argv(&["modprobe", "-q", fs]));
    kernel_has(fs)
}

fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    let v = rustix::fs::statvfs(dir).map_err(std::io::Error::from)?;
    Ok(v.f_bavail.saturating_mul(v.f_frsize))
}

impl ManagedFs {
    /// Check everything before creating anything (see the module docs); tools are looked
    /// up in $PATH.
    pub fn preflight(specs: &[FsSpec], image_bytes: u64) -> Result<()> {
        let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
        Self::preflight_in(specs, image_bytes, &path)
    }

    /// [`preflight`](Self::preflight) with tools looked up in `search_path` (for tests).
    pub fn preflight_in(specs: &[FsSpec], image_bytes: u64, search_path: &OsStr) -> Result<()> {
        const FLAG: &str = "--fs";
        if !rustix::process::geteuid().is_root() {
            return Err(Error::bad(
                FLAG,
                "formatting test file systems needs root; use --target DIR to measure an existing directory",
            ));
        }
        let image_bytes = round_image(image_bytes);
        let mut need_loop = false;
        let mut per_dir: Vec<(PathBuf, u64)> = Vec::new();
        for spec in specs {
            let label = spec.label();
            if let Some(share) = spec.share() {
                super::share_stack::preflight(&label, share, search_path).map_err(|e| Error::bad(FLAG, e))?;
                Self::preflight_in(std::slice::from_ref(&share.export), image_bytes, search_path)?;
                continue;
            }
            for (tool, pkg) in tools(spec) {
                if find_in_path(tool, search_path).is_none() {
                    return Err(Error::bad(
                        FLAG,
                        format!("{label}: {tool} not found: install the Debian package {pkg}"),
                    ));
                }
            }
            let t = spec.fs_type;
            if spec.class().is_some() && !Path::new("/dev/fuse").exists() {
                return Err(Error::bad(
                    FLAG,
                    format!("{label}: a device class needs FUSE (no /dev/fuse); try `modprobe fuse`"),
                ));
            }
            if t.is_fuse() {
                if !Path::new("/dev/fuse").exists() || !kernel_supports("fuseblk") {
                    return Err(Error::bad(
                        FLAG,
                        format!(
                            "{label}: this kernel has no FUSE support (no /dev/fuse or no fuseblk); try `modprobe fuse`"
                        ),
                    ));
                }
            } else if !kernel_supports(t.name()) {
                return Err(Error::bad(FLAG, format!("{label}: this kernel has no {} support", t.name())));
            }
            if spec.device().is_some() {
                continue; // no image: size, state and interlocks are device.rs's checks
            }
            if t != FsType::Tmpfs {
                need_loop = true;
            }
            let min = min_image_bytes(spec);
            if image_bytes < min {
                return Err(Error::bad(
                    FLAG,
                    format!(
                        "{label}: the image size {} is below the minimum for {} ({} MiB); give a larger image size",
                        crate::units::fmt_size(image_bytes as f64),
                        t.name(),
                        min.div_ceil(1 << 20)
                    ),
                ));
            }
            let dir = spec.backing_dir();
            if !dir.is_dir() {
                return Err(Error::bad(
                    FLAG,
                    format!(
                        "{label}: the backing directory {} {}",
                        dir.display(),
                        if dir.exists() { "is not a directory" } else { "does not exist" }
                    ),
                ));
            }
            match per_dir.iter_mut().find(|(d, _)| *d == dir) {
                Some((_, n)) => *n += image_bytes,
                None => per_dir.push((dir, image_bytes)),
            }
        }
        if need_loop && !Path::new("/dev/loop-control").exists() && !kernel_supports("loop") {
            // `loop` is not a file system, so kernel_supports only served to modprobe it.
            if !Path::new("/dev/loop-control").exists() {
                return Err(Error::bad(FLAG, "this kernel has no loop device support (/dev/loop-control missing)"));
            }
        }
        for (dir, need) in per_dir {
            let free = free_bytes(&dir)
                .map_err(|e| Error::bad(FLAG, format!("cannot check free space in {}: {e}", dir.display())))?;
            if free < need {
                return Err(Error::bad(
                    FLAG,
                    format!(
                        "{} has {} free, the test file systems need {}; use a smaller image size or another backing",
                        dir.display(),
                        crate::units::fmt_size(free as f64),
                        crate::units::fmt_size(need as f64)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Make, format and mount one file system (see the module docs).
    pub fn create(spec: &FsSpec, image_bytes: u64) -> Result<ManagedFs> {
        Self::create_for(spec, image_bytes, 0)
    }

    /// [`create`](Self::create) for a tree of `entries` files and directories: file
    /// systems with a fixed inode count (ext2/3/4) get enough inodes for it.
    pub fn create_for(spec: &FsSpec, image_bytes: u64, entries: u64) -> Result<ManagedFs> {
        Self::create_in(spec, image_bytes, entries, None)
    }

    /// [`create_for`](Self::create_for), mounted at `at` (an existing empty directory the
    /// caller checked: `manyfiles mount`) instead of a mount point in the state directory.
    pub fn create_in(spec: &FsSpec, image_bytes: u64, entries: u64, at: Option<&Path>) -> Result<ManagedFs> {
        let key = next_key();
        let image_bytes = round_image(image_bytes);
        let tmpfs = spec.fs_type == FsType::Tmpfs;
        let nbd_dir = spec.class().map(|_| super::nbd_stack::dir_for(&key));
        let share_dir = spec.share().map(|_| super::share_stack::dir_for(&key));
        let image = match (&nbd_dir, tmpfs || spec.device().is_some()) {
            (Some(d), _) => super::nbd_stack::disk_file(d),
            (None, true) => PathBuf::new(),
            (None, false) => spec.backing_dir().join(format!("manyfiles-img-{key}.img")),
        };
        let mount_point = at.map(Path::to_path_buf).unwrap_or_else(|| registry::state_dir().join(format!("mnt-{key}")));
        let mut fs = ManagedFs {
            spec: spec.clone(),
            mount_point,
            tmpfs_source: format!("manyfiles-{key}"),
            details: ManagedDetails {
                spec: spec.label(),
                fs_type: spec.share().map_or(spec.fs_type.name(), |s| s.proto.mountinfo_type()).to_string(),
                block_size: spec.block,
                backing: spec.backing_name().to_string(),
                image,
                image_bytes,
                device: None,
                mkfs_command: Vec::new(),
                mkfs_version: String::new(),
                mount_command: Vec::new(),
                mount_options: String::new(),
                fuse: spec.fs_type.is_fuse() || share_dir.is_some(),
                formats: 0,
                entries: (entries > 0).then_some(entries),
                device_info: None,
                class: None,
                share: None,
            },
            reg: None,
            image_created: false,
            mp_created: at.is_some(), // checked in place of creating; never removed below
            nbd_dir,
            share_dir,
            export: None,
            done: false,
        };
        match fs.build(&key) {
            Ok(()) => Ok(fs),
            Err(e) => {
                if let Err(t) = fs.teardown() {
                    eprintln!("manyfiles: cleaning up after a failed create: {t}");
                }
                Err(e)
            }
        }
    }

    fn build(&mut self, key: &str) -> Result<()> {
        let tmpfs = self.spec.fs_type == FsType::Tmpfs;
        let mut rec = registry::own_record(&self.details.spec);
        rec.mount_point = Some(self.mount_point.clone());
        if let Some(share) = self.spec.share().cloned() {
            return self.build_share(key, rec, &share);
        }
        if tmpfs {
            rec.tmpfs_source = Some(self.tmpfs_source.clone());
        } else if self.spec.device().is_none() {
            rec.image = Some(self.details.image.clone());
        }
        if self.spec.device().is_some() {
            // A real device: all interlocks again (something may have claimed it since
            // the checks), recorded so cleanup can unmount it, never an image or loop.
            let (res, info) = super::device::check(&self.spec)?;
            let dev = res.path.display().to_string();
            rec.device = Some(dev.clone());
            self.reg = Some(registry::register(key, rec)?);
            self.details.image_bytes = info.size_bytes;
            self.details.device = Some(dev);
            super::device::announce(&self.details.spec, &info);
            self.details.device_info = Some(info);
            self.details.mkfs_version = tool_version(self.spec.fs_type);
            self.format()?;
        } else if let Some(class) = self.spec.class().cloned() {
            // A device class: the registry names the stack's directory before nbdkit and
            // nbdfuse start, the loop device goes on nbdfuse's file with direct I/O.
            let dir = self.nbd_dir.clone().expect("class has a stack directory");
            rec.nbd_dir = Some(dir.clone());
            self.reg = Some(registry::register(key, rec)?);
            self.details.class = Some(super::nbd_stack::start(&dir, &class, self.details.image_bytes)?);
            let img = self.details.image.to_string_lossy().into_owned();
            let out =
                run_tool(&argv(&["losetup", "--direct-io=on", "--find", "--show", &img])).map_err(Error::failed)?;
            let dev = out.trim().to_string();
            if !dev.starts_with("/dev/loop") {
                return Err(Error::failed(format!("losetup printed '{dev}', not a loop device")));
            }
            self.details.device = Some(dev.clone());
            self.reg.as_mut().expect("registered").update(|r| r.loop_device = Some(dev))?;
            self.details.mkfs_version = tool_version(self.spec.fs_type);
            self.format()?;
        } else {
            self.reg = Some(registry::register(key, rec)?);
        }
        if !tmpfs && self.spec.device().is_none() && self.nbd_dir.is_none() {
            let img = &self.details.image;
            let f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(img)
                .map_err(|e| Error::failed(format!("cannot create the image {}: {e}", img.display())))?;
            self.image_created = true;
            f.set_len(self.details.image_bytes)
                .map_err(|e| Error::failed(format!("cannot size the image {}: {e}", img.display())))?;
            drop(f);
            let out =
                run_tool(&argv(&["losetup", "--find", "--show", &img.to_string_lossy()])).map_err(Error::failed)?;
            let dev = out.trim().to_string();
            if !dev.starts_with("/dev/loop") {
                return Err(Error::failed(format!("losetup printed '{dev}', not a loop device")));
            }
            self.details.device = Some(dev.clone());
            self.reg.as_mut().expect("registered").update(|r| r.loop_device = Some(dev))?;
            self.details.mkfs_version = tool_version(self.spec.fs_type);
            self.format()?;
        } else if tmpfs {
            self.details.mkfs_version = format!("kernel {}", kernel_release());
            self.details.formats = 1;
        }
        if !self.mp_created {
            std::fs::DirBuilder::new().mode(0o755).create(&self.mount_point).map_err(|e| {
                Error::failed(format!("cannot create the mount point {}: {e}", self.mount_point.display()))
            })?;
            self.mp_created = true;
        }
        self.mount()?;
        Ok(())
    }

    /// A share (see [`super::share_stack`]): the record names the stack's directory and
    /// the client's mount first; then the export (its own record, naming the stack's
    /// directory too, for `umount`), the server and proxy, the client.
    fn build_share(&mut self, key: &str, mut rec: registry::Record, share: &super::share::ShareSpec) -> Result<()> {
        let dir = self.share_dir.clone().expect("share has a stack directory");
        rec.share_dir = Some(dir.clone());
        rec.fuse_source = Some(super::share_stack::fsname(&dir));
        self.reg = Some(registry::register(key, rec)?);
        let entries = self.details.entries.unwrap_or(0);
        let mut export = Box::new(ManagedFs::create_for(&share.export, self.details.image_bytes, entries)?);
        let in_stack = export.reg.as_mut().expect("registered").update(|r| r.share_dir = Some(dir.clone()));
        self.export = Some(export);
        in_stack?;
        let export = self.export.as_deref().expect("just set");
        self.details.mkfs_version = export.details.mkfs_version.clone();
        let d = super::share_stack::start(&dir, share, export, &self.mount_point)?;
        // What the target lines say it was "made by": one sentence, the argv are in `share`.
        self.details.mkfs_command = vec![format!(
            "{} through toxiproxy (+{} ms server to client) from {}, exporting {}",
            d.client_command[0], d.latency_toxic_ms, d.server_command[0], export.details.spec
        )];
        self.details.share = Some(d);
        if !self.mp_created {
            std::fs::DirBuilder::new().mode(0o755).create(&self.mount_point).map_err(|e| {
                Error::failed(format!("cannot create the mount point {}: {e}", self.mount_point.display()))
            })?;
            self.mp_created = true;
        }
        self.mount()
    }

    fn mkfs_argv(&self) -> Vec<String> {
        let dev = self.details.device.clone().unwrap_or_default();
        let b = self.spec.block.map(|b| b.to_string());
        let mut v: Vec<String> = Vec::new();
        let t = self.spec.fs_type;
        match t {
            FsType::Ext2 | FsType::Ext3 | FsType::Ext4 => {
                // Initialise inode tables and journal now: no ext4lazyinit thread writing
                // in the background while we measure.
                v.extend(argv(&[
                    &format!("mkfs.{}", t.name()),
                    "-q",
                    "-F",
                    "-E",
                    "lazy_itable_init=0,lazy_journal_init=0",
                ]));
                match &b {
                    Some(b) => v.extend(argv(&["-b", b])),
                    // mke2fs gives images under 512 MiB 1 KiB blocks ("small" usage type);
                    // a test file system should behave like a real one: 4 KiB.
                    None => v.extend(argv(&["-b", "4096"])),
                }
                // The inode count is fixed at mkfs (one per 16 KiB by default: 32,768 in
                // 512 MiB, too few for 65,536 small files): a quarter more than the tree.
                if let Some(n) = self.details.entries {
                    v.extend(argv(&["-N", &inodes_for(n).to_string()]));
                }
            }
            FsType::Xfs => {
                v.extend(argv(&["mkfs.xfs", "-q", "-f"]));
                if let Some(b) = &b {
                    v.extend(argv(&["-b", &format!("size={b}")]));
                }
            }
            FsType::Btrfs => {
                v.extend(argv(&["mkfs.btrfs", "-q", "-f"]));
                if let Some(b) = &b {
                    v.extend(argv(&["-s", b]));
                }
            }
            FsType::Ntfs => {
                // -Q: quick format (no zeroing), -F: our loop device has no partition geometry.
                v.extend(argv(&["mkfs.ntfs", "-Q", "-q", "-F"]));
                if let Some(b) = &b {
                    v.extend(argv(&["-c", b]));
                }
            }
            FsType::Exfat => {
                v.push("mkfs.exfat".into());
                if let Some(b) = &b {
                    v.extend(argv(&["-c", &fmt_block(b.parse::<u64>().unwrap_or(0))]));
                }
            }
            FsType::Tmpfs => return v,
        }
        v.push(dev);
        v
    }

    fn format(&mut self) -> Result<()> {
        let cmd = self.mkfs_argv();
        self.details.mkfs_command = cmd.clone();
        // Right after an unmount a FUSE daemon may still hold the device for a moment.
        let mut last = String::new();
        for i in 0..4 {
            if crate::signals::pending() != 0 {
                break;
            }
            match run_tool_sized(&cmd, self.details.image_bytes) {
                Ok(_) => {
                    self.details.formats += 1;
                    return Ok(());
                }
                Err(e) => last = e,
            }
            std::thread::sleep(std::time::Duration::from_millis(200 * (i + 1)));
        }
        Err(Error::failed(format!("{}: {last}", self.details.spec)))
    }

    fn mount_argv(&self) -> Vec<String> {
        let mp = self.mount_point.to_string_lossy().into_owned();
        let dev = self.details.device.clone().unwrap_or_default();
        match self.spec.fs_type {
            FsType::Tmpfs => argv(&[
                "mount",
                "-t",
                "tmpfs",
                "-o",
                &format!("size={},mode=0755", self.details.image_bytes),
                &self.tmpfs_source,
                &mp,
            ]),
            // Both daemons mount with allow_other (exfat-fuse always, ntfs-3g by default)
            // and, for file systems without owners, mode 0777: any local user could
            // write. umask=022 shows everything as root's 0755 and turns on the kernel's
            // permission checks (default_permissions), as on a freshly made ext4.
            FsType::Ntfs => argv(&["ntfs-3g", "-o", &format!("big_writes,{FUSE_MODES}"), &dev, &mp]),
            FsType::Exfat => argv(&["mount.exfat-fuse", "-o", FUSE_MODES, &dev, &mp]),
            t => argv(&["mount", "-t", t.name(), &dev, &mp]),
        }
    }

    fn mount(&mut self) -> Result<()> {
        if let (Some(dir), Some(d)) = (&self.share_dir, &self.details.share) {
            super::share_stack::mount_client(dir, d, &self.mount_point)?;
            self.details.mount_command = d.client_command.clone();
            self.details.mount_options =
                mounts_at(&self.mount_point).last().map(|m| m.options.clone()).unwrap_or_default();
            self.details.formats += 1;
            return Ok(());
        }
        let cmd = self.mount_argv();
        self.details.mount_command = cmd.clone();
        run_tool(&cmd).map_err(|e| Error::failed(format!("{}: {e}", self.details.spec)))?;
        let m = mounts_at(&self.mount_point);
        let Some(top) = m.last() else {
            return Err(Error::failed(format!(
                "{}: {} is not mounted after `{}`",
                self.details.spec,
                self.mount_point.display(),
                cmd.join(" ")
            )));
        };
        let want = self.spec.fs_type.mountinfo_type();
        if top.fs_type != want {
            return Err(Error::failed(format!("{}: mounted as {}, expected {want}", self.details.spec, top.fs_type)));
        }
        self.details.mount_options = top.options.clone();
        Ok(())
    }

    pub fn mount_point(&self) -> &Path {
        &self.mount_point
    }

    pub fn details(&self) -> &ManagedDetails {
        &self.details
    }

    /// The processes serving this file system: for a FUSE one, those holding its device
    /// open (the daemon: ntfs-3g, mount.exfat-fuse). Empty for a kernel file system.
    /// A device class adds its nbdkit and nbdfuse.
    pub fn serving_pids(&self) -> Vec<u32> {
        let mut v = match (&self.details.device, self.details.fuse) {
            (Some(dev), true) => super::holders_of(Path::new(dev)),
            _ => Vec::new(),
        };
        if let Some(d) = &self.nbd_dir {
            v.extend(super::nbd_stack::daemon_pids(d));
        }
        if let Some(d) = &self.share_dir {
            v.extend(super::share_stack::daemon_pids(d));
            v.extend(self.export.iter().flat_map(|e| e.serving_pids()));
        }
        v
    }

    /// Leave the file system mounted when this value goes (`manyfiles mount`): the record
    /// becomes a `<key>.mount` ([`registry::Registration::into_persistent`]), for
    /// `manyfiles umount DIR` (or `cleanup --mounts`) to take down; plain `cleanup`, of
    /// this build or an older one, leaves it alone.
    pub fn keep_mounted(mut self) -> Result<PathBuf> {
        if let Some(export) = self.export.take() {
            export.keep_mounted()?;
        }
        let reg = self.reg.take().expect("registered");
        let path = reg.into_persistent()?;
        self.done = true;
        Ok(path)
    }

    pub fn spec(&self) -> &FsSpec {
        &self.spec
    }

    /// Fresh format for the next trial: unmount, mkfs again, mount again.
    pub fn refresh(&mut self) -> Result<()> {
        if self.done {
            return Err(Error::failed(format!("{}: refresh after teardown", self.details.spec)));
        }
        unmount(&self.mount_point).map_err(|e| Error::failed(format!("{}: {e}", self.details.spec)))?;
        if let Some(export) = self.export.as_mut() {
            export.refresh()?; // the client is down: the server serves no file from it
        } else if self.spec.fs_type == FsType::Tmpfs {
            self.details.formats += 1;
        } else {
            self.format()?;
        }
        self.mount()
    }

    /// Unmount, detach the loop device, delete the image and the mount point, unregister
    /// (a real device is only unmounted: `image_created` is never set for it).
    /// Idempotent; on a problem the registry record is kept (for `cleanup`).
    pub fn teardown(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        let mut problems: Vec<String> = Vec::new();
        if !mounts_at(&self.mount_point).is_empty() {
            if let Err(e) = unmount(&self.mount_point) {
                problems.push(e);
            }
        }
        if self.spec.fs_type != FsType::Tmpfs && self.image_created {
            let img = &self.details.image;
            let mut devs = loops_backed_by(img);
            if let Some(d) = &self.details.device {
                if loop_backing_file(d).as_deref() == Some(img.as_path()) && !devs.contains(d) {
                    devs.push(d.clone());
                }
            }
            for d in devs {
                if let Err(e) = detach_loop(&d) {
                    problems.push(e);
                }
            }
            match std::fs::remove_file(img) {
                Ok(()) => self.image_created = false,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.image_created = false,
                Err(e) => problems.push(format!("cannot delete {}: {e}", img.display())),
            }
        }
        if let Some(d) = &self.nbd_dir {
            for dev in loops_backed_by(&self.details.image) {
                if let Err(e) = detach_loop(&dev) {
                    problems.push(e);
                }
            }
            if problems.is_empty() {
                if let Err(e) = super::nbd_stack::stop(d) {
                    problems.push(e);
                }
            }
        }
        if let Some(d) = &self.share_dir {
            if problems.is_empty() {
                if let Err(e) = super::share_stack::stop(d) {
                    problems.push(e);
                }
            }
            if let Some(e) = self.export.as_mut().filter(|_| problems.is_empty()) {
                if let Err(e) = e.teardown() {
                    problems.push(e.to_string());
                }
            }
        }
        let own_mp = self.mount_point.starts_with(registry::state_dir());
        if self.mp_created && own_mp && mounts_at(&self.mount_point).is_empty() {
            match std::fs::remove_dir(&self.mount_point) {
                Ok(()) => self.mp_created = false,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.mp_created = false,
                Err(e) => problems.push(format!("cannot remove {}: {e}", self.mount_point.display())),
            }
        }
        if problems.is_empty() {
            if let Some(r) = self.reg.take() {
                r.unregister()?;
            }
            self.done = true;
            Ok(())
        } else {
            Err(Error::failed(format!("{}: teardown: {}", self.details.spec, problems.join("; "))))
        }
    }
}

impl Drop for ManagedFs {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            eprintln!("manyfiles: {e} (run the cleanup later to remove what is left)");
        }
    }
}

fn argv(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Loop devices want whole 4 KiB pages; round the image size up.
fn round_image(b: u64) -> u64 {
    b.div_ceil(4096) * 4096
}

/// `<runid>-<n>`, unique per process and call.
fn next_key() -> String {
    static RUN: OnceLock<String> = OnceLock::new();
    static N: AtomicU64 = AtomicU64::new(0);
    let run = RUN.get_or_init(super::rundir::run_id);
    format!("{run}-{}", N.fetch_add(1, Ordering::Relaxed))
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string()
}

/// First line of the mkfs tool's version output.
fn tool_version(t: FsType) -> String {
    let (tool, flag) = match t {
        FsType::Ext2 | FsType::Ext3 | FsType::Ext4 => ("mke2fs", "-V"),
        FsType::Xfs => ("mkfs.xfs", "-V"),
        FsType::Btrfs => ("mkfs.btrfs", "--version"),
        FsType::Ntfs => ("mkfs.ntfs", "--version"),
        FsType::Exfat => ("mkfs.exfat", "-V"),
        FsType::Tmpfs => return format!("kernel {}", kernel_release()),
    };
    // Some tools print their version on stderr, some exit non-zero after printing it.
    let (so, se) = crate::helper::run_output(&argv(&[tool, flag]), crate::helper::DEFAULT_TIMEOUT);
    so.lines().chain(se.lines()).map(str::trim).find(|l| !l.is_empty()).unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimums_and_rounding() {
        assert_eq!(min_image_bytes(&FsSpec::parse("xfs").unwrap()), 300 << 20);
        assert!(min_image_bytes(&FsSpec::parse("btrfs").unwrap()) > 100 << 20);
        assert_eq!(round_image(1), 4096);
        assert_eq!(round_image(8192), 8192);
    }

    #[test]
    fn finds_tools_in_a_given_path() {
        assert!(find_in_path("sh", OsStr::new("/usr/bin:/bin")).is_some());
        assert!(find_in_path("sh", OsStr::new("/nonexistent")).is_none());
    }
}
