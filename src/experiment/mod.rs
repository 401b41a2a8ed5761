//! Experiments: a list of trees × ops × runs on one target, run in interleaved order
//! (run 1 of every tree, then run 2, ...) so machine drift hits every tree alike.
//! Results are rewritten after every measurement.

pub mod all_ranks;
pub mod bigfile;
pub mod calibrate;
pub mod calibrate_objects;
pub mod chosen_ops;
pub mod class_time;
pub mod clusters;
pub mod dirsize;
mod driver;
pub mod external;
pub mod flags;
pub mod kinds;
pub mod ladder;
pub mod mdtest;
pub mod pack;
pub mod rounds;
pub mod targets;
pub mod user_store;

use crate::error::{Error, Result};
use crate::fs::remove::remove_contents;
use crate::fs::walk;
use crate::measure::PhaseResult;
use crate::measure::TargetWatch;
use crate::measure::progress::Progress;
use crate::measure::provenance::Provenance;
use crate::ops::registry::PairOp;
use crate::ops::{self, CreateOptions, Op, PhaseSettings, REFORMAT, reads_tree};
use crate::ranks;
use crate::report::export::{Format, Output};
use crate::results::{ExperimentInfo, ResultSet};
use crate::signals;
use crate::storage::TargetInfo;
use crate::storage::cache::CacheState;
use crate::storage::cache::drop_caches;
use crate::storage::rundir::RunDir;
use crate::tree::layout::Shape;
use crate::tree::{Prepared, TreeSpec};
use crate::units::fmt_size;
use all_ranks::run_phase_on_every_rank;
pub(crate) use driver::{Driver, drive};
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, Mode, OFlags, mkdirat, openat, unlinkat};
use std::path::PathBuf;
pub use targets::{LiveTarget, TargetSpec};
use user_store::Endpoint;

/// Everything a tree experiment needs; no CLI types.
#[derive(Debug, Clone)]
pub struct TreeExperiment {
    pub name: String,
    pub targets: Vec<TargetSpec>,
    /// The user's names for the targets, in order (`--label`; empty: what each is).
    pub labels: Vec<String>,
    /// Image size for managed file systems (None: from the largest tree).
    pub fs_size: Option<u64>,
    /// Keep a managed file system between trials instead of formatting it afresh.
    pub reuse: bool,
    pub order: Order,
    pub caches: CacheMode,
    /// Which time of a write phase statistics use.
    pub until: crate::results::Until,
    /// After each create, sum the files' st_blocks (untimed): clusters' slack table.
    pub measure_allocation: bool,
    pub trees: Vec<TreeSpec>,
    /// Keys of the ladder's side rungs among `trees` (`experiment::ladder`): reports keep
    /// them off the rungs' lines.
    pub side_trees: Vec<String>,
    /// Subset of [`ops::OP_NAMES`], in that order.
    pub ops: Vec<String>,
    pub create: CreateOptions,
    /// Runs per cell with `adaptive` None; with adaptive runs, unused.
    pub runs: u32,
    /// Adaptive runs to a precision (the default of the command line).
    pub adaptive: Option<crate::results::adaptive::Adaptive>,
    /// Synthetic times (hidden `--mock-timing`: tests of the statistics).
    pub mock: Option<rounds::MockTiming>,
    pub warmup: u32,
    pub threads: usize,
    /// The copy engine's ops (copy and the sync family) run as `manyfiles copy` does
    /// without `--threads`: from this many threads, with in-flight control where a call
    /// may cost a round trip ([`crate::engine::default_plan`]); `predict` sets it, so
    /// that it calibrates with what the user's check runs, and so does a ladder without
    /// `--threads`. None: `threads`, fixed.
    pub copy_threads: Option<usize>,
    pub portion_files: u64,
    pub keep: bool,
    /// MPI `--shared-dir`: all ranks in rank 0's directories, each on its own files.
    pub shared_dir: bool,
    pub json: Option<PathBuf>,
    /// CSV / Markdown exports, rewritten with the JSON.
    pub exports: Vec<Output>,
    pub quiet: bool,
    pub command_line: Vec<String>,
    /// External tools run as ops (`--cmd`), named `cmd:NAME` in `ops`.
    pub commands: Vec<external::ExternalCmd>,
    /// `--prices FILE`: the price table of object-store requests (None: each target's
    /// provider's list prices).
    pub prices: Option<PathBuf>,
}

