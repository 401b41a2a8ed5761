//! The clusters preset: for each cluster (block) size of a file system, create portions
//! of files of several sizes in one folder on a fresh format, and report seconds per
//! portion and the space each file really takes (allocated bytes, slack).

use super::TargetSpec;
use crate::storage::fsspec::FsSpec;
use crate::tree::{Layout, SizeDist, TreeSpec};
use crate::units::parse_size;

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
