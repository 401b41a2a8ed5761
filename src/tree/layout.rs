//! Plan: where every directory and file of a TreeSpec goes, and how the work is cut
//! into units for the worker threads.

use super::rng::{WyRand, hash3};
use super::spec::{Layout, STREAM_NAME, TreeSpec};
use std::ffi::CString;

/// Files per work unit: small enough to balance 2..64 threads, large enough that
/// opening the unit's directory is noise.
pub const UNIT_FILES: u64 = 1024;

/// Longest name the generator writes, plus the NUL.
pub const NAME_BUF: usize = 256;

/// One directory of the plan. Directory 0 is the tree root (it exists beforehand).
#[derive(Debug, Clone)]
pub struct DirNode {
    pub parent: u32,
    pub name: CString,
    pub depth: u32,
    pub first_file: u64,
    pub nfiles: u64,
}

/// A share of work: `count` files starting at global index `first`, all in `dir`.
/// For per-directory ops (list) a unit is one directory and `count` its file count.
#[derive(Debug, Clone, Copy)]
pub struct Unit {
    pub dir: u32,
    pub first: u64,
    pub count: u64,
}

#[derive(Debug)]
pub struct Plan {
    pub dirs: Vec<DirNode>,
    /// Index of the first directory of each depth (BFS order), plus dirs.len() at the end.
    pub level_start: Vec<u32>,
    pub file_units: Vec<Unit>,
    pub dir_units: Vec<Unit>,
    pub files: u64,
    name_width: usize,
    name_len: usize,
    /// Files per name length (drawn trees); empty: every name is `name_len` long.
    name_lens: Vec<u64>,
    seed: u64,
}

/// Base-36 digits needed to number `files` files.
fn width36(files: u64) -> usize {
    let mut n = files.saturating_sub(1);
    let mut w = 1;
    while n >= 36 {
        n /= 36;
        w += 1;
    }
    w
}

/// Shortest name length that keeps `files` names unique: "f" + base-36 index.
pub fn min_name_len(files: u64) -> usize {
    1 + width36(files)
}

const ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// The directory skeleton of a spec: leaf count, depth, fan-out, and files per leaf
/// (None: files spread evenly over the leaves). Cheap: no per-directory work.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub leaves: u64,
    pub depth: u32,
    pub fanout: u64,
    pub per_leaf: Option<u64>,
}

impl Shape {
    pub fn of(spec: &TreeSpec) -> Shape {
        match &spec.layout {
            Layout::Flat => Shape { leaves: 1, depth: 0, fanout: 2, per_leaf: None },
            // Only the directory count is meaningful here (one level of `leaves`); the
            // plan places drawn directories itself (tree/drawn.rs).
            Layout::Drawn { shape } => {
                Shape { leaves: shape.dirs().saturating_sub(1), depth: 1, fanout: u64::MAX, per_leaf: None }
            }
            Layout::Nested { fanout, depth: Some(d), .. } => {
                Shape { leaves: fanout.saturating_pow(*d), depth: *d, fanout: *fanout, per_leaf: None }
            }
            Layout::Nested { files_per_dir, fanout, depth: None } => {
                let leaves = spec.files.div_ceil((*files_per_dir).max(1)).max(1);
                let mut d = 0u32;
                while fanout.saturating_pow(d) < leaves {
                    d += 1;
                }
                Shape { leaves, depth: d, fanout: *fanout, per_leaf: Some(*files_per_dir) }
            }
        }
    }

    /// Directories at `level` (1..=depth): the distinct prefixes of the leaf numbers.
    pub fn dirs_at(&self, level: u32) -> u64 {
        self.leaves.div_ceil(self.fanout.saturating_pow(self.depth - level))
    }

    /// Every directory of the tree, the root included.
    pub fn dir_count(&self) -> u64 {
        1 + (1..=self.depth).map(|l| self.dirs_at(l)).sum::<u64>()
    }
}

