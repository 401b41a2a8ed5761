//! The engines on Azure Blob (`copy|sync|rm|scan` with an `azblob://` side), against
//! Azurite (`manyfiles mount azblob@rtt=1ms DIR`, reached with `--s3-via DIR` /
//! `--store-via DIR`, or through the environment's `AZURE_STORAGE_*` under `nsenter` into
//! its namespace): a tree uploaded, downloaded and compared byte for byte with its names
//! and mtimes; `sync -n` after an upload sends nothing; `sync --delete` deletes in a Blob
//! Batch; a server-side copy between prefixes; `rm` of a prefix leaves a foreign blob
//! beside it; the account key is never in stdout, stderr or the JSON; a bad container
//! name, a missing container, a provider mismatch and an environment with no account are
//! each exit 2 with one line. Needs root, azurite-blob and toxiproxy-server (as the blob
//! tests of tests/object_store.rs): without them each test prints why it skipped, except
//! under CI (CI=true), where a skip is a failure.

mod common;
#[allow(unused_macros)]
#[macro_use]
mod object_common;

use common::serial;
use manyfiles::storage::azblob_stack;
use object_common::{files, json, make_tree, requests};
use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn missing_blob() -> Option<String> {
    let stack = |path: &std::ffi::OsStr| azblob_stack::preflight("azblob", path).err();
    common::missing(&[&stack])
}

macro_rules! need_blob {
    () => {
        if common::skipped(missing_blob()) {
            return;
        }
    };
}

/// A `manyfiles mount azblob@rtt=1ms` for one test, taken down when dropped.
struct Blob {
    mp: PathBuf,
    _dir: tempfile::TempDir,
    printed: String,
}

impl Blob {
    fn up() -> Blob {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let mp = dir.path().canonicalize().unwrap();
        let r = common::run(["mount", "azblob@rtt=1ms", mp.to_str().unwrap(), "--size", "256MiB"]);
        r.ok();
        Blob { mp, _dir: dir, printed: r.stdout.clone() }
    }

    fn after(&self, label: &str) -> String {
        let rest = self.printed.split(label).nth(1).unwrap_or_else(|| panic!("{label} in {}", self.printed));
        rest.split_whitespace().next().unwrap().trim_end_matches(',').to_string()
    }

    fn connection_file(&self) -> PathBuf {
        PathBuf::from(self.after("connection string (account key, root's): "))
    }

    fn connection_string(&self) -> String {
        std::fs::read_to_string(self.connection_file()).unwrap().trim().to_string()
    }

    /// The account key (what must never be printed).
    fn key(&self) -> String {
        azblob_stack::field(&self.connection_string(), "AccountKey").unwrap()
    }

    /// `manyfiles ARGS --store-via MP` (the new name; `--s3-via` is the same option),
    /// the key in no output.
    fn run(&self, args: &[&str]) -> common::Run {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--store-via", self.mp.to_str().unwrap()]);
        let r = common::run(&all);
        let key = self.key();
        assert!(!r.stdout.contains(&key) && !r.stderr.contains(&key), "the account key printed by {args:?}");
        r
    }
}

impl Drop for Blob {
    fn drop(&mut self) {
        let r = common::run(["umount", self.mp.to_str().unwrap()]);
        if r.code != Some(0) && !std::thread::panicking() {
            panic!("umount: {}", r.stderr);
        }
    }
}

