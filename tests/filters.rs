//! Filters (issue 42): `--exclude`, `--include`, `--filter`, `--exclude-from`,
//! `--exclude-vcs` and `sync --delete-excluded` mean what they mean to rsync. rsync itself
//! is the referee: on the same trees and the same rules, the set of paths `manyfiles copy`
//! and `sync --delete` leave in DST (and so what they copied and deleted) must be rsync's,
//! and `manyfiles rm` must leave what `rsync -a --delete EMPTY/ TREE/` leaves.
//!
//! Needs rsync (.ci/run installs it); without it the tests skip with a printed reason,
//! except under CI (CI=true), where they fail.

mod common;

use std::collections::BTreeSet;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

/// Is rsync here? (No: skip, with the reason printed; under CI a failure.)
fn rsync_here() -> bool {
    let found = Command::new("rsync").arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI: rsync is missing (.ci/run installs it)");
        println!("skipped: rsync not found (apt-get install rsync)");
    }
    found
}

fn file(root: &Path, rel: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, rel.as_bytes()).unwrap();
}

/// The source tree: names that anchored, unanchored, directory-only, `**`, class and
/// version-control rules tell apart.
fn source(root: &Path) {
    for rel in [
        "foo",
        "c",
        "k.tmp",
        "keep.tmp",
        "a/c",
        "a/foo",
        "a/b/c",
        "a/b/z",
        "a/b/deeper/z",
        "a/z",
        "sub/foo",
        "x/sub/foo",
        "x/sub/bar",
        "x/y/foo/inside",
        "x/q/w/foo",
        "deep/a/b/c/d/z",
        "deep/z",
        "src/main.c",
        "src/lib.c",
        "src/lib.o",
        "src/.hidden",
        "src/cache",
        "build/out.o",
        "build/cache/blob",
        "docs/readme.md",
        "docs/a.tmp",
        "docs/sub/keep.tmp",
        "node_modules/pkg/index.js",
        ".git/objects/ab",
        ".git/HEAD",
        "x/.hg/store",
        "y/.svn/entries",
        "f1",
        "fa",
        "f[1]",
        "a",
        "dir1/f",
        "dir2/g",
        "name with space",
        "x/name with space/f",
    ] {
        if rel == "a" {
            continue; // a directory above
        }
        file(root, rel);
    }
    std::fs::create_dir_all(root.join("empty/dir")).unwrap();
    symlink("a", root.join("link")).unwrap();
    symlink("../c", root.join("x/link")).unwrap();
}

/// DST before a sync: most of SRC, and extraneous entries where rules protect or risk them.
fn destination(root: &Path) {
    source(root);
    for gone in ["a/b/c", "x/sub/bar", "src/lib.c", "docs/readme.md"] {
        std::fs::remove_file(root.join(gone)).unwrap();
    }
    for rel in [
        "extra/keep.tmp",
        "extra/sub/zz",
        "extra/other",
        "a/old.tmp",
        "a/gone",
        "a/b/gone.o",
        ".git/only-in-dst",
        "docs/x.o",
        "docs/sub/extra.tmp",
        "cache/blob",
        "node_modules/other/x.js",
        "build/stale.o",
        "x/sub/foo2",
        "deep/a/b/old",
        "fb",
        "x/.hg/journal",
    ] {
        file(root, rel);
    }
}

/// Every path below `root`, relative, directories with a trailing `/`.
fn paths(root: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if !root.exists() {
        return out;
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let rel = e.path().strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                out.insert(format!("{rel}/"));
                stack.push(e.path());
            } else {
                out.insert(rel);
            }
        }
    }
    out
}

/// A rule set: manyfiles' arguments and rsync's (the same but for `--exclude-vcs`, which
/// rsync spells as three excludes after the other rules).
struct Rules {
    ours: Vec<String>,
    theirs: Vec<String>,
}

