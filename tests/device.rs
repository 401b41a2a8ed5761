//! Real block devices (`--fs TYPE@dev:/dev/NAME --destroy-device /dev/NAME`), issue 12:
//! a ladder on a device works and leaves it unmounted; every safety interlock refuses
//! with exit 2 and one line and leaves the device's bytes as they were (sha256 before and
//! after); `manyfiles cleanup` after a kill -9 unmounts and leaves the device alone.
//!
//! The stand-in disk is always a loop device each test attaches over its own image file
//! and detaches afterwards (also on failure: `LoopDisk`'s drop). Needs root (CI is root).

mod reliability_common;

use reliability_common::{Out, bin, root_only, run_bounded};
use std::collections::BTreeSet;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;
const LIMIT: Duration = Duration::from_secs(180);

fn sh(cmd: &str, args: &[&str]) -> std::process::Output {
    Command::new(cmd).args(args).stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

fn ok(cmd: &str, args: &[&str]) -> String {
    let o = sh(cmd, args);
    assert!(o.status.success(), "{cmd} {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A loop device over a test-owned image; everything set up on it is undone on drop.
struct LoopDisk {
    _dir: tempfile::TempDir,
    img: PathBuf,
    dev: String,
    mounts: Vec<PathBuf>,
    swap: bool,
    dm: Option<String>,
}

impl LoopDisk {
    /// `mib` MiB holding an ext2 labelled "precious" (or, `partitioned`, a DOS table
    /// with one partition holding it). None (reason printed) when partitions do not work.
    fn new(mib: u64, partitioned: bool) -> Option<LoopDisk> {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("disk.img");
        std::fs::File::create(&img).unwrap().set_len(mib * MIB).unwrap();
        let img_s = img.to_str().unwrap().to_string();
        if partitioned {
            let mut c = Command::new("sfdisk").args(["-q", &img_s]).stdin(Stdio::piped()).spawn().unwrap();
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"start=2048, type=83\n").unwrap();
            assert!(c.wait().unwrap().success(), "sfdisk");
        } else {
            ok("mkfs.ext2", &["-q", "-L", "precious", &img_s]);
        }
        let args: Vec<&str> =
            if partitioned { vec!["-P", "--find", "--show", &img_s] } else { vec!["--find", "--show", &img_s] };
        let dev = ok("losetup", &args).trim().to_string();
        assert!(dev.starts_with("/dev/loop"), "{dev}");
        let d = LoopDisk { _dir: dir, img, dev, mounts: vec![], swap: false, dm: None };
        if partitioned {
            let p1 = d.part1();
            if !Path::new(&p1).exists() {
                // Some kernels do not scan loop partitions themselves: ask partx.
                let _ = sh("partx", &["-a", &d.dev]);
                let t0 = Instant::now();
                while !Path::new(&p1).exists() && t0.elapsed() < Duration::from_secs(5) {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            if !std::fs::metadata(&p1).is_ok_and(|m| m.file_type().is_block_device()) {
                eprintln!("skipped: partitions on loop devices do not appear here ({p1} missing)");
                return None;
            }
            ok("mkfs.ext2", &["-q", "-L", "precious", &p1]);
        }
        Some(d)
    }

    fn part1(&self) -> String {
        format!("{}p1", self.dev)
    }

    fn sha(&self) -> String {
        ok("sha256sum", &[&self.dev]).split_whitespace().next().unwrap().to_string()
    }

    fn mount(&mut self, what: &str) -> PathBuf {
        let mp = self._dir.path().join(format!("mnt{}", self.mounts.len()));
        std::fs::create_dir(&mp).unwrap();
        ok("mount", &["-o", "ro", what, mp.to_str().unwrap()]);
        self.mounts.push(mp.clone());
        mp
    }

    /// Still attached to our image?
    fn attached(&self) -> bool {
        let name = self.dev.trim_start_matches("/dev/");
        std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file"))
            .is_ok_and(|b| Path::new(b.trim_end()) == self.img)
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        for mp in self.mounts.drain(..).rev() {
            let _ = sh("umount", &[mp.to_str().unwrap()]);
        }
        if self.swap {
            let _ = sh("swapoff", &[&self.dev]);
        }
        if let Some(dm) = self.dm.take() {
            let _ = sh("dmsetup", &["remove", &dm]);
        }
        // Anything a failed test left mounted from the device or its partitions.
        for m in mounts_of(&self.dev) {
            let _ = sh("umount", &["-l", m.to_str().unwrap()]);
        }
        let _ = sh("partx", &["-d", &self.dev]);
        let _ = sh("losetup", &["-d", &self.dev]);
    }
}

/// Mount points whose source is `dev` or a partition of it.
fn mounts_of(dev: &str) -> Vec<PathBuf> {
    manyfiles::storage::registry::mounts()
        .into_iter()
        .filter(|m| m.source == dev || m.source.strip_prefix(dev).is_some_and(|r| r.starts_with('p')))
        .map(|m| m.mount_point)
        .collect()
}

/// Registry records (of any process, alive or dead) naming `dev`, by path. The machine
/// may hold records a killed process left behind (a run killed on another day, whose loop
/// device had the same name): the tests count only what appeared during their own run
/// ([`new_records_naming`]), or what their own child wrote ([`records_of`]).
fn records_naming(dev: &str) -> BTreeSet<PathBuf> {
    std::fs::read_dir(manyfiles::storage::registry::state_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains(&format!("\"{dev}\""))))
        .map(|e| e.path())
        .collect()
}

/// Records naming `dev` that were not there in `before`.
fn new_records_naming(dev: &str, before: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
    records_naming(dev).into_iter().filter(|p| !before.contains(p)).collect()
}

/// Records naming `dev` written by process `pid`.
fn records_of(dev: &str, pid: u32) -> Vec<PathBuf> {
    records_naming(dev)
        .into_iter()
        .filter(|p| {
            std::fs::read(p)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .is_some_and(|v| v["pid"] == pid)
        })
        .collect()
}

fn ladder(extra: &[&str]) -> Out {
    let mut a: Vec<String> =
        ["ladder", "--total", "64k", "--to", "4", "--runs", "1", "--quiet"].map(String::from).to_vec();
    a.extend(extra.iter().map(|s| s.to_string()));
    run_bounded(&a, LIMIT, None)
}

/// Refused with exit 2 and one line containing every word of `want`; the device's bytes
/// unchanged, nothing of it mounted, no record naming it.
fn refused(disk: &LoopDisk, extra: &[&str], want: &[&str]) {
    let before = disk.sha();
    let mounted_before = mounts_of(&disk.dev).len();
    let records_before = records_naming(&disk.dev);
    let o = ladder(extra);
    assert_eq!(o.code, Some(2), "{extra:?}: {}", o.show());
    let lines = o.lines();
    assert_eq!(lines.len(), 1, "{extra:?}: one line: {}", o.show());
    for w in want {
        assert!(lines[0].contains(w), "{extra:?}: '{w}' missing in: {}", lines[0]);
    }
    assert_eq!(disk.sha(), before, "{extra:?}: the device was written");
    assert_eq!(mounts_of(&disk.dev).len(), mounted_before, "{extra:?}: mounts changed");
    let left = new_records_naming(&disk.dev, &records_before);
    assert!(left.is_empty(), "{extra:?}: a registry record names the device: {left:?}");
    assert!(disk.attached());
}

fn schema_errors(doc: &serde_json::Value) -> Vec<String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema/result-v1.schema.json")).unwrap();
    let v = jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap();
    v.iter_errors(doc).map(|e| format!("{e} at {}", e.instance_path())).collect()
}

#[test]
fn ladder_on_a_device_works_and_leaves_it_unmounted() {
    let Some(_g) = root_only("formats a loop device") else { return };
    let disk = LoopDisk::new(32, false).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // Confirmed through a symlink (as /dev/disk/by-id/... would be): the same device.
    let link = tmp.path().join("by-id-link");
    std::os::unix::fs::symlink(&disk.dev, &link).unwrap();
    let json = tmp.path().join("r.json");
    let spec = format!("ext4@dev:{}", disk.dev);
    let records_before = records_naming(&disk.dev);
    let o = ladder(&["--fs", &spec, "--destroy-device", link.to_str().unwrap(), "--json", json.to_str().unwrap()]);
    assert_eq!(o.code, Some(0), "{}", o.show());
    // It said what it destroys: the device, its size, and the old file system.
    assert!(o.stderr.contains(&format!("formatting {}", disk.dev)) && o.stderr.contains("32 MiB"), "{}", o.show());
    assert!(o.stderr.contains("precious") && o.stderr.contains("ext2"), "{}", o.show());
    assert!(o.stderr.contains("signature: ") && o.stderr.contains("0x438"), "wipefs -n listed it: {}", o.show());
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let t = &doc["targets"][0];
    assert_eq!(t["mount_source"], disk.dev.as_str());
    let m = &t["managed"];
    assert_eq!(m["backing"], "dev");
    assert_eq!(m["device"], disk.dev.as_str());
    assert_eq!(m["image"], "");
    assert_eq!(m["mkfs_command"].as_array().unwrap().last().unwrap(), disk.dev.as_str());
    let info = &m["device_info"];
    let name = disk.dev.trim_start_matches("/dev/");
    assert_eq!(info["path"], disk.dev.as_str());
    assert_eq!(info["name"], name);
    assert_eq!(info["disk"], name);
    assert_eq!(info["partition"], false);
    assert_eq!(info["size_bytes"], 32 * MIB);
    assert!(info["rotational"].is_boolean(), "{info}");
    assert!(info["scheduler"].as_str().is_some_and(|s| !s.is_empty() && !s.contains('[')), "{info}");
    let sysfs_rot = std::fs::read_to_string(format!("/sys/block/{name}/queue/rotational")).unwrap();
    assert_eq!(info["rotational"], sysfs_rot.trim() == "1");
    assert!(doc["measurements"].as_array().unwrap().len() >= 6, "two rungs × three ops");
    let errs = schema_errors(&doc);
    assert!(errs.is_empty(), "{errs:#?}");
    // Left unmounted, still attached to our image, formatted as asked, no record left.
    assert!(mounts_of(&disk.dev).is_empty(), "still mounted: {:?}", mounts_of(&disk.dev));
    assert!(disk.attached());
    assert!(disk.img.is_file(), "the device's image is never deleted");
    assert!(ok("blkid", &["-p", &disk.dev]).contains("TYPE=\"ext4\""));
    let left = new_records_naming(&disk.dev, &records_before);
    assert!(left.is_empty(), "a registry record was left: {left:?}");
}

#[test]
fn every_interlock_refuses_and_leaves_the_device_untouched() {
    let Some(_g) = root_only("uses loop devices") else { return };
    let disk = LoopDisk::new(32, false).unwrap();
    let other = LoopDisk::new(32, false).unwrap();
    let dev = disk.dev.as_str();
    let spec = format!("ext4@dev:{dev}");
    // Not named twice.
    refused(&disk, &["--fs", &spec], &["--destroy-device", "name it again", dev]);
    // Named twice, but not the same device.
    refused(&disk, &["--fs", &spec, "--destroy-device", &other.dev], &["--destroy-device", "same device", dev]);
    refused(&other, &["--fs", &spec, "--destroy-device", &other.dev], &["--destroy-device"]);
    refused(&disk, &["--fs", &spec, "--destroy-device", "/nonexistent/sdz"], &["--destroy-device", "does not exist"]);
    // --destroy-device with nothing to format.
    let tmp = tempfile::tempdir().unwrap();
    refused(
        &disk,
        &["--target", tmp.path().to_str().unwrap(), "--destroy-device", dev],
        &["--destroy-device", "only makes sense"],
    );
    // One device as two targets, --fs-size, a type that does not fit.
    refused(&disk, &["--fs", &format!("{spec},ext2@dev:{dev}"), "--destroy-device", dev], &["--fs", "one target"]);
    refused(&disk, &["--fs", &spec, "--destroy-device", dev, "--fs-size", "1g"], &["--fs-size", "whole device"]);
    refused(&disk, &["--fs", &format!("xfs@dev:{dev}"), "--destroy-device", dev], &["--fs", "less than"]);
    // Not a block device: a regular file (left as it was), a character device, nothing.
    let file = tmp.path().join("plain.img");
    std::fs::write(&file, b"keep me").unwrap();
    let f = file.to_str().unwrap();
    refused(
        &disk,
        &["--fs", &format!("ext4@dev:{f}"), "--destroy-device", f],
        &["--fs", "regular file", "not a block device"],
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
    refused(&disk, &["--fs", "ext4@dev:/dev/null", "--destroy-device", "/dev/null"], &["--fs", "character device"]);
    refused(
        &disk,
        &["--fs", "ext4@dev:/dev/nonexistent-mf", "--destroy-device", "/dev/nonexistent-mf"],
        &["--fs", "does not exist"],
    );
    let outs = tmp.path().read_dir().unwrap().count();
    assert_eq!(outs, 1, "nothing created in the target directory");
}

#[test]
fn a_mounted_device_is_refused() {
    let Some(_g) = root_only("mounts a loop device") else { return };
    let mut disk = LoopDisk::new(32, false).unwrap();
    let dev = disk.dev.clone();
    let mp = disk.mount(&dev);
    refused(
        &disk,
        &["--fs", &format!("ext4@dev:{dev}"), "--destroy-device", &dev],
        &["--fs", "mounted", mp.to_str().unwrap()],
    );
}

#[test]
fn a_device_with_a_mounted_partition_is_refused() {
    let Some(_g) = root_only("partitions a loop device") else { return };
    let Some(mut disk) = LoopDisk::new(32, true) else { return };
    let dev = disk.dev.clone();
    let p1 = disk.part1();
    disk.mount(&p1);
    let p1_name = p1.trim_start_matches("/dev/").to_string();
    refused(&disk, &["--fs", &format!("ext4@dev:{dev}"), "--destroy-device", &dev], &["--fs", &p1_name, "mounted"]);
}

#[test]
fn a_swap_device_is_refused() {
    let Some(_g) = root_only("swaps on a loop device") else { return };
    let mut disk = LoopDisk::new(32, false).unwrap();
    let dev = disk.dev.clone();
    ok("mkswap", &[&dev]);
    let on = sh("swapon", &[&dev]);
    if !on.status.success() {
        eprintln!("skipped: swapon does not work here: {}", String::from_utf8_lossy(&on.stderr).trim());
        return;
    }
    disk.swap = true;
    refused(&disk, &["--fs", &format!("ext4@dev:{dev}"), "--destroy-device", &dev], &["--fs", "swap"]);
}

#[test]
fn a_held_device_is_refused() {
    let Some(_g) = root_only("holds a loop device") else { return };
    let mut disk = LoopDisk::new(32, false).unwrap();
    let dev = disk.dev.clone();
    let args = ["--fs", &format!("ext4@dev:{dev}"), "--destroy-device", &dev].map(String::from);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // A program holding it open exclusively (as mkfs, md or dm do).
    {
        use rustix::fs::{Mode, OFlags};
        let _fd =
            rustix::fs::open(dev.as_str(), OFlags::RDONLY | OFlags::EXCL | OFlags::CLOEXEC, Mode::empty()).unwrap();
        refused(&disk, &args, &["--fs", "busy"]);
    }
    // A dm device over it (a holder, as LVM makes), where device-mapper works.
    let works = sh("dmsetup", &["version"]).status.success() && Path::new("/dev/mapper/control").exists();
    if !works {
        eprintln!("skipped the dm holder case: device-mapper is not available here (dmsetup version failed)");
        return;
    }
    let name = format!("manyfiles-test-{}", std::process::id());
    let table = format!("0 {} linear {dev} 0", 32 * MIB / 512);
    ok("dmsetup", &["create", &name, "--table", &table]);
    disk.dm = Some(name);
    refused(&disk, &args, &["--fs", "held by dm-"]);
}

#[test]
fn cleanup_after_a_kill_unmounts_and_leaves_the_device_alone() {
    let Some(_g) = root_only("formats a loop device") else { return };
    let disk = LoopDisk::new(96, false).unwrap();
    let dev = disk.dev.clone();
    let spec = format!("ext4@dev:{dev}");
    // --reuse: one mkfs, so the kill lands in the measuring, not in a reformat.
    let mut child = Command::new(bin())
        .args(["ladder", "--fs", &spec, "--destroy-device", &dev, "--reuse", "--total", "2m", "--to", "512"])
        .args(["--runs", "1000", "--quiet"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while mounts_of(&dev).is_empty() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let mounted = mounts_of(&dev);
    child.kill().unwrap(); // SIGKILL: no teardown ran
    child.wait().unwrap();
    assert_eq!(mounted.len(), 1, "the run mounted the device");
    assert_eq!(mounts_of(&dev), mounted, "left mounted by the killed run");
    let pid = child.id();
    assert_eq!(records_of(&dev, pid).len(), 1, "the run recorded the device");
    let o = run_bounded(&["cleanup"], LIMIT, None);
    assert_eq!(o.code, Some(0), "{}", o.show());
    assert!(mounts_of(&dev).is_empty(), "cleanup unmounted it: {}", o.show());
    assert!(!mounted[0].exists(), "the mount point directory is gone");
    assert_eq!(records_of(&dev, pid), Vec::<PathBuf>::new(), "cleanup removed the run's record");
    // The device itself: still attached to our image, image kept, file system intact.
    assert!(disk.attached());
    assert_eq!(std::fs::metadata(&disk.img).unwrap().len(), 96 * MIB);
    assert!(ok("blkid", &["-p", &dev]).contains("TYPE=\"ext4\""));
    let fsck = sh("e2fsck", &["-n", "-f", &dev]);
    assert!(fsck.status.success(), "the file system is consistent: {}", String::from_utf8_lossy(&fsck.stdout));
}
