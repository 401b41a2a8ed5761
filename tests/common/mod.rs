//! Helpers shared by the integration tests: running the binary, walking and hashing
//! generated trees, loading result JSON, and looking for leftover run directories.
#![allow(dead_code)]

mod serial;

use serde_json::Value;
/// The serial lock and the skip checks (is_root: who can write anywhere, whatever the
/// mode bits).
#[allow(unused_imports)]
pub use serial::{SERIAL, is_root, missing, root_only, serial, skipped};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Whether OpenMPI's `mpirun` is here (feature `mpi` tests); where it is not, the test
/// skips with a printed reason — never in CI (CI=true), where it must be.
pub fn mpirun_available() -> bool {
    let found =
        std::process::Command::new("mpirun").arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    if !found {
        assert!(std::env::var_os("CI").is_none(), "CI: mpirun is missing (.ci/run installs openmpi-bin)");
        eprintln!("skipped: mpirun not found (apt-get install openmpi-bin)");
    }
    found
}

/// The set-up of an MPI test that runs one at a time (how work spreads over ranks needs
/// the ranks to get fair shares of the CPUs): the serial lock, or None (the reason
/// printed) where mpirun is missing.
pub fn mpi_one_at_a_time() -> Option<std::sync::MutexGuard<'static, ()>> {
    let guard = serial();
    mpirun_available().then_some(guard)
}

/// `mpirun -np N manyfiles ARGS`, killed after `timeout`.
pub fn mpirun_with(np: usize, args: &[&str], timeout: std::time::Duration) -> Run {
    let out = assert_cmd::Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", &np.to_string()])
        .arg(bin())
        .args(args)
        .timeout(timeout)
        .output()
        .expect("mpirun starts");
    Run::from_output(out)
}

/// Name of the marker file the tool writes into every directory it owns.
pub const MARKER: &str = ".manyfiles-run";

/// Path of the binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_manyfiles"))
}

/// An assert_cmd command for the binary.
pub fn cmd() -> assert_cmd::Command {
    assert_cmd::Command::new(bin())
}

/// What a finished run of the binary produced.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from_output(o: Output) -> Run {
        Run {
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    /// Panic with everything the run printed unless it exited with `code`.
    pub fn expect_code(&self, code: i32) -> &Run {
        assert_eq!(
            self.code,
            Some(code),
            "expected exit code {code}\n--- stdout:\n{}\n--- stderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    pub fn ok(&self) -> &Run {
        self.expect_code(0)
    }

    /// Non-empty stderr lines.
    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().filter(|l| !l.trim().is_empty()).collect()
    }
}

/// Run the binary with `args` (stdin closed) and collect its output.
pub fn run<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = cmd().args(args).output().expect("spawn manyfiles");
    Run::from_output(out)
}

/// Run the binary with `args` in working directory `cwd`.
pub fn run_in<I, S>(cwd: &Path, args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = cmd().current_dir(cwd).args(args).output().expect("spawn manyfiles");
    Run::from_output(out)
}

/// Split a command line written as one string on whitespace (no quoting needed here).
pub fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// Assert the run was refused as bad input: exit 2, exactly one non-empty stderr line
/// that starts with `manyfiles: ` and contains `flag`, and nothing on stdout.
pub fn assert_bad_input(r: &Run, flag: &str, what: &str) {
    assert_eq!(r.code, Some(2), "{what}: expected exit 2\n--- stdout:\n{}\n--- stderr:\n{}", r.stdout, r.stderr);
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "{what}: expected exactly one stderr line, got:\n{}", r.stderr);
    assert!(lines[0].starts_with("manyfiles: "), "{what}: stderr line must start with 'manyfiles: ': {}", lines[0]);
    assert!(lines[0].contains(flag), "{what}: stderr line must name {flag}: {}", lines[0]);
    assert!(r.stdout.is_empty(), "{what}: stdout must be empty, got:\n{}", r.stdout);
}

/// `manyfiles-run-*` entries directly inside `dir`.
pub fn run_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read target dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("manyfiles-run-")))
        .collect();
    v.sort();
    v
}

/// One entry of a recursive walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Path relative to the walked root, `/`-separated.
    pub rel: String,
    pub path: PathBuf,
    pub is_dir: bool,
    pub is_symlink: bool,
    pub size: u64,
    /// st_blocks (512-byte units).
    pub blocks: u64,
}

