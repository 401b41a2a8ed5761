//! `scan --inventory` then `gen --like`: the generated tree's inventory has the
//! original's shape. And the nextcloud-like preset, scaled.

mod common;

use common::{assert_bad_input, run};
use manyfiles::tree::inventory::Inventory;
use std::path::Path;

/// An irregular tree: directories at several depths with 0..60 files each, sizes from
/// 0 to ~1 MB, names of 3..40 bytes.
fn irregular_tree(root: &Path, seed: u64) {
    let mut x: u64 = seed;
    let mut next = move || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        x >> 33
    };
    let mut dirs = vec![root.to_path_buf()];
    for i in 0..60 {
        let parent = dirs[(next() as usize) % dirs.len()].clone();
        let name = format!("dir{i}{}", "x".repeat((next() % 12) as usize));
        let d = parent.join(name);
        std::fs::create_dir(&d).unwrap();
        dirs.push(d);
    }
    for (k, d) in dirs.iter().enumerate() {
        let n = match next() % 4 {
            0 => 0,
            1 => next() % 4,
            2 => next() % 16,
            _ => next() % 60,
        };
        for f in 0..n {
            let len = 3 + (next() % 38) as usize;
            let mut name = format!("{k}_{f}_");
            while name.len() < len {
                name.push('n');
            }
            let size = match next() % 5 {
                0 => 0,
                1 => next() % 100,
                2 => next() % 5000,
                3 => next() % 70_000,
                _ => next() % 1_000_000,
            };
            std::fs::write(d.join(name), vec![0u8; size as usize]).unwrap();
        }
    }
}

fn inventory_of(dir: &Path, out: &Path) -> Inventory {
    run(["scan", dir.to_str().unwrap(), "--inventory", out.to_str().unwrap()]).ok();
    Inventory::load(out).unwrap()
}

#[test]
fn gen_like_reproduces_the_inventory() {
    let base = tempfile::tempdir().unwrap();
    let orig = base.path().join("orig");
    std::fs::create_dir(&orig).unwrap();
    irregular_tree(&orig, 12345);
    // Hidden entries are part of the user's tree like any other.
    std::fs::write(orig.join(".hidden"), vec![1u8; 300]).unwrap();
    std::fs::create_dir(orig.join(".config")).unwrap();
    std::fs::write(orig.join(".config/.rc"), b"x").unwrap();
    let a = inventory_of(&orig, &base.path().join("a.json"));
    assert!(a.files > 500 && a.dirs == 62, "{} files {} dirs", a.files, a.dirs);
    let copy = base.path().join("copy");
    let a_path = base.path().join("a.json");
    run(["gen", copy.to_str().unwrap(), "--like", a_path.to_str().unwrap(), "-q", "--content", "zeros"]).ok();
    // Every entry on disk, hidden ones included: exactly the inventory's files and
    // directories (the root is not an entry), nothing of gen's own.
    let on_disk = common::walk(&copy, false);
    assert_eq!(on_disk.len() as u64, a.files + a.dirs - 1, "entries on disk");
    assert_eq!(on_disk.iter().filter(|e| !e.is_dir).count() as u64, a.files, "files on disk");
    assert_eq!(on_disk.iter().map(|e| if e.is_dir { 0 } else { e.size }).sum::<u64>(), a.total_bytes, "bytes on disk");
    let b = inventory_of(&copy, &base.path().join("b.json"));
    assert_eq!((b.files, b.dirs, b.symlinks, b.other), (a.files, a.dirs, 0, 0));
    assert_eq!(b.total_bytes, a.total_bytes, "bytes, exactly");
    assert_eq!(b.size_hist, a.size_hist, "file sizes, log2 buckets");
    assert_eq!(b.size_hist_bytes, a.size_hist_bytes, "bytes per size bucket");
    assert_eq!(b.files_per_dir_hist, a.files_per_dir_hist, "files per directory");
    assert_eq!(b.dir_depth_hist, a.dir_depth_hist, "directories per depth");
    assert_eq!(b.depth_hist, a.depth_hist, "files per depth");
    assert_eq!(b.subdirs_per_dir_hist, a.subdirs_per_dir_hist, "subdirectories per directory");
    assert_eq!(b.name_len_hist, a.name_len_hist, "name lengths");
    assert_eq!(b.max_depth, a.max_depth);
    // Nothing of the original's names is in the copy.
    let names: Vec<String> = walk_names(&copy);
    assert!(names.iter().all(|n| !n.starts_with("dir") && !n.contains("_n")), "{:?}", &names[..5]);

    // --scale: half the files and directories, the same proportions.
    let half = base.path().join("half");
    run(["gen", half.to_str().unwrap(), "--like", a_path.to_str().unwrap(), "--scale", "0.5", "-q"]).ok();
    let h = inventory_of(&half, &base.path().join("h.json"));
    assert_eq!(h.files, (a.files as f64 * 0.5).round() as u64);
    assert_eq!(h.dirs, (a.dirs as f64 * 0.5).round() as u64);
}

