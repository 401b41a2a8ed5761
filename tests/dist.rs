//! The engines under MPI (feature `mpi`): `cargo test --features mpi --test dist`.
//! Every rank works on the same tree (one machine: a shared file system by definition);
//! results must be those of one process. Skipped with a printed reason where mpirun is
//! missing (never in CI).
#![cfg(feature = "mpi")]

mod common;
mod tricky;

use common::*;
use std::path::Path;
use std::time::Duration;

/// `mpirun -np N manyfiles ARGS`, bounded in time.
fn mpirun(np: usize, args: &[&str]) -> Run {
    mpirun_with(np, args, Duration::from_secs(120))
}

/// An uneven tree: 30 directories of 40 files, one directory of `big` files, a chain 60
/// deep with a file per level, a symlink to `/` and an empty directory.
fn uneven_tree(top: &Path, big: usize) {
    for a in 0..6 {
        for b in 0..5 {
            let d = top.join(format!("d{a}/e{b}"));
            std::fs::create_dir_all(&d).unwrap();
            for f in 0..40 {
                std::fs::write(d.join(format!("f{f}")), [a as u8; 100]).unwrap();
            }
        }
    }
    let huge = top.join("huge");
    std::fs::create_dir_all(&huge).unwrap();
    for i in 0..big {
        std::fs::write(huge.join(format!("h{i:06}")), b"").unwrap();
    }
    let mut p = top.join("chain");
    for _ in 0..60 {
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("f"), b"c").unwrap();
        p = p.join("c");
    }
    std::os::unix::fs::symlink("/", top.join("d0/root-link")).unwrap();
    std::fs::create_dir_all(top.join("empty")).unwrap();
}

/// (files, dirs, per-rank work) from an rm JSON summary.
fn rm_counts(json: &Path) -> (u64, u64, Vec<u64>) {
    let v = load_json(json);
    let work = v.get("ranks").map_or(Vec::new(), |r| arr(r, "work").iter().map(|w| w.as_u64().unwrap()).collect());
    (u(&v, "files"), u(&v, "dirs"), work)
}

#[test]
fn rm_under_mpirun_removes_what_one_process_removes() {
    let Some(_one_at_a_time) = mpi_one_at_a_time() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    for np in [1, 2, 4] {
        let top = dir.path().join(format!("top{np}"));
        uneven_tree(&top, 5000);
        let json = dir.path().join(format!("rm{np}.json"));
        let r = mpirun(np, &["rm", top.to_str().unwrap(), "--threads", "2", "--json", json.to_str().unwrap()]);
        r.ok();
        assert!(!top.exists(), "np {np}: the tree is gone");
        assert!(dir.path().exists());
        // Rank 0 alone prints, once.
        assert_eq!(r.stdout.lines().filter(|l| l.starts_with("removed ")).count(), 1, "{}", r.stdout);
        let (files, dirs, work) = rm_counts(&json);
        if np > 1 {
            assert!(r.stdout.contains(&format!("ranks: {np} on")), "{}", r.stdout);
            assert_eq!(work.len(), np);
            assert_eq!(work.iter().sum::<u64>(), files + dirs);
        }
        seen.push((files, dirs));
    }
    // 30 × 40 + 5000 + 60 files + the symlink; 1 + 6 + 30 + 1 + 60 + 1 directories.
    assert_eq!(seen, vec![(6261, 99); 3]);
}

#[test]
fn rm_spreads_one_huge_directory_over_the_ranks() {
    let Some(_one_at_a_time) = mpi_one_at_a_time() else { return };
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().join("flat");
    std::fs::create_dir_all(&top).unwrap();
    for i in 0..40_000 {
        std::fs::write(top.join(format!("f{i:06}")), b"").unwrap();
    }
    let json = dir.path().join("rm.json");
    let r = mpirun(2, &["rm", top.to_str().unwrap(), "--threads", "1", "--json", json.to_str().unwrap()]);
    r.ok();
    assert!(!top.exists());
    let (files, _, work) = rm_counts(&json);
    assert_eq!(files, 40_000);
    let mean = work.iter().sum::<u64>() as f64 / work.len() as f64;
    assert!(work.iter().all(|&w| (w as f64) < 2.0 * mean && (w as f64) > mean / 2.0), "per-rank work {work:?}");
}

