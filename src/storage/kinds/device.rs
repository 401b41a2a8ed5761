//! A real block device (`TYPE[:BLOCK]@dev:/dev/NAME`), formatted in place: no image, no
//! loop device. Its interlocks are [`super::super::device`]'s; undoing it only unmounts,
//! the device itself is never touched.

use super::super::fsspec::FsSpec;
use super::super::managed::ManagedFs;
use super::super::registry::{CleanupReport, MountEntry, Record};
use super::{Kind, KindRecord, Preflight};
use crate::error::Result;
use serde::{Deserialize, Serialize};

/// What undoes a device: its mount, found by the device as its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceRecord {
    pub device: String,
}

impl Kind for DeviceRecord {
    fn plan(spec: &FsSpec, _key: &str) -> Option<Self> {
        spec.device().map(|d| DeviceRecord { device: d.display().to_string() })
    }

    /// The file system's tools; size, state and interlocks are checked apart
    /// ([`super::super::device::check_all`]).
    fn preflight(&self, spec: &FsSpec, p: &mut Preflight) -> Result<()> {
        p.file_system(spec)
    }

    /// All interlocks again (something may have claimed the device since the checks),
    /// recorded (by its resolved node) so cleanup can unmount it.
    fn start(&self, fs: &mut ManagedFs) -> Result<()> {
        let (res, info) = super::super::device::check(fs.spec())?;
        let dev = res.path.display().to_string();
        fs.register(KindRecord::Device(DeviceRecord { device: dev.clone() }))?;
        fs.on_device(dev, info);
        fs.format()
    }

    fn owns_mount(&self, m: &MountEntry) -> bool {
        m.source == self.device
    }

    fn stop(&self, _rec: &Record, _rep: &mut CleanupReport) {}

    fn helper_names(&self) -> Vec<String> {
        vec![self.device.clone()]
    }
}