use crate::storage::cache::CacheMode;

/// Get the caches ready for phase `op` over the trees `roots` (outside any timing):
/// what was done, as measurements record it.
pub(crate) fn prepare_caches(
    mode: CacheMode,
    op: &str,
    roots: &[&std::path::Path],
    threads: usize,
) -> Result<CacheState> {
    let cold = |roots: &[&std::path::Path]| {
        crate::storage::cache::make_cold(roots, threads).map(|(s, _)| s).map_err(Error::failed)
    };
    match mode {
        CacheMode::Warm => Ok(CacheState::Warm),
        CacheMode::Cold if reads_tree(op) => cold(roots),
        CacheMode::Cold => Ok(CacheState::Warm),
        CacheMode::Drop if reads_tree(op) => cold(roots),
        CacheMode::Drop => drop_caches().map(|_| CacheState::AllDropped),
    }
}

/// Time `phase`, recording what `watch`'s device and the machine did meanwhile and the
/// cache state.
pub(crate) fn watched(watch: &TargetWatch, cache: CacheState, phase: impl FnOnce() -> PhaseResult) -> PhaseResult {
    let (mut r, io, machine) = watch.around(phase);
    r.device = io;
    r.machine = machine;
    r.cache = Some(cache.name().to_string());
    r
}

/// Refuse cache dropping without root, before anything is created (cold reads work
/// without root: only the trees' data are evicted then).
pub fn check_caches(mode: CacheMode, flag: &str) -> Result<()> {
    if mode == CacheMode::Drop && !rustix::process::geteuid().is_root() {
        return Err(Error::bad(flag, "dropping the kernel's caches needs root"));
    }
    Ok(())
}

/// The order trials run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Run 1 of every tree on every target, then run 2, ...: drift hits all alike.
    Interleaved,
    /// Every run of every tree on the first target, then the next target.
    Sequential,
}

impl Order {
    pub fn parse(s: &str) -> Result<Order> {
        match s {
            "interleaved" => Ok(Order::Interleaved),
            "sequential" => Ok(Order::Sequential),
            _ => Err(Error::bad("--order", format!("'{s}': expected interleaved or sequential"))),
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            Order::Interleaved => "interleaved",
            Order::Sequential => "sequential",
        }
    }
}

/// Add external tools as ops `cmd:NAME`, after the other pair ops and before delete.
pub fn add_commands(ops: &mut Vec<String>, cmds: &[external::ExternalCmd]) -> Result<()> {
    for c in cmds {
        let name = ops::registry::PairOp::name(c);
        if ops.contains(&name) {
            return Err(Error::bad("--cmd", format!("{} given twice", c.name)));
        }
        let at = ops.iter().position(|o| ops::removes_tree(o)).unwrap_or(ops.len());
        ops.insert(at, name);
    }
    Ok(())
}

/// Check the target before anything is created: exists, is a directory, writable,
/// and has room for the largest tree.
pub fn check_target(target: &std::path::Path, trees: &[TreeSpec]) -> Result<TargetInfo> {
    let md = std::fs::metadata(target).map_err(|e| Error::bad("--target", format!("{}: {e}", target.display())))?;
    if !md.is_dir() {
        return Err(Error::bad("--target", format!("{} is not a directory", target.display())));
    }
    let info = TargetInfo::probe("target", target)
        .map_err(|e| Error::bad("--target", format!("{}: {e}", target.display())))?;
    if info.read_only {
        return Err(Error::bad("--target", format!("{} is on a read-only file system", target.display())));
    }
    if rustix::fs::access(target, rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK).is_err() {
        return Err(Error::bad("--target", format!("{} is not writable", target.display())));
    }
    // The largest tree by what it takes there (an empty file takes no data block).
    for t in trees {
        check_room(t, &info, target, "--target")?;
    }
    Ok(info)
}