#[test]
fn rm_under_mpirun_refuses_bad_paths_on_every_rank() {
    let Some(_one_at_a_time) = mpi_one_at_a_time() else { return };
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("keep");
    std::fs::create_dir(&keep).unwrap();
    let missing = dir.path().join("missing");
    let r = mpirun(2, &["rm", keep.to_str().unwrap(), missing.to_str().unwrap()]);
    r.expect_code(2);
    assert!(r.stderr.contains("no such file or directory"), "{}", r.stderr);
    assert_eq!(r.stderr.matches("manyfiles: rm:").count(), 1, "told once: {}", r.stderr);
    assert!(keep.exists(), "nothing removed when one PATH is refused");
}

/// Every row of a SQLite index, ids replaced by paths: (path, parent path, name, type,
/// size, mtime, mode, inode, allocated), sorted.
type IndexRow = (Vec<u8>, Option<Vec<u8>>, Vec<u8>, String, i64, i64, i64, i64, i64);

fn index_rows(db: &Path) -> Vec<IndexRow> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut st = c
        .prepare(
            "SELECT f.path, p.path, f.name, f.type, f.size, f.mtime_ns, f.mode, f.inode, f.allocated \
             FROM files f LEFT JOIN files p ON p.id = f.parent ORDER BY f.path",
        )
        .unwrap();
    st.query_map([], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?))
    })
    .unwrap()
    .map(|r| r.unwrap())
    .collect()
}

#[test]
fn scan_under_mpirun_writes_the_index_one_process_writes() {
    let Some(_one_at_a_time) = mpi_one_at_a_time() else { return };
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().join("tree");
    uneven_tree(&top, 3000);
    let t = top.to_str().unwrap();
    let db = |n: usize| dir.path().join(format!("i{n}.db"));
    run(["scan", t, "--db", db(1).to_str().unwrap(), "--threads", "2"]).ok();
    let one = index_rows(&db(1));
    assert_eq!(one.len(), 99 + 4261, "the 99 directories (the root one of them) and 4,261 others");
    for np in [2, 4] {
        let json = dir.path().join(format!("s{np}.json"));
        let r = mpirun(
            np,
            &["scan", t, "--db", db(np).to_str().unwrap(), "--threads", "2", "--json", json.to_str().unwrap()],
        );
        r.ok();
        assert_eq!(r.stdout.matches("scanned ").count(), 1, "rank 0 alone prints: {}", r.stdout);
        assert!(r.stdout.contains(&format!("ranks: {np} on")), "{}", r.stdout);
        assert_eq!(index_rows(&db(np)), one, "np {np}: the same rows");
        let v = load_json(&json);
        let work: Vec<u64> = arr(get(&v, "ranks"), "work").iter().map(|w| w.as_u64().unwrap()).collect();
        assert_eq!(work.iter().sum::<u64>(), one.len() as u64);
        assert_eq!(u(get(&v, "provenance"), "ranks"), np as u64);
    }
    // A rescan after changes: new, changed and deleted rows as one process finds them.
    std::fs::write(top.join("d1/e1/new"), b"n").unwrap();
    std::fs::remove_file(top.join("d2/e2/f3")).unwrap();
    std::fs::write(top.join("d3/e3/f4"), b"changed, longer").unwrap();
    run(["scan", t, "--db", db(1).to_str().unwrap()]).ok();
    let r = mpirun(2, &["scan", t, "--db", db(2).to_str().unwrap()]);
    r.ok();
    assert!(r.stdout.contains("1 new, "), "{}", r.stdout);
    assert!(r.stdout.contains("1 deleted"), "{}", r.stdout);
    assert_eq!(index_rows(&db(2)), index_rows(&db(1)));
}

