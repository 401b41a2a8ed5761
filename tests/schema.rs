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

/// A device-backed target (`--fs TYPE@dev:/dev/NAME`) validates with its sysfs details,
/// a broken one does not, and a managed record without them (older files) still loads.
#[test]
fn device_target_validates_and_old_records_load() {
    use manyfiles::storage::device::DeviceInfo;
    use manyfiles::storage::managed::ManagedDetails;
    let v = schema();
    let mut doc = run_json(&["ops", "--files", "20", "--runs", "1", "--ops", "create"]);
    let details = ManagedDetails {
        spec: "xfs@dev:/dev/sdb".into(),
        fs_type: "xfs".into(),
        block_size: None,
        backing: "dev".into(),
        image: "".into(),
        image_bytes: 1 << 30,
        device: Some("/dev/sdb".into()),
        mkfs_command: vec!["mkfs.xfs".into(), "-q".into(), "-f".into(), "/dev/sdb".into()],
        mkfs_version: "mkfs.xfs version 6.1.0".into(),
        mount_command: vec![],
        mount_options: "rw".into(),
        fuse: false,
        formats: 1,
        entries: None,
        class: None,
        share: None,
        object: None,
        device_info: Some(DeviceInfo {
            path: "/dev/sdb".into(),
            name: "sdb".into(),
            disk: "sdb".into(),
            major_minor: "8:16".into(),
            partition: false,
            size_bytes: 1 << 30,
            model: Some("WDC WD40EFRX".into()),
            vendor: Some("ATA".into()),
            serial: Some("WD-X".into()),
            rotational: Some(true),
            scheduler: Some("mq-deadline".into()),
            logical_block_size: Some(512),
            physical_block_size: Some(4096),
        }),
    };
    doc["targets"][0]["kind"] = Value::from("managed");
    doc["targets"][0]["managed"] = serde_json::to_value(&details).unwrap();
    let errs = errors(&v, &doc);
    assert!(errs.is_empty(), "{errs:#?}");
    let mut bad = doc.clone();
    bad["targets"][0]["managed"]["device_info"]["size_bytes"] = Value::from(-1);
    assert!(!errors(&v, &bad).is_empty(), "negative device size accepted");
    let mut bad = doc.clone();
    bad["targets"][0]["managed"]["backing"] = Value::from("usb");
    assert!(!errors(&v, &bad).is_empty(), "unknown backing accepted");
    // A device class target: its class, delays and stack validate; a negative delay does not.
    let mut cls = doc.clone();
    let class = manyfiles::storage::device_class::DeviceClass::parse("ebs-magnetic").unwrap();
    let cd = manyfiles::storage::nbd_stack::ClassDetails {
        class,
        delay_read_ms: 10,
        delay_write_ms: 10,
        threads: 5,
        expected_read_iops: Some([100.0, 500.0]),
        expected_write_iops: None,
        nbdkit_command: vec!["nbdkit".into()],
        nbdkit_version: "nbdkit 1.32.5".into(),
        nbdfuse_command: vec!["nbdfuse".into()],
        nbdfuse_version: "nbdfuse 1.14.2".into(),
    };
    cls["targets"][0]["managed"]["backing"] = Value::from("class");
    cls["targets"][0]["managed"]["class"] = serde_json::to_value(&cd).unwrap();
    let errs = errors(&v, &cls);
    assert!(errs.is_empty(), "{errs:#?}");
    cls["targets"][0]["managed"]["class"]["delay_read_ms"] = Value::from(-1);
    assert!(!errors(&v, &cls).is_empty(), "negative delay accepted");
    // Older result files have no device_info: they load, as None.
    let mut old = doc["targets"][0]["managed"].clone();
    old.as_object_mut().unwrap().remove("device_info");
    let back: ManagedDetails = serde_json::from_value(old).unwrap();
    assert_eq!(back.device_info, None);
}
