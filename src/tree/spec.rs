//! TreeSpec: the shape of a data set. Spec + seed → the same names, sizes and bytes
//! everywhere.

use super::rng::{hash3, unit_f64};
use crate::units::{exact_size, fmt_size, parse_size};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Stream ids for `hash3`, so size, name and content draws are independent.
pub(crate) const STREAM_SIZE: u64 = 1;
pub(crate) const STREAM_NAME: u64 = 2;
pub(crate) const STREAM_CONTENT: u64 = 3;

/// Most files in one tree (the plan holds ~20 bytes per 1,000 files; beyond this a
/// typo like `--files 1T` would exhaust memory before any work starts).
pub const MAX_FILES: u64 = 1_000_000_000;
/// Most directories in one tree (the plan holds ~60 bytes per directory).
pub const MAX_DIRS: u64 = 10_000_000;

/// Largest file the generator will make (1 TiB): guards against typos like `1P`.
pub const MAX_FILE_SIZE: u64 = 1 << 40;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeSpec {
    pub files: u64,
    pub size: SizeDist,
    pub layout: Layout,
    /// Length of every file name in bytes.
    pub name_len: usize,
    pub content: Content,
    pub seed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SizeDist {
    Fixed {
        bytes: u64,
    },
    /// Uniform in [min, max].
    Uniform {
        min: u64,
        max: u64,
    },
    /// exp(N(ln median, sigma²)), capped at MAX_FILE_SIZE.
    Lognormal {
        median: u64,
        sigma: f64,
    },
    /// Exponential with the given mean, capped at MAX_FILE_SIZE.
    Exponential {
        mean: u64,
    },
    /// File i gets list[i % len].
    List {
        sizes: Vec<u64>,
    },
    /// Drawn from a log2 histogram (an inventory's): `counts[k]` files and `bytes[k]`
    /// bytes in bucket k; the counts sum to the tree's file count (see tree/drawn.rs).
    Histogram {
        counts: Vec<u64>,
        bytes: Vec<u64>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Layout {
    /// Every file in the tree's root directory.
    Flat,
    /// Files in leaf directories of a tree with `fanout` children per directory.
    /// Without `depth`, the depth is the smallest that gives each leaf at most
    /// `files_per_dir` files; with it, files spread evenly over fanout^depth leaves.
    Nested { files_per_dir: u64, fanout: u64, depth: Option<u32> },
    /// Directories and files placed from histograms (an inventory's shape, tree/drawn.rs).
    Drawn { shape: Box<super::drawn::DrawnShape> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Content {
    Zeros,
    /// Incompressible pseudo-random bytes.
    Random,
    /// Compresses about `ratio`:1: in every 4 KiB block, the first 4096/ratio bytes are
    /// random and the rest zeros (the scheme fio's buffer_compress_percentage uses).
    Compressible {
        ratio: f64,
    },
}

impl SizeDist {
    /// Size of file `index` for this seed.
    #[inline]
    pub fn size_of(&self, seed: u64, index: u64) -> u64 {
        match self {
            SizeDist::Fixed { bytes } => *bytes,
            SizeDist::Uniform { min, max } => {
                let span = max - min + 1;
                min + ((hash3(seed, index, STREAM_SIZE) as u128 * span as u128) >> 64) as u64
            }
            SizeDist::Lognormal { median, sigma } => {
                let z = normal(seed, index);
                cap((*median as f64) * (sigma * z).exp())
            }
            SizeDist::Exponential { mean } => {
                let u = unit_f64(hash3(seed, index, STREAM_SIZE));
                cap(-(*mean as f64) * (1.0 - u).ln())
            }
            SizeDist::List { sizes } => sizes[(index % sizes.len() as u64) as usize],
            SizeDist::Histogram { counts, bytes } => super::drawn::hist_size(counts, bytes, seed, index),
        }
    }

    /// Parse `4k` (fixed), `uniform:1k-64k`, `lognormal:16k,1.5`, `exp:32k`, `list:1k,4k,1M`.
    pub fn parse(s: &str) -> Result<SizeDist, String> {
        let d = if let Some(r) = s.strip_prefix("uniform:") {
            let (a, b) =
                r.split_once('-').ok_or_else(|| format!("'{s}': expected uniform:MIN-MAX, e.g. uniform:1k-64k"))?;
            let (min, max) = (parse_size(a)?, parse_size(b)?);
            if min > max {
                return Err(format!("'{s}': MIN is larger than MAX"));
            }
            SizeDist::Uniform { min, max }
        } else if let Some(r) = s.strip_prefix("lognormal:") {
            let (m, sg) = r
                .split_once(',')
                .ok_or_else(|| format!("'{s}': expected lognormal:MEDIAN,SIGMA, e.g. lognormal:16k,1.5"))?;
            let sigma: f64 = sg.trim().parse().map_err(|_| format!("'{s}': SIGMA '{sg}' is not a number"))?;
            if !(sigma.is_finite() && (0.0..=10.0).contains(&sigma)) {
                return Err(format!("'{s}': SIGMA must be between 0 and 10"));
            }
            SizeDist::Lognormal { median: parse_size(m)?, sigma }
        } else if let Some(r) = s.strip_prefix("exp:") {
            SizeDist::Exponential { mean: parse_size(r)? }
        } else if let Some(r) = s.strip_prefix("list:") {
            let sizes = r.split(',').map(parse_size).collect::<Result<Vec<_>, _>>()?;
            SizeDist::List { sizes }
        } else {
            SizeDist::Fixed { bytes: parse_size(s)? }
        };
        d.check()?;
        Ok(d)
    }

    fn check(&self) -> Result<(), String> {
        let biggest = match self {
            SizeDist::Fixed { bytes } => *bytes,
            SizeDist::Uniform { max, .. } => *max,
            SizeDist::Lognormal { median, .. } => *median,
            SizeDist::Exponential { mean } => *mean,
            SizeDist::List { sizes } => {
                if sizes.is_empty() {
                    return Err("the size list is empty".into());
                }
                *sizes.iter().max().unwrap_or(&0)
            }
            SizeDist::Histogram { counts, .. } => {
                crate::tree::inventory::log2_bucket_range(counts.iter().rposition(|&c| c > 0).unwrap_or(0)).0
            }
        };
        if biggest > MAX_FILE_SIZE {
            return Err(format!("file size {} is larger than the 1 TiB limit", fmt_size(biggest as f64)));
        }
        Ok(())
    }
}

impl fmt::Display for SizeDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let z = |b: &u64| exact_size(*b).replace(' ', "");
        match self {
            SizeDist::Fixed { bytes } => write!(f, "{}", z(bytes)),
            SizeDist::Uniform { min, max } => write!(f, "uniform:{}-{}", z(min), z(max)),
            SizeDist::Lognormal { median, sigma } => write!(f, "lognormal:{},{sigma}", z(median)),
            SizeDist::Exponential { mean } => write!(f, "exp:{}", z(mean)),
            SizeDist::List { sizes } => {
                write!(f, "list:{}", sizes.iter().map(z).collect::<Vec<_>>().join(","))
            }
            SizeDist::Histogram { counts, bytes } => {
                let n = counts.iter().sum::<u64>().max(1);
                write!(f, "histogram(mean {})", fmt_size(bytes.iter().sum::<u64>() as f64 / n as f64).replace(' ', ""))
            }
        }
    }
}

impl Content {
    /// Parse `zeros`, `random` or `compressible:RATIO` (RATIO ≥ 1, e.g. 2 or 3.5).
    pub fn parse(s: &str) -> Result<Content, String> {
        match s {
            "zeros" | "zero" => Ok(Content::Zeros),
            "random" => Ok(Content::Random),
            _ => {
                let r = s
                    .strip_prefix("compressible:")
                    .ok_or_else(|| format!("'{s}': expected zeros, random or compressible:RATIO"))?;
                let ratio: f64 = r.parse().map_err(|_| format!("'{s}': RATIO '{r}' is not a number"))?;
                if !(ratio.is_finite() && (1.0..=4096.0).contains(&ratio)) {
                    return Err(format!("'{s}': RATIO must be between 1 and 4096"));
                }
                Ok(Content::Compressible { ratio })
            }
        }
    }
}

impl fmt::Display for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Content::Zeros => write!(f, "zeros"),
            Content::Random => write!(f, "random"),
            Content::Compressible { ratio } => write!(f, "compressible:{ratio}"),
        }
    }
}

