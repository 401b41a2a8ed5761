//! `manyfiles predict`: on a synthetic inventory the prediction equals the fitted
//! formula a·files + b·bytes + c·dirs, with an interval around it; extrapolation is
//! said plainly; sync ops get a recovery point; bad input is refused; `--on DIR`
//! calibrates with trees shaped like the tree and predicts copy, read, scan and delete.

mod common;

use common::*;
use manyfiles::tree::inventory::Inventory;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn ladder(dir: &Path) -> PathBuf {
    ladder_with(dir, "")
}

/// A ladder with `extra` flags (`--mock-timing …`: synthetic times, so the fits are
/// answers whatever the machine does; a fit that is not is never used, issue 40).
fn ladder_with(dir: &Path, extra: &str) -> PathBuf {
    let json = dir.join("l.json");
    let a = format!(
        "ladder --total 256k --second-total off --to 256 --runs 2 --target {} --json {} --quiet {extra}",
        dir.display(),
        json.display()
    );
    run(words(&a)).ok();
    json
}

/// predict's exit: 0, or 1 when no fit passed its check (on a loaded machine: the rows
/// say why, and the table and the JSON are written all the same); anything else fails.
fn predicted(r: &Run) {
    if r.code == Some(1) && r.stderr.contains("predictions is usable: every fit failed its check") {
        eprintln!("note: no fit passed its check here (a loaded machine?): exit 1, as it should be");
        return;
    }
    r.ok();
}

fn inventory(dir: &Path, name: &str, files: u64, bytes: u64, dirs: u64) -> PathBuf {
    let mut inv = Inventory::empty();
    inv.files = files;
    inv.total_bytes = bytes;
    inv.dirs = dirs;
    let p = dir.join(name);
    inv.save(&p).unwrap();
    p
}

fn predict_json(model: &Path, inv: &Path, extra: &[&str]) -> (Run, Value) {
    let out = inv.with_extension("pred.json");
    let mut a = vec!["predict", "--model", model.to_str().unwrap(), "--inventory", inv.to_str().unwrap()];
    a.extend(["--json", out.to_str().unwrap()]);
    a.extend(extra);
    let r = run(&a);
    predicted(&r);
    let v = load_json(&out);
    (r, v)
}

#[test]
fn prediction_equals_the_formula() {
    let tmp = tempfile::tempdir().unwrap();
    let model = ladder(tmp.path());
    let rs = load_json(&model);
    let (files, bytes, dirs) = (100_000u64, 3_000_000_000u64, 400u64);
    let inv = inventory(tmp.path(), "big.json", files, bytes, dirs);
    let (r, v) = predict_json(&model, &inv, &[]);
    let preds = arr(&v, "predictions");
    assert_eq!(preds.len(), arr(&rs, "models").len());
    for p in preds {
        let m = arr(&rs, "models").iter().find(|m| m["op"] == p["op"] && m["target"] == p["target"]).unwrap();
        let want =
            f(m, "per_file_s") * files as f64 + f(m, "per_byte_s") * bytes as f64 + f(m, "per_dir_s") * dirs as f64;
        let got = f(p, "seconds");
        assert!(((got - want) / want).abs() < 1e-12, "{}: {got} vs {want}", s(p, "op"));
        let iv = p["interval95"].as_array().unwrap();
        assert!(iv[0].as_f64().unwrap() <= got && got <= iv[1].as_f64().unwrap());
        // 100,000 files is beyond the ladder's 256: said plainly, with the factor (the
        // bytes, 11,444× the ladder's fixed total, are farther out and come first).
        let why: Vec<&str> = arr(p, "extrapolation").iter().map(|w| w.as_str().unwrap()).collect();
        assert!(why.iter().any(|w| w.contains("391× on files")), "{why:?}");
        assert!(p["reach"]["outside"].as_bool().unwrap(), "{p:#}");
    }
    assert!(r.stdout.contains("OUTSIDE (extrapolation)") && r.stdout.contains("warning:"), "{}", r.stdout);
    assert!(r.stdout.contains("model: ") && r.stdout.contains("machine: "), "provenance: {}", r.stdout);

    // Inside the calibrated range (the ladder's own total, a file count between rungs).
    let dirs_in = arr(&rs, "models")[0]["dirs_range"][0].as_u64().unwrap();
    let inside = inventory(tmp.path(), "in.json", 100, 256 * 1024, dirs_in);
    let (r, v) = predict_json(&model, &inside, &[]);
    assert!(arr(&v, "predictions").iter().all(|p| arr(p, "extrapolation").is_empty()), "{v:#}");
    assert!(!r.stdout.contains("OUTSIDE"), "{}", r.stdout);
}

