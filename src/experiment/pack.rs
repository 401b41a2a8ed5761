//! `pack`: is it faster to copy a tree file by file (loose), or to pack it into one
//! container on the source, copy that one file, and unpack or mount it at the
//! destination? Every step is timed apart, per container (see `crate::pack`), on
//! generated trees (a ladder shows where packing starts to pay) or on a real directory
//! (read only). Source and destination are targets like everywhere else (directories or
//! managed file systems, formatted afresh per trial); without a destination, or with the
//! source's directory as destination, one target holds both ends.
//!
//! Ops recorded per tree: `loose` (the copy engine), then per container `C:pack`,
//! `C:copy` (the container file, one copy), `C:unpack`, and for mountable containers
//! `C:mount`, `C:read` (every file read to the end) and `C:umount`. Every unpacked or
//! mounted tree is compared with the source (names, kinds, sizes, contents), untimed.
//!
//! Storage, not cache, as in every experiment: before each step the files it reads are
//! made cold (`--cache`, untimed: the source tree, the container, the mounted tree), and
//! each step that writes ends with a timed `syncfs` of the file system it wrote to
//! (durable; the time until it returned is kept beside, `--until returned` uses it).

use super::{
    CacheMode, Driver, Order, Stop, TreeMeta, TrialOutcome, drive, make_durable, outputs, prepare_caches, watched,
};
use crate::engine::copy::verify::{Checks, compare};
use crate::error::{Error, Result};
use crate::experiment::all_ranks::{self, run_phase};
use crate::fs::remove::remove_contents;
use crate::fs::walk;
use crate::measure::PhaseResult;
use crate::measure::diskstats::DeviceWatch;
use crate::measure::progress::Progress;
use crate::measure::provenance::Provenance;
use crate::ops::{self, CreateOptions, PhaseSettings};
use crate::pack::{self, Container, MountWith};
use crate::results::{ExperimentInfo, ResultSet, Until};
use crate::signals;
use crate::target::rundir::RunDir;
use crate::tree::layout::Shape;
use crate::tree::{Prepared, SizeDist, TreeSpec};
use crate::units::{fmt_secs, fmt_size, sig3};
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, Mode, mkdirat, unlinkat};
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};

pub use super::targets::{LiveTarget, TargetSpec};

/// Where the tree comes from.
#[derive(Debug, Clone)]
pub enum PackSource {
    /// Generated on the source target, one trial per tree (a ladder or one spec).
    Trees(Vec<TreeSpec>),
    /// A real directory, only read.
    Path(PathBuf),
}

#[derive(Debug, Clone)]
pub struct PackExperiment {
    pub source: PackSource,
    pub src: TargetSpec,
    /// None: the source target is the destination too.
    pub dst: Option<TargetSpec>,
    pub fs_size: Option<u64>,
    /// Container names; `named`: given by the user (a missing tool is then an error,
    /// otherwise the container is skipped with a warning).
    pub containers: Vec<String>,
    pub named: bool,
    pub unpack: bool,
    pub mount: bool,
    pub mount_with: MountWith,
    /// k in "pack once, copy k times".
    pub copies: u32,
    pub runs: u32,
    pub warmup: u32,
    pub threads: usize,
    /// Caches before each step (cold: the files it reads evicted first).
    pub cache: CacheMode,
    /// Which time the summaries use: durable (each writing step ends with a syncfs) or
    /// returned.
    pub until: Until,
    pub create: CreateOptions,
    pub json: Option<PathBuf>,
    pub quiet: bool,
    pub command_line: Vec<String>,
}

/// What `run` returns: the results and the containers skipped (with why).
pub struct PackOutcome {
    pub results: ResultSet,
    pub skipped: Vec<String>,
}

/// The containers that can run here, and warnings for the ones skipped. A container the
/// user named whose tools are missing is an error (exit 2), naming the Debian package.
pub fn usable_containers(cfg: &PackExperiment) -> Result<(Vec<Box<dyn Container>>, Vec<String>)> {
    const FLAG: &str = "--containers";
    let mut ok = Vec::new();
    let mut skipped = Vec::new();
    for name in &cfg.containers {
        let c = pack::by_name(name).ok_or_else(|| {
            Error::bad(FLAG, format!("unknown container '{name}' (known: {})", pack::NAMES.join(", ")))
        })?;
        let mut tools = c.tools();
        let mounts = cfg.mount && c.kernel_fs().is_some();
        let mut why = None;
        if mounts {
            match cfg.mount_with {
                MountWith::Kernel => {
                    tools.extend([("mount", "mount"), ("umount", "mount")]);
                    let fs = c.kernel_fs().unwrap_or_default();
                    if !crate::target::managed::kernel_supports(fs) {
                        why = Some(format!("{}: this kernel cannot mount {fs}", c.name()));
                    }
                }
                MountWith::Fuse => {
                    if let Some((t, _)) = c.fuse(Path::new("x"), Path::new("y")) {
                        tools.push(t);
                    }
                    if !Path::new("/dev/fuse").exists() {
                        why = Some(format!("{}: no /dev/fuse for a FUSE mount", c.name()));
                    }
                }
            }
        }
        if !cfg.unpack && !mounts {
            why = Some(format!("{}: can only be unpacked, and --access has no unpack", c.name()));
        }
        if cfg.unpack && !cfg.mount && !c.can_unpack() {
            why = Some(format!("{}: can only be mounted, and --access has no mount", c.name()));
        }
        if let Some((t, p)) = pack::missing(&tools).first() {
            why = Some(format!("{}: {t} not found: install the Debian package {p}", c.name()));
        }
        match why {
            Some(w) if cfg.named => return Err(Error::bad(FLAG, w)),
            Some(w) => skipped.push(format!("{w}; skipped")),
            None => ok.push(c),
        }
    }
    if ok.is_empty() {
        return Err(Error::bad(FLAG, format!("no container can run here ({})", skipped.join("; "))));
    }
    Ok((ok, skipped))
}