/// Refuse (bad input `flag`, before anything is written) a tree the file system has no room
/// for: the bytes it would allocate (`tree::space`: no data block for an empty file,
/// directory blocks, per-inode metadata where it comes from free space) with 10% margin,
/// and its inodes where the file system has a fixed number (ext2/3/4, tmpfs).
pub fn check_room(spec: &TreeSpec, info: &TargetInfo, at: &std::path::Path, flag: &str) -> Result<()> {
    let need = crate::tree::space::footprint(spec, &info.fs_type, info.block_size);
    let bytes = need.bytes / 10 * 11;
    // A file system that reports no size at all (ramfs) keeps no account to check against.
    if info.total_bytes > 0 && bytes > info.free_bytes {
        return Err(Error::bad(
            flag,
            format!(
                "the tree needs about {} on {} but only {} is free there",
                fmt_size(bytes as f64),
                info.fs_type,
                fmt_size(info.free_bytes as f64)
            ),
        ));
    }
    let vfs = rustix::fs::statvfs(at).map_err(|e| Error::bad(flag, format!("statvfs {}: {e}", at.display())))?;
    // f_files 0: inodes made as needed (btrfs, FAT), none to run out of but space.
    if vfs.f_files > 0 && need.inodes > vfs.f_favail {
        return Err(Error::bad(
            flag,
            format!(
                "the tree needs {} inodes ({} files and {} directories) but only {} are free there",
                need.inodes,
                spec.files,
                need.inodes - spec.files,
                vfs.f_favail
            ),
        ));
    }
    Ok(())
}

/// Space a tree takes on `info`'s file system by the rule that sizes managed images:
/// every file rounded up to whole blocks (at least one, an empty file too), one block per
/// directory, and 10% for metadata: generous on purpose (the image is made for the tree,
/// and [`check_room`]'s account of what a tree really takes is for existing targets).
pub fn estimate_space(info: &TargetInfo, spec: &TreeSpec) -> u64 {
    let files = spec.sum_sizes(|b| info.allocated(b));
    let dirs = Shape::of(spec).dir_count().saturating_mul(info.block_size);
    files.saturating_add(dirs) / 10 * 11
}

/// Why a trial stopped early.
pub(crate) enum Stop {
    Signal(i32),
    Failed(String),
}

/// What one trial produced: its finished phases (op name, result) and why it stopped
/// early, if it did.
pub(crate) type TrialOutcome = (Vec<(String, PhaseResult)>, Option<Stop>);

/// A tree as measurements record it.
pub(crate) struct TreeMeta {
    pub spec: TreeSpec,
    pub bytes: u64,
    pub dirs: u64,
}

/// The JSON (if any) and the other exports, in the order they are written.
/// Only rank 0 writes results (under MPI).
pub(crate) fn outputs(json: Option<&std::path::Path>, exports: &[Output]) -> Vec<Output> {
    if !crate::ranks::is_root() {
        return Vec::new();
    }
    json.map(|p| Output { path: p.to_path_buf(), format: Format::Json })
        .into_iter()
        .chain(exports.iter().cloned())
        .collect()
}

