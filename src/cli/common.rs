//! Argument groups shared by several commands (where and how often to run, the tree's
//! size and shape, how files are written) and the checks every command uses: thread
//! counts, run counts, durations, output paths.

use clap::Args;
use manyfiles::error::{Error, Result};
use manyfiles::experiment::{Order, TargetSpec, TreeExperiment};
use manyfiles::ops::parse_ops;
use manyfiles::ops::{CreateOptions, FsyncMode, IoBuf};
use manyfiles::report::export::{Format, Output};
use manyfiles::results::Until;
use manyfiles::storage::cache::CacheMode;
use manyfiles::storage::fsspec::parse_list as parse_fs_list;
use manyfiles::tree::content::POOL;
use manyfiles::tree::{Content, Layout, SizeDist, TreeSpec};
use manyfiles::units::{parse_count, parse_size};
use std::path::PathBuf;

/// A string flag whose values shells complete (`--cache` → cold, warm, drop) while the
/// command's own parser still judges the value (its one-line message, comma lists and
/// forms such as `ext4:4k@disk` stay as they were). Help text lists the values itself.
#[derive(Clone, Debug)]
pub struct Hint(pub &'static [&'static str]);

impl clap::builder::TypedValueParser for Hint {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<String, clap::Error> {
        value
            .to_str()
            .map(String::from)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidUtf8).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(self.0.iter().map(|v| clap::builder::PossibleValue::new(*v))))
    }
}

/// What `--fs`, `--src-fs` and `--dst-fs` complete: the types, and a type on a disk image.
pub const FS_HINTS: Hint = Hint(manyfiles::experiment::flags::FS_TYPES);
pub const CACHE_HINTS: Hint = Hint(manyfiles::experiment::flags::CACHE_MODES);
pub const UNTIL_HINTS: Hint = Hint(manyfiles::experiment::flags::UNTIL_TIMES);
pub const ORDER_HINTS: Hint = Hint(&["interleaved", "sequential"]);
pub const CONTENT_HINTS: Hint = Hint(&["random", "zeros", "compressible:2"]);
pub const FSYNC_HINTS: Hint = Hint(&["none", "file", "dir", "end"]);
pub const TREE_HINTS: Hint = Hint(&["nextcloud-like"]);
pub const DB_HINTS: Hint = Hint(&["sqlite:", "postgres://"]);

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
    #[arg(
        long,
        value_name = "NAME",
        conflicts_with_all = ["files", "size"],
        value_parser = TREE_HINTS,
        hide_possible_values = true
    )]
    pub tree: Option<String>,
    /// Multiply the files and directories of --like or --tree by this
    #[arg(long, default_value = "1")]
    pub scale: f64,
}