#[test]
fn a_tree_goes_up_comes_back_whole_and_syncs_by_the_request() {
    need_blob!();
    let _g = serial();
    let blob = Blob::up();
    assert!(blob.printed.contains("--s3-via") && blob.printed.contains("azblob://…"), "{}", blob.printed);
    let work = tempfile::tempdir().unwrap();
    let (src, back, j) = (work.path().join("src"), work.path().join("back"), work.path().join("s.json"));
    let n = make_tree(&src) as u64;
    let (src_s, back_s, j_s) = (src.to_str().unwrap(), back.to_str().unwrap(), j.to_str().unwrap());

    // Up: one PUT per file, priced at Azure's list prices.
    let r = blob.run(&["copy", src_s, "azblob://manyfiles/t1", "--quiet", "--json", j_s]);
    r.ok();
    assert!(r.stdout.contains(&format!("copied {n} ")) && r.stdout.contains("Azure Blob"), "{}", r.stdout);
    let v = json(&j);
    assert_eq!((v["copied"].as_u64(), requests(&v, "put"), v["provider"].as_str()), (Some(n), n, Some("azblob")));
    assert!(!std::fs::read_to_string(&j).unwrap().contains(&blob.key()), "the key in the JSON");
    common::assert_bad_input(&blob.run(&["copy", src_s, "azblob://manyfiles/t1", "--quiet"]), "DST", "copy onto blobs");

    // Nothing to do: no PUT (Last-Modified is whole seconds; compared by the second).
    let r = blob.run(&["sync", "-n", src_s, "azblob://manyfiles/t1", "--quiet", "--json", j_s, "--force"]);
    r.ok();
    let v = json(&j);
    assert_eq!((v["copied"].as_u64(), v["skipped"].as_u64(), requests(&v, "put")), (Some(0), Some(n), 0), "{v}");

    // Down: the same names, bytes and mtimes (to the nanosecond), read back by --verify.
    blob.run(&["copy", "azblob://manyfiles/t1", back_s, "--quiet", "--verify"]).ok();
    assert_eq!(files(&back), files(&src), "the tree downloaded differs from the one uploaded");

    // sync --delete: a file gone from SRC goes from the prefix, in one Blob Batch.
    std::fs::remove_file(src.join("c/f03.dat")).unwrap();
    let r = blob.run(&["sync", "--delete", src_s, "azblob://manyfiles/t1", "--quiet", "--json", j_s, "--force"]);
    r.ok();
    assert!(r.stdout.contains("Blob Batch 1"), "{}", r.stdout);
    let v = json(&j);
    assert_eq!((v["deleted"].as_u64(), requests(&v, "delete_objects"), requests(&v, "put")), (Some(1), 1, 0), "{v}");

    // Server-side: Copy Blob between prefixes, nothing read through this process.
    let r = blob.run(&["copy", "azblob://manyfiles/t1", "azblob://manyfiles/t2", "--quiet", "--json", j_s, "--force"]);
    r.ok();
    let v = json(&j);
    assert_eq!((v["copied"].as_u64(), requests(&v, "get")), (Some(n - 1), 0), "{v}");
    let r = blob.run(&["scan", "azblob://manyfiles/t2"]);
    assert!(r.ok().stdout.contains(&format!("{} objects", n - 1)), "{}", r.stdout);
}

#[test]
fn rm_removes_its_prefix_and_nothing_beside_it() {
    need_blob!();
    let _g = serial();
    let blob = Blob::up();
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    let n = make_tree(&src) as u64;
    let one = work.path().join("one");
    std::fs::create_dir(&one).unwrap();
    std::fs::write(one.join("foreign.txt"), b"not yours").unwrap();
    let src_s = src.to_str().unwrap();
    blob.run(&["copy", src_s, "azblob://manyfiles/p", "--quiet"]).ok();
    // Foreign blobs whose keys start as the prefix does, but are not below `p/`.
    blob.run(&["copy", one.to_str().unwrap(), "azblob://manyfiles/p2", "--quiet"]).ok();
    blob.run(&["copy", one.to_str().unwrap(), "azblob://manyfiles/q/p", "--quiet"]).ok();
    // The whole container only with --whole-bucket.
    common::assert_bad_input(
        &blob.run(&["rm", "azblob://manyfiles/", "--quiet"]),
        "--whole-bucket",
        "rm of a container",
    );
    let r = blob.run(&["rm", "azblob://manyfiles/p", "--quiet"]);
    assert!(r.ok().stdout.contains(&format!("deleted {n} of {n} objects")), "{}", r.stdout);
    let r = blob.run(&["scan", "azblob://manyfiles/"]);
    assert!(r.ok().stdout.contains(": 2 objects"), "the foreign blobs survive: {}", r.stdout);
    let back = work.path().join("back");
    blob.run(&["copy", "azblob://manyfiles/p2", back.to_str().unwrap(), "--quiet"]).ok();
    assert_eq!(std::fs::read(back.join("foreign.txt")).unwrap(), b"not yours");
}

