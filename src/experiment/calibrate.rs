//! `manyfiles predict --tree PATH --on TARGET`: calibrate the cost model on TARGET with
//! trees shaped like PATH, then predict PATH (issue 27).
//!
//! ## The design: why each term is resolved
//!
//! Every calibration tree is drawn from PATH's inventory (`tree::drawn::spec_like`): its
//! files-per-directory histogram, file-size histogram, directories per depth and name
//! lengths, scaled in file count by `s`, with files per directory multiplied by `k`
//! (directories divided by `k`, the histogram shifted by log2 k buckets) and bytes per
//! file by `β` (the size histogram shifted likewise). With `F, B, D` PATH's files,
//! bytes and directories and `n` its directory sizes, a tree has about `sF` files,
//! `sβB` bytes, `sD/k` directories and Σn² ≈ `s·k·Σn²`. Nine trees:
//!
//! | tree | s | k | β | resolves |
//! |---|---|---|---|---|
//! | 1, 2, 3 | top/8, top/√8, top | 1 | 1 | the total at PATH's shape (all four terms together), and the scale |
//! | 4, 8 | top/√8, top | 4 | 1 | directory size (Σn² ×4, directories ÷4): `d` against `c` |
//! | 5, 9 | top/√8, top/8 | ¼ | 1 | directory count (×4, Σn² ÷4): `c` against `d` |
//! | 6, 7 | top/√8 | 1 | 4, ¼ | bytes against files: `b` against `a` |
//!
//! With `k` > 1 the rare largest directories are kept (×k), not rounded away with the
//! directory count (`tree::drawn::spec_like_with`): Σn² is mostly theirs. Measured on
//! /usr/share/doc (5,504 files, Σn²/files 59.6): the k = 4 trees had 53–56 before, 158 and
//! 264 now; on /usr/share/man (one directory of 17,821) 15,976 before, 17,920 now.
//!
//! Scaling alone moves every column in step (nothing separates); `k` moves directories
//! and Σn² in opposite directions at a fixed file count, so `c` and `d` separate from
//! each other and from `a`; `β` moves bytes alone. Each of these directions is held by
//! two trees, so the leave-one-cell-out prediction errors (the interval) never lose a
//! term because its only tree was left out. `top` is 1 (PATH's own size) unless that
//! exceeds [`Limits`]: then the largest tree is cut to fit them.

use super::{Order, TargetSpec, TreeExperiment, rounds};
use crate::error::{Error, Result};
use crate::report::{PredictConfig, PredictParts, TreeInput};
use crate::results::{ResultSet, Until};
use crate::storage::cache::CacheMode;
use crate::tree::drawn::spec_like_with;
use crate::tree::inventory::Inventory;
use crate::tree::{Content, TreeSpec};
use std::path::PathBuf;

/// The ops a calibration times: what `predict` then predicts, each the engine the user
/// checks it with (copy: `manyfiles copy`; walk: `manyfiles scan` without an index; rm:
/// `manyfiles rm`), made cold before and durable (a syncfs) inside the time as the
/// check's `--cold --durable` are; read (every file read once) and create (the copy's
/// writing without its reading) have no engine of their own.
pub const OPS: [&str; 5] = ["create", "walk", "read", "copy", "rm"];

/// How big the calibration's trees may get.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Most files in one calibration tree.
    pub max_files: u64,
    /// Most bytes in one calibration tree.
    pub max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_files: 20_000, max_bytes: 256 << 20 }
    }
}

/// One calibration tree: what it varies, and its spec.
#[derive(Debug, Clone, PartialEq)]
pub struct CalTree {
    pub scale: f64,
    pub per_dir: f64,
    pub per_file_bytes: f64,
    pub spec: TreeSpec,
}

/// Shift the non-empty buckets of a log2 histogram by `by` (buckets ≥ 1 stay ≥ 1).
fn shift(hist: &[u64], by: i32) -> Vec<u64> {
    let mut out = vec![0u64; (hist.len() as i64 + by.max(0) as i64).max(1) as usize];
    for (b, &c) in hist.iter().enumerate() {
        let to = if b == 0 { 0 } else { (b as i64 + by as i64).max(1) as usize };
        out[to] += c;
    }
    out
}

