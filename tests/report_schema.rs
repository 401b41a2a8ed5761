//! Detections and the extended model fields validate against
//! schema/result-v1.schema.json, and the schema rejects a detection without its fields.

mod common;

use common::*;
use manyfiles::analysis::detect::{Detection, Knee};
use serde_json::Value;

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema/result-v1.schema.json")).unwrap();
    jsonschema::validator_for(&serde_json::from_str::<Value>(&text).unwrap()).unwrap()
}

#[test]
fn every_detection_kind_validates() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("l.json");
    let a = format!(
        "ladder --total 64k --to 64 --runs 2 --target {} --json {} --quiet",
        tmp.path().display(),
        json.display()
    );
    run(words(&a)).ok();
    let mut rs: manyfiles::results::ResultSet = serde_json::from_value(load_json(&json)).unwrap();
    let (t, o, k) = ("dir".to_string(), "create".to_string(), "n=4".to_string());
    rs.detections = vec![
        Detection::Knee {
            target: t.clone(),
            op: o.clone(),
            tree_key: k.clone(),
            knee: Knee {
                at_files: 1000,
                before_us_per_file: 10.0,
                after_us_per_file: 15.0,
                rise: 0.5,
                at_files_range: Some([900, 1100]),
                aicc_gain: Some(12.0),
            },
        },
        Detection::NoKnee {
            target: t.clone(),
            op: o.clone(),
            tree_key: k.clone(),
            up_to_files: 1000,
            one_segment_us_per_file: Some([10.0, 12.0]),
        },
        Detection::Crossover {
            op: o.clone(),
            faster_below: "a".into(),
            faster_above: "b".into(),
            at_files: 300.0,
            between_files: [256, 1024],
            significant: true,
        },
        Detection::FirstRun { target: t.clone(), op: o.clone(), tree_key: k.clone(), first_s: 2.0, median_s: 1.0 },
        Detection::Outlier {
            target: t.clone(),
            op: o.clone(),
            tree_key: k.clone(),
            run: 4,
            seconds: 3.0,
            median_s: 1.0,
            z: 9.0,
        },
        Detection::HighCv { target: t, op: o, tree_key: k, cv: 0.3, runs: 3, runs_needed: 150 },
    ];
    let doc = serde_json::to_value(&rs).unwrap();
    let v = validator();
    let errs: Vec<String> = v.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errs.is_empty(), "{errs:#?}");
    assert!(doc["models"][0]["covariance"].is_array() && doc["models"][0]["residuals"].is_array());
    assert_eq!(doc["models"][0]["interval_method"], "cells");
    assert!(doc["models"][0]["cv_log_errors"].is_array() && doc["models"][0]["cells"].is_u64());

    let mut bad = doc.clone();
    bad["detections"][0].as_object_mut().unwrap().remove("at_files");
    assert!(!v.is_valid(&bad), "knee without at_files accepted");
    let mut bad = doc;
    bad["detections"][2]["kind"] = Value::from("frobnicate");
    assert!(!v.is_valid(&bad), "unknown detection kind accepted");
}
