//! `manyfiles scan`: bad input refused before any walk, the inventory from the scan's
//! walk, and an interrupted scan that the next one completes.

mod common;

use common::{assert_bad_input, run};
use manyfiles::tree::inventory::Inventory;
use serde_json::Value;
use std::path::Path;

fn small_tree(base: &Path) -> std::path::PathBuf {
    let t = base.join("tree");
    for d in 0..3 {
        std::fs::create_dir_all(t.join(format!("d{d}/sub"))).unwrap();
        for f in 0..(4 + d) {
            std::fs::write(t.join(format!("d{d}/f{f}")), vec![7u8; 100 * f]).unwrap();
            std::fs::write(t.join(format!("d{d}/sub/longer-name-{f}")), vec![1u8; 5000 * f]).unwrap();
        }
    }
    std::os::unix::fs::symlink("d0", t.join("link")).unwrap();
    t
}

#[test]
fn bad_input_is_refused_before_walking() {
    let base = tempfile::tempdir().unwrap();
    let tree = small_tree(base.path());
    let t = tree.to_str().unwrap();
    let db = base.path().join("i.db");
    let dbu = format!("sqlite:{}", db.display());
    let cases: Vec<(Vec<String>, &str, &str)> = vec![
        (vec!["/nonexistent/tree".into(), "--db".into(), dbu.clone()], "PATH", "a missing tree"),
        (vec![tree.join("d0/f1").display().to_string(), "--db".into(), dbu.clone()], "PATH", "a file as tree"),
        (vec![t.into(), "--db".into(), "sqlite:/nonexistent/dir/i.db".into()], "--db", "a missing db directory"),
        (vec![t.into(), "--db".into(), "mysql://u@h/db".into()], "--db", "an unknown database"),
        (vec![t.into(), "--db".into(), "sqlite:".into()], "--db", "an empty file name"),
        // Port 1 on loopback: nothing listens, the connection is refused at once.
        (vec![t.into(), "--db".into(), "postgres://nobody@127.0.0.1:1/none".into()], "--db", "an unreachable server"),
        (vec![t.into(), "--db".into(), "postgres://x@h:notaport/db".into()], "--db", "a malformed URL"),
        (vec![t.into(), "--threads".into(), "0".into()], "--threads", "zero threads"),
        (vec![t.into(), "--inventory".into(), "/nonexistent/dir/inv.json".into()], "--inventory", "inventory dir"),
        (vec![t.into(), "--json".into(), base.path().display().to_string()], "--json", "json is a directory"),
    ];
    for (args, flag, what) in cases {
        let mut a = vec!["scan".to_string()];
        a.extend(args);
        let r = run(&a);
        assert_bad_input(&r, flag, what);
        assert!(!db.exists(), "{what}: the index was created");
    }
    // A file that is not SQLite is refused and left alone.
    let notdb = base.path().join("notes.txt");
    std::fs::write(&notdb, "not a database, not even close, just a plain text file with words").unwrap();
    let r = run(["scan", t, "--db", &format!("sqlite:{}", notdb.display())]);
    assert_bad_input(&r, "--db", "a text file as index");
    assert_eq!(
        std::fs::read_to_string(&notdb).unwrap(),
        "not a database, not even close, just a plain text file with words"
    );
}

#[test]
fn walk_only_scan_counts_and_times() {
    let base = tempfile::tempdir().unwrap();
    let tree = small_tree(base.path());
    let json = base.path().join("r.json");
    let r = run(["scan", tree.to_str().unwrap(), "--json", json.to_str().unwrap(), "--threads", "2"]);
    r.ok();
    assert!(r.stdout.contains("index: none (walk and statx only)"), "{}", r.stdout);
    assert!(r.stdout.contains("machine: "), "{}", r.stdout);
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    // root + 3 dirs + 3 subs; files 4+5+6 twice; one symlink
    assert_eq!(v["dirs"], 7);
    assert_eq!(v["files"], 30);
    assert_eq!(v["symlinks"], 1);
    assert_eq!(v["entries"], 38);
    assert!(v["phases"]["stat_thread_s"].as_f64().unwrap() > 0.0);
    assert!(v["db"].is_null());
    assert_eq!(v["provenance"]["tool"], "manyfiles");
}

