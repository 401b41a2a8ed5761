//! pack's command line (its flags as plain data and the shared groups it takes) and its
//! config from them, and what a run prints around its view's tables.

use super::{PackExperiment, PackSource};
use crate::error::{Error, Result};
use crate::experiment::TargetSpec;
use crate::experiment::flags::{CACHE_MODES, CommandLine, Common, FS_TYPES, Flag, Group, UNTIL_TIMES, Values};
use crate::experiment::kinds::{Config, Finished};
use crate::experiment::ladder::LadderSpec;
use crate::pack::{Consumer, MountWith, NAMES};
use crate::results::Until;
use crate::storage::cache::CacheMode;
use crate::storage::fsspec::parse_list as parse_fs_list;
use crate::tree::SizeDist;
use crate::units::fmt_size;
use std::path::{Path, PathBuf};

/// What a ladder's flags conflict with (a real tree, one tree).
const LADDER: &[&str] = &["to", "from", "step", "total"];

pub const COMMAND: CommandLine = CommandLine {
    about: "Loose vs packed: copy a tree file by file, or pack it (tar, tar.zst, squashfs, erofs, ext4 image), copy one file, unpack or mount it",
    flags: &[
        Flag::positional_path(
            "path",
            "PATH",
            "A real directory to use as the tree (only read; default: generated trees)",
        )
        .conflicts(&["files", "size", "to", "from", "step", "total"]),
        Flag::count("files", "FILES", "One generated tree of this many files (default: a ladder, see --to)")
            .conflicts(LADDER),
        Flag::text(
            "size",
            "SIZE",
            "File size of the --files tree: 4k (fixed), uniform:1k-64k, lognormal:16k,1.5, exp:32k or list:1k,4k,1M",
        )
        .default("4k")
        .requires("files"),
        Flag::count(
            "to",
            "TO",
            "Ladder: largest file count (rungs --from, ×--step, … up to this; each holds --total bytes)",
        ),
        Flag::count("from", "FROM", "Ladder: smallest file count").default("1"),
        Flag::count("step", "STEP", "Ladder: multiply the file count by this from rung to rung").default("4"),
        Flag::size("total", "TOTAL", "Ladder: bytes split across each rung's files").default("64MiB"),
        Flag::text(
            "containers",
            "NAME,...",
            "Containers, comma separated: tar, tar.zst, squashfs, erofs, ext4 (default: every one whose tools are \
             installed; named ones must be); onto an object store the shard formats: tar, tar.zst (default both)",
        )
        .hints(&NAMES),
        Flag::text(
            "access",
            "ACCESS",
            "At the destination: unpack, mount (read every file of the mounted container), or both",
        )
        .default("unpack,mount")
        .hints(&["unpack", "mount", "unpack,mount"]),
        Flag::text(
            "mount-with",
            "MOUNT_WITH",
            "How containers are mounted: kernel (root), fuse (squashfuse, erofsfuse, fuse2fs) or auto",
        )
        .default("auto")
        .hints(&["auto", "kernel", "fuse"]),
        Flag::number("copies", "COPIES", "k in \"pack once, copy k times\": totals for one copy and for k copies")
            .default("10")
            .at_most(u32::MAX as u64),
        Flag::text(
            "consumer",
            "linux|any",
            "Who opens the containers at the destination: linux (every container) or any (tar, tar.zst only: Windows \
             and macOS mount no squashfs, EROFS or ext4 image); the recommendation picks only what they can open \
             (default: any when the destination is exFAT, NTFS or FAT, linux otherwise)",
        )
        .hints(&["linux", "any"]),
        Flag::path("src-target", "SRC_TARGET", "Source directory (a run directory is made inside; default .)")
            .conflicts(&["src-fs"]),
        Flag::text(
            "src-fs",
            "SPEC",
            "Source test file system (root): TYPE[:BLOCK][@ram|@disk[:DIR]], e.g. tmpfs or ext4@ram",
        )
        .hints(FS_TYPES),
        Flag::path(
            "dst-target",
            "DST_TARGET",
            "Destination directory (default: the source target holds both ends), or s3://BUCKET/PREFIX or \
             azblob://CONTAINER/PREFIX: an object store of yours, reached as the engines reach it (--s3-via, or the \
             AWS or AZURE_STORAGE_* environment)",
        )
        .conflicts(&["dst-fs"]),
        Flag::text(
            "dst-fs",
            "SPEC",
            "Destination test file system (root), e.g. ext4@disk; a file system of its own even when the spec equals \
             --src-fs",
        )
        .hints(FS_TYPES),
        Flag::text(
            "shard-size",
            "SIZE,...",
            "Onto an object store (--dst-fs s3… or azblob…): tar and tar.zst shard sizes compared with loose objects \
             (a PUT per file), each to upload, read all and read one file (a range GET through the shards' index); \
             default 1MiB,16MiB,64MiB",
        ),
        Flag::path(
            "s3-via",
            "DIR",
            "With --dst-target s3://… or azblob://…: reach it through the object store `manyfiles mount` brought up \
             at DIR",
        ),
        Flag::path(
            "prices",
            "FILE",
            "Onto an object store: price its requests from this TOML file (default: the provider's list prices)",
        ),
        Flag::size(
            "fs-size",
            "FS_SIZE",
            "Image size of --src-fs / --dst-fs (default: from the tree, at least 512 MiB)",
        ),
        Flag::number("runs", "RUNS", "Measured runs of every step on every tree").default("3").at_most(u32::MAX as u64),
        Flag::number("warmup", "WARMUP", "Unrecorded runs before the measured ones")
            .default("0")
            .at_most(u32::MAX as u64),
        Flag::number("threads", "THREADS", "Worker threads (default: available cores)").at_most(usize::MAX as u64),
        Flag::text(
            "cache",
            "cold|warm|drop",
            "Caches before each step: cold (default: the files the step reads evicted, and as root every cache \
             dropped), warm (left as they are), drop (root: every cache dropped before every step)",
        )
        .default("cold")
        .hints(CACHE_MODES),
        Flag::text(
            "until",
            "durable|returned",
            "Which time the tables use: durable (each step that writes ends with a syncfs of the file system it wrote \
             to) or returned; both are in the JSON",
        )
        .default("durable")
        .hints(UNTIL_TIMES),
        Flag::path("json", "FILE", "Write the results (versioned JSON) here, rewritten after every measurement"),
        Flag::switch("quiet", "No progress bar").short('q'),
    ],
    groups: &[Group::Own, Group::Shape, Group::Write, Group::Replace],
    defaults: &[],
    config,
};

