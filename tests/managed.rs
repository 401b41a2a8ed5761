//! Managed test file systems: create → write → refresh → teardown for every type, block
//! sizes applied, kill -9 cleanup, preflight errors. Needs root (CI runs as root);
//! otherwise each test prints "skipped: needs root" and passes.

use manyfiles::storage::fsspec::FsSpec;
use manyfiles::storage::kinds::{KindRecord, image::ImageRecord};
use manyfiles::storage::managed::ManagedFs;
use manyfiles::storage::registry;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const MIB: u64 = 1 << 20;

/// Tests that call `registry::cleanup` and check its report run one at a time (a parallel
/// cleanup could otherwise take another test's dead record first).
static CLEANUP: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn cleanup_lock() -> std::sync::MutexGuard<'static, ()> {
    CLEANUP.lock().unwrap_or_else(|e| e.into_inner())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

macro_rules! need_root {
    () => {
        if !is_root() {
            println!("skipped: needs root");
            return;
        }
    };
}

/// fstype of the mount at exactly `mp`, from /proc/self/mountinfo.
fn fstype_at(mp: &Path) -> Option<String> {
    registry::mounts_at(mp).last().map(|m| m.fs_type.clone())
}

fn bsize(p: &Path) -> u64 {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and out pointer.
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut s) }, 0);
    s.f_bsize as u64
}

fn losetup_j(image: &Path) -> String {
    let o = Command::new("losetup").arg("-j").arg(image).output().unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn records() -> Vec<PathBuf> {
    std::fs::read_dir(registry::state_dir())
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect())
        .unwrap_or_default()
}

fn record_for(mp: &Path) -> Option<PathBuf> {
    records().into_iter().find(|p| {
        std::fs::read(p)
            .ok()
            .and_then(|b| serde_json::from_slice::<registry::Record>(&b).ok())
            .is_some_and(|r| r.mount_point.as_deref() == Some(mp))
    })
}

/// The whole life of one managed file system; `want_bsize`: statvfs f_bsize expected.
fn lifecycle(spec: &str, bytes: u64, want_bsize: Option<u64>) {
    let spec = FsSpec::parse(spec).unwrap();
    ManagedFs::preflight(std::slice::from_ref(&spec), bytes).unwrap();
    let t0 = Instant::now();
    let mut fs = ManagedFs::create(&spec, bytes).unwrap_or_else(|e| panic!("{}: {e}", spec.label()));
    let t_create = t0.elapsed();
    let mp = fs.mount_point().to_path_buf();
    let d = fs.details().clone();
    assert_eq!(d.spec, spec.label());
    assert_eq!(d.formats, 1);
    assert_eq!(fstype_at(&mp).as_deref(), Some(spec.fs_type.mountinfo_type()), "{}", d.spec);
    assert!(!d.mount_command.is_empty());
    assert!(!d.mkfs_version.is_empty(), "{d:?}");
    let image = d.image.clone();
    let tmpfs = d.fs_type == "tmpfs";
    if tmpfs {
        assert!(d.device.is_none() && d.mkfs_command.is_empty());
    } else {
        assert!(image.is_file());
        let dev = d.device.clone().unwrap();
        assert!(losetup_j(&image).contains(&dev));
        assert_eq!(d.mkfs_command.last(), Some(&dev));
    }
    assert!(record_for(&mp).is_some(), "record registered");
    if let Some(b) = want_bsize {
        assert_eq!(bsize(&mp), b, "{}: statvfs f_bsize", d.spec);
    }
    let f = mp.join("hello.txt");
    std::fs::write(&f, b"hello").unwrap();
    assert!(f.exists());

    let t1 = Instant::now();
    fs.refresh().unwrap();
    let t_refresh = t1.elapsed();
    assert!(!f.exists(), "{}: refresh must give an empty file system", d.spec);
    assert_eq!(fs.details().formats, 2);
    assert_eq!(fstype_at(&mp).as_deref(), Some(spec.fs_type.mountinfo_type()));
    std::fs::write(&f, b"again").unwrap();

    let t2 = Instant::now();
    fs.teardown().unwrap();
    let t_teardown = t2.elapsed();
    fs.teardown().unwrap(); // idempotent
    assert!(fstype_at(&mp).is_none(), "unmounted");
    assert!(!mp.exists(), "mount point removed");
    if !tmpfs {
        assert!(!image.exists(), "image deleted");
        let dev = d.device.clone().unwrap();
        let bf = registry::loop_backing_file(&dev);
        assert!(bf.as_deref() != Some(image.as_path()), "{dev} still backed by {}", image.display());
    }
    assert!(record_for(&mp).is_none(), "record removed");
    println!(
        "TIMING {:<16} create {:>7.1} ms  refresh {:>7.1} ms  teardown {:>7.1} ms  ({} MiB)",
        d.spec,
        t_create.as_secs_f64() * 1e3,
        t_refresh.as_secs_f64() * 1e3,
        t_teardown.as_secs_f64() * 1e3,
        bytes / MIB
    );
}