/// The scan's one-pass inventory equals the inventory module's own walk.
#[test]
fn inventory_from_the_scan_walk_matches_inventory_scan() {
    let base = tempfile::tempdir().unwrap();
    let tree = small_tree(base.path());
    let inv = base.path().join("inv.json");
    let db = base.path().join("i.db");
    let r = run([
        "scan",
        tree.to_str().unwrap(),
        "--db",
        &format!("sqlite:{}", db.display()),
        "--inventory",
        inv.to_str().unwrap(),
    ]);
    r.ok();
    assert!(r.stdout.contains(&format!("inventory: {}", inv.display())), "{}", r.stdout);
    let mut got = Inventory::load(&inv).unwrap();
    let mut want = Inventory::scan(&tree, 2).unwrap();
    got.created_utc.clear();
    want.created_utc.clear();
    assert_eq!(serde_json::to_value(&got).unwrap(), serde_json::to_value(&want).unwrap());
    assert_eq!(got.files, 30);
}

/// SIGINT during a scan: exit 130 with what was committed kept; the next scan completes
/// the index (nothing lost, nothing doubled).
#[test]
fn interrupted_scan_is_completed_by_the_next() {
    let base = tempfile::tempdir().unwrap();
    let tree = base.path().join("t");
    run(["gen", tree.to_str().unwrap(), "--files", "40000", "--size", "0", "--files-per-dir", "100", "-q"]).ok();
    let db = base.path().join("i.db");
    let url = format!("sqlite:{}", db.display());
    let child = std::process::Command::new(common::bin())
        .args(["scan", tree.to_str().unwrap(), "--db", &url, "--threads", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    rustix::process::kill_process(rustix::process::Pid::from_child(&child), rustix::process::Signal::INT).ok();
    let out = child.wait_with_output().unwrap();
    let code = out.status.code();
    assert!(code == Some(130) || code == Some(0), "{out:?}");
    let json = base.path().join("r.json");
    run(["scan", tree.to_str().unwrap(), "--db", &url, "--json", json.to_str().unwrap()]).ok();
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let entries = v["entries"].as_u64().unwrap();
    assert_eq!(v["files"], 40000, "the tree (gen adds no file of its own): {v}");
    let before = v["indexed_before"].as_u64().unwrap();
    if code == Some(130) {
        eprintln!("interrupted after {before} of {entries} rows");
        // Usually part way; on a loaded machine the signal can land after the last commit,
        // and then everything is there (still exit 130: the user asked to stop).
        assert!(before <= entries, "{before} of {entries}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"), "{out:?}");
    }
    assert_eq!(v["diff"]["new"].as_u64().unwrap() + v["diff"]["unchanged"].as_u64().unwrap(), entries);
    assert_eq!(v["diff"]["deleted"], 0);
    let c = rusqlite::Connection::open(&db).unwrap();
    let n: i64 = c.query_row("SELECT count(*) FROM files", [], |r| r.get(0)).unwrap();
    assert_eq!(n as u64, entries);
}

/// An index kept inside the tree it indexes does not index itself.
#[test]
fn index_inside_the_tree_is_left_out() {
    let base = tempfile::tempdir().unwrap();
    let tree = small_tree(base.path());
    let db = tree.join("d1/index.db");
    let json = base.path().join("r.json");
    for _ in 0..2 {
        run(["scan", tree.to_str().unwrap(), "--db", db.to_str().unwrap(), "--json", json.to_str().unwrap()]).ok();
    }
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["entries"], 38, "{v}");
    // Only d1 itself changed (its index files came and went); nothing new or deleted.
    assert_eq!((v["diff"]["new"].as_u64(), v["diff"]["deleted"].as_u64()), (Some(0), Some(0)), "{v}");
    let c = rusqlite::Connection::open(&db).unwrap();
    let n: i64 =
        c.query_row("SELECT count(*) FROM files WHERE name LIKE CAST('index.db%' AS BLOB)", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 0);
}