#[test]
fn sync_ops_get_a_recovery_point() {
    let tmp = tempfile::tempdir().unwrap();
    let model = ladder_with(tmp.path(), "--mock-timing cv=0.03,seed=4");
    // The same figures under a sync op's name (sync comes from another experiment).
    let mut rs = load_json(&model);
    for m in rs["models"].as_array_mut().unwrap() {
        if m["op"] == "create" {
            m["op"] = Value::from("sync");
        }
    }
    let synced = tmp.path().join("sync.json");
    std::fs::write(&synced, serde_json::to_vec(&rs).unwrap()).unwrap();
    let inv = inventory(tmp.path(), "inv.json", 1000, 10_000_000, 10);
    let (r, v) = predict_json(&synced, &inv, &["--interval", "15m"]);
    let p = arr(&v, "predictions").iter().find(|p| p["op"] == "sync").unwrap();
    let rp = p["recovery_point_s"].as_array().unwrap();
    assert!((rp[0].as_f64().unwrap() - (900.0 + f(p, "seconds"))).abs() < 1e-9);
    assert!(rp[1].as_f64().unwrap() >= rp[0].as_f64().unwrap());
    assert!(r.stdout.contains("recovery point"), "{}", r.stdout);
    assert!(arr(&v, "predictions").iter().filter(|p| p["op"] != "sync").all(|p| p["recovery_point_s"].is_null()));
}

#[test]
fn a_level_narrows_the_printed_interval_and_keeps_the_95_percent_one() {
    // `--level 90%`: the interval printed and in `interval` is the 90% one, inside the
    // 95% one the JSON keeps as `interval95`; the table and the note say 90%.
    let tmp = tempfile::tempdir().unwrap();
    // Synthetic times, so that a loaded machine does not make the fit no answer.
    let model = ladder_with(tmp.path(), "--mock-timing cv=0.03,seed=4");
    let inv = inventory(tmp.path(), "inv.json", 100, 256 * 1024, 1);
    let (r95, v95) = predict_json(&model, &inv, &[]);
    let (r90, v90) = predict_json(&model, &inv, &["--level", "90%"]);
    assert_eq!(f(&v95, "level"), 0.95);
    assert_eq!(f(&v90, "level"), 0.9);
    let pair = |p: &Value, k: &str| [p[k][0].as_f64().unwrap(), p[k][1].as_f64().unwrap()];
    let mut narrower = 0;
    for (a, b) in arr(&v95, "predictions").iter().zip(arr(&v90, "predictions")) {
        assert_eq!((&a["op"], &a["seconds"], &a["interval95"]), (&b["op"], &b["seconds"], &b["interval95"]));
        assert_eq!(pair(a, "interval"), pair(a, "interval95"), "at 95% the two are one");
        let ([lo, hi], [lo95, hi95], x) = (pair(b, "interval"), pair(b, "interval95"), f(b, "seconds"));
        assert!(lo95 <= lo && lo <= x && x <= hi && hi <= hi95, "90% [{lo}, {hi}] inside 95% [{lo95}, {hi95}]");
        narrower += usize::from(hi - lo < hi95 - lo95);
    }
    assert!(narrower > 0, "no interval narrowed at 90%: {v90:#}");
    assert!(r95.stdout.contains("(95% interval)") && r95.stdout.contains("Student t, 95%"), "{}", r95.stdout);
    assert!(r90.stdout.contains("(90% interval)") && r90.stdout.contains("Student t, 90%"), "{}", r90.stdout);
    let m = model.to_str().unwrap();
    let i = inv.to_str().unwrap();
    for bad in ["0.9", "100%", "40%", "ninety"] {
        assert_bad_input(&run(["predict", "--model", m, "--inventory", i, "--level", bad]), "--level", bad);
    }
}

