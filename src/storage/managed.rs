//! Managed test file systems: an image file → loop device → mkfs → mount, made by the
//! tool, reformatted between trials, and removed at the end (or by
//! [`registry::cleanup`](super::registry::cleanup) after a kill).
//!
//! External tools (mkfs.*, losetup, mount, umount, ntfs-3g and mount.exfat-fuse: what
//! people use and trust) run through [`crate::helper`], with deadlines and drained
//! output, and their exact argv is recorded in the results. Each resource is registered
//! before it exists, so a `kill -9` at any point leaves nothing the registry does not know
//! about.
//!
//! What lies under the mount point is the storage kind's ([`super::kinds`]: an image and
//! its loop device, a real device, a tmpfs, a device class, a share): this file drives
//! every kind through [`Kind`] (preflight, start, ready, reformat, serving processes,
//! stop) and holds what they share (the record, losetup → mkfs, the mount point, mount).
//! File system types (mkfs, sizes) are [`super::format`]'s.

pub(crate) use super::format::format_tools;
pub use super::format::{FUSE_MODES, entry_overhead, find_in_path, inodes_for, kernel_supports, min_image_bytes};
use super::format::{argv, kernel_release, mkfs_argv, mount_argv, tool_version};
use super::fsspec::FsSpec;
use super::kinds::{KindRecord, Preflight};
use super::registry::{self, CleanupReport, Record, Registration, mounts_at, run_tool, run_tool_sized, unmount};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::ffi::OsStr;
use std::os::unix::fs::DirBuilderExt;
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
    /// An object store (`s3`): server, proxy, s3fs and the export under them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Box<super::object_stack::ObjectDetails>>,
}

/// A file system the tool made and mounted; torn down on drop.
pub struct ManagedFs {
    spec: FsSpec,
    key: String,
    mount_point: PathBuf,
    /// What lies under the mount point (the record's kind, as planned for `key`).
    kind: KindRecord,
    details: ManagedDetails,
    reg: Option<Registration>,
    mp_created: bool,
    /// A share's exported file system.
    export: Option<Box<ManagedFs>>,
    done: bool,
}

impl ManagedFs {
    /// Check everything before creating anything (see the module docs); tools are looked
    /// up in $PATH.
    pub fn preflight(specs: &[FsSpec], image_bytes: u64) -> Result<()> {
        let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
        Self::preflight_in(specs, image_bytes, &path)
    }

    /// [`preflight`](Self::preflight) with tools looked up in `search_path` (for tests):
    /// every spec through its kind, then the space of all images together.
    pub fn preflight_in(specs: &[FsSpec], image_bytes: u64, search_path: &OsStr) -> Result<()> {
        if !rustix::process::geteuid().is_root() {
            return Err(Error::bad(
                "--fs",
                "formatting test file systems needs root; use --target DIR to measure an existing directory",
            ));
        }
        let mut p = Preflight::new(search_path, round_image(image_bytes));
        for spec in specs {
            p.check(spec)?;
        }
        p.space()
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
        let kind = KindRecord::plan(spec, &key)
            .ok_or_else(|| Error::failed(format!("{}: no storage kind makes it", spec.label())))?;
        let mount_point = at.map(Path::to_path_buf).unwrap_or_else(|| registry::state_dir().join(format!("mnt-{key}")));
        let mut fs = ManagedFs {
            spec: spec.clone(),
            key,
            mount_point,
            details: ManagedDetails {
                spec: spec.label(),
                fs_type: kind.kind().fs_type(spec).to_string(),
                block_size: spec.block,
                backing: spec.backing_name().to_string(),
                image: kind.kind().loop_file().unwrap_or_default(),
                image_bytes: round_image(image_bytes),
                device: None,
                mkfs_command: Vec::new(),
                mkfs_version: String::new(),
                mount_command: Vec::new(),
                mount_options: String::new(),
                fuse: kind.kind().fuse(spec),
                formats: 0,
                entries: (entries > 0).then_some(entries),
                device_info: None,
                class: None,
                share: None,
                object: None,
            },
            kind,
            reg: None,
            mp_created: at.is_some(), // checked in place of creating; never removed below
            export: None,
            done: false,
        };
        match fs.build() {
            Ok(()) => Ok(fs),
            Err(e) => {
                if let Err(t) = fs.teardown() {
                    eprintln!("manyfiles: cleaning up after a failed create: {t}");
                }
                Err(e)
            }
        }
    }

