//! Command-line definitions (clap) and their translation into the engine's plain config
//! structs. Nothing below this layer sees clap.

use clap::{Args, Parser, Subcommand};
use manyfiles::error::{Error, Result};
use manyfiles::experiment::ladder::LadderSpec;
use manyfiles::experiment::{CacheMode, Order, TargetSpec, TreeExperiment, parse_ops};
use manyfiles::generate::GenConfig;
use manyfiles::ops::{CreateOptions, FsyncMode, IoBuf};
use manyfiles::report::export::{Format, Output};
use manyfiles::results::Until;
use manyfiles::target::fsspec::parse_list as parse_fs_list;
use manyfiles::tree::content::POOL;
use manyfiles::tree::{Content, Layout, SizeDist, TreeSpec};
use manyfiles::units::{parse_count, parse_size};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "manyfiles",
    version = manyfiles::measure::provenance::LONG_VERSION,
    about = "Measure what many small files cost a storage system",
    long_about = "Measure what many small files cost a storage system: the same bytes as 1 file or as \
                  65,536 files, timed phase by phase with honest statistics, and the per-file and \
                  per-byte cost fitted from them."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// The main job: a fixed total split into 1, 4, 16, … files; time per op, fitted per-file cost and bandwidth
    Ladder(LadderArgs),
    /// Time chosen ops (create, stat, list, read, delete) over one generated tree
    Ops(OpsArgs),
    /// Write a deterministic tree (same spec + seed → byte-identical tree) into DIR
    Gen(GenArgs),
    /// One big file written in blocks: write loop, close (fsync) and unlink timed apart
    Bigfile(BigfileArgs),
    /// Cluster sizes × file sizes on fresh formats: seconds per portion and slack per file
    Clusters(ClustersArgs),
    /// Fill one directory portion by portion and find where the per-file cost jumps
    Dirsize(DirsizeArgs),
    /// Run an experiment described in a TOML file (keys are the command's long flags)
    Run(RunFileArgs),
    /// Walk a tree and index its metadata (SQLite or PostgreSQL); a rescan writes only changes
    Scan(ScanArgs),
    /// Remove what killed runs left behind: mounts, loop devices, images (only what manyfiles made)
    Cleanup,
    /// Copy SRC's contents into DST (new or empty): parallel per directory, mode, mtime and symlinks kept
    Copy(CopyArgs),
    /// Remove trees fast: parallel per directory, never follows symlinks, stays on one file system
    ///
    /// Every PATH is checked before anything is removed: `/`, anything resolving to it, a
    /// path that cannot be resolved, or ending in `.`/`..` is refused (exit 2). A symlink
    /// PATH is removed itself. Mount points inside the trees are left alone and listed as
    /// failures (exit 1) unless --cross-mounts. "freed" is the free space the file systems
    /// involved gained (statvfs before and after: no per-file stat), so other writers on
    /// them, or file systems that free blocks in the background (btrfs, XFS), make it
    /// approximate.
    Rm(RmArgs),
    /// Make DST equal SRC: copy new and changed entries (size + mtime, or --checksum), optionally --delete
    Sync(SyncArgs),
    /// Charts and tables of result files: --html report (inline SVG), --png DIR, --csv, --markdown
    Report(ReportArgs),
    /// A/B: every measurement in both result files, the ratio B/A with its 95% CI and a verdict
    Compare(CompareArgs),
    /// Predict a real tree's time for every modelled op and target (model from a ladder's results)
    Predict(PredictArgs),
    /// Cluster sizes for a tree: allocated space and slack, predicted write time, a recommendation
    Plan(PlanArgs),
    /// Loose vs packed: copy a tree file by file, or pack it (tar, tar.zst, squashfs, erofs, ext4 image), copy one file, unpack or mount it
    Pack(PackArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout
    Completions(CompletionsArgs),
    /// Write man pages (manyfiles.1 and one manyfiles-COMMAND.1 per command) into DIR
    Man(ManArgs),
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// An existing directory to write the pages into
    #[arg(default_value = ".")]
    pub dir: PathBuf,
}

/// The completion script for `shell`, generated from these very definitions.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "manyfiles", &mut out);
    out
}

/// Man pages (roff) for the tool and each command into `dir`; returns the files written.
pub fn man_pages(dir: &std::path::Path) -> Result<Vec<PathBuf>> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(Error::bad("DIR", format!("{} is not a directory", dir.display()))),
        Err(e) => return Err(Error::bad("DIR", format!("{}: {e}", dir.display()))),
    }
    // Built once so subcommands carry their full names (`manyfiles-gen`) and the version.
    let mut cmd = <Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    cmd.build();
    let mut pages = vec![cmd.clone()];
    pages.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
    let mut written = Vec::new();
    for page in pages {
        let man = clap_mangen::Man::new(page);
        let path = dir.join(man.get_filename());
        let mut text = Vec::new();
        man.render(&mut text).map_err(|e| Error::failed(format!("man page: {e}")))?;
        manyfiles::fs::output::write_file(&path, &text)?;
        written.push(path);
    }
    Ok(written)
}

#[derive(Args, Debug)]
pub struct LadderArgs {
    /// Total bytes split across each rung's files
    #[arg(long, default_value = "64MiB", value_parser = parse_size)]
    pub total: u64,
    /// Smallest file count
    #[arg(long, default_value = "1", value_parser = parse_count)]
    pub from: u64,
    /// Largest file count
    #[arg(long, default_value = "65536", value_parser = parse_count)]
    pub to: u64,
    /// Multiply the file count by this from rung to rung
    #[arg(long, default_value = "4", value_parser = parse_count)]
    pub step: u64,
    /// Ops to time, comma separated (create, stat, list, read, scan, rescan, delete;
    /// reformat on --fs targets: unmount, mkfs, mount with the tree on it, beside delete)
    #[arg(long, default_value = "create,read,delete")]
    pub ops: String,
    #[command(flatten)]
    pub pair: PairArgs,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[command(flatten)]
    pub write: WriteArgs,
}

#[derive(Args, Debug)]
pub struct OpsArgs {
    #[command(flatten)]
    pub tree: TreeSizeArgs,
    /// Ops to time, comma separated, run in this order: create, stat, list, read, scan, rescan,
    /// delete, reformat (--fs targets: unmount, mkfs, mount with the tree on it)
    #[arg(long, default_value = "create,stat,list,read,delete")]
    pub ops: String,
    #[command(flatten)]
    pub pair: PairArgs,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[command(flatten)]
    pub write: WriteArgs,
}

#[derive(Args, Debug)]
pub struct BigfileArgs {
    /// Size of the file
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    pub size: u64,
    /// Bytes per write() call (at most 4 MiB)
    #[arg(long, default_value = "1MiB", value_parser = parse_size)]
    pub block: u64,
    /// No effect, kept for old command lines: the write phase always ends with a timed
    /// fsync (its durable time); `--until returned` shows the write loop alone
    #[arg(long)]
    pub fsync: bool,
    /// Write with O_DIRECT (block a multiple of 4 KiB)
    #[arg(long)]
    pub direct: bool,
    /// File content: zeros, random or compressible:RATIO
    #[arg(long, default_value = "random")]
    pub content: String,
    /// Seed of the content
    #[arg(long, default_value = "1")]
    pub seed: u64,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args, Debug)]
