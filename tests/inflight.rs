//! The engines' adaptive in-flight (`engine::inflight`), end to end through the CLI:
//! - on a share at a 5 ms round trip (`share:sftp@rtt=5ms`: sshd + toxiproxy + sshfs;
//!   needs root, FUSE, openssh-server, sshfs and toxiproxy-server — skipped with the
//!   reason without them, except under CI (CI=true), where a skip is a failure), a `copy`
//!   and a `scan` of 2,000 files of 4 KiB raise it to 8 or more (the JSON's `in_flight`:
//!   the limit's max and the most batches seen running at once);
//! - on local storage there is no gate: the engines' threads as before (the cores for
//!   scan and rm, twice the cores for copy), and the summary says so;
//! - `--in-flight N` holds it at N, `--threads N` runs without it (as before); 0 and 1025
//!   are bad input, both at once too.

mod common;

use common::serial;
use manyfiles::storage::fsspec::FsSpec;
use manyfiles::storage::registry::{self, Record};
use manyfiles::storage::share_stack;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn cores() -> u64 {
    std::thread::available_parallelism().map(|n| n.get() as u64).unwrap_or(1)
}

/// `dirs` directories of `per` files of `size` bytes below `root`.
fn tree(root: &Path, dirs: usize, per: usize, size: usize) {
    let data = vec![7u8; size];
    for d in 0..dirs {
        let dir = root.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..per {
            std::fs::write(dir.join(format!("f{f:05}")), &data).unwrap();
        }
    }
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// (start, max, peak, samples, mode) of a document's `in_flight`.
fn in_flight(doc: &Value) -> (u64, u64, u64, u64, String) {
    let f = &doc["in_flight"];
    (
        f["start"].as_u64().unwrap(),
        f["max"].as_u64().unwrap(),
        f["peak"].as_u64().unwrap_or(0),
        f["samples"].as_u64().unwrap(),
        f["mode"].as_str().unwrap().to_string(),
    )
}

#[test]
fn local_storage_keeps_the_start() {
    let _g = serial();
    // Local storage (here RAM, /dev/shm where there is one): no gate, the engines' own
    // threads as before the controller (it cost 4–11% on local nested trees); the
    // summary says so. --in-flight still puts a gate on local storage.
    let shm = Path::new("/dev/shm");
    let t = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.unwrap();
    let src = t.path().join("src");
    tree(&src, 4, 500, 100);
    let (dst, j) = (t.path().join("dst"), t.path().join("j.json"));
    let r =
        common::run(["copy", src.to_str().unwrap(), dst.to_str().unwrap(), "--quiet", "--json", j.to_str().unwrap()]);
    r.ok();
    let doc = json(&j);
    assert_eq!(doc["in_flight"]["mode"], "fixed", "{doc}");
    assert_eq!(doc["in_flight"]["start"].as_u64(), Some(2 * cores()));
    assert!(doc["in_flight"]["peak"].is_null(), "no gate: {doc}");
    assert!(r.stdout.contains("one operation per thread; adaptive on FUSE and network file systems"), "{}", r.stdout);
    for (verb, args) in [
        ("scan", vec!["scan", src.to_str().unwrap(), "--json", j.to_str().unwrap()]),
        ("rm", vec!["rm", dst.to_str().unwrap(), "--quiet", "--json", j.to_str().unwrap()]),
    ] {
        common::run(&args).ok();
        let doc = json(&j);
        assert_eq!(doc["in_flight"]["mode"], "fixed", "{verb}: {doc}");
        assert_eq!(doc["in_flight"]["start"].as_u64(), Some(cores()), "{verb}");
        assert!(doc["in_flight"]["peak"].is_null(), "{verb}: no gate");
    }
}

#[test]
fn in_flight_and_threads_fix_it_and_bad_values_are_refused() {
    let _g = serial();
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    tree(&src, 1, 300, 100);
    let j = t.path().join("j.json");
    for (flag, n) in [("--in-flight", "5"), ("--threads", "3")] {
        common::run(["scan", src.to_str().unwrap(), flag, n, "--json", j.to_str().unwrap()]).ok();
        let doc = json(&j);
        assert_eq!(doc["in_flight"]["mode"], "fixed", "{flag}");
        assert_eq!(doc["in_flight"]["max"].as_u64().unwrap().to_string(), n, "{flag}");
        match doc["in_flight"]["peak"].as_u64() {
            // --in-flight: a gate held at N, its passes counted.
            Some(peak) => assert!(flag == "--in-flight" && peak <= 5, "{flag}: peak {peak}"),
            // --threads: no gate, as before the controller.
            None => assert_eq!(flag, "--threads"),
        }
    }
    let dst = t.path().join("dst");
    let r = common::run(["sync", "-n", src.to_str().unwrap(), dst.to_str().unwrap(), "--in-flight", "7", "--quiet"]);
    r.ok();
    assert!(r.stdout.contains("in flight: 7 (fixed; at most "), "{}", r.stdout);
    for (cmd, bad) in [("scan", "0"), ("rm", "1025"), ("copy", "0")] {
        let mut args = vec![cmd, src.to_str().unwrap()];
        if cmd == "copy" {
            args.push(dst.to_str().unwrap());
        }
        args.extend(["--in-flight", bad]);
        let r = common::run(&args);
        common::assert_bad_input(&r, "--in-flight", if bad == "0" { "at least 1" } else { "at most 1024" });
    }
    assert!(src.join("d0/f00000").exists(), "rm with a bad --in-flight removed nothing");
    // Both at once: refused by the parser (exit 2).
    common::run(["scan", src.to_str().unwrap(), "--threads", "2", "--in-flight", "4"]).expect_code(2);
}

/// Why this machine cannot mount `share:sftp`, if it cannot.
fn missing() -> Option<String> {
    let sftp = |path: &std::ffi::OsStr| {
        let spec = "share:sftp@rtt=0ms";
        let s = FsSpec::parse(spec).unwrap();
        share_stack::preflight(spec, s.share().unwrap(), path).err()
    };
    common::missing(&[&sftp])
}

/// Mounts `share:sftp@rtt=5ms` at `mp` for the life of the value.
struct Mounted<'a>(&'a Path);

