//! The local engines' flags on object stores (`copy|sync|rm|scan` with an `s3://` side),
//! against a real S3 server (`manyfiles mount s3@rtt=1ms`, as tests/object_engines.rs):
//! filter rules select the same paths on a store as the local engine selects on a tree
//! (upload, download, `--files-from`, `scan`, `rm`), `sync --delete` keeps what they
//! exclude at DST unless `--delete-excluded`; `--itemize` lists a change set in both
//! formats and in the JSON, the same lines up and down; `--verify` reads every object
//! back (a GET each) and reports a corrupted one that sync's rule does not see. Needs
//! root, FUSE, s3fs, manyfiles-s3server and toxiproxy-server: without them each test
//! prints why it skipped, except under CI (CI=true), where a skip is a failure.

mod common;
#[macro_use]
mod object_common;

use common::serial;
use object_common::{Store, files, json, make_tree, requests};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// The rules of most tests: a name pattern and a directory pattern.
const RULES: [&str; 4] = ["--exclude", "*.tmp", "--exclude", "cache/"];

/// A tree the rules cut: `.tmp` files at two depths, a `cache/` directory at the top
/// and one below, and a file named `cache` (not a directory: kept). Mtimes in the past.
fn filtered_tree(root: &Path) {
    for (rel, data) in [
        ("a.txt", "a"),
        ("b.tmp", "bb"),
        ("cache/x", "xxx"),
        ("cache/y/z", "zzzz"),
        ("d/e.txt", "eeeee"),
        ("d/f.tmp", "ffffff"),
        ("d/cache/g", "ggggggg"),
        ("keep/cache", "a file named cache"),
        ("keep/h.txt", "hhh"),
    ] {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, data).unwrap();
        let when = SystemTime::UNIX_EPOCH + Duration::new(1_600_000_000 + data.len() as u64, 7);
        std::fs::File::options().write(true).open(&p).unwrap().set_modified(when).unwrap();
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The keys under `prefix` (its paths below it, with bytes and mtimes), by downloading
/// it whole into `into`.
fn keys(store: &Store, prefix: &str, into: &Path) -> BTreeMap<String, (Vec<u8>, u128)> {
    store.run(&["copy", prefix, s(into), "--quiet"]).ok();
    files(into)
}

/// `args` and then `extra`, one command line.
fn with<'a>(args: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    [args, extra].concat()
}

/// `manyfiles ARGS` (the local engine: no store).
fn local(args: &[&str]) -> common::Run {
    common::run(args)
}

