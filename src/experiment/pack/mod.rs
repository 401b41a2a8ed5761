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
//!
//! What the results say (routes, the rung from which packing pays, the recommendation) is
//! computed from the finished ResultSet in `routes.rs`; its view (terminal, HTML section,
//! charts) is `view.rs`, its command line and config `command.rs`.

mod command;
pub mod object_routes;
pub mod objects;
pub mod routes;
pub mod view;

use super::{
    CacheMode, Driver, Order, Stop, TreeMeta, TrialOutcome, drive, make_durable, outputs, prepare_caches, watched,
};
use crate::engine::copy::verify::{Checks, compare};
use crate::error::{Error, Result};
use crate::experiment::all_ranks::{self, run_phase_on_every_rank};
use crate::fs::remove::remove_contents;
use crate::fs::walk;
use crate::measure::PhaseResult;
use crate::measure::TargetWatch;
use crate::measure::progress::Progress;
use crate::measure::provenance::Provenance;
use crate::ops::{self, CreateOptions, PhaseSettings};
use crate::pack::{self, Container, MountWith};
use crate::results::{ExperimentInfo, ResultSet, Until};
use crate::signals;
use crate::storage::rundir::RunDir;
use crate::tree::layout::Shape;
use crate::tree::{Prepared, SizeDist, TreeSpec};
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, Mode, mkdirat, unlinkat};
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};

use super::targets::{LiveTarget, TargetSpec};

/// Its entry in `experiment::kinds::KINDS`.
pub const KIND: super::kinds::Kind = super::kinds::Kind {
    name: "pack",
    mpi: false,
    run_file: false,
    command: Some(command::COMMAND),
    view: &view::VIEW,
};

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
    /// Who opens the containers at the destination (the recommendation only picks what
    /// they can open); None: from the destination's file system
    /// (`pack::Consumer::for_destination`).
    pub consumer: Option<pack::Consumer>,
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
    /// Onto an object store (`--dst-fs s3…`): the tar shard sizes compared with loose
    /// objects (`objects.rs`), the requests in flight, and `--prices FILE`.
    pub shard_sizes: Vec<u64>,
    /// `--shard-size` given (refused without an object-store destination).
    pub shard_sizes_given: bool,
    pub in_flight: usize,
    pub prices: Option<PathBuf>,
    /// `--dst-target s3://…` or `azblob://…`: an object store of the user's (the source target holds
    /// the run directory), reached through `--s3-via DIR` or the environment.
    pub dst_url: Option<crate::engine::object::ObjectUrl>,
    pub s3_via: Option<PathBuf>,
}

/// What `run` returns: the results and the containers skipped (with why).
pub struct PackOutcome {
    pub results: ResultSet,
    pub skipped: Vec<String>,
}

/// Containers that can run here, and a warning for each one skipped.
pub type Usable = (Vec<Box<dyn Container>>, Vec<String>);