/// PATH's inventory with files per directory ×`k` and bytes per file ×`beta` (powers of 2).
fn reshaped(inv: &Inventory, k: f64, beta: f64) -> Inventory {
    let mut v = inv.clone();
    let (kb, bb) = (k.log2().round() as i32, beta.log2().round() as i32);
    v.dirs = ((inv.dirs.max(1) as f64 / k).round() as u64).max(1);
    v.files_per_dir_hist = shift(&inv.files_per_dir_hist, kb);
    if v.dirs > 1 && v.dir_depth_hist.iter().skip(1).all(|&c| c == 0) {
        // A flat tree split into directories: they go one level down.
        v.dir_depth_hist = vec![1, v.dirs - 1];
    }
    v.size_hist = shift(&inv.size_hist, bb);
    v.size_hist_bytes = shift(&inv.size_hist_bytes, bb).into_iter().map(|b| (b as f64 * beta) as u64).collect();
    v.total_bytes = (inv.total_bytes as f64 * beta) as u64;
    v
}

/// The calibration trees for a tree of `inv`'s shape (module docs), the same key
/// dropped when tiny trees make two alike.
pub fn design(inv: &Inventory, limits: Limits, seed: u64) -> Result<Vec<CalTree>> {
    if inv.files == 0 {
        return Err(Error::bad("--tree", "the tree holds no files: nothing to predict"));
    }
    // The largest bytes: tree 6 (β 4 at top/√8) holds 4/√8 ≈ 1.42× tree 3's.
    let bytes_top = inv.total_bytes as f64 * 4.0 / 8f64.sqrt();
    let top = 1f64.min(limits.max_files as f64 / inv.files as f64).min(if bytes_top > 0.0 {
        limits.max_bytes as f64 / bytes_top
    } else {
        1.0
    });
    let mid = top / 8f64.sqrt();
    let plan = [
        (top / 8.0, 1.0, 1.0),
        (mid, 1.0, 1.0),
        (top, 1.0, 1.0),
        (mid, 4.0, 1.0),
        (mid, 0.25, 1.0),
        (mid, 1.0, 4.0),
        (mid, 1.0, 0.25),
        (top, 4.0, 1.0),
        (top / 8.0, 0.25, 1.0),
    ];
    let mut out: Vec<CalTree> = Vec::new();
    for (scale, per_dir, per_file_bytes) in plan {
        // Trees of larger directories keep the largest ones (×k), or Σn² would not grow.
        let spec = spec_like_with(&reshaped(inv, per_dir, per_file_bytes), scale, seed, Content::Random, per_dir > 1.0)
            .map_err(|e| Error::bad("--tree", format!("cannot draw a calibration tree like it: {e}")))?;
        if !out.iter().any(|t| t.spec.key() == spec.key()) {
            out.push(CalTree { scale, per_dir, per_file_bytes, spec });
        }
    }
    Ok(out)
}

/// Where a calibration runs.
#[derive(Debug, Clone)]
pub enum CalibrateOn {
    /// `--on DIR` or `--fs SPEC` (an object store's `s3…` too): the experiments' targets.
    Target(TargetSpec),
    /// `--on s3://BUCKET/PREFIX` or `azblob://CONTAINER/PREFIX`: a store the tool did not make
    /// (`super::calibrate_objects::run_on_url`).
    Store(StoreOn),
}

/// An object store the user names, and how it is reached: through a `manyfiles mount`'s
/// stack (`--s3-via DIR`) or the environment's endpoint and keys.
#[derive(Debug, Clone)]
pub struct StoreOn {
    pub url: crate::engine::object::ObjectUrl,
    pub via: Option<PathBuf>,
}

impl StoreOn {
    pub fn reach(&self) -> Result<crate::storage::object_endpoint::Reach> {
        match &self.via {
            Some(dir) => crate::storage::object_endpoint::from_mount(dir, self.url.provider),
            None => crate::storage::object_endpoint::from_env(self.url.provider),
        }
    }
}

