//! A tmpfs (`tmpfs`): the kernel's memory, no image, no mkfs; a fresh one is a fresh mount.

use super::super::fsspec::{FsSpec, FsType};
use super::super::managed::ManagedFs;
use super::super::registry::{CleanupReport, MountEntry, Record};
use super::{Kind, KindRecord, Preflight};
use crate::error::Result;
use serde::{Deserialize, Serialize};

/// What undoes a tmpfs: its mount, found by its source name (`manyfiles-<key>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TmpfsRecord {
    pub tmpfs_source: String,
}

impl Kind for TmpfsRecord {
    fn plan(spec: &FsSpec, key: &str) -> Option<Self> {
        (spec.fs_type == FsType::Tmpfs).then(|| TmpfsRecord { tmpfs_source: format!("manyfiles-{key}") })
    }

    fn preflight(&self, spec: &FsSpec, p: &mut Preflight) -> Result<()> {
        p.file_system(spec)?;
        p.image(spec) // its size is taken from the backing directory's RAM
    }

    fn start(&self, fs: &mut ManagedFs) -> Result<()> {
        fs.register(KindRecord::Tmpfs(self.clone()))?;
        fs.formatted_without_mkfs();
        Ok(())
    }

    fn ready(&self, fs: &mut ManagedFs) -> Result<()> {
        let size = format!("size={},mode=0755", fs.details().image_bytes);
        let mp = fs.mount_point().to_string_lossy().into_owned();
        let argv = ["mount", "-t", "tmpfs", "-o", &size, &self.tmpfs_source, &mp];
        fs.mount_with(argv.iter().map(|s| s.to_string()).collect())
    }

    fn reformat(&self, fs: &mut ManagedFs) -> Result<()> {
        fs.formatted_without_mkfs();
        Ok(())
    }

    fn owns_mount(&self, m: &MountEntry) -> bool {
        m.fs_type == "tmpfs" && m.source == self.tmpfs_source
    }

    fn stop(&self, _rec: &Record, _rep: &mut CleanupReport) {}
}
