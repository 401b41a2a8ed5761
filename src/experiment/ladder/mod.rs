//! The ladder: a fixed total of bytes split into 1, 4, 16, ... files. Time against file
//! count shows the per-file cost; the fit separates it from the per-byte cost.
//!
//! On rungs of one total, bytes never vary: the per-byte cost and a per-run constant
//! (thread start, the durable phase's syncfs, opening the root) are the same column and
//! cannot be told apart (issue 27: tmpfs "delete 6,449 MiB/s" was a constant). Two *side
//! rungs* hold a second total (a quarter of the first by default) at the first and the
//! middle file count: at a fixed file count only the bytes change, so the fit resolves
//! `b` against `k`, at few files and at many.
//!
//! The directory-size cost `d·Σn²` (issue 40) needs folders of other sizes at one file
//! count: the default shape keeps at most 1,000 files in a directory, so from 256 files
//! on every rung's folders hold 64–256 files and `d` cannot be told from the per-file
//! cost (exFAT's, 25 ns per pair of files in one folder, was `—`). When the folders of
//! the rungs that hold most files (from a sixteenth of the largest rung's count) vary
//! less than [`DIR_SPREAD`]×, *flat side rungs* follow: half the total in one
//! directory of F/16, F/4 and F files (F: the largest rung, at most [`MAX_FLAT_RUNG`]),
//! those at least twice the rungs' largest folder (only F: F/2 and F). The default
//! shape fills its leaves to 1,000 files, so `--to 4096` adds folders of 2,048 and
//! 4,096 files beside the rungs' 256–1,000. Half the total keeps their names apart from
//! the rungs' (a tree is named by its file count and size) and moves the bytes too.
//!
//! Its command line, config and view (`view.rs`) are here.

pub mod view;

use super::flags::{CommandLine, Common, Flag, Group, OP_NAMES, Values};
use super::kinds::{Config, Kind};
use crate::error::{Error, Result};
use crate::tree::{SizeDist, TreeSpec};
use crate::units::parse_size;

/// Its entry in `experiment::kinds::KINDS`.
pub const KIND: Kind = Kind { name: "ladder", mpi: true, run_file: true, command: Some(COMMAND), view: &view::VIEW };

const COMMAND: CommandLine = CommandLine {
    about: "The main job: a fixed total split into 1, 4, 16, … files; time per op, fitted per-file cost and bandwidth",
    flags: &[
        Flag::size("total", "TOTAL", "Total bytes split across each rung's files").default("64MiB"),
        Flag::count("from", "FROM", "Smallest file count").default("1"),
        Flag::count("to", "TO", "Largest file count").default("65536"),
        Flag::count("step", "STEP", "Multiply the file count by this from rung to rung").default("4"),
        Flag::text(
            "second-total",
            "SIZE|off",
            "Total bytes of two side rungs (at --from's and the middle file count) that separate the per-byte cost \
             from a per-run constant; `off`: none [default: a quarter of --total]",
        ),
        Flag::text(
            "ops",
            "OPS",
            "Ops to time, comma separated (create, stat, list, read, walk, scan, rescan, rm or delete; reformat on \
             --fs targets: unmount, mkfs, mount with the tree on it, beside delete; on --fs s3 or azblob the native \
             requests obj:put, obj:head, obj:list, obj:get, obj:delete, obj:delete-batch)",
        )
        .default("create,read,delete")
        .hints(OP_NAMES),
    ],
    groups: &[Group::Own, Group::Pair, Group::Run, Group::Shape, Group::Write],
    defaults: &[],
    config,
};

fn config(v: &Values, common: &dyn Common) -> Result<Box<dyn Config>> {
    let total = v.number("total");
    let second_total = match v.text("second-total") {
        None => Some(total / 4),
        Some("off" | "none") => None,
        Some(t) => Some(parse_size(t).map_err(|e| Error::bad("--second-total", e))?),
    };
    let ladder = LadderSpec { total, from: v.number("from"), to: v.number("to"), step: v.number("step"), second_total };
    let trees = ladder.checked_trees(|files, size| common.shape(files, size))?;
    let side_trees = trees[ladder.rungs()?.len()..].iter().map(|t| t.key()).collect();
    let mut cfg = common.experiment("ladder", trees, v.text("ops").unwrap_or_default())?;
    cfg.side_trees = side_trees;
    Ok(Box::new(cfg))
}