fn check(cfg: &PackExperiment) -> Result<()> {
    if cfg.copies == 0 || cfg.copies > 1_000_000 {
        return Err(Error::bad("--copies", "must be between 1 and 1000000"));
    }
    if !cfg.unpack && !cfg.mount {
        return Err(Error::bad("--access", "give unpack, mount or both"));
    }
    if cfg.mount && cfg.mount_with == MountWith::Kernel && !rustix::process::geteuid().is_root() {
        return Err(Error::bad("--mount-with", "kernel mounts need root; use --mount-with fuse"));
    }
    if let PackSource::Trees(trees) = &cfg.source {
        for t in trees {
            t.validate().map_err(|(flag, reason)| Error::bad(flag, reason))?;
        }
    }
    if let PackSource::Path(p) = &cfg.source {
        let real = std::fs::canonicalize(p).map_err(|e| Error::bad("PATH", format!("{}: {e}", p.display())))?;
        if !real.is_dir() {
            return Err(Error::bad("PATH", format!("{} is not a directory", p.display())));
        }
        // Run directories (and managed file systems' mounts and images) inside PATH
        // would be packed into their own containers.
        for (flag, t) in [("--src-target", Some(&cfg.src)), ("--dst-target", cfg.dst.as_ref())] {
            let Some(t) = t else { continue };
            let (flag, place) = match t {
                TargetSpec::Dir(d) => (flag, std::fs::canonicalize(d).unwrap_or_else(|_| d.clone())),
                TargetSpec::Fs(f) => (if flag == "--src-target" { "--src-fs" } else { "--dst-fs" }, f.backing_dir()),
            };
            let state = crate::target::registry::state_dir();
            // By identity too (a bind mount shows PATH under another path): the target
            // directory, or the nearest existing directory above it.
            let inside_by_identity = || {
                let near = place.ancestors().find(|a| a.is_dir())?;
                let (a, b) = (crate::engine::overlap::place(near).ok()?, crate::engine::overlap::place(&real).ok()?);
                crate::engine::overlap::overlap(&a, &b)
            };
            if place.starts_with(&real)
                || (matches!(t, TargetSpec::Fs(_)) && state.starts_with(&real))
                || matches!(
                    inside_by_identity(),
                    Some(crate::engine::overlap::Overlap::Same | crate::engine::overlap::Overlap::FirstInside)
                )
            {
                return Err(Error::bad(
                    flag,
                    format!("{} is inside PATH {}: the run would pack itself", place.display(), real.display()),
                ));
            }
        }
    }
    Ok(())
}

/// Bytes in use on the file system holding `p` (statvfs), for the space a step took.
fn used(p: &Path) -> Option<u64> {
    rustix::fs::statvfs(p).ok().map(|v| (v.f_blocks - v.f_bfree).saturating_mul(v.f_frsize))
}

/// Remove `name` (file or tree) from a run directory, never following symlinks.
fn remove_at(rd: &RunDir, name: &CStr) -> std::result::Result<(), String> {
    let r = match walk::kind_of(rd.fd(), name) {
        Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(e) => Err(e),
        Ok(walk::Kind::Dir) => walk::open_dir_at(rd.fd(), name).and_then(|fd| {
            let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o700));
            remove_contents(fd.as_fd())?;
            unlinkat(rd.fd(), name, AtFlags::REMOVEDIR)
        }),
        Ok(_) => unlinkat(rd.fd(), name, AtFlags::empty()),
    };
    r.map_err(|e| format!("cannot remove {}/{}: {e}", rd.path.display(), name.to_string_lossy()))
}

fn mkdir_at(rd: &RunDir, name: &CStr) -> std::result::Result<PathBuf, String> {
    mkdirat(rd.fd(), name, Mode::from_raw_mode(0o755))
        .map_err(|e| format!("cannot create {}/{}: {e}", rd.path.display(), name.to_string_lossy()))?;
    Ok(rd.path.join(name.to_string_lossy().as_ref()))
}

/// A tree unpacked or mounted at the destination must equal the source.
fn same_tree(src: &Path, got: &Path, what: &str, threads: usize) -> std::result::Result<(), String> {
    let v = compare(src, got, &Checks { content: true, meta: false }, threads);
    if v.ok() {
        Ok(())
    } else {
        Err(format!("{what}: differs from the source: {}", v.examples.first().cloned().unwrap_or_default()))
    }
}

