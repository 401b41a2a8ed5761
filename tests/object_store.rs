//! Object stores (`--fs s3@rtt=…`): `manyfiles mount` brings one up (server, proxy and
//! s3fs; the endpoint, bucket and credentials file printed, never the credentials),
//! files written through the mount reach the bucket, `umount` leaves nothing (no
//! process, mount, namespace, directory or record); a short ladder through s3fs prints
//! its table and keeps the credentials out of stdout, stderr and the JSON; SIGINT mid-
//! ladder, and kill -9 followed by `cleanup`, leave nothing; a missing server is named
//! with how to get it; the native ops (`obj:put` …) send exactly the requests their trees
//! ask, by kind, and run only on object stores. Azure Blob stores (`--fs azblob@rtt=…`,
//! Azurite): `mount` prints the endpoint, container and connection-string file (never the
//! key) and `umount` leaves nothing; a ladder over an S3 and a blob store counts each
//! one's requests exactly and prices them at its provider's list prices in the table,
//! the JSON and the HTML page; file ops are refused on a blob store. Needs root, FUSE,
//! s3fs, manyfiles-s3server (tools/s3server) and toxiproxy-server (and for the blob
//! tests azurite-blob): without them each test prints why it skipped, except under CI
//! (CI=true), where .ci/run installs them and a skip is a failure.

mod common;

use common::serial;
use manyfiles::storage::fsspec::FsSpec;
use manyfiles::storage::managed::{ManagedFs, find_in_path};
use manyfiles::storage::registry::{self, Record};
use manyfiles::storage::{azblob_stack, object_stack};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Why this machine cannot run the tests, if it cannot.
fn missing() -> Option<String> {
    let stack = |path: &std::ffi::OsStr| object_stack::preflight("s3", path).err();
    common::missing(&[&stack])
}

macro_rules! need_stack {
    () => {
        if common::skipped(missing()) {
            return;
        }
    };
}

/// Why this machine cannot run the blob store tests (and the S3 store beside it).
fn missing_blob() -> Option<String> {
    let stack = |path: &std::ffi::OsStr| azblob_stack::preflight("azblob", path).err();
    missing().or_else(|| common::missing(&[&stack]))
}

/// An object store as its records name it.
#[derive(Debug, Clone)]
struct Stack {
    dir: PathBuf,
    client_mp: PathBuf,
    recs: Vec<PathBuf>,
    export_mp: Option<PathBuf>,
    pid: u32,
    /// Its network namespace (device, inode), as first seen.
    netns: Option<(u64, u64)>,
}

fn records() -> Vec<(PathBuf, Record)> {
    std::fs::read_dir(registry::state_dir())
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json" || x == "mount"))
                .filter_map(|p| Some((p.clone(), serde_json::from_slice(&std::fs::read(&p).ok()?).ok()?)))
                .collect()
        })
        .unwrap_or_default()
}

fn netns_of(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let ns = dir.join("netns");
    registry::mounts_at(&ns).iter().any(|m| m.fs_type == "nsfs").then_some(())?;
    std::fs::metadata(&ns).ok().map(|m| (m.dev(), m.ino()))
}

/// The object stores the registry names (a client's record is of kind "object"; a blob
/// store's mount point's, "azblob").
fn stacks() -> Vec<Stack> {
    let all = records();
    all.iter()
        .filter(|(_, r)| ["object", "azblob"].contains(&r.kind.tag()))
        .map(|(p, r)| {
            let dir = r.share_dir.clone().unwrap();
            let export = all.iter().find(|(q, e)| e.share_dir.as_ref() == Some(&dir) && q != p);
            Stack {
                client_mp: r.mount_point.clone().unwrap(),
                recs: std::iter::once(p.clone()).chain(export.map(|(q, _)| q.clone())).collect(),
                export_mp: export.and_then(|(_, e)| e.mount_point.clone()),
                pid: r.pid,
                netns: netns_of(&dir),
                dir,
            }
        })
        .collect()
}

