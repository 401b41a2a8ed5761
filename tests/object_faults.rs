//! The object engines when the store misbehaves or the user slips (RELIABILITY.md, the
//! object-store rows): connections reset mid-request by the stack's toxiproxy
//! (`reset_peer`) — copy up, copy down and rm still complete, byte for byte, the
//! retries counted in the JSON — on S3 (manyfiles-s3server) and Azure Blob (Azurite);
//! SIGINT mid-upload — `copied` is what landed; `sync --delete` onto a bare bucket —
//! refused without `--whole-bucket`. Needs root, FUSE, s3fs, manyfiles-s3server,
//! azurite-blob and toxiproxy-server (as tests/object_engines.rs and
//! tests/object_azblob.rs): without them each test prints why it skipped, except under
//! CI (CI=true), where a skip is a failure.

mod common;
#[allow(unused_macros)]
#[macro_use]
mod object_common;

use common::serial;
use manyfiles::storage::object_stack::Provider;
use object_common::{files, json, requests};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn missing_blob() -> Option<String> {
    let stack = |path: &std::ffi::OsStr| manyfiles::storage::azblob_stack::preflight("azblob", path).err();
    common::missing(&[&stack])
}

/// A `manyfiles mount s3@rtt=1ms` or `azblob@rtt=1ms` for one test, taken down when
/// dropped; its toxiproxy's API reached in the stack's network namespace.
struct Stack {
    mp: PathBuf,
    _dir: tempfile::TempDir,
    provider: Provider,
}

impl Stack {
    fn up(provider: Provider) -> Stack {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let mp = dir.path().canonicalize().unwrap();
        let spec = format!("{}@rtt=1ms", provider.name());
        common::run(["mount", spec.as_str(), mp.to_str().unwrap(), "--size", "256MiB"]).ok();
        Stack { mp, _dir: dir, provider }
    }

    /// `PROVIDER://manyfiles/PREFIX` (the stack's bucket or container).
    fn url(&self, prefix: &str) -> String {
        format!("{}://manyfiles/{prefix}", self.provider.name())
    }

    fn run(&self, args: &[&str]) -> common::Run {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--store-via", self.mp.to_str().unwrap()]);
        common::run(&all)
    }

