//! Bad input: exit code 2, exactly one stderr line `manyfiles: ...` naming the flag,
//! nothing on stdout, and nothing created (the target and the working directory are
//! left exactly as they were).

mod common;

use common::*;

/// Run `args` (with `{T}` → the target dir and `{F}` → a regular file in it) from
/// inside the target, and check it is refused as bad input naming `flag`, with the
/// target unchanged.
fn refused(args: &str, flag: &str) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let file = t.join("afile");
    std::fs::write(&file, b"a regular file").unwrap();
    std::fs::create_dir(t.join("sub")).unwrap();
    let before = snapshot(t);
    let argv: Vec<String> = words(args)
        .into_iter()
        .map(|a| a.replace("{T}", t.to_str().unwrap()).replace("{F}", file.to_str().unwrap()))
        .collect();
    // A flag given twice would be refused by clap for the wrong reason.
    let mut flags: Vec<&String> = argv.iter().filter(|a| a.starts_with("--")).collect();
    flags.sort();
    assert!(flags.windows(2).all(|w| w[0] != w[1]), "test bug: a flag repeats in {args}");
    let r = run_in(t, &argv);
    assert_bad_input(&r, flag, args);
    assert!(run_dirs(t).is_empty(), "{args}: run dir created");
    assert_eq!(snapshot(t), before, "{args}: target changed");
    r
}

/// Small ladder flags so that a wrongly accepted case finishes quickly.
const L: &str = "ladder --target {T} --quiet";

#[test]
fn bad_sizes_and_counts() {
    refused(&format!("{L} --total 12XB --to 4 --runs 1"), "--total");
    refused(&format!("{L} --total 0 --to 4 --runs 1"), "--total");
    refused(&format!("{L} --total 64k --from 0 --to 4 --runs 1"), "--from");
    refused(&format!("{L} --total 64k --from 100 --to 10 --runs 1"), "--from");
    refused(&format!("{L} --total 64k --to 0 --runs 1"), "--to");
    refused(&format!("{L} --total 64k --to 4 --runs 0"), "--runs");
    refused(&format!("{L} --total 64k --to 4 --runs 10001"), "--runs");
    refused(&format!("{L} --total 64k --to 4 --runs abc"), "--runs");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --threads 0"), "--threads");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --threads 5000"), "--threads");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --step 1"), "--step");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --portion 0"), "--portion");
    refused("ops --target {T} --quiet --files 0 --runs 1", "--files");
    refused("ops --target {T} --quiet --files 10 --size lognormal:1k --runs 1", "--size");
    refused("ops --target {T} --quiet --files 10 --size uniform:4k-1k --runs 1", "--size");
    refused("ops --target {T} --quiet --files 10 --size list: --runs 1", "--size");
    refused("ops --target {T} --quiet --files 10 --size 2T --runs 1", "--size");
    refused("ops --target {T} --quiet --files 10 --size 12XB --runs 1", "--size");
}

#[test]
fn bad_targets() {
    let r = refused("ladder --target /nonexistent --quiet --total 64k --to 4 --runs 1", "--target");
    assert!(r.stderr.contains("/nonexistent"), "message names the missing path: {}", r.stderr);
    refused("ladder --target {F} --quiet --total 64k --to 4 --runs 1", "--target");
    refused("ops --target {F} --quiet --files 4 --size 1k --runs 1", "--target");
}

#[test]
fn bad_choices() {
    refused(&format!("{L} --total 64k --to 4 --runs 1 --ops create,frobnicate"), "--ops");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --ops ,"), "--ops");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --content rand"), "--content");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --content compressible:0.5"), "--content");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --fsync sometimes"), "--fsync");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --block-size 5M"), "--block-size");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --block-size 0"), "--block-size");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --direct --block-size 1000"), "--block-size");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --name-len 300"), "--name-len");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --fanout 1"), "--fanout");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --files-per-dir 0"), "--files-per-dir");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --depth 65"), "--depth");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --flat --fanout 4"), "--flat");
}

#[test]
fn bad_outputs_and_unknown_flags() {
    refused(&format!("{L} --total 64k --to 4 --runs 1 --json /nonexistent/dir/x.json"), "--json");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --json {{T}}"), "--json");
    refused(&format!("{L} --total 64k --to 4 --runs 1 --bogus"), "--bogus");
    refused("ops --target {T} --quiet --files 4 --runs 1 --bogus", "--bogus");
    refused("frobnicate", "frobnicate");
}

#[test]
fn dataset_larger_than_free_space() {
    let r = refused("ops --target {T} --quiet --files 4 --size 1T --runs 1", "--target");
    assert!(r.stderr.contains("free"), "message must mention the free space: {}", r.stderr);
    let r = refused(&format!("{L} --total 1T --from 1 --to 1 --runs 1"), "--target");
    assert!(r.stderr.contains("free"), "message must mention the free space: {}", r.stderr);
}

