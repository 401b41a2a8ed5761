//! Issue 28: `--itemize` lists every change, one line each, in dry runs and real runs,
//! and prints nothing for an unchanged tree; `--verify` reports attribute differences by
//! kind. Runs on the test machine's temporary directory (a real file system with user
//! xattrs); needs `setfattr`.

mod common;

use common::{bin, is_root};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

fn have(tool: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success())
}

fn sh(script: &str) {
    let o = Command::new("sh").arg("-ec").arg(script).output().unwrap();
    assert!(o.status.success(), "{script}\n{}", String::from_utf8_lossy(&o.stderr));
}

/// Run manyfiles; (exit code, the itemized lines sorted, all stdout + stderr).
fn itemized(args: &[&str]) -> (i32, Vec<String>, String) {
    let o = Command::new(bin()).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    // The summary starts with "sync SRC → DST" / "copy SRC → DST"; lines before it are
    // the changes.
    let mut lines: Vec<String> =
        stdout.lines().take_while(|l| !(l.starts_with("sync ") || l.starts_with("copy "))).map(String::from).collect();
    lines.sort();
    let all = stdout + &String::from_utf8_lossy(&o.stderr);
    (o.status.code().unwrap_or(-1), lines, all)
}

fn sorted(v: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

#[test]
fn itemize_lists_each_change_in_dry_and_real_runs() {
    if !have("setfattr") {
        eprintln!("skipped: setfattr not found");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst) = (tmp.path().join("src"), tmp.path().join("dst"));
    let (s, d) = (src.to_str().unwrap(), dst.to_str().unwrap());
    sh(&format!(
        r#"mkdir -p '{s}/a' '{s}/b/sub' '{s}/c'
echo 1 > '{s}/a/size.txt'; echo m > '{s}/a/mode.txt'; echo x > '{s}/a/x.txt'; echo t > '{s}/a/t'
echo o > '{s}/a/own.txt'; echo 1 > '{s}/b/1'; echo 2 > '{s}/b/2'; echo 3 > '{s}/b/sub/3'; echo same > '{s}/c/same'"#
    ));
    // The first sync makes everything; -i lists it.
    let (code, lines, all) = itemized(&["sync", "-q", "-i", s, d]);
    assert_eq!(code, 0, "{all}");
    let made = sorted(&[
        "new dir .",
        "new dir a",
        "new dir b",
        "new dir c",
        "new dir b/sub",
        "new file a/size.txt",
        "new file a/mode.txt",
        "new file a/x.txt",
        "new file a/t",
        "new file a/own.txt",
        "new file b/1",
        "new file b/2",
        "new file b/sub/3",
        "new file c/same",
    ]);
    assert_eq!(lines, made, "{all}");

    // A known mutation of SRC: a new file (with a name that is not UTF-8), a size
    // change, a mode change only, an xattr only, a type change, a directory's mode, and a
    // directory with entries below that only DST keeps.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(src.join("a").join(OsStr::from_bytes(b"bad\xffname")), b"q").unwrap();
    sh(&format!(
        r#"echo new > '{s}/a/new.txt'; echo longer > '{s}/a/size.txt'; chmod 600 '{s}/a/mode.txt'
setfattr -n user.k -v v '{s}/a/x.txt'; rm '{s}/a/t'; ln -s nowhere '{s}/a/t'; chmod 750 '{s}/c'; rm -r '{s}/b'"#
    ));
    let mut expected = vec![
        "new file a/bad\\xffname",
        "new file a/new.txt",
        "changed file a/size.txt (size, time)",
        "changed file a/mode.txt (mode)",
        "changed file a/x.txt (xattrs)",
        "type changed a/t (symlink, was file)",
        "changed dir c (mode)",
        "changed dir a (time)",
        "changed dir . (time)",
        "deleted b (and 4 entries below)",
    ];
    if is_root() {
        sh(&format!("chown 4242:4343 '{s}/a/own.txt'"));
        expected.push("changed file a/own.txt (owner)");
    }
    let expected = sorted(&expected);
    let (code, lines, all) = itemized(&["sync", "-q", "-i", "--dry-run", "--delete", s, d]);
    assert_eq!(code, 0, "{all}");
    assert_eq!(lines, expected, "dry run\n{all}");
    let (code, lines, all) = itemized(&["sync", "-q", "--itemize", "--delete", s, d]);
    assert_eq!(code, 0, "{all}");
    assert_eq!(lines, expected, "real run\n{all}");
    assert!(Path::new(d).join("a/t").is_symlink() && !Path::new(d).join("b").exists());

    // Nothing changed: nothing listed, dry or real.
    for dry in [true, false] {
        let mut args = vec!["sync", "-q", "-i", "--delete", s, d];
        if dry {
            args.push("-n");
        }
        let (code, lines, all) = itemized(&args);
        assert_eq!(code, 0, "{all}");
        assert!(lines.is_empty(), "unchanged tree (dry run: {dry}) listed changes:\n{all}");
    }
}

#[test]
fn verify_reports_attribute_differences_by_kind() {
    if !is_root() {
        eprintln!("skipped: needs root (owners)");
        return;
    }
    for t in ["setfattr", "setfacl"] {
        if !have(t) {
            eprintln!("skipped: {t} not found");
            return;
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst, json) = (tmp.path().join("src"), tmp.path().join("dst"), tmp.path().join("v.json"));
    let (s, d, j) = (src.to_str().unwrap(), dst.to_str().unwrap(), json.to_str().unwrap());
    sh(&format!(
        r#"mkdir -p '{s}/x' '{s}/l' '{s}/h'
echo x > '{s}/x/attr'; setfattr -n user.k -v one '{s}/x/attr'
echo o > '{s}/x/own'; chown 4242:4343 '{s}/x/own'
echo a > '{s}/x/acl'; chmod 644 '{s}/x/acl'
echo linked > '{s}/l/first'; ln '{s}/l/first' '{s}/l/second'
truncate -s 8M '{s}/h/sparse'; printf data | dd of='{s}/h/sparse' bs=1 seek=4194304 conv=notrunc 2>/dev/null"#
    ));
    // A fresh copy verifies clean: every kept attribute compared, none differs.
    let o = Command::new(bin()).args(["copy", "-q", "--verify", "--json", j, s, d]).output().unwrap();
    let all = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{all}");
    let v = common::load_json(&json);
    assert_eq!(v["verify"]["differences"], 0, "{all}");
    assert_eq!(v["verify"]["attrs_checked"], true, "{all}");

    // Tampering with DST, one difference of each kind; directory mtimes put back so that
    // only the tampered attributes differ.
    sh(&format!(
        r#"setfattr -n user.k -v two '{d}/x/attr'
chown 1:1 '{d}/x/own'
setfacl -m u:nobody:r '{d}/x/acl'
cp -p '{d}/l/second' '{d}/l/tmp' && mv '{d}/l/tmp' '{d}/l/second'
cp -p --sparse=never '{d}/h/sparse' '{d}/h/tmp' && mv '{d}/h/tmp' '{d}/h/sparse'
touch -r '{s}/l' '{d}/l'; touch -r '{s}/h' '{d}/h'"#
    ));
    // sync --dry-run --verify: nothing written, DST compared as it is.
    let o = Command::new(bin()).args(["sync", "-q", "-n", "--verify", "--json", j, s, d]).output().unwrap();
    let all = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{all}");
    let v = common::load_json(&json);
    let kinds = &v["verify"]["kinds"];
    assert_eq!(kinds, &serde_json::json!({"xattrs": 1, "owner": 1, "acls": 1, "hard_links": 1, "sparse": 1}), "{all}");
    assert_eq!(v["verify"]["differences"], 5, "{all}");
    let examples: Vec<&str> = v["verify"]["examples"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    for want in [
        "x/attr: extended attributes differ",
        "x/own: owner 4242:4343 in source, 1:1 in destination",
        "x/acl: ACLs differ",
        "h/sparse: holes not kept",
    ] {
        assert!(examples.iter().any(|e| e.starts_with(want)), "{want} not in {examples:?}");
    }
    assert!(
        examples.iter().any(|e| e.contains("hard link to l/") && e.contains("a separate file in destination")),
        "{examples:?}"
    );
    assert!(all.contains("5 differences"), "{all}");
}
