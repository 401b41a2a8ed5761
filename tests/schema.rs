//! The results JSON validates against schema/result-v1.schema.json, and the schema
//! rejects documents that break it (so the check can fail).

use serde_json::Value;
use std::process::Command;

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema/result-v1.schema.json"))
        .expect("schema file");
    let v: Value = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::validator_for(&v).expect("schema compiles")
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc).map(|e| format!("{} at {}", e, e.instance_path())).collect()
}

fn run_json(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let st = Command::new(env!("CARGO_BIN_EXE_manyfiles"))
        .args(args)
        .args(["--target", dir.path().to_str().unwrap(), "--json", out.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

#[test]
fn ladder_output_validates() {
    let doc = run_json(&["ladder", "--total", "256k", "--to", "64", "--runs", "2"]);
    let v = schema();
    let errs = errors(&v, &doc);
    assert!(errs.is_empty(), "{errs:#?}");
    assert_eq!(doc["models"].as_array().unwrap().len(), 3, "one model per op");
}

#[test]
fn ops_output_validates_with_every_size_kind() {
    let v = schema();
    for size in ["1k", "uniform:1-4k", "lognormal:2k,1", "exp:2k", "list:1,10,100"] {
        let doc = run_json(&["ops", "--files", "300", "--size", size, "--runs", "2", "--files-per-dir", "100"]);
        let errs = errors(&v, &doc);
        assert!(errs.is_empty(), "{size}: {errs:#?}");
    }
}

#[test]
fn schema_rejects_broken_documents() {
    let v = schema();
    let doc = run_json(&["ops", "--files", "50", "--runs", "1", "--ops", "create"]);
    assert!(errors(&v, &doc).is_empty());
    let mut bad = doc.clone();
    bad["schema"] = Value::from(2);
    assert!(!errors(&v, &bad).is_empty(), "wrong schema version accepted");
    let mut bad = doc.clone();
    bad["measurements"][0]["op"] = Value::from("frobnicate");
    assert!(!errors(&v, &bad).is_empty(), "unknown op accepted");
    let mut bad = doc.clone();
    bad["measurements"][0].as_object_mut().unwrap().remove("elapsed_s");
    assert!(!errors(&v, &bad).is_empty(), "missing elapsed_s accepted");
    let mut bad = doc;
    bad["provenance"]["started_utc"] = Value::from("yesterday");
    assert!(!errors(&v, &bad).is_empty(), "bad timestamp accepted");
}
