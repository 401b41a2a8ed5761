//! Managed images hold the default ladder's largest tree on every supported type: the
//! rungs 1 … 65,536 files (64 MiB in all), nested and flat, create on a fresh format.
//! (A 512 MiB ext4 image sized from bytes alone has 32,768 inodes: the 65,536-file rung
//! failed with "No space left on device".)

mod reliability_common;

use reliability_common::*;
use std::time::Duration;

const TYPES: &str = "ext2,ext3,ext4,xfs,btrfs,ntfs,exfat,tmpfs";

fn ladder_completes(flat: bool) {
    let Some(_g) = root_only("managed file systems need root") else { return };
    let t = tempfile::tempdir().unwrap();
    let j = t.path().join("r.json");
    let mut a = vec!["ladder", "--fs", TYPES, "--ops", "create", "--runs", "1", "-q", "--json", j.to_str().unwrap()];
    if flat {
        a.push("--flat");
    }
    let out = run_bounded(&a, Duration::from_secs(1800), None);
    assert_eq!(out.code, Some(0), "{}", out.show());
    let rs: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert_eq!(rs["complete"], true);
    let ms = rs["measurements"].as_array().unwrap();
    for ty in TYPES.split(',') {
        let mine: Vec<&serde_json::Value> =
            ms.iter().filter(|m| m["target"].as_str().unwrap().starts_with(&format!("{ty}@"))).collect();
        assert_eq!(mine.len(), 9, "{ty}: one create per rung 1 … 65,536");
        for m in mine {
            assert_eq!(m["errors"], 0, "{ty} {}: {}", m["tree_key"], m["first_error"]);
            assert_eq!(m["files"], m["tree_files"], "{ty} {}", m["tree_key"]);
        }
    }
    for tgt in rs["targets"].as_array().unwrap() {
        let entries = tgt["managed"]["entries"].as_u64().unwrap();
        assert!(entries > 65_536, "{}: sized for {entries} entries", tgt["id"]);
    }
}

#[test]
fn default_ladder_fits_every_type_in_directories() {
    ladder_completes(false);
}

#[test]
fn default_ladder_fits_every_type_flat() {
    ladder_completes(true);
}
