//! --csv and --markdown: written with the JSON, consistent with it.

use serde_json::Value;
use std::process::Command;

#[test]
fn csv_and_markdown_match_the_json() {
    let tmp = tempfile::tempdir().unwrap();
    let (json, csv, md) = (tmp.path().join("r.json"), tmp.path().join("r.csv"), tmp.path().join("r.md"));
    let o = Command::new(env!("CARGO_BIN_EXE_manyfiles"))
        .args(["ladder", "--total", "64k", "--to", "64", "--runs", "2", "--quiet", "--target"])
        .arg(tmp.path())
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .arg("--markdown")
        .arg(&md)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ms = d["measurements"].as_array().unwrap();
    let mut r = csv::Reader::from_path(&csv).unwrap();
    let headers = r.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), ms.len(), "one CSV row per measurement");
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    for (row, m) in rows.iter().zip(ms) {
        assert_eq!(row[col("op")], *m["op"].as_str().unwrap());
        assert_eq!(row[col("elapsed_s")].parse::<f64>().unwrap(), m["elapsed_s"].as_f64().unwrap());
        assert_eq!(row[col("tree_files")], m["tree_files"].to_string());
    }
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.starts_with("<!-- written by manyfiles"), "{text}");
    assert!(text.lines().nth(1).unwrap().starts_with("## manyfiles ladder"), "{text}");
    // Rows name the target by its label (path and file system), not its id.
    let label = format!("| {} |", d["targets"][0]["label"].as_str().unwrap());
    let table_rows = text.lines().filter(|l| l.starts_with("| target") || l.starts_with(&label)).count();
    // header + one row per summary ((4 rungs + 2 side rungs) × 3 ops)
    assert_eq!(table_rows, 1 + 18 + 1 + 3, "summary and model tables: {text}");
    assert!(text.contains("95%") && text.contains(d["provenance"]["host"].as_str().unwrap()));
}

#[test]
fn export_paths_are_checked_first() {
    let tmp = tempfile::tempdir().unwrap();
    for flag in ["--csv", "--markdown"] {
        let o = Command::new(env!("CARGO_BIN_EXE_manyfiles"))
            .args(["ops", "--files", "10", "--runs", "1", flag, "/nonexistent/dir/x"])
            .arg("--target")
            .arg(tmp.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.starts_with(&format!("manyfiles: {flag}")), "{err}");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }
}