#[test]
fn predict_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let model = ladder(tmp.path());
    let inv = inventory(tmp.path(), "inv.json", 10, 10, 1);
    let m = model.to_str().unwrap();
    let i = inv.to_str().unwrap();
    assert_bad_input(
        &run(["predict", "--model", m, "--inventory", i, "--interval", "soon"]),
        "--interval",
        "bad duration",
    );
    let missing = tmp.path().join("none");
    assert_bad_input(
        &run(["predict", "--model", missing.to_str().unwrap(), "--inventory", i]),
        "--model",
        "missing model",
    );
    assert_bad_input(&run(["predict", "--model", m, "--inventory", m]), "--inventory", "not an inventory");
    assert_bad_input(&run(["predict", "--model", m, "--tree", missing.to_str().unwrap()]), "--tree", "missing tree");
    // Prices are for an object store's calibration, not a ladder's model.
    let prices = tmp.path().join("prices.toml");
    std::fs::write(&prices, "name = \"x\"\n").unwrap();
    let r = run(["predict", "--model", m, "--inventory", i, "--prices", prices.to_str().unwrap()]);
    assert_bad_input(&r, "--prices", "prices with a ladder's model");
    // A result without models (one tree shape) cannot predict.
    let ops = tmp.path().join("ops.json");
    let a = format!("ops --files 50 --runs 1 --target {} --json {} --quiet", tmp.path().display(), ops.display());
    run(words(&a)).ok();
    assert_bad_input(&run(["predict", "--model", ops.to_str().unwrap(), "--inventory", i]), "--model", "no model");
    // --tree walks a real directory: same shape as its inventory.
    let tree = tmp.path().join("tree");
    std::fs::create_dir_all(tree.join("a/b")).unwrap();
    std::fs::write(tree.join("a/x"), vec![0u8; 5000]).unwrap();
    std::fs::write(tree.join("a/b/y"), vec![0u8; 7]).unwrap();
    let out = tmp.path().join("t.json");
    predicted(&run(["predict", "--model", m, "--tree", tree.to_str().unwrap(), "--json", out.to_str().unwrap()]));
    let v = load_json(&out);
    assert_eq!((u(&v["tree"], "files"), u(&v["tree"], "bytes"), u(&v["tree"], "dirs")), (2, 5007, 3));
}

#[test]
fn old_result_and_inventory_files_load() {
    let tmp = tempfile::tempdir().unwrap();
    let model = ladder(tmp.path());
    // As an older version wrote them: no cells, no directory-size term, 3×3 covariance.
    let mut rs = load_json(&model);
    for m in rs["models"].as_array_mut().unwrap() {
        let o = m.as_object_mut().unwrap();
        for k in [
            "per_dir_entry_s",
            "per_dir_entry_se",
            "aicc_plain",
            "aicc_dir_entry",
            "cells",
            "interval_method",
            "cv_log_errors",
            "cv_log_sd",
            "param_rel_var_mean",
            "max_files_per_dir_range",
        ] {
            o.remove(k);
        }
        o.insert("covariance".into(), serde_json::json!([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]));
        o.insert("constrained".into(), serde_json::json!(["per_dir"]));
    }
    let old = tmp.path().join("old.json");
    std::fs::write(&old, serde_json::to_vec(&rs).unwrap()).unwrap();
    let mut inv = Inventory::empty();
    (inv.files, inv.total_bytes, inv.dirs) = (1000, 1_000_000, 2);
    inv.files_per_dir_hist = vec![1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]; // root empty, one dir of 512…1023
    let mut v = serde_json::to_value(&inv).unwrap();
    v.as_object_mut().unwrap().remove("files_per_dir_sq_sum");
    v.as_object_mut().unwrap().remove("max_files_per_dir");
    let inv_path = tmp.path().join("old-inv.json");
    std::fs::write(&inv_path, serde_json::to_vec(&v).unwrap()).unwrap();
    let (_, p) = predict_json(&old, &inv_path, &[]);
    // The models were fitted again (cells), and the old inventory's histogram gives Σn².
    assert!(arr(&p, "predictions").iter().all(|x| x["interval95"].is_array()), "{p:#}");
    let sq = f(&p["tree"], "dir_sq");
    assert!(sq > 512.0 * 512.0 && sq < 1023.0 * 1023.0, "{sq}");
    assert_eq!(u(&p["tree"], "max_files_per_dir"), 1023);
    let md = tmp.path().join("old.md");
    run(["report", old.to_str().unwrap(), "--markdown", md.to_str().unwrap()]).ok();
    assert!(std::fs::read_to_string(&md).unwrap().contains("per file"));
}