impl TreeSpec {
    /// Check the spec as a whole; errors name the flag at fault.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.files == 0 {
            return Err(("--files", "must be at least 1".into()));
        }
        if self.files > MAX_FILES {
            return Err(("--files", format!("{} files is more than the {MAX_FILES} a tree may hold", self.files)));
        }
        if let Layout::Nested { files_per_dir, fanout, depth } = &self.layout {
            if *files_per_dir == 0 {
                return Err(("--files-per-dir", "must be at least 1".into()));
            }
            if *fanout < 2 {
                return Err(("--fanout", "must be at least 2".into()));
            }
            if let Some(d) = depth {
                if *d > 64 {
                    return Err(("--depth", "must be at most 64".into()));
                }
                if (*fanout as f64).powi(*d as i32) > 100_000_000.0 {
                    return Err(("--depth", format!("{fanout}^{d} leaf directories is more than 100 million")));
                }
            }
        }
        if let (Layout::Drawn { shape }, SizeDist::Histogram { counts, .. }) = (&self.layout, &self.size) {
            let names = self.files + shape.dirs() - 1;
            if counts.iter().sum::<u64>() != self.files || shape.name_lens.iter().sum::<u64>() != names {
                return Err(("--files", "a drawn tree's histograms must sum to its file count".into()));
            }
        }
        let dirs = super::layout::Shape::of(self).dir_count();
        if dirs > MAX_DIRS {
            return Err((
                "--files-per-dir",
                format!("this layout needs {dirs} directories, more than the {MAX_DIRS} a tree may hold"),
            ));
        }
        let min_name = super::layout::min_name_len(self.files);
        if self.name_len < min_name || self.name_len > 255 {
            return Err((
                "--name-len",
                format!("must be between {min_name} and 255 for {} files (names must be unique)", self.files),
            ));
        }
        Ok(())
    }

    /// Total bytes of all files (exact: sums every file's size; one pass per call).
    pub fn total_bytes(&self) -> u64 {
        self.sum_sizes(|b| b)
    }

    /// Sum of `f(size)` over every file, exact (one pass over the sizes; a fixed size is
    /// one multiplication).
    pub fn sum_sizes(&self, f: impl Fn(u64) -> u64) -> u64 {
        match &self.size {
            SizeDist::Fixed { bytes } => f(*bytes).saturating_mul(self.files),
            d => (0..self.files).map(|i| f(d.size_of(self.seed, i))).fold(0u64, u64::saturating_add),
        }
    }

    /// Short key naming this tree in tables and results: `n=65536 size=1KiB`; a drawn
    /// tree adds its directory count (`predict`'s calibration draws trees of one file
    /// count in several directory counts: each is its own cell).
    pub fn key(&self) -> String {
        match &self.layout {
            Layout::Drawn { shape } => format!("n={} size={} dirs={}", self.files, self.size, shape.dirs()),
            _ => format!("n={} size={}", self.files, self.size),
        }
    }
}

