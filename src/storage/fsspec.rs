//! Test file system specs: `TYPE[:BLOCK][@BACKING]`, e.g. `ext4:4k`, `xfs:1k@disk`,
//! `ntfs:64k@disk:/var/tmp`, `tmpfs`, `xfs@dev:/dev/sdb` (a real device: see
//! [`super::device`]). Parsing checks the block (cluster) size against
//! what each type's mkfs accepts, so a bad spec is found before anything is created.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsType {
    Ext2,
    Ext3,
    Ext4,
    Xfs,
    Btrfs,
    Ntfs,
    Exfat,
    Tmpfs,
}

/// Where the image file lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Backing {
    /// Image in /dev/shm (RAM).
    Ram,
    /// Image in `dir` (default /var/tmp, which is on disk on Debian).
    Disk { dir: PathBuf },
    /// A block device or partition the user named, formatted in place (no image, no
    /// loop device). `confirmed_by` is the `--destroy-device` value that names it again:
    /// without it (or naming another device) the device is refused.
    Dev {
        path: PathBuf,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        confirmed_by: Option<PathBuf>,
    },
    /// A device class (`@class:hdd`, `@class:lat=2ms,iops=500`): an in-memory disk served
    /// by nbdkit with delay and rate filters, through nbdfuse and a loop device
    /// ([`super::nbd_stack`]).
    Class { class: super::device_class::DeviceClass },
    /// A file share (`share:sftp@rtt=1ms`): the export (`fs_type` and `block` are its)
    /// served through a latency proxy to a FUSE client ([`super::share`]).
    Share { share: Box<super::share::ShareSpec> },
    /// An object store (`s3@rtt=1ms`): an S3 server storing on the export (`fs_type` and
    /// `block` are its) behind a latency proxy, its bucket mounted through s3fs
    /// ([`super::object_stack`]).
    Object { object: Box<super::object_stack::ObjectSpec> },
}

/// Directory images of `@disk` go to unless a directory is given.
pub const DEFAULT_DISK_DIR: &str = "/var/tmp";
/// Directory images of `@ram` go to.
pub const RAM_DIR: &str = "/dev/shm";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsSpec {
    pub fs_type: FsType,
    pub block: Option<u64>,
    pub backing: Backing,
}

const TYPES: &str = "ext2, ext3, ext4, xfs, btrfs, ntfs, exfat, tmpfs";

impl FsType {
    pub const ALL: [FsType; 8] = [
        FsType::Ext2,
        FsType::Ext3,
        FsType::Ext4,
        FsType::Xfs,
        FsType::Btrfs,
        FsType::Ntfs,
        FsType::Exfat,
        FsType::Tmpfs,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FsType::Ext2 => "ext2",
            FsType::Ext3 => "ext3",
            FsType::Ext4 => "ext4",
            FsType::Xfs => "xfs",
            FsType::Btrfs => "btrfs",
            FsType::Ntfs => "ntfs",
            FsType::Exfat => "exfat",
            FsType::Tmpfs => "tmpfs",
        }
    }

    pub fn from_name(s: &str) -> Option<FsType> {
        FsType::ALL.into_iter().find(|t| t.name() == s.to_ascii_lowercase())
    }

    /// Mounted through a FUSE daemon rather than a kernel driver.
    pub fn is_fuse(self) -> bool {
        matches!(self, FsType::Ntfs | FsType::Exfat)
    }

    /// The fstype /proc/self/mountinfo shows for a mount of this type.
    pub fn mountinfo_type(self) -> &'static str {
        match self {
            FsType::Ntfs | FsType::Exfat => "fuseblk",
            other => other.name(),
        }
    }

    /// Allowed block/cluster sizes (inclusive, powers of two), or None if the type takes none.
    fn block_range(self) -> Option<(u64, u64, &'static str)> {
        const K: u64 = 1024;
        match self {
            FsType::Ext2 | FsType::Ext3 | FsType::Ext4 => Some((K, 4 * K, "1k, 2k or 4k")),
            FsType::Xfs => Some((K, 64 * K, "a power of two from 1k to 64k")),
            FsType::Btrfs => None, // handled separately: page size only
            FsType::Ntfs => Some((512, 64 * K, "a power of two from 512 to 64k")),
            FsType::Exfat => Some((512, 32 * K * K, "a power of two from 512 to 32M")),
            FsType::Tmpfs => None,
        }
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as u64 } else { 4096 }
}