/// A tree not shaped like a ladder: 40 directories on two levels holding 1, 3, 12, 5 or
/// 30 files of 0.5–9.5 kB.
fn odd_tree(root: &Path) -> Inventory {
    for d in 0..40usize {
        let dir = root.join(format!("d{}/s{d}", d % 7));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..[1, 3, 12, 5, 30][d % 5] {
            std::fs::write(dir.join(format!("f{i}")), vec![b'x'; 500 + (i * 977) % 9000]).unwrap();
        }
    }
    Inventory::scan(root, 2).unwrap()
}

/// Share of directories per log2 bucket of their file count.
fn shares(hist: &[u64]) -> Vec<f64> {
    let n = hist.iter().sum::<u64>().max(1) as f64;
    hist.iter().map(|&c| c as f64 / n).collect()
}

#[test]
fn predict_calibrates_on_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    let inv = odd_tree(&tree);
    let on = tmp.path().join("on");
    std::fs::create_dir(&on).unwrap();
    let (cal, out) = (tmp.path().join("cal.json"), tmp.path().join("pred.json"));
    let args = [
        "predict",
        "--tree",
        tree.to_str().unwrap(),
        "--on",
        on.to_str().unwrap(),
        "--max-time",
        "20s",
        "--quiet",
        "--save-calibration",
        cal.to_str().unwrap(),
        "--json",
        out.to_str().unwrap(),
    ];
    let r = run(args);
    predicted(&r);
    // Rows for copy, read, scan (the scan engine's walk) and rm, each with an interval around its point.
    let v = load_json(&out);
    assert_eq!(u(&v, "runs_ahead"), 1);
    assert_eq!((u(&v["tree"], "files"), u(&v["tree"], "dirs")), (inv.files, inv.dirs));
    let preds = arr(&v, "predictions");
    for op in ["copy", "read", "walk", "rm"] {
        let p = preds.iter().find(|p| p["op"] == op).unwrap_or_else(|| panic!("no {op} row: {v:#}"));
        let (x, iv) = (f(p, "seconds"), p["interval95"].as_array().expect("an interval"));
        let (lo, hi) = (iv[0].as_f64().unwrap(), iv[1].as_f64().unwrap());
        assert!(0.0 < lo && lo <= x && x <= hi, "{op}: {lo} {x} {hi}");
        // PATH's own shape was calibrated: no extrapolation, and its reach is known.
        assert!(arr(p, "extrapolation").is_empty(), "{op}: {p:#}");
        assert!(f(&p["reach"], "distance_ratio") <= 1.1, "{op}: {p:#}");
    }
    for w in [
        "copy (onto the target)",
        "scan (walk + statx)",
        "read",
        "rm (the whole tree)",
        "predicted time of one run",
        "check, one run each, on the target (the copy makes the destination, the rm removes it):",
    ] {
        assert!(r.stdout.contains(w), "{w}: {}", r.stdout);
    }
    assert!(!r.stdout.contains("OUTSIDE"), "{}", r.stdout);
    // Nothing left on the target.
    assert!(std::fs::read_dir(&on).unwrap().next().is_none(), "run directory left in {}", on.display());

    // The calibration's trees follow the tree's files-per-directory histogram: the
    // trees with its files per directory (k = 1) hold the same shares (±0.1).
    let rs = load_json(&cal);
    let want = shares(&inv.files_per_dir_hist);
    let mut same_shape = 0;
    let mut keys: Vec<&str> = Vec::new();
    for m in arr(&rs, "measurements") {
        if keys.contains(&s(m, "tree_key")) {
            continue;
        }
        keys.push(s(m, "tree_key"));
        let got = shares(
            &arr(&m["tree"]["layout"]["shape"], "files_per_dir")
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect::<Vec<_>>(),
        );
        let close = (0..want.len().max(got.len()))
            .all(|k| (want.get(k).copied().unwrap_or(0.0) - got.get(k).copied().unwrap_or(0.0)).abs() <= 0.1);
        same_shape += usize::from(close);
    }
    assert!(keys.len() >= 7, "{keys:?}");
    assert!(same_shape >= 3, "{same_shape} of {} calibration trees follow the tree's histogram", keys.len());
    // The calibration copies on as many threads as the user's check `manyfiles copy`
    // (two a core by default): with the cores alone its copies were 12–15% slower.
    let (dst, summary) = (tmp.path().join("check"), tmp.path().join("check.json"));
    run(["copy", "--quiet", "--json", summary.to_str().unwrap(), tree.to_str().unwrap(), dst.to_str().unwrap()]).ok();
    let check_threads = u(&load_json(&summary), "threads");
    std::fs::remove_dir_all(&dst).unwrap();
    let copies: Vec<u64> =
        arr(&rs, "measurements").iter().filter(|m| m["op"] == "copy").map(|m| u(m, "threads")).collect();
    assert!(!copies.is_empty() && copies.iter().all(|&t| t == check_threads), "{copies:?} vs {check_threads}");
    // --model reproduces the prediction from the saved calibration (exit 1 again when no
    // fit passed its check above: a loaded machine; the JSON is written either way).
    let again = tmp.path().join("again.json");
    predicted(&run([
        "predict",
        "--model",
        cal.to_str().unwrap(),
        "--tree",
        tree.to_str().unwrap(),
        "--json",
        again.to_str().unwrap(),
    ]));
    let w = load_json(&again);
    for (a, b) in preds.iter().zip(arr(&w, "predictions")) {
        assert_eq!((&a["op"], &a["seconds"], &a["interval95"]), (&b["op"], &b["seconds"], &b["interval95"]));
    }
    // --runs-ahead 5: the median of 5 runs, a narrower interval around the same point.
    let five = tmp.path().join("five.json");
    let m = cal.to_str().unwrap();
    predicted(&run([
        "predict",
        "--model",
        m,
        "--tree",
        tree.to_str().unwrap(),
        "--runs-ahead",
        "5",
        "--json",
        five.to_str().unwrap(),
    ]));
    for (a, b) in preds.iter().zip(arr(&load_json(&five), "predictions")) {
        let width = |p: &Value| p["interval95"][1].as_f64().unwrap() / p["interval95"][0].as_f64().unwrap();
        assert!(width(b) <= width(a), "{a} vs {b}");
    }
}

