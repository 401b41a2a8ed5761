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
use crate::tree::inventory::{Inventory, log2_bucket_range};
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
    /// Directories per log2 bucket of their subdirectory count (empty: children spread
    /// evenly over the level above).
    #[serde(default)]
    pub subdirs_per_dir: Vec<u64>,
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
    spec_like_with(inv, scale, seed, content, false)
}

/// Directories per files-per-directory bucket for `total_dirs` directories holding
/// `files`: `hist` apportioned. With `keep_largest`, a bucket of `hist` that rounding
/// emptied gets one directory back, largest bucket first, taken from the most populous
/// bucket, while the buckets' floors still fit in `files`: a histogram shifted up with
/// directories divided by k (`experiment::calibrate`) otherwise loses its rare largest
/// directories — the ones Σn² is made of — and its Σn²/files barely moves.
fn dirs_per_bucket(hist: &[u64], total_dirs: u64, files: u64, keep_largest: bool) -> Vec<u64> {
    let mut out = apportion(hist, total_dirs);
    if !keep_largest {
        return out;
    }
    let floor = |b: usize| if b == 0 { 0 } else { log2_bucket_range(b).0 };
    let mut floors: u64 = out.iter().enumerate().map(|(b, &c)| c * floor(b)).sum();
    let top = (1..hist.len()).rev().find(|&b| hist[b] > 0);
    for b in (1..hist.len()).rev() {
        if hist[b] == 0 || out[b] > 0 {
            continue;
        }
        if Some(b) == top && out.iter().skip(b).all(|&c| c == 0) && floor(b) > files {
            // The largest directory cannot be k times larger in this tree: it takes
            // every file the others leave (the drawing clips it to fit).
            if let Some(from) =
                (0..out.len()).filter(|&i| i != b && out[i] > 1).max_by_key(|&i| (out[i], std::cmp::Reverse(i)))
            {
                (out[from], out[b]) = (out[from] - 1, 1);
                floors = floors - floor(from) + floor(b);
            }
            continue;
        }
        let Some(from) =
            (0..out.len()).filter(|&i| i != b && out[i] > 1).max_by_key(|&i| (out[i], std::cmp::Reverse(i)))
        else {
            break;
        };
        let after = floors - floor(from) + floor(b);
        if after > files {
            continue;
        }
        (out[from], out[b], floors) = (out[from] - 1, 1, after);
    }
    out
}

