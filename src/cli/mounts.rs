//! `mount`, `umount` and `cleanup`: managed targets brought up for the user's own tools,
//! and what a killed run (or, with `--mounts`, a `mount`) left removed.

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct MountArgs {
    /// A --fs spec: TYPE[:BLOCK][@ram|@disk[:DIR]|@class:NAME|@class:lat=2ms,iops=500,…],
    /// share:sftp|smb@rtt=DUR[,bw=RATE][,on=SPEC] or s3|azblob[@rtt=DUR][,bw=RATE][,on=SPEC] (e.g.
    /// ext4@class:ebs-magnetic, exfat@disk, tmpfs, share:sftp@rtt=1ms, s3@rtt=1ms: the bucket
    /// through s3fs at DIR; azblob@rtt=1ms: Azurite, no file view; their endpoint and
    /// credentials file are printed)
    pub spec: String,
    /// An existing empty directory to mount it at
    pub dir: PathBuf,
    /// Image (or device class disk) size
    #[arg(long, default_value = "1GiB")]
    pub size: String,
}

#[derive(Args, Debug)]
pub struct UmountArgs {
    /// The directory a `manyfiles mount` is mounted at now (it follows a renamed parent);
    /// refused, changing nothing, while a process, a mount inside it or a bind mount uses it
    pub dir: PathBuf,
}

#[derive(Args, Debug)]
pub struct CleanupArgs {
    /// Also take down what `manyfiles mount` made (left alone otherwise: it is the user's, in use)
    #[arg(long)]
    pub mounts: bool,
}

/// `mount`'s spec and size, checked.
pub fn mount_config(a: &MountArgs) -> manyfiles::error::Result<(manyfiles::storage::fsspec::FsSpec, u64)> {
    use manyfiles::error::Error;
    let spec = manyfiles::storage::fsspec::FsSpec::parse(&a.spec).map_err(|e| Error::bad("SPEC", e))?;
    if spec.device().is_some() {
        return Err(Error::bad("SPEC", "mount takes a managed target; a real device (@dev:) is mounted with mount(8)"));
    }
    let size = manyfiles::units::parse_size(&a.size).map_err(|e| Error::bad("--size", e))?;
    Ok((spec, size))
}

/// What `mount` prints for an object store beyond the mount: where its endpoint is and
/// how to reach it, the bucket or container, where the credentials are (never the
/// credentials), and the engines' command line that reaches it through `--s3-via DIR`
/// (`--store-via DIR`).
pub fn object_lines(d: &manyfiles::storage::managed::ManagedDetails, dir: &std::path::Path) -> String {
    let Some(o) = &d.object else { return String::new() };
    let mut lines = o.reach_lines();
    lines.push_str(&format!(
        "the engines reach it through the mount: manyfiles copy SRC {}PREFIX --s3-via {} (and sync, rm, scan with {}://…)\n",
        o.url,
        dir.display(),
        o.object.provider.name()
    ));
    lines
}