#[test]
fn predict_calibration_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    odd_tree(&tree);
    let t = tree.to_str().unwrap();
    let missing = tmp.path().join("none");
    let d = tmp.path().to_str().unwrap();
    assert_bad_input(&run(["predict", "--tree", t, "--on", missing.to_str().unwrap()]), "--on", "missing target");
    assert_bad_input(&run(["predict", "--tree", t, "--on", d, "--max-time", "soon"]), "--max-time", "bad budget");
    assert_bad_input(&run(["predict", "--tree", t, "--on", d, "--runs-ahead", "0"]), "--runs-ahead", "zero runs");
    assert_bad_input(&run(["predict", "--tree", t, "--fs", "ext9"]), "--fs", "unknown file system");
    assert_bad_input(&run(["predict", "--tree", t, "--fs", "ext4,xfs"]), "--fs", "two file systems");
    assert_bad_input(&run(["predict", "--tree", t, "--on", d, "--prices", t]), "--prices", "prices on a directory");
    assert_bad_input(
        &run(["predict", "--tree", t, "--on", d, "--save-calibration", missing.join("x/y").to_str().unwrap()]),
        "--save-calibration",
        "unwritable calibration file",
    );
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_bad_input(&run(["predict", "--tree", empty.to_str().unwrap(), "--on", d]), "--tree", "no files");
    // Nothing was made in the target by any of these.
    assert!(run_dirs(tmp.path()).is_empty());
}

