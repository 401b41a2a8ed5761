//! The mdtest experiment (`manyfiles mdtest --easy|--hard`): IO500's two metadata
//! presets, timed as mdtest times them (its sources: hpc/ior `src/mdtest.c`; IO500's
//! `src/phase_mdtest_*.c` give the options):
//!
//! - **easy** (`mdtest -n N -u -L -F -P -N 1`): N empty files per rank, each rank in a
//!   directory of its own (`tree/mdtest_tree.<rank>`, made untimed as mdtest makes its
//!   unique directories outside the clock); phases create, stat, delete;
//! - **hard** (`mdtest -n N -t -F -P -w 3901 -e 3901 -N 1`): N files of 3,901 bytes per
//!   rank, every rank in one shared directory (`tree/`); phases create (written),
//!   stat, read (3,901 bytes each), delete.
//!
//! One thread per rank, as mdtest runs one process per rank. `-N 1`: a phase k (create
//! 0, stat 1, read 2, delete 3) works on the files of rank (rank + k) mod ranks, so no
//! rank touches what it just wrote (mdtest's `stat_name`, `read_name`, `rm_name`).
//! Stonewall (`--stonewall S`, mdtest `-W S`): creates stop after S seconds, then every
//! rank goes on until it has the count the *fastest* rank reached (mdtest's
//! `updateStoneWallIterations`: an `MPI_MAX`), all inside the create phase's time; the
//! later phases take that count. The files made by the wall are recorded as the op
//! `create-stonewall` (IO500's `rate-stonewall`), not scored.
//!
//! Each phase's rate is its files over its time as `--until` says: `returned` by default
//! here, nothing synced, as IO500 runs mdtest (without `-Y`); `--until durable`: create
//! and delete end with a timed syncfs of the target. mdtest `-Y` ends *every* phase with
//! a `system("sync")` inside its time, stat and read too (a fork, an exec of sh and
//! sync(2) of every file system: 10–25 ms a phase measured here); manyfiles times no
//! sync after phases that write nothing. The view prints kIOPS per
//! phase and the md score IO500 forms from them (their geometric mean).
//!
//! `--paths full` (the default) makes mdtest's own calls, each file named by its whole
//! path (`by_path`); `--paths relative` makes manyfiles' (relative to the open
//! directory: `mknodat`, `statx(dirfd, name)`, …), which skips the path walk mdtest pays.
//! Both lay files out as mdtest does, as deep: `tree/mdtest_tree.<rank>` (easy) or
//! `tree/mdtest_tree.0` (hard, shared) in the run directory, against mdtest's
//! `test-dir.0-0/mdtest_tree.<rank>.0` or `test-dir.0-0/mdtest_tree.0` in its `-d`.

mod by_path;
mod trial;
pub mod view;

use super::flags::{CommandLine, Common, Flag, Group, RunSettings, Values};
use super::kinds::{Config, Finished, Kind};
use super::{Driver, LiveTarget, TreeMeta, drive, rounds};
use crate::error::{Error, Result};
use crate::measure::progress::Progress;
use crate::measure::provenance::Provenance;
use crate::ops::{Create, CreateOptions};
use crate::ranks;
use crate::results::{ExperimentInfo, ResultSet};
use crate::signals;
use crate::storage::cache::CacheMode;
use crate::tree::{Content, Layout, Prepared, SizeDist, TreeSpec};

/// Its entry in `experiment::kinds::KINDS`.
pub const KIND: Kind = Kind { name: "mdtest", mpi: true, run_file: true, command: Some(COMMAND), view: &view::VIEW };

const COMMAND: CommandLine = CommandLine {
    about: "IO500's mdtest-easy or mdtest-hard: create, stat, read, delete in kIOPS and their md score",
    flags: &[
        Flag::switch("easy", "mdtest-easy: empty files, a directory per rank (mdtest -n N -u -L -F -P -N 1)")
            .conflicts(&["hard"]),
        Flag::switch(
            "hard",
            "mdtest-hard: 3,901-byte files written and read, all ranks in one directory (mdtest -n N -t -F -P -w \
             3901 -e 3901 -N 1)",
        )
        .conflicts(&["easy"]),
        Flag::count("files", "N", "Files per rank (mdtest -n); with --stonewall, the most").default("100k"),
        Flag::number(
            "stonewall",
            "SECONDS",
            "Stop creating after SECONDS (mdtest -W); every rank then goes on to the count the fastest rank reached, \
             which the later phases take",
        )
        .at_most(86_400),
        Flag::text(
            "paths",
            "full|relative",
            "full: every call names its file by the whole path, as mdtest does (the kernel walks the path each \
             time); relative: by name in the open directory, as manyfiles' own ops do (no walk)",
        )
        .default("full")
        .hints(&["full", "relative"]),
    ],
    groups: &[Group::Own, Group::Run],
    // IO500 runs mdtest without -Y (its src/phase_mdtest_*.c): nothing is synced, and a
    // write phase ends at its last close.
    defaults: &[("until", "returned")],
    config,
};

