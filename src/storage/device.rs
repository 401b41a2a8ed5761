//! Real block devices as test file systems (`--fs TYPE[:BLOCK]@dev:/dev/NAME`): the
//! device is formatted in place, with no image file and no loop device between the file
//! system and the disk (an image on another file system adds that file system's cost).
//!
//! This formats what the user names, so every interlock runs before anything is created
//! or written (and again right before the first mkfs), each refusing with one line:
//! - the device is named twice: `--destroy-device` must resolve to the same device
//!   (same `st_rdev`, so /dev/disk/by-id/... symlinks and other nodes count as the same);
//! - it is a block device with a medium, writable, large enough for the type;
//! - neither it, nor a partition of it, nor a holder of it is mounted or swap;
//! - it has no holders (RAID/LVM/dm member) and is no md/dm slave;
//! - it does not hold `/` or the running binary (nor is it their whole disk);
//! - it, and each of its partitions, can be opened with `O_EXCL` (nobody claims it).
//!
//! Teardown and `manyfiles cleanup` only unmount; the device itself is never removed.

use super::fsspec::FsSpec;
use super::registry;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What the results record about a device (from sysfs), so a reader knows which disk
/// was measured. Every field has a default: older or partial records still load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceInfo {
    /// The device node formatted (symlinks resolved), e.g. `/dev/sdb1`.
    pub path: String,
    /// Kernel name (`sdb1`) and the whole disk it is on (`sdb`; itself for a disk).
    pub name: String,
    pub disk: String,
    pub major_minor: String,
    pub partition: bool,
    pub size_bytes: u64,
    pub model: Option<String>,
    pub vendor: Option<String>,
    pub serial: Option<String>,
    /// queue/rotational of the disk: true for spinning disks.
    pub rotational: Option<bool>,
    /// The selected I/O scheduler of the disk (`mq-deadline`, `none`, ...).
    pub scheduler: Option<String>,
    pub logical_block_size: Option<u64>,
    pub physical_block_size: Option<u64>,
}

const FLAG: &str = "--fs";
const CONFIRM: &str = "--destroy-device";

/// A path that names a block device: its node (symlinks resolved) and device number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub path: PathBuf,
    pub rdev: u64,
}

/// Resolve `path` to a block device, or say in a few words why it is not one.
pub fn resolve(path: &Path) -> std::result::Result<Resolved, String> {
    let md = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err("does not exist".into()),
        Err(e) => return Err(format!("cannot be examined: {e}")),
    };
    let ft = md.file_type();
    if !ft.is_block_device() {
        let what = if ft.is_file() {
            "a regular file"
        } else if ft.is_char_device() {
            "a character device"
        } else if ft.is_dir() {
            "a directory"
        } else {
            "not a device"
        };
        let hint = if ft.is_file() {
            " (for an image file use @disk:DIR)"
        } else if ft.is_dir() {
            " (for a directory use --target DIR)"
        } else {
            ""
        };
        return Err(format!("is {what}, not a block device{hint}"));
    }
    let canon = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    Ok(Resolved { path: canon, rdev: md.rdev() })
}

/// Do `a` and `b` name the same block device?
pub fn same_device(a: &Path, b: &Path) -> bool {
    matches!((resolve(a), resolve(b)), (Ok(x), Ok(y)) if x.rdev == y.rdev)
}

fn mm(rdev: u64) -> String {
    format!("{}:{}", libc::major(rdev), libc::minor(rdev))
}

