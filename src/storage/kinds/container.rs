//! A container `pack` mounted read-only (tar, squashfs, erofs, ext4 image: [`crate::pack`]):
//! by the kernel on a loop device (`mount -o loop,ro`) or by a FUSE mounter. Made by
//! `pack::mount`, which registers it; cleaned before other records (its file may sit on
//! another record's file system). Its file belongs to a run directory: never deleted here.

use super::super::fsspec::FsSpec;
use super::super::managed::ManagedFs;
use super::super::registry::{CleanupReport, MountEntry, Record};
use super::{Kind, Preflight};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What undoes a container's mount: the mount (by its FUSE source, or a loop device on
/// the container's file) and that loop device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerRecord {
    #[serde(default)]
    pub image: Option<PathBuf>,
    #[serde(default)]
    pub fuse_source: Option<String>,
    /// Always true: what builds before kinds read to clean it first and keep its file.
    #[serde(default)]
    pub pack_mount: bool,
}

impl ContainerRecord {
    /// The record of `file` mounted by the kernel (`fuse_source` None) or by a FUSE
    /// mounter whose mounts carry `fuse_source`.
    pub fn new(file: PathBuf, fuse_source: Option<String>) -> Self {
        ContainerRecord { image: Some(file), fuse_source, pack_mount: true }
    }
}

impl Kind for ContainerRecord {
    /// Made by `pack`, never by an `--fs` spec.
    fn plan(_spec: &FsSpec, _key: &str) -> Option<Self> {
        None
    }

    fn preflight(&self, _spec: &FsSpec, _p: &mut Preflight) -> Result<()> {
        Ok(())
    }

    fn start(&self, _fs: &mut ManagedFs) -> Result<()> {
        Err(Error::failed("a container is mounted by pack, not formatted"))
    }

    fn owns_mount(&self, m: &MountEntry) -> bool {
        match &self.fuse_source {
            Some(src) => m.fs_type.starts_with("fuse") && m.source == *src,
            None => self.image.as_deref().is_some_and(|f| super::loop_of(m, f)),
        }
    }

    fn stop(&self, _rec: &Record, rep: &mut CleanupReport) {
        if let Some(f) = &self.image {
            super::detach_loops(f, rep);
        }
    }

    fn helper_names(&self) -> Vec<String> {
        self.image.iter().map(|p| p.display().to_string()).collect()
    }

    fn cleaned_first(&self) -> bool {
        true
    }
}