/// Run `cfg`; the ResultSet is returned (and written to `cfg.json` after every
/// measurement). Run directories are removed and managed file systems torn down at
/// the end, and on every error path (by drop).
pub fn run(cfg: &TreeExperiment) -> Result<ResultSet> {
    signals::install();
    for t in &cfg.trees {
        t.validate().map_err(|(flag, reason)| Error::bad(flag, reason))?;
    }
    if cfg.targets.is_empty() {
        return Err(Error::bad("--target", "no target given"));
    }
    check_caches(cfg.caches, "--cache")?;
    ranks::set_shared_dir(cfg.shared_dir);
    if ranks::shared_dir() {
        if let Some(op) = cfg.ops.iter().find(|o| !["create", "stat", "list", "read", "delete"].contains(&o.as_str())) {
            return Err(Error::bad(
                "--shared-dir",
                format!(
                    "{op} works on a tree per rank; with --shared-dir only create, stat, list, read and delete run"
                ),
            ));
        }
    }
    check_object_targets(cfg)?;
    let blob = cfg.targets.iter().find_map(|t| match t {
        TargetSpec::Fs(s)
            if s.object().is_some_and(|o| o.provider == crate::storage::object_stack::Provider::Azblob) =>
        {
            Some(s.label())
        }
        _ => None,
    });
    if let (Some(op), Some(label)) = (cfg.ops.iter().find(|o| !ops::object::is_object_op(o)), blob) {
        return Err(Error::bad("--ops", crate::storage::azblob_stack::no_files(op, &label)));
    }
    let prices = match &cfg.prices {
        Some(f) => Some(crate::results::prices::PriceTable::load(f).map_err(|e| Error::bad("--prices", e))?),
        None => None,
    };
    if cfg.ops.iter().any(|o| o == REFORMAT) {
        if cfg.targets.iter().any(|t| !matches!(t, TargetSpec::Fs(_))) {
            return Err(Error::bad("--ops", "reformat formats the file system: it runs only on --fs targets"));
        }
        if cfg.reuse {
            return Err(Error::bad("--reuse", "reformat formats the file system after every trial: drop --reuse"));
        }
    }
    // A copy or sync op writes a second tree beside the first (one at a time).
    let copies = if cfg.ops.iter().any(|o| ops::registry::pair_op_by_name(o).is_some() || o.starts_with("cmd:")) {
        2
    } else {
        1
    };
    // Device classes: the minimum runs' time by the classes' parameters, refused above
    // twice --max-time before anything is created.
    class_time::check(cfg, copies)?;
    let mut targets = LiveTarget::open_all(&cfg.targets, &cfg.trees, cfg.fs_size, copies, cfg.keep, cfg.reuse)?;
    LiveTarget::set_labels(&mut targets, &cfg.labels);
    // Object-store targets by the directory their run directories are made in.
    let stores: Vec<(PathBuf, Endpoint)> = targets
        .iter()
        .filter_map(|t| match t.user_store() {
            Some(e) => Some((t.rundir()?.path.parent()?.to_path_buf(), e)),
            None => Some((
                t.info.path.clone(),
                Endpoint::Stack(Box::new(t.info.managed.as_ref()?.object.as_deref()?.clone())),
            )),
        })
        .collect();
    let experiment = ExperimentInfo {
        name: cfg.name.clone(),
        ops: cfg.ops.clone(),
        // Adaptive: the most a cell may get (`adaptive` says how many it took).
        runs: rounds::Runs::of(cfg.runs, cfg.adaptive).max(),
        warmup: cfg.warmup,
        threads: cfg.threads,
        portion_files: cfg.portion_files,
        order: cfg.order.name().into(),
        create: cfg.create.clone(),
        caches: cfg.caches,
        until: cfg.until,
        adaptive: cfg.adaptive,
        side_trees: cfg.side_trees.clone(),
    };
    let infos = targets.iter().map(|t| t.info.clone()).collect();
    let rs = ResultSet::new(Provenance::collect(cfg.command_line.clone()), experiment, infos);
    let progress = Progress::new(cfg.quiet);
    let prepared: Vec<Prepared> = cfg.trees.iter().map(|t| Prepared::new(t, cfg.create.direct)).collect();
    let metas: Vec<TreeMeta> = prepared
        .iter()
        .map(|p| TreeMeta { spec: p.spec.clone(), bytes: p.total_bytes, dirs: p.plan.dirs.len() as u64 - 1 })
        .collect();
    let all_ops: Vec<Box<dyn Op>> = ops::OP_NAMES.iter().map(|n| ops::op_by_name(n, &cfg.create)).collect();
    let pairs = pair_ops(cfg)?;
    let settings = PhaseSettings {
        threads: cfg.threads,
        portion_files: cfg.portion_files,
        buf_len: cfg.create.block_size.max(64 * 1024),
        flush: true,
        shared_dir: all_ranks::shared_dir(),
    };
    let driver = Driver {
        name: &cfg.name,
        runs: rounds::Runs::of(cfg.runs, cfg.adaptive),
        warmup: cfg.warmup,
        order: cfg.order,
        outputs: outputs(cfg.json.as_deref(), &cfg.exports),
        mock: cfg.mock,
        reformat: cfg.ops.iter().any(|o| o == REFORMAT),
    };
    drive(&driver, targets, rs, &metas, &progress, |rundir, ti, watch| {
        let env = TreeEnv {
            settings: &settings,
            copy_threads: cfg.copy_threads,
            progress: &progress,
            caches: cfg.caches,
            pairs: &pairs,
            watch,
        };
        let (mut done, mut stop) = run_tree(rundir, &prepared[ti], &cfg.ops, &all_ops, &env, cfg.measure_allocation);
        let store = stores.iter().find(|(p, _)| rundir.path.parent() == Some(p.as_path()));
        if let (true, Some((_, d))) = (stop.is_none(), store) {
            stop = object_trial(rundir, d, (&prepared[ti], &prices), cfg, &env, &mut done);
        }
        (done, stop)
    })
}