fn cap(v: f64) -> u64 {
    if v.is_finite() { v.clamp(0.0, MAX_FILE_SIZE as f64) as u64 } else { MAX_FILE_SIZE }
}

/// Standard normal draw for file `index` (Box–Muller on two independent hashes).
fn normal(seed: u64, index: u64) -> f64 {
    let h = hash3(seed, index, STREAM_SIZE);
    let u1 = unit_f64(h).max(f64::MIN_POSITIVE);
    let u2 = unit_f64(super::rng::mix(h));
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_dists() {
        assert_eq!(SizeDist::parse("4k").unwrap(), SizeDist::Fixed { bytes: 4096 });
        assert_eq!(SizeDist::parse("uniform:1k-2k").unwrap(), SizeDist::Uniform { min: 1024, max: 2048 });
        assert_eq!(SizeDist::parse("lognormal:16k,1.5").unwrap(), SizeDist::Lognormal { median: 16384, sigma: 1.5 });
        assert_eq!(SizeDist::parse("exp:32k").unwrap(), SizeDist::Exponential { mean: 32768 });
        assert_eq!(SizeDist::parse("list:1,2,3").unwrap(), SizeDist::List { sizes: vec![1, 2, 3] });
        for bad in ["uniform:2k-1k", "uniform:1k", "lognormal:1k", "lognormal:1k,x", "list:", "12XB", "2T"] {
            assert!(SizeDist::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(SizeDist::parse("1500").unwrap().to_string(), "1500B");
        for s in ["4KiB", "uniform:1KiB-2KiB", "lognormal:16KiB,1.5", "exp:32KiB", "list:1B,2B"] {
            assert_eq!(SizeDist::parse(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn sizes_stay_in_range_and_are_deterministic() {
        let u = SizeDist::Uniform { min: 10, max: 20 };
        let v: Vec<u64> = (0..1000).map(|i| u.size_of(9, i)).collect();
        assert!(v.iter().all(|&x| (10..=20).contains(&x)));
        assert!(v.contains(&10) && v.contains(&20));
        assert_eq!(v, (0..1000).map(|i| u.size_of(9, i)).collect::<Vec<_>>());
        assert_ne!(v, (0..1000).map(|i| u.size_of(10, i)).collect::<Vec<_>>());
    }

    #[test]
    fn lognormal_median_and_exponential_mean() {
        let n = 20_000u64;
        let ln = SizeDist::Lognormal { median: 10_000, sigma: 1.0 };
        let mut v: Vec<u64> = (0..n).map(|i| ln.size_of(1, i)).collect();
        v.sort();
        let med = v[v.len() / 2] as f64;
        assert!((med / 10_000.0 - 1.0).abs() < 0.05, "median {med}");
        let ex = SizeDist::Exponential { mean: 5000 };
        let mean = (0..n).map(|i| ex.size_of(1, i)).sum::<u64>() as f64 / n as f64;
        assert!((mean / 5000.0 - 1.0).abs() < 0.05, "mean {mean}");
    }

    #[test]
    fn content_parse() {
        assert_eq!(Content::parse("zeros").unwrap(), Content::Zeros);
        assert_eq!(Content::parse("compressible:2").unwrap(), Content::Compressible { ratio: 2.0 });
        assert!(Content::parse("compressible:0.5").is_err());
        assert!(Content::parse("rand").is_err());
    }
}