/// Everything one trial needs besides the run directories.
struct Ctx<'a> {
    cfg: &'a PackExperiment,
    containers: &'a [Box<dyn Container>],
    prepared: &'a [Prepared],
    metas: &'a [TreeMeta],
    settings: PhaseSettings,
}

/// The steps of one trial, recorded in order; a failed step stops the trial.
struct Steps<'a> {
    done: Vec<(String, PhaseResult)>,
    tree: &'a TreeMeta,
    threads: usize,
    cache: CacheMode,
}

/// What a step reads (made cold before it, untimed), where it writes (flushed at its
/// end, timed) and the device watched meanwhile.
#[derive(Clone, Copy)]
struct Io<'p> {
    reads: Option<&'p Path>,
    writes: Option<&'p Path>,
    watch: Option<&'p DeviceWatch>,
}

impl Steps<'_> {
    /// `phase` with its caches prepared, watched, and made durable.
    fn measure(
        &self,
        op: &str,
        io: Io,
        phase: impl FnOnce() -> PhaseResult,
    ) -> std::result::Result<PhaseResult, String> {
        let cache = match io.reads {
            Some(p) => prepare_caches(self.cache, op, &[p], self.threads).map_err(|e| format!("{op}: {e}"))?,
            None => crate::target::cache::CacheState::Warm,
        };
        // The flush inside the watch: the device's writes happen there.
        let mut r = watched(io.watch, cache, || {
            let mut r = phase();
            if let Some(w) = io.writes {
                make_durable(&mut r, w);
            }
            r
        });
        if io.reads.is_none() {
            r.cache = None; // reads nothing
        }
        Ok(r)
    }

    fn step(&mut self, op: String, io: Io, f: impl FnOnce() -> std::result::Result<(), String>) -> Option<Stop> {
        let t = self.tree;
        let threads = self.threads;
        let r = match self.measure(&op, io, || crate::ops::pack::timed(t.spec.files, t.bytes, t.dirs, threads, f)) {
            Ok(r) => r,
            Err(e) => return Some(Stop::Failed(e)),
        };
        let err = r.first_error.clone().map(|e| format!("{op}: {e}"));
        self.done.push((op, r));
        err.map(Stop::Failed).or_else(interrupted)
    }
    fn record(&mut self, op: &str, r: PhaseResult) -> Option<Stop> {
        let err = r.failed.clone().or(r.first_error.clone()).filter(|_| !r.complete());
        let stop = if r.interrupted { interrupted() } else { err.map(|e| Stop::Failed(format!("{op}: {e}"))) };
        self.done.push((op.to_string(), r));
        stop.or_else(interrupted)
    }
}

fn interrupted() -> Option<Stop> {
    match signals::pending() {
        0 => None,
        s => Some(Stop::Signal(s)),
    }
}

macro_rules! try_stop {
    ($e:expr) => {
        if let Some(s) = $e {
            return Some(s);
        }
    };
}

fn untimed(r: std::result::Result<(), String>) -> Option<Stop> {
    r.err().map(Stop::Failed).or_else(interrupted)
}

/// The devices watched during a trial's steps: the source's and the destination's.
#[derive(Clone, Copy)]
struct Watches<'a> {
    src: Option<&'a DeviceWatch>,
    dst: Option<&'a DeviceWatch>,
}

/// One trial: make (or take) the source tree, copy it loose, then every container.
fn trial(ctx: &Ctx, src_rd: &RunDir, dst_rd: &RunDir, ti: usize, watches: Watches) -> TrialOutcome {
    let tree = &ctx.metas[ti];
    let mut s = Steps { done: Vec::new(), tree, threads: ctx.cfg.threads, cache: ctx.cfg.cache };
    let stop = (|| -> Option<Stop> {
        let src = match &ctx.cfg.source {
            PackSource::Path(p) => p.clone(),
            PackSource::Trees(_) => {
                let root = match mkdir_at(src_rd, c"tree") {
                    Ok(p) => p,
                    Err(e) => return Some(Stop::Failed(e)),
                };
                let fd = match walk::open_dir_at(src_rd.fd(), c"tree") {
                    Ok(fd) => fd,
                    Err(e) => return Some(Stop::Failed(format!("cannot open the tree: {e}"))),
                };
                let op = ops::Create { opts: ctx.cfg.create.clone() };
                let r = run_phase(&op, &ctx.prepared[ti], fd.as_fd(), &ctx.settings, &Progress::hidden());
                if r.interrupted {
                    return interrupted();
                }
                if !r.complete() {
                    let e = r.failed.or(r.first_error).unwrap_or_default();
                    return Some(Stop::Failed(format!("creating the source tree (untimed): {e}")));
                }
                root
            }
        };
        let threads = ctx.cfg.threads;
        // Loose: the copy engine, file by file.
        let loose = dst_rd.path.join("loose");
        let before = used(&dst_rd.path);
        let io = Io { reads: Some(&src), writes: Some(&dst_rd.path), watch: watches.dst };
        let mut r = match s
            .measure("loose", io, || ops::copy::engine(crate::engine::copy::Mode::Copy, &src, &loose, threads))
        {
            Ok(r) => r,
            Err(e) => return Some(Stop::Failed(e)),
        };
        r.space_used_bytes = before.zip(used(&dst_rd.path)).map(|(a, b)| b as i64 - a as i64);
        try_stop!(s.record("loose", r));
        try_stop!(untimed(same_tree(&src, &loose, "loose copy", threads)));
        try_stop!(untimed(remove_at(dst_rd, c"loose")));
        for c in ctx.containers {
            try_stop!(one_container(ctx, &mut s, c.as_ref(), &src, (src_rd, dst_rd), watches));
        }
        if matches!(ctx.cfg.source, PackSource::Trees(_)) {
            try_stop!(untimed(remove_at(src_rd, c"tree")));
        }
        None
    })();
    (s.done, stop)
}

