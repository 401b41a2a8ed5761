//! A file share (`share:PROTO@rtt=…`): a FUSE client (sshfs, rclone) through a latency
//! proxy to a server ([`super::super::share_stack`]) exporting a managed file system of
//! its own (its own record, naming the stack's directory too). A fresh start re-makes the
//! export with the client unmounted.

use super::super::fsspec::FsSpec;
use super::super::managed::ManagedFs;
use super::super::registry::{CleanupReport, MountEntry, Record, mounts_at};
use super::super::share_stack;
use super::{Kind, KindRecord, Preflight};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// What undoes a share's client: its mount, by its FUSE source name
/// (`manyfiles-share-<key>`); the record's `share_dir` names the stack to stop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareRecord {
    pub fuse_source: String,
}

impl Kind for ShareRecord {
    fn plan(spec: &FsSpec, key: &str) -> Option<Self> {
        spec.share().map(|_| ShareRecord { fuse_source: share_stack::fsname(&share_stack::dir_for(key)) })
    }

    /// The stack's tools, then the export as a target of its own.
    fn preflight(&self, spec: &FsSpec, p: &mut Preflight) -> Result<()> {
        let share = spec.share().expect("a share spec");
        share_stack::preflight(&spec.label(), share, p.search_path()).map_err(|e| p.bad(e))?;
        p.check(&share.export)
    }

    /// The record names the stack's directory and the client's mount first; then the
    /// export (its own record, naming the stack's directory too, for `umount`), the
    /// server and the proxy. The client is mounted by [`ready`](Kind::ready).
    fn start(&self, fs: &mut ManagedFs) -> Result<()> {
        let dir = share_stack::dir_for(fs.key());
        let share = fs.spec().share().cloned().expect("a share spec");
        let mp = fs.mount_point().to_path_buf();
        let (export, export_spec, mkfs_version) =
            super::start_export(fs, KindRecord::Share(self.clone()), &dir, &share.export)?;
        let d = share_stack::start(&dir, &share, export, &mp)?;
        let details = fs.details_mut();
        details.mkfs_version = mkfs_version;
        // What the target lines say it was "made by": one sentence, the argv are in `share`.
        details.mkfs_command = vec![format!(
            "{} through toxiproxy (+{} ms server to client) from {}, exporting {export_spec}",
            d.client_command[0], d.latency_toxic_ms, d.server_command[0]
        )];
        details.share = Some(d);
        Ok(())
    }

    /// Mount the client (after `start`, and after every refresh of the export).
    fn ready(&self, fs: &mut ManagedFs) -> Result<()> {
        let dir = share_stack::dir_for(fs.key());
        let d = fs.details().share.clone().ok_or_else(|| Error::failed("the share's stack is not started"))?;
        share_stack::mount_client(&dir, &d, fs.mount_point())?;
        let options = mounts_at(fs.mount_point()).last().map(|m| m.options.clone()).unwrap_or_default();
        let details = fs.details_mut();
        details.mount_command = d.client_command.clone();
        details.mount_options = options;
        details.formats += 1;
        Ok(())
    }

    /// The client is down: the server serves no file from the export meanwhile.
    fn reformat(&self, fs: &mut ManagedFs) -> Result<()> {
        fs.export_mut().ok_or_else(|| Error::failed("the share has no export"))?.refresh()
    }

    fn fs_type(&self, spec: &FsSpec) -> &'static str {
        spec.share().map_or(spec.fs_type.name(), |s| s.proto.mountinfo_type())
    }

    /// The client (sshfs, rclone).
    fn fuse(&self, _spec: &FsSpec) -> bool {
        true
    }

    fn serving_pids(&self, rec: &Record) -> Vec<u32> {
        rec.share_dir.as_deref().map(share_stack::daemon_pids).unwrap_or_default()
    }

    fn owns_mount(&self, m: &MountEntry) -> bool {
        m.fs_type.starts_with("fuse") && m.source == self.fuse_source
    }

    /// Its server, proxy and client (the export is its own record).
    fn stop(&self, rec: &Record, rep: &mut CleanupReport) {
        let Some(d) = rec.share_dir.as_deref().filter(|_| rep.problems.is_empty()) else { return };
        let running = super::super::busy::commands_of(&share_stack::daemon_pids(d));
        match share_stack::stop(d) {
            Ok(()) => rep.stopped.extend(running),
            Err(e) => rep.problems.push(e),
        }
    }

    fn cleaned_first(&self) -> bool {
        true
    }
}