/// `4096` → `4k`, `512` → `512`, `2097152` → `2m`.
pub fn fmt_block(b: u64) -> String {
    if b >= 1 << 20 && b % (1 << 20) == 0 {
        format!("{}m", b >> 20)
    } else if b >= 1024 && b % 1024 == 0 {
        format!("{}k", b >> 10)
    } else {
        b.to_string()
    }
}

fn check_block(t: FsType, b: u64, text: &str) -> Result<(), String> {
    if t == FsType::Tmpfs {
        return Err(format!("tmpfs takes no block size (got ':{text}'); write just 'tmpfs'"));
    }
    if t == FsType::Btrfs {
        let p = page_size();
        if b != p {
            return Err(format!(
                "btrfs block (sector) size must equal the page size on this machine ({}); got {text}",
                fmt_block(p)
            ));
        }
        return Ok(());
    }
    let (lo, hi, words) = t.block_range().expect("has a range");
    if !b.is_power_of_two() || b < lo || b > hi {
        return Err(format!("{} block size must be {words}; got {text}", t.name()));
    }
    Ok(())
}

impl FsSpec {
    /// `TYPE[:BLOCK][@BACKING]` with BACKING `ram` (default), `disk` or `disk:DIR`.
    pub fn parse(s: &str) -> Result<FsSpec, String> {
        let s = s.trim();
        if let Some(rest) = s.strip_prefix("share:") {
            let share = super::share::ShareSpec::parse(rest)?;
            let (fs_type, block) = (share.export.fs_type, share.export.block);
            return Ok(FsSpec { fs_type, block, backing: Backing::Share { share: Box::new(share) } });
        }
        if is_object_store(s) {
            let object = super::object_stack::ObjectSpec::parse(s)?;
            let (fs_type, block) = (object.export.fs_type, object.export.block);
            return Ok(FsSpec { fs_type, block, backing: Backing::Object { object: Box::new(object) } });
        }
        if s.is_empty() {
            return Err(format!(
                "empty file system spec; expected TYPE[:BLOCK][@ram|@disk[:DIR]|@dev:/dev/NAME] with TYPE one of {TYPES}"
            ));
        }
        let (main, backing_text) = match s.split_once('@') {
            Some((m, b)) => (m, Some(b)),
            None => (s, None),
        };
        let (type_text, block_text) = match main.split_once(':') {
            Some((t, b)) => (t, Some(b)),
            None => (main, None),
        };
        let fs_type = FsType::from_name(type_text.trim()).ok_or_else(|| {
            format!("'{s}': unknown file system type '{type_text}'; known types: {TYPES} (spec: TYPE[:BLOCK][@ram|@disk[:DIR]|@dev:/dev/NAME])")
        })?;
        let block = match block_text {
            None => None,
            Some(bt) => {
                let b = crate::units::parse_size(bt).map_err(|e| format!("'{s}': bad block size: {e}"))?;
                check_block(fs_type, b, bt).map_err(|e| format!("'{s}': {e}"))?;
                Some(b)
            }
        };
        let backing = match backing_text.map(str::trim) {
            None | Some("ram") => Backing::Ram,
            Some("disk") => Backing::Disk { dir: PathBuf::from(DEFAULT_DISK_DIR) },
            Some(b) if b.starts_with("disk:") => {
                let dir = &b["disk:".len()..];
                if dir.is_empty() || !dir.starts_with('/') {
                    return Err(format!("'{s}': the directory after '@disk:' must be an absolute path"));
                }
                Backing::Disk { dir: PathBuf::from(dir) }
            }
            Some(b) if b == "dev" || b.starts_with("dev:") => {
                let dev = b.strip_prefix("dev:").unwrap_or("");
                if dev.is_empty() || !dev.starts_with('/') {
                    return Err(format!("'{s}': the device after '@dev:' must be an absolute path such as /dev/sdb"));
                }
                Backing::Dev { path: PathBuf::from(dev), confirmed_by: None }
            }
            Some(b) if b == "class" || b.starts_with("class:") => {
                let class = super::device_class::DeviceClass::parse(b.strip_prefix("class:").unwrap_or(""))
                    .map_err(|e| format!("'{s}': {e}"))?;
                Backing::Class { class }
            }
            Some(b) => {
                return Err(format!(
                    "'{s}': unknown backing '@{b}'; use @ram (image in /dev/shm), @disk[:DIR], @dev:/dev/NAME or @class:NAME"
                ));
            }
        };
        if fs_type == FsType::Tmpfs && backing != Backing::Ram {
            return Err(format!(
                "'{s}': tmpfs lives in RAM and has no image or device; @disk, @dev and @class do not apply"
            ));
        }
        Ok(FsSpec { fs_type, block, backing })
    }