    /// The kind starts (registered first), the mount point is made, the kind mounts.
    fn build(&mut self) -> Result<()> {
        let kind = self.kind.clone();
        kind.kind().start(self)?;
        if !self.mp_created {
            std::fs::DirBuilder::new().mode(0o755).create(&self.mount_point).map_err(|e| {
                Error::failed(format!("cannot create the mount point {}: {e}", self.mount_point.display()))
            })?;
            self.mp_created = true;
        }
        kind.kind().ready(self)
    }

    /// Register this file system's record, of `kind`, before what it names exists.
    pub(crate) fn register(&mut self, kind: KindRecord) -> Result<()> {
        self.register_as(kind, None)
    }

    /// [`register`](Self::register) as a part of the share stack in `dir`.
    pub(crate) fn register_in_stack(&mut self, kind: KindRecord, dir: &Path) -> Result<()> {
        self.register_as(kind, Some(dir.to_path_buf()))
    }

    fn register_as(&mut self, kind: KindRecord, share_dir: Option<PathBuf>) -> Result<()> {
        let mut rec = registry::own_record(&self.details.spec);
        rec.mount_point = Some(self.mount_point.clone());
        rec.share_dir = share_dir;
        rec.kind = kind;
        self.reg = Some(registry::register(&self.key, rec)?);
        Ok(())
    }

    /// Change the registered record and write it out before acting on it.
    pub(crate) fn update_record(&mut self, f: impl FnOnce(&mut Record)) -> Result<()> {
        self.reg.as_mut().ok_or_else(|| Error::failed("not registered"))?.update(f)
    }

    /// Attach `file` to a loop device (`direct` I/O: a device class's disk), record the
    /// device in the kind's record (`set`), then format it.
    pub(crate) fn attach_and_format(
        &mut self,
        file: &Path,
        direct: bool,
        set: impl FnOnce(&mut KindRecord, String),
    ) -> Result<()> {
        let file = file.to_string_lossy();
        let losetup: &[&str] = if direct { &["losetup", "--direct-io=on"] } else { &["losetup"] };
        let cmd = argv(&[losetup, &["--find", "--show", &file]].concat());
        let out = run_tool(&cmd).map_err(Error::failed)?;
        let dev = out.trim().to_string();
        if !dev.starts_with("/dev/loop") {
            return Err(Error::failed(format!("losetup printed '{dev}', not a loop device")));
        }
        self.details.device = Some(dev.clone());
        self.update_record(|r| set(&mut r.kind, dev))?;
        self.details.mkfs_version = tool_version(self.spec.fs_type);
        self.format()
    }

    /// Formatted on the real device `dev`, described by `info` (then [`format`](Self::format)).
    pub(crate) fn on_device(&mut self, dev: String, info: super::device::DeviceInfo) {
        self.details.image_bytes = info.size_bytes;
        self.details.device = Some(dev);
        super::device::announce(&self.details.spec, &info);
        self.details.device_info = Some(info);
        self.details.mkfs_version = tool_version(self.spec.fs_type);
    }

    /// One more fresh file system that no mkfs made (tmpfs: a new mount).
    pub(crate) fn formatted_without_mkfs(&mut self) {
        if self.details.mkfs_version.is_empty() {
            self.details.mkfs_version = format!("kernel {}", kernel_release());
        }
        self.details.formats += 1;
    }

