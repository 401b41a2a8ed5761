//! What the tests on object stores share (tests/object_engines.rs, tests/object_flags.rs):
//! a `manyfiles mount s3@rtt=1ms` per test ([`Store`]), trees made and read back, and
//! the JSON summaries. Without root, FUSE, s3fs, manyfiles-s3server and toxiproxy-server
//! a test prints why it skipped ([`need_stack!`]), except under CI (CI=true), where a
//! skip is a failure.
#![allow(dead_code)]

use super::common;
use manyfiles::storage::object_stack;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub fn missing() -> Option<String> {
    let stack = |path: &std::ffi::OsStr| object_stack::preflight("s3", path).err();
    common::missing(&[&stack])
}

/// Return from the test (a skip, said why) when the stack cannot come up here.
macro_rules! need_stack {
    () => {
        if common::skipped(object_common::missing()) {
            return;
        }
    };
}

/// A `manyfiles mount s3@rtt=1ms` for one test, taken down when dropped.
pub struct Store {
    pub mp: PathBuf,
    _dir: tempfile::TempDir,
    /// What `mount` printed.
    pub printed: String,
}

impl Store {
    pub fn up() -> Store {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let mp = dir.path().canonicalize().unwrap();
        let r = common::run(["mount", "s3@rtt=1ms", mp.to_str().unwrap(), "--size", "256MiB"]);
        r.ok();
        Store { mp, _dir: dir, printed: r.stdout.clone() }
    }

    /// The value after `label` in what mount printed, up to a space.
    pub fn printed_after(&self, label: &str) -> String {
        let rest = self.printed.split(label).nth(1).unwrap_or_else(|| panic!("{label} in {}", self.printed));
        rest.split_whitespace().next().unwrap().trim_end_matches(',').to_string()
    }

    pub fn credentials_file(&self) -> PathBuf {
        PathBuf::from(self.printed_after("AWS_SHARED_CREDENTIALS_FILE="))
    }

    /// The access key and the secret.
    pub fn secrets(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.credentials_file()).unwrap();
        let v: Vec<String> = text.lines().filter_map(|l| l.split_once(" = ")).map(|(_, v)| v.trim().into()).collect();
        assert_eq!(v.len(), 2, "{text}");
        v
    }

    /// `manyfiles ARGS --s3-via MP`.
    pub fn run(&self, args: &[&str]) -> common::Run {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--s3-via", self.mp.to_str().unwrap()]);
        let r = common::run(&all);
        for s in self.secrets() {
            assert!(!r.stdout.contains(&s) && !r.stderr.contains(&s), "a credential printed by {args:?}");
        }
        r
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let r = common::run(["umount", self.mp.to_str().unwrap()]);
        if r.code != Some(0) && !std::thread::panicking() {
            panic!("umount: {}", r.stderr);
        }
    }
}

/// Every regular file below `root`: path → (bytes, mtime in ns since the epoch).
pub fn files(root: &Path) -> BTreeMap<String, (Vec<u8>, u128)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.path().symlink_metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else if m.is_file() {
                let rel = e.path().strip_prefix(root).unwrap().to_string_lossy().into_owned();
                let t = m.modified().unwrap().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos();
                out.insert(rel, (std::fs::read(e.path()).unwrap(), t));
            }
        }
    }
    out
}

/// A tree of 40 files in 3 levels of directories, sizes 0 to ~70 KiB, mtimes in the past
/// with nanoseconds.
pub fn make_tree(root: &Path) -> usize {
    let mut n = 0;
    for (d, count) in [("", 4), ("a", 10), ("a/b", 12), ("c", 14)] {
        std::fs::create_dir_all(root.join(d)).unwrap();
        for i in 0..count {
            let p = root.join(d).join(format!("f{i:02}.dat"));
            let size = (i * i * 517) % 70_000;
            let data: Vec<u8> = (0..size).map(|k| (k * 31 + i + d.len()) as u8).collect();
            std::fs::write(&p, &data).unwrap();
            let when = SystemTime::UNIX_EPOCH + Duration::new(1_600_000_000 + (n as u64) * 97, 123_456_789 + n as u32);
            std::fs::File::options().write(true).open(&p).unwrap().set_modified(when).unwrap();
            n += 1;
        }
    }
    n
}

pub fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

pub fn requests(v: &Value, kind: &str) -> u64 {
    v["requests"][kind].as_u64().unwrap_or_else(|| panic!("requests.{kind} in {v}"))
}