fn parse_mm(s: &str) -> Option<u64> {
    let (a, b) = s.trim().split_once(':')?;
    Some(libc::makedev(a.parse().ok()?, b.parse().ok()?))
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// The sysfs directory of a block device (`/sys/devices/.../block/sdb[/sdb1]`).
fn sys_dir(rdev: u64) -> Option<PathBuf> {
    std::fs::canonicalize(format!("/sys/dev/block/{}", mm(rdev))).ok()
}

fn is_partition(dir: &Path) -> bool {
    dir.join("partition").exists()
}

/// The whole disk's sysfs directory (the parent of a partition).
fn disk_dir(dir: &Path) -> PathBuf {
    if is_partition(dir) {
        dir.parent().map(Path::to_path_buf).unwrap_or_else(|| dir.to_path_buf())
    } else {
        dir.to_path_buf()
    }
}

fn name_of(dir: &Path) -> String {
    dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Partitions of a disk: (name, dev number).
fn partitions(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if is_partition(&p) {
            if let Some(d) = read_trim(&p.join("dev")).and_then(|s| parse_mm(&s)) {
                out.push((name_of(&p), d));
            }
        }
    }
    out.sort();
    out
}

/// Names in a sysfs `holders` or `slaves` directory.
fn listed(dir: &Path, sub: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join(sub))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn dev_of_name(name: &str) -> Option<u64> {
    read_trim(&Path::new("/sys/class/block").join(name).join("dev")).and_then(|s| parse_mm(&s))
}

/// What sysfs says about the device (`rdev`).
pub fn describe(res: &Resolved) -> DeviceInfo {
    let dir = sys_dir(res.rdev).unwrap_or_default();
    let disk = disk_dir(&dir);
    let dev = disk.join("device");
    let q = disk.join("queue");
    // The selected scheduler is the one in brackets: "mq-deadline [none]".
    let scheduler = read_trim(&q.join("scheduler")).map(|s| {
        s.split_whitespace()
            .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
            .map(str::to_string)
            .unwrap_or(s)
    });
    DeviceInfo {
        path: res.path.display().to_string(),
        name: name_of(&dir),
        disk: name_of(&disk),
        major_minor: mm(res.rdev),
        partition: is_partition(&dir),
        size_bytes: read_trim(&dir.join("size")).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0) * 512,
        model: read_trim(&dev.join("model")).or_else(|| read_trim(&disk.join("model"))),
        vendor: read_trim(&dev.join("vendor")),
        // SCSI/ATA and NVMe keep it under device/, virtio-blk beside it.
        serial: read_trim(&dev.join("serial")).or_else(|| read_trim(&disk.join("serial"))),
        rotational: read_trim(&q.join("rotational")).map(|s| s == "1"),
        scheduler,
        logical_block_size: read_trim(&q.join("logical_block_size")).and_then(|s| s.parse().ok()),
        physical_block_size: read_trim(&q.join("physical_block_size")).and_then(|s| s.parse().ok()),
    }
}

/// Dev numbers of block devices that are mounted, with where (mountinfo's major:minor,
/// and the mount source when it is a block device node: btrfs shows an anonymous 0:N).
fn mounted() -> Vec<(u64, PathBuf)> {
    let mut out = Vec::new();
    for m in registry::mounts() {
        if let Some(d) = parse_mm(&m.major_minor).filter(|d| libc::major(*d) != 0) {
            out.push((d, m.mount_point.clone()));
        }
        if m.source.starts_with('/') {
            if let Ok(r) = resolve(Path::new(&m.source)) {
                out.push((r.rdev, m.mount_point.clone()));
            }
        }
    }
    out
}

/// Dev numbers of active swap devices (/proc/swaps; names escaped like mountinfo).
fn swaps() -> Vec<(u64, String)> {
    let text = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let Some(name) = line.split_whitespace().next() else { continue };
        let name = name.replace("\\040", " ");
        if let Ok(r) = resolve(Path::new(&name)) {
            out.push((r.rdev, name));
        }
    }
    out
}

