//! An image file in a backing directory (`TYPE[:BLOCK][@ram|@disk[:DIR]]`), attached to a
//! loop device and formatted by mkfs; mounted by the kernel or, for ntfs and exfat, by a
//! FUSE daemon (ntfs-3g, mount.exfat-fuse: the holders of the loop device, counted as
//! serving it).

use super::super::fsspec::FsSpec;
use super::super::managed::ManagedFs;
use super::super::registry::{CleanupReport, MountEntry, Record, is_image_name};
use super::{Kind, KindRecord, Preflight};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

/// What undoes an image: the file (`manyfiles-img-<key>.img`, deleted only by that
/// name) and the loop device on it (also found by its backing file: a kill between
/// `losetup` and the record's update leaves it unrecorded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageRecord {
    pub image: PathBuf,
    #[serde(default)]
    pub loop_device: Option<String>,
}

impl Kind for ImageRecord {
    fn plan(spec: &FsSpec, key: &str) -> Option<Self> {
        Some(ImageRecord { image: spec.backing_dir().join(format!("manyfiles-img-{key}.img")), loop_device: None })
    }

    fn preflight(&self, spec: &FsSpec, p: &mut Preflight) -> Result<()> {
        p.file_system(spec)?;
        p.loop_devices(&spec.label())?;
        p.image(spec)
    }

    fn start(&self, fs: &mut ManagedFs) -> Result<()> {
        fs.register(KindRecord::Image(self.clone()))?;
        let img = &self.image;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(img)
            .map_err(|e| Error::failed(format!("cannot create the image {}: {e}", img.display())))?;
        f.set_len(fs.details().image_bytes)
            .map_err(|e| Error::failed(format!("cannot size the image {}: {e}", img.display())))?;
        drop(f);
        fs.attach_and_format(img, false, |k, dev| {
            if let KindRecord::Image(r) = k {
                r.loop_device = Some(dev);
            }
        })
    }

    fn loop_file(&self) -> Option<PathBuf> {
        Some(self.image.clone())
    }

    fn owns_mount(&self, m: &MountEntry) -> bool {
        self.loop_device.as_deref() == Some(m.source.as_str()) || super::loop_of(m, &self.image)
    }

    fn stop(&self, _rec: &Record, rep: &mut CleanupReport) {
        super::detach_loops(&self.image, rep);
        delete_image(&self.image, rep);
    }

    fn helper_names(&self) -> Vec<String> {
        [Some(self.image.display().to_string()), self.loop_device.clone()].into_iter().flatten().collect()
    }
}

/// Delete `img` if it is one of ours: a regular file named `manyfiles-img-*.img`.
fn delete_image(img: &std::path::Path, rep: &mut CleanupReport) {
    match std::fs::symlink_metadata(img) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => rep.problems.push(format!("{}: {e}", img.display())),
        Ok(md) => {
            let name_ok = img.file_name().and_then(|n| n.to_str()).is_some_and(is_image_name);
            if md.file_type().is_file() && name_ok {
                match std::fs::remove_file(img) {
                    Ok(()) => rep.deleted.push(img.display().to_string()),
                    Err(e) => rep.problems.push(format!("cannot delete {}: {e}", img.display())),
                }
            } else {
                rep.problems.push(format!("{}: not a manyfiles image file; left alone", img.display()));
            }
        }
    }
}