/// Processes in the stack's namespace or naming its directory: "PID ARGV".
fn stack_processes(s: &Stack) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let d = format!("{}/", s.dir.display());
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else { continue };
        if cmd.is_empty() {
            continue; // a zombie (its parent, init, reaps it)
        }
        let text = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let ns = std::fs::metadata(e.path().join("ns/net")).ok().map(|m| (m.dev(), m.ino()));
        if text.contains(&d) || (s.netns.is_some() && ns == s.netns) {
            out.push(format!("{pid} {}", text.trim()));
        }
    }
    out
}

/// What the stack left: processes, mounts, namespace, directory, records.
fn leftovers(s: &Stack) -> Vec<String> {
    let mut v = stack_processes(s);
    for mp in std::iter::once(&s.client_mp).chain(s.export_mp.iter()) {
        v.extend(registry::mounts_at(mp).into_iter().map(|m| format!("mount {} ({})", mp.display(), m.fs_type)));
    }
    let src = object_stack::fsname(&s.dir);
    let all = registry::mounts();
    v.extend(all.iter().filter(|m| m.source == src).map(|m| format!("mount {:?}", m.mount_point)));
    v.extend(all.iter().filter(|m| m.mount_point.starts_with(&s.dir)).map(|m| format!("mount {:?}", m.mount_point)));
    if s.dir.exists() {
        v.push(format!("directory {}", s.dir.display()));
    }
    v.extend(s.recs.iter().filter(|r| r.exists()).map(|r| format!("record {}", r.display())));
    v
}

/// The access key and secret in the stack's credentials file (a blob store's: the key
/// in its connection string).
fn credentials(dir: &Path) -> Vec<String> {
    if let Ok(c) = std::fs::read_to_string(dir.join("connection-string")) {
        let key = azblob_stack::field(&c, "AccountKey").unwrap();
        assert!(key.len() >= 32, "{key}");
        return vec![key];
    }
    let text = std::fs::read_to_string(dir.join("credentials")).unwrap();
    let v: Vec<String> = text.lines().filter_map(|l| l.split_once(" = ")).map(|(_, v)| v.trim().to_string()).collect();
    assert!(v.len() == 2 && v.iter().all(|s| s.len() >= 16), "{text}");
    v
}

/// The real uid of `pid`.
fn uid_of(pid: &str) -> u32 {
    let st = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = st.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The stack's processes ("PID ARGV"), checked: its `server` and its proxy run, neither
/// as root nor as the other's uid.
fn server_and_proxy_confined(stack: &Stack, server: &str) -> Vec<String> {
    let procs = stack_processes(stack);
    let pid_of = |name: &str| procs.iter().find(|p| p.contains(name)).map(|p| p.split(' ').next().unwrap().to_string());
    let (server, proxy) = (pid_of(server).expect("server"), pid_of("toxiproxy").expect("proxy"));
    assert!(uid_of(&server) != 0 && uid_of(&proxy) != 0 && uid_of(&server) != uid_of(&proxy), "{procs:?}");
    procs
}

/// `umount MP` takes `stack` down whole; the user's directory stays.
fn umount_leaves_nothing(stack: &Stack, mp: &Path) {
    let u = common::run(["umount", mp.to_str().unwrap()]);
    u.ok();
    let left = leftovers(stack);
    assert!(left.is_empty(), "umount left {left:?}: {}", u.stdout);
    assert!(mp.is_dir(), "the user's directory stays");
}

/// The HTTP status of `GET /manyfiles/` to 127.0.0.1:`port` in the network namespace
/// bound at `ns` (from a thread that joined it), with `auth` as its Authorization header.
fn http_status_in(ns: &Path, port: u16, auth: Option<&str>) -> String {
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(ns).unwrap();
    let req = format!(
        "GET /manyfiles/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{}Connection: close\r\n\r\n",
        auth.map(|a| format!("Authorization: {a}\r\n")).unwrap_or_default()
    );
    std::thread::spawn(move || {
        // SAFETY: setns on an open nsfs file; only this thread moves.
        assert_eq!(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) }, 0);
        let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        let _ = c.read_to_string(&mut out);
        out.split(' ').nth(1).unwrap_or("").to_string()
    })
    .join()
    .unwrap()
}

