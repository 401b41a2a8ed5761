//! The bigfile engine, called through the library: phases and counts on a temp
//! directory, odd sizes, O_DIRECT where supported, bad input, and (as root) a managed
//! ext4 target that leaves nothing behind.

use manyfiles::experiment::bigfile::{self, BigfileConfig};
use manyfiles::experiment::{Order, TargetSpec};
use manyfiles::storage::fsspec::FsSpec;
use manyfiles::tree::Content;
use std::path::Path;
use std::process::Command;

const MIB: u64 = 1 << 20;

fn config(target: &Path, size: u64, block: usize, runs: u32) -> BigfileConfig {
    BigfileConfig {
        targets: vec![TargetSpec::Dir(target.to_path_buf())],
        labels: Vec::new(),
        fs_size: None,
        reuse: false,
        order: Order::Interleaved,
        size,
        block,
        fsync: false,
        direct: false,
        content: Content::Random,
        seed: 1,
        runs,
        adaptive: None,
        mock: None,
        warmup: 0,
        keep: false,
        json: None,
        exports: Vec::new(),
        quiet: true,
        command_line: vec!["manyfiles".into(), "bigfile".into()],
        drop_caches: false,
        until: manyfiles::results::Until::Durable,
    }
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Checks every run's three measurements and that the target is left empty.
fn check_complete(rs: &manyfiles::results::ResultSet, size: u64, block: u64, runs: u32, ntargets: usize) {
    assert!(rs.complete);
    assert_eq!(rs.measurements.len(), 3 * runs as usize * ntargets);
    assert_eq!(rs.experiment.name, "bigfile");
    assert_eq!(rs.experiment.ops, bigfile::OPS.map(String::from).to_vec());
    let calls = size.div_ceil(block);
    for m in &rs.measurements {
        assert!(m.result.complete(), "{m:?}");
        assert_eq!(m.experiment, "bigfile");
        assert_eq!((m.tree_files, m.tree_bytes, m.tree_dirs), (1, size, 0));
        assert_eq!(m.result.files, 1);
        if m.op == "bigfile-write" {
            assert_eq!(m.result.bytes, size);
            assert_eq!(m.result.latency_us.count, calls);
            assert_eq!(m.result.portions.last().unwrap().end_files, calls);
            assert_eq!(m.result.portions.iter().map(|p| p.files).sum::<u64>(), calls);
        } else {
            assert_eq!(m.result.latency_us.count, 1);
        }
    }
    // Interleaved order numbers, runs 1..=runs for every op.
    let orders: Vec<u64> = rs.measurements.iter().map(|m| m.order).collect();
    assert_eq!(orders, (0..rs.measurements.len() as u64).collect::<Vec<_>>());
    for op in bigfile::OPS {
        let s: Vec<_> = rs.summaries.iter().filter(|s| s.op == op).collect();
        assert_eq!(s.len(), ntargets, "{op}");
        assert_eq!(s[0].stats.n, runs as usize);
    }
}

#[test]
fn three_runs_on_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let mut cfg = config(dir.path(), 8 * MIB, MIB as usize, 3);
    cfg.json = Some(json.clone());
    let rs = bigfile::run(&cfg).unwrap();
    check_complete(&rs, 8 * MIB, MIB, 3, 1);
    let runs: Vec<u32> = rs.measurements.iter().map(|m| m.run).collect();
    assert_eq!(runs, vec![1, 1, 1, 2, 2, 2, 3, 3, 3]);
    assert!(entries(dir.path()).is_empty(), "left behind: {:?}", entries(dir.path()));
    // The saved JSON is the returned result.
    let saved = manyfiles::report::export::json::read(&json).unwrap();
    assert_eq!(saved, rs);
    let t = manyfiles::experiment::bigfile::view::table(&rs);
    println!("{t}");
    for col in ["write loop", "close", "unlink", "total", "MiB/s", " ± "] {
        assert!(t.contains(col), "{col} missing:\n{t}");
    }
}

#[test]
fn size_not_a_multiple_of_block_with_fsync_and_warmup() {
    let dir = tempfile::tempdir().unwrap();
    let size = 8 * MIB + 123;
    let mut cfg = config(dir.path(), size, MIB as usize, 2);
    cfg.fsync = true;
    cfg.warmup = 1;
    cfg.order = Order::Sequential;
    let rs = bigfile::run(&cfg).unwrap();
    check_complete(&rs, size, MIB, 2, 1);
    assert_eq!(rs.experiment.warmup, 1);
    assert!(rs.measurements.iter().all(|m| m.run >= 1 && m.run <= 2));
    // The write phase is durable: its fsync is timed as its flush, apart from the loop.
    for m in rs.measurements.iter().filter(|m| m.op == "bigfile-write") {
        let (r, f) = (m.result.returned_s.unwrap(), m.result.flush_s.unwrap());
        assert!(r > 0.0 && (m.result.elapsed_s - r - f).abs() < 1e-9, "{:?}", m.result);
    }
    assert!(manyfiles::experiment::bigfile::view::table(&rs).contains("close"));
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn two_targets_interleaved() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let mut cfg = config(a.path(), MIB + 5, 64 << 10, 2);
    cfg.targets.push(TargetSpec::Dir(b.path().to_path_buf()));
    let rs = bigfile::run(&cfg).unwrap();
    check_complete(&rs, MIB + 5, 64 << 10, 2, 2);
    let seq: Vec<(String, u32)> = rs.measurements.iter().map(|m| (m.target.clone(), m.run)).collect();
    assert_eq!(seq[0].1, 1);
    assert_eq!(seq[3].1, 1);
    assert_ne!(seq[0].0, seq[3].0);
    assert_eq!(seq[6].1, 2);
    let t = manyfiles::experiment::bigfile::view::table(&rs);
    // One row per target, named by its label as every view names it.
    for target in &rs.targets {
        assert_eq!(t.matches(&target.shown()).count(), 1, "{t}");
    }
    assert!(entries(a.path()).is_empty() && entries(b.path()).is_empty());
}