#[derive(Debug, Clone, PartialEq)]
pub struct LadderSpec {
    pub total: u64,
    pub from: u64,
    pub to: u64,
    pub step: u64,
    /// Total of the side rungs (module docs); None: no side rungs.
    pub second_total: Option<u64>,
}

impl Default for LadderSpec {
    fn default() -> Self {
        LadderSpec { total: 64 << 20, from: 1, to: 65_536, step: 4, second_total: Some(16 << 20) }
    }
}

/// A second total closer to the first than this factor hardly moves the bytes: refused.
pub const SECOND_TOTAL_APART: u64 = 2;

/// The rungs' folders (files per directory, Σn²/files) must vary at least this much,
/// between the rungs from a sixteenth of the largest rung's file count up, for the fit
/// to tell the directory-size cost from the per-file cost; below, flat side rungs follow.
pub const DIR_SPREAD: f64 = 16.0;

/// Largest flat side rung. A folder of 4,096 files costs exFAT (exfat-fuse) about 0.4 s
/// per op of directory-size cost (25 ns per pair: BENCHMARKS.md "Directory-size term");
/// 16,384 would cost 6.7 s per op and run, a 3-minute budget's worth in a few trials.
pub const MAX_FLAT_RUNG: u64 = 4096;

/// Files per directory of a tree, weighted by file: Σn²/files (the d column over the
/// a column).
fn folder_size(t: &TreeSpec) -> f64 {
    let sq = crate::analysis::model::dir_sq_of(crate::tree::layout::files_per_dir(t));
    if t.files == 0 { 0.0 } else { sq / t.files as f64 }
}

/// Largest number of rungs (a typo like `--step 1.0001` must not make millions).
const MAX_RUNGS: usize = 64;

impl LadderSpec {
    /// File counts of the rungs: from, from·step, ... up to `to` (inclusive).
    pub fn rungs(&self) -> Result<Vec<u64>> {
        if self.from == 0 {
            return Err(Error::bad("--from", "must be at least 1"));
        }
        if self.to == 0 {
            return Err(Error::bad("--to", "must be at least 1"));
        }
        if self.from > self.to {
            return Err(Error::bad("--from", format!("{} is larger than --to {}", self.from, self.to)));
        }
        if self.step < 2 {
            return Err(Error::bad("--step", "must be at least 2"));
        }
        if self.total == 0 {
            return Err(Error::bad("--total", "must be more than 0 bytes"));
        }
        let mut v = Vec::new();
        let mut n = self.from;
        while n <= self.to {
            v.push(n);
            if v.len() > MAX_RUNGS {
                return Err(Error::bad("--step", format!("more than {MAX_RUNGS} rungs between --from and --to")));
            }
            n = match n.checked_mul(self.step) {
                Some(x) => x,
                None => break,
            };
        }
        Ok(v)
    }

    /// File counts of the side rungs: the first rung and the middle one (one when they
    /// are the same), each only if the second total gives its files at least a byte.
    pub fn side_rungs(&self) -> Result<Vec<u64>> {
        let Some(t2) = self.second_total else { return Ok(Vec::new()) };
        let (lo, hi) = (t2.min(self.total), t2.max(self.total));
        if lo == 0 || hi / lo < SECOND_TOTAL_APART {
            return Err(Error::bad(
                "--second-total",
                format!(
                    "must differ from --total by {SECOND_TOTAL_APART}× or more (or be off): closer totals do not separate the per-byte cost from a per-run constant"
                ),
            ));
        }
        let rungs = self.rungs()?;
        let mut v = vec![rungs[0], rungs[rungs.len() / 2]];
        v.dedup();
        v.retain(|&n| t2 / n >= 1);
        Ok(v)
    }