/// The containers that can run here, and warnings for the ones skipped. A container the
/// user named whose tools are missing is an error (exit 2), naming the Debian package.
pub fn usable_containers(cfg: &PackExperiment) -> Result<Usable> {
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
                    if !crate::storage::managed::kernel_supports(fs) {
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
    if let Some(j) = cfg.json.as_ref().filter(|j| j.is_dir()) {
        return Err(Error::bad("--json", format!("{} is a directory", j.display())));
    }
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
            let state = crate::storage::registry::state_dir();
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
struct PackTrialSetup<'a> {
    cfg: &'a PackExperiment,
    containers: &'a [Box<dyn Container>],
    prepared: &'a [Prepared],
    metas: &'a [TreeMeta],
    settings: PhaseSettings,
    /// Onto an object store: its routes instead of loose copies and containers.
    objects: Option<objects::ObjectSetup<'a>>,
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
    watch: &'p TargetWatch,
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
            None => crate::storage::cache::CacheState::Warm,
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

/// What is watched during a trial's steps: the source target's and the destination's.
#[derive(Clone, Copy)]
struct Watches<'a> {
    src: &'a TargetWatch,
    dst: &'a TargetWatch,
}

/// One trial: make (or take) the source tree, copy it loose, then every container.
fn trial(setup: &PackTrialSetup, src_rd: &RunDir, dst_rd: &RunDir, ti: usize, watches: Watches) -> TrialOutcome {
    let tree = &setup.metas[ti];
    let mut s = Steps { done: Vec::new(), tree, threads: setup.cfg.threads, cache: setup.cfg.cache };
    let stop = (|| -> Option<Stop> {
        let src = match &setup.cfg.source {
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
                let op = ops::Create { opts: setup.cfg.create.clone() };
                let r =
                    run_phase_on_every_rank(&op, &setup.prepared[ti], fd.as_fd(), &setup.settings, &Progress::hidden());
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
        if let Some(o) = &setup.objects {
            let dir = dst_rd.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            try_stop!(objects::routes(&mut s, o, &src, &dir, watches));
            if matches!(setup.cfg.source, PackSource::Trees(_)) {
                try_stop!(untimed(remove_at(src_rd, c"tree")));
            }
            return None;
        }
        let threads = setup.cfg.threads;
        // Loose: the copy engine, file by file.
        let loose = dst_rd.path.join("loose");
        let before = used(&dst_rd.path);
        let io = Io { reads: Some(&src), writes: Some(&dst_rd.path), watch: watches.dst };
        let mut r = match s.measure("loose", io, || {
            ops::copy::engine(
                crate::engine::copy::Mode::Copy,
                &src,
                &loose,
                crate::engine::inflight::Plan::Fixed(threads),
            )
        }) {
            Ok(r) => r,
            Err(e) => return Some(Stop::Failed(e)),
        };
        r.space_used_bytes = before.zip(used(&dst_rd.path)).map(|(a, b)| b as i64 - a as i64);
        try_stop!(s.record("loose", r));
        try_stop!(untimed(same_tree(&src, &loose, "loose copy", threads)));
        try_stop!(untimed(remove_at(dst_rd, c"loose")));
        for c in setup.containers {
            try_stop!(one_container(setup, &mut s, c.as_ref(), &src, (src_rd, dst_rd), watches));
        }
        if matches!(setup.cfg.source, PackSource::Trees(_)) {
            try_stop!(untimed(remove_at(src_rd, c"tree")));
        }
        None
    })();
    (s.done, stop)
}

fn one_container(
    setup: &PackTrialSetup,
    s: &mut Steps,
    c: &dyn Container,
    src: &Path,
    (src_rd, dst_rd): (&RunDir, &RunDir),
    w: Watches,
) -> Option<Stop> {
    let n = c.name();
    let threads = setup.cfg.threads;
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
    if setup.cfg.unpack && c.can_unpack() {
        let out = match mkdir_at(dst_rd, c"unpacked") {
            Ok(p) => p,
            Err(e) => return Some(Stop::Failed(e)),
        };
        let io = Io { writes: Some(&out), ..dst_side };
        try_stop!(s.step(format!("{n}:unpack"), io, || c.unpack(&copied, &out, threads).unwrap_or(Ok(()))));
        try_stop!(untimed(same_tree(src, &out, &format!("{n} unpacked"), threads)));
        try_stop!(untimed(remove_at(dst_rd, c"unpacked")));
    }
    if setup.cfg.mount && c.kernel_fs().is_some() {
        let mut mounted = None;
        try_stop!(s.step(format!("{n}:mount"), dst_side, || {
            mounted = Some(pack::mount(c, &copied, setup.cfg.mount_with, &dst_rd.path.join("mnt"))?);
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

/// The ops a run records, in order: onto an object store its routes' steps; otherwise
/// loose, then every container's steps.
fn ops_recorded(cfg: &PackExperiment, containers: &[Box<dyn Container>], onto_objects: bool) -> Vec<String> {
    let mut ops_done = match onto_objects {
        true => objects::op_names(&objects::shardings(cfg)),
        false => vec!["loose".to_string()],
    };
    for c in containers {
        let n = c.name();
        ops_done.extend([format!("{n}:pack"), format!("{n}:copy")]);
        if cfg.unpack && c.can_unpack() {
            ops_done.push(format!("{n}:unpack"));
        }
        if cfg.mount && c.kernel_fs().is_some() {
            ops_done.extend([format!("{n}:mount"), format!("{n}:read"), format!("{n}:umount")]);
        }
    }
    ops_done
}

/// Run the experiment (see the module docs): results saved after every measurement,
/// targets torn down on every exit path.
pub fn run(cfg: &PackExperiment) -> Result<PackOutcome> {
    signals::install();
    check(cfg)?;
    // Onto an object store: its own routes (objects.rs), no container.
    let onto_objects = objects::check(cfg)?;
    let (containers, skipped) = if onto_objects { (Vec::new(), Vec::new()) } else { usable_containers(cfg)? };
    for w in &skipped {
        eprintln!("manyfiles: warning: {w}");
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
    let ops_done = ops_recorded(cfg, &containers, onto_objects);
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
        side_trees: Vec::new(),
    };
    let mut infos = vec![dst.info.clone()];
    infos.extend(src.as_ref().map(|s| s.info.clone()));
    let rs = ResultSet::new(Provenance::collect(cfg.command_line.clone()), experiment, infos);
    let prepared: Vec<Prepared> = trees.iter().map(|t| Prepared::new(t, cfg.create.direct)).collect();
    let onto = match onto_objects {
        true => Some(objects::endpoint_and_prices(cfg, &dst)?),
        false => None,
    };
    if let Some(url) = &cfg.dst_url {
        dst.id = format!("{} → {url}", dst.id.split('#').next().unwrap_or_default());
    }
    let shardings = objects::shardings(cfg);
    let setup = PackTrialSetup {
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
        objects: onto.as_ref().map(|(endpoint, prices, _claim)| objects::ObjectSetup {
            endpoint,
            shardings: &shardings,
            in_flight: cfg.in_flight,
            prices,
        }),
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
    let results = drive(&driver, vec![dst], rs, &metas, &progress, |dst_rd, ti, watch| match src.as_mut() {
        None => trial(&setup, dst_rd, dst_rd, ti, Watches { src: watch, dst: watch }),
        // The source's watch after its trial began: its serving processes are current.
        Some(s) => match (s.begin_trial().map(|_| ()), s.rundir()) {
            (Ok(()), Some(src_rd)) => trial(&setup, src_rd, dst_rd, ti, Watches { src: &s.watch, dst: watch }),
            (Ok(()), None) => (Vec::new(), Some(Stop::Failed("source run directory missing".into()))),
            (Err(e), _) => (Vec::new(), Some(Stop::Failed(e.to_string()))),
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
    results.warnings.retain(|w| !w.contains(crate::results::meaning::NOT_FITTED));
    Ok(PackOutcome { results, skipped })
}
