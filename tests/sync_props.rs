//! Property tests of sync over seeded random trees and mutations: after a sync DST
//! equals SRC (content, mode, mtime, symlink targets), a second sync copies nothing,
//! deletes happen only with --delete, and a symlink in DST pointing outside is removed,
//! never followed.

mod copy_common;
use copy_common::*;
use std::path::Path;

fn n(v: &serde_json::Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v}"))
}

#[test]
fn sync_makes_dst_equal_src_over_random_trees_and_mutations() {
    for seed in 1..=6u64 {
        let t = tempfile::tempdir().unwrap();
        let (src, dst) = (t.path().join("src"), t.path().join("dst"));
        gen_tree(&src, seed, 120);
        let (code, s, out) = run_json("sync", &src, &dst, &[]);
        assert_eq!(code, 0, "seed {seed}: {out}");
        assert_same(&src, &dst);
        assert!(n(&s, "copied") > 0);

        // Second sync: nothing to do.
        let (code, s, out) = run_json("sync", &src, &dst, &[]);
        assert_eq!(code, 0, "{out}");
        assert_eq!((n(&s, "copied"), n(&s, "deleted"), n(&s, "dirs_created")), (0, 0, 0), "seed {seed}: {s}");
        assert_eq!(n(&s, "skipped"), n(&s, "src_entries") - n(&s, "src_dirs"), "{s}");

        for round in 0..3u64 {
            mutate(&src, seed * 10 + round, 12);
            // Dry run: reports, changes nothing.
            let before = snapshot(&dst);
            let (code, dry, out) = run_json("sync", &src, &dst, &["--dry-run", "--delete"]);
            assert_eq!(code, 0, "{out}");
            assert_eq!(before, snapshot(&dst), "seed {seed}: a dry run changed DST");
            let (code, s, out) = run_json("sync", &src, &dst, &["--delete"]);
            assert_eq!(code, 0, "seed {seed} round {round}: {out}");
            assert_same(&src, &dst);
            assert_eq!(n(&dry, "copied"), n(&s, "copied"), "dry run predicted the copies: {dry} vs {s}");
            let (_, s, _) = run_json("sync", &src, &dst, &["--delete"]);
            assert_eq!((n(&s, "copied"), n(&s, "deleted")), (0, 0), "seed {seed} round {round}: second sync {s}");
        }
    }
}

#[test]
fn without_delete_extraneous_entries_are_kept_and_counted() {
    let t = tempfile::tempdir().unwrap();
    let (src, dst) = (t.path().join("src"), t.path().join("dst"));
    gen_tree(&src, 42, 40);
    assert_eq!(run_json("sync", &src, &dst, &[]).0, 0);
    std::fs::write(dst.join("extra file"), b"mine").unwrap();
    std::fs::create_dir(dst.join("extra dir")).unwrap();
    let (code, s, out) = run_json("sync", &src, &dst, &[]);
    assert_eq!(code, 0, "{out}");
    assert_eq!((n(&s, "extraneous"), n(&s, "deleted")), (2, 0), "{s}");
    assert!(dst.join("extra file").exists() && dst.join("extra dir").exists());
    let (_, s, _) = run_json("sync", &src, &dst, &["--delete"]);
    assert_eq!(n(&s, "deleted"), 2, "{s}");
    assert_same(&src, &dst);
}

#[test]
fn checksum_finds_changes_that_keep_size_and_mtime() {
    let t = tempfile::tempdir().unwrap();
    let (src, dst) = (t.path().join("src"), t.path().join("dst"));
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("f"), b"aaaa").unwrap();
    set_mtime(&src.join("f"), 1_600_000_000, 5);
    assert_eq!(run_json("sync", &src, &dst, &[]).0, 0);
    std::fs::write(dst.join("f"), b"bbbb").unwrap();
    set_mtime(&dst.join("f"), 1_600_000_000, 5);
    let (_, s, _) = run_json("sync", &src, &dst, &[]);
    assert_eq!(n(&s, "copied"), 0, "size + mtime cannot see it: {s}");
    let (code, s, out) = run_json("sync", &src, &dst, &["--checksum"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(n(&s, "copied"), 1, "{s}");
    assert_eq!(std::fs::read(dst.join("f")).unwrap(), b"aaaa");
}

#[test]
fn a_symlink_in_dst_pointing_outside_is_never_followed() {
    let t = tempfile::tempdir().unwrap();
    let (src, dst, outside) = (t.path().join("src"), t.path().join("dst"), t.path().join("outside"));
    std::fs::create_dir_all(src.join("sub")).unwrap();
    std::fs::write(src.join("sub/f"), b"x").unwrap();
    std::fs::create_dir_all(outside.join("inner")).unwrap();
    std::fs::write(outside.join("precious"), b"keep").unwrap();
    std::fs::write(outside.join("inner/also"), b"keep").unwrap();
    std::fs::create_dir(&dst).unwrap();
    // Extraneous symlink to a directory outside, and a symlink where SRC has a directory.
    std::os::unix::fs::symlink(&outside, dst.join("evil")).unwrap();
    std::os::unix::fs::symlink(&outside, dst.join("sub")).unwrap();
    let (code, s, out) = run_json("sync", &src, &dst, &["--delete"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(n(&s, "deleted"), 2, "{s}");
    assert!(outside.join("precious").exists() && outside.join("inner/also").exists(), "followed a symlink");
    assert!(!outside.join("f").exists(), "wrote through a symlink");
    assert_same(&src, &dst);
}

#[test]
fn stale_temporary_files_are_removed_and_never_left_behind() {
    let t = tempfile::tempdir().unwrap();
    let (src, dst) = (t.path().join("src"), t.path().join("dst"));
    gen_tree(&src, 7, 30);
    assert_eq!(run_json("sync", &src, &dst, &[]).0, 0);
    // What a killed sync leaves: a temporary file. The next sync removes it (it is ours).
    std::fs::write(dst.join(".manyfiles-tmp.1.2"), b"partial").unwrap();
    let (code, s, _) = run_json("sync", &src, &dst, &[]);
    assert_eq!(code, 0);
    assert_eq!(n(&s, "deleted"), 1, "{s}");
    assert_same(&src, &dst);
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    let cases: Vec<(Vec<&std::ffi::OsStr>, &str)> = vec![
        (vec!["sync".as_ref(), src.as_os_str(), src.join("a/inside").as_os_str().to_owned().leak()], "overlap"),
        (vec!["sync".as_ref(), src.join("a").as_os_str().to_owned().leak(), src.as_os_str()], "overlap"),
        (
            vec![
                "sync".as_ref(),
                t.path().join("nope").as_os_str().to_owned().leak(),
                t.path().join("d").as_os_str().to_owned().leak(),
            ],
            "SRC",
        ),
        (vec!["sync".as_ref(), src.as_os_str(), Path::new("/nonexistent/x/y").as_os_str()], "DST"),
        (
            vec![
                "sync".as_ref(),
                src.as_os_str(),
                t.path().join("d").as_os_str().to_owned().leak(),
                "--threads".as_ref(),
                "0".as_ref(),
            ],
            "--threads",
        ),
    ];
    for (args, want) in cases {
        let (code, out, err) = mf(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(want) && err.lines().count() == 1, "{args:?}: {err}");
    }
    assert!(!src.join("a/inside").exists() && !t.path().join("d").exists());
}
