//! Many ranks at once (feature `mpi`): `cargo test --features mpi --test mpi`.
//! Runs the binary under OpenMPI's mpirun. In CI (CI=true) mpirun must be there; elsewhere
//! the tests skip with a printed reason when it is not.
#![cfg(feature = "mpi")]

mod common;

use common::*;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A neighbour on `fs`: waits (until `done`, at most 120 s) for a run directory to appear
/// there — made after the run's up-front room check — then stops the ranks of this job
/// (the processes of the binary under test whose command line names `job`; SIGSTOP, so
/// none goes on writing meanwhile; other tests' jobs are left alone), fills the file
/// system's free bytes with a file of its own and lets them go on (SIGCONT). True when
/// it filled.
fn fill_when_a_run_starts(
    fs: std::path::PathBuf,
    job: String,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<bool> {
    std::thread::spawn(move || {
        let t0 = Instant::now();
        while run_dirs(&fs).is_empty() {
            if done.load(std::sync::atomic::Ordering::Relaxed) || t0.elapsed() > Duration::from_secs(120) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let exe = bin().canonicalize().unwrap();
        let ranks: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| p == exe))
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.windows(job.len()).any(|w| w == job.as_bytes()))
            })
            .map(|pid| pid.to_string())
            .collect();
        assert!(!ranks.is_empty(), "no process of {} names {job}", exe.display());
        let signal = |sig: &str| {
            let _ = Command::new("kill").arg(sig).args(&ranks).status();
        };
        signal("-STOP");
        use std::io::Write;
        let mut f = std::fs::File::create(fs.join("neighbour")).unwrap();
        let chunk = vec![7u8; 1 << 20];
        let mut size = chunk.len();
        while size >= 512 {
            match f.write(&chunk[..size]) {
                Ok(_) => {}
                Err(_) => size /= 2,
            }
        }
        signal("-CONT");
        true
    })
}

/// `mpirun -np N manyfiles ARGS`, bounded in time, and how long it took.
fn mpirun(np: usize, args: &[&str]) -> (Run, Duration) {
    let t0 = Instant::now();
    let run = mpirun_with(np, args, Duration::from_secs(180));
    (run, t0.elapsed())
}

fn measurements(json: &Path) -> Vec<serde_json::Value> {
    arr(&load_json(json), "measurements").clone()
}

#[test]
fn four_ranks_aggregate_to_four_times_one_rank() {
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let one = dir.path().join("one.json");
    let four = dir.path().join("four.json");
    let common = ["--target", target.to_str().unwrap(), "--total", "256k", "--to", "64", "--runs", "1", "--quiet"];
    let mut a = vec!["ladder"];
    a.extend(common);
    a.extend(["--json", one.to_str().unwrap()]);
    run(&a).ok();
    let mut b = vec!["ladder"];
    b.extend(common);
    b.extend(["--json", four.to_str().unwrap()]);
    let (r, _) = mpirun(4, &b);
    r.ok();
    // Rank 0 alone prints: one table title.
    assert_eq!(r.stdout.matches("manyfiles ladder").count(), 1, "{}", r.stdout);
    assert!(r.stdout.contains("4 MPI ranks"), "{}", r.stdout);

    let rs = load_json(&four);
    assert_eq!(u(get(&rs, "provenance"), "ranks"), 4);
    assert_eq!(arr(get(&rs, "provenance"), "hosts").len(), 4);
    // Each run shuffles the order of its trials within a pass: compare cell by cell.
    let sorted = |mut v: Vec<serde_json::Value>| {
        v.sort_by_key(|m| (s(m, "op").to_string(), s(m, "tree_key").to_string(), u(m, "run")));
        v
    };
    let (m1, m4) = (sorted(measurements(&one)), sorted(measurements(&four)));
    assert!(!m1.is_empty());
    // Written once: the same measurements as a one-rank run, not four copies.
    assert_eq!(m1.len(), m4.len());
    for (x, y) in m1.iter().zip(&m4) {
        assert_eq!(s(x, "op"), s(y, "op"));
        assert_eq!(s(x, "tree_key"), s(y, "tree_key"));
        assert!(measurement_complete(y), "{y}");
        assert_eq!(u(y, "files"), 4 * u(x, "files"), "{} {}", s(y, "op"), s(y, "tree_key"));
        assert_eq!(u(y, "bytes"), 4 * u(x, "bytes"));
        assert_eq!(u(y, "tree_files"), 4 * u(x, "tree_files"));
        let spread = get(y, "ranks");
        let per_rank: Vec<u64> = arr(spread, "rank_files").iter().map(|v| v.as_u64().unwrap()).collect();
        assert_eq!(per_rank, vec![u(x, "files"); 4]);
        assert!(f(spread, "stonewall_s") <= f(y, "elapsed_s"));
        assert!(u(spread, "stonewall_files") <= u(y, "files"));
    }
    assert!(run_dirs(&target).is_empty(), "run directories left behind");
}