#[test]
fn the_environment_reaches_it_and_bad_input_is_one_line() {
    need_blob!();
    let _g = serial();
    let blob = Blob::up();
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    let n = make_tree(&src);
    blob.run(&["copy", src.to_str().unwrap(), "azblob://manyfiles/e", "--quiet"]).ok();

    // AZURE_STORAGE_CONNECTION_STRING, then account + key + endpoint, inside the
    // stack's namespace (its endpoint is there only).
    let netns = blob.after("nsenter --net=");
    let conn = blob.connection_string();
    let endpoint = azblob_stack::field(&conn, "BlobEndpoint").unwrap();
    let by_conn = vec![("AZURE_STORAGE_CONNECTION_STRING", conn.clone())];
    let by_keys = vec![
        ("AZURE_STORAGE_ACCOUNT", "manyfiles".to_string()),
        ("AZURE_STORAGE_KEY", blob.key()),
        ("AZURE_STORAGE_BLOB_ENDPOINT", endpoint),
    ];
    for env in [by_conn, by_keys] {
        let mut c = Command::new("nsenter");
        c.arg(format!("--net={netns}")).arg(common::bin()).args(["scan", "azblob://manyfiles/e"]);
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AZURE_")) {
            c.env_remove(k);
        }
        c.envs(env.iter().map(|(k, v)| (k, v)));
        let out = c.output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{stderr}");
        assert!(stdout.contains(&format!("scan azblob://manyfiles/e/: {n} objects")), "{stdout}");
        assert!(!stdout.contains(&blob.key()) && !stderr.contains(&blob.key()), "the key printed");
    }

    // A container name Azure refuses; a container the store has not; an S3 URL through
    // a blob store's mount; no account in the environment.
    for (bad, says) in [
        ("azblob://Bad--Name/x", "container name"),
        ("azblob://no-such-container/x", "azblob://no-such-container/x/"),
        ("s3://manyfiles/x", "--s3-via"),
    ] {
        common::assert_bad_input(&blob.run(&["scan", bad]), says, bad);
    }
    let mut c = common::cmd();
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AZURE_")) {
        c.env_remove(k);
    }
    let out = c.args(["scan", "azblob://manyfiles/x"]).output().unwrap();
    let r = common::Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
    };
    common::assert_bad_input(&r, "AZURE_STORAGE_CONNECTION_STRING", "no account in the environment");
}

impl Blob {
    /// `manyfiles ARGS` as a user with their own Azure store runs it: the connection
    /// string in `AZURE_STORAGE_CONNECTION_STRING` (no other `AZURE_*`), inside the
    /// stack's network namespace (its endpoint is there only); `env` on top. The key in
    /// no output.
    fn as_user(&self, args: &[&str], env: &[(&str, String)]) -> common::Run {
        let out = self.user_command(args, env).output().unwrap();
        let r = common::Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into(),
            stderr: String::from_utf8_lossy(&out.stderr).into(),
        };
        let key = self.key();
        assert!(!r.stdout.contains(&key) && !r.stderr.contains(&key), "the account key printed by {args:?}");
        r
    }

    /// The command [`Blob::as_user`] runs (nsenter execs it: its pid is manyfiles').
    fn user_command(&self, args: &[&str], env: &[(&str, String)]) -> Command {
        let mut c = Command::new("nsenter");
        c.arg(format!("--net={}", self.after("nsenter --net="))).arg(common::bin()).args(args);
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AZURE_")) {
            c.env_remove(k);
        }
        c.env("AZURE_STORAGE_CONNECTION_STRING", self.connection_string()).stdin(std::process::Stdio::null());
        c.envs(env.iter().map(|(k, v)| (k, v)));
        c
    }

    /// How many blobs `manyfiles scan URL` counts (None: no count said).
    fn scanned(&self, url: &str) -> Option<u64> {
        let r = self.run(&["scan", url]);
        r.stdout.split(": ").nth(1).and_then(|t| t.split(' ').next()?.parse::<u64>().ok())
    }

    /// Every blob of the container: key → bytes (downloaded by the engines).
    fn blobs(&self, into: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
        let _ = std::fs::remove_dir_all(into);
        self.run(&["copy", "azblob://manyfiles", into.to_str().unwrap(), "--quiet"]).ok();
        files(into).into_iter().map(|(k, (bytes, _))| (k, bytes)).collect()
    }

    /// The user's own blobs: under the prefix the runs are given (one named as a run
    /// names its own), beside it and elsewhere.
    fn seed(&self, work: &std::path::Path) {
        let mine = work.join("mine");
        for (rel, n) in [("p/a/one", 10), ("p/manyfiles-ladder-1-00000000/theirs", 300), ("p2/x", 5), ("q/p/s", 4097)] {
            let f = mine.join(rel);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(&f, (0..n).map(|i| (i * 7 + rel.len()) as u8).collect::<Vec<u8>>()).unwrap();
        }
        self.run(&["copy", mine.to_str().unwrap(), "azblob://manyfiles", "--quiet"]).ok();
    }
}

