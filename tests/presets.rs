//! bigfile, clusters, dirsize and `run FILE.toml` through the binary.

use serde_json::Value;
use std::process::{Command, Output};

fn manyfiles(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_manyfiles")).args(args).output().unwrap()
}

fn assert_bad(o: &Output, flag: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().filter(|l| !l.trim().is_empty()).count(), 1, "one line: {err}");
    assert!(err.starts_with(&format!("manyfiles: {flag}")), "names {flag}: {err}");
}

#[test]
fn every_example_file_is_a_valid_command_line() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let tmp = tempfile::tempdir().unwrap();
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        // A last unknown key: the error names it only if every other key parsed.
        let probe = tmp.path().join("probe.toml");
        std::fs::write(&probe, format!("{text}\nzzz_not_a_flag = 1\n")).unwrap();
        // The examples' own keys (sync.toml's `cmd`) are allowed from the command line.
        let o = manyfiles(&["run", probe.to_str().unwrap(), "--allow-commands", "--allow-outside"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", e.path().display());
        assert!(err.contains("--zzz-not-a-flag"), "{}: {err}", e.path().display());
        n += 1;
    }
    assert!(n >= 5, "one example per preset");
}

#[test]
fn run_file_runs_and_records_what_it_stood_for() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("r.json");
    let file = tmp.path().join("exp.toml");
    std::fs::write(
        &file,
        format!(
            "command = \"ops\"\ntarget = \"{}\"\nfiles = 300\nsize = \"1k\"\nops = [\"create\", \"read\"]\nruns = 2\nquiet = true\njson = \"{}\"\n",
            tmp.path().display(),
            json.display()
        ),
    )
    .unwrap();
    let o = manyfiles(&["run", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(d["measurements"].as_array().unwrap().len(), 4);
    let cl: Vec<String> =
        d["provenance"]["command_line"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    assert!(cl.contains(&"run".to_string()) && cl.contains(&"--files".to_string()), "{cl:?}");
}

#[test]
fn run_file_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("e.toml");
    for (text, why) in [
        ("files = 3\n", "command"),
        ("command = \"format-my-disk\"\n", "command"),
        ("command = \"ops\"\nfiles = [\"a\", {x = 1}]\n", "files"),
        ("command = \"ops\"\nruns = 0\n", "--runs"),
        ("this is not toml", "FILE"),
    ] {
        std::fs::write(&f, text).unwrap();
        let o = manyfiles(&["run", f.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(why), "{text}: {err}");
    }
    let o = manyfiles(&["run", "/nonexistent.toml"]);
    assert_bad(&o, "FILE");
}

#[test]
fn dirsize_reports_portions_and_a_knee_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("d.json");
    let o = manyfiles(&[
        "dirsize",
        "--target",
        tmp.path().to_str().unwrap(),
        "--max",
        "3000",
        "--portion",
        "500",
        "--runs",
        "2",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("knee"), "{out}");
    assert!(out.contains("2500 … 3000"), "{out}");
    let d: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ms = d["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), 2);
    assert!(ms.iter().all(|m| m["op"] == "create" && m["files"] == 3000 && m["tree"]["layout"]["kind"] == "flat"));
    let ends: Vec<u64> =
        ms[0]["portions"].as_array().unwrap().iter().map(|p| p["end_files"].as_u64().unwrap()).collect();
    for k in 1..=6 {
        assert!(ends.contains(&(k * 500)), "a portion ends at {}: {ends:?}", k * 500);
    }
}

#[test]
fn bigfile_on_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let o =
        manyfiles(&["bigfile", "--target", tmp.path().to_str().unwrap(), "--size", "4MiB", "--runs", "2", "--quiet"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("write loop") && out.contains("unlink"), "{out}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "nothing left");
    assert_bad(&manyfiles(&["bigfile", "--target", tmp.path().to_str().unwrap(), "--block", "5M"]), "--block");
    assert_bad(&manyfiles(&["bigfile", "--target", tmp.path().to_str().unwrap(), "--cache", "tepid"]), "--cache");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn clusters_needs_fs() {
    assert_bad(&manyfiles(&["clusters"]), "--fs");
    assert_bad(&manyfiles(&["clusters", "--fs", "ntfs", "--target", "/tmp"]), "--target");
    assert_bad(&manyfiles(&["clusters", "--fs", "ext4", "--cluster", "512"]), "--cluster");
    assert_bad(&manyfiles(&["clusters", "--fs", "ntfs", "--sizes", "1,cluster+2"]), "--sizes");
}

#[test]
fn clusters_on_ntfs_and_exfat() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: clusters formats file systems and needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("c.json");
    let o = manyfiles(&[
        "clusters",
        "--fs",
        "ntfs,exfat",
        "--cluster",
        "4k,64k",
        "--sizes",
        "1,cluster+1",
        "--portion",
        "200",
        "--portions",
        "2",
        "--runs",
        "2",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    for t in ["ntfs:4k@ram", "ntfs:64k@ram", "exfat:4k@ram", "exfat:64k@ram"] {
        assert!(out.contains(t), "{t} in {out}");
    }
    assert!(out.contains("slack"), "{out}");
    let d: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // 4 targets × 3 sizes (1, 4k+1, 64k+1) × 2 runs
    assert_eq!(d["measurements"].as_array().unwrap().len(), 24);
    // On 64 KiB clusters a 1-byte file takes at least a cluster… or lives in the MFT
    // record (NTFS resident data): either way space was measured.
    let ms = d["measurements"].as_array().unwrap();
    assert!(ms.iter().all(|m| !m["space_used_bytes"].is_null() && !m["allocated_bytes"].is_null()));
    // exFAT allocates whole clusters: a 1-byte file takes 64 KiB on 64k clusters.
    let one_byte_64k = ms
        .iter()
        .find(|m| m["target"] == "exfat:64k@ram" && m["tree_bytes"] == m["tree_files"])
        .expect("1-byte files on exfat:64k");
    let per_file = one_byte_64k["allocated_bytes"].as_u64().unwrap() / one_byte_64k["tree_files"].as_u64().unwrap();
    assert_eq!(per_file, 65536, "st_blocks of a 1-byte file on 64 KiB exFAT clusters");
}
