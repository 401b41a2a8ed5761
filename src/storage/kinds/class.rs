//! A device class (`TYPE[:BLOCK]@class:NAME|PARAMS`): an in-memory disk served by nbdkit
//! with delay and rate filters, exposed as a file by nbdfuse ([`super::super::nbd_stack`]),
//! attached to a loop device with direct I/O and formatted like an image.

use super::super::fsspec::FsSpec;
use super::super::managed::ManagedFs;
use super::super::nbd_stack;
use super::super::registry::{CleanupReport, MountEntry, Record};
use super::{Kind, KindRecord, Preflight};
use crate::error::Result;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What undoes a device class: the stack's private directory (its daemons name the
/// socket in it; its disk file is `fuse/nbd` there) and the loop device on that disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassRecord {
    pub nbd_dir: PathBuf,
    #[serde(default)]
    pub loop_device: Option<String>,
}

impl ClassRecord {
    fn disk(&self) -> PathBuf {
        nbd_stack::disk_file(&self.nbd_dir)
    }
}

impl Kind for ClassRecord {
    fn plan(spec: &FsSpec, key: &str) -> Option<Self> {
        spec.class().map(|_| ClassRecord { nbd_dir: nbd_stack::dir_for(key), loop_device: None })
    }

    fn preflight(&self, spec: &FsSpec, p: &mut Preflight) -> Result<()> {
        let label = spec.label();
        p.file_system(spec)?;
        p.loop_devices(&label)?;
        p.tools(&label, &nbd_stack::TOOLS)?;
        p.fuse_device(&label, "a device class")?;
        p.image(spec) // the disk is nbdkit's memory: counted against /dev/shm
    }

    /// The registry names the stack's directory before nbdkit and nbdfuse start; the loop
    /// device goes on nbdfuse's file with direct I/O.
    fn start(&self, fs: &mut ManagedFs) -> Result<()> {
        fs.register(KindRecord::Class(self.clone()))?;
        let class = fs.spec().class().cloned().expect("a class spec");
        let details = nbd_stack::start(&self.nbd_dir, &class, fs.details().image_bytes)?;
        fs.details_mut().class = Some(details);
        fs.attach_and_format(&self.disk(), true, |k, dev| {
            if let KindRecord::Class(r) = k {
                r.loop_device = Some(dev);
            }
        })
    }

    fn loop_file(&self) -> Option<PathBuf> {
        Some(self.disk())
    }

    fn serving_pids(&self, _rec: &Record) -> Vec<u32> {
        nbd_stack::daemon_pids(&self.nbd_dir)
    }

    fn owns_mount(&self, m: &MountEntry) -> bool {
        self.loop_device.as_deref() == Some(m.source.as_str()) || super::loop_of(m, &self.disk())
    }

    /// The loop devices on the disk, then nbdfuse and nbdkit.
    fn stop(&self, _rec: &Record, rep: &mut CleanupReport) {
        super::detach_loops(&self.disk(), rep);
        if !rep.problems.is_empty() {
            return;
        }
        let running = super::super::busy::commands_of(&nbd_stack::daemon_pids(&self.nbd_dir));
        match nbd_stack::stop(&self.nbd_dir) {
            Ok(()) => rep.stopped.extend(running),
            Err(e) => rep.problems.push(e),
        }
    }

    fn helper_names(&self) -> Vec<String> {
        [Some(self.disk().display().to_string()), self.loop_device.clone()].into_iter().flatten().collect()
    }
}
