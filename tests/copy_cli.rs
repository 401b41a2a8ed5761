//! `manyfiles copy`, interrupting a sync, unreadable sources, and the copy/sync/external
//! ops in an experiment.

mod copy_common;
use copy_common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn n(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v}"))
}

#[test]
fn copy_reproduces_random_trees_and_verifies() {
    for seed in [11u64, 12, 13] {
        let t = tempfile::tempdir().unwrap();
        let (src, dst) = (t.path().join("src"), t.path().join("dst"));
        gen_tree(&src, seed, 150);
        let (code, s, out) = run_json("copy", &src, &dst, &["--verify", "--threads", "3"]);
        assert_eq!(code, 0, "{out}");
        assert_same(&src, &dst);
        assert_eq!(s["verify"]["differences"].as_u64(), Some(0), "{s}");
        assert!(out.contains("verify:") && out.contains("0 differences"), "{out}");
        assert_eq!(n(&s, "copied") + n(&s, "src_dirs"), n(&s, "src_entries"), "{s}");
        // Copy wants a new or empty destination.
        let (code, _, out) = run_json("copy", &src, &dst, &[]);
        assert_eq!(code, 2, "{out}");
        assert!(out.contains("DST") && out.contains("not empty"), "{out}");
    }
}

#[test]
fn sigint_mid_sync_leaves_no_partial_file_and_the_next_sync_completes() {
    let t = tempfile::tempdir().unwrap();
    let (src, dst) = (t.path().join("src"), t.path().join("dst"));
    let (code, _, err) = mf(&[
        "gen".as_ref(),
        src.as_os_str(),
        "--files".as_ref(),
        "4000".as_ref(),
        "--size".as_ref(),
        "uniform:1k-16k".as_ref(),
        "--files-per-dir".as_ref(),
        "200".as_ref(),
        "-q".as_ref(),
    ]);
    assert_eq!(code, 0, "{err}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_manyfiles"))
        .args(["sync".as_ref(), src.as_os_str(), dst.as_os_str(), "-q".as_ref()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the transfer is under way, then interrupt it.
    let t0 = Instant::now();
    while list_files(&dst) < 50 && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(2));
    }
    let still_running = child.try_wait().unwrap().is_none();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    if still_running {
        assert_eq!(o.status.code(), Some(130), "{}", String::from_utf8_lossy(&o.stdout));
        assert!(String::from_utf8_lossy(&o.stdout).contains("interrupted"));
    } else {
        eprintln!("note: the sync finished before the signal; checking the result anyway");
    }
    // Every file under its final name is complete: same bytes as the source.
    for p in list(&dst) {
        let rel = p.strip_prefix(&dst).unwrap();
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        assert!(!name.starts_with(".manyfiles-tmp."), "temporary file left: {}", p.display());
        if std::fs::symlink_metadata(&p).unwrap().is_file() {
            assert_eq!(
                std::fs::read(&p).unwrap(),
                std::fs::read(src.join(rel)).unwrap(),
                "partial file {}",
                rel.display()
            );
        }
    }
    let (code, _, out) = run_json("sync", &src, &dst, &[]);
    assert_eq!(code, 0, "{out}");
    assert_same(&src, &dst);
}

/// Entries below `p`, tolerating a tree that changes while it is counted.
fn list_files(p: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(p) else { return 0 };
    rd.flatten().map(|e| 1 + if e.file_type().is_ok_and(|t| t.is_dir()) { list_files(&e.path()) } else { 0 }).sum()
}

