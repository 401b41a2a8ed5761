//! Scenario 5, permissions: unreadable files and directories in a source, an unwritable
//! destination subdirectory. copy, sync and scan report and count them, do the rest, and
//! exit 1 (partial failure). As root the tool runs as `nobody` (setpriv), since root
//! reads everything.

mod reliability_common;

use manyfiles::fs::walk::Kind;
use reliability_common::*;
use serde_json::Value;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);
const NOBODY: u32 = 65534;

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn chown(p: &Path) {
    if is_root() {
        std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
    }
}

/// Run the binary as nobody when root (else as ourselves).
fn run_as_user(args: &[OsString]) -> Out {
    if !is_root() {
        return run_bounded(args, LIMIT, None);
    }
    let mut a: Vec<OsString> =
        ["--reuid", "65534", "--regid", "65534", "--clear-groups", "--"].map(OsString::from).to_vec();
    a.push(bin().into());
    a.extend(args.iter().cloned());
    let o = std::process::Command::new("setpriv").args(&a).output().expect("setpriv (util-linux) is needed as root");
    Out {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

#[test]
fn reliability_perms_unreadable_source_unwritable_destination() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let t = tempfile::tempdir().unwrap();
    chmod(t.path(), 0o755);
    let src = t.path().join("src");
    source_tree(&src, 6, 50);
    let full = snapshot(&src, &[]);
    // Unreadable: one file, one directory (no read, no search), one directory that can be
    // searched but not listed.
    chmod(&src.join("d000/f00007"), 0o000);
    chmod(&src.join("d001"), 0o000);
    chmod(&src.join("d002"), 0o311);
    let readable = |k: &Vec<u8>| !(k.starts_with(b"d001/") || k.starts_with(b"d002/") || k == b"d000/f00007");
    let expect: Snap = full.iter().filter(|(k, _)| readable(k)).map(|(k, v)| (k.clone(), *v)).collect();

    // copy: everything readable arrives; three failures reported and counted; exit 1.
    let work = t.path().join("work");
    std::fs::create_dir(&work).unwrap();
    chown(&work);
    let dst = work.join("dst");
    let json = work.join("copy.json");
    let o = run_as_user(&[
        "copy".into(),
        src.clone().into(),
        dst.clone().into(),
        "-q".into(),
        "--json".into(),
        json.clone().into(),
    ]);
    assert_eq!(o.code, Some(1), "copy with unreadable entries\n{}", o.show());
    assert_eq!(o.lines().len(), 1, "{}", o.show());
    assert!(o.stdout.contains("f00007") && o.stdout.contains("d001") && o.stdout.contains("d002"), "{}", o.show());
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["failed"], 3, "three failures counted: {}", o.show());
    let got = snapshot(&dst, &[]);
    let got_files: Snap =
        got.iter().filter(|(k, v)| v.0 != Kind::Dir || readable(k)).map(|(k, v)| (k.clone(), *v)).collect();
    let want: Snap = expect
        .iter()
        .filter(|(k, _)| !k.starts_with(b"d001") && !k.starts_with(b"d002"))
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    let got_files: Snap =
        got_files.into_iter().filter(|(k, _)| !k.starts_with(b"d001") && !k.starts_with(b"d002")).collect();
    assert_same(&got_files, &want, "copy: the rest was done");

    // sync into a DST whose subdirectory is not writable: that directory's files fail
    // (reported, counted), the rest is done; exit 1.
    for d in ["d001", "d002"] {
        chmod(&src.join(d), 0o755);
    }
    chmod(&src.join("d000/f00007"), 0o644);
    let dst2 = work.join("dst2");
    std::fs::create_dir_all(dst2.join("d003")).unwrap();
    chown(&dst2);
    chmod(&dst2.join("d003"), 0o555); // root-owned (or ours) and read-only
    let json2 = work.join("sync.json");
    let o = run_as_user(&[
        "sync".into(),
        src.clone().into(),
        dst2.clone().into(),
        "-q".into(),
        "--json".into(),
        json2.clone().into(),
    ]);
    assert_eq!(o.code, Some(1), "sync into an unwritable subdirectory\n{}", o.show());
    assert!(o.stdout.contains("d003"), "{}", o.show());
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json2).unwrap()).unwrap();
    let failed = v["failed"].as_u64().unwrap();
    assert!(failed >= 1, "{}", o.show());
    let got = snapshot(&dst2, &[]);
    for (k, val) in &full {
        if !k.starts_with(b"d003/") {
            assert_eq!(got.get(k), Some(val), "sync did {}", String::from_utf8_lossy(k));
        }
    }
    chmod(&dst2.join("d003"), 0o755);

    // scan: the unreadable directories are reported and counted; exit says partial.
    chmod(&src.join("d001"), 0o000);
    let json3 = work.join("scan.json");
    let o = run_as_user(&["scan".into(), src.clone().into(), "--json".into(), json3.clone().into()]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json3).unwrap()).unwrap();
    assert!(v["denied"].as_u64().unwrap() >= 1 || v["unread_dirs"].as_u64().unwrap_or(0) >= 1, "{}", o.show());
    assert_eq!(o.code, Some(1), "scan with an unreadable directory: partial\n{}", o.show());
    chmod(&src.join("d001"), 0o755);
}