/// A calibration to run.
#[derive(Debug, Clone)]
pub struct CalibrateConfig {
    pub target: CalibrateOn,
    /// Time budget of the adaptive runs, seconds.
    pub max_time_s: f64,
    pub limits: Limits,
    /// Threads of create, walk, read and rm (scan's and rm's default: the cores).
    pub threads: usize,
    /// Threads of the copy: what `manyfiles copy` runs with (its default is two a core,
    /// [`crate::engine::copy::default_threads`]). With 2 the calibration's copies were
    /// 12–15% slower than the user's check on RAM ext4 (BENCHMARKS, issue 27).
    pub copy_threads: usize,
    pub quiet: bool,
    /// Keep the calibration's results here (`predict --model FILE` reads them).
    pub save: Option<PathBuf>,
    pub command_line: Vec<String>,
}

/// Run the calibration on the target (the ladder's driver: fresh trees, the same ops,
/// cold reads, durable writes, adaptive runs within the budget); the results with their
/// fitted models.
pub fn run(cfg: &CalibrateConfig, inv: &Inventory) -> Result<ResultSet> {
    let target = match &cfg.target {
        CalibrateOn::Target(t) => t,
        CalibrateOn::Store(on) => {
            let rs = super::calibrate_objects::run_on_url(
                &on.reach()?,
                (&on.url, on.via.as_deref()),
                inv,
                (cfg.limits, cfg.threads, cfg.max_time_s),
                (cfg.quiet, cfg.command_line.clone()),
            )?;
            if let Some(f) = &cfg.save {
                crate::report::export::write_all(
                    &[crate::report::export::Output { path: f.clone(), format: crate::report::export::Format::Json }],
                    &rs,
                    crate::report::export::Stage::Final,
                )
                .map_err(Error::failed)?;
            }
            return Ok(rs);
        }
    };
    let trees: Vec<TreeSpec> = design(inv, cfg.limits, 1)?.into_iter().map(|t| t.spec).collect();
    let mut adaptive = crate::results::adaptive::Adaptive::default_settings();
    adaptive.max_time_s = cfg.max_time_s;
    // On an object store: the native ops the engines' requests are, at the engines'
    // requests in flight (`threads`: the object trial's in-flight count when no copy
    // threads are set); nothing to evict, nothing to sync.
    let objects = is_object_store(&cfg.target);
    let (ops, caches, until, copy_threads): (&[&str], _, _, _) = match objects {
        true => (&crate::results::predict_objects::CALIBRATION_OPS, CacheMode::Warm, Until::Returned, None),
        false => (&OPS, CacheMode::Cold, Until::Durable, Some(cfg.copy_threads)),
    };
    let exp = TreeExperiment {
        name: "calibrate".into(),
        targets: vec![target.clone()],
        labels: Vec::new(),
        fs_size: None,
        reuse: false,
        order: Order::Interleaved,
        caches,
        until,
        measure_allocation: false,
        trees,
        side_trees: Vec::new(),
        ops: ops.iter().map(|s| s.to_string()).collect(),
        create: Default::default(),
        runs: 3,
        adaptive: Some(adaptive),
        mock: None::<rounds::MockTiming>,
        warmup: 0,
        threads: cfg.threads,
        copy_threads,
        portion_files: 10_000,
        keep: false,
        shared_dir: false,
        json: cfg.save.clone(),
        exports: Vec::new(),
        quiet: cfg.quiet,
        command_line: cfg.command_line.clone(),
        commands: Vec::new(),
        prices: None,
    };
    super::run(&exp)
}

/// Is the target an object store (`--fs s3…`, `--on s3://…`): calibrated with the
/// native ops.
pub fn is_object_store(t: &CalibrateOn) -> bool {
    object_provider(t).is_some()
}

/// The object store's provider (`--fs s3…`/`azblob…`, `--on s3://…`/`azblob://…`); None
/// for a file system.
pub fn object_provider(t: &CalibrateOn) -> Option<crate::storage::object_stack::Provider> {
    match t {
        CalibrateOn::Store(s) => Some(s.url.provider),
        CalibrateOn::Target(TargetSpec::Fs(s)) => s.object().map(|o| o.provider),
        CalibrateOn::Target(TargetSpec::Dir(_)) => None,
    }
}