#[test]
fn filters_select_on_a_store_what_they_select_on_a_tree() {
    need_stack!();
    let _g = serial();
    let store = Store::up();
    let work = tempfile::tempdir().unwrap();
    let w = |n: &str| work.path().join(n);
    let (src, j) = (w("src"), w("s.json"));
    filtered_tree(&src);
    let list = w("list");
    std::fs::write(&list, "a.txt\n# not this\nd/e.txt\n./keep/cache\n").unwrap();

    // The local engine's answer, for the rules and for --files-from.
    let reference = w("ref");
    let r = local(&with(&["copy", s(&src), s(&reference), "--quiet", "--json", s(&j), "--force"], &RULES));
    r.ok();
    let excluded = json(&j)["excluded"].as_u64().unwrap();
    assert_eq!(excluded, 4, "b.tmp, cache/, d/f.tmp, d/cache/: {}", r.stdout);
    let want = files(&reference);
    assert_eq!(want.keys().collect::<Vec<_>>(), ["a.txt", "d/e.txt", "keep/cache", "keep/h.txt"]);
    let listed = w("ref-list");
    local(&["copy", s(&src), s(&listed), "--quiet", "--files-from", s(&list)]).ok();
    let want_listed = files(&listed);
    assert_eq!(want_listed.keys().collect::<Vec<_>>(), ["a.txt", "d/e.txt", "keep/cache"]);

    // Up with the rules: the keys are the reference's paths, and the same count excluded.
    let r = store.run(&with(&["copy", s(&src), "s3://manyfiles/f1", "--quiet", "--json", s(&j), "--force"], &RULES));
    r.ok();
    let v = json(&j);
    assert_eq!((v["excluded"].as_u64(), v["copied"].as_u64(), requests(&v, "put")), (Some(excluded), Some(4), 4));
    assert!(r.stdout.contains(&format!(", excluded {excluded}, failed 0")), "{}", r.stdout);
    assert_eq!(keys(&store, "s3://manyfiles/f1", &w("k1")), want);
    store.run(&["copy", s(&src), "s3://manyfiles/f2", "--quiet", "--files-from", s(&list)]).ok();
    assert_eq!(keys(&store, "s3://manyfiles/f2", &w("k2")), want_listed);

    // Down with the rules, from the whole tree on the store: the reference's files.
    store.run(&["copy", s(&src), "s3://manyfiles/f0", "--quiet"]).ok();
    let (d1, d2) = (w("d1"), w("d2"));
    store.run(&with(&["copy", "s3://manyfiles/f0", s(&d1), "--quiet", "--json", s(&j), "--force"], &RULES)).ok();
    assert_eq!(json(&j)["excluded"].as_u64(), Some(excluded));
    assert_eq!(files(&d1), want);
    store.run(&["copy", "s3://manyfiles/f0", s(&d2), "--quiet", "--files-from", s(&list)]).ok();
    assert_eq!(files(&d2), want_listed);

    // Between prefixes, and scan: the same selection.
    store
        .run(&with(&["copy", "s3://manyfiles/f0", "s3://manyfiles/f3", "--quiet", "--json", s(&j), "--force"], &RULES))
        .ok();
    assert_eq!(json(&j)["excluded"].as_u64(), Some(excluded));
    assert_eq!(keys(&store, "s3://manyfiles/f3", &w("k3")), want);
    let r = store.run(&with(&["scan", "s3://manyfiles/f0", "--json", s(&j), "--force"], &RULES));
    r.ok();
    let v = json(&j);
    assert_eq!((v["objects"].as_u64(), v["excluded"].as_u64()), (Some(4), Some(excluded)), "{v}");
    assert!(r.stdout.contains(&format!("excluded {excluded} (left out by the filters)")), "{}", r.stdout);
    // A scan without rules says nothing of them.
    store.run(&["scan", "s3://manyfiles/f0", "--json", s(&j), "--force"]).ok();
    assert!(json(&j).get("excluded").is_none());
}