/// SRC and DST compare equal: `sync --dry-run` (one process) finds nothing to do.
fn assert_same_tree(src: &Path, dst: &Path) {
    let r = run(["sync", src.to_str().unwrap(), dst.to_str().unwrap(), "--dry-run", "--delete"]);
    r.ok();
    assert!(r.stdout.contains("would copy 0 (0 B transferred), 0 dirs to create"), "{}", r.stdout);
    assert!(r.stdout.contains("deleted 0, extraneous kept 0, failed 0"), "{}", r.stdout);
}

#[test]
fn copy_and_sync_under_mpirun_give_the_tree_one_process_gives() {
    let Some(_one_at_a_time) = mpi_one_at_a_time() else { return };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    uneven_tree(&src, 3000);
    // A read-only directory must still be filled (its mode is set last).
    std::fs::create_dir_all(src.join("ro/inner")).unwrap();
    std::fs::write(src.join("ro/inner/x"), b"x").unwrap();
    std::fs::set_permissions(src.join("ro"), std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
    let s = src.to_str().unwrap();
    let one = dir.path().join("one");
    run(["copy", s, one.to_str().unwrap()]).ok();
    for np in [2, 4] {
        let dst = dir.path().join(format!("dst{np}"));
        let d = dst.to_str().unwrap();
        let json = dir.path().join(format!("c{np}.json"));
        let r = mpirun(np, &["copy", s, d, "--threads", "2", "--verify", "--json", json.to_str().unwrap()]);
        r.ok();
        assert_eq!(r.stdout.lines().filter(|l| l.starts_with("copy ")).count(), 1, "rank 0 alone prints: {}", r.stdout);
        assert!(r.stdout.contains("0 differences"), "{}", r.stdout);
        assert!(r.stdout.contains(&format!("ranks: {np} on")), "{}", r.stdout);
        assert_same_tree(&src, &dst);
        let v = load_json(&json);
        assert_eq!(u(&v, "copied"), 4261 + 1, "every file and symlink once");
        // A second sync copies nothing; a sync --delete after changes matches one process.
        let r = mpirun(np, &["sync", s, d]);
        r.ok();
        assert!(r.stdout.contains("copied 0 (0 B transferred), 0 dirs created"), "{}", r.stdout);
        std::fs::write(dst.join("d1/stray"), b"s").unwrap();
        std::fs::write(dst.join("d2/e2/f3"), b"other content").unwrap();
        let r = mpirun(np, &["sync", s, d, "--delete", "--checksum"]);
        r.ok();
        assert!(r.stdout.contains("copied 1 "), "{}", r.stdout);
        assert!(r.stdout.contains("deleted 1,"), "{}", r.stdout);
        assert_same_tree(&src, &dst);
    }
    assert_same_tree(&src, &one);
    for t in ["src", "one", "dst2", "dst4"] {
        let _ = std::fs::set_permissions(
            dir.path().join(t).join("ro"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        );
    }
}

#[test]
fn a_rank_killed_mid_copy_ends_the_job_and_sync_finishes_it() {
    let Some(_one_at_a_time) = mpi_one_at_a_time() else { return };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    for a in 0..40 {
        let d = src.join(format!("d{a}"));
        std::fs::create_dir_all(&d).unwrap();
        for f in 0..100 {
            std::fs::write(d.join(format!("f{f}")), vec![a as u8; 20_000]).unwrap();
        }
    }
    let dst = dir.path().join("dst");
    let (s, d) = (src.to_str().unwrap(), dst.to_str().unwrap());
    let child = std::process::Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .arg(bin())
        .args(["copy", s, d, "--threads", "1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Kill rank 1 once the copy is under way.
    let started =
        wait_until(Duration::from_secs(60), || std::fs::read_dir(&dst).map(|r| r.count() > 2).unwrap_or(false));
    assert!(started, "the copy started");
    let pids = String::from_utf8(
        std::process::Command::new("pgrep")
            .args(["-f", &format!("^{} copy {s}", bin().display())])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let pids: Vec<&str> = pids.split_whitespace().collect();
    assert_eq!(pids.len(), 2, "two ranks: {pids:?}");
    std::process::Command::new("kill").args(["-9", pids[1]]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "the job fails when a rank dies");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("signal 9") || err.contains("killed") || err.contains("Killed"), "a clear error: {err}");
    // No partial file under a final name would survive a sync; a sync finishes the job.
    let r = mpirun(2, &["sync", s, d]);
    r.ok();
    assert_same_tree(&src, &dst);
}

#[test]
fn a_large_file_is_copied_in_chunks_by_every_rank() {
    let Some(_one_at_a_time) = mpi_one_at_a_time() else { return };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    // 24 MiB of varied bytes: 24 chunks of 1 MiB.
    let big: Vec<u8> = (0..24u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(src.join("sub/big"), &big).unwrap();
    std::fs::write(src.join("small"), b"s").unwrap();
    let dst = dir.path().join("dst");
    let json = dir.path().join("c.json");
    let args = ["copy", src.to_str().unwrap(), dst.to_str().unwrap(), "--threads", "1", "--verify", "--json"];
    let out = assert_cmd::Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-x", "MANYFILES_DIST_CHUNK", "-np", "2"])
        .env("MANYFILES_DIST_CHUNK", "1M")
        .arg(bin())
        .args(args)
        .arg(&json)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("0 differences"), "{stdout}");
    assert_eq!(std::fs::read(dst.join("sub/big")).unwrap(), big);
    let v = load_json(&json);
    let items: Vec<u64> = arr(get(get(&v, "ranks"), "walk"), "items").iter().map(|w| w.as_u64().unwrap()).collect();
    assert_eq!(items.iter().sum::<u64>(), 2 + 24, "two directories and 24 chunks: {items:?}");
    assert!(items.iter().all(|&n| n >= 4), "every rank copied chunks: {items:?}");
    assert!(
        std::fs::read_dir(dst.join("sub")).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().contains("tmp")),
        "no temporary left"
    );
    assert_same_tree(&src, &dst);
}

#[test]
fn one_huge_directory_is_copied_by_every_rank() {
    let Some(_one_at_a_time) = mpi_one_at_a_time() else { return };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    for i in 0..12_000 {
        std::fs::write(src.join(format!("f{i:05}")), i.to_string()).unwrap();
    }
    let dst = dir.path().join("dst");
    let (s, d) = (src.to_str().unwrap(), dst.to_str().unwrap());
    let json = dir.path().join("c.json");
    let r = mpirun(2, &["copy", s, d, "--threads", "1", "--json", json.to_str().unwrap()]);
    r.ok();
    assert_same_tree(&src, &dst);
    let v = load_json(&json);
    assert_eq!(s_of(get(&v, "ranks"), "unit"), "files written");
    let work: Vec<u64> = arr(get(&v, "ranks"), "work").iter().map(|w| w.as_u64().unwrap()).collect();
    assert_eq!(work.iter().sum::<u64>(), 12_000);
    let mean = 6_000.0;
    assert!(work.iter().all(|&w| (w as f64) < 2.0 * mean && (w as f64) > mean / 2.0), "per-rank work {work:?}");
    // A sync that rewrites more files than one task keeps: no temporary left, same tree.
    for i in 0..5_000 {
        std::fs::write(src.join(format!("f{i:05}")), format!("new {i}")).unwrap();
    }
    let r = mpirun(2, &["sync", s, d, "--threads", "1"]);
    r.ok();
    assert!(r.stdout.contains("copied 5000 "), "{}", r.stdout);
    assert!(
        std::fs::read_dir(&dst).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().contains("manyfiles-tmp"))
    );
    assert_same_tree(&src, &dst);
}

fn s_of<'a>(v: &'a serde_json::Value, key: &str) -> &'a str {
    v.get(key).and_then(|x| x.as_str()).unwrap_or_default()
}