fn one_container(
    ctx: &Ctx,
    s: &mut Steps,
    c: &dyn Container,
    src: &Path,
    (src_rd, dst_rd): (&RunDir, &RunDir),
    w: Watches,
) -> Option<Stop> {
    let n = c.name();
    let threads = ctx.cfg.threads;
    // Names inside the run directories; distinct so one target can hold both ends.
    let packed_name = CString::new(format!("packed.{n}")).expect("no NUL");
    let copy_name = CString::new(format!("copied.{n}")).expect("no NUL");
    let packed = src_rd.path.join(packed_name.to_string_lossy().as_ref());
    let copied = dst_rd.path.join(copy_name.to_string_lossy().as_ref());
    // Source side: reads the tree, writes the container. Destination side: reads the
    // copied container (the whole run directory is evicted: it holds nothing else warm
    // that a later step relies on).
    let src_side = Io { reads: Some(src), writes: Some(&src_rd.path), watch: w.src };
    let dst_side = Io { reads: Some(&dst_rd.path), writes: None, watch: w.dst };
    try_stop!(s.step(format!("{n}:pack"), src_side, || c.pack(src, &packed, threads)));
    if let Some((_, r)) = s.done.last_mut() {
        r.space_used_bytes =
            std::fs::symlink_metadata(&packed).ok().map(|m| std::os::unix::fs::MetadataExt::blocks(&m) as i64 * 512);
    }
    let copy_io = Io { reads: Some(&src_rd.path), writes: Some(&dst_rd.path), watch: w.dst };
    try_stop!(s.step(format!("{n}:copy"), copy_io, || {
        std::fs::copy(&packed, &copied).map(drop).map_err(|e| format!("{}: {e}", copied.display()))
    }));
    if let Some((_, r)) = s.done.last_mut() {
        r.bytes = std::fs::metadata(&copied).map(|m| m.len()).unwrap_or(0);
    }
    if ctx.cfg.unpack && c.can_unpack() {
        let out = match mkdir_at(dst_rd, c"unpacked") {
            Ok(p) => p,
            Err(e) => return Some(Stop::Failed(e)),
        };
        let io = Io { writes: Some(&out), ..dst_side };
        try_stop!(s.step(format!("{n}:unpack"), io, || c.unpack(&copied, &out, threads).unwrap_or(Ok(()))));
        try_stop!(untimed(same_tree(src, &out, &format!("{n} unpacked"), threads)));
        try_stop!(untimed(remove_at(dst_rd, c"unpacked")));
    }
    if ctx.cfg.mount && c.kernel_fs().is_some() {
        let mut mounted = None;
        try_stop!(s.step(format!("{n}:mount"), dst_side, || {
            mounted = Some(pack::mount(c, &copied, ctx.cfg.mount_with, &dst_rd.path.join("mnt"))?);
            Ok(())
        }));
        let Some(mut m) = mounted else { return Some(Stop::Failed(format!("{n}: not mounted"))) };
        let mp = m.mount_point.clone();
        let io = Io { reads: Some(&mp), ..dst_side };
        try_stop!(s.step(format!("{n}:read"), io, || match pack::walk_tree(&mp, threads, true) {
            (_, 0, _) => Ok(()),
            (_, k, first) => Err(format!("{k} errors reading the mounted tree: {}", first.unwrap_or_default())),
        }));
        try_stop!(untimed(same_tree(src, &mp, &format!("{n} mounted"), threads)));
        try_stop!(s.step(format!("{n}:umount"), Io { reads: None, ..dst_side }, || m.unmount()));
    }
    try_stop!(untimed(remove_at(dst_rd, &copy_name)));
    untimed(remove_at(src_rd, &packed_name))
}

/// A stand-in spec for a real directory in the measurements (its real counts; the
/// average file size; `Flat` says nothing about its layout).
fn path_spec(u: &pack::Usage) -> TreeSpec {
    TreeSpec {
        files: u.files,
        size: SizeDist::Fixed { bytes: u.bytes.checked_div(u.files).unwrap_or(0) },
        layout: crate::tree::Layout::Flat,
        name_len: 16,
        content: crate::tree::Content::Random,
        seed: 1,
    }
}