    /// Canonical text: `ext4:4k@ram`, `xfs@disk:/var/tmp`, `tmpfs@ram`, `share:sftp@rtt=1ms`.
    pub fn label(&self) -> String {
        if let Backing::Share { share } = &self.backing {
            return format!("share:{}", share.text());
        }
        if let Backing::Object { object } = &self.backing {
            return object.text();
        }
        let mut s = self.fs_type.name().to_string();
        if let Some(b) = self.block {
            s.push(':');
            s.push_str(&fmt_block(b));
        }
        match &self.backing {
            Backing::Ram => s.push_str("@ram"),
            Backing::Disk { dir } => {
                s.push_str("@disk:");
                s.push_str(&dir.to_string_lossy());
            }
            Backing::Dev { path, .. } => {
                s.push_str("@dev:");
                s.push_str(&path.to_string_lossy());
            }
            Backing::Class { class } => {
                s.push_str("@class:");
                s.push_str(&class.text());
            }
            Backing::Share { .. } | Backing::Object { .. } => unreachable!("returned above"),
        }
        s
    }

    /// Directory the image file goes to (for `@dev:` the device itself: it has no image;
    /// for `@class:` /dev/shm, whose free space stands for the RAM nbdkit's disk takes).
    pub fn backing_dir(&self) -> PathBuf {
        match &self.backing {
            Backing::Ram | Backing::Class { .. } => PathBuf::from(RAM_DIR),
            Backing::Disk { dir } => dir.clone(),
            Backing::Dev { path, .. } => path.clone(),
            Backing::Share { share } => share.export.backing_dir(),
            Backing::Object { object } => object.export.backing_dir(),
        }
    }

