//! Inventory: the shape of a real tree — counts, bytes, allocation per cluster size and
//! histograms of file size, files per directory, depth and name length — without any
//! name or content, so a private tree's shape can be shared, planned for and imitated.
//!
//! Histograms of sizes and counts use log2 buckets ([`log2_bucket`]): bucket 0 holds 0,
//! bucket k ≥ 1 holds values in [2^(k-1), 2^k). Depth and name length are linear
//! (index = value). Hard-linked files are counted once per link (as `du -l` does).

use crate::error::{Error, Result};
use crate::fs::walk::{self, Kind};
use crate::signals;
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, StatxFlags, statx};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Mutex;

/// The `kind` tag of an inventory file.
pub const INVENTORY_KIND: &str = "manyfiles-inventory";
pub const INVENTORY_SCHEMA: u32 = 1;

/// Cluster sizes whose allocation every inventory holds exactly: 512 B … 2 MiB.
pub fn cluster_sizes() -> impl Iterator<Item = u64> {
    (9..=21).map(|p| 1u64 << p)
}

/// log2 bucket of `v`: 0 → 0; otherwise the number of significant bits.
pub fn log2_bucket(v: u64) -> usize {
    (64 - v.leading_zeros()) as usize
}

/// Range of values in log2 bucket `k`: [lo, hi].
pub fn log2_bucket_range(k: usize) -> (u64, u64) {
    match k {
        0 => (0, 0),
        64 => (1 << 63, u64::MAX),
        _ => (1u64 << (k - 1), (1u64 << k) - 1),
    }
}

/// Bytes a file of `size` bytes occupies in clusters of `cluster` bytes.
pub fn cluster_allocation(size: u64, cluster: u64) -> u64 {
    size.div_ceil(cluster) * cluster
}

/// Allocation of every file if stored in clusters of `cluster_bytes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterSlack {
    pub cluster_bytes: u64,
    pub allocated_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inventory {
    pub kind: String,
    pub schema: u32,
    pub tool_version: String,
    pub created_utc: String,
    /// Regular files.
    pub files: u64,
    /// Directories, the root included.
    pub dirs: u64,
    pub symlinks: u64,
    /// FIFOs, sockets, device nodes.
    pub other: u64,
    /// Files with more than one link (each link is counted as a file).
    pub hardlinked: u64,
    /// Σ file sizes.
    pub total_bytes: u64,
    /// Σ st_blocks × 512 of files, as stored on the scanned file system.
    pub allocated_bytes: u64,
    /// Deepest file or directory (root's entries are at depth 1).
    pub max_depth: u64,
    /// Files per log2 size bucket, and the bytes they hold.
    pub size_hist: Vec<u64>,
    pub size_hist_bytes: Vec<u64>,
    /// Directories per log2 bucket of the number of files directly in them.
    pub files_per_dir_hist: Vec<u64>,
    /// Directories per log2 bucket of the number of subdirectories directly in them.
    pub subdirs_per_dir_hist: Vec<u64>,
    /// Σ over directories of (files directly in it)², exact (the cost model's
    /// directory-size term); None in inventories written before it was recorded
    /// (then estimated from `files_per_dir_hist`).
    #[serde(default)]
    pub files_per_dir_sq_sum: Option<f64>,
    /// Most files directly in one directory; None in older inventories.
    #[serde(default)]
    pub max_files_per_dir: Option<u64>,
    /// Files per depth (index = depth; root's files are at depth 1).
    pub depth_hist: Vec<u64>,
    /// Directories per depth (index 0 = the root).
    pub dir_depth_hist: Vec<u64>,
    /// Entries (files, dirs, symlinks, other) per name length in bytes.
    pub name_len_hist: Vec<u64>,
    /// Exact allocation per cluster size, 512 B … 2 MiB.
    pub clusters: Vec<ClusterSlack>,
    /// Directories that could not be read (e.g. permission denied); their contents are missing.
    pub unreadable_dirs: u64,
    /// Entries that vanished or could not be stat'ed between listing and statx.
    pub vanished: u64,
}