/// `ladder --target azblob://CONTAINER/PREFIX`: the native ops on a user's container,
/// reached through `AZURE_STORAGE_*`; only below a prefix of the run's own, every other
/// blob byte for byte as it was, Azure's prices; a missing container and an endpoint
/// that does not answer are one line, exit 2.
#[test]
fn ladder_on_a_users_container_writes_and_deletes_only_its_own_blobs() {
    need_blob!();
    let _g = serial();
    let blob = Blob::up();
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    blob.seed(work.path());
    let before = blob.blobs(&work.path().join("before"));
    let j = work.path().join("r.json");
    let ops = "obj:put,obj:head,obj:list,obj:get,obj:delete,obj:delete-batch";
    let args = ["ladder", "--target", "azblob://manyfiles/p", "--ops", ops, "--total", "16KiB", "--to", "4"];
    let r = blob.as_user(&[&args[..], &["--runs", "3", "-q", "--json", j.to_str().unwrap()]].concat(), &[]);
    r.ok();
    assert!(r.stderr.contains("writes only below azblob://manyfiles/p/manyfiles-ladder-"), "{}", r.stderr);
    assert!(r.stdout.contains("Azure Blob Storage hot LRS"), "{}", r.stdout);
    assert_eq!(before, blob.blobs(&work.path().join("after")), "the user's blobs changed, or the run left some");
    let text = std::fs::read_to_string(&j).unwrap();
    assert!(!text.contains(&blob.key()), "the key in the JSON");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (doc["targets"][0]["label"].as_str(), doc["targets"][0]["kind"].as_str()),
        (Some("azblob://manyfiles/p/"), Some("azblob"))
    );
    let puts: Vec<&serde_json::Value> =
        doc["measurements"].as_array().unwrap().iter().filter(|m| m["op"] == "obj:put").collect();
    assert!(!puts.is_empty());
    for m in puts {
        assert_eq!((&m["requests"]["put"], &m["errors"]), (&m["tree_files"], &serde_json::json!(0)), "{m}");
    }
    // A container the store has not; an endpoint that does not answer (port 9).
    let bad = ["ladder", "--target", "azblob://no-such-container/p", "--ops", ops, "--to", "4", "-q"];
    common::assert_bad_input(&blob.as_user(&bad, &[]), "azblob://no-such-container", "a missing container");
    let conn = blob.connection_string();
    let nowhere = conn
        .split(';')
        .map(|f| if f.starts_with("BlobEndpoint=") { "BlobEndpoint=http://127.0.0.1:9/manyfiles" } else { f })
        .collect::<Vec<_>>()
        .join(";");
    let args = ["ladder", "--target", "azblob://manyfiles/p", "--ops", ops, "--to", "4", "-q"];
    let r = blob.as_user(&args, &[("AZURE_STORAGE_CONNECTION_STRING", nowhere)]);
    common::assert_bad_input(&r, "azblob://manyfiles/p", "an endpoint that does not answer");
}