/// Run the experiment (see the module docs): results saved after every measurement,
/// targets torn down on every exit path.
pub fn run(cfg: &PackExperiment) -> Result<PackOutcome> {
    signals::install();
    check(cfg)?;
    let (containers, skipped) = usable_containers(cfg)?;
    for w in &skipped {
        eprintln!("manyfiles: warning: {w}");
    }
    if let Some(j) = &cfg.json {
        if j.is_dir() {
            return Err(Error::bad("--json", format!("{} is a directory", j.display())));
        }
    }
    let (trees, metas, path_usage) = match &cfg.source {
        PackSource::Trees(t) => {
            let m = t
                .iter()
                .map(|s| TreeMeta { spec: s.clone(), bytes: s.total_bytes(), dirs: Shape::of(s).dir_count() - 1 })
                .collect();
            (t.clone(), m, None)
        }
        PackSource::Path(p) => {
            let (u, errors, first) = pack::walk_tree(p, cfg.threads, false);
            if errors > 0 {
                return Err(Error::bad(
                    "PATH",
                    format!("cannot read all of {}: {}", p.display(), first.unwrap_or_default()),
                ));
            }
            let m = TreeMeta { spec: path_spec(&u), bytes: u.bytes, dirs: u.dirs.saturating_sub(1) };
            (Vec::new(), vec![m], Some(u))
        }
    };
    let same = match &cfg.dst {
        None => true,
        Some(d) => matches!(d, TargetSpec::Dir(_)) && d == &cfg.src,
    };
    let mut specs = vec![cfg.src.clone()];
    if !same {
        specs.extend(cfg.dst.clone());
    }
    // Image size: the source holds the tree and a container, the destination a container
    // and the unpacked tree; one target holds all four. From the targets' own estimate
    // (twice the tree in its cluster size, at least 512 MiB), scaled to that.
    let sizing: Vec<TreeSpec> = match &path_usage {
        Some(u) => vec![path_spec(u)],
        None => trees.clone(),
    };
    let fs_size = match cfg.fs_size {
        Some(s) => Some(s),
        None => {
            let mut m = 0u64;
            for s in &specs {
                if let TargetSpec::Fs(f) = s {
                    m = m.max(super::targets::image_size(f, &sizing, None, 1)?.bytes);
                }
            }
            (m > 0).then(|| (m / 2).saturating_mul(if same { 5 } else { 3 }).div_ceil(1 << 20) << 20)
        }
    };
    // Entries: the tree and its unpacked copy (or the source tree and its container's files).
    let mut live = LiveTarget::open_all(&specs, &sizing, fs_size, 2, false, false)?;
    let mut dst = live.pop().expect("one target at least");
    let mut src = live.pop();
    // Two targets: the measurements' target says which way ("ext4@ram → exfat"), the
    // target list which end is which.
    if let Some(s) = src.as_mut() {
        let label = |t: &LiveTarget| t.id.split('#').next().unwrap_or_default().to_string();
        let (a, b) = (label(s), label(&dst));
        s.info.id = format!("source {a}");
        dst.info.id = format!("destination {b}");
        dst.id = format!("{a} → {b}");
    }
    let mut ops_done = vec!["loose".to_string()];
    for c in &containers {
        let n = c.name();
        ops_done.extend([format!("{n}:pack"), format!("{n}:copy")]);
        if cfg.unpack && c.can_unpack() {
            ops_done.push(format!("{n}:unpack"));
        }
        if cfg.mount && c.kernel_fs().is_some() {
            ops_done.extend([format!("{n}:mount"), format!("{n}:read"), format!("{n}:umount")]);
        }
    }
    let experiment = ExperimentInfo {
        name: "pack".into(),
        ops: ops_done,
        runs: cfg.runs,
        warmup: cfg.warmup,
        threads: cfg.threads,
        portion_files: 10_000,
        order: Order::Interleaved.name().into(),
        create: cfg.create.clone(),
        caches: cfg.cache,
        until: cfg.until,
        adaptive: None,
    };
    let mut infos = vec![dst.info.clone()];
    infos.extend(src.as_ref().map(|s| s.info.clone()));
    let rs = ResultSet::new(Provenance::collect(cfg.command_line.clone()), experiment, infos);
    let prepared: Vec<Prepared> = trees.iter().map(|t| Prepared::new(t, cfg.create.direct)).collect();
    let ctx = Ctx {
        cfg,
        containers: &containers,
        prepared: &prepared,
        metas: &metas,
        settings: PhaseSettings {
            threads: cfg.threads,
            portion_files: 10_000,
            buf_len: cfg.create.block_size.max(64 << 10),
            flush: true,
            shared_dir: all_ranks::shared_dir(),
        },
    };
    let driver = Driver {
        name: "pack",
        runs: super::rounds::Runs::Fixed(cfg.runs),
        warmup: cfg.warmup,
        order: Order::Interleaved,
        outputs: outputs(cfg.json.as_deref(), &[]),
        mock: None,
        reformat: false,
    };
    let progress = Progress::new(cfg.quiet);
    let src_watch = src.as_ref().and_then(|s| s.watch.clone());
    let results = drive(&driver, vec![dst], rs, &metas, &progress, |dst_rd, ti, watch| match src.as_mut() {
        None => trial(&ctx, dst_rd, dst_rd, ti, Watches { src: watch, dst: watch }),
        Some(s) => match s.begin_trial() {
            Ok(src_rd) => trial(&ctx, src_rd, dst_rd, ti, Watches { src: src_watch.as_ref(), dst: watch }),
            Err(e) => (Vec::new(), Some(Stop::Failed(e.to_string()))),
        },
    });
    if let Some(s) = src {
        match &results {
            Ok(_) => s.finish()?,
            Err(_) => drop(s), // torn down by drop; the first error is the one to tell
        }
    }
    // The cost-model warnings of the other experiments say little about pack's steps
    // (the JSON keeps them); the others (first run, noisy cells) stay.
    let mut results = results?;
    results.warnings.retain(|w| !w.contains("explains the data poorly"));
    Ok(PackOutcome { results, skipped })
}