fn add(hist: &mut Vec<u64>, index: usize, n: u64) {
    if hist.len() <= index {
        hist.resize(index + 1, 0);
    }
    hist[index] += n;
}

fn add_all(into: &mut Vec<u64>, from: &[u64]) {
    for (i, &n) in from.iter().enumerate() {
        add(into, i, n);
    }
}

impl Default for Inventory {
    fn default() -> Self {
        Inventory::empty()
    }
}

impl Inventory {
    pub fn empty() -> Inventory {
        Inventory {
            kind: INVENTORY_KIND.into(),
            schema: INVENTORY_SCHEMA,
            tool_version: env!("CARGO_PKG_VERSION").into(),
            created_utc: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            files: 0,
            dirs: 0,
            symlinks: 0,
            other: 0,
            hardlinked: 0,
            total_bytes: 0,
            allocated_bytes: 0,
            max_depth: 0,
            size_hist: Vec::new(),
            size_hist_bytes: Vec::new(),
            files_per_dir_hist: Vec::new(),
            subdirs_per_dir_hist: Vec::new(),
            files_per_dir_sq_sum: Some(0.0),
            max_files_per_dir: Some(0),
            depth_hist: Vec::new(),
            dir_depth_hist: Vec::new(),
            name_len_hist: Vec::new(),
            clusters: cluster_sizes().map(|c| ClusterSlack { cluster_bytes: c, allocated_bytes: 0 }).collect(),
            unreadable_dirs: 0,
            vanished: 0,
        }
    }

    /// One regular file of `size` bytes (`allocated` bytes on disk) at `depth`.
    pub fn add_file(&mut self, depth: u64, name_len: usize, size: u64, allocated: u64, nlink: u64) {
        self.files += 1;
        self.total_bytes += size;
        self.allocated_bytes += allocated;
        if nlink > 1 {
            self.hardlinked += 1;
        }
        self.max_depth = self.max_depth.max(depth);
        let k = log2_bucket(size);
        add(&mut self.size_hist, k, 1);
        add(&mut self.size_hist_bytes, k, size);
        add(&mut self.depth_hist, depth as usize, 1);
        add(&mut self.name_len_hist, name_len, 1);
        for c in &mut self.clusters {
            c.allocated_bytes += cluster_allocation(size, c.cluster_bytes);
        }
    }

    /// One directory at `depth` (0 = root) holding `files` files and `subdirs` directories.
    /// `name_len` is None for the root.
    pub fn add_dir(&mut self, depth: u64, name_len: Option<usize>, files: u64, subdirs: u64) {
        self.dirs += 1;
        self.max_depth = self.max_depth.max(depth);
        add(&mut self.dir_depth_hist, depth as usize, 1);
        add(&mut self.files_per_dir_hist, log2_bucket(files), 1);
        if let Some(sq) = &mut self.files_per_dir_sq_sum {
            *sq += (files as f64) * (files as f64);
        }
        if let Some(m) = &mut self.max_files_per_dir {
            *m = (*m).max(files);
        }
        add(&mut self.subdirs_per_dir_hist, log2_bucket(subdirs), 1);
        if let Some(n) = name_len {
            add(&mut self.name_len_hist, n, 1);
        }
    }

    /// A symlink or other non-regular, non-directory entry.
    pub fn add_special(&mut self, kind: Kind, depth: u64, name_len: usize) {
        match kind {
            Kind::Symlink => self.symlinks += 1,
            _ => self.other += 1,
        }
        self.max_depth = self.max_depth.max(depth);
        add(&mut self.name_len_hist, name_len, 1);
    }