/// Files and directories removed while the scan runs are tolerated (counted as
/// vanished, never an error), and a rescan afterwards gets the index right.
#[test]
fn entries_vanishing_mid_scan_are_tolerated() {
    let base = tempfile::tempdir().unwrap();
    let tree = base.path().join("t");
    for d in 0..200 {
        let dir = tree.join(format!("d{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            std::fs::write(dir.join(format!("f{f}")), b"").unwrap();
        }
    }
    let db = base.path().join("i.db");
    let url = format!("sqlite:{}", db.display());
    let json = base.path().join("r.json");
    let t2 = tree.clone();
    let churn = std::thread::spawn(move || {
        for d in (0..200).rev().step_by(2) {
            let _ = std::fs::remove_dir_all(t2.join(format!("d{d:03}")));
        }
    });
    let r = run(["scan", tree.to_str().unwrap(), "--db", &url, "--threads", "2", "--json", json.to_str().unwrap()]);
    churn.join().unwrap();
    r.ok();
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    eprintln!("vanished during the scan: {}, errors: {}", v["vanished"], v["errors"]);
    assert_eq!(v["errors"], 0, "{v}");
    run(["scan", tree.to_str().unwrap(), "--db", &url, "--json", json.to_str().unwrap()]).ok();
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    let n: i64 = c.query_row("SELECT count(*) FROM files", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 1 + 100 + 100 * 100, "root + 100 dirs + their files: {v}");
    assert_eq!(v["entries"].as_i64(), Some(n));
}

/// A directory of more than 2,048 entries is stat'ed in chunks on several threads: the
/// index and the inventory are the same as a plain walk's, and a rescan finds nothing new.
#[test]
fn a_large_directory_is_scanned_exactly() {
    let base = tempfile::tempdir().unwrap();
    let tree = base.path().join("t");
    run(["gen", tree.to_str().unwrap(), "--files", "5000", "--size", "uniform:0-2k", "--flat", "-q"]).ok();
    std::fs::create_dir(tree.join("sub")).unwrap();
    std::fs::write(tree.join("sub/x"), b"x").unwrap();
    let (inv, db, json) = (base.path().join("inv.json"), base.path().join("i.db"), base.path().join("r.json"));
    let url = format!("sqlite:{}", db.display());
    let t = tree.to_str().unwrap();
    run(["scan", t, "--db", &url, "--threads", "3", "--inventory", inv.to_str().unwrap()]).ok();
    let mut got = Inventory::load(&inv).unwrap();
    let mut want = Inventory::scan(&tree, 2).unwrap();
    got.created_utc.clear();
    want.created_utc.clear();
    assert_eq!(serde_json::to_value(&got).unwrap(), serde_json::to_value(&want).unwrap());
    assert_eq!(got.files, 5001);
    run(["scan", t, "--db", &url, "--threads", "3", "--json", json.to_str().unwrap()]).ok();
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["entries"], 5003, "{v}");
    assert_eq!(v["diff"]["unchanged"], 5003, "{v}");
}