    /// File counts of the flat side rungs for rungs shaped like `shape` (module docs):
    /// none when the rungs' folders already vary [`DIR_SPREAD`]× or more.
    pub fn flat_rungs(&self, shape: &TreeSpec) -> Result<Vec<u64>> {
        let rungs = self.rungs()?;
        let largest = *rungs.last().expect("at least one rung");
        let like = |n: u64| TreeSpec { files: n, ..shape.clone() };
        let sizes: Vec<f64> = rungs.iter().filter(|&&n| n * 16 >= largest).map(|&n| folder_size(&like(n))).collect();
        let lo = sizes.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = sizes.iter().copied().fold(0.0, f64::max);
        if hi >= DIR_SPREAD * lo {
            return Ok(Vec::new());
        }
        // Folders at least twice the rungs' largest, as far apart as the counts allow.
        let biggest = rungs.iter().map(|&n| folder_size(&like(n))).fold(0.0, f64::max);
        let top = largest.min(MAX_FLAT_RUNG);
        let fits = |n: u64| n >= 2 && n as f64 >= 2.0 * biggest && (self.total / 2) / n >= 1;
        let mut v: Vec<u64> = [top / 16, top / 4, top].into_iter().filter(|&n| fits(n)).collect();
        if v.len() == 1 && fits(top / 2) {
            v.insert(0, top / 2);
        }
        Ok(v)
    }

    /// One tree per rung: `shape` gives layout, names, content and seed; each rung has
    /// n files of total/n bytes (rounded down). The side rungs follow: the second total
    /// over n at the first and middle count, then half the total in one folder
    /// ([`LadderSpec::flat_rungs`]; one whose name another tree has is left out).
    pub fn trees(&self, shape: &TreeSpec) -> Result<Vec<TreeSpec>> {
        let tree =
            |n: u64, total: u64| TreeSpec { files: n, size: SizeDist::Fixed { bytes: total / n }, ..shape.clone() };
        let mut v: Vec<TreeSpec> = self.rungs()?.into_iter().map(|n| tree(n, self.total)).collect();
        let t2 = self.second_total.unwrap_or(0);
        v.extend(self.side_rungs()?.into_iter().map(|n| tree(n, t2)));
        for n in self.flat_rungs(shape)? {
            let flat = TreeSpec { layout: crate::tree::Layout::Flat, ..tree(n, self.total / 2) };
            if !v.iter().any(|t| t.key() == flat.key()) {
                v.push(flat);
            }
        }
        Ok(v)
    }