    /// Adds another (partial) inventory into this one: scans build one per thread.
    pub fn merge(&mut self, o: &Inventory) {
        self.files += o.files;
        self.dirs += o.dirs;
        self.symlinks += o.symlinks;
        self.other += o.other;
        self.hardlinked += o.hardlinked;
        self.total_bytes += o.total_bytes;
        self.allocated_bytes += o.allocated_bytes;
        self.max_depth = self.max_depth.max(o.max_depth);
        add_all(&mut self.size_hist, &o.size_hist);
        add_all(&mut self.size_hist_bytes, &o.size_hist_bytes);
        add_all(&mut self.files_per_dir_hist, &o.files_per_dir_hist);
        self.files_per_dir_sq_sum = self.files_per_dir_sq_sum.zip(o.files_per_dir_sq_sum).map(|(a, b)| a + b);
        self.max_files_per_dir = self.max_files_per_dir.zip(o.max_files_per_dir).map(|(a, b)| a.max(b));
        add_all(&mut self.subdirs_per_dir_hist, &o.subdirs_per_dir_hist);
        add_all(&mut self.depth_hist, &o.depth_hist);
        add_all(&mut self.dir_depth_hist, &o.dir_depth_hist);
        add_all(&mut self.name_len_hist, &o.name_len_hist);
        for (a, b) in self.clusters.iter_mut().zip(&o.clusters) {
            debug_assert_eq!(a.cluster_bytes, b.cluster_bytes);
            a.allocated_bytes += b.allocated_bytes;
        }
        self.unreadable_dirs += o.unreadable_dirs;
        self.vanished += o.vanished;
    }

    /// Σ over directories of (files in it)²: exact when recorded, else estimated from
    /// the files-per-directory histogram ([`dir_sq_from_hist`]).
    pub fn dir_sq(&self) -> f64 {
        self.files_per_dir_sq_sum.unwrap_or_else(|| dir_sq_from_hist(&self.files_per_dir_hist))
    }

    /// Most files in one directory: exact when recorded, else the top of the highest
    /// non-empty histogram bucket.
    pub fn most_files_in_a_dir(&self) -> u64 {
        self.max_files_per_dir.unwrap_or_else(|| {
            self.files_per_dir_hist.iter().rposition(|&n| n > 0).map_or(0, |k| log2_bucket_range(k).1)
        })
    }

    /// Allocation of every file in clusters of `cluster` bytes, when the inventory holds it.
    pub fn per_cluster_allocated(&self, cluster: u64) -> Option<u64> {
        self.clusters.iter().find(|c| c.cluster_bytes == cluster).map(|c| c.allocated_bytes)
    }

    /// Walks `path` on `threads` threads (symlinks are counted, never followed; other
    /// file systems below `path` are walked too). Unreadable directories and entries
    /// that vanish mid-walk are counted, not fatal.
    pub fn scan(path: &Path, threads: usize) -> Result<Inventory> {
        let root = walk::open_root(path)
            .map_err(|e| Error::bad("PATH", format!("{}: cannot open as a directory: {e}", path.display())))?;
        let parts: Vec<Mutex<Inventory>> = (0..threads.max(1)).map(|_| Mutex::new(Inventory::empty())).collect();
        walk::par_tasks(
            threads,
            vec![(walk::DirTask::Root(root), 0u64, None)],
            |(t, depth, name_len): (walk::DirTask, u64, Option<usize>), spawn| {
                if signals::pending() != 0 {
                    return;
                }
                let me = rayon::current_thread_index().unwrap_or(0) % parts.len();
                let mut inv = parts[me].lock().expect("one thread per part");
                // Opened here, not in the parent (walk::DirTask). Counted in its parent's
                // subdirectories already: one that vanished since it was listed is
                // counted as vanished too, one that cannot be opened (permission) as
                // unreadable.
                let fd = match t.open() {
                    Ok(fd) => fd,
                    Err(Errno::NOENT) | Err(Errno::NOTDIR) | Err(Errno::LOOP) => {
                        inv.vanished += 1;
                        return;
                    }
                    Err(_) => {
                        inv.unreadable_dirs += 1;
                        inv.add_dir(depth, name_len, 0, 0);
                        return;
                    }
                };
                let entries = match walk::read_dir(fd.as_fd()) {
                    Ok(e) => e,
                    Err(_) => {
                        inv.unreadable_dirs += 1;
                        inv.add_dir(depth, name_len, 0, 0);
                        return;
                    }
                };
                let (mut files, mut subdirs) = (0, 0);
                for e in entries {
                    let len = e.name.as_bytes().len();
                    match e.kind {
                        Kind::File => {
                            let mask = StatxFlags::SIZE | StatxFlags::BLOCKS | StatxFlags::NLINK;
                            match statx(&*fd, &e.name, AtFlags::SYMLINK_NOFOLLOW, mask) {
                                Ok(st) => {
                                    files += 1;
                                    inv.add_file(depth + 1, len, st.stx_size, st.stx_blocks * 512, st.stx_nlink as u64);
                                }
                                Err(_) => inv.vanished += 1,
                            }
                        }
                        Kind::Dir => {
                            subdirs += 1;
                            spawn((walk::DirTask::Below(std::sync::Arc::clone(&fd), e.name), depth + 1, Some(len)));
                        }
                        k => inv.add_special(k, depth + 1, len),
                    }
                }
                inv.add_dir(depth, name_len, files, subdirs);
            },
        );
        let signal = signals::pending();
        if signal != 0 {
            return Err(Error::Interrupted { signal });
        }
        let mut all = Inventory::empty();
        for p in parts {
            all.merge(&p.into_inner().expect("walk finished"));
        }
        Ok(all)
    }