pub struct ClustersArgs {
    /// Cluster (block) sizes to format each --fs with
    #[arg(long, default_value = manyfiles::experiment::clusters::DEFAULT_CLUSTERS)]
    pub cluster: String,
    /// File sizes; cluster+1 is one byte more than each cluster size
    #[arg(long, default_value = manyfiles::experiment::clusters::DEFAULT_SIZES)]
    pub sizes: String,
    /// Portions per trial (each of --portion files)
    #[arg(long, default_value = "3", value_parser = parse_count)]
    pub portions: u64,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[command(flatten)]
    pub write: WriteArgs,
}

#[derive(Args, Debug)]
pub struct DirsizeArgs {
    /// Files to put in the one directory
    #[arg(long, default_value = "1000000", value_parser = parse_count)]
    pub max: u64,
    /// Size of every file
    #[arg(long, default_value = "0", value_parser = parse_size)]
    pub size: u64,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[command(flatten)]
    pub write: WriteArgs,
}

#[derive(Args, Debug)]
pub struct ScanArgs {
    /// Directory to scan (never written to)
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Index to write: sqlite:FILE (embedded) or postgres://USER@HOST[:PORT]/DB; without it, walk and statx only
    #[arg(long, value_name = "URL")]
    pub db: Option<String>,
    /// Also write the tree's shape (counts and histograms, no names) as JSON here
    #[arg(long, value_name = "FILE")]
    pub inventory: Option<PathBuf>,
    /// Walk threads, parallel across directories (default: available cores)
    #[arg(long)]
    pub threads: Option<usize>,
    /// Write the scan report (counts, diff, phase times, provenance) as JSON here
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct RunFileArgs {
    /// Experiment file: `command = "ladder"` plus the command's long flags as keys
    /// (fs = "ext4,xfs", to = 16384, runs = 5, keep = true, ...)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

#[derive(Args, Debug)]
pub struct GenArgs {
    /// Directory to write into: new, empty, or made by an earlier `manyfiles gen` and holding only what
    /// it wrote (its mark names the directory itself, so a copy is not one; anything else in it → refused)
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    #[command(flatten)]
    pub tree: TreeSizeArgs,
    /// Worker threads (default: available cores)
    #[arg(long)]
    pub threads: Option<usize>,
    /// No progress bar
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[command(flatten)]
    pub write: WriteArgs,
}

#[derive(Args, Debug)]
pub struct TreeSizeArgs {
    /// Number of files
    #[arg(long, default_value = "10000", value_parser = parse_count)]
    pub files: u64,
    /// File size: 4k (fixed), uniform:1k-64k, lognormal:16k,1.5, exp:32k or list:1k,4k,1M
    #[arg(long, default_value = "4k")]
    pub size: String,
    /// A tree shaped like an inventory (`scan PATH --inventory FILE`): same histograms, no names or bytes copied
    #[arg(long, value_name = "FILE", conflicts_with_all = ["files", "size", "tree"])]
    pub like: Option<PathBuf>,
    /// A preset tree shape: nextcloud-like (41,732 folders, 313,860 files, 3,075 MB)
    #[arg(long, value_name = "NAME", conflicts_with_all = ["files", "size"])]
    pub tree: Option<String>,
    /// Multiply the files and directories of --like or --tree by this
    #[arg(long, default_value = "1")]
    pub scale: f64,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Directory to work in: a private run directory is made inside it and removed afterwards
    /// (default: . unless --fs is given)
    #[arg(long)]
    pub target: Option<PathBuf>,
    /// Test file systems to format and run on (root): TYPE[:BLOCK][@ram|@disk[:DIR]|@dev:/dev/NAME],
    /// comma separated; TYPE is ext2, ext3, ext4, xfs, btrfs, ntfs, exfat or tmpfs; e.g. ext4:4k,xfs,ntfs:64k
    #[arg(long, value_name = "SPEC,...")]
    pub fs: Option<String>,
    /// Confirm formatting a real device named in --fs (...@dev:/dev/NAME): name it again here
    /// (repeat for several devices); everything on it is destroyed
    #[arg(long, value_name = "/dev/NAME")]
    pub destroy_device: Vec<PathBuf>,
    /// Image size for --fs (default: twice the largest tree, at least 512 MiB)
    #[arg(long, value_parser = parse_size)]
    pub fs_size: Option<u64>,
    /// Keep each --fs file system between trials instead of formatting it afresh
    #[arg(long)]
    pub reuse: bool,
    /// interleaved (run 1 on every tree and target, then run 2, ...) or sequential
    #[arg(long, default_value = "interleaved")]
    pub order: String,
    /// Caches before each phase: cold (default: read-side phases start with the trees'
    /// data evicted, and as root every cache dropped), warm (left as they are), drop
    /// (root: every cache dropped before every phase)
    #[arg(long, value_name = "cold|warm|drop", conflicts_with_all = ["cold", "drop_caches"])]
    pub cache: Option<String>,
    /// Which time tables, models and comparisons use for write phases: durable (until a
    /// syncfs/fsync of the target returned: the storage's cost) or returned (until the
    /// last close: what the application saw); both are in the JSON
    #[arg(long, value_name = "durable|returned", default_value = "durable")]
    pub until: String,
    /// Same as --cache drop
    #[arg(long, conflicts_with = "cold")]
    pub drop_caches: bool,
    /// Same as --cache cold (the default)
    #[arg(long)]
    pub cold: bool,
    /// Exactly N measured runs of every op on every tree (default: adaptive runs to
    /// --precision)
    #[arg(long, conflicts_with_all = ["precision", "min_runs", "max_runs", "max_time"])]
    pub runs: Option<u32>,
    /// Adaptive runs (the default): run each cell until the 95% interval of its median
    /// is within ±P% (judged from 6 undisturbed runs on)
    #[arg(long, value_name = "P%", default_value = "5%")]
    pub precision: String,
    /// Adaptive: runs every cell gets, whatever the budget
    #[arg(long, default_value = "3")]
    pub min_runs: u32,
    /// Adaptive: most runs of a cell (disturbed runs are replaced and not counted)
    #[arg(long, default_value = "30")]
    pub max_runs: u32,
    /// Adaptive: time budget of the whole experiment (90s, 3m, 1h); past each cell's
    /// minimum runs, no trial starts that would overrun it
    #[arg(long, value_name = "DURATION", default_value = "3m")]
    pub max_time: String,
    /// Synthetic times for tests of the statistics (cv=,slow=,disturbed=,seed=)
    #[arg(long, hide = true, value_name = "SPEC")]
    pub mock_timing: Option<String>,
    /// Unrecorded runs before the measured ones
    #[arg(long, default_value = "0")]
    pub warmup: u32,
    /// Worker threads, parallel across directories (default: available cores)
    #[arg(long)]
    pub threads: Option<usize>,
    /// Close a per-portion time every N files (and at least once a second)
    #[arg(long, default_value = "10000", value_parser = parse_count)]
    pub portion: u64,
    /// Write the results (versioned JSON) here, rewritten after every measurement
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write one row per measurement as CSV here
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Also write the summary and fitted costs as Markdown tables here
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Keep the run directory (trees are still deleted after each run; an interrupted or failed run leaves its tree there)
    #[arg(long)]
    pub keep: bool,
    /// Under MPI: every rank works in the same directories (rank 0's), each on its own files,
    /// to load directories from many clients at once (default: a subtree per rank)
    #[arg(long)]
    pub shared_dir: bool,
    /// No progress bar
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct ShapeArgs {
    /// All files in one directory
    #[arg(long, conflicts_with_all = ["files_per_dir", "fanout", "depth"])]
    pub flat: bool,
    /// Files per leaf directory
    #[arg(long, default_value = "1000", value_parser = parse_count)]
    pub files_per_dir: u64,
    /// Subdirectories per directory
    #[arg(long, default_value = "16", value_parser = parse_count)]
    pub fanout: u64,
    /// Fixed depth of leaf directories (files spread evenly over fanout^depth leaves)
    #[arg(long)]
    pub depth: Option<u32>,
    /// Length of every file name in bytes
    #[arg(long, default_value = "16")]
    pub name_len: usize,
    /// File content: zeros, random or compressible:RATIO
    #[arg(long, default_value = "random")]
    pub content: String,
    /// Seed: the same spec and seed give byte-identical trees
    #[arg(long, default_value = "1")]
    pub seed: u64,
}

#[derive(Args, Debug)]
pub struct WriteArgs {
    /// Bytes per write() call when creating files (at most 4 MiB)
    #[arg(long, default_value = "1MiB", value_parser = parse_size)]
    pub block_size: u64,
    /// When to fsync while creating: none, file (each file), dir (each directory), end (one syncfs)
    #[arg(long, default_value = "none")]
    pub fsync: String,
    /// Write with O_DIRECT (block size a multiple of 4 KiB)
    #[arg(long)]
    pub direct: bool,
}

fn threads(t: Option<usize>) -> Result<usize> {
    threads_or(t, cores())
}

/// The cores this process may use. Under an MPI launcher that did not bind the ranks to
/// cores (affinity still spans every online CPU), the host's cores are shared among the
/// ranks on it: each rank's default threads would otherwise oversubscribe them.
fn cores() -> usize {
    let usable = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    // SAFETY: sysconf only reads a system constant.
    let online = usize::try_from(unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }).unwrap_or(0);
    // Ranks on this host, as Open MPI and MPICH's Hydra tell each rank.
    let ranks_here = ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse::<usize>().ok())
        .unwrap_or(1);
    cores_per_rank(usable, online, ranks_here)
}

/// See [`cores`]: a rank bound to fewer cores than the host has keeps them.
fn cores_per_rank(usable: usize, online: usize, ranks_here: usize) -> usize {
    if usable >= online && ranks_here > 1 { (usable / ranks_here).max(1) } else { usable }
}

/// `--threads`, or `default` when not given.
fn threads_or(t: Option<usize>, default: usize) -> Result<usize> {
    match t {
        Some(0) => Err(Error::bad("--threads", "must be at least 1")),
        Some(n) if n > 1024 => Err(Error::bad("--threads", "must be at most 1024")),
        Some(n) => Ok(n),
        None => Ok(default),
    }
}

impl TreeSizeArgs {
    fn size(&self) -> Result<SizeDist> {
        SizeDist::parse(&self.size).map_err(|e| Error::bad("--size", e))
    }