/// Median seconds of `op` on the tree with `key` (None: not measured or no complete run).
fn median(rs: &ResultSet, op: &str, key: &str) -> Option<f64> {
    rs.summaries.iter().find(|s| s.op == op && s.tree_key == key).map(|s| s.stats.median_s)
}

/// Median of a recorded figure (space) over complete runs.
fn median_space(rs: &ResultSet, op: &str, key: &str) -> Option<f64> {
    let v: Vec<f64> = rs
        .measurements
        .iter()
        .filter(|m| m.op == op && m.tree_key == key && m.result.complete())
        .filter_map(|m| m.result.space_used_bytes.map(|b| b as f64))
        .collect();
    (!v.is_empty()).then(|| crate::analysis::stats::median(&v))
}

/// One way to get a tree across with a container: pack, copy, then unpack or mount+read.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub container: String,
    /// "unpack" or "mount".
    pub access: String,
    pub pack_s: f64,
    /// Per copy: the container's copy plus unpack, or mount + read + umount.
    pub per_copy_s: f64,
    pub container_bytes: Option<f64>,
    /// (pack, per copy) of every run that completed all its steps.
    pub runs: Vec<(f64, f64)>,
}

impl Route {
    pub fn total(&self, k: u32) -> f64 {
        self.pack_s + k as f64 * self.per_copy_s
    }
    pub fn label(&self) -> String {
        format!("{} ({})", self.container, self.access)
    }
}

/// One tree's figures: loose time and space, and every route.
#[derive(Debug, Clone)]
pub struct TreeRoutes {
    pub key: String,
    pub files: u64,
    pub bytes: u64,
    pub loose_s: f64,
    pub loose_bytes: Option<f64>,
    pub routes: Vec<Route>,
    /// Loose seconds of every complete run.
    pub loose_runs: Vec<f64>,
}

/// Seconds of `op` on `key` per run (complete measurements only).
fn per_run(rs: &ResultSet, op: &str, key: &str) -> Vec<(u32, f64)> {
    rs.measurements
        .iter()
        .filter(|m| m.op == op && m.tree_key == key && m.result.complete())
        .map(|m| (m.run, m.result.elapsed_s))
        .collect()
}

/// (pack, per copy) of each run in which `pack` and every per-copy step completed.
fn route_runs(rs: &ResultSet, key: &str, pack_op: &str, per_copy: &[String]) -> Vec<(f64, f64)> {
    let steps: Vec<Vec<(u32, f64)>> = per_copy.iter().map(|op| per_run(rs, op, key)).collect();
    per_run(rs, pack_op, key)
        .into_iter()
        .filter_map(|(run, p)| {
            let each: Option<Vec<f64>> =
                steps.iter().map(|v| v.iter().find(|(r, _)| *r == run).map(|(_, s)| *s)).collect();
            each.map(|e| (p, e.iter().sum()))
        })
        .collect()
}

/// Every tree's routes from the summaries (medians), in file-count order.
pub fn routes(rs: &ResultSet) -> Vec<TreeRoutes> {
    let mut keys: Vec<(u64, u64, String)> = Vec::new();
    for s in rs.summaries.iter().filter(|s| s.op == "loose") {
        if !keys.iter().any(|k| k.2 == s.tree_key) {
            keys.push((s.tree_files, s.tree_bytes, s.tree_key.clone()));
        }
    }
    keys.sort();
    let mut out = Vec::new();
    for (files, bytes, key) in keys {
        let Some(loose_s) = median(rs, "loose", &key) else { continue };
        let mut routes = Vec::new();
        for n in pack::NAMES {
            let (Some(p), Some(c)) = (median(rs, &format!("{n}:pack"), &key), median(rs, &format!("{n}:copy"), &key))
            else {
                continue;
            };
            let space = median_space(rs, &format!("{n}:pack"), &key);
            let runs = |steps: &[&str]| {
                let ops: Vec<String> = steps.iter().map(|s| format!("{n}:{s}")).collect();
                route_runs(rs, &key, &format!("{n}:pack"), &ops)
            };
            if let Some(u) = median(rs, &format!("{n}:unpack"), &key) {
                routes.push(Route {
                    container: n.into(),
                    access: "unpack".into(),
                    pack_s: p,
                    per_copy_s: c + u,
                    container_bytes: space,
                    runs: runs(&["copy", "unpack"]),
                });
            }
            let m = ["mount", "read", "umount"].map(|s| median(rs, &format!("{n}:{s}"), &key));
            if let [Some(a), Some(b), Some(d)] = m {
                routes.push(Route {
                    container: n.into(),
                    access: "mount".into(),
                    pack_s: p,
                    per_copy_s: c + a + b + d,
                    container_bytes: space,
                    runs: runs(&["copy", "mount", "read", "umount"]),
                });
            }
        }
        let loose_bytes = median_space(rs, "loose", &key);
        let loose_runs = per_run(rs, "loose", &key).into_iter().map(|(_, s)| s).collect();
        out.push(TreeRoutes { key, files, bytes, loose_s, loose_bytes, routes, loose_runs });
    }
    out
}

