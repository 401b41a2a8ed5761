//! The experiments that generate trees and time them: ladder, ops, gen, bigfile,
//! clusters, dirsize and pack (their arguments and their translation into configs).

use super::common::{
    CACHE_HINTS, CONTENT_HINTS, FS_HINTS, Hint, OPS_HINTS, RunArgs, ShapeArgs, TreeSizeArgs, UNTIL_HINTS, WriteArgs,
    check_output, check_runs, threads,
};
use clap::Args;
use manyfiles::error::{Error, Result};
use manyfiles::experiment::ladder::LadderSpec;
use manyfiles::experiment::{Order, TargetSpec, TreeExperiment};
use manyfiles::generate::GenConfig;
use manyfiles::results::Until;
use manyfiles::storage::cache::CacheMode;
use manyfiles::storage::fsspec::parse_list as parse_fs_list;
use manyfiles::tree::{Content, SizeDist, TreeSpec};
use manyfiles::units::{parse_count, parse_size};
use std::path::PathBuf;

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
    /// Total bytes of two side rungs (at --from's and the middle file count) that separate the
    /// per-byte cost from a per-run constant; `off`: none [default: a quarter of --total]
    #[arg(long, value_name = "SIZE|off")]
    pub second_total: Option<String>,
    /// Ops to time, comma separated (create, stat, list, read, walk, scan, rescan, rm or delete;
    /// reformat on --fs targets: unmount, mkfs, mount with the tree on it, beside delete)
    #[arg(long, default_value = "create,read,delete", value_parser = OPS_HINTS, hide_possible_values = true)]
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
    /// Ops to time, comma separated, run in this order: create, stat, list, read, walk, scan,
    /// rescan, rm or delete, reformat (--fs targets: unmount, mkfs, mount with the tree on it)
    #[arg(long, default_value = "create,stat,list,read,delete", value_parser = OPS_HINTS, hide_possible_values = true)]
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
    let second_total = match a.second_total.as_deref() {
        None => Some(a.total / 4),
        Some("off" | "none") => None,
        Some(v) => Some(parse_size(v).map_err(|e| Error::bad("--second-total", e))?),
    };
    let ladder = LadderSpec { total: a.total, from: a.from, to: a.to, step: a.step, second_total };
    let trees = ladder_trees(&ladder, &a.shape)?;
    let side = ladder.side_rungs()?.len();
    let side_trees = trees[trees.len() - side..].iter().map(|t| t.key()).collect();
    let mut cfg = a.run.experiment("ladder", trees, &a.ops, a.write.options()?, command_line)?;
    cfg.side_trees = side_trees;
    a.pair.apply(cfg)
}