#[test]
fn mount_write_umount_leaves_nothing() {
    need_stack!();
    let _g = serial();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let mp = dir.path().canonicalize().unwrap();
    let r = common::run(["mount", "s3@rtt=1ms", mp.to_str().unwrap(), "--size", "64MiB"]);
    r.ok();
    assert_eq!(registry::mounts_at(&mp).last().map(|m| m.fs_type.clone()).as_deref(), Some("fuse.s3fs"));
    let stack = stacks().into_iter().find(|s| s.client_mp == mp).expect("registered");
    let cred = stack.dir.join("credentials");
    for want in ["endpoint http://127.0.0.1:", "bucket manyfiles", "s3://manyfiles/", &cred.display().to_string()] {
        assert!(r.stdout.contains(want), "mount prints {want}: {}", r.stdout);
    }
    for secret in credentials(&stack.dir) {
        assert!(!r.stdout.contains(&secret) && !r.stderr.contains(&secret), "a credential printed");
    }
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&cred).unwrap().permissions().mode() & 0o777, 0o600);
    // Server, proxy and client outlive the command; the server and proxy not as root.
    let procs = server_and_proxy_confined(&stack, object_stack::SERVER);
    assert!(procs.iter().any(|p| p.contains("s3fs")), "{procs:?}");
    // The endpoint is the namespace's: nothing on the host's loopback; there, a request
    // without the stack's access key is refused, one naming it is served.
    let after = r.stdout.split("endpoint http://127.0.0.1:").nth(1).unwrap();
    let port: u16 = after.chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap();
    let ns = stack.dir.join("netns");
    let host = std::net::TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(500));
    assert!(host.is_err(), "the endpoint's port {port} answers on the host's 127.0.0.1");
    let key = &credentials(&stack.dir)[0];
    let anonymous = http_status_in(&ns, port, None);
    let named = http_status_in(
        &ns,
        port,
        Some(&format!("AWS4-HMAC-SHA256 Credential={key}/20260101/us-east-1/s3/aws4_request")),
    );
    assert_eq!((anonymous.as_str(), named.as_str()), ("403", "200"), "GET /manyfiles/ status without and with the key");
    // Files written through the mount are objects in the bucket, read back.
    std::fs::create_dir(mp.join("d")).unwrap();
    for i in 0..5 {
        std::fs::write(mp.join(format!("d/f{i}")), format!("object {i}")).unwrap();
    }
    assert_eq!(std::fs::read_to_string(mp.join("d/f3")).unwrap(), "object 3");
    let names: Vec<String> =
        std::fs::read_dir(mp.join("d")).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into()).collect();
    assert_eq!(names.len(), 5, "{names:?}");
    // The bucket's database file on the export holds them (s3bolt: one file).
    let db = stack.export_mp.as_ref().unwrap().join("s3/objects.bolt");
    let bytes = std::fs::read(&db).unwrap();
    assert!(bytes.windows(8).any(|w| w == b"object 3"), "the object's data is in {}", db.display());
    // Plain cleanup keeps the user's mount.
    common::run(["cleanup"]).ok();
    assert!(registry::mounts_at(&mp).last().is_some());
    umount_leaves_nothing(&stack, &mp);
}

