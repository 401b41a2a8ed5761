//! `manyfiles plan`: allocated space and slack per cluster size equal a brute-force sum
//! over the files; an inventory gives the same figures for the sizes it holds and
//! refuses others; a clusters model adds write times and drives the recommendation.

mod common;

use common::*;
use manyfiles::tree::inventory::Inventory;
use serde_json::Value;
use std::path::Path;

const SIZES: [u64; 10] = [0, 1, 511, 512, 513, 3000, 4095, 4096, 10_000, 70_000];

fn make_tree(root: &Path) {
    for (i, &s) in SIZES.iter().enumerate() {
        let d = root.join(format!("d{}", i % 3)).join(format!("e{}", i % 2));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("f{i}")), vec![7u8; s as usize]).unwrap();
    }
    // A symlink is not a file (and not followed).
    std::os::unix::fs::symlink("/usr", root.join("link")).unwrap();
}

fn plan_json(args: &[&str], out: &Path) -> (Run, Value) {
    let mut a = vec!["plan"];
    a.extend(args);
    a.extend(["--json", out.to_str().unwrap()]);
    let r = run(&a);
    r.ok();
    (r, load_json(out))
}

#[test]
fn slack_equals_brute_force() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    make_tree(&tree);
    let clusters = [512u64, 1024, 3072, 4096, 65536];
    let (r, v) = plan_json(&[tree.to_str().unwrap(), "--cluster", "512,1k,3k,4k,64k"], &tmp.path().join("p.json"));
    let data: u64 = SIZES.iter().sum();
    assert_eq!(u(&v, "files"), SIZES.len() as u64);
    assert_eq!(u(&v, "bytes"), data);
    let rows = arr(&v, "rows");
    assert_eq!(rows.len(), clusters.len());
    for (row, c) in rows.iter().zip(clusters) {
        let brute: u64 = SIZES.iter().map(|s| s.div_ceil(c) * c).sum();
        assert_eq!(u(row, "cluster_bytes"), c);
        assert_eq!(u(row, "allocated_bytes"), brute, "cluster {c}");
        assert_eq!(u(row, "slack_bytes"), brute - data, "cluster {c}");
        assert!((f(row, "slack_share") - (brute - data) as f64 / brute as f64).abs() < 1e-12);
    }
    assert!(r.stdout.contains("recommendation: "), "{}", r.stdout);
    assert!(v["recommended_cluster"].as_u64().is_some());

    // The inventory gives the same figures for the cluster sizes it holds.
    let inv = Inventory::scan(&tree, 2).unwrap();
    let invp = tmp.path().join("inv.json");
    inv.save(&invp).unwrap();
    let (_, w) =
        plan_json(&["--inventory", invp.to_str().unwrap(), "--cluster", "512,4k,64k"], &tmp.path().join("q.json"));
    for row in arr(&w, "rows") {
        let c = u(row, "cluster_bytes");
        let brute: u64 = SIZES.iter().map(|s| s.div_ceil(c) * c).sum();
        assert_eq!(u(row, "allocated_bytes"), brute, "inventory, cluster {c}");
    }
    // … and refuses a size it does not hold; nothing is written.
    let none = tmp.path().join("none.json");
    let r = run(["plan", "--inventory", invp.to_str().unwrap(), "--cluster", "3k", "--json", none.to_str().unwrap()]);
    assert_bad_input(&r, "--cluster", "3k not in the inventory");
    assert!(!none.exists());
    assert_bad_input(&run(["plan", tree.to_str().unwrap(), "--cluster", "0"]), "--cluster", "zero cluster");
    assert_bad_input(&run(["plan", tmp.path().join("nope").to_str().unwrap()]), "PATH", "missing tree");
}

#[test]
fn model_predicts_write_time_and_recommends() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    make_tree(&tree);
    // A small ladder as the "clusters" model: its target as 4 KiB clusters, and a copy
    // of it as 1 KiB clusters that takes 3× as long.
    let json = tmp.path().join("l.json");
    let a = format!(
        "ladder --total 256k --to 256 --runs 3 --target {} --json {} --quiet",
        tmp.path().display(),
        json.display()
    );
    run(words(&a)).ok();
    let mut rs: manyfiles::results::ResultSet = serde_json::from_value(load_json(&json)).unwrap();
    // Known times with 0.1% scatter, so the 95% intervals are tight and the verdict certain.
    for m in &mut rs.measurements {
        let exact = 1e-4 * m.tree_files as f64 + 1e-9 * m.tree_bytes as f64;
        m.result.elapsed_s = exact * (1.0 + 0.001 * (m.run as f64 - 2.0));
    }
    rs.targets[0].block_size = 4096;
    let mut slow = rs.targets[0].clone();
    slow.id = "slow".into();
    slow.block_size = 1024;
    rs.targets.push(slow);
    let copies: Vec<_> = rs
        .measurements
        .iter()
        .map(|m| {
            let mut m = m.clone();
            m.target = "slow".into();
            m.result.elapsed_s *= 3.0;
            m
        })
        .collect();
    rs.measurements.extend(copies);
    rs.derive();
    let model = tmp.path().join("model.json");
    std::fs::write(&model, serde_json::to_vec(&rs).unwrap()).unwrap();

    let (r, v) = plan_json(
        &[tree.to_str().unwrap(), "--cluster", "1k,4k,64k", "--model", model.to_str().unwrap()],
        &tmp.path().join("p.json"),
    );
    let rows = arr(&v, "rows");
    let t = |c: u64| rows.iter().find(|r| u(r, "cluster_bytes") == c).unwrap()["write_time"].clone();
    let (t1, t4) = (f(&t(1024), "seconds"), f(&t(4096), "seconds"));
    assert!(((t1 / t4) - 3.0).abs() < 1e-6, "{t1} vs {t4}");
    assert!(t(65536).is_null(), "no model for 64k");
    assert_eq!(v["recommended_cluster"].as_u64(), Some(4096), "{}", r.stdout);
    assert!(r.stdout.contains("no model for this cluster size"), "{}", r.stdout);
    // A model without any matching cluster size is refused.
    let r = run(["plan", tree.to_str().unwrap(), "--cluster", "64k", "--model", model.to_str().unwrap()]);
    assert_bad_input(&r, "--model", "no matching cluster size");
}