    /// The tree: drawn from --like / --tree, or made from --files and --size with `shape`.
    fn spec(&self, shape: &ShapeArgs) -> Result<TreeSpec> {
        use manyfiles::tree::drawn;
        let (inv, flag) = match (&self.like, self.tree.as_deref()) {
            (Some(p), _) => (
                manyfiles::inventory::Inventory::load(p).map_err(|e| match e {
                    Error::BadInput { reason, .. } => Error::bad("--like", reason),
                    e => e,
                })?,
                "--like",
            ),
            (None, Some("nextcloud-like")) => (drawn::nextcloud_like(), "--tree"),
            (None, Some(t)) => return Err(Error::bad("--tree", format!("'{t}': known presets: nextcloud-like"))),
            (None, None) => {
                if self.scale != 1.0 {
                    return Err(Error::bad("--scale", "only makes sense with --like or --tree"));
                }
                return shape.spec(self.files, self.size()?);
            }
        };
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return Err(Error::bad("--scale", "must be a number above 0"));
        }
        let content = Content::parse(&shape.content).map_err(|e| Error::bad("--content", e))?;
        drawn::spec_like(&inv, self.scale, shape.seed, content).map_err(|e| Error::bad(flag, e))
    }
}

impl ShapeArgs {
    fn spec(&self, files: u64, size: SizeDist) -> Result<TreeSpec> {
        let layout = if self.flat {
            Layout::Flat
        } else {
            Layout::Nested { files_per_dir: self.files_per_dir, fanout: self.fanout, depth: self.depth }
        };
        let content = Content::parse(&self.content).map_err(|e| Error::bad("--content", e))?;
        let spec = TreeSpec { files, size, layout, name_len: self.name_len, content, seed: self.seed };
        spec.validate().map_err(|(flag, reason)| Error::bad(flag, reason))?;
        Ok(spec)
    }
}

impl WriteArgs {
    fn options(&self) -> Result<CreateOptions> {
        let fsync = FsyncMode::parse(&self.fsync).map_err(|e| Error::bad("--fsync", e))?;
        let bs = self.block_size;
        if bs == 0 || bs > POOL as u64 {
            return Err(Error::bad("--block-size", "must be between 1 byte and 4 MiB"));
        }
        if self.direct && bs % IoBuf::ALIGN as u64 != 0 {
            return Err(Error::bad("--block-size", "must be a multiple of 4 KiB with --direct"));
        }
        Ok(CreateOptions { block_size: bs as usize, fsync, direct: self.direct })
    }
}

impl RunArgs {
    /// --csv and --markdown, checked like --json.
    fn exports(&self) -> Result<Vec<Output>> {
        let mut v = Vec::new();
        for (p, f, flag) in [(&self.csv, Format::Csv, "--csv"), (&self.markdown, Format::Markdown, "--markdown")] {
            if let Some(p) = p {
                check_output(p, flag)?;
                v.push(Output { path: p.clone(), format: f });
            }
        }
        Ok(v)
    }
    fn cache_mode(&self) -> Result<CacheMode> {
        match &self.cache {
            Some(c) => CacheMode::parse(c),
            None if self.drop_caches => Ok(CacheMode::Drop),
            None => Ok(CacheMode::Cold),
        }
    }

    fn runs(&self, default: u32) -> Result<u32> {
        check_runs(self.runs.unwrap_or(default))
    }

    /// Adaptive runs unless `--runs N` was given.
    fn adaptive(&self) -> Result<Option<manyfiles::results::adaptive::Adaptive>> {
        if self.runs.is_some() {
            return Ok(None);
        }
        let p = self.precision.trim().trim_end_matches('%');
        let precision = match p.parse::<f64>() {
            Ok(v) if v > 0.0 && v < 100.0 => v / 100.0,
            _ => {
                return Err(Error::bad(
                    "--precision",
                    format!("'{}': expected a percentage such as 5%", self.precision),
                ));
            }
        };
        if self.min_runs == 0 || self.min_runs > 10_000 {
            return Err(Error::bad("--min-runs", "must be between 1 and 10000"));
        }
        if self.max_runs < self.min_runs || self.max_runs > 10_000 {
            return Err(Error::bad("--max-runs", "must be at least --min-runs and at most 10000"));
        }
        let max_time_s = parse_duration(&self.max_time).map_err(|e| Error::bad("--max-time", e))?;
        Ok(Some(manyfiles::results::adaptive::Adaptive {
            precision,
            min_runs: self.min_runs,
            max_runs: self.max_runs,
            max_time_s,
            budget_spent: false,
            spent_s: 0.0,
        }))
    }