/// Files directly in each directory of a spec's tree, as (files, directories with
/// that many) pairs, directories without files left out. Flat and nested layouts
/// are counted from their [`Shape`] (no plan is built: cheap for any size); drawn
/// layouts from their plan.
pub fn files_per_dir(spec: &TreeSpec) -> Vec<(u64, u64)> {
    let n = spec.files;
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut push = |files: u64, dirs: u64| {
        if files > 0 && dirs > 0 {
            out.push((files, dirs));
        }
    };
    match &spec.layout {
        Layout::Drawn { .. } => {
            let plan = Plan::new(spec);
            for d in &plan.dirs {
                push(d.nfiles, 1);
            }
        }
        _ => {
            let Shape { leaves, per_leaf, .. } = Shape::of(spec);
            match per_leaf {
                // Fixed-size leaves, the last one holding the rest.
                Some(f) => {
                    let full = (n / f.max(1)).min(leaves);
                    push(f, full);
                    push(n - full * f, 1);
                }
                // Even spread: leaf j holds ⌊(j+1)n/L⌋ − ⌊jn/L⌋ files, i.e. n mod L leaves
                // with ⌈n/L⌉ and the others ⌊n/L⌋.
                None => {
                    let (q, r) = (n / leaves.max(1), n % leaves.max(1));
                    push(q + 1, r);
                    push(q, leaves - r);
                }
            }
        }
    }
    out
}

impl Plan {
    /// Lay out a validated spec.
    pub fn new(spec: &TreeSpec) -> Plan {
        if let Layout::Drawn { shape } = &spec.layout {
            let (dirs, level_start) = super::drawn::plan_dirs(spec, shape);
            return Plan::from_dirs(spec, dirs, level_start, shape.name_lens.clone());
        }
        let n = spec.files;
        let Shape { leaves, depth, fanout, per_leaf } = Shape::of(spec);
        // First file of leaf j: either fixed-size leaves (last one short) or an even spread.
        let start = |j: u64| -> u64 {
            match per_leaf {
                Some(f) => (j * f).min(n),
                None => ((j as u128 * n as u128) / leaves as u128) as u64,
            }
        };
        let dir_width = format!("{}", fanout - 1).len();
        let mut dirs = vec![DirNode { parent: 0, name: CString::default(), depth: 0, first_file: 0, nfiles: 0 }];
        let mut level_start = vec![0u32];
        let mut prev_start = 0u32;
        for level in 1..=depth {
            let count = Shape { leaves, depth, fanout, per_leaf }.dirs_at(level);
            let this_start = dirs.len() as u32;
            level_start.push(this_start);
            for j in 0..count {
                let name = format!("d{:0w$}", j % fanout, w = dir_width);
                dirs.push(DirNode {
                    parent: prev_start + (j / fanout) as u32,
                    name: CString::new(name).expect("no NUL in generated names"),
                    depth: level,
                    first_file: 0,
                    nfiles: 0,
                });
            }
            prev_start = this_start;
        }
        level_start.push(dirs.len() as u32);
        let leaf0 = level_start[depth as usize] as usize;
        for j in 0..leaves {
            let (a, b) = (start(j), start(j + 1));
            let d = &mut dirs[leaf0 + j as usize];
            d.first_file = a;
            d.nfiles = b - a;
        }
        Plan::from_dirs(spec, dirs, level_start, Vec::new())
    }

    /// Cut the directories' file ranges into work units and finish the plan.
    fn from_dirs(spec: &TreeSpec, dirs: Vec<DirNode>, level_start: Vec<u32>, name_lens: Vec<u64>) -> Plan {
        let mut file_units = Vec::new();
        for (i, d) in dirs.iter().enumerate() {
            let (a, b) = (d.first_file, d.first_file + d.nfiles);
            let mut f = a;
            while f < b {
                let c = (b - f).min(UNIT_FILES);
                file_units.push(Unit { dir: i as u32, first: f, count: c });
                f += c;
            }
        }
        let dir_units = dirs
            .iter()
            .enumerate()
            .map(|(i, d)| Unit { dir: i as u32, first: d.first_file, count: d.nfiles })
            .collect();
        Plan {
            dirs,
            level_start,
            file_units,
            dir_units,
            files: spec.files,
            name_width: width36(spec.files),
            name_len: spec.name_len,
            name_lens,
            seed: spec.seed,
        }
    }