    /// [`LadderSpec::trees`] in the shape `shape` makes, checked at the largest rung's
    /// file count (names must fit it; its `--files` complaint names `--to`); a total
    /// too small to give every file of the largest rung a byte is refused.
    pub fn checked_trees(&self, shape: impl Fn(u64, SizeDist) -> Result<TreeSpec>) -> Result<Vec<TreeSpec>> {
        let spec = shape(self.to.max(1), SizeDist::Fixed { bytes: 0 }).map_err(|e| match e {
            Error::BadInput { flag, reason } if flag == "--files" => Error::bad("--to", reason),
            e => e,
        })?;
        if self.total < self.to {
            return Err(Error::bad(
                "--total",
                format!(
                    "{} bytes cannot be split into {} files of at least 1 byte (use ops --size 0 for empty files)",
                    self.total, self.to
                ),
            ));
        }
        self.trees(&spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rungs() {
        let r = LadderSpec::default().rungs().unwrap();
        assert_eq!(r, vec![1, 4, 16, 64, 256, 1024, 4096, 16384, 65536]);
    }

    #[test]
    fn bad_rungs() {
        let bad =
            |f, t, s, tot| LadderSpec { total: tot, from: f, to: t, step: s, second_total: None }.rungs().unwrap_err();
        assert!(bad(0, 4, 4, 1).to_string().starts_with("--from"));
        assert!(bad(8, 4, 4, 1).to_string().contains("larger than --to"));
        assert!(bad(1, 4, 1, 1).to_string().starts_with("--step"));
        assert!(bad(1, 4, 2, 0).to_string().starts_with("--total"));
        assert_eq!(bad(1, 4, 2, 0).exit_code(), 2);
    }

    #[test]
    fn side_rungs_hold_the_second_total_at_the_first_and_middle_counts() {
        let l = LadderSpec::default();
        assert_eq!(l.side_rungs().unwrap(), vec![1, 256]);
        let shape = TreeSpec {
            files: 1,
            size: SizeDist::Fixed { bytes: 0 },
            layout: crate::tree::Layout::Flat,
            name_len: 12,
            content: crate::tree::Content::Zeros,
            seed: 1,
        };
        let trees = l.trees(&shape).unwrap();
        assert_eq!(trees.len(), 11);
        let side: Vec<(u64, u64)> = trees[9..].iter().map(|t| (t.files, t.total_bytes())).collect();
        assert_eq!(side, vec![(1, 16 << 20), (256, 16 << 20)]);
        // Off: the plain ladder; one rung: one side rung.
        assert_eq!(LadderSpec { second_total: None, ..l.clone() }.trees(&shape).unwrap().len(), 9);
        assert_eq!(LadderSpec { from: 4, to: 4, ..l.clone() }.side_rungs().unwrap(), vec![4]);
        // A second total too small for a rung's files drops that rung only.
        assert_eq!(LadderSpec { second_total: Some(8), total: 1 << 20, ..l.clone() }.side_rungs().unwrap(), vec![1]);
        // Too close to the first total: refused (exit 2), above or below.
        for t2 in [48 << 20, 100 << 20] {
            let e = LadderSpec { second_total: Some(t2), ..l.clone() }.side_rungs().unwrap_err();
            assert!(e.to_string().starts_with("--second-total"), "{e}");
            assert_eq!(e.exit_code(), 2);
        }
        assert!(LadderSpec { second_total: Some(128 << 20), ..l }.side_rungs().is_ok());
    }

    fn shaped(layout: crate::tree::Layout) -> TreeSpec {
        TreeSpec {
            files: 1,
            size: SizeDist::Fixed { bytes: 0 },
            layout,
            name_len: 16,
            content: crate::tree::Content::Zeros,
            seed: 1,
        }
    }

    #[test]
    fn flat_side_rungs_where_the_rungs_folders_hardly_vary() {
        use crate::tree::Layout;
        let nested = |fpd| shaped(Layout::Nested { files_per_dir: fpd, fanout: 16, depth: None });
        let to = |to| LadderSpec { to, ..LadderSpec::default() };
        // The default shape (leaves filled to 1,000): from 256 files on, folders of
        // 256–1,000; flat ones at least twice that.
        assert_eq!(to(4096).flat_rungs(&nested(1000)).unwrap(), vec![2048, 4096]);
        assert_eq!(to(65_536).flat_rungs(&nested(1000)).unwrap(), vec![2048, 4096], "at most 4,096 in one folder");
        // No count within --to twice the largest folder: none.
        assert!(to(1024).flat_rungs(&nested(1000)).unwrap().is_empty());
        // Small folders everywhere: all three counts.
        assert_eq!(to(4096).flat_rungs(&nested(16)).unwrap(), vec![256, 1024, 4096]);
        // Already varied: flat rungs, or up to 256 files in the root.
        assert!(to(4096).flat_rungs(&shaped(Layout::Flat)).unwrap().is_empty());
        assert!(to(256).flat_rungs(&nested(1000)).unwrap().is_empty());
        assert!(to(4096).flat_rungs(&nested(4096)).unwrap().is_empty());
        // Half the total in one folder, after the bandwidth's side rungs; named apart.
        let l = to(4096);
        let trees = l.trees(&nested(1000)).unwrap();
        let main = l.rungs().unwrap().len();
        assert_eq!(trees.len(), main + 2 + 2);
        let flat: Vec<(u64, u64, bool)> =
            trees[main + 2..].iter().map(|t| (t.files, t.total_bytes(), t.layout == Layout::Flat)).collect();
        assert_eq!(flat, vec![(2048, 32 << 20, true), (4096, 32 << 20, true)]);
        let mut keys: Vec<String> = trees.iter().map(|t| t.key()).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), trees.len(), "every tree its own name");
        // Their folders: Σn²/files of 4,096 against the largest rung's (4 of 1,000 + 96).
        assert_eq!(folder_size(&trees[main + 3]), 4096.0);
        assert_eq!(folder_size(&trees[main - 1]), (4.0 * 1e6 + 96.0 * 96.0) / 4096.0);
    }
}