#[test]
fn ext2_lifecycle() {
    need_root!();
    lifecycle("ext2", 64 * MIB, None);
}

#[test]
fn ext3_lifecycle() {
    need_root!();
    lifecycle("ext3:2k", 64 * MIB, Some(2048));
}

#[test]
fn ext4_lifecycle() {
    need_root!();
    // mke2fs picks 1k blocks for images this small ("small" type in mke2fs.conf).
    lifecycle("ext4", 64 * MIB, None);
}

#[test]
fn ext4_1k_block_applied() {
    need_root!();
    lifecycle("ext4:1k", 64 * MIB, Some(1024));
}

#[test]
fn xfs_lifecycle() {
    need_root!();
    lifecycle("xfs:1k", 320 * MIB, Some(1024));
}

#[test]
fn btrfs_lifecycle() {
    need_root!();
    lifecycle("btrfs", 128 * MIB, Some(4096));
}

#[test]
fn ntfs_lifecycle_64k_cluster() {
    need_root!();
    // ntfs-3g reports the cluster size as f_bsize.
    lifecycle("ntfs:64k", 64 * MIB, Some(65536));
}

#[test]
fn exfat_lifecycle_128k_cluster() {
    need_root!();
    // exfat-fuse reports the cluster size as f_bsize.
    lifecycle("exfat:128k", 64 * MIB, Some(131072));
}

#[test]
fn tmpfs_lifecycle() {
    need_root!();
    lifecycle("tmpfs", 64 * MIB, None);
}

#[test]
fn disk_backing_lifecycle() {
    need_root!();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    lifecycle(&format!("ext4@disk:{}", dir.path().display()), 64 * MIB, None);
}

/// Run by `killed_run_is_cleaned_up` in a child process: make an ext4, report, sleep.
#[test]
fn kill_child_helper() {
    if std::env::var_os("MANYFILES_KILL_CHILD").is_none() {
        return;
    }
    let fs = ManagedFs::create(&FsSpec::parse("ext4").unwrap(), 64 * MIB).unwrap();
    std::fs::write(fs.mount_point().join("x"), b"x").unwrap();
    let d = fs.details();
    println!("READY {} {} {}", fs.mount_point().display(), d.image.display(), d.device.clone().unwrap());
    std::thread::sleep(std::time::Duration::from_secs(120));
}

#[test]
fn killed_run_is_cleaned_up() {
    need_root!();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "kill_child_helper", "--nocapture", "--test-threads=1"])
        .env("MANYFILES_KILL_CHILD", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut r = BufReader::new(child.stdout.take().unwrap());
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap() == 0 {
            panic!("child ended before READY");
        }
        // libtest prints "test kill_child_helper ... " on the same line first.
        if let Some(i) = line.find("READY ") {
            line = line[i..].to_string();
            break;
        }
    }
    let parts: Vec<&str> = line.split_whitespace().collect();
    let (mp, image, dev) = (PathBuf::from(parts[1]), PathBuf::from(parts[2]), parts[3].to_string());
    let _g = cleanup_lock();
    child.kill().unwrap(); // SIGKILL: no destructors run
    child.wait().unwrap();
    assert_eq!(fstype_at(&mp).as_deref(), Some("ext4"), "left mounted by the killed child");
    assert!(image.exists());
    assert!(record_for(&mp).is_some());

    let rep = registry::cleanup().unwrap();
    println!("{rep}");
    assert!(rep.unmounted.iter().any(|m| Path::new(m) == mp), "{rep:?}");
    assert!(rep.detached.contains(&dev), "{rep:?}");
    assert!(rep.deleted.iter().any(|p| Path::new(p) == image), "{rep:?}");
    assert!(fstype_at(&mp).is_none());
    assert!(!mp.exists());
    assert!(!image.exists());
    assert!(registry::loop_backing_file(&dev).as_deref() != Some(image.as_path()));
    assert!(record_for(&mp).is_none());
}

