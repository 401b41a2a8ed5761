//! Device classes (`--fs TYPE[:BLOCK]@class:NAME` or `@class:lat=2ms,iops=500,...`):
//! what a kind of storage the user owns costs per request, as parameters nbdkit's
//! filters can impose on an in-memory disk (see [`super::nbd_stack`]).
//!
//! The model, per direction (read, write): every request waits `lat` in one of `qd`
//! slots (nbdkit worker threads), so at most `qd` requests are served at once; an IOPS
//! cap is kept by lengthening the wait to `qd / iops` when that is longer than `lat`;
//! `bw` caps bytes per second (nbdkit's rate filter, a token bucket). A queue depth 1
//! client then sees `1 / max(lat, qd/iops)` requests per second, a deep queue
//! `qd / max(lat, qd/iops)` (= `iops` when the cap binds).
//!
//! What this cannot model (nbdkit's filters delay every request alike): the difference
//! between sequential and random requests (an HDD's seek and rotation are paid by every
//! request, also by the next block of a sequential stream, so sequential throughput is
//! `qd × request size / lat`, far below a real disk's, unless the kernel merges requests
//! into large ones); write caches, flash garbage collection, burst credits (EBS gp2's
//! bucket), and latency spread (every request takes the same time).
//!
//! The presets' numbers and where each comes from are in [`PRESETS`] and in README's
//! "Device classes" table.

use serde::{Deserialize, Serialize};

/// One direction's costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Side {
    /// Service time of one request, microseconds.
    pub lat_us: u64,
    /// Requests per second the device serves at most (any queue depth); None: no cap.
    pub iops: Option<u64>,
    /// Bytes per second at most; None: no cap.
    pub bw: Option<u64>,
}

/// A device class: a preset's name (or `custom`) and its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceClass {
    /// The preset it started from (`hdd`), or `custom`.
    pub name: String,
    /// `key=value` overrides given after the preset's name (none for a bare preset).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    pub read: Side,
    pub write: Side,
    /// Requests the device serves at once (nbdkit threads).
    pub qd: u32,
}

/// A preset: name, parameters as `key=value` text (parsed like the user's), what it is
/// and where its numbers come from.
pub struct Preset {
    pub name: &'static str,
    pub params: &'static str,
    pub what: &'static str,
    pub source: &'static str,
}

/// The presets, named for what users own. Sources are cited per row (README has the
/// same table).
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "hdd",
        // 8.5 ms average read seek (9.5 ms write) + 4.17 ms half a rotation at 7,200 rpm;
        // 150 MiB/s outer-track sequential. One request at a time (NCQ reordering is not
        // modelled).
        params: "rlat=12.7ms,wlat=13.7ms,bw=150MiB/s,qd=1",
        what: "7,200 rpm SATA disk: seek + half a rotation per request",
        source: "Seagate Barracuda 3.5\" data sheets: average seek 8.5 ms read / 9.5 ms write; 60/7200/2 = 4.17 ms average rotational latency; ~150-210 MB/s sustained transfer",
    },
    Preset {
        name: "usb2-stick",
        // USB 2.0 high speed signals 480 Mbit/s; bulk transfers reach ~35 MB/s in
        // practice. Cheap sticks write far slower than they read.
        params: "rlat=1ms,wlat=5ms,rbw=30MiB/s,wbw=8MiB/s,qd=1",
        what: "USB 2.0 flash drive",
        source: "USB 2.0 specification: 480 Mbit/s signalling, ~35 MB/s usable bulk throughput; write 5-10 MB/s and ms-scale random access: assumed typical of budget sticks (not a measured device)",
    },
    Preset {
        name: "usb3-stick",
        params: "rlat=0.5ms,wlat=2ms,rbw=130MiB/s,wbw=40MiB/s,qd=1",
        what: "USB 3.0 flash drive, mid-range",
        source: "SanDisk Ultra USB 3.0 product page: up to 130 MB/s read; write ~40 MB/s and latencies assumed (USB mass storage, one command at a time without UAS)",
    },
    Preset {
        name: "sd-card",
        // A1: ≥ 1,500 random 4 KiB read IOPS, ≥ 500 write IOPS, ≥ 10 MB/s sustained
        // sequential write (Class 10 / V10); UHS-I SDR104 bus 104 MB/s.
        params: "rlat=0.66ms,wlat=2ms,riops=1500,wiops=500,rbw=90MiB/s,wbw=10MiB/s,qd=1",
        what: "SD card, Application Performance Class A1, Speed Class 10",
        source: "SD Association, Application Performance Class A1: 1,500 read / 500 write IOPS (4 KiB random), 10 MB/s sustained; UHS-I SDR104 bus 104 MB/s",
    },
    Preset {
        name: "ebs-magnetic",
        params: "lat=10ms,iops=500,bw=90MiB/s,qd=5",
        what: "AWS EBS previous-generation magnetic (standard) volume at its burst",
        source: "AWS EBS docs, previous-generation volumes: ~100 IOPS average, bursts to hundreds; 40-90 MiB/s; 500 IOPS is the burst cap issue 30 names; 10 ms per request assumed",
    },
    Preset {
        name: "ebs-gp2",
        params: "lat=1ms,iops=1500,bw=250MiB/s,qd=3",
        what: "AWS EBS gp2 SSD volume of 500 GiB (3 IOPS per GiB)",
        source: "AWS EBS docs, gp2: baseline 3 IOPS/GiB (500 GiB = 1,500 IOPS), up to 250 MiB/s, single-digit ms latency (1 ms assumed)",
    },
    Preset {
        name: "ebs-io1",
        params: "lat=1ms,iops=3000,bw=1000MiB/s,qd=3",
        what: "AWS EBS io1 SSD volume provisioned at 3,000 IOPS",
        source: "AWS EBS docs, io1: provisioned IOPS (3,000 here), up to 1,000 MiB/s, single-digit ms latency (1 ms assumed)",
    },
];