#[test]
fn a_short_ladder_prints_its_table_and_no_credentials() {
    need_stack!();
    let _g = serial();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let child = Command::new(common::bin())
        .args(["ladder", "--fs", "s3@rtt=1ms", "--total", "1MiB", "--to", "256", "--runs", "2", "--quiet", "--json"])
        .arg(&json)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Read the stack's credentials while it runs (they go with it).
    let t0 = Instant::now();
    let secrets = loop {
        if let Some(s) = stacks().into_iter().find(|s| s.pid == pid && s.dir.join("credentials").exists()) {
            break credentials(&s.dir);
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "the ladder's object store never came up");
        std::thread::sleep(Duration::from_millis(20));
    };
    let t = Instant::now();
    let r = child.wait_with_output().unwrap();
    println!("ladder --fs s3@rtt=1ms --total 1MiB --to 256 --runs 2: {:.0} s", t.elapsed().as_secs_f64());
    let (stdout, stderr) = (String::from_utf8_lossy(&r.stdout), String::from_utf8_lossy(&r.stderr));
    assert!(r.status.success(), "{stderr}\n{stdout}");
    assert!(stdout.contains("s3@rtt=1ms") && stdout.contains("create") && stdout.contains("per file"), "{stdout}");
    let text = std::fs::read_to_string(&json).unwrap();
    for s in &secrets {
        assert!(!stdout.contains(s) && !stderr.contains(s) && !text.contains(s), "a credential in the output");
    }
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_schema_valid(&doc);
    let o = &doc["targets"][0]["managed"]["object"];
    assert_eq!(o["latency_toxic_ms"], 1, "{o}");
    assert_eq!(o["bucket"], "manyfiles");
    assert!(o["client_command"][0] == "s3fs" && o["client_caches"].as_str().is_some_and(|c| !c.is_empty()), "{o}");
    let serving: f64 =
        doc["measurements"].as_array().unwrap().iter().filter_map(|m| m["machine"]["serving_cpu_s"].as_f64()).sum();
    assert!(serving > 0.0, "no CPU of the stack's own processes was counted as the target's");
    let mine: Vec<(PathBuf, Record)> = records().into_iter().filter(|(_, rec)| rec.pid == pid).collect();
    assert!(mine.is_empty(), "records left {mine:?}");
    let dirs: Vec<PathBuf> = std::fs::read_dir(registry::state_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains(&format!("-{pid}-")))
        .collect();
    assert!(dirs.is_empty(), "left {dirs:?}");
}

/// `doc` is valid under the results' schema, which knows the kinds (a build from a dirty
/// tree says so in provenance, which the schema refuses: not this test's business).
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

/// Run manyfiles with `args` (its JSON to `json`) while reading the credentials of the
/// object store it starts; its output, the credentials and its pid.
fn run_reading_credentials(args: &[&str], json: &Path) -> (std::process::Output, Vec<String>, u32) {
    run_reading_credentials_of(args, json, 1)
}