/// Without an index the walk counts instead of sending rows (issue 41): every total and
/// the inventory must be what an indexed scan of the same tree reports, with a directory
/// large enough to be stat'ed in chunks on several threads, symlinks, a FIFO, a filter
/// that leaves a directory and some files out, and a file swapped for nothing between
/// scans changing nothing else.
#[test]
fn a_walk_only_scan_counts_what_an_indexed_scan_indexes() {
    let base = tempfile::tempdir().unwrap();
    let tree = small_tree(base.path());
    let t = tree.to_str().unwrap();
    run(["gen", tree.join("big").to_str().unwrap(), "--files", "4500", "--size", "uniform:0-3k", "--flat", "-q"]).ok();
    std::os::unix::fs::symlink("/nonexistent", tree.join("d1/dangling")).unwrap();
    let fifo = std::ffi::CString::new(tree.join("d2/fifo").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let fields = ["entries", "files", "dirs", "symlinks", "other", "bytes", "allocated_bytes", "errors", "vanished"];
    for filter in [&[][..], &["--exclude", "sub/", "--exclude", "f1*"][..]] {
        let mut totals = Vec::new();
        let mut inventories = Vec::new();
        for (i, db) in [None, Some(base.path().join(format!("i{}.db", filter.len())))].iter().enumerate() {
            let json = base.path().join(format!("r{i}.json"));
            let inv = base.path().join(format!("inv{i}.json"));
            let mut args = vec!["scan", t, "--threads", "3", "--json", json.to_str().unwrap()];
            args.extend(["--inventory", inv.to_str().unwrap()]);
            args.extend(filter);
            let url = db.as_ref().map(|d| format!("sqlite:{}", d.display()));
            if let Some(u) = &url {
                args.extend(["--db", u]);
            }
            run(args).ok();
            let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
            totals.push(fields.map(|f| v[f].clone()));
            let mut got = Inventory::load(&inv).unwrap();
            got.created_utc.clear();
            inventories.push(serde_json::to_value(&got).unwrap());
            if filter.is_empty() {
                // root, 3 dirs + 3 subs, big; 30 + 4,500 files; 2 symlinks; 1 FIFO
                assert_eq!(v["dirs"], 8, "{v}");
                assert_eq!(v["files"], 4530, "{v}");
                assert_eq!((v["symlinks"].clone(), v["other"].clone()), (2.into(), 1.into()), "{v}");
            } else {
                assert!(v["excluded"].as_u64().unwrap() > 3, "{v}");
            }
        }
        assert_eq!(totals[0], totals[1], "without and with an index, filter {filter:?}");
        assert_eq!(inventories[0], inventories[1], "inventories, filter {filter:?}");
    }
}

// ---- a database manyfiles did not make is not touched (issue 25, Why 7) -----------------

/// sha256 of a file, by `sha256sum`.
fn sha256(p: &Path) -> String {
    let o = std::process::Command::new("sha256sum").arg(p).output().expect("sha256sum");
    assert!(o.status.success());
    String::from_utf8_lossy(&o.stdout).split_whitespace().next().unwrap().to_string()
}

/// The names in `dir` (sorted): to see that no -wal/-shm/-journal file appeared.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// `scan TREE --db sqlite:FILE` on a file manyfiles did not make: exit 2, one line naming
/// --db, the file byte-identical, nothing beside it.
fn assert_db_refused(tree: &Path, db: &Path, names_in_line: &str, what: &str) {
    let dir = db.parent().unwrap();
    let (hash, listing) = (sha256(db), names(dir));
    let r = run(["scan", tree.to_str().unwrap(), "--db", &format!("sqlite:{}", db.display())]);
    assert_bad_input(&r, "--db", what);
    assert!(r.stderr.contains(names_in_line), "{what}: the line must say {names_in_line}: {}", r.stderr);
    assert_eq!(sha256(db), hash, "{what}: the file must be byte-identical");
    assert_eq!(names(dir), listing, "{what}: no file may appear beside it (-wal, -shm, -journal)");
}

#[test]
fn a_foreign_sqlite_database_is_not_touched() {
    let base = tempfile::tempdir().unwrap();
    let tree = small_tree(base.path());
    let dbs = base.path().join("dbs");
    std::fs::create_dir(&dbs).unwrap();
    // 1. Another application's data: one unrelated table.
    let a = dbs.join("app.db");
    let c = rusqlite::Connection::open(&a).unwrap();
    c.execute_batch(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers VALUES (1, 'x');",
    )
    .unwrap();
    drop(c);
    assert_db_refused(&tree, &a, "'customers'", "a database with an unrelated table");
    // 2. A `files` table of another schema.
    let b = dbs.join("files.db");
    let c = rusqlite::Connection::open(&b).unwrap();
    c.execute_batch("CREATE TABLE files (path TEXT PRIMARY KEY, owner TEXT); INSERT INTO files VALUES ('/a', 'me');")
        .unwrap();
    drop(c);
    assert_db_refused(&tree, &b, "'files' of another schema", "a files table of another schema");
    // 3. Not SQLite at all.
    let t = dbs.join("notes.txt");
    std::fs::write(&t, "my notes, not a database\n".repeat(50)).unwrap();
    assert_db_refused(&tree, &t, "not a SQLite database", "a text file");
    // 4. Another application's database, by its application_id, even with no table.
    let d = dbs.join("other-app.db");
    let c = rusqlite::Connection::open(&d).unwrap();
    c.execute_batch("PRAGMA application_id = 1234; CREATE TABLE t (x);").unwrap();
    drop(c);
    assert_db_refused(&tree, &d, "another application", "another application's database");
}

/// A new file, an empty file: the index is made (and marked); scanned twice, the second
/// run rescans it. An index as earlier versions made it (no mark) is taken as ours and
/// marked on the next write.
#[test]
fn its_own_index_is_rescanned_and_marked() {
    let base = tempfile::tempdir().unwrap();
    let tree = small_tree(base.path());
    let t = tree.to_str().unwrap();
    let header = |db: &Path| {
        let c = rusqlite::Connection::open(db).unwrap();
        let g = |p: &str| c.query_row(&format!("PRAGMA {p}"), [], |r| r.get::<_, i64>(0)).unwrap();
        (g("application_id"), g("user_version"))
    };
    const MARK: (i64, i64) = (0x6d6e_7966, 1);
    for (name, pre) in [("new.db", None), ("empty.db", Some(""))] {
        let db = base.path().join(name);
        if let Some(p) = pre {
            std::fs::write(&db, p).unwrap();
        }
        let dbu = format!("sqlite:{}", db.display());
        run(["scan", t, "--db", &dbu]).ok();
        assert_eq!(header(&db), MARK, "{name}: marked as manyfiles' index");
        std::fs::write(tree.join("d0/new-file"), b"n").unwrap();
        let r = run(["scan", t, "--db", &dbu]);
        r.ok();
        assert!(r.stdout.contains("1 new"), "{name}: the rescan sees the new file: {}", r.stdout);
        std::fs::remove_file(tree.join("d0/new-file")).unwrap();
    }
    // Made before the mark: take the mark off an index and scan again.
    let db = base.path().join("new.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch("PRAGMA application_id = 0; PRAGMA user_version = 0;").unwrap();
    drop(c);
    run(["scan", t, "--db", &format!("sqlite:{}", db.display())]).ok();
    assert_eq!(header(&db), MARK, "an unmarked index of manyfiles' exact schema is marked on the next write");
}