/// Devices the running system stands on: those holding `/` and the running binary,
/// the whole disks they are on, and (through dm/md) the devices below them.
fn protected() -> Vec<(u64, &'static str)> {
    let mut seeds: Vec<(u64, &'static str)> = Vec::new();
    let exe = std::fs::read_link("/proc/self/exe").unwrap_or_default();
    for (p, why) in
        [(Path::new("/"), "holds / (the running system)"), (exe.as_path(), "holds the running manyfiles binary")]
    {
        if let Ok(md) = std::fs::metadata(p) {
            seeds.push((md.dev(), why));
        }
        // The mount's source: btrfs and others give files an anonymous st_dev.
        let mount = registry::mounts()
            .into_iter()
            .filter(|m| p.starts_with(&m.mount_point))
            .max_by_key(|m| m.mount_point.as_os_str().len());
        if let Some(m) = mount {
            if let Ok(r) = resolve(Path::new(&m.source)) {
                seeds.push((r.rdev, why));
            }
        }
    }
    let mut out: Vec<(u64, &'static str)> = Vec::new();
    while let Some((d, why)) = seeds.pop() {
        if out.iter().any(|(o, _)| *o == d) {
            continue;
        }
        out.push((d, why));
        let Some(dir) = sys_dir(d) else { continue };
        if is_partition(&dir) {
            if let Some(p) = read_trim(&disk_dir(&dir).join("dev")).and_then(|s| parse_mm(&s)) {
                seeds.push((p, why));
            }
        }
        for s in listed(&dir, "slaves") {
            if let Some(sd) = dev_of_name(&s) {
                seeds.push((sd, why));
            }
        }
    }
    out
}

/// Is any block device listing `name` among its slaves (an md array or dm table over it)?
fn slave_of(name: &str) -> Option<String> {
    for e in std::fs::read_dir("/sys/class/block").into_iter().flatten().flatten() {
        if e.path().join("slaves").join(name).exists() {
            return Some(e.file_name().to_string_lossy().into_owned());
        }
    }
    None
}

/// Open with O_EXCL: fails with EBUSY when mounted, swap, or claimed by md/dm or a
/// program that opened it exclusively (mkfs does; so do many partitioning tools).
fn exclusive_open(p: &Path) -> std::result::Result<(), String> {
    use rustix::fs::{Mode, OFlags};
    match rustix::fs::open(p, OFlags::RDONLY | OFlags::EXCL | OFlags::CLOEXEC | OFlags::NONBLOCK, Mode::empty()) {
        Ok(_fd) => Ok(()),
        Err(rustix::io::Errno::BUSY) => {
            Err("is busy: something holds it open exclusively (a mount, swap, RAID/LVM/dm, or a program); refusing"
                .into())
        }
        Err(e) => Err(format!("cannot be opened exclusively: {}", std::io::Error::from(e))),
    }
}

/// Every interlock for one `@dev:` spec (see the module docs). Ok: the device and what
/// sysfs says about it.
pub fn check(spec: &FsSpec) -> Result<(Resolved, DeviceInfo)> {
    let super::fsspec::Backing::Dev { path, confirmed_by } = &spec.backing else {
        return Err(Error::failed(format!("{}: not a device spec", spec.label())));
    };
    let label = spec.label();
    let bad = |why: String| Error::bad(FLAG, format!("{label}: {why}"));
    let shown = path.display();
    let res = resolve(path).map_err(|why| bad(format!("{shown} {why}")))?;
    let dev = res.path.display().to_string();
    let also = if res.path != *path { format!("{shown} (= {dev})") } else { dev.clone() };
    // Named twice: the user must name the device again, and it must be this one.
    match confirmed_by {
        None => {
            return Err(Error::bad(
                CONFIRM,
                format!(
                    "formatting {also} destroys everything on it; to confirm, name it again: --destroy-device {shown}"
                ),
            ));
        }
        Some(c) => match resolve(c) {
            Ok(r) if r.rdev == res.rdev => {}
            Ok(r) => {
                return Err(Error::bad(
                    CONFIRM,
                    format!(
                        "{} is {}, not {also} that --fs {label} names; both must name the same device",
                        c.display(),
                        r.path.display()
                    ),
                ));
            }
            Err(why) => {
                return Err(Error::bad(
                    CONFIRM,
                    format!("{} {why}; it must name the same device as --fs {label}", c.display()),
                ));
            }
        },
    }
    let Some(dir) = sys_dir(res.rdev) else {
        return Err(bad(format!("{also} has no entry in /sys/dev/block; is it a real device?")));
    };
    let name = name_of(&dir);
    let info = describe(&res);
    if read_trim(&dir.join("ro")).as_deref() == Some("1") {
        return Err(bad(format!("{also} is read-only")));
    }
    if info.size_bytes == 0 {
        return Err(bad(format!("{also} has size 0 (no medium, or a loop device with nothing attached)")));
    }
    let min = super::managed::min_image_bytes(spec);
    if info.size_bytes < min {
        return Err(bad(format!(
            "{also} holds {}, less than the {} {} needs",
            crate::units::fmt_size(info.size_bytes as f64),
            crate::units::fmt_size(min as f64),
            spec.fs_type.name()
        )));
    }
    // The device, its partitions and (recursively) its holders and theirs.
    let parts = partitions(&dir);
    let mut family: Vec<(String, u64)> = vec![(name.clone(), res.rdev)];
    family.extend(parts.iter().cloned());
    let mut i = 0;
    while i < family.len() {
        if let Some(d) = sys_dir(family[i].1) {
            for h in listed(&d, "holders") {
                if let Some(hd) = dev_of_name(&h) {
                    if !family.iter().any(|(_, x)| *x == hd) {
                        family.push((h, hd));
                    }
                }
            }
        }
        i += 1;
    }
    let who = |n: &str| if n == name { also.clone() } else { format!("{n} (on {also})") };
    for (d, mp) in mounted() {
        if let Some((n, _)) = family.iter().find(|(_, x)| *x == d) {
            return Err(bad(format!("{} is mounted at {}; unmount it first", who(n), mp.display())));
        }
    }
    for (d, sw) in swaps() {
        if let Some((n, _)) = family.iter().find(|(_, x)| *x == d) {
            return Err(bad(format!("{} is in use as swap ({sw}); swapoff it first", who(n))));
        }
    }
    for (n, _) in std::iter::once(&(name.clone(), res.rdev)).chain(parts.iter()) {
        let dir = Path::new("/sys/class/block").join(n);
        let holders = listed(&dir, "holders");
        if !holders.is_empty() {
            return Err(bad(format!(
                "{} is held by {} (a RAID/LVM/dm member); stop those first",
                who(n),
                holders.join(", ")
            )));
        }
        if let Some(upper) = slave_of(n) {
            return Err(bad(format!("{} is a member of {upper} (RAID/LVM/dm)", who(n))));
        }
    }
    for (d, why) in protected() {
        if let Some((n, _)) = family.iter().find(|(_, x)| *x == d) {
            return Err(bad(format!("{} {why}; refusing", who(n))));
        }
    }
    exclusive_open(&res.path).map_err(|why| bad(format!("{also} {why}")))?;
    for (n, _) in &parts {
        exclusive_open(&Path::new("/dev").join(n)).map_err(|why| bad(format!("{} {why}", who(n))))?;
    }
    Ok((res, info))
}

/// Check every `@dev:` spec of a run; one device may be named by one spec only (two
/// targets on one device would format each other's file system).
pub fn check_all(specs: &[FsSpec], fs_size: Option<u64>) -> Result<Vec<Option<DeviceInfo>>> {
    let mut out = Vec::new();
    let mut seen: Vec<(u64, String)> = Vec::new();
    for s in specs {
        if s.device().is_none() {
            out.push(None);
            continue;
        }
        if fs_size.is_some() {
            return Err(Error::bad(
                "--fs-size",
                format!("does not apply to {}: the whole device is formatted", s.label()),
            ));
        }
        let (res, info) = check(s)?;
        if let Some((_, other)) = seen.iter().find(|(d, _)| *d == res.rdev) {
            return Err(Error::bad(
                FLAG,
                format!(
                    "{} and {} both name {}; a device can be one target of a run only",
                    other,
                    s.label(),
                    res.path.display()
                ),
            ));
        }
        seen.push((res.rdev, s.label()));
        out.push(Some(info));
    }
    Ok(out)
}

/// Print to stderr what formatting destroys: size, model and serial, and the signatures
/// `blkid -p` and `wipefs -n` find on the device and its partitions.
pub fn announce(label: &str, info: &DeviceInfo) {
    let or_none = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    eprintln!(
        "manyfiles: {label}: formatting {} ({}, model {}, serial {}); everything on it is destroyed. It holds now:",
        info.path,
        crate::units::fmt_size(info.size_bytes as f64),
        or_none(&info.model),
        or_none(&info.serial)
    );
    let t = crate::helper::DEFAULT_TIMEOUT;
    let mut said = false;
    let mut nodes = vec![info.path.clone()];
    if let Some(dir) = sys_dir(parse_mm(&info.major_minor).unwrap_or(0)) {
        nodes.extend(partitions(&dir).into_iter().map(|(n, _)| format!("/dev/{n}")));
    }
    for node in &nodes {
        let (out, _) = crate::helper::run_output(&["blkid".into(), "-p".into(), node.clone()], t);
        for l in out.lines().filter(|l| !l.trim().is_empty()) {
            eprintln!("manyfiles:   {}", l.trim());
            said = true;
        }
    }
    let argv: Vec<String> =
        ["wipefs", "--no-act", "--noheadings", "--output", "DEVICE,OFFSET,TYPE,LABEL,UUID", &info.path]
            .map(String::from)
            .to_vec();
    let (out, _) = crate::helper::run_output(&argv, t);
    for l in out.lines().filter(|l| !l.trim().is_empty()) {
        eprintln!("manyfiles:   signature: {}", l.split_whitespace().collect::<Vec<_>>().join(" "));
        said = true;
    }
    if !said {
        eprintln!("manyfiles:   no signatures found (blkid -p, wipefs -n)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_only_block_devices() {
        assert!(resolve(Path::new("/nonexistent/sdz")).unwrap_err().contains("does not exist"));
        assert!(resolve(Path::new("/dev/null")).unwrap_err().contains("character device"));
        assert!(resolve(Path::new("/")).unwrap_err().contains("directory"));
        let f = tempfile::NamedTempFile::new().unwrap();
        assert!(resolve(f.path()).unwrap_err().contains("regular file"));
        assert!(!same_device(Path::new("/dev/null"), Path::new("/dev/null")), "not block devices");
    }

    #[test]
    fn the_system_disk_is_protected() {
        // Whatever holds / is in the set (by st_dev or by its mount's source device).
        let p = protected();
        let root = std::fs::metadata("/").unwrap().dev();
        let src = registry::mounts().into_iter().rfind(|m| m.mount_point == Path::new("/"));
        let src_dev = src.and_then(|m| resolve(Path::new(&m.source)).ok()).map(|r| r.rdev);
        assert!(p.iter().any(|(d, _)| *d == root || Some(*d) == src_dev), "{p:?}");
        // And its whole disk, when / is on a partition.
        if let Some(d) = src_dev {
            if let Some(dir) = sys_dir(d).filter(|d| is_partition(d)) {
                let disk = read_trim(&disk_dir(&dir).join("dev")).and_then(|s| parse_mm(&s)).unwrap();
                assert!(p.iter().any(|(x, _)| *x == disk));
            }
        }
    }

    #[test]
    fn parses_device_numbers() {
        assert_eq!(parse_mm("7:5"), Some(libc::makedev(7, 5)));
        assert_eq!(mm(libc::makedev(259, 3)), "259:3");
        assert_eq!(parse_mm("x"), None);
    }

    #[test]
    fn unconfirmed_or_non_device_specs_are_refused() {
        let spec = FsSpec::parse("ext4@dev:/nonexistent/sdz").unwrap();
        let e = check(&spec).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("does not exist"), "{e}");
        let e = check_all(&[spec], Some(1 << 30)).unwrap_err();
        assert!(e.to_string().starts_with("--fs-size"), "{e}");
    }
}