/// Exactness is not luck of one tree: other irregular trees (other depths, other mixes of
/// empty and full directories) round-trip exactly too.
#[test]
fn gen_like_is_exact_on_other_trees() {
    for seed in [1u64, 2, 3, 4, 5] {
        let base = tempfile::tempdir().unwrap();
        let orig = base.path().join("orig");
        std::fs::create_dir(&orig).unwrap();
        irregular_tree(&orig, seed);
        let a = inventory_of(&orig, &base.path().join("a.json"));
        let copy = base.path().join("copy");
        let a_path = base.path().join("a.json");
        run(["gen", copy.to_str().unwrap(), "--like", a_path.to_str().unwrap(), "-q", "--content", "zeros"]).ok();
        assert_eq!(common::walk(&copy, false).len() as u64, a.files + a.dirs - 1, "seed {seed}: entries on disk");
        let b = inventory_of(&copy, &base.path().join("b.json"));
        let hists = |i: &Inventory| {
            (
                (i.files, i.dirs, i.total_bytes, i.max_depth),
                (i.size_hist.clone(), i.size_hist_bytes.clone(), i.files_per_dir_hist.clone()),
                (
                    i.subdirs_per_dir_hist.clone(),
                    i.depth_hist.clone(),
                    i.dir_depth_hist.clone(),
                    i.name_len_hist.clone(),
                ),
            )
        };
        assert_eq!(hists(&b), hists(&a), "seed {seed}");
    }
}

fn walk_names(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        out.push(e.file_name().into_string().unwrap());
        if e.file_type().unwrap().is_dir() {
            out.extend(walk_names(&e.path()));
        }
    }
    out
}

#[test]
fn nextcloud_like_preset_scaled() {
    let base = tempfile::tempdir().unwrap();
    let t = base.path().join("nc");
    let r =
        run(["gen", t.to_str().unwrap(), "--tree", "nextcloud-like", "--scale", "0.01", "-q", "--content", "zeros"]);
    r.ok();
    let inv = inventory_of(&t, &base.path().join("nc.json"));
    assert_eq!(inv.files, 3139); // 313,860 × 0.01
    assert_eq!(inv.dirs, 417); // 41,732 × 0.01
    // 3,075 MB × 0.01, within the spread of drawing sizes inside their buckets.
    let rel = inv.total_bytes as f64 / 30.75e6 - 1.0;
    assert!(rel.abs() < 0.25, "{} bytes", inv.total_bytes);
}

#[test]
fn like_and_tree_bad_input() {
    let base = tempfile::tempdir().unwrap();
    let d = base.path().join("g");
    let g = d.to_str().unwrap();
    let notinv = base.path().join("x.json");
    std::fs::write(&notinv, "{\"a\": 1}").unwrap();
    let x = notinv.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["gen", g, "--like", "/nonexistent.json"], "--like"),
        (vec!["gen", g, "--like", x], "--like"),
        (vec!["gen", g, "--tree", "bogus"], "--tree"),
        (vec!["gen", g, "--tree", "nextcloud-like", "--scale", "0"], "--scale"),
        (vec!["gen", g, "--tree", "nextcloud-like", "--scale", "nan"], "--scale"),
        (vec!["gen", g, "--scale", "2"], "--scale"),
        (vec!["gen", g, "--tree", "nextcloud-like", "--files", "10"], "--files"),
    ];
    for (args, flag) in cases {
        let r = run(&args);
        assert_bad_input(&r, flag, &args.join(" "));
        assert!(!d.exists(), "{}: created the directory", args.join(" "));
    }
}