    fn mock(&self) -> Result<Option<manyfiles::experiment::rounds::MockTiming>> {
        self.mock_timing
            .as_deref()
            .map(|m| manyfiles::experiment::rounds::MockTiming::parse(m).map_err(|e| Error::bad("--mock-timing", e)))
            .transpose()
    }

    /// --target and --fs together; `.` when neither is given.
    fn targets(&self) -> Result<Vec<TargetSpec>> {
        let mut targets = Vec::new();
        if let Some(t) = &self.target {
            targets.push(TargetSpec::Dir(t.clone()));
        }
        if let Some(f) = &self.fs {
            targets.extend(parse_fs_list(f).map_err(|e| Error::bad("--fs", e))?.into_iter().map(TargetSpec::Fs));
        } else if self.fs_size.is_some() || self.reuse {
            return Err(Error::bad(if self.reuse { "--reuse" } else { "--fs-size" }, "only makes sense with --fs"));
        }
        if targets.is_empty() {
            targets.push(TargetSpec::Dir(PathBuf::from(".")));
        }
        self.confirm_devices(&mut targets)?;
        Ok(targets)
    }

    /// Attach each --destroy-device to the `@dev:` spec naming the same device (the
    /// engine refuses a device spec without one, or with one naming another device).
    fn confirm_devices(&self, targets: &mut [TargetSpec]) -> Result<()> {
        use manyfiles::target::device::same_device;
        use manyfiles::target::fsspec::Backing;
        const FLAG: &str = "--destroy-device";
        let destroy = &self.destroy_device;
        let mut devs: Vec<&mut manyfiles::target::fsspec::FsSpec> = targets
            .iter_mut()
            .filter_map(|t| match t {
                TargetSpec::Fs(f) if f.device().is_some() => Some(f),
                _ => None,
            })
            .collect();
        if destroy.is_empty() {
            return Ok(());
        }
        if devs.is_empty() {
            return Err(Error::bad(
                FLAG,
                "only makes sense with a device in --fs (TYPE@dev:/dev/NAME); nothing here formats a device",
            ));
        }
        for d in destroy {
            let matching: Vec<usize> =
                (0..devs.len()).filter(|&i| devs[i].device().is_some_and(|p| same_device(p, d))).collect();
            // One device and one confirmation that do not match: let the engine say why.
            let chosen = if matching.is_empty() && devs.len() == 1 && destroy.len() == 1 { vec![0] } else { matching };
            if chosen.is_empty() {
                return Err(Error::bad(FLAG, format!("{} names none of the @dev: devices in --fs", d.display())));
            }
            for i in chosen {
                if let Backing::Dev { confirmed_by, .. } = &mut devs[i].backing {
                    *confirmed_by = Some(d.clone());
                }
            }
        }
        Ok(())
    }
    fn experiment(
        &self,
        name: &str,
        trees: Vec<TreeSpec>,
        ops: &str,
        create: CreateOptions,
        command_line: Vec<String>,
    ) -> Result<TreeExperiment> {
        let runs = self.runs(3)?;
        if self.portion == 0 {
            return Err(Error::bad("--portion", "must be at least 1"));
        }
        if let Some(j) = &self.json {
            check_output(j, "--json")?;
        }
        let targets = self.targets()?;
        Ok(TreeExperiment {
            name: name.into(),
            targets,
            fs_size: self.fs_size,
            reuse: self.reuse,
            order: Order::parse(&self.order)?,
            measure_allocation: false,
            caches: self.cache_mode()?,
            until: Until::parse(&self.until)?,
            trees,
            ops: parse_ops(ops)?,
            create,
            runs,
            adaptive: self.adaptive()?,
            mock: self.mock()?,
            warmup: self.warmup,
            threads: threads(self.threads)?,
            portion_files: self.portion,
            keep: self.keep,
            shared_dir: self.shared_dir,
            json: self.json.clone(),
            exports: self.exports()?,
            quiet: self.quiet,
            command_line,
            commands: Vec::new(),
        })
    }
}

/// `90`, `90s`, `3m`, `1.5h` → seconds (positive).
fn parse_duration(s: &str) -> std::result::Result<f64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 'h')) => (&t[..i], 3600.0),
        _ => (t, 1.0),
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v * mult),
        _ => Err(format!("'{s}': expected a duration such as 90s, 3m or 1h")),
    }
}

fn check_runs(n: u32) -> Result<u32> {
    match n {
        0 => Err(Error::bad("--runs", "must be at least 1")),
        n if n > 10_000 => Err(Error::bad("--runs", "must be at most 10000")),
        n => Ok(n),
    }
}

/// An output must not be a directory, and a new file's directory must exist (devices,
/// fifos, sockets, symlinks and `-` are fine: see `fs::output::write_output`).
fn check_output(path: &std::path::Path, flag: &str) -> Result<()> {
    manyfiles::fs::output::check_path(path).map_err(|reason| Error::bad(flag, format!("{}: {reason}", path.display())))
}

/// A ladder's trees; the shape is checked with the largest rung's file count (name
/// length must fit it).
fn ladder_trees(ladder: &LadderSpec, shape: &ShapeArgs) -> Result<Vec<TreeSpec>> {
    let spec = shape.spec(ladder.to.max(1), SizeDist::Fixed { bytes: 0 }).map_err(|e| match e {
        Error::BadInput { flag, reason } if flag == "--files" => Error::bad("--to", reason),
        e => e,
    })?;
    if ladder.total < ladder.to {
        return Err(Error::bad(
            "--total",
            format!(
                "{} bytes cannot be split into {} files of at least 1 byte (use ops --size 0 for empty files)",
                ladder.total, ladder.to
            ),
        ));
    }
    ladder.trees(&spec)
}

pub fn ladder_config(a: &LadderArgs, command_line: Vec<String>) -> Result<TreeExperiment> {
    let ladder = LadderSpec { total: a.total, from: a.from, to: a.to, step: a.step };
    let trees = ladder_trees(&ladder, &a.shape)?;
    let cfg = a.run.experiment("ladder", trees, &a.ops, a.write.options()?, command_line)?;
    a.pair.apply(cfg)
}

pub fn ops_config(a: &OpsArgs, command_line: Vec<String>) -> Result<TreeExperiment> {
    let spec = a.tree.spec(&a.shape)?;
    let cfg = a.run.experiment("ops", vec![spec], &a.ops, a.write.options()?, command_line)?;
    a.pair.apply(cfg)
}

pub fn gen_config(a: &GenArgs) -> Result<GenConfig> {
    Ok(GenConfig {
        dir: a.dir.clone(),
        spec: a.tree.spec(&a.shape)?,
        create: a.write.options()?,
        threads: threads(a.threads)?,
        quiet: a.quiet,
    })
}