/// `--cold` and `--durable` under MPI: every rank evicts before the common start and
/// syncs before the common end; the JSON says cold and durable, the tree is right.
#[test]
fn cold_and_durable_under_mpirun() {
    let Some(_one_at_a_time) = mpi_one_at_a_time() else { return };
    // Eviction needs a disk-backed file system (tmpfs refuses --cold).
    let base = ["/var/tmp", "/tmp"].into_iter().find(|d| {
        tempfile::tempdir_in(d).is_ok_and(|t| manyfiles::storage::cache::memory_fs(t.path()).is_ok_and(|m| m.is_none()))
    });
    let Some(base) = base else {
        println!("skipped: no disk-backed directory to evict from");
        return;
    };
    let dir = tempfile::tempdir_in(base).unwrap();
    let src = dir.path().join("src");
    uneven_tree(&src, 200);
    let (s, dst, json) = (src.to_str().unwrap(), dir.path().join("dst"), dir.path().join("j.json"));
    let (d, j) = (dst.to_str().unwrap(), json.to_str().unwrap());
    let said = |what: &str| {
        let v = load_json(&json);
        assert_eq!((s_of(&v, "cache"), s_of(&v, "until")), ("cold", "durable"), "{what}: {v}");
        assert!(v["sync_s"].as_f64().is_some(), "{what}: the syncfs is timed");
    };
    let r = mpirun(2, &["copy", "--cold", "--durable", s, d, "--threads", "2", "--json", j]);
    r.ok();
    assert!(r.stdout.contains("ranks: 2 on") && r.stdout.contains("timing: cold ("), "{}", r.stdout);
    said("copy");
    assert_same_tree(&src, &dst);
    let db = format!("sqlite:{}", dir.path().join("ix.db").display());
    mpirun(2, &["scan", "--cold", "--durable", "--db", &db, s, "--json", j]).ok();
    said("scan");
    mpirun(2, &["rm", "--cold", "--durable", d, "--json", j]).ok();
    said("rm");
    assert!(!dst.exists());
    let r = mpirun(2, &["scan", "--durable", s]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--durable: scan without --db writes nothing"), "{}", r.stderr);
}

/// Issue 28 under MPI: the tricky tree (hard links inside and across directories, sparse
/// files, xattrs of every namespace, ACLs, FIFO, socket, device nodes, 255-byte and
/// non-UTF-8 names, depth 200, owners, immutable and append-only files) copied and
/// synced by 2 ranks on ext4 keeps what one process keeps: `rsync -aHAXn
/// --itemize-changes` prints nothing, xattrs, ACLs, links, holes and flags equal, no
/// loss reported; an unchanged sync copies nothing; a sync after changing attributes
/// only fixes each.
#[test]
fn tricky_tree_under_mpirun_keeps_what_one_process_keeps() {
    let Some(_one_at_a_time) = mpi_one_at_a_time() else { return };
    if let Some(why) = tricky::ready(&["mkfs.ext4"]) {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root with the tools: {why}");
        eprintln!("skipped: {why}");
        return;
    }
    let spec = manyfiles::storage::fsspec::FsSpec::parse("ext4").unwrap();
    let fs = manyfiles::storage::managed::ManagedFs::create(&spec, 1 << 30).unwrap();
    let mp = fs.mount_point().to_path_buf();
    let src = mp.join("src");
    tricky::tricky_tree(&src, true);
    let s = src.to_str().unwrap();
    for np in [2, 3] {
        let dst = mp.join(format!("dst{np}"));
        let d = dst.to_str().unwrap();
        let json = mp.join(format!("c{np}.json"));
        let r = mpirun(np, &["copy", s, d, "--verify", "--json", json.to_str().unwrap()]);
        println!("{}{}", r.stdout, r.stderr);
        r.ok();
        let v = load_json(&json);
        assert!(v["losses"].as_array().is_none_or(|l| l.is_empty()), "np {np}: losses: {}", r.stdout);
        assert!(r.stdout.contains("0 differences"), "np {np}: {}", r.stdout);
        tricky::assert_same(&src, &dst, &format!("mpirun -np {np} copy"));
        let r = mpirun(np, &["sync", s, d]);
        r.ok();
        assert!(r.stdout.contains("copied 0 (0 B transferred), 0 dirs created"), "np {np}: {}", r.stdout);
    }
    // Attributes changed only (no byte, no mtime), a link removed and one made: fixed.
    tricky::sh(&format!(
        "cd '{s}' && setfattr -n user.one -v changed attrs && setfacl -m u:nobody:r attrs && chown 4343 zero && rm top-link && echo new > dir2/new && ln dir2/new dir1/new-link"
    ));
    let dst = mp.join("dst2");
    let r = mpirun(2, &["sync", s, dst.to_str().unwrap(), "--delete"]);
    r.ok();
    tricky::assert_same(&src, &dst, "mpirun -np 2 sync after changes");
    for d in ["src", "dst2", "dst3"] {
        tricky::unflag(&mp.join(d));
    }
}

/// Names of one inode spread over many directories fall to different ranks: each rank
/// copies the inode once, then rank 0 links the other ranks' names to the first copy.
/// One inode in DST for the 61 names, no loss, `rsync -aHn` finds nothing; a second
/// sync copies nothing and keeps them linked.
#[test]
fn hard_links_that_fall_to_different_ranks_stay_one_inode() {
    use std::os::unix::fs::MetadataExt;
    let Some(_one_at_a_time) = mpi_one_at_a_time() else { return };
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("shared"), b"one inode").unwrap();
    let mut names = vec!["shared".to_string()];
    for a in 0..60 {
        let d = src.join(format!("d{a:02}"));
        std::fs::create_dir_all(&d).unwrap();
        for f in 0..50 {
            std::fs::write(d.join(format!("f{f}")), [a as u8; 64]).unwrap();
        }
        std::fs::hard_link(src.join("shared"), d.join("link")).unwrap();
        names.push(format!("d{a:02}/link"));
    }
    let s = src.to_str().unwrap();
    for np in [2, 4] {
        let dst = dir.path().join(format!("dst{np}"));
        let d = dst.to_str().unwrap();
        let json = dir.path().join(format!("l{np}.json"));
        let r = mpirun(np, &["copy", s, d, "--threads", "1", "--json", json.to_str().unwrap()]);
        r.ok();
        let v = load_json(&json);
        assert!(v["losses"].as_array().is_none_or(|l| l.is_empty()), "np {np}: {}", r.stdout);
        let work: Vec<u64> = arr(&v["ranks"], "work").iter().map(|w| w.as_u64().unwrap()).collect();
        assert!(work.iter().filter(|w| **w > 0).count() >= 2, "np {np}: the names fell to several ranks: {work:?}");
        let inodes: std::collections::BTreeSet<u64> =
            names.iter().map(|n| std::fs::metadata(dst.join(n)).unwrap().ino()).collect();
        assert_eq!(inodes.len(), 1, "np {np}: one inode for {} names", names.len());
        assert_eq!(std::fs::metadata(dst.join("shared")).unwrap().nlink(), names.len() as u64);
        let rs = std::process::Command::new("rsync")
            .args(["-aHn", "--itemize-changes"])
            .arg(format!("{s}/"))
            .arg(format!("{d}/"))
            .output();
        if let Ok(o) = rs {
            assert!(o.stdout.is_empty(), "np {np}: rsync -aHn: {}", String::from_utf8_lossy(&o.stdout));
        }
        let r = mpirun(np, &["sync", s, d]);
        r.ok();
        assert!(r.stdout.contains("copied 0 (0 B transferred), 0 dirs created"), "np {np}: {}", r.stdout);
        assert_eq!(std::fs::metadata(dst.join("shared")).unwrap().nlink(), names.len() as u64);
    }
}