/// Every entry below `root` (not following symlinks), sorted by relative path.
/// The top-level marker file is left out when `skip_marker`.
pub fn walk(root: &Path, skip_marker: bool) -> Vec<Entry> {
    fn go(root: &Path, dir: &Path, out: &mut Vec<Entry>, skip_marker: bool) {
        for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read_dir {}: {e}", dir.display())) {
            let e = e.expect("dir entry");
            let path = e.path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if skip_marker && rel == MARKER {
                continue;
            }
            let md = std::fs::symlink_metadata(&path).expect("lstat");
            let ft = md.file_type();
            out.push(Entry {
                rel,
                path: path.clone(),
                is_dir: ft.is_dir(),
                is_symlink: ft.is_symlink(),
                size: md.len(),
                blocks: md.blocks(),
            });
            if ft.is_dir() {
                go(root, &path, out, skip_marker);
            }
        }
    }
    let mut out = Vec::new();
    go(root, root, &mut out, skip_marker);
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    out
}

/// Regular files of a generated tree (marker excluded), sorted by relative path.
pub fn tree_files(root: &Path) -> Vec<Entry> {
    walk(root, true).into_iter().filter(|e| !e.is_dir).collect()
}

/// Directories below `root` (root excluded), sorted by relative path.
pub fn tree_dirs(root: &Path) -> Vec<Entry> {
    walk(root, true).into_iter().filter(|e| e.is_dir).collect()
}

/// A snapshot of everything under `dir` (kind, size, and the bytes of small files), to
/// check that a refused command left it untouched.
pub fn snapshot(dir: &Path) -> BTreeMap<String, (bool, u64, Option<Vec<u8>>)> {
    walk(dir, false)
        .into_iter()
        .map(|e| {
            let data = if !e.is_dir && !e.is_symlink && e.size <= 1 << 20 {
                Some(std::fs::read(&e.path).expect("read file"))
            } else {
                None
            };
            (e.rel, (e.is_dir, e.size, data))
        })
        .collect()
}

/// 64-bit FNV-1a, fed incrementally.
pub struct Fnv(u64);

impl Fnv {
    pub fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// Hash of (relative path, size, bytes) of every file and of every directory's
/// relative path under `root`, marker excluded: equal trees give equal hashes.
pub fn tree_hash(root: &Path) -> u64 {
    let mut h = Fnv::new();
    for e in walk(root, true) {
        h.update(if e.is_dir { b"D" } else { b"F" });
        h.update(e.rel.as_bytes());
        h.update(&[0]);
        if !e.is_dir {
            h.update(&e.size.to_le_bytes());
            let data = std::fs::read(&e.path).expect("read file");
            assert_eq!(data.len() as u64, e.size, "{} read back short", e.rel);
            h.update(&data);
        }
    }
    h.finish()
}

/// Hash of everything on disk below `root`, hidden entries included and nothing
/// skipped: every directory's listing (names, sorted), and per entry its name, type,
/// size and content (a symlink's target). Also the number of entries. Two trees with
/// the same hash hold exactly the same entries and bytes.
pub fn exact_tree_hash(root: &Path) -> (u64, usize) {
    let mut h = Fnv::new();
    let entries = walk(root, false);
    for e in &entries {
        let kind: &[u8] = if e.is_dir {
            b"D"
        } else if e.is_symlink {
            b"L"
        } else if std::fs::symlink_metadata(&e.path).expect("lstat").is_file() {
            b"F"
        } else {
            b"O"
        };
        h.update(kind);
        h.update(e.rel.as_bytes());
        h.update(&[0]);
        h.update(&e.size.to_le_bytes());
        if e.is_dir {
            let mut names: Vec<Vec<u8>> = std::fs::read_dir(&e.path)
                .expect("list")
                .map(|d| std::os::unix::ffi::OsStrExt::as_bytes(d.expect("entry").file_name().as_os_str()).to_vec())
                .collect();
            names.sort();
            for n in names {
                h.update(&n);
                h.update(&[0]);
            }
        } else if e.is_symlink {
            h.update(std::os::unix::ffi::OsStrExt::as_bytes(
                std::fs::read_link(&e.path).expect("readlink").as_os_str(),
            ));
        } else if kind == b"F" {
            let data = std::fs::read(&e.path).expect("read file");
            assert_eq!(data.len() as u64, e.size, "{} read back short", e.rel);
            h.update(&data);
        }
    }
    (h.finish(), entries.len())
}

/// Names of entries directly in `dir` that start with a dot.
pub fn hidden_names(dir: &Path) -> Vec<String> {
    walk(dir, false)
        .into_iter()
        .map(|e| e.rel)
        .filter(|r| r.rsplit('/').next().is_some_and(|n| n.starts_with('.')))
        .collect()
}

/// Parse a JSON file.
pub fn load_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}\n{text}", path.display()))
}

