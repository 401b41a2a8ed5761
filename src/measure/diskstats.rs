//! What the block device under a target did during a phase, from /proc/diskstats:
//! bytes and operations read and written, and the time it was busy. A reader can then
//! see whether the device was touched at all (a write phase the page cache absorbed
//! shows few written bytes).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Device activity over one phase (differences of /proc/diskstats counters).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceIo {
    /// Kernel name of the block device (`vda`, `loop3`, `nvme0n1p2`).
    pub device: String,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_ops: u64,
    pub write_ops: u64,
    /// Time the device had I/O in flight (io_ticks), seconds.
    pub busy_s: f64,
    /// For a loop device whose image lives on another block device: that device's
    /// activity over the same phase (it also sees everything else on that disk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing: Option<Box<DeviceIo>>,
}

/// Raw cumulative counters of one device.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Counters {
    read_ops: u64,
    read_sectors: u64,
    write_ops: u64,
    write_sectors: u64,
    io_ticks_ms: u64,
}

/// The devices to watch for one target: its own block device and, for a loop
/// device, the block device holding its backing file.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceWatch {
    device: String,
    backing: Option<String>,
}

/// Counters of the watched devices at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    own: Option<Counters>,
    backing: Option<Counters>,
}

impl DeviceWatch {
    /// The block device behind `path` (a directory on the target), or the named device
    /// (`/dev/loop3`, `loop3`) when the caller knows it better (a FUSE file system on a
    /// loop device has an anonymous st_dev). None for tmpfs and other device-less file
    /// systems, or when /proc/diskstats does not list it.
    pub fn for_target(path: &Path, device: Option<&str>) -> Option<DeviceWatch> {
        let name = match device {
            Some(d) => Some(d.trim_start_matches("/dev/").to_string()),
            None => name_of_dev(rustix::fs::stat(path).ok()?.st_dev),
        }?;
        read_counters(&name)?;
        let backing = loop_backing_device(&name).filter(|b| read_counters(b).is_some());
        Some(DeviceWatch { device: name, backing })
    }

    pub fn device(&self) -> &str {
        &self.device
    }

    /// Run `f`, and what `watch`'s devices did meanwhile (None without a watch).
    pub fn around<T>(watch: Option<&DeviceWatch>, f: impl FnOnce() -> T) -> (T, Option<DeviceIo>) {
        let before = watch.map(|w| w.snapshot());
        let out = f();
        let io = watch.zip(before).and_then(|(w, a)| w.delta(&a, &w.snapshot()));
        (out, io)
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot { own: read_counters(&self.device), backing: self.backing.as_deref().and_then(read_counters) }
    }

    /// Activity between two snapshots (None when the device vanished in between).
    pub fn delta(&self, a: &Snapshot, b: &Snapshot) -> Option<DeviceIo> {
        let own = diff(&self.device, a.own?, b.own?);
        let backing = match (&self.backing, a.backing, b.backing) {
            (Some(name), Some(x), Some(y)) => Some(Box::new(diff(name, x, y))),
            _ => None,
        };
        Some(DeviceIo { backing, ..own })
    }
}

fn diff(name: &str, a: Counters, b: Counters) -> DeviceIo {
    DeviceIo {
        device: name.to_string(),
        read_bytes: b.read_sectors.saturating_sub(a.read_sectors) * 512,
        write_bytes: b.write_sectors.saturating_sub(a.write_sectors) * 512,
        read_ops: b.read_ops.saturating_sub(a.read_ops),
        write_ops: b.write_ops.saturating_sub(a.write_ops),
        busy_s: b.io_ticks_ms.saturating_sub(a.io_ticks_ms) as f64 / 1000.0,
        backing: None,
    }
}

/// Kernel name of the block device with this dev_t, via /sys/dev/block/MAJ:MIN.
fn name_of_dev(dev: u64) -> Option<String> {
    let (maj, min) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    if maj == 0 {
        return None; // anonymous: tmpfs, FUSE, overlay, ...
    }
    let link = std::fs::read_link(format!("/sys/dev/block/{maj}:{min}")).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

/// For `loopN`: the block device its backing file lives on (None for an image on tmpfs).
fn loop_backing_device(name: &str) -> Option<String> {
    let file = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    let file = PathBuf::from(file.trim_end());
    name_of_dev(rustix::fs::stat(&file).ok()?.st_dev)
}

fn read_counters(name: &str) -> Option<Counters> {
    parse_line(&std::fs::read_to_string("/proc/diskstats").ok()?, name)
}

/// Fields (Documentation/admin-guide/iostats.rst): major minor name, reads completed,
/// reads merged, sectors read, ms reading, writes completed, writes merged, sectors
/// written, ms writing, in flight, io_ticks (ms busy), ...
fn parse_line(text: &str, name: &str) -> Option<Counters> {
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 13 || f[2] != name {
            return None;
        }
        let n = |i: usize| f[i].parse::<u64>().ok();
        Some(Counters {
            read_ops: n(3)?,
            read_sectors: n(5)?,
            write_ops: n(7)?,
            write_sectors: n(9)?,
            io_ticks_ms: n(12)?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_diskstats_line() {
        let text = "   7       0 loop0 10 0 80 1 0 0 0 0 0 4 1 0 0 0 0\n 254       0 vda 1500 20 96000 300 700 5 14000 90 0 380 400 0 0 0 0\n";
        let c = parse_line(text, "vda").unwrap();
        assert_eq!(
            c,
            Counters { read_ops: 1500, read_sectors: 96000, write_ops: 700, write_sectors: 14000, io_ticks_ms: 380 }
        );
        assert!(parse_line(text, "vd").is_none());
        let d = diff("vda", Counters::default(), c);
        assert_eq!(d.read_bytes, 96000 * 512);
        assert_eq!(d.write_ops, 700);
        assert!((d.busy_s - 0.38).abs() < 1e-12);
    }

    #[test]
    fn the_root_file_system_has_a_device_or_says_none() {
        // On a VM disk this is e.g. vda; in a container on overlayfs there is none.
        if let Some(w) = DeviceWatch::for_target(Path::new("/"), None) {
            let a = w.snapshot();
            let b = w.snapshot();
            let d = w.delta(&a, &b).unwrap();
            assert_eq!(d.device, w.device());
        }
        assert!(DeviceWatch::for_target(Path::new("/dev/shm"), None).is_none(), "tmpfs has no block device");
    }
}
