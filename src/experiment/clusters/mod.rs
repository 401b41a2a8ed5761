//! The clusters experiment: for each cluster (block) size of a file system, create
//! portions of files of several sizes in one folder on a fresh format, and report seconds
//! per portion and the space each file really takes (allocated bytes, slack). Its command
//! line, config and view (`view.rs`) are here.

pub mod view;

use super::TargetSpec;
use super::flags::{CommandLine, Common, Flag, Group, Values};
use super::kinds::{Config, Kind};
use crate::error::Error;
use crate::storage::fsspec::{FsSpec, parse_list as parse_fs_list};
use crate::tree::{Layout, SizeDist, TreeSpec};
use crate::units::parse_size;

/// Its entry in `experiment::kinds::KINDS`.
pub const KIND: Kind = Kind { name: "clusters", mpi: false, run_file: true, command: Some(COMMAND), view: &view::VIEW };

const COMMAND: CommandLine = CommandLine {
    about: "Cluster sizes × file sizes on fresh formats: seconds per portion and slack per file",
    flags: &[
        Flag::text("cluster", "CLUSTER", "Cluster (block) sizes to format each --fs with").default(DEFAULT_CLUSTERS),
        Flag::text("sizes", "SIZES", "File sizes; cluster+1 is one byte more than each cluster size")
            .default(DEFAULT_SIZES),
        Flag::count("portions", "PORTIONS", "Portions per trial (each of --portion files)").default("3"),
    ],
    groups: &[Group::Own, Group::Run, Group::Shape, Group::Write],
    defaults: &[],
    config,
};

fn config(v: &Values, common: &dyn Common) -> crate::error::Result<Box<dyn Config>> {
    let Some(fs) = common.fs() else {
        return Err(Error::bad("--fs", "clusters formats test file systems: give --fs, e.g. --fs ntfs"));
    };
    if common.has_target() {
        return Err(Error::bad("--target", "clusters formats each cluster size afresh: use --fs, not --target"));
    }
    let base = parse_fs_list(fs).map_err(|e| Error::bad("--fs", e))?;
    let cl = parse_clusters(v.text("cluster").unwrap_or_default()).map_err(|e| Error::bad("--cluster", e))?;
    let sizes = parse_sizes(v.text("sizes").unwrap_or_default()).map_err(|e| Error::bad("--sizes", e))?;
    let portions = v.number("portions");
    if portions == 0 {
        return Err(Error::bad("--portions", "must be at least 1"));
    }
    let files = common.portion()?.saturating_mul(portions);
    let shape = common.shape(files.max(1), SizeDist::Fixed { bytes: 0 })?;
    let trees = trees(&sizes, &cl, files, &shape);
    let mut targets = targets(&base, &cl).map_err(|e| Error::bad("--cluster", e))?;
    common.confirm_devices(&mut targets)?;
    let mut cfg = common.experiment("clusters", trees, "create")?;
    cfg.targets = targets;
    cfg.measure_allocation = true;
    Ok(Box::new(cfg))
}

/// A file size to test: fixed bytes, or one more than the cluster size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeSel {
    Bytes(u64),
    ClusterPlusOne,
}

pub const DEFAULT_CLUSTERS: &str = "512,1k,2k,4k,8k,16k,32k,64k";
pub const DEFAULT_SIZES: &str = "1,cluster+1,512,1k,2k,4k,8k,16k,32k,64k";

pub fn parse_sizes(s: &str) -> Result<Vec<SizeSel>, String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| if p == "cluster+1" { Ok(SizeSel::ClusterPlusOne) } else { parse_size(p).map(SizeSel::Bytes) })
        .collect()
}

pub fn parse_clusters(s: &str) -> Result<Vec<u64>, String> {
    let v: Vec<u64> =
        s.split(',').map(str::trim).filter(|p| !p.is_empty()).map(parse_size).collect::<Result<_, _>>()?;
    if v.is_empty() {
        return Err("no cluster size given".into());
    }
    Ok(v)
}

/// One target per base file system × cluster size (validated like any --fs SPEC).
pub fn targets(base: &[FsSpec], clusters: &[u64]) -> Result<Vec<TargetSpec>, String> {
    let mut out = Vec::new();
    for b in base {
        let label = b.label();
        let (head, backing) = label.split_once('@').unwrap_or((&label, "ram"));
        let ty = head.split(':').next().unwrap_or(head);
        for c in clusters {
            let spec = FsSpec::parse(&format!("{ty}:{c}@{backing}"))?;
            out.push(TargetSpec::Fs(spec));
        }
    }
    Ok(out)
}

/// One flat tree per distinct file size; `cluster+1` becomes c+1 for every cluster size
/// (each is then measured on every cluster size: a wider table, the same trials).
pub fn trees(sizes: &[SizeSel], clusters: &[u64], files: u64, shape: &TreeSpec) -> Vec<TreeSpec> {
    let mut bytes: Vec<u64> = Vec::new();
    for s in sizes {
        match s {
            SizeSel::Bytes(b) => bytes.push(*b),
            SizeSel::ClusterPlusOne => bytes.extend(clusters.iter().map(|c| c + 1)),
        }
    }
    let mut seen = Vec::new();
    bytes.retain(|b| {
        if seen.contains(b) {
            false
        } else {
            seen.push(*b);
            true
        }
    });
    bytes
        .into_iter()
        .map(|b| TreeSpec { files, size: SizeDist::Fixed { bytes: b }, layout: Layout::Flat, ..shape.clone() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_trees() {
        let s = parse_sizes("1,cluster+1,4k").unwrap();
        assert_eq!(s, vec![SizeSel::Bytes(1), SizeSel::ClusterPlusOne, SizeSel::Bytes(4096)]);
        assert!(parse_sizes("1,cluster+2").is_err());
        let shape = TreeSpec {
            files: 1,
            size: SizeDist::Fixed { bytes: 0 },
            layout: Layout::Flat,
            name_len: 16,
            content: crate::tree::Content::Zeros,
            seed: 1,
        };
        let t = trees(&s, &[512, 4096], 100, &shape);
        let sizes: Vec<u64> = t.iter().map(|t| t.size.size_of(1, 0)).collect();
        assert_eq!(sizes, vec![1, 513, 4097, 4096]);
        assert!(t.iter().all(|t| t.layout == Layout::Flat && t.files == 100));
    }

    #[test]
    fn targets_per_cluster() {
        let base = vec![FsSpec::parse("ntfs").unwrap()];
        let t = targets(&base, &[512, 65536]).unwrap();
        assert_eq!(t.len(), 2);
        match &t[1] {
            TargetSpec::Fs(f) => assert_eq!(f.block, Some(65536)),
            _ => panic!(),
        }
        assert!(targets(&[FsSpec::parse("ext4").unwrap()], &[512]).is_err(), "ext4 has no 512 B blocks");
    }
}