    pub fn load(path: &Path) -> Result<Inventory> {
        let flag = "--inventory";
        let text = crate::fs::input::read_bounded(path, crate::fs::input::JSON_MAX)
            .map_err(|e| Error::bad(flag, format!("{}: {e}", path.display())))?;
        let inv: Inventory = serde_json::from_str(&text)
            .map_err(|e| Error::bad(flag, format!("{}: not a manyfiles inventory: {e}", path.display())))?;
        if inv.kind != INVENTORY_KIND {
            return Err(Error::bad(
                flag,
                format!("{}: kind is {:?}, not {INVENTORY_KIND:?}", path.display(), inv.kind),
            ));
        }
        if inv.schema != INVENTORY_SCHEMA {
            return Err(Error::bad(
                flag,
                format!(
                    "{}: inventory schema {} (this manyfiles reads {INVENTORY_SCHEMA})",
                    path.display(),
                    inv.schema
                ),
            ));
        }
        Ok(inv)
    }

    /// Written atomically (temp file + rename).
    pub fn save(&self, path: &Path) -> Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(|e| Error::failed(format!("inventory: {e}")))?;
        crate::fs::output::write_file(path, &json)
    }

    /// Slack (allocated − data) in clusters of `cluster` bytes.
    pub fn slack_bytes(&self, cluster: u64) -> Option<u64> {
        self.per_cluster_allocated(cluster).map(|a| a - self.total_bytes)
    }
}

/// Σ n² estimated from a files-per-directory log2 histogram (`hist[k]`
/// directories with a file count in bucket k: 0, or [2^(k−1), 2^k − 1]): every
/// directory counted as E[n²] of n uniform over its bucket's integers.
pub fn dir_sq_from_hist(hist: &[u64]) -> f64 {
    hist.iter()
        .enumerate()
        .map(|(k, &dirs)| {
            let (lo, hi) = log2_bucket_range(k);
            let (lo, hi) = (lo as f64, hi as f64);
            // mean of n² over lo..=hi: ((hi(hi+1)(2hi+1) − (lo−1)lo(2lo−1)) / 6) / (hi − lo + 1)
            let s = |x: f64| x * (x + 1.0) * (2.0 * x + 1.0) / 6.0;
            let mean = if hi > lo { (s(hi) - s(lo - 1.0)) / (hi - lo + 1.0) } else { lo * lo };
            mean * dirs as f64
        })
        .sum()
}

