//! An object store (`s3@rtt=…`): its bucket mounted through s3fs, through a latency proxy,
//! from an S3 server ([`super::super::object_stack`]) storing on a managed file system of
//! its own (its own record, naming the stack's directory too, as a share's export). A
//! fresh start stops the server, re-makes the export and starts the server again.

use super::super::fsspec::FsSpec;
use super::super::managed::ManagedFs;
use super::super::object_stack;
use super::super::registry::{CleanupReport, MountEntry, Record, mounts_at};
use super::{Kind, KindRecord, Preflight};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// What undoes an object store's client: its mount, by its FUSE source name
/// (`manyfiles-object-<key>`); the record's `share_dir` names the stack to stop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRecord {
    pub fuse_source: String,
}

impl Kind for ObjectRecord {
    fn plan(spec: &FsSpec, key: &str) -> Option<Self> {
        let s3 = spec.object().filter(|o| o.provider == object_stack::Provider::S3);
        s3.map(|_| ObjectRecord { fuse_source: object_stack::fsname(&object_stack::dir_for(key)) })
    }

    /// The stack's tools, then the export as a target of its own.
    fn preflight(&self, spec: &FsSpec, p: &mut Preflight) -> Result<()> {
        let object = spec.object().expect("an object store spec");
        object_stack::preflight(&spec.label(), p.search_path()).map_err(|e| p.bad(e))?;
        p.check(&object.export)
    }

    /// The record names the stack's directory and the client's mount first; then the
    /// export (its own record, naming the stack's directory too, for `umount`), the
    /// server and the proxy. The client is mounted by [`ready`](Kind::ready).
    fn start(&self, fs: &mut ManagedFs) -> Result<()> {
        let dir = object_stack::dir_for(fs.key());
        let object = fs.spec().object().cloned().expect("an object store spec");
        let mp = fs.mount_point().to_path_buf();
        let (export, export_spec, mkfs_version) =
            super::start_export(fs, KindRecord::Object(self.clone()), &dir, &object.export)?;
        let d = object_stack::start(&dir, &object, export, &mp)?;
        let details = fs.details_mut();
        details.mkfs_version = mkfs_version;
        details.mkfs_command = vec![format!(
            "s3fs through toxiproxy (+{} ms server to client) from {} (gofakes3, bucket {}), storing on {export_spec}",
            d.latency_toxic_ms,
            object_stack::SERVER,
            d.bucket
        )];
        details.object = Some(Box::new(d));
        Ok(())
    }

    /// Mount the client (after `start`, and after every fresh export).
    fn ready(&self, fs: &mut ManagedFs) -> Result<()> {
        let dir = object_stack::dir_for(fs.key());
        let d = fs.details().object.clone().ok_or_else(|| Error::failed("the object store is not started"))?;
        object_stack::mount_client(&dir, &d, fs.mount_point())?;
        let options = mounts_at(fs.mount_point()).last().map(|m| m.options.clone()).unwrap_or_default();
        let details = fs.details_mut();
        details.mount_command = d.client_command.clone();
        details.mount_options = options;
        details.formats += 1;
        Ok(())
    }

    /// The client is down: [`reformat_stack`].
    fn reformat(&self, fs: &mut ManagedFs) -> Result<()> {
        reformat_stack(fs)
    }

    fn fs_type(&self, _spec: &FsSpec) -> &'static str {
        object_stack::MOUNT_TYPE
    }

    /// The client (s3fs).
    fn fuse(&self, _spec: &FsSpec) -> bool {
        true
    }

    fn serving_pids(&self, rec: &Record) -> Vec<u32> {
        rec.share_dir.as_deref().map(super::super::share_stack::daemon_pids).unwrap_or_default()
    }

    fn owns_mount(&self, m: &MountEntry) -> bool {
        m.fs_type.starts_with("fuse") && m.source == self.fuse_source
    }

    /// Its server, proxy and client (the export is its own record).
    fn stop(&self, rec: &Record, rep: &mut CleanupReport) {
        stop_stack(rec, rep)
    }

    fn cleaned_first(&self) -> bool {
        true
    }
}

/// A fresh object store (an S3 or a blob store's): its server stopped (it holds its
/// files open), its export made afresh, the server started again on it (same port, uid
/// and key; a blob store's container made again).
pub(super) fn reformat_stack(fs: &mut ManagedFs) -> Result<()> {
    use super::super::azblob_stack;
    let dir = object_stack::dir_for(fs.key());
    let d = fs.details().object.clone().ok_or_else(|| Error::failed("the object store is not started"))?;
    let blob = d.object.provider == object_stack::Provider::Azblob;
    let stopped = if blob { azblob_stack::stop_server(&dir) } else { object_stack::stop_server(&dir) };
    stopped.map_err(Error::failed)?;
    let export = fs.export_mut().ok_or_else(|| Error::failed("the object store has no export"))?;
    export.refresh()?;
    match blob {
        true => azblob_stack::restart_server(&dir, &d, export.mount_point()),
        false => object_stack::restart_server(&dir, &d, export.mount_point()),
    }
}

/// Stop the processes of the stack `rec` names (an S3 or a blob store's), unbind its
/// namespace and remove its directory, when nothing failed before.
pub(super) fn stop_stack(rec: &Record, rep: &mut CleanupReport) {
    let Some(d) = rec.share_dir.as_deref().filter(|_| rep.problems.is_empty()) else { return };
    let running = super::super::busy::commands_of(&super::super::share_stack::daemon_pids(d));
    match super::super::share_stack::stop(d) {
        Ok(()) => rep.stopped.extend(running),
        Err(e) => rep.problems.push(e),
    }
}