/// `--portion`'s default: files per portion.
pub const RUN_PORTION_DEFAULT: u64 = 10_000;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Directory to work in: a private run directory is made inside it and removed afterwards
    /// (default: . unless --fs is given); or a bucket of yours, s3://BUCKET/PREFIX, reached as the
    /// engines reach it (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID …, ~/.aws/credentials), or a container,
    /// azblob://CONTAINER/PREFIX (AZURE_STORAGE_CONNECTION_STRING …), for the obj:… ops: the run
    /// writes and deletes only below a fresh PREFIX/manyfiles-ladder-PID-RANDOM/
    #[arg(long)]
    pub target: Option<PathBuf>,
    /// Test file systems to format and run on (root): TYPE[:BLOCK][@ram|@disk[:DIR]|@dev:/dev/NAME|@class:CLASS],
    /// comma separated; TYPE is ext2, ext3, ext4, xfs, btrfs, ntfs, exfat or tmpfs; CLASS a device class (hdd,
    /// usb2-stick, usb3-stick, sd-card, ebs-magnetic, ebs-gp2, ebs-io1, or lat=2ms,iops=500,bw=40MiB/s,qd=1);
    /// e.g. ext4:4k,xfs,ntfs:64k,ext4@class:hdd; or a file share: share:sftp|smb@rtt=DUR[,bw=RATE][,on=SPEC]
    /// (e.g. share:sftp@rtt=1ms: sshd + sshfs, the round trip added by toxiproxy, exporting tmpfs);
    /// or an object store: s3|azblob[@rtt=DUR][,bw=RATE][,on=SPEC] (an S3 server + toxiproxy + s3fs, or
    /// Azurite + toxiproxy; their native requests with --ops obj:put,obj:get,…)
    #[arg(long, value_name = "SPEC,...", value_parser = FS_HINTS, hide_possible_values = true)]
    pub fs: Option<String>,
    /// Confirm formatting a real device named in --fs (...@dev:/dev/NAME): name it again here
    /// (repeat for several devices); everything on it is destroyed
    #[arg(long, value_name = "/dev/NAME")]
    pub destroy_device: Vec<PathBuf>,
    /// Name the targets in tables, comparisons, charts and the JSON, in the order --target,
    /// then --fs's specs; comma separated or repeated (default: what each is, e.g.
    /// "/var/tmp (ext4 on vda)", "ext4@ram")
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub label: Vec<String>,
    /// Image size for --fs (default: twice the largest tree, at least 512 MiB)
    #[arg(long, value_parser = parse_size)]
    pub fs_size: Option<u64>,
    /// Keep each --fs file system between trials instead of formatting it afresh
    #[arg(long)]
    pub reuse: bool,
    /// interleaved (run 1 on every tree and target, then run 2, ...) or sequential
    #[arg(long, default_value = "interleaved", value_parser = ORDER_HINTS, hide_possible_values = true)]
    pub order: String,
    /// Caches before each phase: cold (default: read-side phases start with the trees'
    /// data evicted, and as root every cache dropped), warm (left as they are), drop
    /// (root: every cache dropped before every phase)
    #[arg(
        long,
        value_name = "cold|warm|drop",
        conflicts_with_all = ["cold", "drop_caches"],
        value_parser = CACHE_HINTS,
        hide_possible_values = true
    )]
    pub cache: Option<String>,
    /// Which time tables, models and comparisons use for write phases: durable (until a
    /// syncfs/fsync of the target returned: the storage's cost) or returned (until the
    /// last close: what the application saw); a run that syncs keeps both in the JSON
    #[arg(
        long,
        value_name = "durable|returned",
        default_value = "durable",
        value_parser = UNTIL_HINTS,
        hide_possible_values = true
    )]
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
    /// Adaptive runs (the default): run each cell until the 95% interval of its median,
    /// within and between blocks of runs, is within ±P% (judged from 10 undisturbed
    /// runs on)
    #[arg(long, value_name = "P%", default_value = "5%")]
    pub precision: String,
    /// Adaptive: runs every cell gets while the budget lasts (6: the fewest with an
    /// interval)
    #[arg(long, default_value = "6")]
    pub min_runs: u32,
    /// Adaptive: most runs of a cell (disturbed runs are replaced and not counted)
    #[arg(long, default_value = "30")]
    pub max_runs: u32,
    /// Adaptive: time budget of the whole experiment (90s, 3m, 1h); no trial starts
    /// that would overrun a budget given here, not even a minimum run; the default
    /// stretches up to 9m while cells lack their --min-runs [default: 3m]
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<String>,
    /// Synthetic times for tests of the statistics (cv=,slow=,disturbed=,seed=)
    #[arg(long, hide = true, value_name = "SPEC")]
    pub mock_timing: Option<String>,
    /// Unrecorded runs before the measured ones
    #[arg(long, default_value = "0")]
    pub warmup: u32,
    /// Price the requests of object-store ops (obj:put …) with this TOML table instead of the
    /// provider's list prices (AWS S3 Standard us-east-1, Azure Blob hot LRS East US; its fields:
    /// README, "Object stores")
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// Worker threads, parallel across directories (default: available cores). Copy and
    /// sync ops run on N, fixed, or without it as `manyfiles copy` does (two a core; on a
    /// FUSE or network file system climbing in flight from 16); scan, walk and rm always
    /// as their commands do without --threads. The footer says what each op ran on
    #[arg(long)]
    pub threads: Option<usize>,
    /// Close a per-portion time every N files (and at least once a second)
    #[arg(long, default_value_t = RUN_PORTION_DEFAULT, value_parser = parse_count)]
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
    /// Tables in full (intervals as [lo – hi], long headers, every column), however wide;
    /// by default they fit 100 columns
    #[arg(long)]
    pub wide: bool,
    #[command(flatten)]
    pub replace: Replace,
}