    pub fn depth(&self) -> usize {
        self.level_start.len() - 2
    }

    /// Write file `index`'s name plus a NUL into `out`; returns the name length.
    /// No allocation: this is on the hot path.
    #[inline]
    pub fn file_name(&self, index: u64, out: &mut [u8; NAME_BUF]) -> usize {
        out[0] = b'f';
        let mut v = index;
        for i in (1..=self.name_width).rev() {
            out[i] = ALPHABET[(v % 36) as usize];
            v /= 36;
        }
        let len = if self.name_lens.is_empty() {
            self.name_len
        } else {
            super::drawn::hist_name_len(&self.name_lens, self.seed, index, 1 + self.name_width)
        };
        let mut rng = WyRand(hash3(self.seed, index, STREAM_NAME));
        let mut i = 1 + self.name_width;
        while i < len {
            let w = rng.next_u64();
            for k in 0..8 {
                if i >= len {
                    break;
                }
                out[i] = ALPHABET[((w >> (k * 8)) % 36) as usize];
                i += 1;
            }
        }
        out[len] = 0;
        len
    }

    /// The index of the file `name` names, when `name` is exactly a name this plan gives
    /// a file (`f` + base-36 index + the seeded tail); None for any other name.
    pub fn file_index(&self, name: &[u8]) -> Option<u64> {
        if name.len() < 1 + self.name_width || name[0] != b'f' {
            return None;
        }
        let mut i = 0u64;
        for &c in &name[1..=self.name_width] {
            let d = ALPHABET.iter().position(|&a| a == c)? as u64;
            i = i.checked_mul(36)?.checked_add(d)?;
        }
        if i >= self.files {
            return None;
        }
        let mut buf = [0u8; NAME_BUF];
        let n = self.file_name(i, &mut buf);
        (buf[..n] == *name).then_some(i)
    }

    /// Directory indices from the root's child down to `dir` (the root itself excluded).
    pub fn chain(&self, dir: u32, out: &mut Vec<u32>) {
        out.clear();
        let mut d = dir;
        while d != 0 {
            out.push(d);
            d = self.dirs[d as usize].parent;
        }
        out.reverse();
    }