const KEYS: &str = "lat, rlat, wlat, iops, riops, wiops, bw, rbw, wbw, qd";

fn preset_names() -> String {
    PRESETS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

/// `2ms`, `500us`, `0.66ms`, `1s` → microseconds.
pub fn parse_duration_us(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| format!("'{s}' is not a duration (expected e.g. 2ms, 500us, 0.5s)"))?;
    let mult = match unit {
        "us" | "µs" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        _ => return Err(format!("'{s}': a duration needs a unit: us, ms or s")),
    };
    let us = (v * mult).round();
    if !(0.0..=10e6).contains(&us) {
        return Err(format!("'{s}': latency must be from 0 to 10 s"));
    }
    Ok(us as u64)
}

/// `40MiB/s`, `40MiB`, `1G/s` → bytes per second.
fn parse_bw(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    let b = crate::units::parse_size(t)?;
    if b < 4096 {
        return Err(format!("'{s}': bandwidth must be at least 4 KiB/s"));
    }
    Ok(b)
}

fn parse_count(s: &str, what: &str, max: u64) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    let v: u64 = t.parse().map_err(|_| format!("'{s}' is not a whole number of {what}"))?;
    if v == 0 || v > max {
        return Err(format!("{what} must be from 1 to {max}; got {s}"));
    }
    Ok(v)
}

/// Parameters being built from `key=value` pairs (a preset's, then the user's).
#[derive(Default)]
struct Draft {
    read: Side,
    write: Side,
    qd: Option<u32>,
}

impl Draft {
    fn apply(&mut self, pair: &str) -> Result<(), String> {
        let (k, v) =
            pair.split_once('=').ok_or_else(|| format!("'{pair}': expected key=value with key one of {KEYS}"))?;
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
        match k.as_str() {
            "lat" => (self.read.lat_us, self.write.lat_us) = (parse_duration_us(v)?, parse_duration_us(v)?),
            "rlat" => self.read.lat_us = parse_duration_us(v)?,
            "wlat" => self.write.lat_us = parse_duration_us(v)?,
            "iops" => {
                let n = parse_count(v, "IOPS", 10_000_000)?;
                (self.read.iops, self.write.iops) = (Some(n), Some(n));
            }
            "riops" => self.read.iops = Some(parse_count(v, "IOPS", 10_000_000)?),
            "wiops" => self.write.iops = Some(parse_count(v, "IOPS", 10_000_000)?),
            "bw" => (self.read.bw, self.write.bw) = (Some(parse_bw(v)?), Some(parse_bw(v)?)),
            "rbw" => self.read.bw = Some(parse_bw(v)?),
            "wbw" => self.write.bw = Some(parse_bw(v)?),
            "qd" => self.qd = Some(parse_count(v, "queue depth (qd)", 64)? as u32),
            _ => return Err(format!("unknown device class parameter '{k}'; known: {KEYS}")),
        }
        Ok(())
    }
}