/// The native object-store ops of `cfg.ops` on the store `d`, after the file ops, with a
/// client of the trial's own; the tree's objects under `RUNDIR/objects/` in the bucket
/// (a user's: below the run's own prefix); each phase's requests priced with `prices`.
/// On a bucket of the user's, a trial that did not end clean has its keys deleted again.
fn object_trial(
    rundir: &RunDir,
    d: &Endpoint,
    (tree, prices): (&Prepared, &Option<crate::results::prices::PriceTable>),
    cfg: &TreeExperiment,
    env: &TreeEnv,
    done: &mut Vec<(String, PhaseResult)>,
) -> Option<Stop> {
    let wanted: Vec<String> = cfg.ops.iter().filter(|o| ops::object::is_object_op(o)).cloned().collect();
    if wanted.is_empty() {
        return None;
    }
    let client = match d.client() {
        Ok(c) => c,
        Err(e) => return Some(Stop::Failed(e.to_string())),
    };
    let name = rundir.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // Without --threads (`copy_threads` set): DEFAULT_IN_FLIGHT requests at once, not the cores.
    let in_flight = cfg.copy_threads.map_or(cfg.threads, |_| ops::object::DEFAULT_IN_FLIGHT);
    let prefix = format!("{}{name}/objects/", d.base());
    let run =
        ops::object::Run::new(&client, prefix, tree, in_flight, cfg.portion_files, env.progress).owned_by(d.owner());
    let (mut phases, failed) = ops::object::run_trial(&run, &wanted, &mut |f| watched(env.watch, CacheState::Warm, f));
    let prices = prices.clone().unwrap_or_else(|| crate::results::prices::PriceTable::list_prices(d.provider()));
    for (_, r) in &mut phases {
        r.cost = r.requests.as_ref().map(|q| prices.cost(q));
    }
    let clean = failed.is_none()
        && signals::pending() == 0
        && phases.iter().all(|(_, r)| r.errors == 0 && r.failed.is_none() && !r.interrupted);
    let swept = match d.is_users() && !clean {
        true => user_store::UserStore::sweep(&client, run.keys().iter().map(|(_, k)| k.clone()).collect()),
        false => None,
    };
    done.extend(phases);
    failed.or(swept).map(Stop::Failed).or_else(|| (signals::pending() != 0).then(|| Stop::Signal(signals::pending())))
}