/// The rule sets, each as command-line arguments (`@FROM` stands for the exclude-from
/// file's path).
const RULE_SETS: &[&[&str]] = &[
    &["--exclude", "*.tmp"],
    &["--exclude", "/foo"],
    &["--exclude", "foo"],
    &["--exclude", "foo/"],
    &["--exclude", "sub/foo"],
    &["--exclude", "/a/b"],
    &["--exclude", "a/**/z"],
    &["--exclude", "/deep/**/z"],
    &["--exclude", "**/c"],
    &["--exclude", "**.o"],
    &["--exclude", "cache/"],
    &["--include", "keep.tmp", "--exclude", "*.tmp"],
    &["--exclude", "*.tmp", "--include", "keep.tmp"],
    &["--include", "*/", "--include", "*.c", "--exclude", "*"],
    &["--include", "/src/", "--include", "/src/**", "--exclude", "*"],
    &["--include", "/a/", "--include", "/a/b/", "--include", "/a/b/***", "--exclude", "*"],
    &["--exclude-vcs"],
    &["--exclude-vcs", "--include", "/.git/", "--exclude", "/.git/objects/"],
    &["--exclude-from", "@FROM"],
    &["--filter", "- *.o", "--filter", "+ *.c", "--filter", "- src/*"],
    &["--filter", "-! */"],
    &["--exclude", "f[0-9]"],
    &["--exclude", "f[!0-9]"],
    &["--exclude", "?"],
    &["--exclude", "name with space"],
    &["--exclude", "/deep/a/*"],
    &["--exclude", "*"],
    &["--include", "*.c", "--exclude", "/src/*"],
    &["--exclude", "node_modules/", "--exclude", "build/"],
    &["--filter", "- /docs/***"],
    &["--exclude", "dir*/"],
    &["--exclude", ".*"],
    &["--exclude", "link"],
    &["--filter", "+ /x/sub/", "--filter", "- sub/"],
    &["--exclude", "x/*/foo"],
    &["--exclude", "f\\[1]"],
    &["--filter", "exclude,! /x/***", "--filter", "include /x/sub/**"],
    &["--filter", "- **/sub/**"],
];

/// Rule sets with a side of their own (hide, show, protect, risk, `s`/`r` modifiers):
/// copy and sync only (rm keeps what either side's rules exclude, rsync --delete only
/// what the receiver's protect).
const SIDED_SETS: &[&[&str]] = &[
    &["--filter", "H *.tmp"],
    &["--filter", "P extra/", "--exclude", "*.o"],
    &["--filter", "-r *.tmp"],
    &["--filter", "-s *.tmp"],
    &["--filter", "S keep.tmp", "--filter", "- *.tmp"],
    &["--filter", "R *.o", "--exclude", "*.o"],
    &["--filter", "P /x/", "--filter", "H /x/"],
];

/// The exclude-from file: comments, blank lines, an include, excludes.
const FROM: &str = "# build output\n*.o\n\n; and editors' droppings\n+ keep.tmp\n*.tmp\n/node_modules/\n";

fn rule_sets(from: &Path) -> Vec<Rules> {
    rules_of(RULE_SETS, from)
}

fn rules_of(sets: &[&[&str]], from: &Path) -> Vec<Rules> {
    sets.iter()
        .map(|set| {
            let ours: Vec<String> =
                set.iter().map(|a| if *a == "@FROM" { from.display().to_string() } else { a.to_string() }).collect();
            // --exclude-vcs's rules come after the rules given, wherever it stands.
            let vcs = ours.iter().any(|a| a == "--exclude-vcs");
            let theirs = ours
                .iter()
                .filter(|a| *a != "--exclude-vcs")
                .cloned()
                .chain([".git/", ".hg/", ".svn/"].iter().filter(|_| vcs).map(|d| format!("--exclude={d}")))
                .collect();
            Rules { ours, theirs }
        })
        .collect()
}

fn run(c: &mut Command, what: &str) {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn rsync(args: &[String], extra: &[&str], src: &Path, dst: &Path) {
    let mut c = Command::new("rsync");
    c.arg("-a").args(extra).args(args).arg(format!("{}/", src.display())).arg(dst);
    run(&mut c, &format!("rsync {extra:?} {args:?}"));
}

fn manyfiles(cmd: &[&str], args: &[String], targets: &[&Path]) {
    let mut c = Command::new(common::bin());
    c.args(cmd).arg("-q").args(args).args(targets);
    run(&mut c, &format!("manyfiles {cmd:?} {args:?}"));
}

/// What differs between rsync's set and ours, for the failure message.
fn differ(rule: &[String], what: &str, theirs: &BTreeSet<String>, ours: &BTreeSet<String>) -> Option<String> {
    if theirs == ours {
        return None;
    }
    let only_rsync: Vec<_> = theirs.difference(ours).collect();
    let only_ours: Vec<_> = ours.difference(theirs).collect();
    Some(format!("{rule:?} {what}: only rsync's {only_rsync:?}, only ours {only_ours:?}"))
}

/// A scratch directory with SRC and the exclude-from file.
fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    source(&t.path().join("src"));
    let from = t.path().join("exclude-from");
    std::fs::write(&from, FROM).unwrap();
    (t, from)
}

