//! `pack` onto an object store (`--dst-fs s3@rtt=1ms`): a real tree goes up as loose
//! objects and as tar shards of two sizes, read all and read one file back; the requests
//! of every step are exactly what the tree asks (a PUT per file loose; a PUT per shard,
//! by the packing rule, and one for the index; LIST + a GET per object; the index + a GET
//! per shard; one GET, or the index and a range GET), the one file read is the source's
//! (the run checks it byte for byte and fails otherwise), the advice names the shard size
//! from which sharding pays, and nothing of the stack is left. The same onto Azure Blob
//! (Azurite) with Blob's counts; onto a bucket of the user's (`--dst-target s3://…
//! --s3-via DIR`) only the run's own keys are written and deleted, the user's stay as
//! they were, and a missing bucket is exit 2; SIGINT mid-run exits 130 and leaves no
//! record; after a kill -9 `cleanup` deletes the run's own objects there (through the
//! mount) and nothing else. Bad combinations are exit 2
//! with one line before anything is made. Needs root, FUSE, s3fs, manyfiles-s3server and
//! toxiproxy-server (as tests/object_store.rs): without them the stack test prints why it
//! skipped, except under CI (CI=true), where a skip is a failure.

mod common;
#[macro_use]
mod object_common;

use common::serial;
use manyfiles::storage::registry;
use std::path::Path;

/// `files` files of `size` bytes, each of its own bytes, in three directories.
fn make_tree(root: &Path, files: usize, size: usize) {
    for i in 0..files {
        let dir = root.join(format!("d{}", i % 3));
        std::fs::create_dir_all(&dir).unwrap();
        let data: Vec<u8> = (0..size).map(|j| (i * 131 + j * 7 + j / 251) as u8).collect();
        std::fs::write(dir.join(format!("file-{i:04}")), data).unwrap();
    }
}

/// The measurement of `op` in run 1.
fn measurement<'a>(doc: &'a serde_json::Value, op: &str) -> &'a serde_json::Value {
    let all = doc["measurements"].as_array().unwrap();
    all.iter().find(|m| m["op"] == op && m["run"] == 1).unwrap_or_else(|| panic!("no {op} measurement"))
}

/// (kind, count) of every kind of request `op` sent in run 1 that is not zero.
fn sent(doc: &serde_json::Value, op: &str) -> Vec<(String, u64)> {
    let r = measurement(doc, op)["requests"].as_object().unwrap_or_else(|| panic!("{op}: no requests"));
    let mut v: Vec<(String, u64)> =
        r.iter().map(|(k, v)| (k.clone(), v.as_u64().unwrap())).filter(|(_, n)| *n > 0).collect();
    v.sort();
    v
}

/// The result file against the published schema.
fn assert_schema_valid(doc: &serde_json::Value) {
    let schema = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema/result-v1.schema.json")).unwrap();
    let v = jsonschema::validator_for(&serde_json::from_str(&schema).unwrap()).unwrap();
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .filter(|e| !e.ends_with("/provenance/built_from"))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

/// `manyfiles ARGS`: what it printed and its process id.
fn run_pack(args: &[&str]) -> (common::Run, u32) {
    let child = std::process::Command::new(common::bin())
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let run = common::Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    (run, pid)
}

fn kinds(v: &[(&str, u64)]) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = v.iter().map(|(k, n)| (k.to_string(), *n)).collect();
    v.sort();
    v
}