pub fn ops_config(a: &OpsArgs, command_line: Vec<String>) -> Result<TreeExperiment> {
    let spec = a.tree.spec(&a.shape)?;
    let cfg = a.run.experiment("ops", vec![spec], &a.ops, a.write.options()?, command_line)?;
    a.pair.apply(cfg)
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

pub fn gen_config(a: &GenArgs) -> Result<GenConfig> {
    Ok(GenConfig {
        dir: a.dir.clone(),
        spec: a.tree.spec(&a.shape)?,
        create: a.write.options()?,
        threads: threads(a.threads)?,
        quiet: a.quiet,
    })
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
    #[arg(long, default_value = "random", value_parser = CONTENT_HINTS, hide_possible_values = true)]
    pub content: String,
    /// Seed of the content
    #[arg(long, default_value = "1")]
    pub seed: u64,
    #[command(flatten)]
    pub run: RunArgs,
}

pub fn bigfile_config(
    a: &BigfileArgs,
    command_line: Vec<String>,
) -> Result<manyfiles::experiment::bigfile::BigfileConfig> {
    let r = &a.run;
    let drop_caches = r.cache_mode()? == CacheMode::Drop;
    let until = Until::parse(&r.until)?;
    if let Some(j) = &r.json {
        check_output(j, "--json", r.replace.force)?;
    }
    if a.block > usize::MAX as u64 {
        return Err(Error::bad("--block", "too large"));
    }
    // Flags bigfile shares with the tree experiments but has no use for: refused, not ignored.
    if r.threads.is_some() {
        return Err(Error::bad("--threads", "bigfile writes its one file from one thread"));
    }
    if r.portion != 10_000 {
        return Err(Error::bad("--portion", "bigfile has one file: no portions of files"));
    }
    if r.shared_dir {
        return Err(Error::bad("--shared-dir", "bigfile does not run under MPI"));
    }
    manyfiles::report::table::set_wide(r.wide);
    Ok(manyfiles::experiment::bigfile::BigfileConfig {
        targets: r.targets()?,
        labels: r.labels()?,
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
    #[arg(
        long,
        value_name = "NAME,...",
        value_parser = Hint(&manyfiles::pack::NAMES),
        hide_possible_values = true
    )]
    pub containers: Option<String>,
    /// At the destination: unpack, mount (read every file of the mounted container), or both
    #[arg(
        long,
        default_value = "unpack,mount",
        value_parser = Hint(&["unpack", "mount", "unpack,mount"]),
        hide_possible_values = true
    )]
    pub access: String,
    /// How containers are mounted: kernel (root), fuse (squashfuse, erofsfuse, fuse2fs) or auto
    #[arg(long, default_value = "auto", value_parser = Hint(&["auto", "kernel", "fuse"]), hide_possible_values = true)]
    pub mount_with: String,
    /// k in "pack once, copy k times": totals for one copy and for k copies
    #[arg(long, default_value = "10")]
    pub copies: u32,
    /// Who opens the containers at the destination: linux (every container) or any
    /// (tar, tar.zst only: Windows and macOS mount no squashfs, EROFS or ext4 image);
    /// the recommendation picks only what they can open (default: any when the
    /// destination is exFAT, NTFS or FAT, linux otherwise)
    #[arg(long, value_name = "linux|any", value_parser = Hint(&["linux", "any"]), hide_possible_values = true)]
    pub consumer: Option<String>,
    /// Source directory (a run directory is made inside; default .)
    #[arg(long, conflicts_with = "src_fs")]
    pub src_target: Option<PathBuf>,
    /// Source test file system (root): TYPE[:BLOCK][@ram|@disk[:DIR]], e.g. tmpfs or ext4@ram
    #[arg(long, value_name = "SPEC", value_parser = FS_HINTS, hide_possible_values = true)]
    pub src_fs: Option<String>,
    /// Destination directory (default: the source target holds both ends)
    #[arg(long, conflicts_with = "dst_fs")]
    pub dst_target: Option<PathBuf>,
    /// Destination test file system (root), e.g. ext4@disk; a file system of its own even
    /// when the spec equals --src-fs
    #[arg(long, value_name = "SPEC", value_parser = FS_HINTS, hide_possible_values = true)]
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
    #[arg(
        long,
        value_name = "cold|warm|drop",
        default_value = "cold",
        value_parser = CACHE_HINTS,
        hide_possible_values = true
    )]
    pub cache: String,
    /// Which time the tables use: durable (each step that writes ends with a syncfs of
    /// the file system it wrote to) or returned; both are in the JSON
    #[arg(
        long,
        value_name = "durable|returned",
        default_value = "durable",
        value_parser = UNTIL_HINTS,
        hide_possible_values = true
    )]
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
    #[command(flatten)]
    pub replace: super::common::Replace,
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
        let ladder =
            LadderSpec { total: a.total, from: a.from, to: a.to.unwrap_or(16_384), step: a.step, second_total: None };
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
        check_output(j, "--json", a.replace.force)?;
    }
    let runs = check_runs(a.runs)?;
    let consumer = match &a.consumer {
        None => None,
        Some(c) => Some(
            manyfiles::pack::Consumer::parse(c)
                .ok_or_else(|| Error::bad("--consumer", format!("'{c}': expected linux or any")))?,
        ),
    };
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
        consumer,
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

/// `gen DIR`: the tree written, and what it cost.
pub fn generate(a: &GenArgs) -> Result<()> {
    use manyfiles::units::{fmt_rate, fmt_secs, fmt_size};
    let cfg = gen_config(a)?;
    let g = manyfiles::generate::generate(&cfg)?;
    let r = &g.result;
    super::out(&format!(
        "created {} files ({}) in {} directories under {} in {} on {} thread{} (one run: {}, {} MiB/s)\n",
        r.files,
        fmt_size(r.bytes as f64),
        g.dirs,
        cfg.dir.display(),
        fmt_secs(r.elapsed_s),
        g.threads,
        if g.threads == 1 { "" } else { "s" },
        fmt_rate(r.files as f64 / r.elapsed_s.max(1e-9), "files"),
        manyfiles::units::sig3(r.bytes as f64 / r.elapsed_s.max(1e-9) / 1048576.0)
    ));
    super::out(&format!("file system: {} on {}\n", g.info.fs_type, g.info.mount_point));
    Ok(())
}
