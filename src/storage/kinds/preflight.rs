//! What [`Kind::preflight`](super::Kind::preflight) checks with: the tools' search path,
//! the image size, and the images' space per backing directory, summed over every target
//! before any is made.

use super::super::fsspec::FsSpec;
use super::super::managed::{format_tools, kernel_supports, min_image_bytes};
use super::KindRecord;
use crate::error::{Error, Result};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The flag every preflight problem names (bad input, exit 2).
const FLAG: &str = "--fs";

pub struct Preflight<'a> {
    search_path: &'a OsStr,
    image_bytes: u64,
    per_dir: Vec<(PathBuf, u64)>,
}

impl<'a> Preflight<'a> {
    /// Checks of images of `image_bytes` (rounded to whole pages) with tools from
    /// `search_path` (a PATH value).
    pub fn new(search_path: &'a OsStr, image_bytes: u64) -> Self {
        Preflight { search_path, image_bytes, per_dir: Vec::new() }
    }

    pub fn search_path(&self) -> &OsStr {
        self.search_path
    }

    /// Check `spec` through its kind.
    pub fn check(&mut self, spec: &FsSpec) -> Result<()> {
        let kind = KindRecord::plan(spec, "preflight")
            .ok_or_else(|| Error::bad(FLAG, format!("{}: no storage kind makes it", spec.label())))?;
        kind.kind().preflight(spec, self)
    }

    /// A problem of `spec`'s, as bad input.
    pub fn bad(&self, why: impl Into<String>) -> Error {
        Error::bad(FLAG, why)
    }

    /// `tools` (name, Debian package): the first missing one named with its package.
    pub fn tools(&self, label: &str, tools: &[(&str, &str)]) -> Result<()> {
        super::require_tools(label, tools, self.search_path).map_err(|e| self.bad(e))
    }

    /// The file system's own needs: mkfs (and a FUSE daemon), mount and umount, and the
    /// kernel's support (FUSE for ntfs and exfat).
    pub fn file_system(&self, spec: &FsSpec) -> Result<()> {
        let label = spec.label();
        self.tools(&label, &format_tools(spec.fs_type))?;
        self.tools(&label, &[("mount", "mount"), ("umount", "mount")])?;
        let t = spec.fs_type;
        if t.is_fuse() {
            if !Path::new("/dev/fuse").exists() || !kernel_supports("fuseblk") {
                return Err(self.bad(format!(
                    "{label}: this kernel has no FUSE support (no /dev/fuse or no fuseblk); try `modprobe fuse`"
                )));
            }
        } else if !kernel_supports(t.name()) {
            return Err(self.bad(format!("{label}: this kernel has no {} support", t.name())));
        }
        Ok(())
    }

    /// /dev/fuse, which `what` of `label` needs.
    pub fn fuse_device(&self, label: &str, what: &str) -> Result<()> {
        if Path::new("/dev/fuse").exists() {
            return Ok(());
        }
        Err(self.bad(format!("{label}: {what} needs FUSE (no /dev/fuse); try `modprobe fuse`")))
    }

    /// Loop devices (`losetup`, and the kernel's loop support).
    pub fn loop_devices(&self, label: &str) -> Result<()> {
        self.tools(label, &[("losetup", "mount")])?;
        if !Path::new("/dev/loop-control").exists() {
            // `loop` is not a file system, so kernel_supports only serves to modprobe it.
            kernel_supports("loop");
            if !Path::new("/dev/loop-control").exists() {
                return Err(self.bad("this kernel has no loop device support (/dev/loop-control missing)"));
            }
        }
        Ok(())
    }

    /// An image of `spec`'s in its backing directory: not below the type's minimum, the
    /// directory there; its bytes count in [`space`](Self::space).
    pub fn image(&mut self, spec: &FsSpec) -> Result<()> {
        let label = spec.label();
        let min = min_image_bytes(spec);
        if self.image_bytes < min {
            return Err(self.bad(format!(
                "{label}: the image size {} is below the minimum for {} ({} MiB); give a larger image size",
                crate::units::fmt_size(self.image_bytes as f64),
                spec.fs_type.name(),
                min.div_ceil(1 << 20)
            )));
        }
        let dir = spec.backing_dir();
        if !dir.is_dir() {
            return Err(self.bad(format!(
                "{label}: the backing directory {} {}",
                dir.display(),
                if dir.exists() { "is not a directory" } else { "does not exist" }
            )));
        }
        match self.per_dir.iter_mut().find(|(d, _)| *d == dir) {
            Some((_, n)) => *n += self.image_bytes,
            None => self.per_dir.push((dir, self.image_bytes)),
        }
        Ok(())
    }

    /// Every backing directory has room for the images counted in it.
    pub fn space(&self) -> Result<()> {
        for (dir, need) in &self.per_dir {
            let free = rustix::fs::statvfs(dir)
                .map(|v| v.f_bavail.saturating_mul(v.f_frsize))
                .map_err(|e| self.bad(format!("cannot check free space in {}: {e}", dir.display())))?;
            if free < *need {
                return Err(self.bad(format!(
                    "{} has {} free, the test file systems need {}; use a smaller image size or another backing",
                    dir.display(),
                    crate::units::fmt_size(free as f64),
                    crate::units::fmt_size(*need as f64)
                )));
            }
        }
        Ok(())
    }
}