/// On FUSE (exFAT through exfat-fuse) `manyfiles copy`, `scan` and `rm` run without
/// `--threads` from 16 threads with in-flight control; the calibration must copy as they
/// do (its walks and removals ran on the cores: exFAT scans were predicted 3× too slow,
/// removals 2×). Root: the exFAT image is mounted.
#[test]
fn predict_on_fuse_calibrates_as_the_checks_run() {
    if !is_root() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI runs as root");
        eprintln!("skipped: mounting an exFAT image needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    odd_tree(&tree);
    let on = tmp.path().join("on");
    std::fs::create_dir(&on).unwrap();
    let _mounted = Mounted::new("exfat@ram", &on, "64MiB");
    let cal = tmp.path().join("cal.json");
    let (t, o, c) = (tree.to_str().unwrap(), on.to_str().unwrap(), cal.to_str().unwrap());
    let p = run(["predict", "--tree", t, "--on", o, "--max-time", "10s", "--quiet", "--save-calibration", c]);
    predicted(&p);
    // The check line carries --lossy: exFAT drops modes, and without it the copy fails.
    let cmds = check_commands(&p.stdout);
    assert!(cmds[0].starts_with(&format!("manyfiles copy --lossy --cold --durable {t} ")), "{}", p.stdout);
    let (dst, summary) = (on.join("check"), tmp.path().join("check.json"));
    // exFAT holds no permission bits and coarser times: --lossy accepts that.
    run(["copy", "--quiet", "--lossy", "--json", summary.to_str().unwrap(), t, dst.to_str().unwrap()]).ok();
    let check = load_json(&summary);
    assert_eq!(s(&check["in_flight"], "mode"), "adaptive", "{check:#}");
    let check_threads = u(&check, "threads");
    let rs = load_json(&cal);
    let copies: Vec<u64> =
        arr(&rs, "measurements").iter().filter(|m| m["op"] == "copy").map(|m| u(m, "threads")).collect();
    assert!(!copies.is_empty() && copies.iter().all(|&t| t == check_threads), "{copies:?} vs {check_threads}");
}

/// Issue 38, 10: `--on DIR` inside `--tree PATH` (or the tree itself, or inside it through
/// a bind mount) would put the calibration's run directory into the tree: refused, exit
/// 2 naming --on, nothing made. A tree inside DIR is fine (the run directory goes beside it).
#[test]
fn predict_on_inside_the_tree_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    odd_tree(&tree);
    let sub = tree.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let before = snapshot(&tree);
    let t = tree.to_str().unwrap();
    for (on, what) in [(&sub, "inside the tree"), (&tree, "the tree itself")] {
        let r = run(["predict", "--tree", t, "--on", on.to_str().unwrap(), "--max-time", "5s", "--quiet"]);
        assert_bad_input(&r, "--on", what);
        assert!(r.stderr.contains("run directory into the tree"), "{what}: {}", r.stderr);
    }
    if is_root() {
        let bind = tmp.path().join("bind");
        std::fs::create_dir(&bind).unwrap();
        let ok = std::process::Command::new("mount").arg("--bind").arg(&tree).arg(&bind).status().unwrap();
        assert!(ok.success());
        let r = run(["predict", "--tree", t, "--on", bind.join("sub").to_str().unwrap(), "--quiet"]);
        let _ = std::process::Command::new("umount").arg(&bind).status();
        assert_bad_input(&r, "--on", "inside the tree through a bind mount");
    }
    assert_eq!(snapshot(&tree), before, "the tree is untouched");
}

/// Issue 38, 14: `predict --tree` as a user who cannot read part of the tree says so
/// and exits 1 (as `scan` does), the predictions for the part it read still printed.
#[test]
fn predict_tree_it_cannot_read_whole_exits_1() {
    if !is_root() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI runs as root");
        eprintln!("skipped: running as nobody needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let model = ladder(tmp.path());
    let tree = tmp.path().join("tree");
    for d in ["open", "closed", "closed/deeper"] {
        std::fs::create_dir_all(tree.join(d)).unwrap();
        for i in 0..5 {
            std::fs::write(tree.join(d).join(format!("f{i}")), b"data").unwrap();
        }
    }
    use std::os::unix::fs::PermissionsExt;
    for (p, mode) in [(tmp.path(), 0o755), (&tree, 0o755), (&tree.join("open"), 0o755), (&tree.join("closed"), 0o700)] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    std::fs::set_permissions(&model, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(bin())
        .args(["predict", "--model", model.to_str().unwrap(), "--tree", tree.to_str().unwrap()])
        .output()
        .unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("1 directory could not be read") && err.contains("for the 5 files"), "{err}");
    assert!(out.contains("predicted time of one run"), "the predictions are still printed: {out}");
}

/// Issue 38 (unclear): on a memory file system `--cold` is refused, so `predict --on` a
/// tmpfs prints check lines without it, and they run (exit 0).
#[test]
fn predict_on_tmpfs_prints_check_lines_the_tool_accepts() {
    if !is_root() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI runs as root");
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    odd_tree(&tree);
    let on = tmp.path().join("on");
    std::fs::create_dir(&on).unwrap();
    let ok = std::process::Command::new("mount").args(["-t", "tmpfs", "-o", "size=64m", "mf-test"]).arg(&on).status();
    assert!(ok.unwrap().success());
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Unmount(on.clone());
    let (t, o) = (tree.to_str().unwrap(), on.to_str().unwrap());
    let p = run(["predict", "--tree", t, "--on", o, "--max-time", "10s", "--quiet"]);
    predicted(&p);
    let cmds = check_commands(&p.stdout);
    assert_eq!(cmds.len(), 3, "{}", p.stdout);
    assert!(cmds[0].contains("--cold"), "the tree is on disk: its copy is cold: {}", p.stdout);
    for c in &cmds[1..] {
        assert!(!c.contains("--cold"), "refused on tmpfs: {}", p.stdout);
    }
    run_as_printed(&cmds, Some(&on));
}

/// The commands under a prediction's "check, one run each" line (indented two spaces).
fn check_commands(stdout: &str) -> Vec<String> {
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with("check, one run each")).skip(1);
    let cmds: Vec<String> =
        lines.by_ref().map_while(|l| l.strip_prefix("  ")).filter(|l| !l.starts_with('(')).map(String::from).collect();
    assert!(!cmds.is_empty(), "no check lines: {stdout}");
    cmds
}

