//! The storage, not the page cache: write phases carry a returned and a durable time
//! (syncfs timed as part of the phase), read-side phases start cold (the trees' data
//! evicted even without root), every measurement records what the device did, and
//! managed images are sized for the tree's entries, not only its bytes.

mod reliability_common;

use reliability_common::*;
use serde_json::Value;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(600);

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn args(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

/// Measurements of `op` in a result file.
fn of<'a>(rs: &'a Value, op: &str) -> Vec<&'a Value> {
    rs["measurements"].as_array().unwrap().iter().filter(|m| m["op"] == op).collect()
}

/// Does the file system under `dir` have a block device /proc/diskstats lists?
fn on_block_device(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    if maj == 0 {
        return None;
    }
    let link = std::fs::read_link(format!("/sys/dev/block/{maj}:{min}")).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

/// A scratch directory on a disk (not tmpfs), or None.
fn disk_dir() -> Option<tempfile::TempDir> {
    ["/var/tmp", "/tmp"].iter().map(Path::new).filter(|d| on_block_device(d).is_some()).find_map(|d| {
        let t = tempfile::tempdir_in(d).ok()?;
        // world-writable, so that the tool can run as nobody in it
        std::fs::set_permissions(t.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).ok()?;
        Some(t)
    })
}

#[test]
fn write_phases_have_returned_and_durable_times() {
    let t = tempfile::tempdir().unwrap();
    let j = t.path().join("r.json");
    let work = t.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let a = [
        "ladder",
        "--target",
        work.to_str().unwrap(),
        "--total",
        "2MiB",
        "--from",
        "16",
        "--to",
        "256",
        "--ops",
        "create,read,copy,delete",
        "--runs",
        "2",
        "-q",
        "--json",
        j.to_str().unwrap(),
    ];
    let out = run_bounded(&args(&a), LIMIT, None);
    assert_eq!(out.code, Some(0), "{}", out.show());
    let rs = json(&j);
    assert_eq!(rs["experiment"]["until"], "durable");
    for op in ["create", "copy", "delete"] {
        let ms = of(&rs, op);
        assert!(!ms.is_empty(), "{op}");
        for m in ms {
            let (e, r, f) = (m["elapsed_s"].as_f64().unwrap(), m["returned_s"].as_f64(), m["flush_s"].as_f64());
            let (r, f) =
                (r.unwrap_or_else(|| panic!("{op}: no returned_s")), f.unwrap_or_else(|| panic!("{op}: no flush_s")));
            assert!(r > 0.0 && f >= 0.0 && e >= r + f - 1e-6, "{op}: elapsed {e} returned {r} flush {f}");
            // The flush is the per-portion series' own last portion (no files).
            let last = m["portions"].as_array().unwrap().last().unwrap();
            assert_eq!(last["files"], 0, "{op}");
            assert!((last["elapsed_s"].as_f64().unwrap() - f).abs() < 1e-9, "{op}");
        }
    }
    for m in of(&rs, "read") {
        assert!(m.get("returned_s").is_none(), "a read has one time");
        let c = m["cache"].as_str().unwrap();
        assert!(["data-evicted", "all-dropped", "not-applicable"].contains(&c), "read ran {c}");
    }
    for m in of(&rs, "create") {
        assert_eq!(m["cache"], "warm", "create is not made cold");
    }
    // The summaries use the durable times; the table says so.
    let create_raw: Vec<f64> = rs["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["op"] == "create" && s["tree_key"] == of(&rs, "create")[0]["tree_key"])
        .flat_map(|s| s["raw_s"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()))
        .collect();
    let durable: Vec<f64> = of(&rs, "create")
        .iter()
        .filter(|m| m["tree_key"] == of(&rs, "create")[0]["tree_key"])
        .map(|m| m["elapsed_s"].as_f64().unwrap())
        .collect();
    assert_eq!(create_raw, durable);
    assert!(out.stdout.contains("times: write phases are durable"), "{}", out.stdout);
}

#[test]
fn until_returned_and_cache_warm_switch_back() {
    let t = tempfile::tempdir().unwrap();
    let j = t.path().join("r.json");
    let work = t.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let a = [
        "ladder",
        "--target",
        work.to_str().unwrap(),
        "--total",
        "1MiB",
        "--from",
        "4",
        "--to",
        "64",
        "--runs",
        "2",
        "--until",
        "returned",
        "--cache",
        "warm",
        "-q",
        "--json",
        j.to_str().unwrap(),
    ];
    let out = run_bounded(&args(&a), LIMIT, None);
    assert_eq!(out.code, Some(0), "{}", out.show());
    let rs = json(&j);
    assert_eq!(rs["experiment"]["until"], "returned");
    assert_eq!(rs["experiment"]["caches"], "warm");
    let s = rs["summaries"].as_array().unwrap().iter().find(|s| s["op"] == "create").unwrap();
    let returned: Vec<f64> = of(&rs, "create")
        .iter()
        .filter(|m| m["tree_key"] == s["tree_key"])
        .map(|m| m["returned_s"].as_f64().unwrap())
        .collect();
    let raw: Vec<f64> = s["raw_s"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(raw, returned);
    assert!(of(&rs, "read").iter().all(|m| m["cache"] == "warm"));
    // The table says it in its footer (the per-column "create, returned" is --wide's).
    assert!(out.stdout.contains("times: write phases end when the last close returned"), "{}", out.stdout);
    assert!(out.stdout.contains("reads: warm"), "{}", out.stdout);
    // Bad values: one line naming the flag, exit 2.
    for (flag, v) in [("--until", "later"), ("--cache", "tepid")] {
        let a = ["ladder", "--target", work.to_str().unwrap(), flag, v];
        let out = run_bounded(&args(&a), LIMIT, None);
        assert_eq!(out.code, Some(2), "{}", out.show());
        assert!(out.stderr.contains(flag) && out.lines().len() == 1, "{}", out.show());
    }
}

/// A cold read by a user without root still moves the data from the device: the
/// device's read counter in the JSON covers the bytes read.
#[test]
fn cold_read_without_root_reads_the_device() {
    let Some(dir) = disk_dir() else {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI machines have a disk under /var/tmp");
        eprintln!("skipped: no disk-backed directory (/var/tmp, /tmp are not on a block device)");
        return;
    };
    let j = dir.path().join("r.json");
    let a = [
        "ladder",
        "--target",
        dir.path().to_str().unwrap(),
        "--total",
        "32MiB",
        "--second-total",
        "off",
        "--from",
        "64",
        "--to",
        "64",
        "--ops",
        "create,read",
        "--runs",
        "2",
        "-q",
        "--json",
        j.to_str().unwrap(),
    ];
    let out = if is_root() {
        // As nobody: no dropping of caches possible, only eviction of the trees' data.
        let mut full: Vec<OsString> =
            ["--reuid", "65534", "--regid", "65534", "--clear-groups", "--"].map(OsString::from).to_vec();
        full.push(bin().into());
        full.extend(args(&a));
        let o = std::process::Command::new("setpriv").args(&full).output().expect("setpriv (util-linux)");
        Out {
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    } else {
        run_bounded(&args(&a), LIMIT, None)
    };
    assert_eq!(out.code, Some(0), "{}", out.show());
    let rs = json(&j);
    let dev = on_block_device(dir.path()).unwrap();
    assert_eq!(rs["targets"][0]["device"], dev.as_str());
    for m in of(&rs, "read") {
        assert_eq!(m["cache"], "data-evicted", "without root only data are evicted");
        let bytes = m["bytes"].as_u64().unwrap();
        let read = m["device"]["read_bytes"].as_u64().unwrap();
        assert_eq!(bytes, 32 << 20);
        assert!(read >= bytes / 10 * 9, "the device read {read} of {bytes} bytes: the read was not cold");
    }
    for m in of(&rs, "create") {
        let w = m["device"]["write_bytes"].as_u64().unwrap();
        assert!(w >= 32 << 20, "a durable create wrote its data to the device ({w} bytes)");
    }
    assert!(out.stdout.contains("reads: cold for file data only"), "{}", out.stdout);
    assert!(out.stdout.contains(&format!("device {dev}")), "{}", out.stdout);
}

#[test]
fn fs_size_too_small_for_the_tree_is_refused() {
    let Some(_g) = root_only("managed file systems need root") else { return };
    let a = ["ladder", "--fs", "ext4", "--fs-size", "64MiB", "--total", "256MiB", "--to", "16"];
    let out = run_bounded(&args(&a), LIMIT, None);
    assert_eq!(out.code, Some(2), "{}", out.show());
    assert_eq!(out.lines().len(), 1, "{}", out.show());
    assert!(out.stderr.contains("--fs-size") && out.stderr.contains("use at least"), "{}", out.show());
}

/// `--cold` on ext4 checkpoints the journal first (freshly written metadata stay pinned
/// by the journal and survive drop_caches: the first cold walk of a new tree ran at
/// two thirds of the time of every later one). The ioctl works on ext4 and is refused
/// elsewhere (then `--cold` does what it did before).
#[test]
fn ext4_journal_checkpoint_is_accepted_on_ext4_only() {
    let Some(_g) = root_only("the checkpoint ioctl needs root (and mounting ext4 does)") else { return };
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("m");
    std::fs::create_dir(&mnt).unwrap();
    let up = run_bounded(&args(&["mount", "ext4@ram", mnt.to_str().unwrap(), "--size", "64MiB"]), LIMIT, None);
    assert_eq!(up.code, Some(0), "{}", up.show());
    std::fs::write(mnt.join("f"), b"x").unwrap();
    let fd = std::fs::File::open(&mnt).unwrap();
    let on_ext4 = manyfiles::storage::cache::checkpoint_ext4_journal(&fd);
    let tmp = std::fs::File::open("/dev/shm").unwrap();
    let on_tmpfs = manyfiles::storage::cache::checkpoint_ext4_journal(&tmp);
    drop(fd);
    let down = run_bounded(&args(&["umount", mnt.to_str().unwrap()]), LIMIT, None);
    assert_eq!(down.code, Some(0), "{}", down.show());
    on_ext4.expect("EXT4_IOC_CHECKPOINT on a mounted ext4 (Linux ≥ 5.13)");
    assert!(on_tmpfs.is_err(), "tmpfs has no ext4 journal");
}