impl<'a> Mounted<'a> {
    fn new(mp: &'a Path) -> Mounted<'a> {
        common::run(["mount", "share:sftp@rtt=5ms", mp.to_str().unwrap(), "--size", "128MiB"]).ok();
        Mounted(mp)
    }
}

impl Drop for Mounted<'_> {
    fn drop(&mut self) {
        let r = common::run(["umount", self.0.to_str().unwrap()]);
        if !std::thread::panicking() {
            r.ok();
        }
    }
}

/// The export's mount point (the server's side) of the share whose client is at `mp`.
fn export_of(mp: &Path) -> PathBuf {
    let recs: Vec<Record> = std::fs::read_dir(registry::state_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        // `manyfiles mount` records end in .mount; the stack's other records in .json.
        .filter(|p| p.extension().is_some_and(|x| x == "json" || x == "mount"))
        .filter_map(|p| serde_json::from_slice(&std::fs::read(&p).ok()?).ok())
        .collect();
    let client = recs.iter().find(|r| share_stack::is_client(r) && r.mount_point.as_deref() == Some(mp)).unwrap();
    let export = recs.iter().find(|r| r.share_dir == client.share_dir && !share_stack::is_client(r)).unwrap();
    export.mount_point.clone().unwrap()
}

#[test]
fn a_share_at_5ms_gets_8_or_more_in_flight() {
    let _g = serial();
    if common::skipped(missing()) {
        return;
    }
    // 2,000 files of 4 KiB in 8 directories (a create holds its directory's lock for its
    // whole round trip: the engine's walk threads work on several directories at once).
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    tree(&src, 8, 250, 4096);
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let mp = dir.path().canonicalize().unwrap();
    let j = t.path().join("j.json");
    let _m = Mounted::new(&mp);
    // --lossy: sshfs keeps no nanoseconds, xattrs or ACLs; what it cannot hold is not
    // this test's business.
    let dst = mp.join("dst");
    let r = common::run([
        "copy",
        src.to_str().unwrap(),
        dst.to_str().unwrap(),
        "--quiet",
        "--lossy",
        "--json",
        j.to_str().unwrap(),
    ]);
    r.ok();
    print!("{}", r.stdout);
    let doc = json(&j);
    assert_eq!(doc["copied"].as_u64(), Some(2000));
    let (start, max, peak, samples, _) = in_flight(&doc);
    println!("copy to the share: start {start}, max {max}, peak {peak}, {samples} periods, {} s", doc["elapsed_s"]);
    // On a share the limit starts at 16 (the cores, if more) and climbs from there.
    assert_eq!(start, cores().max(16), "copy to a share: the start");
    assert!(max > start && peak >= 8, "copy to a share at 5 ms: start {start}, max {max}, peak {peak} in flight");
    // A tree the client has never listed, made on the server's side: sshfs keeps what it
    // listed for 20 s (dcache_timeout), and a scan answered from that would pay no round
    // trips. sshfs's listings carry every entry's attributes (its statx answers are then
    // local): through it, a scan's round trips are its directories' (open, read, close),
    // so 2,000 files in 400 directories.
    let fresh = "made-by-the-server";
    tree(&export_of(&mp).join(fresh), 400, 5, 4096);
    let r = common::run(["scan", mp.join(fresh).to_str().unwrap(), "--json", j.to_str().unwrap()]);
    r.ok();
    print!("{}", r.stdout);
    let doc = json(&j);
    assert_eq!(doc["files"].as_u64(), Some(2000));
    let (start, max, peak, samples, _) = in_flight(&doc);
    println!("scan of the share: start {start}, max {max}, peak {peak}, {samples} periods, {} s", doc["elapsed_s"]);
    assert_eq!(start, cores().max(16), "scan of a share: the start");
    assert!(max >= 16 && peak >= 8, "scan of a share at 5 ms: max {max}, peak {peak} in flight");
    let r = common::run(["rm", mp.join(fresh).to_str().unwrap(), "--quiet", "--json", j.to_str().unwrap()]);
    r.ok();
    let doc = json(&j);
    let (start, max, peak, samples, _) = in_flight(&doc);
    println!(
        "rm on the share: start {start}, max {max}, peak {peak}, {samples} periods, {} s (not asserted)",
        doc["elapsed_s"]
    );
}