impl DeviceClass {
    /// The text after `@class:`: `NAME`, `NAME,key=value,...` or `key=value,...`.
    pub fn parse(text: &str) -> Result<DeviceClass, String> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(format!(
                "'class:{text}': empty device class (give a preset: {}; or parameters: {KEYS})",
                preset_names()
            ));
        }
        let mut draft = Draft::default();
        let (name, rest) = if parts[0].contains('=') {
            ("custom".to_string(), &parts[..])
        } else {
            let p = PRESETS.iter().find(|p| p.name == parts[0].to_ascii_lowercase()).ok_or_else(|| {
                format!("unknown device class '{}'; presets: {}; or give parameters: {KEYS}", parts[0], preset_names())
            })?;
            for pair in p.params.split(',') {
                draft.apply(pair).expect("presets parse");
            }
            (p.name.to_string(), &parts[1..])
        };
        let mut seen: Vec<String> = Vec::new();
        for pair in rest {
            let key = pair.split('=').next().unwrap_or("").trim().to_ascii_lowercase();
            if seen.contains(&key) {
                return Err(format!("'class:{text}': '{key}' given twice"));
            }
            seen.push(key);
            draft.apply(pair).map_err(|e| format!("'class:{text}': {e}"))?;
        }
        let slow = |s: &Side| s.lat_us > 0 || s.iops.is_some() || s.bw.is_some();
        if !slow(&draft.read) && !slow(&draft.write) {
            return Err(format!("'class:{text}': sets no latency, IOPS cap or bandwidth; that is just @ram"));
        }
        // Without qd: as many slots as the IOPS cap needs at the given latency.
        let qd = draft.qd.unwrap_or_else(|| {
            let need = |s: &Side| s.iops.map(|i| (i as f64 * s.lat_us as f64 / 1e6).floor() as u32).unwrap_or(1);
            need(&draft.read).max(need(&draft.write)).clamp(1, 64)
        });
        let overrides = rest.iter().map(|s| s.to_string()).collect();
        Ok(DeviceClass { name, overrides, read: draft.read, write: draft.write, qd })
    }

    /// Canonical text after `class:` (round-trips through [`parse`](Self::parse)).
    pub fn text(&self) -> String {
        if self.name != "custom" {
            let mut v = vec![self.name.clone()];
            v.extend(self.overrides.iter().cloned());
            return v.join(",");
        }
        self.overrides.join(",")
    }

    /// Microseconds each request of a direction waits in nbdkit's delay filter:
    /// `max(lat, qd / iops)` (see the module docs).
    pub fn delay_us(&self, s: &Side) -> u64 {
        let cap = s.iops.map(|i| (self.qd as f64 * 1e6 / i as f64).ceil() as u64).unwrap_or(0);
        s.lat_us.max(cap)
    }

    /// Requests per second expected at queue depth `depth` for a direction, from the
    /// model (requests small enough that `bw` does not bind).
    pub fn expected_iops(&self, s: &Side, depth: u32) -> Option<f64> {
        let d = self.delay_us(s);
        (d > 0).then(|| depth.min(self.qd) as f64 * 1e6 / d as f64)
    }

    /// The delay nbdkit 1.32 (Debian 12) can give a direction, in microseconds: the
    /// model's [`delay_us`](Self::delay_us) in whole milliseconds, rounded, at least 1 ms
    /// when any is asked.
    pub fn served_delay_us(&self, s: &Side) -> u64 {
        let us = self.delay_us(s);
        if us == 0 { 0 } else { ((us + 500) / 1000).max(1) * 1000 }
    }

    /// Seconds this class takes to serve `w` (see [`Work`]), per direction. Each request
    /// waits for its bytes' tokens at `bw` (nbdkit's rate filter, outermost), then for the
    /// served delay plus [`STACK_OVERHEAD_US`] in one of `min(depth, qd)` slots:
    /// - one slot: the two add up, request after request;
    /// - several: one request's delay passes while the next waits for tokens, so the time
    ///   is the larger of the two totals, plus the requests that wait for all the others
    ///   (`write_serial`: a create's journal commits), each its whole delay.
    ///
    /// Measured (`bench/class_create.sh`, ext4@class:ebs-gp2, the syncfs of a create,
    /// against the model of the loop device's own request and byte counts): 64 MiB in 1 …
    /// 1,024 files, bound by the bytes: within 2% (the sum was 15–44% over); 4,096 files
    /// of 16 KiB and 16,384 of 4 KiB, bound by the requests: 20% and 18% under (the sum
    /// 37% over and 1% under); between those two, a file costs 92 µs, this 77, the sum 80.
    /// Reads and writes add up (they share the slots).
    pub fn seconds_for(&self, w: &Work) -> f64 {
        let side = |s: &Side, requests: f64, serial: f64, bytes: f64, depth: u32| {
            if requests <= 0.0 && bytes <= 0.0 {
                return 0.0;
            }
            let each = (self.served_delay_us(s) as f64 + STACK_OVERHEAD_US) / 1e6;
            let slots = depth.clamp(1, self.qd) as f64;
            let by_bytes = s.bw.map_or(0.0, |b| bytes / b as f64);
            if slots <= 1.0 {
                return requests * each + by_bytes;
            }
            let serial = serial.clamp(0.0, requests);
            ((requests - serial) * each / slots).max(by_bytes) + serial * each
        };
        side(&self.read, w.reads, 0.0, w.read_bytes, w.read_depth)
            + side(&self.write, w.writes, w.write_serial, w.write_bytes, w.write_depth)
    }
}