/// kill -9 of `ladder --target azblob://CONTAINER/PREFIX` mid-trial, a blob of someone
/// else's put below the run's own prefix while it ran: `cleanup` (the same
/// `AZURE_STORAGE_*`) deletes the run's own blobs there — each carries its mark in
/// `x-ms-meta-manyfilesrun` — and leaves the other byte for byte, counted; every other
/// blob is as it was.
#[test]
fn kill_9_on_a_users_container_then_cleanup_deletes_only_the_runs_own_blobs() {
    need_blob!();
    let _g = serial();
    let blob = Blob::up();
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    blob.seed(work.path());
    let mut before = blob.blobs(&work.path().join("before"));
    let ops = "obj:put,obj:head,obj:list,obj:get,obj:delete,obj:delete-batch";
    let args = ["ladder", "--target", "azblob://manyfiles/p", "--ops", ops, "--total", "16MiB", "--from", "4096"];
    let all_args = [&args[..], &["--to", "4096", "--runs", "20", "-q"]].concat();
    let mut child = blob.user_command(&all_args, &[]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let run_prefix = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.split("writes only below azblob://manyfiles/").nth(1).map(|p| p.trim().to_string()))
        .expect("the run's own prefix printed");
    std::thread::spawn(move || lines.for_each(drop));
    let url = format!("azblob://manyfiles/{run_prefix}");
    // Someone else's blob below the run's own prefix, while it runs.
    let d = work.path().join("intruder");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("theirs"), b"not the run's").unwrap();
    blob.run(&["copy", d.to_str().unwrap(), &format!("{url}zz-intruder"), "--quiet"]).ok();
    let there = common::wait_until(std::time::Duration::from_secs(120), || blob.scanned(&url).unwrap_or(0) > 1);
    assert!(there, "no blob of the run's was ever seen below {url}");
    child.kill().unwrap();
    child.wait().unwrap();
    let left = blob.scanned(&url).unwrap();
    assert!(left > 1, "the kill left nothing to clean up");
    let r = blob.as_user(&["cleanup"], &[]);
    r.ok();
    let deleted = format!("deleted below a killed run's own prefix: {url}: {} object(s)", left - 1);
    assert!(r.stdout.contains(&deleted), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("{url}: 1 object(s) that this run did not write")), "{}", r.stdout);
    let mut after = blob.blobs(&work.path().join("after"));
    let theirs = after.remove(&format!("{run_prefix}zz-intruder/theirs")).expect("someone else's blob deleted");
    assert_eq!(theirs, b"not the run's");
    before.retain(|k, _| !k.starts_with(&run_prefix));
    assert_eq!(before, after, "the user's blobs changed, or the killed run's own stayed");
}

/// `pack --dst-target azblob://CONTAINER/PREFIX` through `AZURE_STORAGE_*`: loose blobs
/// against tar and tar.zst shards, every request counted; the user's blobs under the
/// prefix stay as they were and only they are left.
#[test]
fn pack_onto_a_users_container_writes_and_deletes_only_its_own_blobs() {
    need_blob!();
    let _g = serial();
    let blob = Blob::up();
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    blob.seed(work.path());
    let before = blob.blobs(&work.path().join("before"));
    let tree = work.path().join("tree");
    for i in 0..40usize {
        let dir = tree.join(format!("d{}", i % 3));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("file-{i:04}")), vec![(i * 131) as u8; 4096]).unwrap();
    }
    let j = work.path().join("r.json");
    let (w, t) = (work.path().to_str().unwrap(), tree.to_str().unwrap());
    let args = ["pack", t, "--src-target", w, "--dst-target", "azblob://manyfiles/p", "--shard-size", "64KiB"];
    let r = blob.as_user(&[&args[..], &["--runs", "1", "--quiet", "--json", j.to_str().unwrap()]].concat(), &[]);
    r.ok();
    assert!(r.stdout.contains("advice for 40 files"), "{}", r.stdout);
    let doc = json(&j);
    let run1 = |op: &str| {
        let all = doc["measurements"].as_array().unwrap();
        all.iter().find(|m| m["op"] == op && m["run"] == 1).unwrap_or_else(|| panic!("no {op}")).clone()
    };
    // 40 files of 4 KiB: a PUT each loose; 14 a 64 KiB tar shard → 3 shards + the index.
    assert_eq!((requests(&run1("loose:put"), "put"), requests(&run1("tar@64KiB:put"), "put")), (40, 4));
    let target = run1("loose:put")["target"].as_str().unwrap().to_string();
    assert!(target.ends_with("→ azblob://manyfiles/p/"), "{target}");
    assert!(run1("loose:put")["cost"].to_string().contains("USD"), "priced: {}", run1("loose:put"));
    assert!(!std::fs::read_to_string(&j).unwrap().contains(&blob.key()), "the key in the JSON");
    assert_eq!(before, blob.blobs(&work.path().join("after")), "the user's blobs changed, or the run left some");
    assert!(common::run_dirs(work.path()).is_empty(), "a run directory left on the source");
}