#[test]
fn copy_transfers_what_rsync_transfers() {
    if !rsync_here() {
        return;
    }
    let (t, from) = setup();
    let src = t.path().join("src");
    let sets: Vec<Rules> = rule_sets(&from).into_iter().chain(rules_of(SIDED_SETS, &from)).collect();
    assert!(sets.len() >= 30, "a corpus of at least 30 rule sets");
    let mut wrong = Vec::new();
    let mut excluded_some = 0;
    for (i, r) in sets.iter().enumerate() {
        let (theirs, ours, dry) =
            (t.path().join(format!("r{i}")), t.path().join(format!("m{i}")), t.path().join(format!("n{i}")));
        rsync(&r.theirs, &[], &src, &theirs);
        manyfiles(&["copy"], &r.ours, &[&src, &ours]);
        let expect = paths(&theirs);
        wrong.extend(differ(&r.ours, "copy", &expect, &paths(&ours)));
        // rsync -n names what it would transfer: the same set (the root "./" aside).
        let out = Command::new("rsync")
            .args(["-an", "--out-format=%n"])
            .args(&r.theirs)
            .arg(format!("{}/", src.display()))
            .arg(&dry)
            .output()
            .unwrap();
        let named: BTreeSet<String> =
            String::from_utf8_lossy(&out.stdout).lines().filter(|l| *l != "./").map(String::from).collect();
        wrong.extend(differ(&r.ours, "rsync -n's list", &named, &expect));
        if expect.len() < paths(&src).len() {
            excluded_some += 1;
        }
    }
    assert!(wrong.is_empty(), "{} of {} rule sets differ:\n{}", wrong.len(), sets.len(), wrong.join("\n"));
    assert!(
        excluded_some >= sets.len() - 2,
        "every rule set but the include-only and receiver-only ones leaves something out"
    );
}

#[test]
fn sync_delete_keeps_and_deletes_what_rsync_does() {
    if !rsync_here() {
        return;
    }
    let (t, from) = setup();
    let src = t.path().join("src");
    let mut wrong = Vec::new();
    let sets: Vec<Rules> = rule_sets(&from).into_iter().chain(rules_of(SIDED_SETS, &from)).collect();
    for (i, r) in sets.iter().enumerate() {
        for delete_excluded in [false, true] {
            let (theirs, ours) =
                (t.path().join(format!("r{i}-{delete_excluded}")), t.path().join(format!("m{i}-{delete_excluded}")));
            destination(&theirs);
            destination(&ours);
            let before = paths(&ours);
            let extra: &[&str] = if delete_excluded { &["--delete", "--delete-excluded"] } else { &["--delete"] };
            rsync(&r.theirs, extra, &src, &theirs);
            let mut ours_args = r.ours.clone();
            ours_args.extend(extra.iter().map(|s| s.to_string()));
            manyfiles(&["sync"], &ours_args, &[&src, &ours]);
            let (after_theirs, after_ours) = (paths(&theirs), paths(&ours));
            let what = if delete_excluded { "sync --delete --delete-excluded" } else { "sync --delete" };
            wrong.extend(differ(&r.ours, &format!("{what}: the tree after"), &after_theirs, &after_ours));
            let deleted = |after: &BTreeSet<String>| before.difference(after).cloned().collect::<BTreeSet<_>>();
            wrong.extend(differ(&r.ours, &format!("{what}: deleted"), &deleted(&after_theirs), &deleted(&after_ours)));
        }
    }
    assert!(wrong.is_empty(), "{} differences:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn rm_leaves_what_rsync_delete_from_an_empty_source_leaves() {
    if !rsync_here() {
        return;
    }
    let (t, from) = setup();
    let empty = t.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let mut wrong = Vec::new();
    for (i, r) in rule_sets(&from).iter().enumerate() {
        let (theirs, ours) = (t.path().join(format!("r{i}")), t.path().join(format!("m{i}")));
        destination(&theirs);
        destination(&ours);
        rsync(&r.theirs, &["--delete"], &empty, &theirs);
        manyfiles(&["rm"], &r.ours, &[&ours]);
        wrong.extend(differ(&r.ours, "rm", &paths(&theirs), &paths(&ours)));
    }
    assert!(wrong.is_empty(), "{} differences:\n{}", wrong.len(), wrong.join("\n"));
}

/// The brief's safety line, spelled out on one tree: an excluded file survives `rm` and
/// `sync --delete`, with the directories that hold it; only `--delete-excluded` deletes it.
#[test]
fn an_excluded_file_survives_rm_and_sync_delete() {
    let t = tempfile::tempdir().unwrap();
    let (src, dst, tree) = (t.path().join("src"), t.path().join("dst"), t.path().join("tree"));
    file(&src, "kept/a");
    for root in [&dst, &tree] {
        file(root, "only-here/precious.key");
        file(root, "only-here/junk");
        file(root, "kept/precious.key");
        file(root, "kept/b");
    }
    let rule = ["--exclude".to_string(), "*.key".to_string()];
    manyfiles(&["sync", "--delete"], &rule, &[&src, &dst]);
    let after = paths(&dst);
    let want: BTreeSet<String> =
        ["kept/", "kept/a", "kept/precious.key", "only-here/", "only-here/precious.key"].map(String::from).into();
    assert_eq!(after, want, "sync --delete keeps the excluded files and the directories holding them");
    manyfiles(&["rm"], &rule, &[&tree]);
    let want: BTreeSet<String> =
        ["kept/", "kept/precious.key", "only-here/", "only-here/precious.key"].map(String::from).into();
    assert_eq!(paths(&tree), want, "rm keeps the excluded files and the directories holding them");
    assert!(tree.exists());
    // A directory SRC replaces by a file is not removed while the filters protect anything:
    // reported (exit 1), the excluded file in it kept.
    let (src2, dst2) = (t.path().join("src2"), t.path().join("dst2"));
    file(&src2, "t");
    file(&dst2, "t/x.key");
    file(&dst2, "t/other");
    let out =
        common::cmd().args(["sync", "-q", "--delete", "--exclude", "*.key"]).arg(&src2).arg(&dst2).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("filters in force may protect"));
    assert!(dst2.join("t/x.key").exists(), "the excluded file survives a type change");
    let mut de = rule.to_vec();
    de.push("--delete-excluded".into());
    manyfiles(&["sync", "--delete"], &de, &[&src, &dst]);
    assert_eq!(paths(&dst), ["kept/", "kept/a"].map(String::from).into(), "--delete-excluded deletes them");
}