    /// Path of a directory relative to the root, for messages.
    pub fn dir_path(&self, dir: u32) -> String {
        let mut chain = Vec::new();
        self.chain(dir, &mut chain);
        let parts: Vec<String> =
            chain.iter().map(|&d| self.dirs[d as usize].name.to_string_lossy().into_owned()).collect();
        if parts.is_empty() { ".".into() } else { parts.join("/") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::spec::{Content, SizeDist};
    use std::collections::HashSet;

    fn spec(files: u64, layout: Layout) -> TreeSpec {
        TreeSpec { files, size: SizeDist::Fixed { bytes: 1 }, layout, name_len: 12, content: Content::Zeros, seed: 42 }
    }

    fn name(p: &Plan, i: u64) -> String {
        let mut b = [0u8; NAME_BUF];
        let n = p.file_name(i, &mut b);
        String::from_utf8(b[..n].to_vec()).unwrap()
    }

    #[test]
    fn flat_puts_everything_in_root() {
        let p = Plan::new(&spec(3000, Layout::Flat));
        assert_eq!(p.dirs.len(), 1);
        assert_eq!(p.dirs[0].nfiles, 3000);
        assert_eq!(p.file_units.iter().map(|u| u.count).sum::<u64>(), 3000);
        assert!(p.file_units.iter().all(|u| u.count <= UNIT_FILES));
    }

    #[test]
    fn nested_respects_files_per_dir_and_fanout() {
        let p = Plan::new(&spec(10_000, Layout::Nested { files_per_dir: 100, fanout: 4, depth: None }));
        // 100 leaves need depth 4 (4^3 = 64 < 100 <= 256)
        assert_eq!(p.depth(), 4);
        let leaves: Vec<_> = p.dirs.iter().filter(|d| d.nfiles > 0).collect();
        assert_eq!(leaves.len(), 100);
        assert!(leaves.iter().all(|d| d.nfiles == 100 && d.depth == 4));
        // every parent precedes its child, and no directory has more than fanout children
        let mut kids = vec![0; p.dirs.len()];
        for (i, d) in p.dirs.iter().enumerate().skip(1) {
            assert!((d.parent as usize) < i);
            kids[d.parent as usize] += 1;
        }
        assert!(kids.iter().all(|&k| k <= 4));
        // sibling names are unique
        let mut seen = HashSet::new();
        for d in p.dirs.iter().skip(1) {
            assert!(seen.insert((d.parent, d.name.clone())));
        }
    }

    #[test]
    fn explicit_depth_spreads_evenly() {
        let p = Plan::new(&spec(1000, Layout::Nested { files_per_dir: 1, fanout: 3, depth: Some(2) }));
        let leaves: Vec<_> = p.dirs.iter().filter(|d| d.depth == 2).collect();
        assert_eq!(leaves.len(), 9);
        assert_eq!(leaves.iter().map(|d| d.nfiles).sum::<u64>(), 1000);
        assert!(leaves.iter().all(|d| d.nfiles == 111 || d.nfiles == 112));
    }

    #[test]
    fn names_unique_fixed_length_deterministic() {
        let p = Plan::new(&spec(50_000, Layout::Flat));
        let names: HashSet<String> = (0..50_000).map(|i| name(&p, i)).collect();
        assert_eq!(names.len(), 50_000);
        assert!(names.iter().all(|n| n.len() == 12 && n.starts_with('f')));
        let q = Plan::new(&spec(50_000, Layout::Flat));
        assert_eq!(name(&p, 777), name(&q, 777));
        assert_eq!(min_name_len(1), 2);
        assert_eq!(min_name_len(36), 2);
        assert_eq!(min_name_len(37), 3);
    }

    #[test]
    fn file_index_inverts_file_name() {
        let p = Plan::new(&spec(5000, Layout::Flat));
        for i in [0, 1, 35, 36, 4999] {
            assert_eq!(p.file_index(name(&p, i).as_bytes()), Some(i));
        }
        let mut other = name(&p, 7).into_bytes();
        *other.last_mut().unwrap() ^= 1;
        assert_eq!(p.file_index(&other), None, "another tail");
        assert_eq!(p.file_index(b"mine.txt"), None);
        assert_eq!(p.file_index(b"f"), None);
        assert_eq!(p.file_index(b"fzzzzzzzzzzz"), None, "index past the file count");
    }

    #[test]
    fn chain_and_path() {
        let p = Plan::new(&spec(64, Layout::Nested { files_per_dir: 1, fanout: 4, depth: None }));
        let last = (p.dirs.len() - 1) as u32;
        assert_eq!(p.dir_path(last), "d3/d3/d3");
        assert_eq!(p.dir_path(0), ".");
    }

    #[test]
    fn shape_counts_directories_like_the_plan() {
        for (files, layout) in [
            (1, Layout::Flat),
            (10_000, Layout::Nested { files_per_dir: 100, fanout: 4, depth: None }),
            (1000, Layout::Nested { files_per_dir: 1, fanout: 3, depth: Some(2) }),
            (65_536, Layout::Nested { files_per_dir: 1000, fanout: 16, depth: None }),
            (7, Layout::Nested { files_per_dir: 1, fanout: 2, depth: None }),
        ] {
            let s = spec(files, layout);
            assert_eq!(Shape::of(&s).dir_count(), Plan::new(&s).dirs.len() as u64);
        }
    }
}