/// `predict --on azblob://CONTAINER/PREFIX --store-via DIR`: the calibration under a
/// prefix of its own (taken away; the user's blobs stay), Azure's prices, and the check
/// lines run as printed send exactly the predicted requests.
#[test]
fn predict_on_a_container_prints_checks_that_count_exactly() {
    need_blob!();
    let _g = serial();
    let blob = Blob::up();
    let work = tempfile::tempdir_in("/var/tmp").unwrap();
    blob.seed(work.path());
    let before = blob.blobs(&work.path().join("before"));
    let src = work.path().join("tree");
    std::fs::create_dir_all(src.join("a")).unwrap();
    for i in 0..30u32 {
        std::fs::write(src.join(format!("a/f{i}")), vec![7u8; (i * 300) as usize]).unwrap();
    }
    let pj = work.path().join("predict.json");
    let args = ["predict", "--tree", src.to_str().unwrap(), "--on", "azblob://manyfiles/p", "--max-time", "20s"];
    let p = blob.run(&[&args[..], &["--quiet", "--json", pj.to_str().unwrap()]].concat());
    p.ok();
    let predicted = json(&pj);
    assert!(predicted["objects"]["prices"]["name"].as_str().unwrap().starts_with("Azure Blob"), "{predicted}");
    let commands = predicted["objects"]["commands"].as_array().unwrap().clone();
    let lines = p.stdout.lines().skip_while(|l| !l.starts_with("check, one run each")).skip(1);
    let cmds: Vec<String> =
        lines.map_while(|l| l.strip_prefix("  ")).filter(|l| !l.starts_with('(')).map(String::from).collect();
    assert_eq!(cmds.len(), 5, "upload, scan, download, rm, rm DIR: {}", p.stdout);
    let via = format!("--s3-via {}", blob.mp.display());
    assert!(
        cmds[..4].iter().all(|c| c.contains("azblob://manyfiles/p/manyfiles-check-") && c.ends_with(&via)),
        "{cmds:?}"
    );
    let path = format!("{}:{}", common::bin().parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    for (i, c) in cmds.iter().enumerate() {
        let j = work.path().join(format!("engine{i}.json"));
        let engine = c.contains(" azblob://");
        let extra = match engine {
            true => {
                format!("{} --json {}", if c.starts_with("manyfiles scan ") { "" } else { " --quiet" }, j.display())
            }
            false => String::new(),
        };
        let out = Command::new("sh").args(["-c", &format!("{c}{extra}")]).env("PATH", &path).output().unwrap();
        assert!(out.status.success(), "{c}: {}", String::from_utf8_lossy(&out.stderr));
        if engine {
            let sent = json(&j);
            for kind in ["put", "get", "head", "list", "delete", "delete_objects", "post", "other"] {
                let want = commands[i]["requests"][kind].as_u64();
                assert_eq!(want, sent["requests"][kind].as_u64(), "{c}: {kind} predicted against sent");
            }
        }
    }
    assert_eq!(before, blob.blobs(&work.path().join("after")), "the user's blobs changed, or the run left some");
}
