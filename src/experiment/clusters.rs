//! The clusters preset: for each cluster (block) size of a file system, create portions
//! of files of several sizes in one folder on a fresh format, and report seconds per
//! portion and the space each file really takes (allocated bytes, slack).

use super::TargetSpec;
use crate::report::table::fmt_mean_ci;
use crate::results::ResultSet;
use crate::storage::fsspec::FsSpec;
use crate::tree::{Layout, SizeDist, TreeSpec};
use crate::units::{exact_size, fmt_size, parse_size, sig3};
use comfy_table::Table;

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

/// Seconds per portion (rows: target, columns: file size), then allocated bytes and
/// slack per file.
pub fn table(rs: &ResultSet, portion: u64) -> String {
    let mut keys: Vec<(&str, u64, u64)> = Vec::new(); // tree key, files, size
    for s in rs.summaries.iter().filter(|s| s.op == "create") {
        if !keys.iter().any(|k| k.0 == s.tree_key) {
            keys.push((&s.tree_key, s.tree_files, s.tree_bytes / s.tree_files.max(1)));
        }
    }
    keys.sort_by_key(|k| k.2);
    let mut header = vec![format!("cluster \\ file size (s per {portion} files)")];
    header.extend(keys.iter().map(|k| exact_size(k.2)));
    let mut t = Table::new();
    t.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
    t.set_header(header.clone());
    let mut space = Table::new();
    space.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
    let mut sh = vec!["cluster \\ file size (allocated per file, slack)".to_string()];
    sh.extend(header.into_iter().skip(1));
    space.set_header(sh);
    for target in &rs.targets {
        let mut row = vec![target.id.clone()];
        let mut srow = vec![target.id.clone()];
        for (key, files, size) in &keys {
            let per = (*files as f64 / portion as f64).max(1e-12);
            row.push(
                rs.summaries
                    .iter()
                    .find(|s| s.op == "create" && s.target == target.id && s.tree_key == *key)
                    .map(|s| fmt_mean_ci(s.stats.mean_s / per, s.stats.ci_half_width().map(|h| h / per)))
                    .unwrap_or_else(|| "—".into()),
            );
            let ms: Vec<&crate::results::Measurement> = rs
                .measurements
                .iter()
                .filter(|m| m.op == "create" && m.target == target.id && m.tree_key == *key && m.result.complete())
                .collect();
            let per_file = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
            let statvfs = per_file(
                ms.iter()
                    .filter_map(|m| m.result.space_used_bytes.map(|b| b as f64 / m.tree_files.max(1) as f64))
                    .collect(),
            );
            let blocks = per_file(
                ms.iter()
                    .filter_map(|m| m.result.allocated_bytes.map(|b| b as f64 / m.tree_files.max(1) as f64))
                    .collect(),
            );
            let slack = |a: f64| if a > 0.0 { ((a - *size as f64) / a * 100.0).max(0.0) } else { 0.0 };
            srow.push(match (blocks, statvfs) {
                (Some(b), Some(v)) => {
                    format!("{} ({}% slack); fs {}", fmt_size(b), sig3(slack(b)), fmt_size(v))
                }
                (None, Some(v)) => format!("fs {} ({}% slack)", fmt_size(v), sig3(slack(v))),
                (Some(b), None) => format!("{} ({}% slack)", fmt_size(b), sig3(slack(b))),
                (None, None) => "—".into(),
            });
        }
        t.add_row(row);
        space.add_row(srow);
    }
    format!(
        "{t}\n{space}\nper file: st_blocks × 512 (slack = share of it not holding data); fs = growth of the file system's used blocks (statvfs), metadata included\n"
    )
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