/// Smallest file count from which `route` beats loose at every larger rung too, with k
/// copies: Some((rung before, rung)) — None when it never does (or on one tree only).
pub fn pays_from(trees: &[TreeRoutes], label: &str, k: u32) -> Option<(Option<u64>, u64)> {
    let wins: Vec<(u64, Option<bool>)> = trees
        .iter()
        .map(|t| (t.files, t.routes.iter().find(|r| r.label() == label).map(|r| r.total(k) < t.loose_s * k as f64)))
        .collect();
    let mut from = None;
    for (i, (files, w)) in wins.iter().enumerate().rev() {
        match w {
            Some(true) => from = Some((i.checked_sub(1).map(|j| wins[j].0), *files)),
            _ => break,
        }
    }
    from
}

/// The tables, where each route pays off, and a recommendation with its reasons.
pub fn report(rs: &ResultSet, k: u32) -> String {
    use crate::report::table::{new_table, right_align};
    let trees = routes(rs);
    let mut out = String::new();
    if trees.is_empty() {
        return "no complete measurement to report\n".into();
    }
    let mut t = new_table(
        ["files", "route", "pack", "per copy", "1 copy", "×", &format!("{k} copies"), "×", "space"]
            .map(String::from)
            .to_vec(),
    );
    let sz = |b: Option<f64>| b.map(fmt_size).unwrap_or_else(|| "–".into());
    for tr in &trees {
        let lk = tr.loose_s * k as f64;
        t.add_row(vec![
            tr.files.to_string(),
            "loose".into(),
            "–".into(),
            fmt_secs(tr.loose_s),
            fmt_secs(tr.loose_s),
            "1".into(),
            fmt_secs(lk),
            "1".into(),
            sz(tr.loose_bytes),
        ]);
        for r in &tr.routes {
            let (one, many) = (r.total(1), r.total(k));
            t.add_row(vec![
                String::new(),
                r.label(),
                fmt_secs(r.pack_s),
                fmt_secs(r.per_copy_s),
                fmt_secs(one),
                sig3(tr.loose_s / one),
                fmt_secs(many),
                sig3(lk / many),
                sz(r.container_bytes),
            ]);
        }
    }
    right_align(&mut t, 2);
    out.push_str(&format!("{t}\n"));
    out.push_str("per copy: copy the container + unpack it, or mount + read every file + unmount; × = loose / packed\n(above 1 packing is faster); space: the container, or what the loose copy took; medians of complete runs\n\n");
    let labels: Vec<String> = trees.last().map(|t| t.routes.iter().map(Route::label).collect()).unwrap_or_default();
    if trees.len() > 1 {
        out.push_str("where packing starts to pay (it pays at this rung and every larger one):\n");
        let say = |l: &str, k: u32| match pays_from(&trees, l, k) {
            None => "never in this range".to_string(),
            Some((None, f)) => format!("from {f} files (the smallest rung)"),
            Some((Some(p), f)) => format!("between {p} and {f} files"),
        };
        let paying: Vec<&String> =
            labels.iter().filter(|l| pays_from(&trees, l, 1).is_some() || pays_from(&trees, l, k).is_some()).collect();
        for l in &paying {
            out.push_str(&format!("  {l}: 1 copy {}; {k} copies {}\n", say(l, 1), say(l, k)));
        }
        if paying.is_empty() {
            out.push_str(&format!("  no route, for 1 copy or {k} copies, in this range\n"));
        } else if paying.len() < labels.len() {
            out.push_str("  the other routes: never in this range\n");
        }
        out.push('\n');
    }
    out.push_str(&recommend(&trees, k));
    out
}