/// IO500's two mdtest presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    Easy,
    Hard,
}

/// mdtest-hard's file size (`-w 3901 -e 3901`).
pub const HARD_BYTES: u64 = 3901;
/// The op recording the files made by the stonewall (not scored).
pub const STONEWALL_OP: &str = "create-stonewall";

impl Preset {
    pub fn name(self) -> &'static str {
        match self {
            Preset::Easy => "mdtest-easy",
            Preset::Hard => "mdtest-hard",
        }
    }
    /// Bytes per file.
    pub fn bytes(self) -> u64 {
        match self {
            Preset::Easy => 0,
            Preset::Hard => HARD_BYTES,
        }
    }
    /// Its timed phases, in the order they run.
    pub fn ops(self) -> &'static [&'static str] {
        match self {
            Preset::Easy => &["create", "stat", "delete"],
            Preset::Hard => &["create", "stat", "read", "delete"],
        }
    }
}

/// How the calls name their files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paths {
    /// The whole path, walked by the kernel on every call (mdtest's way).
    Full,
    /// The name, relative to the directory's open fd (manyfiles' way).
    Relative,
}

impl Paths {
    pub fn parse(s: &str) -> Result<Paths> {
        match s {
            "full" => Ok(Paths::Full),
            "relative" => Ok(Paths::Relative),
            _ => Err(Error::bad("--paths", format!("'{s}': expected full or relative"))),
        }
    }
    /// As a run's command line gave it (the results keep that line): the view's source.
    pub fn of_command_line(args: &[String]) -> Paths {
        let given = args.iter().enumerate().find_map(|(i, a)| match a.strip_prefix("--paths") {
            Some("") => args.get(i + 1).map(String::as_str),
            Some(v) => v.strip_prefix('='),
            None => None,
        });
        given.and_then(|v| Paths::parse(v).ok()).unwrap_or(Paths::Full)
    }
}

/// Everything an mdtest run needs; no CLI types.
#[derive(Debug, Clone)]
pub struct MdtestConfig {
    pub preset: Preset,
    /// Files per rank (the most, with a stonewall).
    pub files: u64,
    /// Seconds after which creates stop (mdtest -W).
    pub stonewall: Option<u64>,
    pub paths: Paths,
    /// The run flags, checked; `caches` as this experiment uses them.
    pub run: RunSettings,
}

fn config(v: &Values, common: &dyn Common) -> Result<Box<dyn Config>> {
    let preset = match (v.switch("easy"), v.switch("hard")) {
        (true, false) => Preset::Easy,
        (false, true) => Preset::Hard,
        _ => return Err(Error::bad("--easy", "give --easy or --hard (IO500's two mdtest presets)")),
    };
    let files = v.number("files");
    if files == 0 {
        return Err(Error::bad("--files", "must be at least 1"));
    }
    let stonewall = v.given_number("stonewall");
    if stonewall == Some(0) {
        return Err(Error::bad("--stonewall", "must be at least 1 second"));
    }
    let paths = Paths::parse(v.text("paths").unwrap_or("full"))?;
    let mut run = common.run_settings()?;
    if run.threads.is_some_and(|t| t != 1) {
        return Err(Error::bad("--threads", "mdtest runs one thread per rank: run more ranks under mpirun"));
    }
    if run.portion == 0 {
        return Err(Error::bad("--portion", "must be at least 1"));
    }
    // mdtest drops no cache between its phases: neither does this preset unless asked.
    // (A run file's keys are in its command line as flags.)
    let asked = run
        .command_line
        .iter()
        .any(|a| a == "--cold" || a == "--drop-caches" || a == "--cache" || a.starts_with("--cache="));
    if !asked {
        run.caches = CacheMode::Warm;
    }
    let cfg = MdtestConfig { preset, files, stonewall, paths, run };
    tree(&cfg).validate().map_err(|(flag, reason)| Error::bad(flag, reason))?;
    Ok(Box::new(cfg))
}

impl Config for MdtestConfig {
    fn name(&self) -> &str {
        "mdtest"
    }
    fn run(&self) -> Result<Finished> {
        run(self).map(Finished::results)
    }
    fn json(&self) -> Option<&std::path::Path> {
        self.run.json.as_deref()
    }
}