/// A block size that is neither a power of two nor a divisor of the size.
#[test]
fn odd_block_size() {
    let dir = tempfile::tempdir().unwrap();
    let size = 3 * MIB + 7;
    let rs = bigfile::run(&config(dir.path(), size, 4096 * 3 + 1, 1)).unwrap();
    check_complete(&rs, size, 4096 * 3 + 1, 1, 1);
    assert!(entries(dir.path()).is_empty());
}

fn shm_supports_direct(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let p = dir.join("probe");
    let r = std::fs::OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_DIRECT).open(&p);
    let _ = std::fs::remove_file(&p);
    match r {
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

#[test]
fn direct_on_dev_shm() {
    let Ok(dir) = tempfile::Builder::new().prefix("bigfile-test-").tempdir_in("/dev/shm") else {
        println!("skipped: no /dev/shm");
        return;
    };
    if let Err(e) = shm_supports_direct(dir.path()) {
        println!("skipped: /dev/shm does not take O_DIRECT ({e})");
        return;
    }
    // An unaligned tail: the last write goes buffered.
    let size = 4 * MIB + 100;
    let mut cfg = config(dir.path(), size, MIB as usize, 2);
    cfg.direct = true;
    let rs = bigfile::run(&cfg).unwrap();
    check_complete(&rs, size, MIB, 2, 1);
    assert!(rs.experiment.create.direct);
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn bad_input_exits_2_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(BigfileConfig, &str)> = vec![
        (config(dir.path(), 8 * MIB, 0, 3), "--block"),
        (config(dir.path(), 8 * MIB, 5 << 20, 3), "--block"),
        (config(dir.path(), 8 * MIB, MIB as usize, 0), "--runs"),
        (config(dir.path(), 0, MIB as usize, 3), "--size"),
        (config(dir.path(), 2 << 40, MIB as usize, 3), "--size"),
        (
            {
                let mut c = config(dir.path(), 8 * MIB, 1000, 3);
                c.direct = true;
                c
            },
            "--block",
        ),
        (
            {
                let mut c = config(dir.path(), 8 * MIB, MIB as usize, 3);
                c.targets.clear();
                c
            },
            "--target",
        ),
        (config(&dir.path().join("missing"), 8 * MIB, MIB as usize, 3), "--target"),
    ];
    for (cfg, flag) in cases {
        let e = bigfile::run(&cfg).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(e.to_string().starts_with(flag), "{flag}: {e}");
        assert!(entries(dir.path()).is_empty());
    }
    // Too big for the file system it is on.
    let e = bigfile::run(&config(dir.path(), 1 << 40, MIB as usize, 1)).unwrap_err();
    assert_eq!(e.exit_code(), 2, "{e}");
    assert!(entries(dir.path()).is_empty());
}

/// Lines mentioning manyfiles in mountinfo, `losetup -a` and /dev/shm.
fn leftovers() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("manyfiles"))
        .map(|l| format!("mount: {l}"))
        .collect();
    if let Ok(o) = Command::new("losetup").arg("-a").output() {
        v.extend(
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| l.contains("manyfiles"))
                .map(|l| format!("loop: {l}")),
        );
    }
    if let Ok(rd) = std::fs::read_dir("/dev/shm") {
        v.extend(
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains("manyfiles"))
                .map(|n| format!("/dev/shm/{n}")),
        );
    }
    // Only this process's resources (names carry `-<pid>-`): other runs on the machine
    // do not disturb the check.
    let tag = format!("-{}-", std::process::id());
    v.retain(|l| l.contains(&tag));
    v.sort();
    v
}

#[test]
fn managed_ext4_leaves_nothing() {
    if !is_root() {
        println!("skipped: needs root");
        return;
    }
    let before = leftovers();
    let mut cfg = config(Path::new("/"), 16 * MIB, MIB as usize, 2);
    cfg.targets = vec![TargetSpec::Fs(FsSpec::parse("ext4").unwrap())];
    cfg.fsync = true;
    let rs = match bigfile::run(&cfg) {
        Ok(rs) => rs,
        Err(e) if e.exit_code() == 2 => {
            println!("skipped: cannot make ext4 here: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    check_complete(&rs, 16 * MIB, MIB, 2, 1);
    assert_eq!(rs.targets[0].fs_type, "ext4");
    println!("{}", manyfiles::experiment::bigfile::view::table(&rs));
    let after = leftovers();
    let new: Vec<&String> = after.iter().filter(|l| !before.contains(l)).collect();
    assert!(new.is_empty(), "left behind: {new:?}");
}