/// Object ops run only on object stores (`--fs s3`, `azblob`, `--target s3://…`), in one
/// process; a bucket of the user's takes the object ops only, and is kept by no `--keep`.
fn check_object_targets(cfg: &TreeExperiment) -> Result<()> {
    let url = |t: &TargetSpec| matches!(t, TargetSpec::Dir(p) if crate::engine::object::is_url(p));
    if let Some(op) = cfg.ops.iter().find(|o| ops::object::is_object_op(o)) {
        let store = |t: &TargetSpec| url(t) || matches!(t, TargetSpec::Fs(s) if s.object().is_some());
        if ranks::size() > 1 || !cfg.targets.iter().all(store) {
            let why = "sends object-store requests: it runs only on --fs s3 or azblob targets or --target \
                       s3://BUCKET/PREFIX, in one process";
            return Err(Error::bad("--ops", format!("{op} {why}")));
        }
    }
    if let Some(TargetSpec::Dir(p)) = cfg.targets.iter().find(|t| url(t)) {
        if let Some(op) = cfg.ops.iter().find(|o| !ops::object::is_object_op(o)) {
            let why = "works on files: a bucket has none; time its native requests with --ops \
                       obj:put,obj:head,obj:list,obj:get,obj:delete,obj:delete-batch";
            return Err(Error::bad("--ops", format!("{op} {why} ({})", p.display())));
        }
        if cfg.keep {
            return Err(Error::bad(
                "--keep",
                format!("{}: the objects of a bucket's trials are not kept", p.display()),
            ));
        }
    }
    Ok(())
}