/// `--force`, on every command that writes output files.
#[derive(Args, Debug, Clone, Copy, Default)]
pub struct Replace {
    /// Replace existing output files that manyfiles did not write (without it such a file
    /// stops the command before anything runs, exit 2)
    #[arg(long)]
    pub force: bool,
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
    #[arg(long, default_value = "random", value_parser = CONTENT_HINTS, hide_possible_values = true)]
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
    #[arg(long, default_value = "none", value_parser = FSYNC_HINTS, hide_possible_values = true)]
    pub fsync: String,
    /// Write with O_DIRECT (block size a multiple of 4 KiB)
    #[arg(long)]
    pub direct: bool,
}

pub(super) fn threads(t: Option<usize>) -> Result<usize> {
    threads_or(t, cores())
}

/// The cores this process may use. Under an MPI launcher that did not bind the ranks to
/// cores (affinity still spans every online CPU), the host's cores are shared among the
/// ranks on it: each rank's default threads would otherwise oversubscribe them.
pub(super) fn cores() -> usize {
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

/// `--threads` and `--in-flight` → the engine's threads and the most operations it may
/// keep in flight (`engine::inflight`): neither given, adaptive from `default` up to
/// [`DEFAULT_MAX`](manyfiles::engine::inflight::DEFAULT_MAX) when one of `roots` is on a
/// FUSE or network file system, else `default` threads and no gate (the gate's
/// bookkeeping cost 4–11% on local nested trees: BENCHMARKS.md, session 12);
/// `--in-flight N`: the gate held at N (directories and batches of entries on N threads);
/// `--threads N`: N threads and no gate, as before the controller existed (clap refuses
/// both at once).
pub(super) fn in_flight(
    threads: Option<usize>,
    in_flight: Option<usize>,
    default: usize,
    roots: &[&std::path::Path],
) -> Result<(usize, Option<usize>)> {
    match (threads, in_flight) {
        (_, Some(0)) => Err(Error::bad("--in-flight", "must be at least 1")),
        (_, Some(n)) if n > 1024 => Err(Error::bad("--in-flight", "must be at most 1024")),
        (_, Some(n)) => Ok((n, Some(n))),
        (Some(t), None) => Ok((threads_or(Some(t), default)?, None)),
        (None, None) => Ok(manyfiles::engine::default_plan(default, roots).threads_and_max()),
    }
}

/// `--threads`, or `default` when not given.
pub(super) fn threads_or(t: Option<usize>, default: usize) -> Result<usize> {
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
    pub(super) fn spec(&self, shape: &ShapeArgs) -> Result<TreeSpec> {
        use manyfiles::tree::drawn;
        let (inv, flag) = match (&self.like, self.tree.as_deref()) {
            (Some(p), _) => (
                manyfiles::tree::inventory::Inventory::load(p).map_err(|e| match e {
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
    pub(super) fn spec(&self, files: u64, size: SizeDist) -> Result<TreeSpec> {
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
    pub(super) fn options(&self) -> Result<CreateOptions> {
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
    pub(super) fn exports(&self) -> Result<Vec<Output>> {
        let mut v = Vec::new();
        for (p, f, flag) in [(&self.csv, Format::Csv, "--csv"), (&self.markdown, Format::Markdown, "--markdown")] {
            if let Some(p) = p {
                check_output(p, flag, self.replace.force)?;
                v.push(Output { path: p.clone(), format: f });
            }
        }
        Ok(v)
    }
    pub(super) fn cache_mode(&self) -> Result<CacheMode> {
        match &self.cache {
            Some(c) => CacheMode::parse(c),
            None if self.drop_caches => Ok(CacheMode::Drop),
            None => Ok(CacheMode::Cold),
        }
    }

    pub(super) fn runs(&self, default: u32) -> Result<u32> {
        check_runs(self.runs.unwrap_or(default))
    }

    /// Adaptive runs unless `--runs N` was given.
    pub(super) fn adaptive(&self) -> Result<Option<manyfiles::results::adaptive::Adaptive>> {
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
        let settings = match &self.max_time {
            Some(t) => manyfiles::results::adaptive::Adaptive {
                max_time_s: parse_duration(t).map_err(|e| Error::bad("--max-time", e))?,
                ..manyfiles::results::adaptive::Adaptive::default_settings()
            },
            None => manyfiles::results::adaptive::Adaptive::default_budget(),
        };
        Ok(Some(manyfiles::results::adaptive::Adaptive {
            precision,
            min_runs: self.min_runs,
            max_runs: self.max_runs,
            ..settings
        }))
    }

    pub(super) fn mock(&self) -> Result<Option<manyfiles::experiment::rounds::MockTiming>> {
        self.mock_timing
            .as_deref()
            .map(|m| manyfiles::experiment::rounds::MockTiming::parse(m).map_err(|e| Error::bad("--mock-timing", e)))
            .transpose()
    }

    /// --target and --fs together; `.` when neither is given.
    pub(super) fn targets(&self) -> Result<Vec<TargetSpec>> {
        let mut targets = Vec::new();
        if let Some(t) = &self.target {
            manyfiles::experiment::user_store::target_url(t)?; // an s3:// or azblob:// URL must parse
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

    /// The --label names, checked against the targets they name.
    pub(super) fn labels(&self) -> Result<Vec<String>> {
        let n = self.targets()?.len();
        if self.label.len() > n {
            return Err(Error::bad(
                "--label",
                format!("{} names for {n} target(s) (--target, then each --fs spec)", self.label.len()),
            ));
        }
        if let Some(l) = self.label.iter().find(|l| l.chars().any(char::is_control)) {
            return Err(Error::bad("--label", format!("{l:?}: control characters are not allowed")));
        }
        Ok(self.label.iter().map(|l| l.trim().to_string()).collect())
    }

    /// Attach each --destroy-device to the `@dev:` spec naming the same device (the
    /// engine refuses a device spec without one, or with one naming another device).
    pub(super) fn confirm_devices(&self, targets: &mut [TargetSpec]) -> Result<()> {
        use manyfiles::storage::device::same_device;
        use manyfiles::storage::fsspec::Backing;
        const FLAG: &str = "--destroy-device";
        let destroy = &self.destroy_device;
        let mut devs: Vec<&mut manyfiles::storage::fsspec::FsSpec> = targets
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
    pub(super) fn experiment(
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
            check_output(j, "--json", self.replace.force)?;
        }
        let targets = self.targets()?;
        // A view setting, not the experiment's: the tables printed at the end.
        manyfiles::report::table::set_wide(self.wide);
        Ok(TreeExperiment {
            name: name.into(),
            targets,
            labels: self.labels()?,
            fs_size: self.fs_size,
            reuse: self.reuse,
            order: Order::parse(&self.order)?,
            measure_allocation: false,
            caches: self.cache_mode()?,
            until: Until::parse(&self.until)?,
            trees,
            side_trees: Vec::new(),
            ops: parse_ops(ops)?,
            create,
            runs,
            adaptive: self.adaptive()?,
            mock: self.mock()?,
            warmup: self.warmup,
            threads: threads(self.threads)?,
            // Without --threads the copy engine's ops run as `manyfiles copy`/`sync` do, so
            // that a model of them predicts the user's commands (a share's sync ladder on
            // the cores over-predicted `manyfiles sync` 1.3–9.5×).
            copy_threads: match self.threads {
                None => Some(manyfiles::engine::copy::default_threads(cores(), true)),
                Some(_) => None,
            },
            portion_files: self.portion,
            keep: self.keep,
            shared_dir: self.shared_dir,
            json: self.json.clone(),
            exports: self.exports()?,
            quiet: self.quiet,
            command_line,
            commands: Vec::new(),
            prices: self.prices.clone(),
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

pub(super) fn check_runs(n: u32) -> Result<u32> {
    match n {
        0 => Err(Error::bad("--runs", "must be at least 1")),
        n if n > 10_000 => Err(Error::bad("--runs", "must be at most 10000")),
        n => Ok(n),
    }
}

/// An output must not be a directory, a new file's directory must exist, and an existing
/// regular file must be one manyfiles wrote unless `force` (devices, fifos, sockets,
/// symlinks and `-` are fine: see `fs::output::write_output`).
pub(super) fn check_output(path: &std::path::Path, flag: &str, force: bool) -> Result<()> {
    manyfiles::fs::output::check_path(path, force)
        .map_err(|reason| Error::bad(flag, format!("{}: {reason}", path.display())))
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

/// One filter flag's value and its place on the command line: rsync reads its rules in
/// the order given, across `--exclude`, `--include`, `--filter` and `--exclude-from`
/// (clap parses values in that order; the count gives it back across the flags).
#[derive(Clone, Debug)]
pub struct Placed(pub usize, pub String);

fn placed(s: &str) -> std::result::Result<Placed, String> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    Ok(Placed(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed), s.to_string()))
}

/// Filters with rsync's meaning, on copy, sync, rm and scan.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Filters (rsync's rules)")]
pub struct FilterArgs {
    /// Leave out what PATTERN matches, as rsync does: the first matching rule (of
    /// --exclude, --include, --filter, --exclude-from, in order) wins; `/` in front anchors
    /// to the root, a `/` inside matches the path's end, none matches the name; a trailing
    /// `/` matches directories only; `*` stays within a name, `**` crosses `/`. An excluded
    /// directory is not entered; sync --delete and rm keep what is excluded
    #[arg(long, value_name = "PATTERN", value_parser = placed, allow_hyphen_values = true)]
    pub exclude: Vec<Placed>,
    /// Keep what PATTERN matches, even where a later rule would exclude it
    #[arg(long, value_name = "PATTERN", value_parser = placed, allow_hyphen_values = true)]
    pub include: Vec<Placed>,
    /// Exclude the patterns in FILE, one a line (blank lines and lines starting with # or ;
    /// skipped; `+ PATTERN` includes)
    #[arg(long, value_name = "FILE", value_parser = placed)]
    pub exclude_from: Vec<Placed>,
    /// An rsync filter rule: `- PATTERN`, `+ PATTERN`, `H`/`S` (sender only), `P`/`R`
    /// (receiver only: protect from, or risk, --delete), `!` to clear; modifiers `!`, `s`, `r`
    /// (`-! PATTERN`). Merge files are not supported
    #[arg(long, value_name = "RULE", value_parser = placed, allow_hyphen_values = true)]
    pub filter: Vec<Placed>,
    /// Exclude version-control directories: .git/, .hg/, .svn/ (after the rules given)
    #[arg(long)]
    pub exclude_vcs: bool,
    /// Only the paths listed in FILE (one a line, relative to the source; # and ; lines
    /// skipped) and the directories above them, as rsync -a --files-from: a listed
    /// directory's contents are not included. Excludes still apply. Not with sync --delete
    /// nor rm
    #[arg(long, value_name = "FILE")]
    pub files_from: Option<std::path::PathBuf>,
}

impl FilterArgs {
    /// The rule list in command-line order (None: no filter given).
    pub fn filter(&self) -> Result<Option<manyfiles::engine::filter::Filter>> {
        use manyfiles::engine::filter::Filter;
        enum Flag {
            Exclude,
            Include,
            From,
            Rule,
        }
        let mut all: Vec<(&Placed, Flag)> = Vec::new();
        all.extend(self.exclude.iter().map(|p| (p, Flag::Exclude)));
        all.extend(self.include.iter().map(|p| (p, Flag::Include)));
        all.extend(self.exclude_from.iter().map(|p| (p, Flag::From)));
        all.extend(self.filter.iter().map(|p| (p, Flag::Rule)));
        if all.is_empty() && !self.exclude_vcs && self.files_from.is_none() {
            return Ok(None);
        }
        all.sort_by_key(|(p, _)| p.0);
        let mut f = Filter::default();
        for (Placed(_, v), flag) in all {
            match flag {
                Flag::Exclude => f.exclude(v)?,
                Flag::Include => f.include(v)?,
                Flag::Rule => f.add_rule(v)?,
                Flag::From => {
                    let text = manyfiles::fs::input::read_bounded(std::path::Path::new(v), 16 << 20)
                        .map_err(|e| Error::bad("--exclude-from", format!("{v}: {e}")))?;
                    f.exclude_lines(&text)?;
                }
            }
        }
        if self.exclude_vcs {
            f.exclude_vcs();
        }
        if let Some(p) = &self.files_from {
            let text = manyfiles::fs::input::read_bounded(p, 256 << 20)
                .map_err(|e| Error::bad("--files-from", format!("{}: {e}", p.display())))?;
            f.files_from(&text)?;
        }
        Ok(Some(f))
    }
}