/// The fastest way for k copies of the largest tree, and why.
pub fn recommend(trees: &[TreeRoutes], k: u32) -> String {
    let Some(big) = trees.last() else { return String::new() };
    let loose_k = big.loose_s * k as f64;
    let best = big.routes.iter().min_by(|a, b| a.total(k).total_cmp(&b.total(k)));
    let mut s = format!("recommendation for {} files ({}), {k} copies: ", big.files, fmt_size(big.bytes as f64));
    match best {
        Some(r) if r.total(k) < loose_k => {
            s.push_str(&format!(
                "pack into {} and {} at the destination: {} against {} loose ({}× faster).\n",
                r.container,
                if r.access == "mount" { "mount it (read-only)" } else { "unpack it" },
                fmt_secs(r.total(k)),
                fmt_secs(loose_k),
                sig3(loose_k / r.total(k))
            ));
            s.push_str(&format!(
                "  why: packing costs {} once; each copy then costs {} instead of {} loose",
                fmt_secs(r.pack_s),
                fmt_secs(r.per_copy_s),
                fmt_secs(big.loose_s)
            ));
            if r.total(1) >= big.loose_s {
                s.push_str(&format!(
                    " (for a single copy loose is faster: {} vs {})",
                    fmt_secs(big.loose_s),
                    fmt_secs(r.total(1))
                ));
            }
            if let (Some(c), Some(l)) = (r.container_bytes, big.loose_bytes) {
                s.push_str(&format!(
                    "; the container takes {} against {} for the loose tree",
                    fmt_size(c),
                    fmt_size(l)
                ));
            }
            s.push_str(".\n");
            if r.access == "mount" {
                s.push_str("  a mounted container is read-only: unpack it (slower) if the files must change.\n");
            }
        }
        Some(r) => {
            s.push_str(&format!(
                "copy loose: {} against {} for the fastest container route, {} — packing costs {} and each copy of it {}, more than the {} a loose copy takes.\n",
                fmt_secs(loose_k),
                fmt_secs(r.total(k)),
                r.label(),
                fmt_secs(r.pack_s),
                fmt_secs(r.per_copy_s),
                fmt_secs(big.loose_s)
            ));
        }
        None => s.push_str("no container route completed.\n"),
    }
    if let Some(r) = best {
        s.push_str(&spread_note(big, r, k));
    }
    s
}

/// A note when the runs of the chosen route and of loose overlap (k copies): the
/// medians then differ by less than the run-to-run spread.
fn spread_note(t: &TreeRoutes, r: &Route, k: u32) -> String {
    let range = |v: &[f64]| -> Option<(f64, f64)> {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (v.len() > 1).then_some((lo, hi))
    };
    let packed: Vec<f64> = r.runs.iter().map(|(p, c)| p + k as f64 * c).collect();
    let loose: Vec<f64> = t.loose_runs.iter().map(|l| l * k as f64).collect();
    match (range(&packed), range(&loose)) {
        (Some((a, b)), Some((c, d))) if a <= d && c <= b => format!(
            "  but the runs overlap ({}: {}–{}, loose: {}–{} for {k} copies): the difference is within the run-to-run spread; more --runs would settle it.\n",
            r.label(),
            fmt_secs(a),
            fmt_secs(b),
            fmt_secs(c),
            fmt_secs(d)
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: u64, loose_s: f64, per_copy_s: f64) -> TreeRoutes {
        let r = Route {
            container: "tar".into(),
            access: "unpack".into(),
            pack_s: 1.0,
            per_copy_s,
            container_bytes: Some(100.0),
            runs: vec![(1.0, per_copy_s), (1.0, per_copy_s * 1.1)],
        };
        TreeRoutes {
            key: files.to_string(),
            files,
            bytes: 1 << 20,
            loose_s,
            loose_bytes: Some(200.0),
            routes: vec![r],
            loose_runs: vec![loose_s, loose_s * 1.05],
        }
    }

    #[test]
    fn pays_from_the_rung_after_which_it_always_wins() {
        // 1 copy: 1 + per_copy against loose; wins at 64 (3.5 < 4) and 256 only.
        let t = vec![tree(4, 0.1, 0.05), tree(16, 2.0, 1.5), tree(64, 4.0, 2.5), tree(256, 9.0, 3.0)];
        assert_eq!(pays_from(&t, "tar (unpack)", 1), Some((Some(16), 64)));
        // 10 copies: 1 + 10·per_copy against 10·loose: wins from 16 (16 < 20).
        assert_eq!(pays_from(&t, "tar (unpack)", 10), Some((Some(4), 16)));
        // A win followed by a loss at a larger rung is no pay-off point.
        let t = vec![tree(4, 9.0, 0.1), tree(16, 0.1, 0.1)];
        assert_eq!(pays_from(&t, "tar (unpack)", 1), None);
        let t = vec![tree(4, 9.0, 0.1), tree(16, 9.0, 0.1)];
        assert_eq!(pays_from(&t, "tar (unpack)", 1), Some((None, 4)));
        assert_eq!(pays_from(&t, "squashfs (mount)", 1), None);
    }

    #[test]
    fn recommendation_says_why() {
        let r = recommend(&[tree(256, 9.0, 3.0)], 10);
        assert!(r.contains("pack into tar and unpack it"), "{r}");
        assert!(r.contains("packing costs 1.00 s once; each copy then costs 3.00 s instead of 9.00 s"), "{r}");
        assert!(!r.contains("overlap"), "{r}");
        // 1 + 10·0.95 = 10.5 (runs 10.5–11.45) against loose 10–10.5: overlapping runs.
        let r = recommend(&[tree(256, 1.0, 0.95)], 10);
        assert!(r.contains("but the runs overlap"), "{r}");
        let r = recommend(&[tree(256, 1.0, 3.0)], 10);
        assert!(r.starts_with("recommendation for 256 files (1 MiB), 10 copies: copy loose"), "{r}");
    }
}