/// The refusal of `--paths full` where `why` says another user could redirect a path.
pub(crate) fn untrusted(why: &str) -> Error {
    Error::bad(
        "--paths",
        format!(
            "full paths are walked again on every call, and {why}: another user could redirect them. Use --paths \
             relative, or a --target only root and you can change"
        ),
    )
}

/// One rank's files: flat, named about as long as mdtest's (`file.mdtest.<rank>.<i>`).
pub fn tree(cfg: &MdtestConfig) -> TreeSpec {
    TreeSpec {
        files: cfg.files,
        size: SizeDist::Fixed { bytes: cfg.preset.bytes() },
        layout: Layout::Flat,
        name_len: 20,
        content: Content::Random,
        seed: 1,
    }
}

/// Run `cfg`: every trial's phases on every target, the results rewritten after each
/// measurement; run directories removed and managed file systems torn down at the end
/// and on every error path (by drop).
pub fn run(cfg: &MdtestConfig) -> Result<ResultSet> {
    signals::install();
    let r = &cfg.run;
    if r.targets.is_empty() {
        return Err(Error::bad("--target", "no target given"));
    }
    super::targets::refuse_urls(&r.targets, "mdtest")?;
    super::check_caches(r.caches, "--cache")?;
    // Under MPI every rank works in rank 0's run directory (easy: each in its own
    // directory there; hard: all in one).
    ranks::set_shared_dir(true);
    if cfg.paths == Paths::Full {
        for t in &r.targets {
            if let super::TargetSpec::Dir(dir) = t {
                // A path walked per call goes wherever its directories point then: refused
                // before anything is made where another user could redirect it. (A managed
                // --fs target's mount point is the tool's own; each phase checks again.)
                ranks::agree(crate::fs::trusted_path::trusted(dir).map(|_| ()).map_err(|why| untrusted(&why)))?;
            }
        }
    }
    let spec = tree(cfg);
    let mut targets = LiveTarget::open_all(&r.targets, std::slice::from_ref(&spec), r.fs_size, 1, r.keep, r.reuse)?;
    LiveTarget::set_labels(&mut targets, &r.labels);
    let mut ops: Vec<String> = cfg.preset.ops().iter().map(|s| s.to_string()).collect();
    if cfg.stonewall.is_some() {
        ops.insert(1, STONEWALL_OP.into());
    }
    let runs = rounds::Runs::of(r.runs.unwrap_or(3), r.adaptive);
    let experiment = ExperimentInfo {
        name: "mdtest".into(),
        ops,
        runs: runs.max(),
        warmup: r.warmup,
        threads: 1,
        portion_files: r.portion,
        order: r.order.name().into(),
        create: CreateOptions::default(),
        caches: r.caches,
        until: r.until,
        adaptive: r.adaptive,
        side_trees: Vec::new(),
    };
    let infos = targets.iter().map(|t| t.info.clone()).collect();
    let rs = ResultSet::new(Provenance::collect(r.command_line.clone()), experiment, infos);
    let progress = Progress::new(r.quiet);
    let mut prepared = Prepared::new(&spec, false);
    let metas = [TreeMeta { bytes: prepared.total_bytes, spec, dirs: 0 }];
    let driver = Driver {
        name: "mdtest",
        runs,
        warmup: r.warmup,
        order: r.order,
        outputs: super::outputs(r.json.as_deref(), &r.exports),
        mock: r.mock,
        reformat: false,
    };
    let env = trial::Env {
        preset: cfg.preset,
        stonewall: cfg.stonewall.map(std::time::Duration::from_secs),
        paths: cfg.paths,
        until: r.until,
        portion_files: r.portion,
        caches: r.caches,
        create: Create { opts: CreateOptions::default() },
        progress: &progress,
    };
    let all_units = prepared.plan.file_units.clone();
    drive(&driver, targets, rs, &metas, &progress, |rundir, _, watch| {
        trial::run(rundir, &mut prepared, &all_units, &env, watch)
    })
}

#[cfg(test)]
mod tests {
    use super::Paths;

    #[test]
    fn paths_read_back_from_a_command_line() {
        let line = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(Paths::of_command_line(&line("manyfiles mdtest --easy")), Paths::Full);
        assert_eq!(Paths::of_command_line(&line("manyfiles mdtest --paths relative --easy")), Paths::Relative);
        assert_eq!(Paths::of_command_line(&line("manyfiles mdtest --paths=relative")), Paths::Relative);
        assert_eq!(Paths::of_command_line(&line("manyfiles mdtest --paths=full")), Paths::Full);
    }
}
