//! Trees drawn from histograms: the shape of an [`Inventory`] (or the built-in
//! `nextcloud-like` preset) turned into a deterministic TreeSpec, so a private tree's
//! shape can be imitated anywhere without copying a name or a byte.
//!
//! Exact where it can be: file count, directory count, the log2 histogram of file sizes
//! (each bucket's bytes too, so the total), files per directory and directories per
//! depth. Close where constraints meet: files per depth (a greedy fit of the per-directory
//! counts to each level's share) and name lengths (file names follow the histogram but
//! are never shorter than the unique index prefix; directory names are `d0`, `d1`, …).
//!
//! Counts are assigned by position, not by chance: file *i* takes position
//! `(i·stride + offset) mod n` (a bijection) and the bucket that position falls in, so
//! every bucket gets exactly its count and neighbours in a directory still mix.

use super::layout::{DirNode, min_name_len};
use super::rng::{WyRand, hash3};
use super::spec::{Content, Layout, STREAM_NAME, STREAM_SIZE, SizeDist, TreeSpec};
use crate::inventory::{Inventory, log2_bucket_range};
use std::ffi::CString;

/// Split `total` in proportion to `weights`, largest remainder first: sums to `total`
/// exactly (all zeros when every weight is zero).
pub fn apportion(weights: &[u64], total: u64) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|&w| w as u128).sum();
    if sum == 0 {
        return vec![0; weights.len()];
    }
    let share = |w: u64| (w as u128 * total as u128) / sum;
    let mut out: Vec<u64> = weights.iter().map(|&w| share(w) as u64).collect();
    let mut rest = total - out.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..weights.len()).filter(|&i| weights[i] > 0).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse((weights[i] as u128 * total as u128) % sum), i));
    for i in order {
        if rest == 0 {
            break;
        }
        out[i] += 1;
        rest -= 1;
    }
    out
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Position of item `index` among `n` (a bijection of 0..n that scatters neighbours).
#[inline]
pub fn position(index: u64, n: u64, seed: u64, stream: u64) -> u64 {
    if n <= 1 {
        return 0;
    }
    let mut stride = ((n as f64 * 0.618_033_988_7) as u64).max(1);
    while gcd(stride, n) != 1 {
        stride += 1;
    }
    let offset = hash3(seed, 0, stream) % n;
    ((index % n) as u128 * stride as u128 % n as u128 + offset as u128) as u64 % n
}

/// The bucket position `pos` falls in, given per-bucket counts.
#[inline]
pub fn bucket_of(counts: &[u64], pos: u64) -> usize {
    bucket_and_rank(counts, pos).0
}

/// The bucket position `pos` falls in and its rank inside that bucket.
#[inline]
fn bucket_and_rank(counts: &[u64], pos: u64) -> (usize, u64) {
    let mut cum = 0;
    for (k, &c) in counts.iter().enumerate() {
        if pos < cum + c {
            return (k, pos - cum);
        }
        cum += c;
    }
    (counts.len().saturating_sub(1), 0)
}

/// Size of file `index` under a log2 histogram (`counts` files and `bytes` bytes per bucket).
/// Every bucket gets exactly its count and exactly its bytes: inside bucket [lo, hi] the
/// files ranked j and c−1−j form a pair at mean + d and mean − d (d seeded, within the
/// bucket), and the remainder bytes go one each to the lowest ranks.
pub fn hist_size(counts: &[u64], bytes: &[u64], seed: u64, index: u64) -> u64 {
    let n: u64 = counts.iter().sum();
    let (k, j) = bucket_and_rank(counts, position(index, n, seed, STREAM_SIZE));
    let (lo, hi) = log2_bucket_range(k);
    let c = counts.get(k).copied().unwrap_or(0);
    if lo == hi || c == 0 {
        return lo;
    }
    let b = (bytes.get(k).copied().unwrap_or(0) as u128).clamp(lo as u128 * c as u128, hi as u128 * c as u128);
    let (base, rem) = ((b / c as u128) as u64, (b % c as u128) as u64);
    let size = base + u64::from(j < rem);
    let pair = j.min(c - 1 - j);
    if c - 1 - j == j {
        return size; // the middle one of an odd count stays at the mean
    }
    let max_dev = (base - lo).min(hi.saturating_sub(base + 1));
    let d = hash3(seed, (k as u64) << 48 | pair, STREAM_SIZE ^ 0x55) % (max_dev + 1);
    if j < c - 1 - j { size + d } else { size - d }
}