/// [`run_reading_credentials`] of the `n` object stores it starts.
fn run_reading_credentials_of(args: &[&str], json: &Path, n: usize) -> (std::process::Output, Vec<String>, u32) {
    let child = Command::new(common::bin())
        .args(args)
        .arg("--json")
        .arg(json)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let t0 = Instant::now();
    let secrets = loop {
        let up: Vec<Stack> = stacks()
            .into_iter()
            .filter(|s| s.pid == pid && ["credentials", "connection-string"].iter().any(|f| s.dir.join(f).exists()))
            .collect();
        if up.len() >= n {
            break up.iter().flat_map(|s| credentials(&s.dir)).collect();
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "the object stores never came up: {args:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    (child.wait_with_output().unwrap(), secrets, pid)
}

/// Nothing of run `pid` left: no record, no stack directory.
fn nothing_left_of(pid: u32) {
    let mine: Vec<(PathBuf, Record)> = records().into_iter().filter(|(_, rec)| rec.pid == pid).collect();
    assert!(mine.is_empty(), "records left {mine:?}");
    let dirs: Vec<PathBuf> = std::fs::read_dir(registry::state_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains(&format!("-{pid}-")))
        .collect();
    assert!(dirs.is_empty(), "left {dirs:?}");
}

/// The requests a native op must send for a tree of `files` objects on `target`: one per
/// object; on S3 a LIST page or a DeleteObjects batch per 1,000 keys; on Azure Blob a
/// LIST page per 5,000 keys, a Blob Batch per 256 (and a batch of one per single delete:
/// object_store sends every Azure delete through Blob Batch).
fn expected_requests(target: &str, op: &str, files: u64) -> (&'static str, u64) {
    let blob = target.starts_with("azblob");
    let (page, batch) = if blob { (5000, 256) } else { (1000, 1000) };
    match op {
        "obj:put" => ("put", files),
        "obj:head" => ("head", files),
        "obj:get" => ("get", files),
        "obj:list" => ("list", files.div_ceil(page).max(1)),
        "obj:delete" if blob => ("delete_objects", files),
        "obj:delete" => ("delete", files),
        "obj:delete-batch" => ("delete_objects", files.div_ceil(batch)),
        other => panic!("not a native op: {other}"),
    }
}

/// Every measurement of `doc` is a native op whose requests are exactly what its tree
/// asks, all of one kind, with every object done; returns the ops seen.
fn check_request_counts(doc: &serde_json::Value) -> Vec<String> {
    let mut seen = Vec::new();
    for m in doc["measurements"].as_array().unwrap() {
        let (op, files) = (m["op"].as_str().unwrap(), m["tree_files"].as_u64().unwrap());
        let (kind, want) = expected_requests(m["target"].as_str().unwrap(), op, files);
        let req = &m["requests"];
        let total: u64 = req.as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!((req[kind].as_u64(), total), (Some(want), want), "{op} on {files} objects: {req}");
        assert_eq!((m["files"].as_u64(), m["errors"].as_u64()), (Some(files), Some(0)), "{op}: {m}");
        if !seen.iter().any(|s| s == op) {
            seen.push(op.to_string());
        }
    }
    seen
}

#[test]
fn a_native_ladder_counts_its_requests_exactly() {
    need_stack!();
    let _g = serial();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let ops = "obj:put,obj:head,obj:list,obj:get,obj:delete,obj:delete-batch";
    let args =
        ["ladder", "--fs", "s3@rtt=1ms", "--total", "256KiB", "--to", "64", "--runs", "2", "--ops", ops, "--quiet"];
    let t = Instant::now();
    let (r, secrets, pid) = run_reading_credentials(&args, &json);
    println!("ladder --fs s3@rtt=1ms --to 64 --runs 2 --ops {ops}: {:.0} s", t.elapsed().as_secs_f64());
    let (stdout, stderr) = (String::from_utf8_lossy(&r.stdout), String::from_utf8_lossy(&r.stderr));
    assert!(r.status.success(), "{stderr}\n{stdout}");
    let text = std::fs::read_to_string(&json).unwrap();
    for s in &secrets {
        assert!(!stdout.contains(s) && !stderr.contains(s) && !text.contains(s), "a credential in the output");
    }
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(check_request_counts(&doc), ops.split(',').collect::<Vec<_>>());
    for op in ops.split(',') {
        assert!(stdout.contains(op), "{op} in the table: {stdout}");
        let fitted = doc["models"].as_array().unwrap().iter().any(|m| m["op"] == op);
        assert!(fitted, "a model row for {op}");
    }
    // No file op asked for: no file was written through the mount.
    assert!(doc["measurements"].as_array().unwrap().iter().all(|m| m["op"].as_str().unwrap().starts_with("obj:")));
    assert_schema_valid(&doc);
    nothing_left_of(pid);
}

#[test]
fn native_lists_and_batch_deletes_go_1000_keys_a_request() {
    need_stack!();
    let _g = serial();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let ops = "obj:put,obj:list,obj:delete-batch";
    let args = ["ops", "--fs", "s3", "--files", "2500", "--size", "0", "--runs", "1", "--ops", ops, "--quiet"];
    let (r, _, pid) = run_reading_credentials(&args, &json);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(check_request_counts(&doc), ops.split(',').collect::<Vec<_>>());
    let pages = doc["measurements"].as_array().unwrap().iter().find(|m| m["op"] == "obj:list").unwrap();
    assert_eq!(pages["requests"]["list"], 3, "2,500 keys in pages of 1,000");
    assert_eq!(pages["latency_us"]["count"], 3, "one latency sample a page");
    nothing_left_of(pid);
}

#[test]
fn native_ops_run_only_on_object_stores() {
    let dir = tempfile::tempdir().unwrap();
    let r = common::run(["ops", "--files", "4", "--ops", "obj:put", "--target", dir.path().to_str().unwrap()]);
    common::assert_bad_input(&r, "--ops", "obj:put on a directory");
    let says = "obj:put sends object-store requests: it runs only on --fs s3 or azblob targets";
    assert!(r.stderr.contains(says), "{}", r.stderr);
}

/// Start a ladder on an object store, wait until its client is mounted, signal it.
fn ladder_then(sig: i32) -> (Stack, std::process::ExitStatus) {
    let out = tempfile::tempdir().unwrap();
    ladder_on_then(&["--fs", "s3@rtt=1ms", "--target", out.path().to_str().unwrap()], sig)
}

/// [`ladder_then`] with `args` (--fs and, for a blob store, --ops).
fn ladder_on_then(args: &[&str], sig: i32) -> (Stack, std::process::ExitStatus) {
    let mut child = Command::new(common::bin())
        .args(["ladder", "--total", "1MiB", "--to", "64", "--runs", "50", "--quiet"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let found = loop {
        let mine = stacks().into_iter().find(|s| s.pid == child.id() && !registry::mounts_at(&s.client_mp).is_empty());
        if let Some(f) = mine {
            break f;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "the ladder's object store never came up");
        assert!(child.try_wait().unwrap().is_none(), "the ladder ended before its object store came up");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(1500)); // into the trials
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
    (found, child.wait().unwrap())
}

#[test]
fn sigint_mid_ladder_leaves_nothing() {
    need_stack!();
    let _g = serial();
    let (stack, st) = ladder_then(libc::SIGINT);
    assert!(!st.success(), "interrupted: {st}");
    let left = leftovers(&stack);
    assert!(left.is_empty(), "after SIGINT the run left {left:?}");
}

#[test]
fn kill_9_then_cleanup_leaves_nothing() {
    need_stack!();
    let _g = serial();
    let out = tempfile::tempdir().unwrap();
    kill_9_then_cleanup(&["--fs", "s3@rtt=1ms", "--target", out.path().to_str().unwrap()]);
}

/// A ladder with `args` killed by SIGKILL: its proxy outlives it, `cleanup` leaves nothing.
fn kill_9_then_cleanup(args: &[&str]) {
    let (stack, _) = ladder_on_then(args, libc::SIGKILL);
    let running = stack_processes(&stack);
    let has = |name: &str| running.iter().any(|p| p.split(' ').nth(1).is_some_and(|a| a.contains(name)));
    // The proxy always; the server and client unless the kill came during a fresh start.
    assert!(has("toxiproxy"), "the proxy outlives a kill -9: {running:?}");
    println!("kill -9 left {} processes: {running:?}", running.len());
    let rep = registry::cleanup().unwrap();
    assert!(rep.problems.is_empty(), "{rep}");
    let left = leftovers(&stack);
    assert!(left.is_empty(), "cleanup left {left:?}: {rep}");
    assert!(!stack.client_mp.exists());
}

#[test]
fn a_missing_server_is_named_with_how_to_get_it() {
    need_stack!();
    let dir = tempfile::tempdir().unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    for t in ["mount", "umount", "setsid", "fusermount3", "s3fs", "toxiproxy-server"] {
        std::os::unix::fs::symlink(find_in_path(t, &path).unwrap(), dir.path().join(t)).unwrap();
    }
    let p = dir.path().as_os_str();
    let e = ManagedFs::preflight_in(&[FsSpec::parse("s3@rtt=1ms").unwrap()], 64 << 20, p).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    let e = e.to_string();
    assert!(e.contains("manyfiles-s3server not found") && e.contains("tools/s3server"), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");
    let r =
        Command::new(common::bin()).args(["ladder", "--fs", "s3", "--to", "4", "--runs", "1"]).env("PATH", p).output();
    let r = r.unwrap();
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("manyfiles-s3server not found"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn a_blob_store_mounts_says_where_it_is_and_umounts_to_nothing() {
    if common::skipped(missing_blob()) {
        return;
    }
    let _g = serial();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let mp = dir.path().canonicalize().unwrap();
    let r = common::run(["mount", "azblob@rtt=1ms", mp.to_str().unwrap(), "--size", "64MiB"]);
    r.ok();
    let stack = stacks().into_iter().find(|s| s.client_mp == mp).expect("registered");
    let conn = stack.dir.join("connection-string");
    for want in
        ["endpoint http://127.0.0.1:", "container manyfiles", "azblob://manyfiles/", &conn.display().to_string()]
    {
        assert!(r.stdout.contains(want), "mount prints {want}: {}", r.stdout);
    }
    for secret in credentials(&stack.dir) {
        assert!(!r.stdout.contains(&secret) && !r.stderr.contains(&secret), "the key printed");
    }
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&conn).unwrap().permissions().mode() & 0o777, 0o600);
    // Server and proxy outlive the command, neither as root; no client (no FUSE route).
    server_and_proxy_confined(&stack, azblob_stack::SERVER);
    assert_eq!(registry::mounts_at(&mp).last().map(|m| m.fs_type.clone()).as_deref(), Some("tmpfs"));
    let after = r.stdout.split("endpoint http://127.0.0.1:").nth(1).unwrap();
    let port: u16 = after.chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap();
    let host = std::net::TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(500));
    assert!(host.is_err(), "the endpoint's port {port} answers on the host's 127.0.0.1");
    // In the namespace, an unsigned request is refused.
    let anonymous = http_status_in(&stack.dir.join("netns"), port, None);
    assert!(anonymous.starts_with('4'), "an anonymous GET /manyfiles/: {anonymous}");
    umount_leaves_nothing(&stack, &mp);
}

#[test]
fn a_ladder_on_s3_and_blob_counts_and_prices_each_ones_requests() {
    if common::skipped(missing_blob()) {
        return;
    }
    let _g = serial();
    let out = tempfile::tempdir().unwrap();
    let (json, html) = (out.path().join("r.json"), out.path().join("r.html"));
    let ops = "obj:put,obj:head,obj:list,obj:get,obj:delete,obj:delete-batch";
    let fs = "s3@rtt=1ms,azblob@rtt=1ms";
    let args = ["ladder", "--fs", fs, "--total", "256KiB", "--to", "64", "--runs", "2", "--ops", ops, "--quiet"];
    let t = Instant::now();
    let (r, secrets, pid) = run_reading_credentials_of(&args, &json, 2);
    println!("ladder --fs {fs} --to 64 --runs 2 --ops {ops}: {:.0} s", t.elapsed().as_secs_f64());
    let (stdout, stderr) = (String::from_utf8_lossy(&r.stdout), String::from_utf8_lossy(&r.stderr));
    assert!(r.status.success(), "{stderr}\n{stdout}");
    let text = std::fs::read_to_string(&json).unwrap();
    assert_eq!(secrets.len(), 3, "two S3 credentials and a blob key");
    for s in &secrets {
        assert!(!stdout.contains(s) && !stderr.contains(s) && !text.contains(s), "a credential in the output");
    }
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(check_request_counts(&doc), ops.split(',').collect::<Vec<_>>());
    assert_schema_valid(&doc);
    let blob = doc["targets"].as_array().unwrap().iter().find(|t| t["label"] == "azblob@rtt=1ms").unwrap();
    let o = &blob["managed"]["object"];
    assert!(o["object"]["provider"] == "azblob" && o["url"] == "azblob://manyfiles/", "{o}");
    assert!(
        o["server_command"][0] == azblob_stack::SERVER && o["client_command"].as_array().unwrap().is_empty(),
        "{o}"
    );
    // Each target's requests at its provider's list prices: terminal, JSON, HTML.
    let (aws, azure) = ("AWS S3 Standard, us-east-1", "Azure Blob Storage hot LRS, East US");
    for m in doc["measurements"].as_array().unwrap() {
        let want = if m["target"].as_str().unwrap().starts_with("azblob") { azure } else { aws };
        assert!(m["cost"]["prices"].as_str().unwrap().starts_with(want), "{}", m["cost"]);
        assert!(m["cost"]["amount"].as_f64().unwrap() >= 0.0);
    }
    let put64 = doc["measurements"].as_array().unwrap().iter().find(|m| m["op"] == "obj:put" && m["tree_files"] == 64);
    assert!((put64.unwrap()["cost"]["amount"].as_f64().unwrap() - 64.0 * 0.005 / 1000.0).abs() < 1e-12);
    let flat = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(aws) && flat.contains(azure), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    for t in ["s3@rtt=1ms", "azblob@rtt=1ms"] {
        let from = format!("requests one run of each obj: op sent on {t},");
        let at = lines.iter().position(|l| l.starts_with(&from)).unwrap_or_else(|| panic!("{from}: {stdout}"));
        let table: Vec<&str> = lines[at..]
            .iter()
            .copied()
            .skip_while(|l| !l.starts_with('┌'))
            .take_while(|l| !l.starts_with('└'))
            .collect();
        assert!(table.iter().all(|l| l.chars().count() <= 100), "{}", table.join("\n"));
        let row64 = table.iter().position(|l| l.starts_with("│ 64 ")).expect("the 64-file rung");
        assert!(table[row64 + 1].contains("$0.00032"), "64 PUTs at $0.005 per 1,000: {}", table.join("\n"));
    }
    common::run(["report", json.to_str().unwrap(), "--html", html.to_str().unwrap()]).ok();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Requests and their price") && page.contains("<td>64<br>$0.00032</td>"), "no price in HTML");
    assert!(page.contains(azure) && page.contains(aws));
    nothing_left_of(pid);
}

#[test]
fn file_ops_are_refused_on_a_blob_store() {
    if common::skipped(common::missing(&[])) {
        return;
    }
    let r = common::run(["ladder", "--fs", "azblob@rtt=1ms", "--to", "4", "--runs", "1"]);
    common::assert_bad_input(&r, "--ops", "create on a blob store");
    assert!(r.stderr.contains("create works on files: azblob@rtt=1ms has no file-system route"), "{}", r.stderr);
}

#[test]
fn kill_9_of_a_blob_ladder_then_cleanup_leaves_nothing() {
    if common::skipped(missing_blob()) {
        return;
    }
    let _g = serial();
    kill_9_then_cleanup(&["--fs", "azblob@rtt=1ms", "--ops", "obj:put,obj:get"]);
}

#[test]
fn a_missing_azurite_is_named_with_how_to_get_it() {
    if common::skipped(missing_blob()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    for t in ["mount", "umount", "setsid", "node", "toxiproxy-server"] {
        std::os::unix::fs::symlink(find_in_path(t, &path).unwrap(), dir.path().join(t)).unwrap();
    }
    let e = ManagedFs::preflight_in(&[FsSpec::parse("azblob@rtt=1ms").unwrap()], 64 << 20, dir.path().as_os_str());
    let e = e.unwrap_err();
    assert_eq!(e.exit_code(), 2);
    let e = e.to_string();
    assert!(e.contains("azurite-blob not found") && e.contains("npm install -g azurite@3.35.0"), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");
}
