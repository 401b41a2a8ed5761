//! Scenario 10, load (scaled down for CI: 50,000 files; the 1,000,000-file run is
//! bench/reliability_load.sh, figures in RELIABILITY.md): create, copy, sync, scan and
//! delete with 8 threads on this 2-core machine complete, and each process's peak RSS
//! stays under the bound BENCHMARKS.md sets for 1,000,000 files (150 MB).

mod reliability_common;

use reliability_common::*;
use std::ffi::OsStr;
use std::time::{Duration, Instant};

const FILES: &str = "50000";
const PEAK_RSS_MIB: i64 = 150;
const LIMIT: Duration = Duration::from_secs(240);

/// Run to the end; exit code and peak RSS (MiB) from wait4's rusage.
fn run_rss(args: &[&OsStr]) -> (i32, i64, f64) {
    let t0 = Instant::now();
    let child = command(args, None).stdout(std::process::Stdio::null()).spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: plain wait4 on our own child; rusage is written by the kernel.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(rc, pid);
    let secs = t0.elapsed().as_secs_f64();
    assert!(t0.elapsed() < LIMIT, "{args:?} took {secs:.1} s");
    (libc::WEXITSTATUS(status), ru.ru_maxrss / 1024, secs)
}

#[test]
fn reliability_load_scaled() {
    let t = tempfile::tempdir().unwrap();
    let (src, dst, empty) = (t.path().join("src"), t.path().join("dst"), t.path().join("empty"));
    std::fs::create_dir(&empty).unwrap();
    let db = format!("sqlite:{}", t.path().join("i.sqlite").display());
    let th = ["--threads".as_ref(), "8".as_ref()];
    let steps: Vec<(&str, Vec<&OsStr>)> = vec![
        (
            "create",
            [
                &[
                    "gen".as_ref(),
                    src.as_os_str(),
                    "--files".as_ref(),
                    FILES.as_ref(),
                    "--size".as_ref(),
                    "0".as_ref(),
                    "-q".as_ref(),
                ][..],
                &th,
            ]
            .concat(),
        ),
        ("copy", [&["copy".as_ref(), src.as_os_str(), dst.as_os_str(), "-q".as_ref()][..], &th].concat()),
        ("sync", [&["sync".as_ref(), src.as_os_str(), dst.as_os_str(), "-q".as_ref()][..], &th].concat()),
        ("scan", [&["scan".as_ref(), src.as_os_str(), "--db".as_ref(), db.as_ref()][..], &th].concat()),
        (
            "delete",
            [&["sync".as_ref(), empty.as_os_str(), dst.as_os_str(), "--delete".as_ref(), "-q".as_ref()][..], &th]
                .concat(),
        ),
    ];
    for (name, args) in steps {
        let (code, rss, secs) = run_rss(&args);
        eprintln!("load {name}: {FILES} files, exit {code}, {secs:.1} s, peak RSS {rss} MiB");
        assert_eq!(code, 0, "{name}");
        assert!(rss < PEAK_RSS_MIB, "{name}: peak RSS {rss} MiB");
    }
    assert!(std::fs::read_dir(&dst).unwrap().next().is_none(), "delete emptied DST");
}