/// Field access that panics with the key path when missing.
pub fn get<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.get(key).unwrap_or_else(|| panic!("missing key '{key}' in {v}"))
}

pub fn u(v: &Value, key: &str) -> u64 {
    get(v, key).as_u64().unwrap_or_else(|| panic!("'{key}' is not an unsigned integer: {v}"))
}

pub fn f(v: &Value, key: &str) -> f64 {
    get(v, key).as_f64().unwrap_or_else(|| panic!("'{key}' is not a number: {v}"))
}

pub fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    get(v, key).as_str().unwrap_or_else(|| panic!("'{key}' is not a string: {v}"))
}

pub fn arr<'a>(v: &'a Value, key: &str) -> &'a Vec<Value> {
    get(v, key).as_array().unwrap_or_else(|| panic!("'{key}' is not an array: {v}"))
}

/// A measurement ran to the end: no errors, not interrupted, not failed.
pub fn measurement_complete(m: &Value) -> bool {
    u(m, "errors") == 0 && get(m, "interrupted") == &Value::Bool(false) && get(m, "failed").is_null()
}

/// Size of `path` compressed by `gzip -c`, or None when gzip is not installed.
pub fn gzip_size(path: &Path) -> Option<u64> {
    let out = std::process::Command::new("gzip").arg("-c").arg(path).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(out.stdout.len() as u64)
}

/// Poll `cond` every 20 ms until it holds or `timeout` passes; true when it held.
pub fn wait_until(timeout: std::time::Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if std::time::Instant::now() >= end {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Parse a size the tool printed, such as `186 KiB`, `1.95 MiB` or `100 B`, into bytes.
pub fn parse_printed_size(num: &str, unit: &str) -> f64 {
    let v: f64 = num.parse().unwrap_or_else(|_| panic!("not a number: {num}"));
    let mult = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1048576.0,
        "GiB" => 1073741824.0,
        other => panic!("unknown unit {other}"),
    };
    v * mult
}

/// Leftovers of one manyfiles process: its images and mount points carry `-<pid>-`
/// (other runs on the machine do not disturb the check).
pub fn leftovers_of(pid: u32) -> Vec<String> {
    let tag = format!("-{pid}-");
    leftovers().into_iter().filter(|l| l.contains(&tag)).collect()
}

/// Mounts, loop devices and images that look like ours.
pub fn leftovers() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains("manyfiles"))
        .map(String::from)
        .collect();
    if let Ok(o) = std::process::Command::new("losetup").arg("-a").output() {
        v.extend(String::from_utf8_lossy(&o.stdout).lines().filter(|l| l.contains("manyfiles-img")).map(String::from));
    }
    for d in ["/dev/shm", "/var/tmp"] {
        if let Ok(rd) = std::fs::read_dir(d) {
            v.extend(
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("manyfiles-img"))
                    .map(|n| format!("{d}/{n}")),
            );
        }
    }
    v
}

/// A busy process for tests that load the machine: `sh -c 'while :; do :; done'`, killed
/// when dropped and, should the test process itself be killed, by the kernel when the
/// thread that started it ends (PR_SET_PDEATHSIG), so it never outlives its test.
pub struct Spinner(std::process::Child);

impl Spinner {
    pub fn start() -> Spinner {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "while :; do :; done"]);
        // SAFETY: only an async-signal-safe prctl between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
                Ok(())
            });
        }
        Spinner(cmd.spawn().expect("sh starts"))
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `manyfiles mount SPEC DIR --size SIZE` for the life of the value: umount on drop
/// (checked unless the test is already panicking).
pub struct Mounted(pub PathBuf);

impl Mounted {
    pub fn new(spec: &str, dir: &Path, size: &str) -> Mounted {
        run(["mount", spec, dir.to_str().unwrap(), "--size", size]).ok();
        Mounted(dir.to_path_buf())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let r = run(["umount", self.0.to_str().unwrap()]);
        if !std::thread::panicking() {
            r.ok();
        }
    }
}
