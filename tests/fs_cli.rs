//! `--fs`: experiments on managed test file systems through the CLI. These need root
//! (CI runs as root); elsewhere they print why they skip.

mod common;

use common::{is_root, leftovers_of, root_only, serial};
use serde_json::Value;
use std::process::Command;

fn manyfiles(args: &[&str]) -> std::process::Output {
    run(args).0
}

/// Run the binary; also return its pid, which names everything it creates.
fn run(args: &[&str]) -> (std::process::Output, u32) {
    let child = Command::new(env!("CARGO_BIN_EXE_manyfiles"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    (child.wait_with_output().unwrap(), pid)
}

#[test]
fn ladder_on_two_managed_file_systems() {
    let Some(_one) = root_only("--fs needs root") else { return };
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let (o, pid) = run(&[
        "ladder",
        "--fs",
        "ext4:1k,tmpfs",
        "--total",
        "256k",
        "--second-total",
        "off",
        "--to",
        "64",
        "--runs",
        "2",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("ext4:1k@ram") && stdout.contains("tmpfs@ram"), "{stdout}");
    let d: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let targets = d["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2);
    assert_eq!(targets[0]["kind"], "managed");
    assert_eq!(targets[0]["managed"]["fs_type"], "ext4");
    assert_eq!(targets[0]["block_size"], 1024, "ext4:1k formatted with 1 KiB blocks");
    assert!(targets[0]["managed"]["mkfs_command"].as_array().unwrap().iter().any(|a| a == "mkfs.ext4"));
    assert_eq!(targets[1]["fs_type"], "tmpfs");
    // 4 rungs × 3 ops × 2 runs × 2 targets, interleaved: each pass (24 measurements)
    // holds every (rung, target) once, in a shuffled order
    let ms = d["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), 4 * 3 * 2 * 2);
    for pass in ms.chunks(24) {
        let mut cells: Vec<String> = pass.iter().map(|m| format!("{} {}", m["target"], m["tree_files"])).collect();
        cells.sort();
        cells.dedup();
        assert_eq!(cells.len(), 8, "every rung on both targets once per pass: {cells:?}");
    }
    assert!(ms.iter().all(|m| m["errors"] == 0 && m["interrupted"] == false));
    assert_eq!(d["complete"], true);
    // a fresh format before every trial: 4 rungs × 2 runs
    assert_eq!(targets[0]["managed"]["formats"], 8);
    assert_eq!(leftovers_of(pid), Vec::<String>::new(), "nothing left behind");
}

#[test]
fn fs_bad_input_is_refused_before_anything_is_made() {
    let _one = serial();
    for args in [
        vec!["ladder", "--fs", "zfs"],
        vec!["ladder", "--fs", "ext4:3k"],
        vec!["ladder", "--fs-size", "1G"],
        vec!["ladder", "--reuse"],
        vec!["ladder", "--fs", "ext4", "--fs-size", "1M"],
        vec!["ladder", "--fs", "ext4", "--order", "random"],
    ] {
        let (o, pid) = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().filter(|l| !l.trim().is_empty()).count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("manyfiles: --"), "{args:?}: {err}");
        assert_eq!(leftovers_of(pid), Vec::<String>::new(), "{args:?} created nothing");
    }
}

#[test]
fn fs_needs_root() {
    let _one = serial();
    if !is_root() {
        let o = manyfiles(&["ladder", "--fs", "ext4"]);
        assert_eq!(o.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&o.stderr).contains("needs root"));
        return;
    }
    // As root: run the check as nobody through setpriv, when it is there.
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skipped: setpriv not installed");
        return;
    }
    let o = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_manyfiles"),
            "ladder",
            "--fs",
            "ext4",
        ])
        .current_dir("/tmp")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("needs root") && err.contains("--target"), "{err}");
}

#[test]
fn small_ladder_on_every_file_system_type() {
    let Some(_one) = root_only("--fs needs root") else { return };
    let types = ["ext2", "ext3", "ext4", "xfs", "btrfs", "ntfs", "exfat", "tmpfs"];
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let (o, pid) = run(&[
        "ladder",
        "--fs",
        &types.join(","),
        "--total",
        "64k",
        "--second-total",
        "off",
        "--to",
        "16",
        "--runs",
        "1",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let got: Vec<&str> =
        d["targets"].as_array().unwrap().iter().map(|t| t["managed"]["fs_type"].as_str().unwrap()).collect();
    assert_eq!(got, types);
    // 3 rungs × 3 ops per type, all complete
    let ms = d["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), types.len() * 3 * 3);
    assert!(ms.iter().all(|m| m["errors"] == 0 && m["failed"].is_null()));
    assert_eq!(leftovers_of(pid), Vec::<String>::new(), "nothing left behind");
}

#[test]
fn kill_9_then_cleanup_leaves_nothing() {
    let Some(_one) = root_only("--fs needs root") else { return };
    let mut child = Command::new(env!("CARGO_BIN_EXE_manyfiles"))
        .args(["ladder", "--fs", "ext4,ntfs", "--total", "1M", "--to", "1024", "--runs", "100", "--quiet"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until both file systems are mounted, then kill -9 mid-run.
    let pid = child.id();
    let t0 = std::time::Instant::now();
    while leftovers_of(pid).len() < 4 && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(!leftovers_of(pid).is_empty(), "the killed run left its file systems");
    let o = manyfiles(&["cleanup"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(leftovers_of(pid), Vec::<String>::new(), "cleanup removed what the killed run left");
}

#[test]
fn sigint_tears_managed_file_systems_down() {
    let Some(_one) = root_only("--fs needs root") else { return };
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let child = Command::new(env!("CARGO_BIN_EXE_manyfiles"))
        .args(["ladder", "--fs", "ext4,ntfs", "--total", "1M", "--to", "1024", "--runs", "100", "--quiet", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !json.exists() && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let pid = child.id();
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", String::from_utf8_lossy(&o.stderr));
    let d: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(d["complete"], false);
    assert!(!d["measurements"].as_array().unwrap().is_empty());
    assert_eq!(leftovers_of(pid), Vec::<String>::new(), "the interrupted run tore its file systems down");
}

fn run_dirs(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("manyfiles-run-"))
        .collect()
}

#[test]
fn cleanup_removes_the_run_directory_of_a_killed_run_but_not_a_kept_one() {
    let Some(_one) = root_only("the registry under /run/manyfiles needs root") else { return };
    let target = tempfile::tempdir().unwrap();
    let t = target.path().to_str().unwrap();
    // A kept run directory is the user's: cleanup leaves it.
    let o = manyfiles(&["ladder", "--target", t, "--total", "64k", "--to", "4", "--runs", "1", "--keep", "--quiet"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let kept = run_dirs(target.path());
    assert_eq!(kept.len(), 1);
    let mut child = Command::new(env!("CARGO_BIN_EXE_manyfiles"))
        .args(["ladder", "--target", t, "--total", "8M", "--to", "65536", "--runs", "50", "--quiet"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while run_dirs(target.path()).len() < 2 && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    assert_eq!(run_dirs(target.path()).len(), 2, "the killed run left its run directory");
    let o = manyfiles(&["cleanup"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(run_dirs(target.path()), kept, "cleanup removed the killed run's directory only");
}
