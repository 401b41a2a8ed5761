//! The tree experiments on a bucket of the user's (`ladder --target s3://BUCKET/PREFIX
//! --ops obj:…`): a `manyfiles-s3server` started here on loopback stands for the user's
//! own S3 endpoint, reached as a user reaches theirs (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
//! AWS_SECRET_ACCESS_KEY in the environment). The run writes only below a fresh prefix
//! of its own, deletes only keys it wrote (an object someone else puts below that prefix
//! meanwhile stays, and is reported), leaves every other object byte for byte — also when
//! SIGINT stops it —, never shows the key or the secret (stdout, stderr, JSON, HTML), and
//! a bad endpoint or a missing bucket is exit 2 with one line. Needs manyfiles-s3server
//! (no root): without it a test prints why it skipped, except under CI (CI=true), where a
//! skip is a failure.

mod common;

use common::serial;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const BUCKET: &str = "userbkt";
const KEY: &str = "AKUSERTARGET7Q";
const SECRET: &str = "uSeRsEcReT-d0-n0t-sh0w-9f3a";

/// The user's S3 endpoint: a manyfiles-s3server on a free loopback port, its bucket in a
/// directory of its own; killed when dropped.
struct UserServer {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl UserServer {
    /// None (the test skipped, said why) without the server binary.
    fn start() -> Option<UserServer> {
        let found = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("manyfiles-s3server").is_file()));
        let why = (!found).then(|| "manyfiles-s3server is not on PATH (tools/s3server; .ci/run builds it)".into());
        if common::skipped(why) {
            return None;
        }
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("manyfiles-s3server")
            .args(["-listen", &format!("127.0.0.1:{port}"), "-dir", dir.path().to_str().unwrap(), "-bucket", BUCKET])
            .env("MANYFILES_S3_ACCESS_KEY", KEY)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let up =
            common::wait_until(Duration::from_secs(20), || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        assert!(up, "manyfiles-s3server did not listen on {port}");
        Some(UserServer { child, port, _dir: dir })
    }

    /// `manyfiles ARGS` as the user runs it: the endpoint and keys in the environment.
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(common::bin());
        c.args(args)
            .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{}", self.port))
            .env("AWS_ACCESS_KEY_ID", KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET)
            .env("AWS_REGION", "us-east-1")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_ENDPOINT_URL_S3")
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> common::Run {
        let out = self.command(args).output().unwrap();
        let r = common::Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        assert_no_secret(&format!("{}{}", r.stdout, r.stderr), &format!("{args:?}"));
        r
    }

    /// Every object of the bucket: key → bytes and mtime (downloaded by the engines).
    fn objects(&self, into: &Path) -> BTreeMap<String, Vec<u8>> {
        let _ = std::fs::remove_dir_all(into);
        self.run(&["copy", &format!("s3://{BUCKET}"), into.to_str().unwrap(), "--quiet"]).ok();
        let mut out = BTreeMap::new();
        let mut stack = vec![into.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                } else {
                    let k = e.path().strip_prefix(into).unwrap().to_string_lossy().into_owned();
                    out.insert(k, std::fs::read(e.path()).unwrap());
                }
            }
        }
        out
    }
}

impl Drop for UserServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn assert_no_secret(text: &str, what: &str) {
    assert!(!text.contains(SECRET), "the secret shown by {what}");
    assert!(!text.contains(KEY), "the access key shown by {what}");
}

/// The user's own objects: under the prefix the run is given (some named as the run
/// names its own), beside it, and elsewhere in the bucket.
fn seed(server: &UserServer, work: &Path) {
    let mine = work.join("mine");
    for (rel, n) in [
        ("p/a/one", 10),
        ("p/a/two", 0),
        ("p/manyfiles-ladder-1-00000000/theirs", 300),
        ("p/manyfiles-run-x/objects/f", 77),
        ("pother/x", 5),
        ("q/r/s", 4097),
    ] {
        let f = mine.join(rel);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, (0..n).map(|i| (i * 7 + rel.len()) as u8).collect::<Vec<u8>>()).unwrap();
    }
    server.run(&["copy", mine.to_str().unwrap(), &format!("s3://{BUCKET}"), "--quiet"]).ok();
}

