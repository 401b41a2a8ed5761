//! Storage kinds: what lies under a target's mount point, one file each, reached through
//! one trait ([`Kind`]). The registry stores each record's kind tag (`"kind"`) and the
//! kind's own fields beside the fields every record has; `cleanup`, `mount`/`umount` and
//! the experiments' targets ([`super::managed::ManagedFs`]) reach every kind through the
//! trait. A new kind is one new file here and one line in the list at the bottom.
//!
//! The kind's fields keep the names the flat records of earlier builds used (`image`,
//! `loop_device`, `nbd_dir`, …): an earlier build reads a record of this one, and this one
//! reads theirs ([`LegacyFields`] tells the kind from which fields are set).

use super::fsspec::FsSpec;
use super::managed::ManagedFs;
use super::registry::{CleanupReport, MountEntry, Record};
use crate::error::Result;
use serde::{Deserialize, Serialize};
use std::ffi::OsStr;
use std::path::PathBuf;

mod preflight;
pub use preflight::Preflight;

/// One kind of storage: how it is checked, made, served, and undone from its record.
/// Implemented by the kind's own record (what the registry keeps to undo it).
pub trait Kind {
    /// This kind's record for `spec`, the target made under `key` (`<runid>-<n>`), or
    /// None when another kind makes `spec` (the list below is asked in its order).
    fn plan(spec: &FsSpec, key: &str) -> Option<Self>
    where
        Self: Sized;

    /// Everything `spec` needs, checked before anything is made (tools, with one line
    /// naming the Debian package of the first missing one; kernel support; space).
    fn preflight(&self, spec: &FsSpec, p: &mut Preflight) -> Result<()>;

    /// Register `fs`'s record (this one), then make what lies under the mount point
    /// (image and loop device, a device's checks, daemons), formatted.
    fn start(&self, fs: &mut ManagedFs) -> Result<()>;

    /// Mount it at the mount point and check that it serves (after `start`, and again
    /// after every [`reformat`](Kind::reformat)).
    fn ready(&self, fs: &mut ManagedFs) -> Result<()> {
        fs.mount_formatted()
    }

    /// A fresh file system for the next trial, unmounted meanwhile.
    fn reformat(&self, fs: &mut ManagedFs) -> Result<()> {
        fs.format()
    }

    /// The type the results name (`ext4`; a share's protocol's, `fuse.sshfs`).
    fn fs_type(&self, spec: &FsSpec) -> &'static str {
        spec.fs_type.name()
    }

    /// Is it served by a FUSE daemon (counted as the target's CPU)?
    fn fuse(&self, spec: &FsSpec) -> bool {
        spec.fs_type.is_fuse()
    }

    /// The file its loop device goes on (an image, a device class's disk), if it has one.
    fn loop_file(&self) -> Option<PathBuf> {
        None
    }

    /// The processes serving it beyond a FUSE file system's own daemon (nbdkit and
    /// nbdfuse, a share's server, proxy and client), for CPU accounting.
    fn serving_pids(&self, _rec: &Record) -> Vec<u32> {
        Vec::new()
    }

    /// Is `m` the mount this record names, by its source? (A bind mount of it has the
    /// same source: the caller tells them apart by mount id.)
    fn owns_mount(&self, m: &MountEntry) -> bool;

    /// Undo what lies under the (unmounted) mount point: loop devices, daemons, the
    /// image, a run directory. What was done and what failed go to `rep`, fresh for this
    /// record; daemons are stopped only when nothing failed before them.
    fn stop(&self, rec: &Record, rep: &mut CleanupReport);

    /// Paths the short-lived helpers (mkfs, losetup, mount) of a killed run would name:
    /// cleanup waits for them first.
    fn helper_names(&self) -> Vec<String> {
        Vec::new()
    }

    /// Cleaned before other records: it holds files on another record's file system
    /// (a mounted container's file, a share's export).
    fn cleaned_first(&self) -> bool {
        false
    }
}

/// The kinds, in the order [`KindRecord::plan`] asks them: `tag => Variant(module::Record)`.
macro_rules! kinds {
    ($($tag:literal => $variant:ident($module:ident :: $record:ident),)*) => {
        $(pub mod $module;)*

        /// A record's kind and the kind's own fields, tagged `"kind": TAG`.
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(tag = "kind")]
        pub enum KindRecord {
            $(#[serde(rename = $tag)] $variant($module::$record),)*
        }

        impl KindRecord {
            /// The kind, to reach through [`Kind`].
            pub fn kind(&self) -> &dyn Kind {
                match self {
                    $(Self::$variant(r) => r,)*
                }
            }

            /// The tag its records carry.
            pub fn tag(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => $tag,)*
                }
            }

            /// The record of the first kind that makes `spec`.
            pub fn plan(spec: &FsSpec, key: &str) -> Option<KindRecord> {
                $(if let Some(r) = <$module::$record as Kind>::plan(spec, key) {
                    return Some(Self::$variant(r));
                })*
                None
            }
        }
    };
}