    /// mkfs on the device (a few tries: right after an unmount a FUSE daemon may still
    /// hold it for a moment).
    pub(crate) fn format(&mut self) -> Result<()> {
        let dev = self.details.device.clone().unwrap_or_default();
        let cmd = mkfs_argv(&self.spec, &dev, self.details.entries);
        self.details.mkfs_command = cmd.clone();
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

    /// Mount the formatted device at the mount point ([`mount_argv`]).
    pub(crate) fn mount_formatted(&mut self) -> Result<()> {
        let dev = self.details.device.clone().unwrap_or_default();
        self.mount_with(mount_argv(self.spec.fs_type, &dev, &self.mount_point))
    }

    /// Run `cmd`, then check that the mount point holds the spec's type.
    pub(crate) fn mount_with(&mut self, cmd: Vec<String>) -> Result<()> {
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

    pub(crate) fn details_mut(&mut self) -> &mut ManagedDetails {
        &mut self.details
    }

    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    pub fn spec(&self) -> &FsSpec {
        &self.spec
    }

    /// A share's exported file system, kept (and torn down) with it.
    pub(crate) fn set_export(&mut self, export: ManagedFs) -> &ManagedFs {
        self.export.insert(Box::new(export))
    }

    pub(crate) fn export_mut(&mut self) -> Option<&mut ManagedFs> {
        self.export.as_deref_mut()
    }

    /// The processes serving this file system: for a FUSE one, those holding its device
    /// open (the daemon: ntfs-3g, mount.exfat-fuse; none for a kernel file system), and
    /// what its kind runs (nbdkit and nbdfuse; a share's stack, and its export's).
    pub fn serving_pids(&self) -> Vec<u32> {
        let mut v = match (&self.details.device, self.details.fuse) {
            (Some(dev), true) => super::holders_of(Path::new(dev)),
            _ => Vec::new(),
        };
        if let Some(r) = &self.reg {
            v.extend(r.record.kind().serving_pids(&r.record));
        }
        v.extend(self.export.iter().flat_map(|e| e.serving_pids()));
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

    /// Fresh format for the next trial: unmount, format again (its kind's way), mount.
    pub fn refresh(&mut self) -> Result<()> {
        if self.done {
            return Err(Error::failed(format!("{}: refresh after teardown", self.details.spec)));
        }
        unmount(&self.mount_point).map_err(|e| Error::failed(format!("{}: {e}", self.details.spec)))?;
        let kind = self.kind.clone();
        kind.kind().reformat(self)?;
        kind.kind().ready(self)
    }

    /// Unmount, undo what the kind made as `cleanup` does from the record (loop devices,
    /// daemons, the image; a real device is only unmounted), tear the export down, remove
    /// the mount point, unregister. Idempotent; on a problem the registry record is kept
    /// (for `cleanup`).
    pub fn teardown(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        let mut rep = CleanupReport::default();
        if !mounts_at(&self.mount_point).is_empty() {
            if let Err(e) = unmount(&self.mount_point) {
                rep.problems.push(e);
            }
        }
        if let Some(r) = &self.reg {
            r.record.kind().stop(&r.record, &mut rep);
        }
        if let Some(e) = self.export.as_mut().filter(|_| rep.problems.is_empty()) {
            if let Err(e) = e.teardown() {
                rep.problems.push(e.to_string());
            }
        }
        let own_mp = self.mount_point.starts_with(registry::state_dir());
        if self.mp_created && own_mp && mounts_at(&self.mount_point).is_empty() {
            match std::fs::remove_dir(&self.mount_point) {
                Ok(()) => self.mp_created = false,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.mp_created = false,
                Err(e) => rep.problems.push(format!("cannot remove {}: {e}", self.mount_point.display())),
            }
        }
        if !rep.problems.is_empty() {
            return Err(Error::failed(format!("{}: teardown: {}", self.details.spec, rep.problems.join("; "))));
        }
        if let Some(r) = self.reg.take() {
            r.unregister()?;
        }
        self.done = true;
        Ok(())
    }
}

impl Drop for ManagedFs {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            eprintln!("manyfiles: {e} (run the cleanup later to remove what is left)");
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding() {
        assert_eq!(round_image(1), 4096);
        assert_eq!(round_image(8192), 8192);
    }
}