#[test]
fn sync_delete_keeps_excluded_keys_and_rm_leaves_them() {
    need_stack!();
    let _g = serial();
    let store = Store::up();
    let work = tempfile::tempdir().unwrap();
    let w = |n: &str| work.path().join(n);
    let (src, j) = (w("src"), w("s.json"));
    filtered_tree(&src);
    store.run(&["copy", s(&src), "s3://manyfiles/s1", "--quiet"]).ok();

    // a.txt leaves SRC: --delete removes its key and keeps the 5 keys the rules exclude.
    std::fs::remove_file(src.join("a.txt")).unwrap();
    let r = store
        .run(&with(&["sync", s(&src), "s3://manyfiles/s1", "--delete", "--quiet", "--json", s(&j), "--force"], &RULES));
    r.ok();
    let v = json(&j);
    assert_eq!((v["deleted"].as_u64(), v["extraneous"].as_u64()), (Some(1), Some(5)), "{v}");
    let mut whole = files(&src);
    assert_eq!(keys(&store, "s3://manyfiles/s1", &w("k1")), whole, "the excluded keys stay");
    // --delete-excluded: they go too.
    let args =
        ["sync", s(&src), "s3://manyfiles/s1", "--delete", "--delete-excluded", "--quiet", "--json", s(&j), "--force"];
    store.run(&with(&args, &RULES)).ok();
    assert_eq!((json(&j)["deleted"].as_u64(), json(&j)["extraneous"].as_u64()), (Some(5), Some(0)));
    whole.retain(|k, _| !k.ends_with(".tmp") && !k.starts_with("cache/") && !k.starts_with("d/cache/"));
    assert_eq!(keys(&store, "s3://manyfiles/s1", &w("k2")), whole);

    // Into a local DST, as the local engine syncs the same DST: the same files stay.
    store.run(&["copy", s(&src), "s3://manyfiles/s2", "--quiet"]).ok();
    let (by_store, by_local) = (w("by-store"), w("by-local"));
    for dst in [&by_store, &by_local] {
        filtered_tree(dst);
        std::fs::write(dst.join("d/junk.tmp"), b"junk").unwrap();
        std::fs::write(dst.join("junk.txt"), b"junk").unwrap();
    }
    store
        .run(&with(
            &["sync", "s3://manyfiles/s2", s(&by_store), "--delete", "--quiet", "--json", s(&j), "--force"],
            &RULES,
        ))
        .ok();
    local(&with(&["sync", s(&src), s(&by_local), "--delete", "--quiet"], &RULES)).ok();
    assert_eq!(files(&by_store).keys().collect::<Vec<_>>(), files(&by_local).keys().collect::<Vec<_>>());
    assert!(by_store.join("d/junk.tmp").exists() && !by_store.join("junk.txt").exists());
    let args = ["sync", "s3://manyfiles/s2", s(&by_store), "--delete", "--delete-excluded", "--quiet"];
    store.run(&with(&args, &RULES)).ok();
    local(&with(&["sync", s(&src), s(&by_local), "--delete", "--delete-excluded", "--quiet"], &RULES)).ok();
    assert_eq!(files(&by_store).keys().collect::<Vec<_>>(), files(&by_local).keys().collect::<Vec<_>>());
    assert!(!by_store.join("d/junk.tmp").exists() && !by_store.join("cache").exists());
    // Between prefixes, a source prefix with nothing under it is refused, as into a local
    // DST (a misspelled one with --delete emptied DST): the keys stay.
    let r = store.run(&["sync", "s3://manyfiles/s1-typo", "s3://manyfiles/s1", "--delete", "--quiet"]);
    common::assert_bad_input(&r, "SRC", "an empty source prefix with --delete");
    assert_eq!(keys(&store, "s3://manyfiles/s1", &w("k2b")), whole);

    // rm with the rules leaves what they exclude, as the local rm does.
    let tree = w("tree");
    filtered_tree(&tree);
    store.run(&["copy", s(&tree), "s3://manyfiles/r1", "--quiet"]).ok();
    let r = store.run(&with(&["rm", "s3://manyfiles/r1", "--json", s(&j), "--force"], &RULES));
    r.ok();
    let v = json(&j);
    assert_eq!(
        (v["deleted"].as_u64(), v["excluded"].as_u64(), v["failed"].as_u64()),
        (Some(4), Some(4), Some(0)),
        "{v}"
    );
    assert!(r.stdout.contains("excluded 4 (kept by the filters)"), "{}", r.stdout);
    local(&with(&["rm", s(&tree), "--quiet"], &RULES)).ok();
    let left: BTreeSet<String> = keys(&store, "s3://manyfiles/r1", &w("k3")).into_keys().collect();
    assert_eq!(left, files(&tree).into_keys().collect::<BTreeSet<_>>());
    assert_eq!(left.len(), 5, "{left:?}");
    // --files-from is refused by rm, as by the local rm.
    let list = w("list");
    std::fs::write(&list, "a.txt\n").unwrap();
    common::assert_bad_input(&store.run(&["rm", "s3://manyfiles/r1", "--files-from", s(&list)]), "--files-from", "rm");
}

/// The lines of `stdout` that are changes (before the summary).
fn change_lines(stdout: &str) -> Vec<&str> {
    stdout.lines().take_while(|l| !l.starts_with("copy ") && !l.starts_with("sync ")).collect()
}