kinds! {
    "share" => Share(share::ShareRecord),
    "object" => Object(object::ObjectRecord),
    "azblob" => Azblob(azblob::AzblobRecord),
    "device" => Device(device::DeviceRecord),
    "class" => Class(class::ClassRecord),
    "tmpfs" => Tmpfs(tmpfs::TmpfsRecord),
    "image" => Image(image::ImageRecord),
    "directory" => Directory(directory::DirectoryRecord),
    "container" => Container(container::ContainerRecord),
    "user_objects" => UserObjects(user_objects::UserObjectsRecord),
}

impl Default for KindRecord {
    /// A record naming nothing yet (a run directory's, before its path is set).
    fn default() -> Self {
        KindRecord::Directory(directory::DirectoryRecord { run_dir: None })
    }
}

/// The kind's part of a record as it is stored: tagged (this build), or the flat
/// optional fields of a build before kinds.
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum StoredKind {
    Tagged(KindRecord),
    Legacy(LegacyFields),
}

/// A record's fields before kinds, all optional; which are set says the kind.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct LegacyFields {
    image: Option<PathBuf>,
    loop_device: Option<String>,
    tmpfs_source: Option<String>,
    run_dir: Option<PathBuf>,
    #[serde(default)]
    pack_mount: bool,
    fuse_source: Option<String>,
    device: Option<String>,
    nbd_dir: Option<PathBuf>,
}

impl StoredKind {
    /// The kind; `in_share`: the record names a share's stack directory (a client's
    /// record, with a FUSE source, or its export's).
    pub(crate) fn into_kind(self, in_share: bool) -> KindRecord {
        let l = match self {
            StoredKind::Tagged(k) => return k,
            StoredKind::Legacy(l) => l,
        };
        if l.pack_mount {
            return KindRecord::Container(container::ContainerRecord {
                image: l.image,
                fuse_source: l.fuse_source,
                pack_mount: true,
            });
        }
        if let (true, Some(fuse_source)) = (in_share, l.fuse_source) {
            return KindRecord::Share(share::ShareRecord { fuse_source });
        }
        if let Some(tmpfs_source) = l.tmpfs_source {
            return KindRecord::Tmpfs(tmpfs::TmpfsRecord { tmpfs_source });
        }
        if let Some(nbd_dir) = l.nbd_dir {
            return KindRecord::Class(class::ClassRecord { nbd_dir, loop_device: l.loop_device });
        }
        if let Some(device) = l.device {
            return KindRecord::Device(device::DeviceRecord { device });
        }
        if let Some(image) = l.image {
            return KindRecord::Image(image::ImageRecord { image, loop_device: l.loop_device });
        }
        KindRecord::Directory(directory::DirectoryRecord { run_dir: l.run_dir })
    }
}

/// `tool`s of `label` looked up in `search_path`: the first missing one, as one line
/// naming its Debian package.
pub fn require_tools(label: &str, tools: &[(&str, &str)], search_path: &OsStr) -> std::result::Result<(), String> {
    for (tool, pkg) in tools {
        if super::managed::find_in_path(tool, search_path).is_none() {
            return Err(format!("{label}: {tool} not found: install the Debian package {pkg}"));
        }
    }
    Ok(())
}

/// What a stack's start (a share's, an object store's) does first: `fs`'s record, of
/// `kind`, names the stack's directory `dir`; then the export `spec` is made, a managed
/// file system of its own record naming `dir` too (for `umount`), kept with `fs`. The
/// export, its label and its mkfs version.
pub(crate) fn start_export<'a>(
    fs: &'a mut ManagedFs,
    kind: KindRecord,
    dir: &std::path::Path,
    spec: &FsSpec,
) -> Result<(&'a ManagedFs, String, String)> {
    fs.register_in_stack(kind, dir)?;
    let (bytes, entries) = (fs.details().image_bytes, fs.details().entries.unwrap_or(0));
    let mut export = ManagedFs::create_for(spec, bytes, entries)?;
    let in_stack = export.update_record(|r| r.share_dir = Some(dir.to_path_buf()));
    let (label, mkfs_version) = (export.details().spec.clone(), export.details().mkfs_version.clone());
    let export = fs.set_export(export);
    in_stack?;
    Ok((export, label, mkfs_version))
}

/// Detach every loop device backed by `file`, saying so in `rep`.
pub(crate) fn detach_loops(file: &std::path::Path, rep: &mut CleanupReport) {
    for dev in super::loopdev::loops_backed_by(file) {
        match super::loopdev::detach_loop(&dev) {
            Ok(()) => rep.detached.push(dev),
            Err(e) => rep.problems.push(e),
        }
    }
}

/// Is mount `m` a loop device whose backing file is `file`?
pub(crate) fn loop_of(m: &MountEntry, file: &std::path::Path) -> bool {
    m.source.starts_with("/dev/loop") && super::loopdev::loop_backing_file(&m.source).as_deref() == Some(file)
}

#[cfg(test)]
mod tests;
