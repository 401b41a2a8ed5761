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
use std::path::PathBuf;
use std::process::Command;

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