pub fn clusters_config(a: &ClustersArgs, command_line: Vec<String>) -> Result<TreeExperiment> {
    use manyfiles::experiment::clusters;
    let Some(fs) = &a.run.fs else {
        return Err(Error::bad("--fs", "clusters formats test file systems: give --fs, e.g. --fs ntfs"));
    };
    if a.run.target.is_some() {
        return Err(Error::bad("--target", "clusters formats each cluster size afresh: use --fs, not --target"));
    }
    let base = parse_fs_list(fs).map_err(|e| Error::bad("--fs", e))?;
    let cl = clusters::parse_clusters(&a.cluster).map_err(|e| Error::bad("--cluster", e))?;
    let sizes = clusters::parse_sizes(&a.sizes).map_err(|e| Error::bad("--sizes", e))?;
    if a.portions == 0 {
        return Err(Error::bad("--portions", "must be at least 1"));
    }
    let files = a.run.portion.saturating_mul(a.portions);
    let shape = a.shape.spec(files.max(1), SizeDist::Fixed { bytes: 0 })?;
    let trees = clusters::trees(&sizes, &cl, files, &shape);
    let mut targets = clusters::targets(&base, &cl).map_err(|e| Error::bad("--cluster", e))?;
    a.run.confirm_devices(&mut targets)?;
    let mut cfg = a.run.experiment("clusters", trees, "create", a.write.options()?, command_line)?;
    cfg.targets = targets;
    cfg.measure_allocation = true;
    Ok(cfg)
}

pub fn dirsize_config(a: &DirsizeArgs, command_line: Vec<String>) -> Result<TreeExperiment> {
    if a.max == 0 {
        return Err(Error::bad("--max", "must be at least 1"));
    }
    let shape = a.shape.spec(a.max, SizeDist::Fixed { bytes: a.size }).map_err(|e| match e {
        Error::BadInput { flag, reason } if flag == "--files" => Error::bad("--max", reason),
        e => e,
    })?;
    let tree = manyfiles::experiment::dirsize::tree(a.max, a.size, &shape);
    a.run.experiment("dirsize", vec![tree], "create", a.write.options()?, command_line)
}

/// clap's error as one line: its first line (which names the flag and the reason), with
/// the list of a "required arguments were not provided" error joined in.
pub fn clap_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("bad arguments").trim_start_matches("error: ").to_string();
    if e.kind() == clap::error::ErrorKind::MissingRequiredArgument {
        let listed: Vec<&str> = lines.take_while(|l| !l.starts_with("Usage:")).collect();
        let first = first.trim_end_matches(':');
        return if listed.is_empty() {
            format!("{first}: {}", required_hint(e))
        } else {
            format!("{first}: {}", listed.join(", "))
        };
    }
    first
}

/// What a command with an empty "required arguments" list (clap leaves out arguments
/// that are required unless another is present) needs.
fn required_hint(e: &clap::Error) -> String {
    let usage = match e.get(clap::error::ContextKind::Usage) {
        Some(u) => u.to_string(),
        None => String::new(),
    };
    if usage.contains("predict") {
        "--tree PATH (or --inventory FILE)".into()
    } else if usage.contains("plan") {
        "PATH (or --inventory FILE)".into()
    } else {
        "see the usage".into()
    }
}

/// `--min-runs` → `min_runs` (the TOML key a flag stands for).
pub fn flag_key(flag: &str) -> String {
    flag.trim_start_matches("--").replace('-', "_")
}

/// The first `--flag VALUE` whose VALUE is negative (`-1`, `-5%`, `-1m`, `-.5`): clap
/// would take it for a flag and answer "unexpected argument '-1'" without naming the
/// flag. Only flags that take a value count; nothing after `--`.
pub fn negative_value(args: &[String]) -> Option<(String, String)> {
    use clap::CommandFactory;
    let root = Cli::command();
    let sub_name = args.iter().skip(1).find(|a| !a.starts_with('-'))?;
    let sub = root.find_subcommand(sub_name)?;
    let takes_value =
        |long: &str| sub.get_arguments().any(|a| a.get_long() == Some(long) && a.get_action().takes_values());
    for w in args.windows(2) {
        if w[0] == "--" {
            break;
        }
        let Some(long) = w[0].strip_prefix("--") else { continue };
        if long.contains('=') || !takes_value(long) {
            continue;
        }
        let v = &w[1];
        if v.len() > 1 && v.starts_with('-') && v[1..].starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            return Some((w[0].clone(), v.clone()));
        }
    }
    None
}

