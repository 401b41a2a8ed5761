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
        expected.push("changed file a/own.txt (owner, group)");
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

/// A JSON item of `changes` as the line `--itemize` prints, made here from its fields
/// (not by the code under test).
fn item_line(c: &serde_json::Value) -> String {
    let (kind, path) = (c["kind"].as_str().unwrap(), c["path"].as_str().unwrap());
    match c["change"].as_str().unwrap() {
        "new" if c["to"].is_string() => format!("new link {path} (to {})", c["to"].as_str().unwrap()),
        "new" => format!("new {kind} {path}"),
        "changed" => {
            let what: Vec<&str> = c["what"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
            format!("changed {kind} {path} ({})", what.join(", "))
        }
        "type_changed" => format!("type changed {path} ({kind}, was {})", c["was"].as_str().unwrap()),
        "deleted" => match c["below"].as_u64().unwrap() {
            0 => format!("deleted {path}"),
            n => format!("deleted {path} (and {n} entries below)"),
        },
        other => panic!("unknown change {other}: {c}"),
    }
}

/// `--itemize --json FILE`: the document's `changes` array says what the lines say,
/// in dry and real runs; `changes_listed` counts it.
#[test]
fn itemize_json_holds_the_same_list_as_the_lines() {
    if !have("setfattr") {
        eprintln!("skipped: setfattr not found");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (src, dst, json) = (tmp.path().join("src"), tmp.path().join("dst"), tmp.path().join("c.json"));
    let (s, d, j) = (src.to_str().unwrap(), dst.to_str().unwrap(), json.to_str().unwrap());
    sh(&format!(
        r#"mkdir -p '{s}/a' '{s}/b/sub' '{s}/t'
echo 1 > '{s}/a/size'; echo m > '{s}/a/mode'; echo x > '{s}/a/x'; echo o > '{s}/a/own'; echo 1 > '{s}/b/1'
echo 3 > '{s}/b/sub/3'; echo f > '{s}/t/f'; echo d > '{s}/a/dir-to-be'"#
    ));
    let check = |args: &[&str], what: &str, want_some: bool| {
        let _ = std::fs::remove_file(&json);
        let mut all_args = args.to_vec();
        all_args.extend(["--json", j]);
        let (code, lines, all) = itemized(&all_args);
        assert_eq!(code, 0, "{what}: {all}");
        let v = common::load_json(&json);
        let items = v["changes"].as_array().unwrap_or_else(|| panic!("{what}: no changes array: {v}"));
        let mut from_json: Vec<String> = items.iter().map(item_line).collect();
        from_json.sort();
        assert_eq!(from_json, lines, "{what}: JSON list and lines differ\n{all}");
        assert_eq!(v["changes_listed"].as_u64(), Some(items.len() as u64), "{what}");
        assert_eq!(want_some, !lines.is_empty(), "{what}: {all}");
        // The summary is still there, after the array.
        assert_eq!(v["mode"], "sync", "{what}");
        lines
    };
    let first = check(&["sync", "-q", "-i", s, d], "first sync", true);
    assert!(first.contains(&"new file b/sub/3".to_string()), "{first:?}");
    std::thread::sleep(std::time::Duration::from_millis(20));
    sh(&format!(
        r#"echo longer > '{s}/a/size'; chmod 600 '{s}/a/mode'; setfattr -n user.k -v v '{s}/a/x'
rm '{s}/a/dir-to-be'; mkdir '{s}/a/dir-to-be'; ln -s gone '{s}/t/link'; rm -r '{s}/b'"#
    ));
    if is_root() {
        sh(&format!("chown 4242:4343 '{s}/a/own'"));
    }
    let dry = check(&["sync", "-q", "-i", "-n", "--delete", s, d], "dry run", true);
    let real = check(&["sync", "-q", "-i", "--delete", s, d], "real run", true);
    assert_eq!(dry, real, "dry and real runs list different changes");
    for want in [
        "changed file a/size (size, time)",
        "changed file a/mode (mode)",
        "changed file a/x (xattrs)",
        "type changed a/dir-to-be (dir, was file)",
        "new symlink t/link",
        "deleted b (and 3 entries below)",
    ] {
        assert!(real.contains(&want.to_string()), "{want} not in {real:?}");
    }
    if is_root() {
        assert!(real.contains(&"changed file a/own (owner, group)".to_string()), "{real:?}");
    }
    // Nothing changed: an empty array, still a valid document.
    check(&["sync", "-q", "-i", "--delete", s, d], "unchanged", false);
    // `--json -`: the document alone on stdout, the lines on stderr.
    let o = Command::new(bin()).args(["sync", "-q", "-i", "-n", "--json", "-", s, d]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    assert_eq!(v["changes"].as_array().map(|a| a.len()), Some(0), "{v}");
}

/// 200,000 changes stream into the JSON without the process holding them: the peak RSS
/// of a dry run listing 200,000 new files grows by well under half the bytes of the
/// array over one listing 20,000 (holding the items would grow it by more than that).
/// The peak is GNU time's `%M` (wait4 of its own child: a child of this test process
/// would carry the test's memory from before its exec in ru_maxrss).
#[test]
fn itemize_json_memory_stays_flat_with_the_number_of_changes() {
    if !Path::new("/usr/bin/time").exists() {
        eprintln!("skipped: /usr/bin/time (GNU time) not found");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let peak = |files: u64| -> (u64, u64) {
        let src = tmp.path().join(format!("src{files}"));
        let o = Command::new(bin())
            .args(["gen", "-q", "--size", "0", "--files-per-dir", "500", "--files"])
            .arg(files.to_string())
            .arg(&src)
            .output()
            .unwrap();
        assert!(o.status.success(), "gen: {}", String::from_utf8_lossy(&o.stderr));
        let (json, rss) = (tmp.path().join(format!("c{files}.json")), tmp.path().join(format!("rss{files}")));
        let o = Command::new("/usr/bin/time")
            .arg("-o")
            .arg(&rss)
            .args(["-f", "%M"])
            .arg(bin())
            .args(["sync", "-q", "-i", "-n", "--threads", "2", "--json"])
            .arg(&json)
            .arg(&src)
            .arg(tmp.path().join("no-dst"))
            .stdout(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "sync -n: {}", String::from_utf8_lossy(&o.stderr));
        let kib: u64 = std::fs::read_to_string(&rss).unwrap().trim().parse().unwrap();
        let v = common::load_json(&json);
        assert!(v["changes_listed"].as_u64().unwrap() > files, "{files}: every file and directory listed");
        std::fs::remove_dir_all(&src).unwrap();
        (kib * 1024, std::fs::metadata(&json).unwrap().len())
    };
    let (rss_small, json_small) = peak(20_000);
    let (rss_big, json_big) = peak(200_000);
    let (grew, items) = (rss_big.saturating_sub(rss_small), json_big - json_small);
    println!(
        "peak RSS {:.1} MiB at 20,000 changes, {:.1} MiB at 200,000; the array grew by {:.1} MiB",
        rss_small as f64 / 1048576.0,
        rss_big as f64 / 1048576.0,
        items as f64 / 1048576.0
    );
    assert!(grew < items / 2, "RSS grew by {grew} bytes for {items} more bytes of changes: held in memory?");
}