/// Issue 40, item 4: paste the check lines into a shell as printed (with this build as
/// `manyfiles`): every one exits 0, and nothing is left in `on` (if given) afterwards.
fn run_as_printed(cmds: &[String], on: Option<&Path>) {
    let bin_dir = bin().parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    for c in cmds {
        let out = std::process::Command::new("sh").args(["-c", c]).env("PATH", &path).output().unwrap();
        assert!(
            out.status.success(),
            "{c}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if let Some(on) = on {
        let left: Vec<_> = std::fs::read_dir(on).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "left in {}: {left:?}", on.display());
    }
}

/// Issue 40, item 4: `predict --on DIR` prints its checks with the tree's real path and a
/// destination that does not exist yet; pasted into a shell they run and leave DIR empty.
#[test]
fn predict_check_lines_run_as_printed_on_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("a tree"); // a space: the lines must quote it
    odd_tree(&tree);
    let on = tmp.path().join("on");
    std::fs::create_dir(&on).unwrap();
    let (t, o) = (tree.to_str().unwrap(), on.to_str().unwrap());
    let p = run(["predict", "--tree", t, "--on", o, "--max-time", "10s", "--quiet"]);
    predicted(&p);
    let cmds = check_commands(&p.stdout);
    assert_eq!(cmds.len(), 3, "{}", p.stdout);
    assert!(cmds[0].contains(&format!("'{t}'")), "the tree's path, quoted: {}", p.stdout);
    assert!(!p.stdout.contains(" PATH ") && !p.stdout.contains(" DST"), "no placeholders: {}", p.stdout);
    run_as_printed(&cmds, Some(&on));
}

/// Issue 40, item 4: `predict --fs SPEC` tears its target down, so its checks bring the
/// same spec up with `manyfiles mount` in a fresh directory and take it down after.
#[test]
fn predict_check_lines_run_as_printed_with_fs() {
    if !is_root() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI runs as root");
        eprintln!("skipped: --fs needs root");
        return;
    }
    let _s = serial();
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    odd_tree(&tree);
    let t = tree.to_str().unwrap();
    let p = run(["predict", "--tree", t, "--fs", "ext4", "--max-time", "10s", "--quiet"]);
    predicted(&p);
    let cmds = check_commands(&p.stdout);
    assert_eq!(cmds.len(), 7, "mkdir, mount, copy, scan, rm, umount, rmdir: {}", p.stdout);
    assert!(cmds[1].starts_with("manyfiles mount --size ") && cmds[1].contains(" ext4@ram "), "{}", p.stdout);
    let mnt = PathBuf::from(cmds[0].strip_prefix("mkdir ").unwrap());
    assert!(!mnt.exists(), "a fresh directory: {}", mnt.display());
    run_as_printed(&cmds, None);
    assert!(!mnt.exists(), "rmdir took {} away", mnt.display());
}