/// A work directory and the bucket as [`seed`] leaves it.
fn seeded(server: &UserServer) -> (tempfile::TempDir, BTreeMap<String, Vec<u8>>) {
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    seed(server, work.path());
    let before = server.objects(&work.path().join("before"));
    (work, before)
}

/// The ladder on the user's bucket, spawned: stdout and stderr piped.
fn spawn_ladder(server: &UserServer, extra: &[&str], json: &Path) -> Child {
    let mut args = vec![
        "ladder",
        "--target",
        "s3://userbkt/p",
        "--ops",
        "obj:put,obj:head,obj:list,obj:get,obj:delete,obj:delete-batch",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(extra);
    server.command(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Read `child`'s stderr on a thread: the run's own prefix (once printed) is sent on the
/// channel; all of stderr is the thread's result.
fn watch_stderr(child: &mut Child) -> (std::sync::mpsc::Receiver<String>, std::thread::JoinHandle<String>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().unwrap();
    let h = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(p) = line.split("writes only below s3://userbkt/").nth(1) {
                let _ = tx.send(p.trim().to_string());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    (rx, h)
}

fn stdout_of(child: &mut Child) -> std::thread::JoinHandle<String> {
    let mut out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    })
}

/// An object of someone else's put below the run's own prefix while it runs.
fn intrude(server: &UserServer, work: &Path, run_prefix: &str) -> PathBuf {
    let d = work.join("intruder");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("theirs"), b"not the run's").unwrap();
    let dst = format!("s3://{BUCKET}/{run_prefix}zz-intruder");
    server.run(&["copy", d.to_str().unwrap(), &dst, "--quiet"]).ok();
    PathBuf::from(format!("{run_prefix}zz-intruder/theirs"))
}

#[test]
fn ladder_on_a_users_bucket_writes_and_deletes_only_its_own_keys() {
    let Some(server) = UserServer::start() else { return };
    let _g = serial();
    let (work, before) = seeded(&server);
    let json = work.path().join("r.json");
    let mut child = spawn_ladder(&server, &["--total", "256KiB", "--to", "256", "--runs", "4"], &json);
    let (prefix, stderr) = watch_stderr(&mut child);
    let stdout = stdout_of(&mut child);
    let run_prefix = prefix.recv_timeout(Duration::from_secs(60)).expect("the run's own prefix printed");
    assert!(run_prefix.starts_with("p/manyfiles-ladder-") && run_prefix.ends_with('/'), "{run_prefix}");
    let theirs = intrude(&server, work.path(), &run_prefix);
    let status = child.wait().unwrap();
    let (out, err) = (stdout.join().unwrap(), stderr.join().unwrap());
    assert!(status.success(), "{out}\n{err}");
    // The intruder's object stays, and the run says something is left below its prefix.
    assert!(err.contains("1 object(s) remain below") && err.contains(&run_prefix), "{err}");
    let mut after = server.objects(&work.path().join("after"));
    let left = after.remove(theirs.to_str().unwrap()).expect("someone else's object below the run's prefix deleted");
    assert_eq!(left, b"not the run's");
    assert_eq!(before, after, "the user's objects changed, or the run left some of its own");
    // What it measured: a PUT per object, on the URL the user gave.
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["targets"][0]["label"], "s3://userbkt/p/", "{}", doc["targets"]);
    let puts: Vec<&serde_json::Value> =
        doc["measurements"].as_array().unwrap().iter().filter(|m| m["op"] == "obj:put").collect();
    assert!(!puts.is_empty());
    for m in puts {
        assert_eq!(m["requests"]["put"], m["tree_files"], "{m}");
        assert_eq!(m["errors"], 0, "{m}");
    }
    assert!(out.contains("obj:put") && out.contains("requests"), "{out}");
    // No credential anywhere: stdout, stderr, the JSON, the HTML page.
    let html = work.path().join("r.html");
    server.run(&["report", json.to_str().unwrap(), "--html", html.to_str().unwrap()]).ok();
    for text in [out, err, std::fs::read_to_string(&json).unwrap(), std::fs::read_to_string(&html).unwrap()] {
        assert_no_secret(&text, "the ladder's outputs");
    }
}