/// Length of file `index`'s name under `counts` (files per name length), never below `min`.
pub fn hist_name_len(counts: &[u64], seed: u64, index: u64, min: usize) -> usize {
    let n: u64 = counts.iter().sum();
    bucket_of(counts, position(index, n, seed, STREAM_NAME)).clamp(min, 255)
}

/// The histograms a drawn layout needs, already scaled to the tree's counts.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DrawnShape {
    /// Directories per depth; [0] is the root (1).
    pub dirs_per_depth: Vec<u64>,
    /// Directories per log2 bucket of their file count (sums to the directory count).
    pub files_per_dir: Vec<u64>,
    /// Files per depth (files in the root are at depth 1).
    pub files_per_depth: Vec<u64>,
    /// Names (of files, then of directories below the root) per name length.
    pub name_lens: Vec<u64>,
}

impl DrawnShape {
    pub fn dirs(&self) -> u64 {
        self.dirs_per_depth.iter().sum()
    }
}

/// A spec with `inv`'s shape, `scale` times as many files and directories.
pub fn spec_like(inv: &Inventory, scale: f64, seed: u64, content: Content) -> Result<TreeSpec, String> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err("must be a number above 0".into());
    }
    if inv.files == 0 {
        return Err("the inventory holds no files".into());
    }
    let files = ((inv.files as f64 * scale).round() as u64).max(1);
    let dirs = ((inv.dirs.max(1) as f64 * scale).round() as u64).max(1);
    // The root is one directory at depth 0; the others spread as the inventory's did.
    let mut deeper = inv.dir_depth_hist.clone();
    if let Some(d0) = deeper.first_mut() {
        *d0 = 0;
    }
    let mut dirs_per_depth = apportion(&deeper, dirs - 1);
    if dirs_per_depth.is_empty() {
        dirs_per_depth.push(0);
    }
    dirs_per_depth[0] = 1;
    if let Some(z) = dirs_per_depth.iter().position(|&n| n == 0) {
        // Shrinking can empty a level; what lies below it moves up to it.
        let moved: u64 = dirs_per_depth[z..].iter().sum();
        dirs_per_depth.truncate(z);
        *dirs_per_depth.last_mut().expect("root") += moved;
        if dirs_per_depth.len() == 1 && moved > 0 {
            dirs_per_depth[0] = 1;
            dirs_per_depth.push(moved);
        }
    }
    let size_counts = apportion(&inv.size_hist, files);
    let size_bytes = size_counts
        .iter()
        .enumerate()
        .map(|(k, &c)| {
            let (n, b) = (inv.size_hist.get(k).copied().unwrap_or(0), inv.size_hist_bytes.get(k).copied().unwrap_or(0));
            if n == 0 { 0 } else { (b as u128 * c as u128 / n as u128) as u64 }
        })
        .collect();
    let total_dirs: u64 = dirs_per_depth.iter().sum();
    let shape = DrawnShape {
        dirs_per_depth,
        files_per_dir: apportion(&inv.files_per_dir_hist, total_dirs),
        files_per_depth: apportion(&inv.depth_hist, files),
        name_lens: apportion(&inv.name_len_hist, files + total_dirs - 1),
    };
    let spec = TreeSpec {
        files,
        size: SizeDist::Histogram { counts: size_counts, bytes: size_bytes },
        layout: Layout::Drawn { shape: Box::new(shape) },
        name_len: min_name_len(files).max(8),
        content,
        seed,
    };
    spec.validate().map_err(|(_, r)| r)?;
    Ok(spec)
}

