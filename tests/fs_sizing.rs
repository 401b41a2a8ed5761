//! Managed images hold the default ladder's largest tree on every supported type: the
//! rungs 1 … 65,536 files (64 MiB in all), nested and flat, create on a fresh format.
//! (A 512 MiB ext4 image sized from bytes alone has 32,768 inodes: the 65,536-file rung
//! failed with "No space left on device".)

mod reliability_common;

use reliability_common::*;
use std::time::Duration;

const TYPES: &str = "ext2,ext3,ext4,xfs,btrfs,ntfs,exfat,tmpfs";

/// One ladder per type (all images at once would not fit in /dev/shm on a small machine).
fn ladder_completes(flat: bool) {
    let Some(_g) = root_only("managed file systems need root") else { return };
    for ty in TYPES.split(',') {
        let t = tempfile::tempdir().unwrap();
        let j = t.path().join("r.json");
        let mut a = vec!["ladder", "--fs", ty, "--ops", "create", "--runs", "1", "-q", "--json", j.to_str().unwrap()];
        if flat {
            a.push("--flat");
        }
        let out = run_bounded(&a, Duration::from_secs(900), None);
        assert_eq!(out.code, Some(0), "{ty}: {}", out.show());
        let rs: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
        assert_eq!(rs["complete"], true, "{ty}");
        let ms = rs["measurements"].as_array().unwrap();
        // Nested, the rungs' folders hold about 1,000 files from 1,024 files up (less than
        // ×16 apart), so two flat side rungs resolve the directory-size cost d (issue 40).
        let (want, what) = if flat { (11, "") } else { (13, " and per flat side rung (2,048 and 4,096 files)") };
        assert_eq!(ms.len(), want, "{ty}: one create per rung 1 … 65,536 and per side rung (1 and 256 files){what}");
        for m in ms {
            assert_eq!(m["errors"], 0, "{ty} {}: {}", m["tree_key"], m["first_error"]);
            assert_eq!(m["files"], m["tree_files"], "{ty} {}", m["tree_key"]);
        }
        let entries = rs["targets"][0]["managed"]["entries"].as_u64().unwrap();
        assert!(entries > 65_536, "{ty}: sized for {entries} entries");
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
