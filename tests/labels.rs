//! Targets carry a label made of what they are (path and file system for a directory)
//! or what the user named them (`--label`): in the JSON beside the id, in every table
//! row, compare line, chart legend and HTML heading; files written before labels still
//! load and get one made from what they recorded.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

/// One tiny ladder on `dir` (2 rungs, 1 run), its JSON at `json`.
fn ladder(dir: &Path, json: &Path, extra: &[&str]) -> Run {
    let mut args = words(&format!(
        "ladder --target {} --runs 1 --total 64KiB --second-total off --to 4 --quiet --json {}",
        dir.display(),
        json.display()
    ));
    args.extend(extra.iter().map(|s| s.to_string()));
    run(args)
}

/// What `label` should be for a directory: its canonical path, then its file system
/// from /proc/self/mountinfo's longest matching mount point.
fn expected_label(dir: &Path) -> String {
    let p = std::fs::canonicalize(dir).unwrap();
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let (mut best, mut fs, mut src) = (String::new(), String::new(), String::new());
    for l in info.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        let sep = f.iter().position(|x| *x == "-").unwrap();
        let mp = f[4].replace("\\040", " ");
        if p.starts_with(&mp) && mp.len() >= best.len() {
            (best, fs, src) = (mp, f[sep + 1].to_string(), f[sep + 2].to_string());
        }
    }
    let on = match src.strip_prefix("/dev/") {
        Some(d) => format!(" on {}", d.strip_prefix("mapper/").unwrap_or(d)),
        None if src.contains(':') => format!(" on {src}"),
        None => String::new(),
    };
    format!("{} ({fs}{on})", p.display())
}

#[test]
fn a_directory_is_named_by_its_path_and_file_system() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("a.json");
    let r = ladder(tmp.path(), &json, &[]);
    r.ok();
    let v = load_json(&json);
    let want = expected_label(tmp.path());
    assert_eq!(v["targets"][0]["label"], Value::from(want.clone()));
    assert_eq!(v["targets"][0]["id"], "dir", "the id measurements are matched by stays");
    // The title names it, not "dir".
    let first = r.stdout.lines().next().unwrap();
    assert!(first.ends_with(&format!("on {want}")), "{first}");
    assert!(r.stdout.contains(&format!("target {want}: ")), "{}", r.stdout);
}

#[test]
fn user_labels_reach_tables_compare_charts_and_html() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.json"), tmp.path().join("b.json"));
    ladder(tmp.path(), &a, &["--label", "before upgrade"]).ok();
    ladder(tmp.path(), &b, &["--label=after upgrade"]).ok();
    assert_eq!(load_json(&a)["targets"][0]["label"], "before upgrade");
    // compare: the pair every row shares is said once above the table; with --wide
    // every row names it.
    let c = run(["compare".to_string(), a.display().to_string(), b.display().to_string()]);
    c.ok();
    assert!(c.stdout.lines().any(|l| l == "target: before upgrade → after upgrade"), "{}", c.stdout);
    let c = run(["compare".to_string(), a.display().to_string(), b.display().to_string(), "--wide".into()]);
    c.ok();
    let rows: Vec<&str> = c.stdout.lines().filter(|l| l.starts_with("│ create") || l.starts_with("│ read")).collect();
    assert_eq!(rows.len(), 4, "{}", c.stdout);
    for l in rows {
        assert!(l.contains("before upgrade → after upgrade"), "{l}");
    }
    // Both files in one report: the legend and the tables name each, the same
    // directory keeps one line per file.
    let html = tmp.path().join("r.html");
    let r = run([
        "report".to_string(),
        a.display().to_string(),
        b.display().to_string(),
        "--html".into(),
        html.display().to_string(),
    ]);
    r.ok();
    let page = std::fs::read_to_string(&html).unwrap();
    let h1 = page.split("<h1>").nth(1).unwrap().split("</h1>").next().unwrap();
    assert!(h1.contains("before upgrade") && h1.contains("after upgrade"), "{h1}");
    // Legend text is drawn as SVG <text>: both labels are in the chart.
    let svg = page.split("<svg").nth(1).unwrap();
    assert!(svg.contains("before upgrade") && svg.contains("after upgrade"), "legend lacks a label");
    assert!(!page.contains(">dir<") && !page.contains(">dir#2<"), "an id leaked into the page");
}

#[test]
fn too_many_labels_are_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let r = ladder(tmp.path(), &tmp.path().join("x.json"), &["--label", "a,b"]);
    assert_bad_input(&r, "--label", "2 names for 1 target");
    assert!(run_dirs(tmp.path()).is_empty());
}

#[test]
fn files_without_labels_get_one_from_what_they_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("a.json");
    ladder(tmp.path(), &json, &[]).ok();
    let mut v = load_json(&json);
    v["targets"][0].as_object_mut().unwrap().remove("label");
    let old = tmp.path().join("old.json");
    std::fs::write(&old, serde_json::to_vec(&v).unwrap()).unwrap();
    let md = tmp.path().join("r.md");
    run(["report".to_string(), old.display().to_string(), "--markdown".into(), md.display().to_string()]).ok();
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains(&format!("| {} |", expected_label(tmp.path()))), "{text}");
}