#[test]
fn itemize_lists_a_change_set_up_and_down_in_both_formats() {
    need_stack!();
    let _g = serial();
    let store = Store::up();
    let work = tempfile::tempdir().unwrap();
    let w = |n: &str| work.path().join(n);
    let (src, back, j) = (w("src"), w("back"), w("s.json"));
    filtered_tree(&src);
    let r = store.run(&["copy", s(&src), "s3://manyfiles/i1", "--quiet", "--itemize"]);
    r.ok();
    assert_eq!(change_lines(&r.stdout).len(), 9, "every file new: {}", r.stdout);
    assert_eq!(change_lines(&r.stdout)[0], "new file a.txt");
    store.run(&["copy", "s3://manyfiles/i1", s(&back), "--quiet"]).ok();

    // Another size (an old mtime: only the size decides), a newer mtime (same bytes),
    // a file gone, a file new.
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_500_000_000);
    std::fs::write(src.join("a.txt"), b"a longer a").unwrap();
    std::fs::File::options().write(true).open(src.join("a.txt")).unwrap().set_modified(old).unwrap();
    let later = SystemTime::now() + Duration::from_secs(86_400);
    std::fs::File::options().write(true).open(src.join("keep/h.txt")).unwrap().set_modified(later).unwrap();
    std::fs::remove_file(src.join("d/e.txt")).unwrap();
    std::fs::create_dir(src.join("n")).unwrap();
    std::fs::write(src.join("n/new.txt"), b"new").unwrap();

    let r =
        store.run(&["sync", "-n", s(&src), "s3://manyfiles/i1", "--delete", "--itemize", "--itemize-format", "rsync"]);
    r.ok();
    let rsync = [">f.s....... a.txt", "*deleting   d/e.txt", ">f..t...... keep/h.txt", ">f+++++++++ n/new.txt"];
    assert_eq!(change_lines(&r.stdout), rsync, "{}", r.stdout);
    let r = store.run(&["sync", s(&src), "s3://manyfiles/i1", "--delete", "--itemize", "--json", s(&j), "--force"]);
    r.ok();
    let words =
        ["changed file a.txt (size)", "deleted d/e.txt", "changed file keep/h.txt (time)", "new file n/new.txt"];
    assert_eq!(change_lines(&r.stdout), words, "{}", r.stdout);
    let v = json(&j);
    let items: Vec<String> = v["changes"].as_array().unwrap().iter().map(|c| c.to_string()).collect();
    assert_eq!(
        items,
        [
            r#"{"change":"changed","kind":"file","path":"a.txt","what":["size"]}"#,
            r#"{"change":"deleted","kind":"file","path":"d/e.txt"}"#,
            r#"{"change":"changed","kind":"file","path":"keep/h.txt","what":["time"]}"#,
            r#"{"change":"new","kind":"file","path":"n/new.txt"}"#,
        ]
    );
    assert_eq!((v["copied"].as_u64(), v["deleted"].as_u64()), (Some(3), Some(1)), "{v}");

    // Down into the first download: the same four changes (the mtime read by HEAD);
    // the directory made for n/new.txt has no line of its own.
    let r = store.run(&["sync", "s3://manyfiles/i1", s(&back), "--delete", "--itemize", "--quiet"]);
    r.ok();
    assert_eq!(change_lines(&r.stdout), words, "{}", r.stdout);
    assert_eq!(files(&back), files(&src));
    // Nothing left to do: no line.
    let r = store.run(&["sync", "s3://manyfiles/i1", s(&back), "--delete", "--itemize", "--quiet"]);
    assert!(change_lines(&r.ok().stdout).is_empty(), "{}", r.stdout);
}

