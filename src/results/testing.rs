//! Result sets made up for unit tests: one directory target, one tree, one op.

use super::{ExperimentInfo, Measurement, ResultSet};
use crate::measure::PhaseResult;
use crate::measure::provenance::Provenance;
use crate::storage::TargetInfo;
use crate::tree::{Content, Layout, SizeDist, TreeSpec};

/// A directory target `id` on a file system of type `fs`, as tests need one.
pub fn dir_target(id: &str, fs: &str) -> TargetInfo {
    TargetInfo {
        id: id.into(),
        kind: "dir".into(),
        path: "/x".into(),
        fs_type: fs.into(),
        mount_point: "/x".into(),
        mount_source: "/dev/x".into(),
        mount_options: String::new(),
        block_size: 4096,
        free_bytes: 1 << 30,
        total_bytes: 1 << 31,
        read_only: false,
        managed: None,
        device: None,
        label: String::new(),
    }
}

/// A `ladder` result set of one cell (`dir`, `create`, 256 files of 4 KiB) whose runs
/// took `times` seconds, derived.
pub fn one_cell(times: &[f64]) -> ResultSet {
    let target = dir_target("dir", "ext4");
    let experiment = ExperimentInfo {
        name: "ladder".into(),
        ops: vec!["create".into()],
        runs: times.len() as u32,
        warmup: 0,
        threads: 1,
        portion_files: 10_000,
        order: "interleaved".into(),
        create: Default::default(),
        caches: Default::default(),
        until: Default::default(),
        adaptive: None,
        side_trees: Vec::new(),
    };
    let mut rs = ResultSet::new(Provenance::collect(Vec::new()), experiment, vec![target]);
    let tree = TreeSpec {
        files: 256,
        size: SizeDist::Fixed { bytes: 4096 },
        layout: Layout::Flat,
        name_len: 16,
        content: Content::Random,
        seed: 1,
    };
    for (i, t) in times.iter().enumerate() {
        rs.measurements.push(Measurement {
            experiment: "ladder".into(),
            target: "dir".into(),
            op: "create".into(),
            tree: tree.clone(),
            tree_key: tree.key(),
            tree_files: 256,
            tree_bytes: 256 * 4096,
            tree_dirs: 0,
            run: i as u32 + 1,
            order: i as u64,
            block: None,
            at_s: None,
            result: PhaseResult { elapsed_s: *t, ..Default::default() },
        });
    }
    rs.derive();
    rs
}