#[test]
fn unreadable_source_entries_are_reported_and_the_rest_is_copied() {
    let t = tempfile::tempdir().unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (src, dst) = (t.path().join("src"), t.path().join("dst"));
    std::fs::create_dir_all(src.join("locked")).unwrap();
    std::fs::write(src.join("locked/inside"), b"x").unwrap();
    for f in ["a", "b", "secret"] {
        std::fs::write(src.join(f), f).unwrap();
    }
    std::fs::set_permissions(src.join("secret"), std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::set_permissions(src.join("locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let j = t.path().join("s.json");
    let mut cmd = if rustix::process::geteuid().is_root() {
        // Root reads everything: run as nobody, owning the tree.
        if Command::new("setpriv").arg("--version").output().is_err() {
            assert!(std::env::var("CI").is_err(), "CI needs setpriv for this test");
            eprintln!("skipped: root without setpriv");
            return;
        }
        for p in list(t.path()) {
            rustix::fs::chown(&p, Some(rustix::fs::Uid::from_raw(65534)), Some(rustix::fs::Gid::from_raw(65534)))
                .unwrap();
        }
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_manyfiles")]);
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_manyfiles"))
    };
    let o = cmd
        .args(["copy".as_ref(), src.as_os_str(), dst.as_os_str(), "--json".as_ref(), j.as_os_str(), "-q".as_ref()])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", String::from_utf8_lossy(&o.stderr));
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    assert_eq!(n(&s, "failed"), 2, "{s}");
    assert!(out.contains("failures:") && out.contains("secret") && out.contains("locked"), "{out}");
    assert_eq!(std::fs::read(dst.join("a")).unwrap(), b"a");
    assert_eq!(std::fs::read(dst.join("b")).unwrap(), b"b");
    assert!(!dst.join("secret").exists(), "no partial file for an unreadable source");
}

#[test]
fn copy_sync_and_external_tools_as_ops() {
    let t = tempfile::tempdir().unwrap();
    let j = t.path().join("r.json");
    let (code, out, err) = mf(&[
        "ops",
        "--files",
        "300",
        "--size",
        "2k",
        "--files-per-dir",
        "50",
        "--runs",
        "2",
        "--threads",
        "2",
        "--ops",
        "copy,sync,sync-nochange,sync-change:20",
        "--cmd",
        "cp=cp -a {src}/. {dst}",
        "--cmd",
        "lazy=true {src} {dst}",
        "--target",
        t.path().to_str().unwrap(),
        "--json",
        j.to_str().unwrap(),
        "-q",
    ]
    .map(std::ffi::OsStr::new));
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    let ms = v["measurements"].as_array().unwrap();
    let by = |op: &str| ms.iter().filter(|m| m["op"] == op).collect::<Vec<_>>();
    for op in ["copy", "sync", "sync-nochange", "sync-change:20", "cmd:cp"] {
        let m = by(op);
        assert_eq!(m.len(), 2, "{op}");
        for m in m {
            assert_eq!(m["errors"], 0, "{op}: {m}");
            assert_eq!(m["files"], 300, "{op}: {m}");
            assert!(m["elapsed_s"].as_f64().unwrap() > 0.0);
        }
    }
    // Bytes moved tell the ops apart: all of them, none, about a fifth.
    let bytes = |op: &str| by(op)[0]["bytes"].as_u64().unwrap();
    assert_eq!(bytes("copy"), 300 * 2048);
    assert_eq!(bytes("sync-nochange"), 0);
    assert!((20 * 2048..=120 * 2048).contains(&bytes("sync-change:20")), "{}", bytes("sync-change:20"));
    assert!(by("cmd:cp")[0]["peak_rss_bytes"].as_u64().unwrap() > 0);
    // A tool that leaves a wrong tree is an error, not a time.
    assert!(by("cmd:lazy").iter().all(|m| m["errors"].as_u64().unwrap() > 0));
    assert!(v["summaries"].as_array().unwrap().iter().all(|s| s["op"] != "cmd:lazy"));
    assert!(out.contains("cmd:cp") && out.contains("sync-nochange"), "{out}");
    // Nothing left in the target.
    assert_eq!(std::fs::read_dir(t.path()).unwrap().filter(|e| e.as_ref().unwrap().path() != j).count(), 0);
}

#[test]
fn bad_cmd_and_ops_are_refused() {
    for (args, flag) in [
        (vec!["ops", "--cmd", "x=cp {src}"], "--cmd"),
        (vec!["ops", "--cmd", "bad name=cp {src} {dst}"], "--cmd"),
        (vec!["ops", "--cmd", "a=cp {src} {dst}", "--cmd", "a=cp {src} {dst}"], "--cmd"),
        (vec!["ops", "--ops", "sync-change:200"], "--ops"),
        (vec!["ops", "--ops", "sync-change:x"], "--ops"),
    ] {
        let (code, _, err) = mf(&args.iter().map(std::ffi::OsStr::new).collect::<Vec<_>>());
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}

#[test]
fn an_experiment_file_takes_several_commands() {
    let t = tempfile::tempdir().unwrap();
    let (j, f) = (t.path().join("r.json"), t.path().join("e.toml"));
    std::fs::write(
        &f,
        format!(
            "command = \"ops\"\ntarget = \"{}\"\nfiles = 40\nsize = \"1k\"\nops = [\"copy\"]\nruns = 1\nquiet = true\n\
             cmd = [\"cp=cp -a {{src}}/. {{dst}}\", \"tar=sh -c \\\"tar -C {{src}} -cf - . | tar -C {{dst}} -xf -\\\"\"]\n\
             verify = true\njson = \"{}\"\n",
            t.path().display(),
            j.display()
        ),
    )
    .unwrap();
    // `cmd` keys run commands of the file's choosing: refused unless the command line allows it.
    let (code, _, err) = mf(&["run".as_ref(), f.as_os_str()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--allow-commands") && !j.exists(), "{err}");
    let (code, out, err) = mf(&["run".as_ref(), f.as_os_str(), "--allow-commands".as_ref()]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    let ops: Vec<&str> = v["measurements"].as_array().unwrap().iter().map(|m| m["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["copy", "cmd:cp", "cmd:tar"]);
    assert!(v["measurements"].as_array().unwrap().iter().all(|m| m["errors"] == 0 && m["files"] == 40), "{v}");
}

/// A directory of more than 2,048 entries is listed in chunks on several threads, and
/// its empty files are made by mknodat + utimensat: modes, mtimes and contents kept,
/// a dry-run sync afterwards finds nothing to do.
#[test]
fn a_large_directory_is_copied_exactly() {
    let t = tempfile::tempdir().unwrap();
    let (src, dst) = (t.path().join("src"), t.path().join("dst"));
    std::fs::create_dir_all(src.join("sub")).unwrap();
    for i in 0..5000u32 {
        let p = src.join(format!("f{i}"));
        if i % 3 == 0 {
            std::fs::write(&p, format!("content {i}")).unwrap();
        } else {
            std::fs::write(&p, b"").unwrap();
        }
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode([0o644, 0o600, 0o755, 0o444][i as usize % 4]))
            .unwrap();
        set_mtime(&p, 1_000_000_000 + i as i64, i * 7);
    }
    std::fs::write(src.join("sub/x"), b"x").unwrap();
    let (code, s, out) = run_json("copy", &src, &dst, &["--threads", "3"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(n(&s, "failed"), 0, "{s}");
    assert_same(&src, &dst);
    let (code, s, out) = run_json("sync", &src, &dst, &["--dry-run", "--threads", "3"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!((n(&s, "copied"), n(&s, "skipped")), (0, 5001), "{s}");
}