/// Turn a TOML experiment file into the command line it stands for, so a file and
/// the flags mean exactly the same thing (one parser, one validation).
pub fn toml_args(path: &std::path::Path) -> Result<Vec<String>> {
    let bad = |r: String| Error::bad("FILE", format!("{}: {r}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| bad(e.message().to_string()))?;
    let mut args = vec!["manyfiles".to_string()];
    let command = match table.get("command") {
        Some(toml::Value::String(c)) if ["ladder", "ops", "bigfile", "clusters", "dirsize"].contains(&c.as_str()) => {
            c.clone()
        }
        Some(v) => return Err(bad(format!("command = {v} is not one of ladder, ops, bigfile, clusters, dirsize"))),
        None => return Err(bad("no `command = \"...\"` key (ladder, ops, bigfile, clusters or dirsize)".into())),
    };
    args.push(command.clone());
    let sub = {
        use clap::CommandFactory;
        Cli::command().find_subcommand(&command).cloned()
    };
    for (k, v) in &table {
        if k == "command" {
            continue;
        }
        let flag = format!("--{}", k.replace('_', "-"));
        let arg = sub.as_ref().and_then(|c| c.get_arguments().find(|a| a.get_long() == Some(&flag[2..])).cloned());
        let switch = arg.as_ref().is_some_and(|a| !a.get_action().takes_values());
        if switch && !matches!(v, toml::Value::Boolean(_)) {
            return Err(bad(format!("key {k}: must be true or false, not {v}")));
        }
        match v {
            toml::Value::Boolean(true) => args.push(flag),
            toml::Value::Boolean(false) => {}
            toml::Value::String(s) => args.extend([flag, s.clone()]),
            toml::Value::Integer(i) => args.extend([flag, i.to_string()]),
            toml::Value::Float(f) => args.extend([flag, f.to_string()]),
            toml::Value::Array(items) => {
                let parts: Vec<String> = items
                    .iter()
                    .map(|i| match i {
                        toml::Value::String(s) => Ok(s.clone()),
                        toml::Value::Integer(n) => Ok(n.to_string()),
                        other => Err(bad(format!("key {k}: list item {other} is not a string or number"))),
                    })
                    .collect::<Result<_>>()?;
                if k == "cmd" || k == "destroy_device" {
                    // Repeatable flag (templates may hold commas): one --cmd per item.
                    args.extend(parts.into_iter().flat_map(|p| [flag.clone(), p]));
                } else {
                    args.extend([flag, parts.join(",")]);
                }
            }
            other => return Err(bad(format!("key {k}: {other} is not a string, number, boolean or list"))),
        }
    }
    Ok(args)
}

pub fn bigfile_config(
    a: &BigfileArgs,
    command_line: Vec<String>,
) -> Result<manyfiles::experiment::bigfile::BigfileConfig> {
    let r = &a.run;
    let drop_caches = r.cache_mode()? == CacheMode::Drop;
    let until = Until::parse(&r.until)?;
    if let Some(j) = &r.json {
        check_output(j, "--json")?;
    }
    if a.block > usize::MAX as u64 {
        return Err(Error::bad("--block", "too large"));
    }
    Ok(manyfiles::experiment::bigfile::BigfileConfig {
        targets: r.targets()?,
        fs_size: r.fs_size,
        reuse: r.reuse,
        order: Order::parse(&r.order)?,
        size: a.size,
        block: a.block as usize,
        fsync: a.fsync,
        direct: a.direct,
        content: Content::parse(&a.content).map_err(|e| Error::bad("--content", e))?,
        seed: a.seed,
        runs: r.runs(10)?,
        adaptive: r.adaptive()?,
        mock: r.mock()?,
        warmup: r.warmup,
        keep: r.keep,
        json: r.json.clone(),
        exports: r.exports()?,
        quiet: r.quiet,
        command_line,
        drop_caches,
        until,
    })
}

#[derive(Args, Debug)]
pub struct CopyArgs {
    /// Source directory
    #[arg(value_name = "SRC")]
    pub src: PathBuf,
    /// Destination directory: new or empty
    #[arg(value_name = "DST")]
    pub dst: PathBuf,
    /// Try a reflink (shared extents) first for every file
    #[arg(long)]
    pub reflink: bool,
    /// Compare DST with SRC afterwards (contents, modes, mtimes)
    #[arg(long)]
    pub verify: bool,
    #[command(flatten)]
    pub common: CopyCommonArgs,
}

#[derive(Args, Debug)]
pub struct RmArgs {
    /// Files or directories to remove (a symlink is removed itself, never followed)
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Also remove below mount points inside the trees (default: leave them, and report them)
    #[arg(long)]
    pub cross_mounts: bool,
    /// Worker threads, parallel across directories (default: available cores)
    #[arg(long)]
    pub threads: Option<usize>,
    /// No progress line
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Write the summary as JSON here (`-`: standard output)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

pub fn rm_config(a: &RmArgs) -> Result<(manyfiles::engine::rm::Options, Option<PathBuf>)> {
    if let Some(j) = &a.json {
        check_output(j, "--json")?;
    }
    let o = manyfiles::engine::rm::Options {
        paths: a.paths.clone(),
        threads: threads(a.threads)?,
        cross_mounts: a.cross_mounts,
        quiet: a.quiet,
    };
    Ok((o, a.json.clone()))
}

#[derive(Args, Debug)]
pub struct SyncArgs {
    /// Source directory
    #[arg(value_name = "SRC")]
    pub src: PathBuf,
    /// Destination directory (made if missing)
    #[arg(value_name = "DST")]
    pub dst: PathBuf,
    /// Decide by content instead of size + mtime
    #[arg(long)]
    pub checksum: bool,
    /// Delete what DST has and SRC has not
    #[arg(long)]
    pub delete: bool,
    /// Compare only: write and delete nothing, report what would change
    #[arg(long, short = 'n')]
    pub dry_run: bool,
    #[command(flatten)]
    pub common: CopyCommonArgs,
}

#[derive(Args, Debug)]
pub struct CopyCommonArgs {
    /// Worker threads, parallel across directories (default: twice the available cores;
    /// for sync --dry-run, the available cores)
    #[arg(long)]
    pub threads: Option<usize>,
    /// Write the summary as JSON here
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress on stderr
    #[arg(long, short)]
    pub quiet: bool,
}

/// Options for `copy` / `sync`, and where the JSON summary goes. `writes`: false for
/// `sync --dry-run`, which only walks.
pub fn copy_config(
    mode: manyfiles::engine::copy::Mode,
    src: &std::path::Path,
    dst: &std::path::Path,
    c: &CopyCommonArgs,
    writes: bool,
) -> Result<(manyfiles::engine::copy::Options, Option<PathBuf>)> {
    if let Some(j) = &c.json {
        check_output(j, "--json")?;
    }
    // A job that copies defaults to two threads a core: a cold source file's read blocks
    // its thread on the device while the other thread of that core goes on (100,000 × 1 KiB
    // cold on a RAM-backed ext4, 2 cores: 4 threads 1.20× faster than 2, 8 no faster than
    // 4; BENCHMARKS.md). A walk (dry run) gains nothing from more threads than cores.
    let default = if writes { 2 * cores() } else { cores() };
    let mut o = manyfiles::engine::copy::Options::new(mode, src, dst, threads_or(c.threads, default)?);
    o.quiet = c.quiet;
    Ok((o, c.json.clone()))
}

/// Copy ops' extras for ladder and ops: external tools and content verification.
#[derive(Args, Debug)]
pub struct PairArgs {
    /// Time an external tool as op cmd:NAME on the same trees, e.g. --cmd cp='cp -a {src}/. {dst}'
    /// (repeatable); its destination is checked against the source afterwards
    #[arg(long = "cmd", value_name = "NAME=TEMPLATE")]
    pub cmds: Vec<String>,
    /// Compare contents too when checking an external tool's destination
    #[arg(long)]
    pub verify: bool,
}

impl PairArgs {
    fn apply(&self, mut cfg: TreeExperiment) -> Result<TreeExperiment> {
        use manyfiles::experiment::external::ExternalCmd;
        for c in &self.cmds {
            let mut cmd = ExternalCmd::parse(c).map_err(|e| Error::bad("--cmd", e))?;
            cmd.verify = self.verify;
            cfg.commands.push(cmd);
        }
        manyfiles::experiment::add_commands(&mut cfg.ops, &cfg.commands)?;
        Ok(cfg)
    }
}

pub fn scan_config(a: &ScanArgs, command_line: Vec<String>) -> Result<manyfiles::engine::scan::ScanConfig> {
    let db =
        a.db.as_deref().map(manyfiles::engine::scan::DbUrl::parse).transpose().map_err(|e| Error::bad("--db", e))?;
    for (p, flag) in [(&a.inventory, "--inventory"), (&a.json, "--json")] {
        if let Some(p) = p {
            check_output(p, flag)?;
        }
    }
    Ok(manyfiles::engine::scan::ScanConfig {
        root: a.path.clone(),
        db,
        inventory: a.inventory.clone(),
        threads: threads(a.threads)?,
        json: a.json.clone(),
        command_line,
    })
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Result files (JSON written by --json); several are combined into one report
    #[arg(value_name = "RESULTS.json", required = true)]
    pub files: Vec<PathBuf>,
    /// Write one self-contained HTML file (charts as inline SVG, no scripts)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write every chart as a PNG into this directory (made if missing)
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
    /// Write one row per measurement as CSV
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the summary and fitted costs as Markdown
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write the result set again as JSON, summaries and models derived by this version
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Baseline result file
    #[arg(value_name = "A.json")]
    pub a: PathBuf,
    /// Result file compared with the baseline
    #[arg(value_name = "B.json")]
    pub b: PathBuf,
    /// Exit with code 1 when B is significantly slower than A by more than PCT percent
    #[arg(long, value_name = "PCT")]
    pub fail_if_slower: Option<f64>,
}

/// Read a result file; a missing or foreign file is bad input naming `flag`. A file
/// whose models were fitted by an older version (every run a point, no directory-size
/// term), or that has no model, has its summaries, models and detections derived again
/// from its raw measurements (models in a current file are kept as written).
pub fn read_results(path: &std::path::Path, flag: &str) -> Result<manyfiles::results::ResultSet> {
    let mut rs = manyfiles::report::json::read(path).map_err(|e| Error::bad(flag, e))?;
    if rs.models.is_empty() || rs.models.iter().any(|m| m.model.interval_method != "cells") {
        rs.derive();
    }
    Ok(rs)
}

pub fn report_config(a: &ReportArgs) -> Result<manyfiles::report::ReportConfig> {
    if a.html.is_none() && a.png.is_none() && a.csv.is_none() && a.markdown.is_none() && a.json.is_none() {
        return Err(Error::bad(
            "--html",
            "say what to write: --html FILE, --png DIR, --csv FILE, --markdown FILE or --json FILE",
        ));
    }
    let mut exports = Vec::new();
    for (p, f, flag) in [
        (&a.csv, Format::Csv, "--csv"),
        (&a.markdown, Format::Markdown, "--markdown"),
        (&a.json, Format::Json, "--json"),
    ] {
        if let Some(p) = p {
            check_output(p, flag)?;
            exports.push(Output { path: p.clone(), format: f });
        }
    }
    if let Some(h) = &a.html {
        check_output(h, "--html")?;
    }
    if let Some(d) = &a.png {
        if d.exists() && !d.is_dir() {
            return Err(Error::bad("--png", format!("{} is not a directory", d.display())));
        }
        if !d.exists() {
            check_output(d, "--png")?;
        }
    }
    let sets = a.files.iter().map(|f| read_results(f, "RESULTS.json")).collect::<Result<Vec<_>>>()?;
    Ok(manyfiles::report::ReportConfig {
        files: a.files.clone(),
        sets,
        html: a.html.clone(),
        png: a.png.clone(),
        exports,
    })
}

pub fn compare_config(a: &CompareArgs) -> Result<manyfiles::report::CompareConfig> {
    if let Some(p) = a.fail_if_slower {
        if !(p.is_finite() && p >= 0.0) {
            return Err(Error::bad("--fail-if-slower", "must be a percentage of 0 or more"));
        }
    }
    Ok(manyfiles::report::CompareConfig {
        a_name: a.a.display().to_string(),
        b_name: a.b.display().to_string(),
        a: read_results(&a.a, "A.json")?,
        b: read_results(&a.b, "B.json")?,
        fail_if_slower_pct: a.fail_if_slower,
    })
}

#[derive(Args, Debug)]
pub struct PredictArgs {
    /// Result file with fitted models (e.g. from `manyfiles ladder --json`)
    #[arg(long, value_name = "RESULTS.json")]
    pub model: PathBuf,
    /// The tree to predict for (walked, nothing is read but names and sizes)
    #[arg(long, value_name = "PATH", required_unless_present = "inventory", conflicts_with = "inventory")]
    pub tree: Option<PathBuf>,
    /// A saved inventory of the tree instead of walking it
    #[arg(long, value_name = "FILE")]
    pub inventory: Option<PathBuf>,
    /// Sync interval (e.g. 15m, 1h): prints the recovery point of sync ops
    #[arg(long, value_name = "DUR")]
    pub interval: Option<String>,
    /// Also write the predictions as JSON here
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Threads for walking --tree (default: available cores)
    #[arg(long)]
    pub threads: Option<usize>,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// The tree to plan for (walked: every file's size)
    #[arg(value_name = "PATH", required_unless_present = "inventory", conflicts_with = "inventory")]
    pub path: Option<PathBuf>,
    /// A saved inventory instead of PATH (exact for 512 B … 2 MiB, powers of two)
    #[arg(long, value_name = "FILE")]
    pub inventory: Option<PathBuf>,
    /// Cluster sizes to compare
    #[arg(long, default_value = manyfiles::experiment::clusters::DEFAULT_CLUSTERS)]
    pub cluster: String,
    /// Result file of a clusters experiment: predicted write time per cluster size
    #[arg(long, value_name = "RESULTS.json")]
    pub model: Option<PathBuf>,
    /// Also write the plan as JSON here
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Threads for walking PATH (default: available cores)
    #[arg(long)]
    pub threads: Option<usize>,
}

fn tree_input(
    path: &Option<PathBuf>,
    inventory: &Option<PathBuf>,
    path_flag: &str,
) -> Result<manyfiles::report::TreeInput> {
    use manyfiles::report::TreeInput;
    match (path, inventory) {
        (_, Some(i)) => Ok(TreeInput::Inventory(Box::new(manyfiles::inventory::Inventory::load(i)?))),
        (Some(p), None) if p.is_dir() => Ok(TreeInput::Path(p.clone())),
        (Some(p), None) => Err(Error::bad(path_flag, format!("{} is not a directory", p.display()))),
        (None, None) => Err(Error::bad(path_flag, "give the tree (or --inventory FILE)")),
    }
}

pub fn predict_config(a: &PredictArgs) -> Result<manyfiles::report::PredictConfig> {
    let model = read_results(&a.model, "--model")?;
    if model.models.is_empty() {
        return Err(Error::bad(
            "--model",
            format!("{} holds no fitted model (fitting needs at least 3 tree shapes: run a ladder)", a.model.display()),
        ));
    }
    let interval_s = match &a.interval {
        Some(s) => {
            Some(humantime::parse_duration(s).map_err(|e| Error::bad("--interval", format!("{s}: {e}")))?.as_secs_f64())
        }
        None => None,
    };
    if let Some(j) = &a.json {
        check_output(j, "--json")?;
    }
    Ok(manyfiles::report::PredictConfig {
        model_name: a.model.display().to_string(),
        model,
        tree: tree_input(&a.tree, &a.inventory, "--tree")?,
        interval_s,
        json: a.json.clone(),
        threads: threads(a.threads)?,
    })
}

pub fn plan_config(a: &PlanArgs) -> Result<manyfiles::report::PlanConfig> {
    use manyfiles::report::TreeInput;
    let clusters =
        manyfiles::experiment::clusters::parse_clusters(&a.cluster).map_err(|e| Error::bad("--cluster", e))?;
    if let Some(c) = clusters.iter().find(|c| **c == 0) {
        return Err(Error::bad("--cluster", format!("{c}: a cluster holds at least 1 byte")));
    }
    let model = match &a.model {
        Some(m) => Some((m.display().to_string(), read_results(m, "--model")?)),
        None => None,
    };
    if let Some((name, rs)) = &model {
        let usable = rs.models.iter().any(|m| {
            m.op == "create" && rs.targets.iter().any(|t| t.id == m.target && clusters.contains(&t.block_size))
        });
        if !usable {
            return Err(Error::bad(
                "--model",
                format!(
                    "{name} has no create model for a target with any of these cluster sizes (use the results of `manyfiles clusters`)"
                ),
            ));
        }
    }
    if let Some(j) = &a.json {
        check_output(j, "--json")?;
    }
    let tree = tree_input(&a.path, &a.inventory, "PATH")?;
    if let TreeInput::Inventory(inv) = &tree {
        if let Some(c) = clusters.iter().find(|c| inv.per_cluster_allocated(**c).is_none()) {
            return Err(Error::bad(
                "--cluster",
                format!(
                    "the inventory holds exact allocation for powers of two from 512 B to 2 MiB only, not {c} bytes: give PATH to walk the tree"
                ),
            ));
        }
    }
    Ok(manyfiles::report::PlanConfig { tree, clusters, model, json: a.json.clone(), threads: threads(a.threads)? })
}

#[derive(Args, Debug)]
pub struct PackArgs {
    /// A real directory to use as the tree (only read; default: generated trees)
    #[arg(value_name = "PATH", conflicts_with_all = ["files", "size", "to", "from", "step", "total"])]
    pub path: Option<PathBuf>,
    /// One generated tree of this many files (default: a ladder, see --to)
    #[arg(long, value_parser = parse_count, conflicts_with_all = ["to", "from", "step", "total"])]
    pub files: Option<u64>,
    /// File size of the --files tree: 4k (fixed), uniform:1k-64k, lognormal:16k,1.5, exp:32k or list:1k,4k,1M
    #[arg(long, default_value = "4k", requires = "files")]
    pub size: String,
    /// Ladder: largest file count (rungs --from, ×--step, … up to this; each holds --total bytes)
    #[arg(long, value_parser = parse_count)]
    pub to: Option<u64>,
    /// Ladder: smallest file count
    #[arg(long, default_value = "1", value_parser = parse_count)]
    pub from: u64,
    /// Ladder: multiply the file count by this from rung to rung
    #[arg(long, default_value = "4", value_parser = parse_count)]
    pub step: u64,
    /// Ladder: bytes split across each rung's files
    #[arg(long, default_value = "64MiB", value_parser = parse_size)]
    pub total: u64,
    /// Containers, comma separated: tar, tar.zst, squashfs, erofs, ext4 (default: every one
    /// whose tools are installed; named ones must be)
    #[arg(long, value_name = "NAME,...")]
    pub containers: Option<String>,
    /// At the destination: unpack, mount (read every file of the mounted container), or both
    #[arg(long, default_value = "unpack,mount")]
    pub access: String,
    /// How containers are mounted: kernel (root), fuse (squashfuse, erofsfuse, fuse2fs) or auto
    #[arg(long, default_value = "auto")]
    pub mount_with: String,
    /// k in "pack once, copy k times": totals for one copy and for k copies
    #[arg(long, default_value = "10")]
    pub copies: u32,
    /// Source directory (a run directory is made inside; default .)
    #[arg(long, conflicts_with = "src_fs")]
    pub src_target: Option<PathBuf>,
    /// Source test file system (root): TYPE[:BLOCK][@ram|@disk[:DIR]], e.g. tmpfs or ext4@ram
    #[arg(long, value_name = "SPEC")]
    pub src_fs: Option<String>,
    /// Destination directory (default: the source target holds both ends)
    #[arg(long, conflicts_with = "dst_fs")]
    pub dst_target: Option<PathBuf>,
    /// Destination test file system (root), e.g. ext4@disk; a file system of its own even
    /// when the spec equals --src-fs
    #[arg(long, value_name = "SPEC")]
    pub dst_fs: Option<String>,
    /// Image size of --src-fs / --dst-fs (default: from the tree, at least 512 MiB)
    #[arg(long, value_parser = parse_size)]
    pub fs_size: Option<u64>,
    /// Measured runs of every step on every tree
    #[arg(long, default_value = "3")]
    pub runs: u32,
    /// Unrecorded runs before the measured ones
    #[arg(long, default_value = "0")]
    pub warmup: u32,
    /// Worker threads (default: available cores)
    #[arg(long)]
    pub threads: Option<usize>,
    /// Caches before each step: cold (default: the files the step reads evicted, and as
    /// root every cache dropped), warm (left as they are), drop (root: every cache
    /// dropped before every step)
    #[arg(long, value_name = "cold|warm|drop", default_value = "cold")]
    pub cache: String,
    /// Which time the tables use: durable (each step that writes ends with a syncfs of
    /// the file system it wrote to) or returned; both are in the JSON
    #[arg(long, value_name = "durable|returned", default_value = "durable")]
    pub until: String,
    /// Write the results (versioned JSON) here, rewritten after every measurement
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress bar
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// One end of `pack`: a directory, a test file system, or (None) the default.
fn pack_target(dir: &Option<PathBuf>, fs: &Option<String>, flag: &str) -> Result<Option<TargetSpec>> {
    if let Some(f) = fs {
        let mut v = parse_fs_list(f).map_err(|e| Error::bad(flag, e))?;
        if v.len() != 1 {
            return Err(Error::bad(flag, "give one file system"));
        }
        return Ok(Some(TargetSpec::Fs(v.remove(0))));
    }
    Ok(dir.clone().map(TargetSpec::Dir))
}

pub fn pack_config(a: &PackArgs, command_line: Vec<String>) -> Result<manyfiles::experiment::pack::PackExperiment> {
    use manyfiles::experiment::pack::{PackExperiment, PackSource};
    use manyfiles::pack::MountWith;
    let source = if let Some(p) = &a.path {
        PackSource::Path(p.clone())
    } else if let Some(files) = a.files {
        let size = SizeDist::parse(&a.size).map_err(|e| Error::bad("--size", e))?;
        PackSource::Trees(vec![a.shape.spec(files, size)?])
    } else {
        let ladder = LadderSpec { total: a.total, from: a.from, to: a.to.unwrap_or(16_384), step: a.step };
        PackSource::Trees(ladder_trees(&ladder, &a.shape)?)
    };
    let src = pack_target(&a.src_target, &a.src_fs, "--src-fs")?;
    let dst = pack_target(&a.dst_target, &a.dst_fs, "--dst-fs")?;
    if a.fs_size.is_some() && a.src_fs.is_none() && a.dst_fs.is_none() {
        return Err(Error::bad("--fs-size", "only makes sense with --src-fs or --dst-fs"));
    }
    let src = src.unwrap_or_else(|| TargetSpec::Dir(PathBuf::from(".")));
    let (mut unpack, mut mount) = (false, false);
    for w in a.access.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match w {
            "unpack" => unpack = true,
            "mount" => mount = true,
            _ => return Err(Error::bad("--access", format!("'{w}': expected unpack, mount or both"))),
        }
    }
    let mount_with = match a.mount_with.as_str() {
        "auto" => MountWith::auto(),
        "kernel" => MountWith::Kernel,
        "fuse" => MountWith::Fuse,
        o => return Err(Error::bad("--mount-with", format!("'{o}': expected kernel, fuse or auto"))),
    };
    let (containers, named) = match &a.containers {
        Some(c) => (c.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(), true),
        None => (manyfiles::pack::NAMES.iter().map(|s| s.to_string()).collect(), false),
    };
    if let Some(j) = &a.json {
        check_output(j, "--json")?;
    }
    let runs = check_runs(a.runs)?;
    Ok(PackExperiment {
        source,
        src,
        dst,
        fs_size: a.fs_size,
        containers,
        named,
        unpack,
        mount,
        mount_with,
        copies: a.copies,
        runs,
        warmup: a.warmup,
        threads: threads(a.threads)?,
        cache: CacheMode::parse(&a.cache)?,
        until: Until::parse(&a.until)?,
        create: a.write.options()?,
        json: a.json.clone(),
        quiet: a.quiet,
        command_line,
    })
}

#[cfg(test)]
mod tests {
    use super::cores_per_rank;

    #[test]
    fn ranks_on_one_host_share_its_cores_unless_bound() {
        assert_eq!(cores_per_rank(2, 2, 1), 2, "no launcher: every core");
        assert_eq!(cores_per_rank(16, 16, 4), 4, "4 unbound ranks share 16 cores");
        assert_eq!(cores_per_rank(2, 2, 3), 1, "more ranks than cores: one thread each");
        assert_eq!(cores_per_rank(1, 16, 4), 1, "bound to one core by the launcher: that core");
        assert_eq!(cores_per_rank(8, 16, 2), 8, "bound to a socket: its cores");
    }
}