#[test]
fn unwritable_target() {
    if is_root() {
        println!("skipped: running as root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().join("ro");
    std::fs::create_dir(&t).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o555)).unwrap();
    let r = run(["ladder", "--target", t.to_str().unwrap(), "--quiet", "--total", "64k", "--to", "4", "--runs", "1"]);
    std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_bad_input(&r, "--target", "chmod 555 target");
    assert_eq!(std::fs::read_dir(&t).unwrap().count(), 0);
}

#[test]
fn bare_invocation_is_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let r = run_in(tmp.path(), Vec::<String>::new());
    assert_eq!(r.code, Some(2), "no subcommand: {r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "one stderr line: {}", r.stderr);
    assert!(r.stderr.starts_with("manyfiles: "), "{}", r.stderr);
    // Regression: the line once repeated the about text instead of saying what is missing.
    let line = r.stderr_lines()[0].to_lowercase();
    assert!(line.contains("subcommand") || line.contains("ladder"), "the line must say what is missing: {}", r.stderr);
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn huge_file_count_is_refused_quickly_and_cheaply() {
    // Regression: a huge --files / --to once built the whole plan (memory in proportion
    // to the file count) before being refused, and died of SIGABRT under a 1 GiB limit.
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().to_str().unwrap().to_string();
    let g = tmp.path().join("g").to_str().unwrap().to_string();
    let cases = [
        format!("ops --target {t} --files 1T --size 1 --runs 1 --quiet"),
        format!("gen {g} --files 1T --size 1 --quiet"),
        format!("ladder --target {t} --to 1T --runs 1 --quiet"),
    ];
    let children: Vec<_> = cases
        .iter()
        .map(|c| {
            let mut cmd = std::process::Command::new(bin());
            cmd.args(words(c)).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
            // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
            unsafe {
                cmd.pre_exec(|| {
                    let lim = libc::rlimit { rlim_cur: 1 << 30, rlim_max: 1 << 30 };
                    if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            cmd.spawn().expect("spawn")
        })
        .collect();
    let start = std::time::Instant::now();
    for (c, child) in cases.iter().zip(children) {
        let out = child.wait_with_output().unwrap();
        let r = Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into(),
            stderr: String::from_utf8_lossy(&out.stderr).into(),
        };
        // Refused for lack of space (--target / DIR) or as too many files (--files / --to).
        let flags: &[&str] = match c.split(' ').next().unwrap() {
            "gen" => &["DIR", "--files"],
            "ops" => &["--target", "--files"],
            _ => &["--target", "--to"],
        };
        let flag = flags.iter().find(|f| r.stderr.contains(**f)).copied().unwrap_or(flags[0]);
        assert_bad_input(&r, flag, c);
    }
    assert!(start.elapsed() < std::time::Duration::from_secs(20), "refusals took {:?}", start.elapsed());
    assert!(run_dirs(tmp.path()).is_empty());
    assert!(!tmp.path().join("g").exists());
}

/// Issue 42, item 4: a typo gets clap's suggestion on the one error line (exit 2), and a
/// requirement names every way to meet it.
#[test]
fn typos_get_a_suggestion() {
    for (args, want) in [
        (vec!["ladr"], "a similar subcommand exists: 'ladder'"),
        (vec!["ladder", "--too", "5"], "a similar argument exists: '--to'"),
        (vec!["sync", "--dlete", "a", "b"], "a similar argument exists: '--delete'"),
        // Every way to meet a requirement, not only the one clap names.
        (vec!["predict", "--tree", "."], "--model RESULTS.json, or --on DIR or --fs SPEC to calibrate first"),
    ] {
        let r = run(&args);
        r.expect_code(2);
        let lines = r.stderr_lines();
        assert_eq!(lines.len(), 1, "{args:?}: {lines:?}");
        assert!(lines[0].contains(want), "{args:?}: {lines:?}");
    }
}

/// A build without MPI started by an MPI launcher as one of several processes would run
/// the whole job once per process, each calling itself the only rank and writing the
/// same outputs: refused before anything runs (exit 2, one line), the target untouched.
/// (A build with MPI joins the job instead: tests/mpi.rs.)
#[cfg(not(feature = "mpi"))]
#[test]
fn several_processes_of_a_build_without_mpi_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().to_str().unwrap();
    for var in ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"] {
        let out = cmd()
            .env(var, "2")
            .args(["mdtest", "--easy", "--files", "10", "--runs", "1", "--target", t])
            .output()
            .unwrap();
        let r = Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into(),
            stderr: String::from_utf8_lossy(&out.stderr).into(),
        };
        assert_bad_input(&r, "MPI", var);
        assert!(r.stderr.contains("one of 2 processes"), "{}", r.stderr);
        assert!(run_dirs(tmp.path()).is_empty());
        // One process of one: an ordinary run.
        cmd().env(var, "1").args(["--version"]).assert().success();
    }
}