/// Per-directory file counts: each directory gets a count from its log2 bucket, and the
/// counts are spread inside their buckets so they sum to `files` exactly.
fn dir_file_counts(buckets: &[u64], files: u64) -> Vec<u64> {
    let mut ranges = Vec::new();
    for (k, &n) in buckets.iter().enumerate() {
        let (lo, hi) = log2_bucket_range(k);
        ranges.extend(std::iter::repeat_n((lo, hi.min(1 << 40)), n as usize));
    }
    let low: u64 = ranges.iter().map(|r| r.0).sum();
    let room: u64 = ranges.iter().map(|r| r.1 - r.0).sum();
    let extra = files.saturating_sub(low).min(room);
    let mut out: Vec<u64> = ranges.iter().map(|&(lo, _)| lo).collect();
    let shares = apportion(&ranges.iter().map(|r| r.1 - r.0).collect::<Vec<_>>(), extra);
    for (o, s) in out.iter_mut().zip(shares) {
        *o += s;
    }
    // Outside the buckets' reach (a scaled histogram): even out the difference.
    let mut sum: u64 = out.iter().sum();
    let n = out.len().max(1) as u64;
    let mut i = 0usize;
    while sum != files && !out.is_empty() {
        let j = i % out.len();
        if sum < files {
            let add = (files - sum).div_ceil(n);
            out[j] += add;
            sum += add;
        } else if out[j] > 0 {
            let sub = (sum - files).div_ceil(n).min(out[j]);
            out[j] -= sub;
            sum -= sub;
        }
        i += 1;
    }
    out
}

/// Name of the `g`-th directory (BFS, root = 0), the `sibling`-th child of its parent:
/// `d<sibling>` padded with seeded characters to a length drawn from the same name
/// histogram as the files' (names 0..files are files', the rest directories').
fn dir_name(shape: &DrawnShape, spec: &TreeSpec, sibling: u64, g: u64) -> CString {
    const ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut name = format!("d{sibling}").into_bytes();
    let len = hist_name_len(&shape.name_lens, spec.seed, spec.files + g - 1, name.len());
    let mut rng = WyRand(hash3(spec.seed, g, STREAM_NAME ^ 0xD1));
    while name.len() < len {
        name.push(ALPHABET[(rng.next_u64() % 36) as usize]);
    }
    CString::new(name).expect("no NUL")
}

/// Directories of a drawn tree in BFS order (parents first, siblings contiguous), with
/// their file ranges; and the index of each level's first directory (plus the end).
pub fn plan_dirs(spec: &TreeSpec, shape: &DrawnShape) -> (Vec<DirNode>, Vec<u32>) {
    let levels = &shape.dirs_per_depth;
    let mut dirs = vec![DirNode { parent: 0, name: CString::default(), depth: 0, first_file: 0, nfiles: 0 }];
    let mut level_start = vec![0u32];
    let mut prev = (0u32, 1u64);
    for (d, &n) in levels.iter().enumerate().skip(1) {
        let start = dirs.len() as u32;
        level_start.push(start);
        let (mut last_parent, mut sibling) = (u32::MAX, 0u64);
        for j in 0..n {
            // Even spread over the level above; children of one parent stay contiguous.
            let parent = prev.0 + (j as u128 * prev.1 as u128 / n as u128) as u32;
            if parent != last_parent {
                (last_parent, sibling) = (parent, 0);
            }
            let name = dir_name(shape, spec, sibling, dirs.len() as u64);
            sibling += 1;
            dirs.push(DirNode { parent, name, depth: d as u32, first_file: 0, nfiles: 0 });
        }
        prev = (start, n);
    }
    level_start.push(dirs.len() as u32);
    // Fit the per-directory counts to each level's share of files, largest first.
    let mut counts = dir_file_counts(&shape.files_per_dir, spec.files);
    counts.resize(dirs.len(), 0);
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let nlev = level_start.len() - 1;
    let want: Vec<i128> = (0..nlev).map(|d| shape.files_per_depth.get(d + 1).copied().unwrap_or(0) as i128).collect();
    let mut got = vec![0i128; nlev];
    let mut per_level: Vec<Vec<u64>> = vec![Vec::new(); nlev];
    for c in counts {
        let free = |d: usize| per_level[d].len() < (level_start[d + 1] - level_start[d]) as usize;
        let best = (0..nlev).filter(|&d| free(d)).max_by_key(|&d| (want[d] - got[d], std::cmp::Reverse(d)));
        let d = best.expect("as many counts as directories");
        got[d] += c as i128;
        per_level[d].push(c);
    }
    // Within a level, counts go to directories in a seeded shuffle.
    let mut next_file = 0u64;
    let mut rng = WyRand(hash3(spec.seed, 0, 0xD1));
    for (d, mut cs) in per_level.into_iter().enumerate() {
        for i in (1..cs.len()).rev() {
            cs.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        for (k, c) in cs.into_iter().enumerate() {
            let node = &mut dirs[level_start[d] as usize + k];
            node.first_file = next_file;
            node.nfiles = c;
            next_file += c;
        }
    }
    debug_assert_eq!(next_file, spec.files);
    (dirs, level_start)
}

/// Standard normal CDF (Abramowitz–Stegun 7.1.26 erf; 1e-7 is plenty for bucket weights).
fn phi(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t + 0.254_829_592)
            * t
            * (-x * x).exp();
    if z >= 0.0 { 0.5 * (1.0 + y) } else { 0.5 * (1.0 - y) }
}