/// A number flag declared `at_most(u32::MAX)`.
fn small(v: &Values, long: &str) -> u32 {
    u32::try_from(v.number(long)).unwrap_or(u32::MAX)
}

fn config(v: &Values, common: &dyn Common) -> Result<Box<dyn Config>> {
    let source = if let Some(p) = v.path("path") {
        PackSource::Path(p.to_path_buf())
    } else if let Some(files) = v.given_number("files") {
        let size = SizeDist::parse(v.text("size").unwrap_or_default()).map_err(|e| Error::bad("--size", e))?;
        PackSource::Trees(vec![common.shape(files, size)?])
    } else {
        let to = v.given_number("to").unwrap_or(16_384);
        let (total, from, step) = (v.number("total"), v.number("from"), v.number("step"));
        let ladder = LadderSpec { total, from, to, step, second_total: None };
        PackSource::Trees(ladder.checked_trees(|files, size| common.shape(files, size))?)
    };
    let (src_fs, dst_fs) = (v.text("src-fs"), v.text("dst-fs"));
    let src = target(v.path("src-target"), src_fs, "--src-fs")?;
    // s3://BUCKET/PREFIX or azblob://CONTAINER/PREFIX: an object store of the user's
    // (objects.rs), not a directory.
    let dst_url = match v.path("dst-target").filter(|p| crate::engine::object::is_url(p)) {
        Some(p) => Some(
            crate::engine::object::ObjectUrl::parse(&p.to_string_lossy()).map_err(|e| Error::bad("--dst-target", e))?,
        ),
        None => None,
    };
    let s3_via = v.path("s3-via").map(Path::to_path_buf);
    if s3_via.is_some() && dst_url.is_none() {
        return Err(Error::bad("--s3-via", "only with --dst-target s3://… or azblob://…"));
    }
    let dst = target(v.path("dst-target").filter(|_| dst_url.is_none()), dst_fs, "--dst-fs")?;
    let fs_size = v.given_number("fs-size");
    if fs_size.is_some() && src_fs.is_none() && dst_fs.is_none() {
        return Err(Error::bad("--fs-size", "only makes sense with --src-fs or --dst-fs"));
    }
    let src = src.unwrap_or_else(|| TargetSpec::Dir(PathBuf::from(".")));
    let (mut unpack, mut mount) = (false, false);
    for w in v.text("access").unwrap_or_default().split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match w {
            "unpack" => unpack = true,
            "mount" => mount = true,
            _ => return Err(Error::bad("--access", format!("'{w}': expected unpack, mount or both"))),
        }
    }
    let mount_with = match v.text("mount-with").unwrap_or_default() {
        "auto" => MountWith::auto(),
        "kernel" => MountWith::Kernel,
        "fuse" => MountWith::Fuse,
        o => return Err(Error::bad("--mount-with", format!("'{o}': expected kernel, fuse or auto"))),
    };
    let (containers, named) = match v.text("containers") {
        Some(c) => (c.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(), true),
        None => (NAMES.iter().map(|s| s.to_string()).collect(), false),
    };
    let json = v.path("json").map(Path::to_path_buf);
    if let Some(j) = &json {
        common.check_output(j, "--json")?;
    }
    let runs = common.check_runs(small(v, "runs"))?;
    let consumer = match v.text("consumer") {
        None => None,
        Some(c) => {
            Some(Consumer::parse(c).ok_or_else(|| Error::bad("--consumer", format!("'{c}': expected linux or any")))?)
        }
    };
    let shard_sizes = shard_sizes(v.text("shard-size").unwrap_or(DEFAULT_SHARDS))?;
    Ok(Box::new(PackExperiment {
        source,
        src,
        dst,
        fs_size,
        containers,
        named,
        unpack,
        mount,
        mount_with,
        copies: small(v, "copies"),
        consumer,
        runs,
        warmup: small(v, "warmup"),
        threads: common.threads(v.given_number("threads").map(|t| t as usize))?,
        cache: CacheMode::parse(v.text("cache").unwrap_or_default())?,
        until: Until::parse(v.text("until").unwrap_or_default())?,
        create: common.create()?,
        json,
        quiet: v.switch("quiet"),
        command_line: common.command_line(),
        shard_sizes,
        shard_sizes_given: v.text("shard-size").is_some(),
        in_flight: v.given_number("threads").map_or(crate::ops::object::DEFAULT_IN_FLIGHT, |t| t.max(1) as usize),
        prices: v.path("prices").map(Path::to_path_buf),
        dst_url,
        s3_via,
    }))
}