/// Make the tree root, run every op in order on it (create and delete run untimed when
/// not asked for, since the tree must exist and then go), remove the root.
fn run_tree(
    rundir: &RunDir,
    tree: &Prepared,
    wanted: &[String],
    all_ops: &[Box<dyn Op>],
    env: &TreeEnv,
    measure_allocation: bool,
) -> (Vec<(String, PhaseResult)>, Option<Stop>) {
    const ROOT: &std::ffi::CStr = c"tree";
    let (settings, progress, caches) = (env.settings, env.progress, env.caches);
    let mut done = Vec::new();
    if wanted.iter().all(|w| ops::object::is_object_op(w) || w == REFORMAT) {
        return (done, None); // only native object-store ops: no tree of files
    }
    // Under MPI all ranks agree on each step that could fail on one alone (a rank that
    // stopped here would leave the others waiting in the next phase).
    let made = match ranks::makes_dirs() {
        true => mkdirat(rundir.fd(), ROOT, Mode::from_raw_mode(0o755)),
        false => Ok(()), // --shared-dir: rank 0 makes it
    };
    if let Err(e) = ranks::agree(made.map_err(|e| Error::failed(format!("cannot create the tree root: {e}")))) {
        return (done, Some(Stop::Failed(e.to_string())));
    }
    let opened = openat(rundir.fd(), ROOT, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW, Mode::empty());
    let root = match ranks::agree(opened.map_err(|e| Error::failed(format!("cannot open the tree root: {e}")))) {
        Ok(fd) => fd,
        Err(e) => return (done, Some(Stop::Failed(e.to_string()))),
    };
    let reformat = wanted.iter().any(|w| w == REFORMAT);
    let mut pairs_ran = false;
    let rm_timed = wanted.iter().any(|w| w == "rm");
    for op in all_ops {
        let name = op.name();
        let timed = wanted.iter().any(|w| w == name);
        if ops::removes_tree(name) && !pairs_ran {
            pairs_ran = true;
            if !env.pairs.is_empty() {
                if let Some(stop) = run_pairs(rundir, tree, env, &mut done) {
                    return (done, Some(stop));
                }
            }
        }
        if !timed && name != "create" && (name != "delete" || rm_timed) {
            continue; // (the tree is gone when rm ran)
        }
        if !timed && name == "delete" && rundir.disposable() {
            return (done, None); // the next trial's format removes the tree
        }
        let cache = match timed {
            true => match prepare_caches(caches, name, &[&rundir.path.join("tree")], settings.threads) {
                Ok(c) => c,
                Err(e) => return (done, Some(Stop::Failed(e.to_string()))),
            },
            false => CacheState::Warm,
        };
        // Space the phase takes or frees (statvfs around it, outside the timing): the
        // allocated bytes behind a create, from which slack per file follows.
        let used = || rustix::fs::fstatvfs(&root).ok().map(|v| (v.f_blocks - v.f_bfree).saturating_mul(v.f_frsize));
        let before = used();
        let mut r =
            watched(env.watch, cache, || run_phase_on_every_rank(op.as_ref(), tree, root.as_fd(), settings, progress));
        if name == "create" {
            if let (Some(a), Some(b)) = (before, used()) {
                r.space_used_bytes = Some(b as i64 - a as i64);
            }
            if measure_allocation && r.failed.is_none() && !r.interrupted {
                let a = run_phase_on_every_rank(
                    &ops::allocated::Allocated,
                    tree,
                    root.as_fd(),
                    settings,
                    &Progress::hidden(),
                );
                if a.errors == 0 && a.failed.is_none() {
                    r.allocated_bytes = Some(a.bytes);
                }
            }
        }
        let stop = if let Some(f) = &r.failed {
            Some(Stop::Failed(format!("{name} failed after {} of {} files: {f}", r.files, tree.plan.files)))
        } else if r.interrupted {
            Some(Stop::Signal(signals::pending()))
        } else if !timed && r.errors > 0 {
            Some(Stop::Failed(format!(
                "{name} (untimed setup) had {} errors: {}",
                r.errors,
                r.first_error.clone().unwrap_or_default()
            )))
        } else {
            None
        };
        if timed {
            done.push((name.to_string(), r));
        }
        if stop.is_some() {
            return (done, stop);
        }
        if reformat && name == "delete" {
            // The reformat is timed with the tree on the file system: make it again.
            let Some(create) = all_ops.iter().find(|o| o.name() == "create") else { break };
            let again = run_phase_on_every_rank(create.as_ref(), tree, root.as_fd(), settings, &Progress::hidden());
            if let Some(f) = again.failed.or((again.errors > 0).then(|| again.first_error.unwrap_or_default())) {
                return (done, Some(Stop::Failed(format!("create (untimed, before reformat) failed: {f}"))));
            }
        }
    }
    if reformat {
        return (done, None); // the reformat removes the tree with the file system
    }
    drop(root);
    ranks::shared_barrier();
    let removed = match ranks::makes_dirs() {
        true => unlinkat(rundir.fd(), ROOT, AtFlags::REMOVEDIR),
        false => Ok(()),
    };
    if let Err(e) = ranks::agree(removed.map_err(|e| Error::failed(format!("cannot remove the tree root: {e}")))) {
        return (done, Some(Stop::Failed(e.to_string())));
    }
    (done, None)
}

/// What every tree of an experiment runs with.
struct TreeEnv<'a> {
    settings: &'a PhaseSettings,
    /// The copy engine's pair ops run as `manyfiles copy` would from this many threads;
    /// None: `settings.threads`, fixed (external tools always).
    copy_threads: Option<usize>,
    progress: &'a Progress,
    caches: CacheMode,
    pairs: &'a [Box<dyn PairOp>],
    /// The target's block device and serving processes, watched around every phase.
    watch: &'a TargetWatch,
}

/// The pair ops (copy, sync family, external tools) of `cfg.ops`, in order.
fn pair_ops(cfg: &TreeExperiment) -> Result<Vec<Box<dyn PairOp>>> {
    let mut v: Vec<Box<dyn PairOp>> = Vec::new();
    for name in &cfg.ops {
        if let Some(op) = ops::registry::pair_op_by_name(name) {
            v.push(op.map_err(|e| Error::bad("--ops", e))?);
        } else if let Some(c) = cfg.commands.iter().find(|c| &PairOp::name(*c) == name) {
            v.push(Box::new(c.clone()));
        }
    }
    Ok(v)
}