/// The summaries count what the filters left out, in the text and the JSON.
#[test]
fn summaries_count_excluded_entries() {
    let (t, _) = setup();
    let src = t.path().join("src");
    let json = t.path().join("copy.json");
    let out = common::cmd()
        .args(["copy", "-q", "--exclude", "*.tmp", "--exclude", "/deep/", "--json"])
        .arg(&json)
        .arg(&src)
        .arg(t.path().join("dst"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    // k.tmp, keep.tmp, docs/a.tmp, docs/sub/keep.tmp, and deep/ (once: not entered).
    assert!(text.contains("excluded 5,"), "{text}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["excluded"], 5, "{v}");
    let copied = v["copied"].as_u64().unwrap() + v["dirs_created"].as_u64().unwrap();
    assert_eq!(copied as usize, paths(&t.path().join("dst")).len(), "files, symlinks and directories made");

    let json = t.path().join("scan.json");
    let out = common::cmd()
        .args(["scan", "--exclude", "*.tmp", "--exclude", "/deep/", "--json"])
        .arg(&json)
        .arg(&src)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["excluded"], 5, "{v}");
    assert_eq!(v["entries"].as_u64().unwrap() as usize, paths(&t.path().join("dst")).len() + 1, "the root counts");

    let tree = t.path().join("tree");
    source(&tree);
    let json = t.path().join("rm.json");
    let out = common::cmd()
        .args(["rm", "-q", "--exclude", "*.tmp", "--exclude", "/deep/", "--json"])
        .arg(&json)
        .arg(&tree)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["excluded"], 5, "{v}");
}

#[test]
fn unsupported_rules_are_refused_not_ignored() {
    let (t, _) = setup();
    for rule in ["merge .rules", ": .per-dir", "x foo", "-p foo"] {
        let out = common::cmd()
            .args(["copy", "--filter", rule])
            .arg(t.path().join("src"))
            .arg(t.path().join("dst"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{rule}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!t.path().join("dst").exists(), "{rule}: nothing made");
    }
}

/// `--files-from`: exactly the listed paths and the directories above them, as
/// `rsync -a --files-from` copies them, with and without an exclude; refused where its
/// meaning is not settled (sync --delete, rm).
#[test]
fn files_from_copies_what_rsync_copies() {
    if !rsync_here() {
        return;
    }
    let (t, _) = setup();
    let src = t.path().join("src");
    let list = t.path().join("list");
    std::fs::write(
        &list,
        "# what to take\nfoo\n./a/b/c\n/src/main.c\nsrc/lib.c\n\nx/sub\ndeep/a/b/c/d/z\n;not this\nname with space\nlink\n",
    )
    .unwrap();
    let mut wrong = Vec::new();
    let sets: [&[&str]; 4] =
        [&[], &["--exclude", "*.c"], &["--exclude", "z"], &["--exclude-vcs", "--include", "lib.c"]];
    for (i, extra) in sets.iter().enumerate() {
        let mut args: Vec<String> = vec!["--files-from".into(), list.display().to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        let (theirs, ours) = (t.path().join(format!("r{i}")), t.path().join(format!("m{i}")));
        let their_args: Vec<String> = args
            .iter()
            .filter(|a| *a != "--exclude-vcs")
            .cloned()
            .chain(extra.contains(&"--exclude-vcs").then(|| "--exclude=.git/".to_string()))
            .collect();
        rsync(&their_args, &[], &src, &theirs);
        manyfiles(&["copy"], &args, &[&src, &ours]);
        wrong.extend(differ(&args, "copy --files-from", &paths(&theirs), &paths(&ours)));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(paths(&t.path().join("m0")).contains("deep/a/b/c/d/z"));
    for cmd in [vec!["sync", "--delete"], vec!["rm"]] {
        let mut c = common::cmd();
        c.args(&cmd).arg("--files-from").arg(&list);
        if cmd[0] == "sync" {
            c.arg(&src);
        }
        let out = c.arg(t.path().join("m0")).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(paths(&t.path().join("m0")).contains("deep/a/b/c/d/z"), "nothing removed");
}

/// Under MPI (feature `mpi`, `cargo test --features mpi --test filters -- mpi`): copy,
/// sync --delete and rm on two ranks leave what rsync leaves; scan leaves out what it
/// leaves out on one process.
#[cfg(feature = "mpi")]
#[test]
fn mpi_ranks_filter_as_rsync_does() {
    if !rsync_here() {
        return;
    }
    let Some(_one) = common::mpi_one_at_a_time() else { return };
    let (t, from) = setup();
    let src = t.path().join("src");
    let empty = t.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let np = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = common::mpirun_with(2, &args, std::time::Duration::from_secs(120));
        (r.code, r.stdout)
    };
    let mut wrong = Vec::new();
    for (i, r) in rule_sets(&from).iter().enumerate().step_by(4) {
        let at = |name: &str| t.path().join(format!("{name}{i}"));
        let with = |cmd: &[&str], paths: &[&Path]| {
            let mut v: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
            v.push("-q".into());
            v.extend(r.ours.iter().cloned());
            v.extend(paths.iter().map(|p| p.display().to_string()));
            v
        };
        rsync(&r.theirs, &[], &src, &at("rc"));
        let (code, out) = np(with(&["copy"], &[&src, &at("mc")]));
        assert_eq!(code, Some(0), "{out}");
        wrong.extend(differ(&r.ours, "mpi copy", &paths(&at("rc")), &paths(&at("mc"))));
        destination(&at("rs"));
        destination(&at("ms"));
        rsync(&r.theirs, &["--delete"], &src, &at("rs"));
        let (code, out) = np(with(&["sync", "--delete"], &[&src, &at("ms")]));
        assert_eq!(code, Some(0), "{out}");
        wrong.extend(differ(&r.ours, "mpi sync --delete", &paths(&at("rs")), &paths(&at("ms"))));
        destination(&at("rr"));
        destination(&at("mr"));
        rsync(&r.theirs, &["--delete"], &empty, &at("rr"));
        let (code, out) = np(with(&["rm"], &[&at("mr")]));
        assert_eq!(code, Some(0), "{out}");
        wrong.extend(differ(&r.ours, "mpi rm", &paths(&at("rr")), &paths(&at("mr"))));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // scan: the same entries and the same count left out as on one process.
    let json = |name: &str| t.path().join(name);
    let args = |j: &Path| -> Vec<String> {
        ["scan", "--exclude", "*.tmp", "--exclude", "/deep/", "--json"]
            .iter()
            .map(|s| s.to_string())
            .chain([j.display().to_string(), src.display().to_string()])
            .collect()
    };
    let (code, out) = np(args(&json("mpi.json")));
    assert_eq!(code, Some(0), "{out}");
    let one = common::cmd().args(args(&json("one.json"))).output().unwrap();
    assert!(one.status.success());
    let read =
        |name: &str| -> serde_json::Value { serde_json::from_slice(&std::fs::read(json(name)).unwrap()).unwrap() };
    let (m, o) = (read("mpi.json"), read("one.json"));
    assert_eq!((m["entries"].clone(), m["excluded"].clone()), (o["entries"].clone(), o["excluded"].clone()));
    assert_eq!(m["excluded"], 5);
}