/// The shard sizes without `--shard-size`.
const DEFAULT_SHARDS: &str = "1MiB,16MiB,64MiB";

/// `--shard-size 1MiB,16MiB`: sizes, smallest first, each once.
fn shard_sizes(text: &str) -> Result<Vec<u64>> {
    let mut v = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        v.push(crate::units::parse_size(part).map_err(|e| Error::bad("--shard-size", format!("'{part}': {e}")))?);
    }
    if v.is_empty() {
        return Err(Error::bad("--shard-size", "give one size at least"));
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// One end of `pack`: a directory, a test file system, or (None) the default.
fn target(dir: Option<&Path>, fs: Option<&str>, flag: &str) -> Result<Option<TargetSpec>> {
    if let Some(f) = fs {
        let mut v = parse_fs_list(f).map_err(|e| Error::bad(flag, e))?;
        if v.len() != 1 {
            return Err(Error::bad(flag, "give one file system"));
        }
        return Ok(Some(TargetSpec::Fs(v.remove(0))));
    }
    Ok(dir.map(|d| TargetSpec::Dir(d.to_path_buf())))
}

impl Config for PackExperiment {
    fn name(&self) -> &str {
        "pack"
    }
    /// A real tree is named before the tables; skipped containers are listed after them.
    fn run(&self) -> Result<Finished> {
        let o = super::run(self)?;
        let mut before = String::new();
        if let PackSource::Path(p) = &self.source {
            let m = &o.results.measurements;
            let (files, bytes) = m.first().map(|m| (m.tree_files, m.tree_bytes)).unwrap_or_default();
            before = format!(
                "tree: {} ({files} files, {}; recorded as n={files} with their mean size)\n",
                p.display(),
                fmt_size(bytes as f64)
            );
        }
        let after = o.skipped.iter().map(|w| format!("skipped: {w}\n")).collect();
        Ok(Finished { results: o.results, before, after })
    }
    fn json(&self) -> Option<&Path> {
        self.json.as_deref()
    }
}