#[test]
fn live_records_are_left_alone() {
    need_root!();
    let _g = cleanup_lock();
    let fs = ManagedFs::create(&FsSpec::parse("tmpfs").unwrap(), 8 * MIB).unwrap();
    let mp = fs.mount_point().to_path_buf();
    let rep = registry::cleanup().unwrap();
    assert!(rep.skipped_live >= 1, "{rep:?}");
    assert!(!rep.unmounted.iter().any(|m| Path::new(m) == mp));
    assert_eq!(fstype_at(&mp).as_deref(), Some("tmpfs"));
    assert!(record_for(&mp).is_some());
    drop(fs);
    assert!(fstype_at(&mp).is_none());
    assert!(record_for(&mp).is_none());
}

#[test]
fn cleanup_ignores_what_the_record_does_not_own() {
    need_root!();
    // A dead process's record naming an image that is not ours (wrong name) and a mount
    // point that is mounted from something else: both are left alone.
    let _g = cleanup_lock();
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let precious = dir.path().join("precious.img");
    std::fs::write(&precious, b"keep me").unwrap();
    let mp = dir.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    let st = Command::new("mount").args(["-t", "tmpfs", "-o", "size=1m", "someone-else"]).arg(&mp).status().unwrap();
    assert!(st.success());
    let mut rec = registry::own_record("ext4@ram");
    rec.start_time += 1; // looks like a reused pid: the recording process is gone
    rec.mount_point = Some(mp.clone());
    let image = ImageRecord { image: precious.clone(), loop_device: Some("/dev/loop999".into()) };
    rec.kind = KindRecord::Image(image);
    let key = format!("test-foreign-{}", std::process::id());
    let mut reg = registry::register(&key, rec).unwrap();
    // A record from before registry locks (this process holds the lock it just took):
    // liveness falls back to pid + start time, and the start time says "gone".
    reg.update(|r| r.lock = false).unwrap();
    let rec_path = reg.path().to_path_buf();
    std::fs::remove_file(rec_path.with_extension("lock")).unwrap();
    let rep = registry::cleanup().unwrap();
    let still_mounted = fstype_at(&mp).is_some();
    let _ = Command::new("umount").arg(&mp).status();
    let _ = std::fs::remove_file(&rec_path);
    assert!(still_mounted, "foreign mount must stay: {rep:?}");
    assert!(precious.exists(), "foreign file must stay: {rep:?}");
    assert!(!rep.problems.is_empty());
}

#[test]
fn preflight_names_the_missing_package() {
    need_root!();
    let specs = manyfiles::storage::fsspec::parse_list("ext4,xfs").unwrap();
    let e = ManagedFs::preflight_in(&specs, 320 * MIB, std::ffi::OsStr::new("/nonexistent")).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    let s = e.to_string();
    assert!(s.contains("mkfs.ext4 not found") && s.contains("e2fsprogs"), "{s}");
    // Only xfsprogs missing: a PATH with symlinks to everything but mkfs.xfs.
    let dir = tempfile::tempdir().unwrap();
    for t in ["mkfs.ext4", "losetup", "mount", "umount"] {
        let real = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(t))
            .find(|p| p.exists())
            .unwrap();
        std::os::unix::fs::symlink(real, dir.path().join(t)).unwrap();
    }
    let e = ManagedFs::preflight_in(&specs, 320 * MIB, dir.path().as_os_str()).unwrap_err();
    assert!(e.to_string().contains("mkfs.xfs not found: install the Debian package xfsprogs"), "{e}");
}

#[test]
fn preflight_checks_minimum_sizes_and_backing() {
    need_root!();
    let e = ManagedFs::preflight(&[FsSpec::parse("xfs").unwrap()], 64 * MIB).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("minimum for xfs (300 MiB)"), "{e}");
    let e = ManagedFs::preflight(&[FsSpec::parse("btrfs").unwrap()], 64 * MIB).unwrap_err();
    assert!(e.to_string().contains("btrfs (109 MiB)"), "{e}");
    let e = ManagedFs::preflight(&[FsSpec::parse("ext4@disk:/nonexistent-dir").unwrap()], 64 * MIB).unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
    let e = ManagedFs::preflight(&[FsSpec::parse("ext4").unwrap()], 1 << 50).unwrap_err();
    assert!(e.to_string().contains("free"), "{e}");
    ManagedFs::preflight(&manyfiles::storage::fsspec::parse_list("ext2,ext4,ntfs,exfat,tmpfs").unwrap(), 64 * MIB)
        .unwrap();
}

#[test]
fn not_root_is_bad_input() {
    need_root!();
    // Through the binary as nobody (the CLI's --fs calls preflight first).
    if Command::new("setpriv").arg("--version").output().is_err() {
        println!("skipped: no setpriv");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_manyfiles");
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", bin, "ladder", "--fs", "ext4", "--total", "64M"])
        .current_dir("/")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("needs root"), "{err}");
}