/// Where a saved calibration (`predict --model FILE`) ran, when it was an object
/// store's: `predict` prints the engines' section and its check lines again from it, the
/// client's setup timed here as a calibration times it. None: not an object store's
/// calibration (its check lines are not printed from a file).
pub fn saved_object_target(model: &ResultSet) -> Option<crate::report::CheckOn> {
    let native = model.experiment.ops.iter().all(|o| o.starts_with("obj:"));
    if model.experiment.name != "calibrate" || model.experiment.ops.is_empty() || !native {
        return None;
    }
    let t = model.targets.first()?;
    if let Some(m) = t.managed.as_ref().filter(|m| m.object.is_some()) {
        return Some(crate::report::CheckOn::ObjectSpec(m.spec.clone()));
    }
    // A bucket of the user's (`--on s3://…`, `azblob://…`): its URL; how it was reached (`--s3-via`) is
    // not saved, so the check lines reach it through the environment.
    matches!(t.kind.as_str(), "s3" | "azblob")
        .then(|| crate::report::CheckOn::ObjectUrl(t.path.display().to_string(), None))
}

/// `predict --on/--fs`: walk the tree once, calibrate on the target with trees shaped
/// like it, and hand the calibration to the prediction as its model.
pub fn prediction(cal: &CalibrateConfig, p: PredictParts) -> Result<PredictConfig> {
    let (inv, tree_path) = match p.tree {
        TreeInput::Path(path) => (Inventory::scan(&path, p.threads)?, Some(path)),
        TreeInput::Inventory(i) => (*i, None),
    };
    let model = run(cal, &inv)?;
    let object_setup_s = match object_provider(&cal.target) {
        Some(p) => super::calibrate_objects::client_setup_s(p, super::calibrate_objects::SETUP_RUNS)?,
        None => Vec::new(),
    };
    let model_name = match &cal.save {
        Some(s) => s.display().to_string(),
        None => "calibration (not saved: --save-calibration FILE keeps it)".into(),
    };
    Ok(PredictConfig {
        model_name,
        model,
        tree: TreeInput::Inventory(Box::new(inv)),
        interval_s: p.interval_s,
        json: p.json,
        threads: p.threads,
        runs_ahead: p.runs_ahead,
        level: p.level,
        check_on: Some(match &cal.target {
            CalibrateOn::Target(TargetSpec::Dir(d)) => crate::report::CheckOn::Dir(d.clone()),
            CalibrateOn::Target(TargetSpec::Fs(f)) if f.object().is_some() => {
                crate::report::CheckOn::ObjectSpec(f.label())
            }
            CalibrateOn::Target(TargetSpec::Fs(f)) => crate::report::CheckOn::Spec(f.label()),
            CalibrateOn::Store(on) => crate::report::CheckOn::ObjectUrl(on.url.to_string(), on.via.clone()),
        }),
        check_threads: p.check_threads,
        tree_path,
        object_setup_s,
        prices: p.prices,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::Layout;

    /// 2,907 files of ~4 KiB in 351 directories of 1–64 files (the issue's tree).
    fn issue_tree() -> Inventory {
        let mut inv = Inventory::empty();
        for d in 0..351u64 {
            let files = [1u64, 3, 8, 20, 2, 5][d as usize % 6] * if d % 50 == 0 { 3 } else { 1 };
            inv.add_dir(if d == 0 { 0 } else { 1 + d % 3 }, Some(6), files, if d < 50 { 6 } else { 0 });
            for i in 0..files {
                inv.add_file(2, 10, 1000 + 700 * (i % 9), 4096, 1);
            }
        }
        inv
    }

    fn per_dir_share(hist: &[u64]) -> Vec<f64> {
        let n = hist.iter().sum::<u64>().max(1) as f64;
        hist.iter().map(|&c| c as f64 / n).collect()
    }

    #[test]
    fn design_follows_the_tree_and_varies_each_term() {
        let inv = issue_tree();
        let trees = design(&inv, Limits::default(), 1).unwrap();
        assert_eq!(trees.len(), 9);
        let shape = |t: &CalTree| {
            let Layout::Drawn { shape } = &t.spec.layout else { panic!("drawn") };
            shape.clone()
        };
        // The full-size tree at k = 1 is the tree's own shape: its files-per-directory
        // histogram (as shares), file count and bytes.
        let full = trees.iter().find(|t| t.scale == 1.0 && t.per_dir == 1.0).unwrap();
        assert_eq!(full.spec.files, inv.files);
        let (a, b) = (per_dir_share(&shape(full).files_per_dir), per_dir_share(&inv.files_per_dir_hist));
        for k in 0..a.len().max(b.len()) {
            let (x, y) = (a.get(k).copied().unwrap_or(0.0), b.get(k).copied().unwrap_or(0.0));
            assert!((x - y).abs() < 0.02, "bucket {k}: {x} vs {y}");
        }
        assert!((full.spec.total_bytes() as f64 / inv.total_bytes as f64 - 1.0).abs() < 0.01);
        // k = 4: a quarter of the directories, Σn² up; β = 4: four times the bytes.
        let mid = trees[1].clone();
        let k4 = trees.iter().find(|t| t.per_dir == 4.0 && t.scale == mid.scale).unwrap();
        let dirs = |t: &CalTree| shape(t).dirs() as f64;
        assert!((dirs(k4) / dirs(&mid) - 0.25).abs() < 0.05, "{} vs {}", dirs(k4), dirs(&mid));
        let sq = |t: &CalTree| crate::analysis::model::dir_sq_of(crate::tree::layout::files_per_dir(&t.spec));
        assert!(sq(k4) > 2.5 * sq(&mid), "{} vs {}", sq(k4), sq(&mid));
        let b4 = trees.iter().find(|t| t.per_file_bytes == 4.0).unwrap();
        let ratio = b4.spec.total_bytes() as f64 / mid.spec.total_bytes() as f64;
        assert!((3.0..5.0).contains(&ratio), "{ratio}");
    }

    #[test]
    fn limits_cut_the_largest_tree() {
        let inv = issue_tree();
        let trees = design(&inv, Limits { max_files: 1000, max_bytes: 1 << 30 }, 1).unwrap();
        assert!(
            trees.iter().all(|t| t.spec.files <= 1000),
            "{:?}",
            trees.iter().map(|t| t.spec.files).collect::<Vec<_>>()
        );
        let trees = design(&inv, Limits { max_files: 1 << 20, max_bytes: 2 << 20 }, 1).unwrap();
        assert!(trees.iter().all(|t| t.spec.total_bytes() <= (2 << 20) + (1 << 16)));
        assert!(design(&Inventory::empty(), Limits::default(), 1).is_err());
    }

    /// Like /usr/share/doc: ~1,100 directories of a few files and three of 150–490, which
    /// hold most of Σn². Dividing the directories by 4 must keep those (×4), or the
    /// k = 4 trees' Σn²/files stays where k = 1's is (it did: 56 against 64 there, so the
    /// real tree fell outside the calibrated files-per-directory range).
    #[test]
    fn larger_directories_keep_the_largest_ones() {
        let mut inv = Inventory::empty();
        for d in 0..1100u64 {
            let files = match d {
                7 => 490,
                300 => 300,
                600 => 150,
                _ => [2u64, 4, 6, 3][d as usize % 4],
            };
            inv.add_dir(if d == 0 { 0 } else { 1 + d % 2 }, Some(6), files, if d < 100 { 10 } else { 0 });
            for i in 0..files {
                inv.add_file(2, 10, 1000 + i % 7, 4096, 1);
            }
        }
        let per_file = |t: &CalTree| {
            crate::analysis::model::dir_sq_of(crate::tree::layout::files_per_dir(&t.spec)) / t.spec.files as f64
        };
        let real = inv.dir_sq() / inv.files as f64;
        let trees = design(&inv, Limits::default(), 1).unwrap();
        let full = trees.iter().find(|t| t.scale == 1.0 && t.per_dir == 1.0).unwrap();
        let full_k4 = trees.iter().find(|t| t.scale == 1.0 && t.per_dir == 4.0).unwrap();
        // Counts are spread inside their log2 buckets by room, so the full tree's Σn² is
        // the real one's within a factor (the buckets are 2× wide).
        assert!((0.5..2.0).contains(&(per_file(full) / real)), "{} vs {real}", per_file(full));
        assert!(per_file(full_k4) > 2.5 * per_file(full), "k = 4: {} vs {}", per_file(full_k4), per_file(full));
        // The real tree lies inside the calibrated cells on files per directory.
        let hi = trees.iter().map(per_file).fold(0.0, f64::max);
        assert!(hi > 1.5 * real, "{hi} vs {real}");
    }
}
