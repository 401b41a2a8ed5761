//! An Azure Blob store (`azblob@rtt=…`): Azurite through a latency proxy
//! ([`super::super::azblob_stack`]), storing on a managed file system of its own (its own
//! record, naming the stack's directory too, as an S3 store's export). No client is
//! mounted: the mount point is a small tmpfs for the run directories' markers; the
//! native ops reach the container. A fresh start stops the server, re-makes the export,
//! starts the server again and makes the container.

use super::super::azblob_stack;
use super::super::fsspec::FsSpec;
use super::super::managed::ManagedFs;
use super::super::object_stack::{self, Provider};
use super::super::registry::{CleanupReport, MountEntry, Record, mounts_at, run_tool};
use super::{Kind, KindRecord, Preflight};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// What undoes a blob store's mount point: its tmpfs, by its source name
/// (`manyfiles-object-<key>`); the record's `share_dir` names the stack to stop. The
/// field is named as a tmpfs record's, so a build before this kind reads the record as a
/// tmpfs and unmounts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AzblobRecord {
    pub tmpfs_source: String,
}

impl Kind for AzblobRecord {
    fn plan(spec: &FsSpec, key: &str) -> Option<Self> {
        spec.object()
            .filter(|o| o.provider == Provider::Azblob)
            .map(|_| AzblobRecord { tmpfs_source: object_stack::fsname(&object_stack::dir_for(key)) })
    }

    /// The stack's tools, then the export as a target of its own.
    fn preflight(&self, spec: &FsSpec, p: &mut Preflight) -> Result<()> {
        let object = spec.object().expect("an object store spec");
        azblob_stack::preflight(&spec.label(), p.search_path()).map_err(|e| p.bad(e))?;
        p.check(&object.export)
    }

    /// The record names the stack's directory and the mount point's tmpfs first; then the
    /// export (its own record, naming the stack's directory too, for `umount`), the
    /// server, the proxy and the container.
    fn start(&self, fs: &mut ManagedFs) -> Result<()> {
        let dir = object_stack::dir_for(fs.key());
        let object = fs.spec().object().cloned().expect("an object store spec");
        let (export, export_spec, mkfs_version) =
            super::start_export(fs, KindRecord::Azblob(self.clone()), &dir, &object.export)?;
        let d = azblob_stack::start(&dir, &object, export)?;
        let details = fs.details_mut();
        details.mkfs_version = mkfs_version;
        details.mkfs_command = vec![format!(
            "toxiproxy (+{} ms server to client) in front of {} (Azurite, account {}, container {}), storing on \
             {export_spec}; no client mounted",
            d.latency_toxic_ms,
            azblob_stack::SERVER,
            azblob_stack::ACCOUNT,
            d.bucket
        )];
        details.object = Some(Box::new(d));
        Ok(())
    }

    /// The mount point's tmpfs (after `start`, and after every fresh export).
    fn ready(&self, fs: &mut ManagedFs) -> Result<()> {
        let argv = azblob_stack::mount_point_argv(&self.tmpfs_source, fs.mount_point());
        run_tool(&argv).map_err(|e| Error::failed(format!("{}: {e}", fs.details().spec)))?;
        let Some(m) = mounts_at(fs.mount_point()).pop().filter(|m| self.owns_mount(m)) else {
            return Err(Error::failed(format!("{}: the mount point's tmpfs is not mounted", fs.details().spec)));
        };
        let details = fs.details_mut();
        details.mount_command = argv;
        details.mount_options = m.options;
        details.formats += 1;
        Ok(())
    }

    /// The mount point is down: as an S3 store's ([`super::object::reformat_stack`]).
    fn reformat(&self, fs: &mut ManagedFs) -> Result<()> {
        super::object::reformat_stack(fs)
    }

    fn fs_type(&self, _spec: &FsSpec) -> &'static str {
        "azblob"
    }

    fn fuse(&self, _spec: &FsSpec) -> bool {
        false
    }

    fn serving_pids(&self, rec: &Record) -> Vec<u32> {
        rec.share_dir.as_deref().map(super::super::share_stack::daemon_pids).unwrap_or_default()
    }

    fn owns_mount(&self, m: &MountEntry) -> bool {
        m.fs_type == "tmpfs" && m.source == self.tmpfs_source
    }

    /// Its server and proxy (the export is its own record).
    fn stop(&self, rec: &Record, rep: &mut CleanupReport) {
        super::object::stop_stack(rec, rep)
    }

    fn cleaned_first(&self) -> bool {
        true
    }
}