/// The published Nextcloud scan's tree (41,732 folders, 313,860 files, 3,075 MB) as an
/// inventory. Only the three totals are published; the mix is a stated assumption: file
/// sizes lognormal with median 2 KiB and σ fitted so the mean is 3,075 MB / 313,860
/// (≈ 9.8 kB: many small documents and previews, few large media), 1% empty files;
/// directories mostly 4–8 levels deep with few files each; names 5–60 bytes around 14.
pub fn nextcloud_like() -> Inventory {
    const FILES: u64 = 313_860;
    const DIRS: u64 = 41_732;
    const BYTES: u64 = 3_075_000_000;
    let mut inv = Inventory::empty();
    inv.files = FILES;
    inv.dirs = DIRS;
    inv.total_bytes = BYTES;
    // Sizes: lognormal(median m, σ) with mean = m·exp(σ²/2) = BYTES/FILES.
    let m = 2048f64;
    let sigma = (2.0 * ((BYTES as f64 / FILES as f64) / m).ln()).sqrt();
    let mut w = vec![1_000_000u64]; // bucket 0: empty files, 1%
    for k in 1..=40usize {
        let (lo, hi) = log2_bucket_range(k);
        let p = phi(((hi as f64 + 1.0).ln() - m.ln()) / sigma) - phi(((lo as f64).ln() - m.ln()) / sigma);
        w.push((p * 99_000_000.0).round() as u64);
    }
    inv.size_hist = apportion(&w, FILES);
    // Bytes per bucket: log-uniform mean inside the bucket (lo/ln 2), then one factor so
    // the total is the published one (each bucket's mean kept inside the bucket).
    let raw: Vec<f64> = inv
        .size_hist
        .iter()
        .enumerate()
        .map(|(k, &c)| c as f64 * if k == 0 { 0.0 } else { log2_bucket_range(k).0 as f64 / std::f64::consts::LN_2 })
        .collect();
    let f = BYTES as f64 / raw.iter().sum::<f64>();
    inv.size_hist_bytes = raw
        .iter()
        .enumerate()
        .map(|(k, &b)| {
            let (lo, hi) = log2_bucket_range(k);
            let c = inv.size_hist[k];
            ((b * f).round() as u64).clamp(lo * c, hi.saturating_mul(c))
        })
        .collect();
    inv.total_bytes = inv.size_hist_bytes.iter().sum();
    // In 4 KiB blocks, each file taken at its bucket's mean size.
    inv.allocated_bytes = (inv.size_hist.iter().zip(&inv.size_hist_bytes))
        .filter(|(c, _)| **c > 0)
        .map(|(&c, &b)| c * (b / c).div_ceil(4096) * 4096)
        .sum();
    let depth_w = [1u64, 12, 180, 1_500, 6_000, 11_000, 11_000, 7_000, 3_500, 1_200, 339];
    inv.dir_depth_hist = apportion(&depth_w[1..], DIRS - 1);
    inv.dir_depth_hist.insert(0, 1);
    inv.depth_hist = std::iter::once(0).chain(apportion(&depth_w, FILES)).collect();
    inv.max_depth = depth_w.len() as u64;
    // Files per directory (log2 buckets: 0, 1, 2–3, 4–7, …), mean ≈ 7.5.
    let fpd = [280u64, 170, 170, 150, 110, 70, 35, 12, 4, 1, 1];
    inv.files_per_dir_hist = apportion(&fpd, DIRS);
    let names: Vec<u64> = (0..=60)
        .map(|l: u64| {
            if l < 5 {
                0
            } else {
                (1e6 * (-((l as f64).ln() - 14f64.ln()).powi(2) / (2.0 * 0.45f64.powi(2))).exp()) as u64
            }
        })
        .collect();
    inv.name_len_hist = apportion(&names, FILES + DIRS - 1);
    inv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apportion_sums_exactly() {
        assert_eq!(apportion(&[1, 1, 1], 10).iter().sum::<u64>(), 10);
        assert_eq!(apportion(&[0, 5, 0], 7), vec![0, 7, 0]);
        assert_eq!(apportion(&[2, 1], 3), vec![2, 1]);
        assert_eq!(apportion(&[0, 0], 3), vec![0, 0]);
    }

    #[test]
    fn positions_are_a_bijection() {
        for n in [1u64, 2, 10, 97, 1000, 4096] {
            let mut seen: Vec<u64> = (0..n).map(|i| position(i, n, 7, 1)).collect();
            seen.sort();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n={n}");
        }
    }

    #[test]
    fn hist_sizes_fill_buckets_exactly() {
        let counts = vec![3u64, 0, 5, 10, 2];
        let bytes = vec![0u64, 0, 15, 60, 26];
        let mut got = vec![0u64; 5];
        let mut sum = vec![0u64; 5];
        for i in 0..20 {
            let s = hist_size(&counts, &bytes, 3, i);
            let k = crate::inventory::log2_bucket(s);
            got[k] += 1;
            sum[k] += s;
        }
        assert_eq!(got, counts);
        assert_eq!(sum, bytes, "every bucket's bytes exactly");
        // A wide bucket: sizes spread around the mean, the sum still exact.
        let (counts, bytes) = (vec![0u64; 12].into_iter().chain([1001]).collect::<Vec<_>>(), 1001 * 3000);
        let bytes: Vec<u64> = (0..13).map(|k| if k == 12 { bytes } else { 0 }).collect();
        let sizes: Vec<u64> = (0..1001).map(|i| hist_size(&counts, &bytes, 9, i)).collect();
        assert_eq!(sizes.iter().sum::<u64>(), 1001 * 3000);
        assert!(sizes.iter().all(|&s| (2048..=4095).contains(&s)));
        let distinct: std::collections::BTreeSet<u64> = sizes.iter().copied().collect();
        assert!(distinct.len() > 300, "{} distinct sizes", distinct.len());
    }

    #[test]
    fn dir_counts_keep_buckets_and_total() {
        let buckets = [2u64, 3, 4, 1]; // 0 | 1 | 2–3 | 4–7
        let c = dir_file_counts(&buckets, 20);
        assert_eq!(c.iter().sum::<u64>(), 20);
        let mut h = vec![0u64; 4];
        for v in &c {
            h[crate::inventory::log2_bucket(*v)] += 1;
        }
        assert_eq!(h, buckets);
    }

    #[test]
    fn nextcloud_preset_has_the_published_totals() {
        let inv = nextcloud_like();
        assert_eq!(inv.size_hist.iter().sum::<u64>(), 313_860);
        assert_eq!(inv.dir_depth_hist.iter().sum::<u64>(), 41_732);
        assert_eq!(inv.files_per_dir_hist.iter().sum::<u64>(), 41_732);
        let rel = inv.total_bytes as f64 / 3.075e9 - 1.0;
        assert!(rel.abs() < 0.01, "total bytes {}", inv.total_bytes);
        let spec = spec_like(&inv, 1.0, 1, Content::Zeros).unwrap();
        assert_eq!(spec.files, 313_860);
        let rel = spec.total_bytes() as f64 / inv.total_bytes as f64 - 1.0;
        assert!(rel.abs() < 0.02, "drawn bytes {} vs {}", spec.total_bytes(), inv.total_bytes);
    }
}