#[cfg(test)]
mod tests {
    #[test]
    fn dir_sq_from_a_histogram() {
        // Bucket 0 (empty dirs) adds nothing; bucket 1 is exactly 1; bucket 2 is {2, 3}.
        assert_eq!(super::dir_sq_from_hist(&[5, 2, 2]), 2.0 + 2.0 * 6.5);
        // A flat 1,000-file directory lies in bucket 10 [512, 1023]: within a factor 1.5.
        let est = super::dir_sq_from_hist(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert!(est > 1000.0 * 1000.0 / 2.0 && est < 1.5 * 1e6, "{est}");
    }

    use super::*;

    #[test]
    fn buckets() {
        assert_eq!(log2_bucket(0), 0);
        assert_eq!(log2_bucket(1), 1);
        assert_eq!(log2_bucket(2), 2);
        assert_eq!(log2_bucket(3), 2);
        assert_eq!(log2_bucket(4), 3);
        assert_eq!(log2_bucket(1023), 10);
        assert_eq!(log2_bucket(1024), 11);
        for k in 0..64 {
            let (lo, hi) = log2_bucket_range(k);
            assert_eq!(log2_bucket(lo), k);
            assert_eq!(log2_bucket(hi), k);
        }
        assert_eq!(log2_bucket(u64::MAX), 64);
    }

    #[test]
    fn cluster_allocation_rounds_up() {
        assert_eq!(cluster_allocation(0, 4096), 0);
        assert_eq!(cluster_allocation(1, 4096), 4096);
        assert_eq!(cluster_allocation(4096, 4096), 4096);
        assert_eq!(cluster_allocation(4097, 4096), 8192);
    }

    #[test]
    fn scan_counts_a_known_tree_and_brute_force_slack_matches() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path();
        let sizes = [0u64, 1, 100, 4096, 5000, 70_000];
        std::fs::create_dir_all(p.join("a/b")).unwrap();
        std::fs::create_dir(p.join("c")).unwrap();
        for (i, s) in sizes.iter().enumerate() {
            let dir = ["", "a", "a/b"][i % 3];
            std::fs::write(p.join(dir).join(format!("f{i}")), vec![7u8; *s as usize]).unwrap();
        }
        std::os::unix::fs::symlink("/nowhere", p.join("a/dangling")).unwrap();
        std::fs::hard_link(p.join("f0"), p.join("c/f0-link")).unwrap();
        let inv = Inventory::scan(p, 3).unwrap();
        assert_eq!(inv.files, 7);
        assert_eq!(inv.dirs, 4);
        assert_eq!(inv.symlinks, 1);
        assert_eq!(inv.hardlinked, 2);
        assert_eq!(inv.total_bytes, sizes.iter().sum::<u64>());
        assert_eq!(inv.max_depth, 3);
        assert_eq!(inv.size_hist.iter().sum::<u64>(), 7);
        assert_eq!(inv.size_hist[0], 2, "two empty files");
        assert_eq!(inv.size_hist_bytes.iter().sum::<u64>(), inv.total_bytes);
        assert_eq!(inv.depth_hist, vec![0, 2, 3, 2]);
        assert_eq!(inv.dir_depth_hist, vec![1, 2, 1]);
        assert_eq!(inv.files_per_dir_hist.iter().sum::<u64>(), 4);
        for c in cluster_sizes() {
            let brute: u64 = sizes.iter().map(|s| cluster_allocation(*s, c)).sum();
            assert_eq!(inv.per_cluster_allocated(c), Some(brute), "cluster {c}");
        }
        let file = t.path().join("inv.json");
        let out = tempfile::tempdir().unwrap();
        let file2 = out.path().join("inv.json");
        inv.save(&file2).unwrap();
        assert_eq!(Inventory::load(&file2).unwrap(), inv);
        assert!(Inventory::load(&file).is_err());
    }

    #[test]
    fn load_rejects_other_json() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("x.json");
        std::fs::write(&f, br#"{"kind":"something","schema":1}"#).unwrap();
        let e = Inventory::load(&f).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }
}