/// End a write phase that ran elsewhere (an engine, an external tool) with a timed
/// syncfs of the file system holding `dir`: its time until return stays as
/// `returned_s`, `elapsed_s` becomes the durable time.
pub(crate) fn make_durable(r: &mut PhaseResult, dir: &std::path::Path) {
    if !r.complete() {
        return;
    }
    let t = std::time::Instant::now();
    let synced = walk::open_root(dir).and_then(|fd| rustix::fs::syncfs(&fd));
    let flush = t.elapsed().as_secs_f64();
    if let Err(e) = synced {
        r.errors += 1;
        r.first_error = Some(format!("syncfs {}: {e}", dir.display()));
        return;
    }
    r.returned_s = Some(r.elapsed_s);
    r.flush_s = Some(flush);
    r.elapsed_s += flush;
    r.last_finish_s = r.elapsed_s;
    r.portions = ops::with_flush(std::mem::take(&mut r.portions), Some(flush));
}

/// Run every pair op with the tree as SRC and a fresh `dst` beside it as DST (made
/// empty before, removed after, both untimed), and check what each produced.
fn run_pairs(rundir: &RunDir, tree: &Prepared, env: &TreeEnv, done: &mut Vec<(String, PhaseResult)>) -> Option<Stop> {
    const DST: &std::ffi::CStr = c"dst";
    let src = rundir.path.join("tree");
    let dst = rundir.path.join("dst");
    for op in env.pairs {
        let name = op.name();
        let threads = env.settings.threads;
        let plan = match env.copy_threads {
            Some(n) if !name.starts_with("cmd:") => crate::engine::default_plan(n, &[&src, &dst]),
            _ => crate::engine::inflight::Plan::Fixed(threads),
        };
        if let Err(e) = mkdirat(rundir.fd(), DST, Mode::from_raw_mode(0o755)) {
            return Some(Stop::Failed(format!("{name}: cannot create the destination: {e}")));
        }
        // Under MPI every rank prepares and runs at once; all learn of one rank's failure.
        let prepared = crate::ranks::agree(op.prepare(&src, &dst, threads).map_err(Error::failed));
        let r = match prepared {
            Err(e) => return Some(Stop::Failed(format!("{name}: {e}"))),
            Ok(()) => {
                let cache = match prepare_caches(env.caches, &name, &[&src, &dst], threads) {
                    Ok(c) => c,
                    Err(e) => return Some(Stop::Failed(e.to_string())),
                };
                env.progress.phase(&name, tree.plan.files);
                watched(env.watch, cache, || {
                    crate::experiment::all_ranks::run_phase_everywhere(|| {
                        let mut r = op.run(&src, &dst, plan);
                        if r.flush_s.is_none() {
                            make_durable(&mut r, &dst); // external tools flush before their check
                        }
                        // Built-in ops are checked like external ones: a wrong tree is an error.
                        if r.complete() && !name.starts_with("cmd:") {
                            let v = crate::engine::copy::verify::compare(&src, &dst, &Default::default(), threads);
                            if !v.ok() {
                                r.errors += v.differences;
                                r.first_error = Some(format!(
                                    "{name}: wrong tree: {}",
                                    v.examples.first().cloned().unwrap_or_default()
                                ));
                            }
                        }
                        (r, crate::measure::new_histogram())
                    })
                })
            }
        };
        let interrupted = r.interrupted;
        done.push((name.clone(), r));
        let removed = walk::open_dir_at(rundir.fd(), DST).and_then(|fd| {
            let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o700));
            remove_contents(fd.as_fd())
        });
        if let Err(e) = removed.and_then(|_| unlinkat(rundir.fd(), DST, AtFlags::REMOVEDIR)) {
            return Some(Stop::Failed(format!("{name}: cannot remove the destination: {e}")));
        }
        if interrupted || signals::pending() != 0 {
            return Some(Stop::Signal(signals::pending()));
        }
    }
    None
}