    /// One request to the stack's toxiproxy API (its port in the proxy's log), from a
    /// thread inside the stack's network namespace; the answer's body (a 2xx status).
    fn proxy(&self, method: &str, path: &str, body: &str) -> String {
        let reach = manyfiles::storage::object_endpoint::from_mount(&self.mp, self.provider).unwrap();
        let netns = reach.netns.expect("a mount's stack has a namespace");
        let log = std::fs::read_to_string(netns.parent().unwrap().join("toxiproxy.log")).unwrap();
        let line = log.lines().find(|l| l.contains("Starting Toxiproxy HTTP server")).expect("the API's address");
        let port: u16 =
            line.split("\"address\":\"127.0.0.1:").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        std::thread::spawn(move || {
            let ns = std::fs::File::open(&netns).unwrap();
            // SAFETY: setns on an open nsfs fd; only this (new) thread moves.
            assert_eq!(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns");
            let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            c.write_all(req.as_bytes()).unwrap();
            let mut out = String::new();
            c.read_to_string(&mut out).unwrap();
            assert!(out.split(' ').nth(1).is_some_and(|s| s.starts_with('2')), "toxiproxy API: {out}");
            out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()
        })
        .join()
        .unwrap()
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let r = common::run(["umount", self.mp.to_str().unwrap()]);
        if r.code != Some(0) && !std::thread::panicking() {
            panic!("umount: {}", r.stderr);
        }
    }
}

/// Files in 4 directories, a few bytes to ~3 KiB each, mtimes with nanoseconds.
fn make_files(root: &Path, n: usize) {
    for i in 0..n {
        let d = root.join(format!("d{}", i % 4));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join(format!("f{i:05}"));
        let data: Vec<u8> = (0..(i * 7) % 3000).map(|k| (k * 13 + i) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let when = std::time::SystemTime::UNIX_EPOCH + Duration::new(1_600_000_000 + i as u64, 7 + i as u32);
        std::fs::File::options().write(true).open(&p).unwrap().set_modified(when).unwrap();
    }
}

/// Requests that failed and were sent again (absent from the JSON when none).
fn retried(v: &serde_json::Value) -> u64 {
    v["requests"]["failed"].as_u64().unwrap_or(0)
}

/// Half the connections through the proxy reset 30 ms after they open: copy up, copy
/// down and rm complete, every object and file whole, the retries counted.
fn resets_are_retried(provider: Provider) {
    let stack = Stack::up(provider);
    let work = tempfile::tempdir().unwrap();
    let (src, back, j) = (work.path().join("src"), work.path().join("back"), work.path().join("s.json"));
    let n = 1_500u64;
    make_files(&src, n as usize);
    let (src_s, back_s, j_s) = (src.to_str().unwrap(), back.to_str().unwrap(), j.to_str().unwrap());
    let toxic =
        r#"{"name":"reset","type":"reset_peer","stream":"downstream","toxicity":0.5,"attributes":{"timeout":30}}"#;
    stack.proxy("POST", "/proxies/share/toxics", toxic);

    let r = stack.run(&["copy", src_s, &stack.url("r"), "--quiet", "--json", j_s]);
    r.ok();
    let v = json(&j);
    assert_eq!((v["copied"].as_u64(), v["failed"].as_u64()), (Some(n), Some(0)), "{}", r.stdout);
    assert!(retried(&v) > 0 && requests(&v, "put") >= n, "no reset was retried: {v}");
    assert!(r.stdout.contains("failed and retried"), "{}", r.stdout);

    let r = stack.run(&["copy", &stack.url("r"), back_s, "--quiet", "--json", j_s, "--force"]);
    r.ok();
    let v = json(&j);
    assert_eq!((v["copied"].as_u64(), v["failed"].as_u64()), (Some(n), Some(0)), "{}", r.stdout);
    assert!(retried(&v) > 0, "no reset was retried on the way down: {v}");
    assert_eq!(files(&back), files(&src), "the tree downloaded through resets differs");

    let r = stack.run(&["rm", &stack.url("r"), "--quiet", "--json", j_s, "--force"]);
    r.ok();
    assert_eq!((json(&j)["deleted"].as_u64(), json(&j)["failed"].as_u64()), (Some(n), Some(0)), "{}", r.stdout);

    stack.proxy("DELETE", "/proxies/share/toxics/reset", "");
    let r = stack.run(&["scan", &stack.url("r"), "--json", j_s, "--force"]);
    r.ok();
    assert_eq!(json(&j)["objects"].as_u64(), Some(0), "{}", r.stdout);
}

#[test]
fn resets_mid_request_are_retried_and_counted_on_s3() {
    need_stack!();
    let _g = serial();
    resets_are_retried(Provider::S3);
}

#[test]
fn resets_mid_request_are_retried_and_counted_on_azure_blob() {
    if common::skipped(missing_blob()) {
        return;
    }
    let _g = serial();
    resets_are_retried(Provider::Azblob);
}

/// SIGINT mid-upload with 64 requests in flight: the summary's `copied` is exactly what
/// landed under the prefix (every request in flight awaited and counted), its PUTs at
/// least as many.
#[test]
fn after_sigint_copied_is_what_landed() {
    need_stack!();
    let _g = serial();
    let stack = Stack::up(Provider::S3);
    let work = tempfile::tempdir().unwrap();
    let (src, j) = (work.path().join("src"), work.path().join("s.json"));
    std::fs::create_dir(&src).unwrap();
    for i in 0..4_000 {
        std::fs::write(src.join(format!("f{i:05}")), b"x").unwrap();
    }
    let child = Command::new(common::bin())
        .args(["copy", src.to_str().unwrap(), "s3://manyfiles/int", "-q", "--json", j.to_str().unwrap()])
        .args(["--store-via", stack.mp.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Past the walk and the first LIST, well before 4,000 PUTs are done.
    std::thread::sleep(Duration::from_millis(900));
    // SAFETY: a signal to the child this test started (it has not been waited for).
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&j);
    let copied = v["copied"].as_u64().unwrap();
    assert!(copied > 0 && copied < 4_000, "the signal came too late or too early: {stdout}");
    let r = stack.run(&["scan", "s3://manyfiles/int", "--json", j.to_str().unwrap(), "--force"]);
    r.ok();
    let landed = json(&j)["objects"].as_u64().unwrap();
    assert_eq!(copied, landed, "copied (the summary) against the objects under the prefix: {stdout}");
    assert!(requests(&v, "put") >= landed, "{v}");
}

/// `sync --delete` onto a bare bucket or container would delete everything in it that
/// SRC has not: refused (exit 2, one line naming --whole-bucket) for an upload and for an
/// object → object sync, nothing touched; with the flag it does what it says.
#[test]
fn sync_delete_onto_a_bare_bucket_needs_whole_bucket() {
    need_stack!();
    let _g = serial();
    let stack = Stack::up(Provider::S3);
    let work = tempfile::tempdir().unwrap();
    let (src, other) = (work.path().join("src"), work.path().join("other"));
    make_files(&src, 3);
    make_files(&other, 5);
    let (src_s, other_s) = (src.to_str().unwrap(), other.to_str().unwrap());
    stack.run(&["copy", other_s, "s3://manyfiles/users/own", "--quiet"]).ok();
    for dst in ["s3://manyfiles/", "s3://manyfiles"] {
        let r = stack.run(&["sync", "--delete", src_s, dst, "--quiet"]);
        common::assert_bad_input(&r, "--whole-bucket", "sync --delete onto a bare bucket");
        let r = stack.run(&["sync", "--delete", "-n", src_s, dst, "--quiet"]);
        common::assert_bad_input(&r, "--whole-bucket", "sync -n --delete onto a bare bucket");
        let r = stack.run(&["sync", "--delete", "s3://manyfiles/users", dst, "--quiet"]);
        common::assert_bad_input(&r, "--whole-bucket", "object → object sync --delete onto a bare bucket");
    }
    // Nothing was touched: the user's objects are all there.
    let back = work.path().join("back");
    stack.run(&["copy", "s3://manyfiles/users/own", back.to_str().unwrap(), "--quiet"]).ok();
    assert_eq!(files(&back), files(&other));
    // Without --delete, and onto a prefix, no flag is needed.
    stack.run(&["sync", src_s, "s3://manyfiles/", "--quiet"]).ok();
    stack.run(&["sync", "--delete", src_s, "s3://manyfiles/p", "--quiet"]).ok();
    // With it: what SRC has not goes, anywhere in the bucket.
    let j = work.path().join("s.json");
    let r = stack.run(&["sync", "--delete", "--whole-bucket", src_s, "s3://manyfiles/", "--json", j.to_str().unwrap()]);
    r.ok();
    assert_eq!(json(&j)["deleted"].as_u64(), Some(5 + 3), "users/own/… and p/…: {}", r.stdout);
    // A local DST of a plain sync takes no such flag.
    let r = common::run(["sync", "--delete", "--whole-bucket", src_s, back.to_str().unwrap()]);
    common::assert_bad_input(&r, "--whole-bucket", "--whole-bucket with local sides");
}