/// Time the stack adds to every request beyond the class's delay (FUSE, loop device,
/// NBD round trip), microseconds: fio 4 KiB random reads at queue depth 1 (2-core VM,
/// 2026-11-24) took 0.24-0.25 ms longer than the delay on ebs-gp2 (2 ms), ebs-io1 and
/// sd-card (1 ms), 0.31 ms on ebs-magnetic (10 ms), 0.5 ms on hdd (13 ms). The smallest
/// is used: the time estimate must not refuse a run that would fit.
pub const STACK_OVERHEAD_US: f64 = 250.0;

/// Block-device work: requests and bytes per direction, and how many requests the
/// issuer keeps in flight (a single reader: 1; writeback: many).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Work {
    pub reads: f64,
    pub read_bytes: f64,
    pub read_depth: u32,
    pub writes: f64,
    pub write_bytes: f64,
    pub write_depth: u32,
    /// Of `writes`, those that wait for all the others and go one after another (a
    /// create's journal commits): each pays its whole delay.
    pub write_serial: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses_and_round_trips() {
        for p in PRESETS {
            let c = DeviceClass::parse(p.name).unwrap();
            assert_eq!(c.name, p.name);
            assert_eq!(DeviceClass::parse(&c.text()).unwrap(), c, "{}", p.name);
            assert!(!p.source.is_empty() && !p.what.is_empty());
        }
    }

    #[test]
    fn ebs_magnetic_caps_at_500_iops_and_is_slower_at_qd1() {
        let c = DeviceClass::parse("ebs-magnetic").unwrap();
        assert_eq!(c.qd, 5);
        assert_eq!(c.delay_us(&c.read), 10_000);
        assert_eq!(c.expected_iops(&c.read, 32), Some(500.0));
        assert_eq!(c.expected_iops(&c.read, 1), Some(100.0));
        let io1 = DeviceClass::parse("ebs-io1").unwrap();
        assert_eq!(io1.expected_iops(&io1.read, 32), Some(3000.0));
        let gp2 = DeviceClass::parse("ebs-gp2").unwrap();
        assert_eq!(gp2.expected_iops(&gp2.read, 32), Some(1500.0));
        assert_eq!(gp2.delay_us(&gp2.read), 2000, "3 slots / 1,500 IOPS: whole milliseconds for nbdkit");
    }

    #[test]
    fn seconds_for_work() {
        let gp2 = DeviceClass::parse("ebs-gp2").unwrap();
        // 1,000 reads one at a time: 2 ms + 0.25 ms each, and 4 MB at 250 MiB/s.
        let r = Work { reads: 1000.0, read_bytes: 4096e3, read_depth: 1, ..Work::default() };
        let bytes = 4096e3 / 262144000.0;
        assert!((gp2.seconds_for(&r) - 2.25 - bytes).abs() < 1e-9, "{}", gp2.seconds_for(&r));
        // Deep: 3 slots at once, their delays passing while others wait for tokens.
        let deep = Work { read_depth: 32, ..r };
        assert!((gp2.seconds_for(&deep) - 0.75).abs() < 1e-9);
        // Bound by the bytes: 250 MiB at 250 MiB/s, the 10 requests' delays inside that
        // second, then 2 commits one after another.
        let big = Work {
            writes: 12.0,
            write_bytes: 250.0 * 1048576.0,
            write_depth: 32,
            write_serial: 2.0,
            ..Work::default()
        };
        assert!((gp2.seconds_for(&big) - 1.0045).abs() < 1e-9, "{}", gp2.seconds_for(&big));
        // Bound by the requests: 3,000 small ones in 3 slots, 12 MB hardly count.
        let small = Work { writes: 3000.0, write_bytes: 12e6, write_depth: 32, ..Work::default() };
        assert!((gp2.seconds_for(&small) - 2.25).abs() < 1e-9, "{}", gp2.seconds_for(&small));
        // Reads and writes add; nothing costs nothing.
        let both = Work { writes: big.writes, write_bytes: big.write_bytes, write_depth: 32, write_serial: 2.0, ..r };
        assert!((gp2.seconds_for(&both) - 2.25 - bytes - 1.0045).abs() < 1e-9);
        assert_eq!(gp2.seconds_for(&Work::default()), 0.0);
        // nbdkit's whole milliseconds: sd-card's 0.66 ms read is served as 1 ms.
        let sd = DeviceClass::parse("sd-card").unwrap();
        assert_eq!(sd.served_delay_us(&sd.read), 1000);
        assert_eq!(
            DeviceClass::parse("lat=300us").unwrap().served_delay_us(&Side { lat_us: 300, ..Side::default() }),
            1000
        );
    }

    #[test]
    fn explicit_parameters() {
        let c = DeviceClass::parse("lat=2ms,iops=500,bw=40MiB/s,qd=1").unwrap();
        assert_eq!(c.name, "custom");
        assert_eq!(c.read, Side { lat_us: 2000, iops: Some(500), bw: Some(40 << 20) });
        assert_eq!(c.read, c.write);
        assert_eq!(c.qd, 1);
        assert_eq!(c.text(), "lat=2ms,iops=500,bw=40MiB/s,qd=1");
        let d = DeviceClass::parse("rlat=500us,wlat=3ms").unwrap();
        assert_eq!((d.read.lat_us, d.write.lat_us, d.qd), (500, 3000, 1));
        // qd from the cap: 10 ms × 800 IOPS = 8 slots.
        assert_eq!(DeviceClass::parse("lat=10ms,iops=800").unwrap().qd, 8);
        // A preset with an override.
        let h = DeviceClass::parse("hdd,qd=4").unwrap();
        assert_eq!((h.name.as_str(), h.qd, h.read.lat_us), ("hdd", 4, 12_700));
        assert_eq!(h.text(), "hdd,qd=4");
    }

    #[test]
    fn refuses_bad_values_with_one_line() {
        let err = |s: &str| DeviceClass::parse(s).unwrap_err();
        for (s, want) in [
            ("floppy", "presets: hdd"),
            ("lat=2", "unit"),
            ("lat=x", "not a duration"),
            ("lat=20s", "10 s"),
            ("iops=0", "from 1"),
            ("qd=65", "from 1 to 64"),
            ("bw=1k", "at least 4 KiB/s"),
            ("speed=3", "unknown device class parameter"),
            ("lat=1ms,lat=2ms", "given twice"),
            ("qd=2", "that is just @ram"),
            ("", "empty device class"),
            ("hdd,", "empty device class"),
            ("hdd,lat", "key=value"),
        ] {
            let e = err(s);
            assert!(e.contains(want), "{s}: {e}");
            assert!(!e.contains('\n'), "{s}: one line");
        }
    }
}