/// `plan --fs exfat|ntfs` counts what df shows after a real copy: a mixed tree (empty,
/// tiny, resident-sized and larger files, long and non-ASCII names, a directory of 600
/// entries, empty directories) copied with `cp -r` onto fresh exFAT and NTFS file
/// systems at several cluster sizes; the used space grows by the plan's allocation
/// within 5% (issue 29). Needs root and exfatprogs, exfat-fuse, ntfs-3g.
#[test]
fn plan_fs_matches_df_after_a_real_copy() {
    use manyfiles::storage::fsspec::FsSpec;
    use manyfiles::storage::managed::ManagedFs;
    let have = |t: &str| {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {t}"))
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let missing: Vec<&str> =
        ["mkfs.exfat", "mount.exfat-fuse", "mkfs.ntfs", "ntfs-3g"].into_iter().filter(|t| !have(t)).collect();
    if !is_root() || !missing.is_empty() {
        let why = if is_root() { format!("{missing:?} not found") } else { "needs root".into() };
        assert!(std::env::var_os("CI").is_none(), "CI must run this: {why}");
        eprintln!("skipped: plan_fs_matches_df_after_a_real_copy: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    let sizes = [0usize, 100, 600, 700, 2000, 5000, 40_000, 300_000];
    for d in 0..30 {
        let dir = tree.join(format!("dir-{d}")).join(if d % 3 == 0 { "sub-ä-директория" } else { "sub" });
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..40 {
            let name = format!("file-{i:03}-{}", "n".repeat(i % 37));
            std::fs::write(dir.join(name), vec![b'x'; sizes[(i + d) % sizes.len()]]).unwrap();
        }
    }
    let big = tree.join("big");
    std::fs::create_dir_all(&big).unwrap();
    for i in 0..600 {
        std::fs::write(big.join(format!("entry-with-a-longer-name-{i:04}")), vec![b'y'; (i % 5) * 900]).unwrap();
    }
    for e in 0..20 {
        std::fs::create_dir_all(tree.join(format!("empty-{e}"))).unwrap();
    }
    let used = |p: &Path| {
        let v = rustix::fs::statvfs(p).unwrap();
        (v.f_blocks - v.f_bfree) * v.f_frsize
    };
    for spec in ["exfat:4k", "exfat:32k", "exfat:64k", "ntfs:4k", "ntfs:64k"] {
        let (fs, cluster) = spec.split_once(':').unwrap();
        let cluster = parse_printed_size(&cluster[..cluster.len() - 1], "KiB") as u64;
        let json = tmp.path().join(format!("plan-{fs}-{cluster}.json"));
        let (_, v) = plan_json(&[tree.to_str().unwrap(), "--fs", fs, "--cluster", &cluster.to_string()], &json);
        let planned = u(&arr(&v, "rows")[0], "allocated_bytes");
        let m = ManagedFs::create(&FsSpec::parse(spec).unwrap(), 1 << 30).unwrap_or_else(|e| panic!("{spec}: {e}"));
        let mnt = m.mount_point().to_path_buf();
        let before = used(&mnt);
        let cp = std::process::Command::new("cp").arg("-r").arg(&tree).arg(mnt.join("t")).status().unwrap();
        assert!(cp.success(), "{spec}: cp -r");
        rustix::fs::sync();
        let grew = used(&mnt) - before;
        let err = planned as f64 / grew as f64 - 1.0;
        eprintln!("{spec}: plan {planned}, df grew {grew}: {:+.2}%", err * 100.0);
        assert!(err.abs() <= 0.05, "{spec}: plan {planned} bytes, df grew {grew} ({:+.1}%)", err * 100.0);
        drop(m);
    }
    // An inventory has no names: --fs needs PATH.
    let r = run(["plan", "--inventory", "x.json", "--fs", "exfat"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
}