#[test]
fn sigint_on_a_users_bucket_leaves_only_the_users_objects() {
    let Some(server) = UserServer::start() else { return };
    let _g = serial();
    let (work, before) = seeded(&server);
    let json = work.path().join("r.json");
    // Large enough that the signal lands inside a trial, mid-requests.
    let mut child =
        spawn_ladder(&server, &["--total", "16MiB", "--from", "4096", "--to", "4096", "--runs", "20"], &json);
    let (_prefix, stderr) = watch_stderr(&mut child);
    let stdout = stdout_of(&mut child);
    let recorded = || std::fs::read_to_string(&json).is_ok_and(|t| t.contains("\"obj:put\""));
    let mut ended = None;
    let seen = common::wait_until(Duration::from_secs(300), || {
        ended = child.try_wait().unwrap();
        ended.is_some() || recorded()
    });
    assert!(seen && ended.is_none(), "the run ended ({ended:?}) or never recorded a put");
    std::thread::sleep(Duration::from_millis(150));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let (out, err) = (stdout.join().unwrap(), stderr.join().unwrap());
    assert_eq!(status.code(), Some(130), "{out}\n{err}");
    assert!(!err.contains("remain below"), "the run left objects of its own: {err}");
    let after = server.objects(&work.path().join("after"));
    assert_eq!(before, after, "the user's objects changed, or the run left some of its own");
    assert_no_secret(&format!("{out}{err}{}", std::fs::read_to_string(&json).unwrap()), "an interrupted run");
}

/// The registry records of this host naming `needle` (a run's own prefix).
fn records_naming(needle: &str) -> Vec<PathBuf> {
    let rd = std::fs::read_dir("/run/manyfiles").into_iter().flatten().flatten();
    rd.map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(needle)))
        .collect()
}

/// How many objects `manyfiles scan URL` counts below `url` (None: it said no count).
fn scanned(server: &UserServer, url: &str) -> Option<u64> {
    let r = server.run(&["scan", url]);
    r.stdout.split(": ").nth(1).and_then(|t| t.split(' ').next()?.parse::<u64>().ok())
}

