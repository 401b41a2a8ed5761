//! Disturbance is judged where it happens (issue 27): the FUSE daemon serving a managed
//! exFAT target is the file system's own work (its CPU is `serving_cpu_s`, not
//! others'), and others' storage traffic is recorded per phase (`other_io_bytes`).
//! Needs root (a managed file system); the I/O signal itself is tested in
//! `measure::machine` (a neighbour's `dd`).

mod common;

use common::*;

#[test]
fn a_fuse_daemon_is_the_file_systems_own_work() {
    if !is_root() {
        println!("skipped: needs root (a managed exFAT file system)");
        return;
    }
    let have = |t: &str| {
        std::process::Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !have("mount.exfat-fuse") || !have("mkfs.exfat") {
        // .ci/run installs exfat-fuse and exfatprogs: in CI this never skips.
        assert!(std::env::var_os("CI").is_none(), "CI must have exfat-fuse and exfatprogs");
        println!("skipped: needs mount.exfat-fuse and mkfs.exfat");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let json = t.path().join("r.json");
    let j = json.to_str().unwrap();
    run([
        "ops",
        "--fs",
        "exfat",
        "--files",
        "3000",
        "--runs",
        "2",
        "--ops",
        "create,stat,read",
        "--json",
        j,
        "--quiet",
    ])
    .ok();
    let v = load_json(&json);
    let ms = arr(&v, "measurements");
    let machine: Vec<&serde_json::Value> = ms.iter().filter_map(|m| m.get("machine")).collect();
    assert_eq!(machine.len(), ms.len(), "every phase records the machine: {ms:?}");
    let serving: f64 = machine.iter().map(|a| f(a, "serving_cpu_s")).sum();
    // Creating 3,000 files through exfat-fuse costs the daemon well over 50 ms of CPU.
    assert!(serving > 0.05, "the daemon's CPU was not attributed to the file system: {machine:?}");
    assert!(machine.iter().all(|a| a.get("other_io_bytes").is_some()), "{machine:?}");
    for a in &machine {
        if a["disturbed"].as_bool().unwrap() {
            assert!(!arr(a, "disturbed_by").is_empty(), "a disturbed phase names its signal: {a:?}");
        }
    }
}