#[test]
fn loose_objects_against_shards_count_every_request_and_advise_a_size() {
    need_stack!();
    let _g = serial();
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    let tree = work.path().join("tree");
    // 150 files of 3,000 bytes: 512 + 3,072 = 3,584 bytes each in a tar archive.
    let (files, size) = (150u64, 3000usize);
    make_tree(&tree, files as usize, size);
    let json = work.path().join("r.json");
    let (r, pid) = run_pack(&[
        "pack",
        tree.to_str().unwrap(),
        "--src-target",
        work.path().to_str().unwrap(),
        "--dst-fs",
        "s3@rtt=1ms",
        "--shard-size",
        "64KiB,1MiB",
        "--runs",
        "2",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    r.ok();
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // 64 KiB: (65,536 − 1,024 for the archive's end) / 3,584 = 18 files a shard → 9
    // shards; 1 MiB: one. Each with its index.
    for (route, shards) in [("tar@64KiB", 9u64), ("tar@1MiB", 1)] {
        assert_eq!(sent(&doc, &format!("{route}:put")), kinds(&[("put", shards + 1)]), "{route}");
        assert_eq!(sent(&doc, &format!("{route}:get-all")), kinds(&[("get", shards + 1)]), "{route}");
        assert_eq!(sent(&doc, &format!("{route}:get-one")), kinds(&[("get", 2)]), "{route}");
        // One file, its bytes and the index's (bodies are counted as they came).
        let m = measurement(&doc, &format!("{route}:get-one"));
        assert_eq!(m["files"].as_u64(), Some(1), "{m}");
        assert!(m["bytes"].as_u64().unwrap() > size as u64, "{m}");
        assert_eq!(measurement(&doc, &format!("{route}:put"))["files"], files);
    }
    // tar.zst (a default format beside tar): a zstd frame a file, so the patterned files
    // compress into fewer shards than tar's 9; get-all GETs them all, get-one two.
    let zput = sent(&doc, "tar.zst@64KiB:put");
    let n = zput.iter().find(|k| k.0 == "put").map(|k| k.1).unwrap_or(0);
    assert!((2..10).contains(&n), "tar.zst@64KiB: {n} PUTs (shards and the index)");
    assert_eq!(sent(&doc, "tar.zst@64KiB:get-all"), kinds(&[("get", n)]));
    assert_eq!(sent(&doc, "tar.zst@64KiB:get-one"), kinds(&[("get", 2)]));
    let stored = |op: &str| measurement(&doc, op)["bytes"].as_u64().unwrap();
    assert!(stored("tar.zst@64KiB:put") < stored("tar@64KiB:put") / 2, "compressed: {}", stored("tar.zst@64KiB:put"));
    assert_eq!(measurement(&doc, "tar.zst@64KiB:get-one")["files"].as_u64(), Some(1));
    assert_eq!(sent(&doc, "loose:put"), kinds(&[("put", files)]));
    assert_eq!(sent(&doc, "loose:get-all"), kinds(&[("get", files), ("list", 1)]));
    assert_eq!(sent(&doc, "loose:get-one"), kinds(&[("get", 1)]));
    assert_eq!(measurement(&doc, "loose:get-one")["bytes"], size as u64);
    assert_schema_valid(&doc);
    // Every step priced at the provider's list prices.
    let put = measurement(&doc, "loose:put");
    assert!(put["cost"]["prices"].as_str().unwrap().starts_with("AWS S3 Standard"), "{put}");
    assert!((put["cost"]["amount"].as_f64().unwrap() - files as f64 * 0.005 / 1000.0).abs() < 1e-12, "{put}");
    // The tables, where sharding pays and the advice: a shard size named.
    let out = &r.stdout;
    assert!(out.contains("where sharding pays"), "{out}");
    let advice = out.lines().find(|l| l.starts_with("advice for 150 files")).unwrap_or_else(|| panic!("{out}"));
    let named = ["tar", "tar.zst"].iter().any(|f| {
        advice.contains(&format!("shard into {f} shards of 64 KiB"))
            || advice.contains(&format!("shard into {f} shards of 1 MiB"))
    });
    assert!(named, "{advice}");
    assert!(out.contains("upload:") && out.contains("read one file:"), "{out}");
    // The source only read; nothing of the stack left.
    assert_eq!(std::fs::read_dir(tree.join("d0")).unwrap().count(), 50);
    assert!(records_of(pid).is_empty(), "records left: {:?}", records_of(pid));
    // The HTML page has the routes and the advice.
    let html = work.path().join("r.html");
    common::run(["report", json.to_str().unwrap(), "--html", html.to_str().unwrap()]).ok();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Routes onto the object store") && page.contains("tar@64KiB"), "the routes table");
    assert!(page.contains("advice for 150 files"), "the advice");
}

#[test]
fn shards_need_an_object_store_and_sizes_in_range() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().to_str().unwrap();
    let r = common::run(["pack", "--files", "4", "--src-target", t, "--shard-size", "1MiB"]);
    common::assert_bad_input(&r, "--shard-size", "shards without an object store");
    let r = common::run(["pack", "--files", "4", "--src-target", t, "--dst-fs", "s3", "--shard-size", "1k"]);
    common::assert_bad_input(&r, "--shard-size", "a shard below 4 KiB");
    let r = common::run(["pack", "--files", "4", "--src-target", t, "--dst-fs", "s3", "--shard-size", "2GiB"]);
    common::assert_bad_input(&r, "--shard-size", "a shard above 1 GiB");
    let r = common::run(["pack", "--files", "4", "--src-target", t, "--dst-fs", "s3", "--containers", "erofs"]);
    common::assert_bad_input(&r, "--containers", "a container that is not tar onto an object store");
    let r = common::run(["pack", "--files", "4", "--src-target", t, "--dst-fs", "s3", "--containers", "tar,tar.gz"]);
    common::assert_bad_input(&r, "--containers", "a container not known");
    let r = common::run(["pack", "--files", "4", "--src-fs", "s3"]);
    common::assert_bad_input(&r, "--src-fs", "an object store as the source");
    assert!(common::run_dirs(dir.path()).is_empty(), "nothing made");
}

/// The registry's records of the run with process id `pid`.
fn records_of(pid: u32) -> Vec<String> {
    std::fs::read_dir(registry::state_dir())
        .map(|rd| {
            rd.flatten()
                .filter(|e| {
                    let Ok(text) = std::fs::read(e.path()) else { return false };
                    let v: serde_json::Value = serde_json::from_slice(&text).unwrap_or_default();
                    v["pid"].as_u64() == Some(pid as u64)
                        || e.file_name().to_string_lossy().contains(&format!("-{pid}-"))
                })
                .map(|e| e.path().display().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn onto_azure_blob_the_same_routes_count_blobs_requests() {
    let blob = |path: &std::ffi::OsStr| manyfiles::storage::azblob_stack::preflight("azblob", path).err();
    if common::skipped(object_common::missing().or_else(|| common::missing(&[&blob]))) {
        return;
    }
    let _g = serial();
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    let tree = work.path().join("tree");
    make_tree(&tree, 30, 4096);
    let json = work.path().join("r.json");
    let (w, t, j) = (work.path().to_str().unwrap(), tree.to_str().unwrap(), json.to_str().unwrap());
    let args = ["pack", t, "--src-target", w, "--dst-fs", "azblob@rtt=1ms", "--shard-size", "64KiB", "--runs", "1"];
    let r = common::run(args.iter().copied().chain(["--quiet", "--json", j]));
    r.ok();
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // 4,608 bytes a file in the archive: 14 a 64 KiB shard → 3 shards, and the index.
    assert_eq!(sent(&doc, "tar@64KiB:put"), kinds(&[("put", 4)]));
    assert_eq!(sent(&doc, "tar@64KiB:get-all"), kinds(&[("get", 4)]));
    assert_eq!(sent(&doc, "tar@64KiB:get-one"), kinds(&[("get", 2)]));
    // Blob lists 5,000 names a page.
    assert_eq!(sent(&doc, "loose:get-all"), kinds(&[("get", 30), ("list", 1)]));
    let put = measurement(&doc, "loose:put");
    assert!(put["cost"]["prices"].as_str().unwrap().starts_with("Azure Blob Storage hot LRS"), "{put}");
    assert!(r.stdout.contains("advice for 30 files"), "{}", r.stdout);
}

/// Run `manyfiles ARGS --json JSON`, SIGINT it once its loose upload is recorded; its
/// exit code and process id.
fn interrupted(args: &[&str], json: &Path) -> (Option<i32>, u32) {
    let mut child = std::process::Command::new(common::bin())
        .args(args)
        .args(["--quiet", "--json", json.to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Once the loose upload is recorded: the signal lands in a later step.
    let recorded = || std::fs::read_to_string(json).is_ok_and(|t| t.contains("\"loose:put\""));
    let mut ended = None;
    let seen = common::wait_until(std::time::Duration::from_secs(300), || {
        ended = child.try_wait().unwrap();
        ended.is_some() || recorded()
    });
    assert!(seen && ended.is_none(), "the run ended ({ended:?}) or never recorded its upload");
    std::thread::sleep(std::time::Duration::from_millis(300));
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    (out.status.code(), pid)
}

#[test]
fn sigint_mid_upload_keeps_what_finished_and_leaves_no_stack() {
    need_stack!();
    let _g = serial();
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    let json = work.path().join("r.json");
    let w = work.path().to_str().unwrap();
    let args = ["pack", "--files", "3000", "--size", "4k", "--src-target", w, "--dst-fs", "s3@rtt=1ms", "--runs", "3"];
    let (_, pid) = interrupted(&args, &json);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(doc["measurements"].as_array().unwrap().iter().any(|m| m["op"] == "loose:put"), "kept");
    assert!(records_of(pid).is_empty(), "records left: {:?}", records_of(pid));
    assert!(common::run_dirs(work.path()).is_empty(), "the source's run directory left");
}

#[test]
fn sigint_onto_a_users_bucket_leaves_only_the_users_objects() {
    need_stack!();
    let _g = serial();
    let store = object_common::Store::up();
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    let mine = work.path().join("mine");
    object_common::make_tree(&mine);
    let dst = "s3://manyfiles/mine";
    store.run(&["copy", mine.to_str().unwrap(), dst, "--quiet"]).ok();
    let json = work.path().join("r.json");
    let (w, via) = (work.path().to_str().unwrap(), store.mp.to_str().unwrap());
    let args = [
        "pack",
        "--files",
        "3000",
        "--size",
        "4k",
        "--src-target",
        w,
        "--dst-target",
        dst,
        "--s3-via",
        via,
        "--runs",
        "3",
    ];
    interrupted(&args, &json);
    let back = work.path().join("back");
    store.run(&["copy", dst, back.to_str().unwrap(), "--quiet"]).ok();
    let (a, b) = (object_common::files(&mine), object_common::files(&back));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "only the user's objects under the prefix");
}

#[test]
fn onto_a_users_bucket_only_its_own_keys_are_written_and_deleted() {
    need_stack!();
    let _g = serial();
    let store = object_common::Store::up();
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    // The user's own objects under the prefix: they stay as they are.
    let mine = work.path().join("mine");
    object_common::make_tree(&mine);
    let dst = "s3://manyfiles/mine";
    store.run(&["copy", mine.to_str().unwrap(), dst, "--quiet"]).ok();
    let tree = work.path().join("tree");
    make_tree(&tree, 40, 4096);
    let json = work.path().join("r.json");
    let (w, t, j) = (work.path().to_str().unwrap(), tree.to_str().unwrap(), json.to_str().unwrap());
    let r = store.run(
        &["pack", t, "--src-target", w, "--dst-target", dst, "--shard-size", "64KiB", "--runs", "1"]
            .into_iter()
            .chain(["--quiet", "--json", j])
            .collect::<Vec<_>>(),
    );
    r.ok();
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // 40 files of 4 KiB: 14 a 64 KiB shard → 3 shards and the index.
    assert_eq!(sent(&doc, "loose:put"), kinds(&[("put", 40)]));
    assert_eq!(sent(&doc, "tar@64KiB:put"), kinds(&[("put", 4)]));
    assert_eq!(sent(&doc, "tar@64KiB:get-one"), kinds(&[("get", 2)]));
    assert!(measurement(&doc, "loose:put")["target"].as_str().unwrap().ends_with("→ s3://manyfiles/mine/"), "{doc}");
    assert!(r.stdout.contains("advice for 40 files"), "{}", r.stdout);
    // Under the prefix: the user's objects, and nothing else.
    let back = work.path().join("back");
    store.run(&["copy", dst, back.to_str().unwrap(), "--quiet"]).ok();
    let (a, b) = (object_common::files(&mine), object_common::files(&back));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    assert!(a.iter().all(|(k, v)| b[k].0 == v.0), "the user's objects changed");
    // A bucket the store has not: one line, exit 2.
    let r = store.run(&["pack", t, "--src-target", w, "--dst-target", "s3://no-such-bucket/x", "--runs", "1", "-q"]);
    common::assert_bad_input(&r, "s3://no-such-bucket", "a missing bucket");
    assert!(common::run_dirs(work.path()).is_empty(), "a run directory left on the source");
}

/// How many objects `manyfiles scan URL --s3-via` counts below `url`.
fn scanned(store: &object_common::Store, url: &str) -> Option<u64> {
    let r = store.run(&["scan", url]);
    r.stdout.split(": ").nth(1).and_then(|t| t.split(' ').next()?.parse::<u64>().ok())
}

/// kill -9 of `pack --dst-target s3://BUCKET/PREFIX --s3-via DIR` mid-upload, an object
/// of someone else's put below the run's own prefix while it ran: the run's record names
/// that prefix and the mount it went through, and `cleanup` reaches the store through
/// that mount, deletes the run's own objects there and leaves the other byte for byte,
/// counted; the user's objects under PREFIX are as they were.
#[test]
fn kill_9_onto_a_users_bucket_then_cleanup_deletes_only_the_runs_own_keys() {
    need_stack!();
    let _g = serial();
    let store = object_common::Store::up();
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    let mine = work.path().join("mine");
    object_common::make_tree(&mine);
    let dst = "s3://manyfiles/mine";
    store.run(&["copy", mine.to_str().unwrap(), dst, "--quiet"]).ok();
    let (w, via) = (work.path().to_str().unwrap(), store.mp.to_str().unwrap());
    let args = ["pack", "--files", "3000", "--size", "4k", "--src-target", w, "--dst-target", dst, "--s3-via", via];
    let mut child = std::process::Command::new(common::bin())
        .args(args)
        .args(["--runs", "20", "--quiet"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stderr.take().unwrap()));
    let run_prefix = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.split("writes only below s3://manyfiles/").nth(1).map(|p| p.trim().to_string()))
        .expect("the run's own prefix printed");
    std::thread::spawn(move || lines.for_each(drop));
    assert!(run_prefix.starts_with("mine/manyfiles-pack-") && run_prefix.ends_with('/'), "{run_prefix}");
    let url = format!("s3://manyfiles/{run_prefix}");
    let texts = records_of(child.id()).into_iter().filter_map(|p| std::fs::read_to_string(p).ok());
    let rec = texts.into_iter().find(|t| t.contains(&run_prefix)).expect("a record names the prefix");
    assert!(rec.contains(via), "the record names no mount: {rec}");
    let intruder = work.path().join("intruder");
    std::fs::create_dir_all(&intruder).unwrap();
    std::fs::write(intruder.join("theirs"), b"not the run's").unwrap();
    store.run(&["copy", intruder.to_str().unwrap(), &format!("{url}zz-intruder"), "--quiet"]).ok();
    let there = common::wait_until(std::time::Duration::from_secs(120), || scanned(&store, &url).unwrap_or(0) > 1);
    assert!(there, "no object of the run's was ever seen below {url}");
    child.kill().unwrap();
    child.wait().unwrap();
    let left = scanned(&store, &url).unwrap();
    assert!(left > 1, "the kill left nothing to clean up");
    let r = common::run(["cleanup"]);
    r.ok();
    let deleted = format!("deleted below a killed run's own prefix: {url}: {} object(s)", left - 1);
    assert!(r.stdout.contains(&deleted), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("{url}: 1 object(s) that this run did not write")), "{}", r.stdout);
    assert!(records_of(child.id()).is_empty(), "a record of the killed run stays");
    let back = work.path().join("back");
    store.run(&["copy", dst, back.to_str().unwrap(), "--quiet"]).ok();
    let mut b = object_common::files(&back);
    let theirs = b.remove(&format!("{}zz-intruder/theirs", run_prefix.trim_start_matches("mine/")));
    assert_eq!(theirs.map(|t| t.0), Some(b"not the run's".to_vec()), "someone else's object deleted");
    let a = object_common::files(&mine);
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "the user's objects, and nothing else");
    assert!(a.iter().all(|(k, v)| b[k].0 == v.0), "the user's objects changed");
}