/// kill -9 mid-trial leaves the trial's objects below the run's own prefix; its record
/// names the store (never a key), that prefix and the run's nonce; `cleanup` where the
/// environment points at another endpoint leaves them and the record; `cleanup` with the
/// run's settings deletes exactly the run's own objects below that prefix and says so,
/// while an object someone else put there during the run, and copies of the run's own
/// objects put there after the kill (a copy keeps the metadata, not the key), are left
/// byte for byte and counted; the user's objects — one named like a run's own prefix
/// among them — are as before.
#[test]
fn kill_9_on_a_users_bucket_then_cleanup_deletes_only_the_runs_own_keys() {
    let Some(server) = UserServer::start() else { return };
    let Some(_g) = common::root_only("the registry (/run/manyfiles) needs root") else { return };
    let (work, mut before) = seeded(&server);
    let json = work.path().join("r.json");
    let mut child =
        spawn_ladder(&server, &["--total", "16MiB", "--from", "4096", "--to", "4096", "--runs", "20"], &json);
    let (prefix, stderr) = watch_stderr(&mut child);
    let stdout = stdout_of(&mut child);
    let run_prefix = prefix.recv_timeout(Duration::from_secs(60)).expect("the run's own prefix printed");
    let records = records_naming(&run_prefix);
    assert_eq!(records.len(), 1, "one record names {run_prefix} while the run lives");
    let text = std::fs::read_to_string(&records[0]).unwrap();
    assert_no_secret(&text, "the registry record");
    assert!(text.contains("\"owner\""), "the record names no nonce: {text}");
    // Someone else's object below the run's own prefix, while it runs.
    let theirs = intrude(&server, work.path(), &run_prefix);
    // Kill it while objects of its own are there.
    let url = format!("s3://{BUCKET}/{run_prefix}");
    let mut left = 0;
    let there = common::wait_until(Duration::from_secs(120), || {
        left = scanned(&server, &url).unwrap_or(0);
        left > 1
    });
    assert!(there, "no object of the run's was ever seen below {url}");
    child.kill().unwrap();
    child.wait().unwrap();
    let (_, _) = (stdout.join().unwrap(), stderr.join().unwrap());
    // Copies of one of its directories, below its own prefix (server-side: the metadata
    // goes with them).
    let all = server.objects(&work.path().join("killed"));
    let own: Vec<&String> = all.keys().filter(|k| k.starts_with(&run_prefix) && !k.contains("zz-intruder")).collect();
    assert!(!own.is_empty(), "the kill left nothing to clean up");
    let dir = own[0].rsplit_once('/').unwrap().0.to_string();
    let copied = all.keys().filter(|k| k.rsplit_once('/').unwrap().0 == dir).count() as u64;
    let copy_to = format!("s3://{BUCKET}/{run_prefix}zz-copied");
    server.run(&["copy", &format!("s3://{BUCKET}/{dir}"), &copy_to, "--quiet"]).ok();
    let left = scanned(&server, &url).unwrap();
    let own_n = own.len() as u64;
    assert_eq!(left, own_n + 1 + copied, "the run's own, the intruder's and the copies");

    // Another endpoint in the environment: nothing deleted, the record kept.
    let out = server.command(&["cleanup"]).env("AWS_ENDPOINT_URL", "http://127.0.0.1:9").output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.contains(&url) && said.contains("left for a cleanup with the run's settings"), "{said}");
    assert_eq!(scanned(&server, &url), Some(left));
    assert_eq!(records_naming(&run_prefix).len(), 1, "the record went with nothing deleted");

    // The run's settings: the run's own keys go, and it says so; the others stay.
    let r = server.run(&["cleanup"]);
    r.ok();
    assert!(
        r.stdout.contains(&format!("deleted below a killed run's own prefix: {url}: {own_n} object(s)")),
        "{}",
        r.stdout
    );
    let kept =
        format!("left below a killed run's own prefix: {url}: {} object(s) that this run did not write", 1 + copied);
    assert!(r.stdout.contains(&kept), "{}", r.stdout);
    assert!(records_naming(&run_prefix).is_empty(), "the record stays after its objects went");
    let mut after = server.objects(&work.path().join("after"));
    let left = after.remove(theirs.to_str().unwrap()).expect("someone else's object below the run's prefix deleted");
    assert_eq!(left, b"not the run's");
    for (k, v) in &all {
        if k.rsplit_once('/').unwrap().0 == dir {
            let name = k.rsplit_once('/').unwrap().1;
            let copy =
                after.remove(&format!("{run_prefix}zz-copied/{name}")).expect("a copy of the run's object deleted");
            assert_eq!(&copy, v, "a copy changed");
        }
    }
    before.retain(|k, _| !k.starts_with(&run_prefix));
    assert_eq!(before, after, "the user's objects changed, or the killed run's own stayed");
}