/// [`spec_like`], optionally keeping the largest directories (see [`dirs_per_bucket`]).
pub fn spec_like_with(
    inv: &Inventory,
    scale: f64,
    seed: u64,
    content: Content,
    keep_largest: bool,
) -> Result<TreeSpec, String> {
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
        files_per_dir: dirs_per_bucket(&inv.files_per_dir_hist, total_dirs, files, keep_largest),
        files_per_depth: apportion(&inv.depth_hist, files),
        subdirs_per_dir: apportion(&inv.subdirs_per_dir_hist, total_dirs),
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

/// Per-directory counts drawn from a log2 histogram `buckets` (directories per bucket of
/// their count), `slots[d]` directories on level d, so that level d's counts sum to
/// `want[d]` and all of them to `total`. Buckets go to levels greedily (largest first, to
/// the level furthest below its share), then pairs are swapped between levels while that
/// brings a level's reachable range [Σlo, Σhi] closer to its share; counts are then spread
/// inside their buckets. Exact whenever the swaps find a fit; within a level the counts
/// are in a seeded shuffle.
fn fit_to_levels(buckets: &[u64], total: u64, slots: &[usize], want: &[u64], seed: u64) -> Vec<Vec<u64>> {
    let n = slots.len();
    let range = |k: usize| {
        let (lo, hi) = log2_bucket_range(k);
        (lo as i128, hi.min(1 << 40) as i128)
    };
    let mut ks: Vec<usize> =
        buckets.iter().enumerate().flat_map(|(k, &c)| std::iter::repeat_n(k, c as usize)).collect();
    ks.resize(slots.iter().sum(), 0);
    ks.sort_unstable_by(|a, b| b.cmp(a));
    let want: Vec<i128> = (0..n).map(|d| want.get(d).copied().unwrap_or(0) as i128).collect();
    // How far a level's share lies outside what its buckets can hold.
    let miss = |w: i128, l: i128, h: i128| if w < l { l - w } else { (w - h).max(0) };
    // One attempt: greedy placement in `order`, then improving swaps. Returns the total
    // miss, directories per bucket per level, and each level's [Σlo, Σhi].
    let attempt = |order: &[usize]| {
        let (mut lo, mut hi) = (vec![0i128; n], vec![0i128; n]);
        let mut held: Vec<Vec<u64>> = vec![vec![0; 65]; n];
        let mut used = vec![0usize; n];
        for &k in order {
            let mid = (range(k).0 + range(k).1) / 2;
            let best = (0..n)
                .filter(|&d| used[d] < slots[d])
                .max_by_key(|&d| (want[d] - (lo[d] + hi[d]) / 2 - mid / 2, std::cmp::Reverse(d)));
            let d = best.expect("as many buckets as directories");
            (lo[d], hi[d], used[d]) = (lo[d] + range(k).0, hi[d] + range(k).1, used[d] + 1);
            held[d][k] += 1;
        }
        for _ in 0..100_000 {
            let mut best: Option<(i128, usize, usize, usize, usize)> = None;
            for d in (0..n).filter(|&d| miss(want[d], lo[d], hi[d]) > 0) {
                for e in (0..n).filter(|&e| e != d) {
                    let before = miss(want[d], lo[d], hi[d]) + miss(want[e], lo[e], hi[e]);
                    for a in (0..65).filter(|&a| held[d][a] > 0) {
                        for b in (0..65).filter(|&b| b != a && held[e][b] > 0) {
                            let (dl, dh) = (range(b).0 - range(a).0, range(b).1 - range(a).1);
                            let after = miss(want[d], lo[d] + dl, hi[d] + dh) + miss(want[e], lo[e] - dl, hi[e] - dh);
                            if after < before && best.is_none_or(|x| before - after > x.0) {
                                best = Some((before - after, d, a, e, b));
                            }
                        }
                    }
                }
            }
            let Some((_, d, a, e, b)) = best else { break };
            (held[d][a], held[d][b], held[e][b], held[e][a]) =
                (held[d][a] - 1, held[d][b] + 1, held[e][b] - 1, held[e][a] + 1);
            let (dl, dh) = (range(b).0 - range(a).0, range(b).1 - range(a).1);
            (lo[d], hi[d], lo[e], hi[e]) = (lo[d] + dl, hi[d] + dh, lo[e] - dl, hi[e] - dh);
        }
        let total_miss: i128 = (0..n).map(|d| miss(want[d], lo[d], hi[d])).sum();
        (total_miss, held, lo, hi)
    };
    // Single swaps can get stuck: retry from seeded shuffles of the order (a few).
    let mut best = attempt(&ks);
    let mut rng = WyRand(hash3(seed, 1, 0xF17));
    for _ in 0..8 {
        if best.0 == 0 {
            break;
        }
        for i in (1..ks.len()).rev() {
            ks.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        let next = attempt(&ks);
        if next.0 < best.0 {
            best = next;
        }
    }
    let (_, held, lo, hi) = best;
    let per_level: Vec<Vec<usize>> = held
        .iter()
        .map(|h| h.iter().enumerate().flat_map(|(k, &c)| std::iter::repeat_n(k, c as usize)).collect())
        .collect();
    // Counts: each at its bucket's floor, the rest of the level's share spread by room.
    let mut counts: Vec<Vec<u64>> = per_level
        .iter()
        .enumerate()
        .map(|(d, ks)| {
            let rooms: Vec<u64> = ks.iter().map(|&k| (range(k).1 - range(k).0) as u64).collect();
            let extra = (want[d] - lo[d]).clamp(0, hi[d] - lo[d]) as u64;
            ks.iter().zip(apportion(&rooms, extra)).map(|(&k, x)| range(k).0 as u64 + x).collect()
        })
        .collect();
    // Where no fit was found the total can be off: even it out, buckets first.
    let mut sum: u64 = counts.iter().flatten().sum();
    for pass in 0..2 {
        for (d, cs) in counts.iter_mut().enumerate() {
            for (c, &k) in cs.iter_mut().zip(&per_level[d]) {
                let (l, h) = if pass == 0 { (range(k).0 as u64, range(k).1 as u64) } else { (0, u64::MAX) };
                if sum < total {
                    let add = (total - sum).min(h.saturating_sub(*c));
                    (*c, sum) = (*c + add, sum + add);
                } else if sum > total {
                    let sub = (sum - total).min(c.saturating_sub(l));
                    (*c, sum) = (*c - sub, sum - sub);
                }
            }
        }
    }
    let mut rng = WyRand(hash3(seed, 0, 0xD1));
    for cs in counts.iter_mut() {
        for i in (1..cs.len()).rev() {
            cs.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
    }
    counts
}

/// Directories of a drawn tree in BFS order (parents first, siblings contiguous), with
/// their file ranges; and the index of each level's first directory (plus the end).
pub fn plan_dirs(spec: &TreeSpec, shape: &DrawnShape) -> (Vec<DirNode>, Vec<u32>) {
    let levels = &shape.dirs_per_depth;
    let slots: Vec<usize> = levels.iter().map(|&n| n as usize).collect();
    // Subdirectories per directory, level by level: level d's directories hold exactly
    // level d+1 (a level the buckets cannot fit spreads its children evenly).
    let total_dirs: u64 = levels.iter().sum();
    let children = (!shape.subdirs_per_dir.is_empty()).then(|| {
        fit_to_levels(&shape.subdirs_per_dir, total_dirs - 1, &slots, &levels[1.min(levels.len())..], spec.seed ^ 0x5D)
    });
    let mut dirs = vec![DirNode { parent: 0, name: CString::default(), depth: 0, first_file: 0, nfiles: 0 }];
    let mut level_start = vec![0u32];
    let mut prev = (0u32, 1u64);
    for (d, &n) in levels.iter().enumerate().skip(1) {
        let start = dirs.len() as u32;
        level_start.push(start);
        let fitted = children.as_ref().map(|c| &c[d - 1]).filter(|c| c.iter().sum::<u64>() == n);
        // Parent of the j-th child: by the fitted counts, or an even spread.
        let mut bounds = fitted.map(|c| {
            c.iter()
                .scan(0u64, |acc, &k| {
                    *acc += k;
                    Some(*acc)
                })
                .collect::<Vec<_>>()
        });
        let (mut last_parent, mut sibling) = (u32::MAX, 0u64);
        let mut k = 0usize;
        for j in 0..n {
            let parent = match bounds.as_mut() {
                Some(b) => {
                    while b[k] <= j {
                        k += 1;
                    }
                    prev.0 + k as u32
                }
                None => prev.0 + (j as u128 * prev.1 as u128 / n as u128) as u32,
            };
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
    // Files per directory fitted to each level's share of files.
    let want = &shape.files_per_depth[1.min(shape.files_per_depth.len())..];
    let per_level = fit_to_levels(&shape.files_per_dir, spec.files, &slots, want, spec.seed);
    let mut next_file = 0u64;
    for (d, cs) in per_level.into_iter().enumerate() {
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
            let k = crate::tree::inventory::log2_bucket(s);
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
    fn level_fit_keeps_buckets_level_shares_and_total() {
        let buckets = [2u64, 3, 4, 1]; // 0 | 1 | 2–3 | 4–7
        let slots = [1usize, 3, 6];
        let want = [5u64, 7, 8];
        let c = fit_to_levels(&buckets, 20, &slots, &want, 3);
        let sums: Vec<u64> = c.iter().map(|l| l.iter().sum()).collect();
        assert_eq!(sums, want, "{c:?}");
        let mut h = vec![0u64; 4];
        for v in c.iter().flatten() {
            h[crate::tree::inventory::log2_bucket(*v)] += 1;
        }
        assert_eq!(h, buckets);
        assert_eq!(c.iter().map(|l| l.len()).collect::<Vec<_>>(), slots);
        // No fit (the root's one directory cannot hold 30): the total still holds.
        let c = fit_to_levels(&buckets, 20, &slots, &[30, 0, 0], 3);
        assert_eq!(c.iter().flatten().sum::<u64>(), 20);
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