#[test]
fn verify_reads_every_object_back_and_finds_what_sync_does_not_see() {
    need_stack!();
    let _g = serial();
    let store = Store::up();
    let work = tempfile::tempdir().unwrap();
    let w = |n: &str| work.path().join(n);
    let (src, back, j) = (w("src"), w("back"), w("s.json"));
    let n = make_tree(&src) as u64;

    // A correct upload verifies: one GET per object, no difference.
    let r = store.run(&["copy", s(&src), "s3://manyfiles/v1", "--quiet", "--verify", "--json", s(&j), "--force"]);
    r.ok();
    let v = json(&j);
    assert_eq!((v["verify"]["files"].as_u64(), v["verify"]["differences"].as_u64()), (Some(n), Some(0)), "{v}");
    assert_eq!((requests(&v, "put"), requests(&v, "get")), (n, n), "{v}");
    assert!(r.stdout.contains(&format!("verify: {n} files")), "{}", r.stdout);

    // An object overwritten with other bytes of the same size and a newer time: sync's
    // rule (size, and an object not older than the file) skips it; --verify finds it.
    let other = w("other");
    std::fs::create_dir(&other).unwrap();
    let victim = "a/b/f05.dat";
    let mut data = std::fs::read(src.join(victim)).unwrap();
    assert!(!data.is_empty());
    data[0] ^= 0xff;
    std::fs::create_dir_all(other.join("a/b")).unwrap();
    std::fs::write(other.join(victim), &data).unwrap();
    store.run(&["sync", s(&other), "s3://manyfiles/v1", "--quiet"]).ok();
    let r = store.run(&["sync", s(&src), "s3://manyfiles/v1", "--quiet", "--verify", "--json", s(&j), "--force"]);
    r.expect_code(1);
    let v = json(&j);
    assert_eq!((v["copied"].as_u64(), v["skipped"].as_u64()), (Some(0), Some(n)), "{v}");
    assert_eq!((v["verify"]["differences"].as_u64(), v["verify"]["kinds"]["content"].as_u64()), (Some(1), Some(1)));
    assert!(r.stdout.contains(&format!("{victim}: content differs")), "{}", r.stdout);
    assert!(r.stderr.contains("0 failed, 1 differences after verify"), "{}", r.stderr);

    // Down: a verified download is two GETs an object; a file changed in place with
    // its mtime put back is skipped by sync (HEAD: same mtime) and found by --verify.
    store.run(&["copy", s(&src), "s3://manyfiles/v2", "--quiet"]).ok();
    store.run(&["copy", "s3://manyfiles/v2", s(&back), "--quiet", "--verify", "--json", s(&j), "--force"]).ok();
    let v = json(&j);
    assert_eq!((requests(&v, "get"), v["verify"]["differences"].as_u64()), (2 * n, Some(0)), "{v}");
    let f = back.join(victim);
    let mtime = std::fs::metadata(&f).unwrap().modified().unwrap();
    std::fs::write(&f, &data).unwrap();
    std::fs::File::options().write(true).open(&f).unwrap().set_modified(mtime).unwrap();
    let r = store.run(&["sync", "s3://manyfiles/v2", s(&back), "--quiet", "--verify", "--json", s(&j), "--force"]);
    r.expect_code(1);
    let v = json(&j);
    assert_eq!((v["copied"].as_u64(), v["verify"]["kinds"]["content"].as_u64()), (Some(0), Some(1)), "{v}");

    // Between prefixes: both sides read, two GETs a key.
    let args = ["copy", "s3://manyfiles/v2", "s3://manyfiles/v3", "--quiet", "--verify", "--json", s(&j), "--force"];
    store.run(&args).ok();
    let v = json(&j);
    assert_eq!((requests(&v, "get"), v["verify"]["differences"].as_u64()), (2 * n, Some(0)), "{v}");
    // A dry run's verify says what differs now: every key missing under a new prefix.
    let args = ["sync", "-n", s(&src), "s3://manyfiles/v4", "--quiet", "--verify", "--json", s(&j), "--force"];
    store.run(&args).expect_code(1);
    assert_eq!(json(&j)["verify"]["kinds"]["missing"].as_u64(), Some(n));
}