#[test]
fn a_rank_with_a_bad_target_stops_every_rank_before_anything_is_made() {
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for r in [0, 2, 3] {
        std::fs::create_dir(dir.path().join(r.to_string())).unwrap();
    }
    let target = format!("{}/{{rank}}", dir.path().display());
    let (r, took) = mpirun(4, &["ops", "--target", &target, "--files", "100", "--runs", "1", "--quiet"]);
    r.expect_code(2);
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert!(r.stderr.contains("rank 1"), "{}", r.stderr);
    for k in [0, 2, 3] {
        assert!(run_dirs(&dir.path().join(k.to_string())).is_empty(), "rank {k} left a run directory");
    }
}

#[test]
fn a_rank_that_runs_out_of_space_mid_run_ends_the_job_with_its_reason() {
    if !is_root() {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root");
        eprintln!("skipped: mounting a tiny tmpfs for one rank needs root");
        return;
    }
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for r in 0..4 {
        std::fs::create_dir(dir.path().join(r.to_string())).unwrap();
    }
    // Rank 2 writes to a small tmpfs that has room for its tree when the run checks (so
    // the check before anything is written lets it through), and that a neighbour fills
    // once the run directory is there: its create runs out of space part way.
    let small = dir.path().join("2");
    let st = Command::new("mount").args(["-t", "tmpfs", "-o", "size=64m", "tmpfs"]).arg(&small).status().unwrap();
    assert!(st.success());
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _u = Unmount(&small);
    let target = format!("{}/{{rank}}", dir.path().display());
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let neighbour = fill_when_a_run_starts(small.clone(), target.clone(), done.clone());
    let json = dir.path().join("r.json");
    let (r, took) = mpirun(
        4,
        &[
            "ops",
            "--target",
            &target,
            "--files",
            "4000",
            "--size",
            "4k",
            "--ops",
            "create,read",
            "--runs",
            "2",
            "--json",
            json.to_str().unwrap(),
            "--quiet",
        ],
    );
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(neighbour.join().unwrap(), "the neighbour never saw rank 2's run directory: {}", r.stderr);
    r.expect_code(1);
    assert!(took < Duration::from_secs(90), "took {took:?}");
    assert!(r.stderr.contains("rank 2"), "{}", r.stderr);
    assert!(r.stderr.to_lowercase().contains("space"), "{}", r.stderr);
    // Whatever was saved holds only complete measurements (here: none got that far).
    if json.exists() {
        for m in measurements(&json) {
            assert!(measurement_complete(&m) || m["failed"].is_string(), "{m}");
        }
    }
    for k in 0..4 {
        assert!(run_dirs(&dir.path().join(k.to_string())).is_empty(), "rank {k} left a run directory");
    }
}

#[test]
fn commands_that_do_not_run_under_mpi_say_so() {
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (r, _) = mpirun(2, &["bigfile", "--target", dir.path().to_str().unwrap(), "--size", "1M", "--runs", "1"]);
    r.expect_code(2);
    assert!(r.stderr.contains("does not run under MPI"), "{}", r.stderr);
    let d = dir.path().to_str().unwrap();
    let (r, _) = mpirun(2, &["gen", &format!("{d}/x")]);
    r.expect_code(2);
    assert!(r.stderr.contains("does not run under MPI"), "{}", r.stderr);
    let (r, _) = mpirun(2, &["ops", "--fs", "ext4@ram", "--files", "10"]);
    r.expect_code(2);
    assert!(r.stderr.contains("refused under MPI"), "{}", r.stderr);
}

#[test]
fn shared_dir_puts_every_ranks_files_in_the_same_directories() {
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let d = dir.path().to_str().unwrap();
    let args = [
        "ops",
        "--target",
        d,
        "--files",
        "600",
        "--files-per-dir",
        "100",
        "--size",
        "1k",
        "--ops",
        "create,list,read,delete",
        "--runs",
        "1",
        "--shared-dir",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ];
    let (r, _) = mpirun(3, &args);
    r.ok();
    let ms = measurements(&json);
    assert_eq!(ms.len(), 4);
    for m in &ms {
        assert!(measurement_complete(m), "{m}");
        let per_rank: Vec<u64> = arr(get(m, "ranks"), "rank_files").iter().map(|v| v.as_u64().unwrap()).collect();
        if s(m, "op") == "list" {
            // Each rank lists the shared directories and sees every rank's 600 files (and
            // the 6 directories): 3 × 600 + 6 entries, not its own 606.
            assert_eq!(per_rank, vec![1806; 3], "{m}");
        } else {
            assert_eq!(per_rank, vec![600; 3], "{} {m}", s(m, "op"));
        }
    }
    assert!(run_dirs(dir.path()).is_empty(), "run directory left behind");
    let (r, _) = mpirun(2, &["ops", "--target", d, "--files", "10", "--ops", "create,copy", "--shared-dir", "--quiet"]);
    r.expect_code(2);
    assert!(r.stderr.contains("--shared-dir"), "{}", r.stderr);
}