    /// The device of an `@dev:` spec, as the user wrote it.
    pub fn device(&self) -> Option<&std::path::Path> {
        match &self.backing {
            Backing::Dev { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The device class of an `@class:` spec.
    pub fn class(&self) -> Option<&super::device_class::DeviceClass> {
        match &self.backing {
            Backing::Class { class } => Some(class),
            _ => None,
        }
    }

    /// The share of a `share:` spec.
    pub fn share(&self) -> Option<&super::share::ShareSpec> {
        match &self.backing {
            Backing::Share { share } => Some(share),
            _ => None,
        }
    }

    /// The object store of an `s3` or `azblob` spec.
    pub fn object(&self) -> Option<&super::object_stack::ObjectSpec> {
        match &self.backing {
            Backing::Object { object } => Some(object),
            _ => None,
        }
    }

    pub fn backing_name(&self) -> &'static str {
        match self.backing {
            Backing::Ram => "ram",
            Backing::Disk { .. } => "disk",
            Backing::Dev { .. } => "dev",
            Backing::Class { .. } => "class",
            Backing::Share { .. } => "share",
            Backing::Object { .. } => "object",
        }
    }
}

/// Does `s` name an object store (`s3`, `azblob`, either with `@…`)?
fn is_object_store(s: &str) -> bool {
    super::object_stack::names_object_store(s)
}

/// Comma-separated specs (block sizes never contain commas; a device class's
/// `key=value` parameters do: an entry with `=` and no `@` continues the `@class:` or
/// `share:` before it, and so does a share's `on=`, which runs to the end of the entry).
pub fn parse_list(s: &str) -> Result<Vec<FsSpec>, String> {
    let mut texts: Vec<String> = Vec::new();
    for part in s.split(',') {
        if part.trim().is_empty() {
            return Err(format!("'{s}': empty entry in the file system list (use commas only between specs)"));
        }
        match texts.last_mut() {
            Some(prev)
                if (part.contains('=')
                    && !part.contains('@')
                    && (prev.contains("@class:") || prev.starts_with("share:") || is_object_store(prev)))
                    || (part.trim_start().starts_with("on=")
                        && (prev.starts_with("share:") || is_object_store(prev))) =>
            {
                prev.push(',');
                prev.push_str(part);
            }
            _ => texts.push(part.to_string()),
        }
    }
    texts.iter().map(|t| FsSpec::parse(t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_good_specs() {
        let s = FsSpec::parse("ext4:4k").unwrap();
        assert_eq!(s, FsSpec { fs_type: FsType::Ext4, block: Some(4096), backing: Backing::Ram });
        assert_eq!(s.label(), "ext4:4k@ram");
        assert_eq!(FsSpec::parse("ext2").unwrap().label(), "ext2@ram");
        assert_eq!(FsSpec::parse("xfs:1k").unwrap().block, Some(1024));
        assert_eq!(FsSpec::parse("btrfs").unwrap().block, None);
        assert_eq!(FsSpec::parse("ntfs:64k").unwrap().block, Some(65536));
        assert_eq!(FsSpec::parse("ntfs:512").unwrap().label(), "ntfs:512@ram");
        assert_eq!(FsSpec::parse("exfat:128k").unwrap().block, Some(131072));
        assert_eq!(FsSpec::parse("exfat:32M").unwrap().label(), "exfat:32m@ram");
        assert_eq!(FsSpec::parse("tmpfs").unwrap().fs_type, FsType::Tmpfs);
        assert_eq!(FsSpec::parse("ext4@disk").unwrap().backing, Backing::Disk { dir: PathBuf::from("/var/tmp") });
        let v = FsSpec::parse("xfs:4k@dev:/dev/disk/by-id/ata-X").unwrap();
        assert_eq!(v.backing, Backing::Dev { path: PathBuf::from("/dev/disk/by-id/ata-X"), confirmed_by: None });
        assert_eq!(v.label(), "xfs:4k@dev:/dev/disk/by-id/ata-X");
        assert_eq!(v.device(), Some(std::path::Path::new("/dev/disk/by-id/ata-X")));
        let d = FsSpec::parse("ext4:4k@disk:/srv/img").unwrap();
        assert_eq!(d.backing, Backing::Disk { dir: PathBuf::from("/srv/img") });
        assert_eq!(d.label(), "ext4:4k@disk:/srv/img");
        assert_eq!(FsSpec::parse("EXT4:4K@ram").unwrap().label(), "ext4:4k@ram");
        if page_size() == 4096 {
            assert_eq!(FsSpec::parse("btrfs:4k").unwrap().block, Some(4096));
        }
    }

    #[test]
    fn labels_round_trip() {
        for s in [
            "ext4:4k",
            "ext3:1k@disk",
            "xfs:64k@disk:/var/tmp",
            "ext4@dev:/dev/loop7",
            "btrfs",
            "ntfs:512",
            "exfat:32m",
            "tmpfs",
            "ext2:2k",
        ] {
            let a = FsSpec::parse(s).unwrap();
            let b = FsSpec::parse(&a.label()).unwrap();
            assert_eq!(a, b, "{s}");
            assert_eq!(a.label(), b.label());
        }
    }

    #[test]
    fn rejects_bad_specs() {
        let err = |s: &str| FsSpec::parse(s).unwrap_err();
        assert!(err("zfs").contains("unknown file system type"));
        assert!(err("zfs").contains("ext4") && err("zfs").contains("exfat"));
        assert!(err("").contains("TYPE"));
        assert!(err("ext4:8k").contains("1k, 2k or 4k"));
        assert!(err("ext4:3k").contains("ext4 block size"));
        assert!(err("ext4:64k").contains("ext4"));
        assert!(err("xfs:512").contains("1k to 64k"));
        assert!(err("xfs:128k").contains("1k to 64k"));
        assert!(err("btrfs:16k").contains("page size"));
        assert!(err("ntfs:128k").contains("512 to 64k"));
        assert!(err("exfat:256").contains("512 to 32M"));
        assert!(err("exfat:64m").contains("512 to 32M"));
        assert!(err("tmpfs:4k").contains("no block size"));
        assert!(err("tmpfs@disk").contains("RAM"));
        assert!(err("ext4:abc").contains("bad block size"));
        assert!(err("ext4@nvme").contains("unknown backing"));
        assert!(err("ext4@disk:relative").contains("absolute"));
        assert!(err("ext4@dev").contains("/dev/sdb"));
        assert!(err("ext4@dev:sdb").contains("absolute"));
        assert!(err("tmpfs@dev:/dev/sdb").contains("@dev"));
    }

    #[test]
    fn parses_lists() {
        let l = parse_list("ext4:4k,xfs:1k@disk,tmpfs").unwrap();
        assert_eq!(l.len(), 3);
        assert_eq!(l[1].label(), "xfs:1k@disk:/var/tmp");
        assert!(parse_list("ext4,,xfs").unwrap_err().contains("empty entry"));
        assert!(parse_list("ext4,foo").unwrap_err().contains("foo"));
        let c = parse_list("ext4@class:lat=2ms,iops=500,xfs@class:hdd,qd=2,tmpfs").unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].label(), "ext4@class:lat=2ms,iops=500");
        assert_eq!(c[1].label(), "xfs@class:hdd,qd=2");
        assert!(parse_list("ext4,qd=2").unwrap_err().contains("qd=2"));
        let sh = parse_list("share:sftp@rtt=1ms,bw=1MiB/s,on=ext4@class:hdd,qd=2,share:smb@rtt=0ms,tmpfs").unwrap();
        let labels: Vec<String> = sh.iter().map(|s| s.label()).collect();
        assert_eq!(labels, ["share:sftp@rtt=1ms,bw=1MiB/s,on=ext4@class:hdd,qd=2", "share:smb@rtt=0ms", "tmpfs@ram"]);
        assert_eq!((sh[0].fs_type, sh[0].backing_name()), (FsType::Ext4, "share"));
        assert!(FsSpec::parse("share:nfs@rtt=1ms").unwrap_err().contains("nfs"));
        let o = parse_list("s3@rtt=1ms,bw=1MiB/s,on=ext4@disk,s3,xfs").unwrap();
        let labels: Vec<String> = o.iter().map(|s| s.label()).collect();
        assert_eq!(labels, ["s3@rtt=1ms,bw=1MiB/s,on=ext4@disk:/var/tmp", "s3@rtt=0ms", "xfs@ram"]);
        assert_eq!(
            (o[0].fs_type, o[0].backing_name(), o[1].object().map(|x| x.rtt_ms)),
            (FsType::Ext4, "object", Some(0))
        );
        assert_eq!(FsSpec::parse(&o[0].label()).unwrap(), o[0]);
    }

    #[test]
    fn parses_device_classes() {
        let s = FsSpec::parse("ext4:4k@class:ebs-magnetic").unwrap();
        assert_eq!(s.label(), "ext4:4k@class:ebs-magnetic");
        assert_eq!(s.class().unwrap().qd, 5);
        assert_eq!(s.backing_name(), "class");
        assert_eq!(FsSpec::parse(&s.label()).unwrap(), s);
        let err = |t: &str| FsSpec::parse(t).unwrap_err();
        assert!(err("ext4@class:floppy").contains("unknown device class 'floppy'"));
        assert!(err("ext4@class").contains("empty device class"));
        assert!(err("tmpfs@class:hdd").contains("@class"));
        let j = serde_json::to_value(&s.backing).unwrap();
        assert_eq!(j["kind"], "class");
        assert_eq!(j["class"]["name"], "ebs-magnetic");
    }

    #[test]
    fn serde_shape() {
        let s = FsSpec::parse("ext4:4k@disk").unwrap();
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(j, r#"{"fs_type":"ext4","block":4096,"backing":{"kind":"disk","dir":"/var/tmp"}}"#);
        let d = FsSpec::parse("xfs@dev:/dev/sdb").unwrap();
        assert_eq!(serde_json::to_string(&d.backing).unwrap(), r#"{"kind":"dev","path":"/dev/sdb"}"#);
        let r: FsSpec = serde_json::from_str(r#"{"fs_type":"tmpfs","block":null,"backing":{"kind":"ram"}}"#).unwrap();
        assert_eq!(r.fs_type, FsType::Tmpfs);
    }
}