/// A kill -9 of `predict --on s3://BUCKET/PREFIX` mid-calibration: its record names its
/// own prefix (`PREFIX/manyfiles-calibration-PID/`) while it runs, and `cleanup` deletes
/// every object of the calibration's there and nothing else (an object someone else put
/// below that prefix stays, byte for byte).
#[test]
fn kill_9_of_predict_on_a_users_bucket_then_cleanup_leaves_no_run_object() {
    let Some(server) = UserServer::start() else { return };
    let Some(_g) = common::root_only("the registry (/run/manyfiles) needs root") else { return };
    let (work, before) = seeded(&server);
    let tree = work.path().join("tree");
    for i in 0..400usize {
        let d = tree.join(format!("d{}", i % 4));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("f{i:04}")), vec![(i % 251) as u8; 512 + i * 8]).unwrap();
    }
    let args = ["predict", "--tree", tree.to_str().unwrap(), "--on", "s3://userbkt/p", "--max-time", "120s", "--quiet"];
    let mut child = server.command(&args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let run_prefix = format!("p/manyfiles-calibration-{}/", child.id());
    let url = format!("s3://{BUCKET}/{run_prefix}");
    let registered = common::wait_until(Duration::from_secs(60), || !records_naming(&run_prefix).is_empty());
    assert!(registered, "no record names {run_prefix} while the calibration runs");
    assert_no_secret(&std::fs::read_to_string(&records_naming(&run_prefix)[0]).unwrap(), "the registry record");
    let theirs = intrude(&server, work.path(), &run_prefix);
    let there = common::wait_until(Duration::from_secs(120), || scanned(&server, &url).unwrap_or(0) > 1);
    assert!(there, "no object of the calibration's was ever seen below {url}");
    child.kill().unwrap();
    child.wait().unwrap();
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err);
    let left = scanned(&server, &url).unwrap();
    assert!(left > 1, "the kill left nothing of the calibration's to clean up ({left}): {err}");
    let r = server.run(&["cleanup"]);
    r.ok();
    let said = format!("deleted below a killed run's own prefix: {url}: {} object(s)", left - 1);
    assert!(r.stdout.contains(&said), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("{url}: 1 object(s) that this run did not write")), "{}", r.stdout);
    assert!(records_naming(&run_prefix).is_empty(), "the record stays after its objects went");
    let mut after = server.objects(&work.path().join("after"));
    assert_eq!(after.remove(theirs.to_str().unwrap()).as_deref(), Some(&b"not the run's"[..]));
    assert_eq!(before, after, "the user's objects changed, or the calibration left some of its own");
}

#[test]
fn a_bad_endpoint_or_a_missing_bucket_is_one_line() {
    let Some(server) = UserServer::start() else { return };
    let ops = "obj:put,obj:get";
    let r = server.run(&["ladder", "--target", "s3://no-such-bucket/p", "--ops", ops, "--to", "4", "-q"]);
    common::assert_bad_input(&r, "s3://no-such-bucket", "a missing bucket");
    // Nothing listens on port 9 of loopback.
    let mut c = server.command(&["ladder", "--target", "s3://userbkt/p", "--ops", ops, "--to", "4", "-q"]);
    let out = c.env("AWS_ENDPOINT_URL", "http://127.0.0.1:9").output().unwrap();
    let r = common::Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    common::assert_bad_input(&r, "s3://userbkt/p", "an endpoint that does not answer");
    assert_no_secret(&r.stderr, "a bad endpoint");
    // File ops and --keep are refused on a bucket; a bucket is no target of bigfile.
    let r = server.run(&["ladder", "--target", "s3://userbkt/p", "--to", "4", "-q"]);
    common::assert_bad_input(&r, "--ops", "file ops on a bucket");
    let r = server.run(&["ladder", "--target", "s3://userbkt/p", "--ops", ops, "--keep", "--to", "4", "-q"]);
    common::assert_bad_input(&r, "--keep", "--keep on a bucket");
    let r = server.run(&["bigfile", "--target", "s3://userbkt/p", "--size", "1MiB", "-q"]);
    common::assert_bad_input(&r, "--target", "bigfile on a bucket");
    let r = server.run(&["ladder", "--target", "s3://UPPER/p", "--ops", ops, "-q"]);
    common::assert_bad_input(&r, "--target", "a bucket name S3 does not take");
}
