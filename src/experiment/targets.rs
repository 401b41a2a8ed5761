//! The targets of an experiment, alive for its duration: an existing directory, or a
//! managed test file system (image → loop → mkfs → mount) formatted afresh before every
//! trial unless `reuse`, or a bucket of the user's (`--target s3://BUCKET/PREFIX`,
//! `super::user_store`: the native ops only, below a prefix of the run's own). Each
//! target has its own run directory; all checks happen before anything is created.

use super::user_store::{self, UserStore};
use super::{check_target, estimate_space};
use crate::engine::object::is_url;
use crate::error::{Error, Result};
use crate::measure::TargetWatch;
use crate::measure::diskstats::DeviceWatch;
use crate::ranks;
use crate::storage::TargetInfo;
use crate::storage::fsspec::FsSpec;
use crate::storage::managed::ManagedFs;
use crate::storage::rundir::RunDir;
use crate::tree::TreeSpec;
use crate::tree::layout::Shape;
use crate::units::fmt_size;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq)]
pub enum TargetSpec {
    Dir(PathBuf),
    Fs(FsSpec),
}

pub struct LiveTarget {
    pub id: String,
    pub info: TargetInfo,
    /// The block device under the target (None: tmpfs, a share, or not in
    /// /proc/diskstats) and the processes serving it, watched around every phase.
    pub watch: TargetWatch,
    // Field order is drop order: the run directory (fds inside the mount) must go
    // before the file system is unmounted.
    rundir: Option<RunDir>,
    managed: Option<ManagedFs>,
    /// `--target s3://…`: a bucket of the user's (its scratch directory, holding the run
    /// directories, goes after them).
    store: Option<UserStore>,
    keep: bool,
    reuse: bool,
    trials: u64,
    /// Formatted by a timed `reformat` since the last trial began.
    fresh: bool,
}

/// The pause between two blocks of runs ([`LiveTarget::new_block`]): writeback and
/// daemons the last block started settle, as they would between two invocations.
const BLOCK_PAUSE: std::time::Duration = std::time::Duration::from_millis(250);

/// Smallest image each type formats into (mkfs refuses smaller), in bytes.
fn min_image(spec: &FsSpec) -> u64 {
    crate::storage::managed::min_image_bytes(spec)
}

/// Default image floor: small images change how file systems lay themselves out
/// (btrfs mixed block groups run out of space early), so never go below this.
const DEFAULT_IMAGE_FLOOR: u64 = 512 << 20;

/// What a managed image is made for: its size and the files and directories it must hold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImageSize {
    pub bytes: u64,
    pub entries: u64,
}

/// Image size: `fs_size` if given (checked against the largest tree), else twice the
/// largest tree's estimated footprint, at least 512 MiB. The footprint counts data in
/// whole blocks and each entry's metadata for this type (inodes, MFT records, btrfs
/// inline data), times `copies` (a copy or sync op writes a second tree beside the first).
pub(crate) fn image_size(spec: &FsSpec, trees: &[TreeSpec], fs_size: Option<u64>, copies: u64) -> Result<ImageSize> {
    // The allocation unit the file system will use: exfatprogs picks 32 KiB clusters
    // for volumes from 256 MiB to 32 GiB; the others default to 4 KiB here.
    let default_block = if spec.fs_type == crate::storage::fsspec::FsType::Exfat { 32 << 10 } else { 4096 };
    let block = spec.block.unwrap_or(default_block).max(512);
    let probe = TargetInfo {
        id: String::new(),
        kind: "managed".into(),
        path: PathBuf::new(),
        fs_type: String::new(),
        mount_point: String::new(),
        mount_source: String::new(),
        mount_options: String::new(),
        block_size: block,
        free_bytes: 0,
        total_bytes: 0,
        read_only: false,
        managed: None,
        device: None,
        label: String::new(),
    };
    // Entries: files and directories of the largest tree (times copies), the tree roots
    // and the run directory.
    let entries = trees.iter().map(|t| t.files + Shape::of(t).dir_count()).max().unwrap_or(0) * copies + 64;
    let overhead = crate::storage::managed::entry_overhead(spec.fs_type);
    let data = trees.iter().map(|t| estimate_space(&probe, t)).max().unwrap_or(0) * copies;
    let need = data.saturating_add(entries.saturating_mul(overhead));
    let bytes = match fs_size {
        Some(sz) => {
            // File systems keep ~10-20% for their own metadata and journal.
            if need > sz / 10 * 8 {
                return Err(Error::bad(
                    "--fs-size",
                    format!(
                        "{} is too small for {}: the largest tree needs about {}; use at least {}",
                        fmt_size(sz as f64),
                        spec.label(),
                        fmt_size(need as f64),
                        fmt_size((need / 8 * 10) as f64)
                    ),
                ));
            }
            if sz < min_image(spec) {
                return Err(Error::bad(
                    "--fs-size",
                    format!("{} needs an image of at least {}", spec.label(), fmt_size(min_image(spec) as f64)),
                ));
            }
            sz
        }
        // Twice the need; XFS three times: a 2x xfs image ran out of space at a third of a
        // 65,536-file tree once (CI, session 14, tests/fs_sizing.rs); not reproduced, and
        // XFS freeing the previous tree's blocks in the background is the likely cause.
        None => {
            let headroom = if spec.fs_type == crate::storage::fsspec::FsType::Xfs { 3 } else { 2 };
            need.saturating_mul(headroom).max(DEFAULT_IMAGE_FLOOR).max(min_image(spec)).div_ceil(1 << 20) << 20
        }
    };
    Ok(ImageSize { bytes, entries })
}

impl LiveTarget {
    /// Check every target, then create them (managed ones are formatted and mounted).
    pub fn open_all(
        specs: &[TargetSpec],
        trees: &[TreeSpec],
        fs_size: Option<u64>,
        copies: u64,
        keep: bool,
        reuse: bool,
    ) -> Result<Vec<LiveTarget>> {
        // 1. Checks, nothing created. Under MPI every rank checks its own targets and all
        //    agree before any creates anything (one rank's bad target stops all cleanly).
        let (sizes, fs_specs) = ranks::agree(Self::check_all(specs, trees, fs_size, copies))?;
        // 2. Create; on failure the ones made so far are torn down by drop (on every
        //    rank: they agree first).
        let _ = fs_specs;
        let mut targets = ranks::agree(Self::create_all(specs, sizes, keep, reuse))?;
        // 3. --shared-dir under MPI: the other ranks work in rank 0's run directories.
        if ranks::shared_dir() {
            let mine: Vec<String> = targets
                .iter()
                .map(|t| t.rundir.as_ref().map(|r| r.path.display().to_string()).unwrap_or_default())
                .collect();
            let all = ranks::all_gather(mine.join("\n").as_bytes());
            let roots = String::from_utf8_lossy(&all[0]).into_owned();
            let attached = (|| {
                if !ranks::is_root() {
                    for (t, p) in targets.iter_mut().zip(roots.split('\n')) {
                        t.rundir = Some(RunDir::attach(std::path::Path::new(p))?);
                    }
                }
                Ok(())
            })();
            ranks::agree(attached)?;
        }
        Ok(targets)
    }

    fn check_all(
        specs: &[TargetSpec],
        trees: &[TreeSpec],
        fs_size: Option<u64>,
        copies: u64,
    ) -> Result<(Vec<ImageSize>, Vec<FsSpec>)> {
        let mut sizes = Vec::new();
        let mut fs_specs = Vec::new();
        for s in specs {
            match s {
                TargetSpec::Dir(p) if is_url(p) => {
                    if ranks::size() > 1 {
                        return Err(Error::bad("--target", "a bucket is a target in one process only, not under MPI"));
                    }
                    if let Some(url) = user_store::target_url(p)? {
                        UserStore::check(&url)?;
                    }
                }
                TargetSpec::Dir(p) => {
                    check_target(&ranks::expand(p), trees)?;
                }
                TargetSpec::Fs(_) if ranks::size() > 1 => {
                    return Err(Error::bad(
                        "--fs",
                        "managed test file systems are refused under MPI (each node would format its own); \
                         use --target DIR on the shared file system",
                    ));
                }
                TargetSpec::Fs(f) => {
                    // A real device's size is its own (filled in below, after the root check);
                    // the tree's entries still size ext's inode table.
                    let dev = f.device().is_some();
                    let mut s = image_size(f, trees, if dev { None } else { fs_size }, copies.max(1))?;
                    if dev {
                        s.bytes = 0;
                    }
                    sizes.push(s);
                    fs_specs.push(f.clone());
                }
            }
        }
        if !fs_specs.is_empty() {
            ManagedFs::preflight(&fs_specs, sizes.iter().map(|s| s.bytes).max().unwrap_or(0))?;
            // `@dev:` targets: every safety interlock (crate::storage::device).
            for (size, dev) in sizes.iter_mut().zip(crate::storage::device::check_all(&fs_specs, fs_size)?) {
                if let Some(d) = dev {
                    size.bytes = d.size_bytes;
                }
            }
        }
        Ok((sizes, fs_specs))
    }

    fn create_all(specs: &[TargetSpec], sizes: Vec<ImageSize>, keep: bool, reuse: bool) -> Result<Vec<LiveTarget>> {
        let mut out: Vec<LiveTarget> = Vec::new();
        let mut ids: Vec<String> = Vec::new();
        let mut sizes = sizes.into_iter();
        for s in specs {
            if let TargetSpec::Dir(p) = s
                && let Some(url) = user_store::target_url(p)?
            {
                let store = UserStore::open(&url)?;
                let scheme = url.provider.name();
                eprintln!(
                    "manyfiles: {url}: this run writes only below {scheme}://{}/{}",
                    url.bucket, store.run_prefix
                );
                let id = unique_id(scheme, &mut ids);
                let rundir = Some(RunDir::create(store.scratch(), keep)?);
                let watch = TargetWatch { device: None, serving: Vec::new() };
                let (info, store) = (store.info(&id), Some(store));
                out.push(LiveTarget {
                    id,
                    info,
                    watch,
                    managed: None,
                    rundir,
                    store,
                    keep,
                    reuse,
                    trials: 0,
                    fresh: false,
                });
                continue;
            }
            let (base_id, managed, path) = match s {
                TargetSpec::Dir(p) => ("dir".to_string(), None, ranks::expand(p)),
                TargetSpec::Fs(f) => {
                    let size = sizes.next().unwrap_or(ImageSize { bytes: 0, entries: 0 });
                    let m = ManagedFs::create_for(f, size.bytes, size.entries)?;
                    let mp = m.mount_point().to_path_buf();
                    (f.label(), Some(m), mp)
                }
            };
            let id = unique_id(&base_id, &mut ids);
            let mut info =
                TargetInfo::probe(&id, &path).map_err(|e| Error::failed(format!("{}: {e}", path.display())))?;
            if let Some(m) = &managed {
                info.kind = "managed".into();
                info.managed = Some(m.details().clone());
                info.label = base_id.clone();
            }
            // The canonical path: a --target given as a symlink is the user's choice to follow.
            // With --shared-dir rank 0 makes the run directory; the others attach to it.
            let rundir = if ranks::makes_dirs() { Some(RunDir::create(&info.path, keep)?) } else { None };
            // A FUSE file system has an anonymous st_dev: its loop device is named instead.
            let device = managed.as_ref().and_then(|m| m.details().device.clone());
            let watch =
                TargetWatch { device: DeviceWatch::for_target(&info.path, device.as_deref()), serving: Vec::new() };
            info.device = watch.device.as_ref().map(|w| w.device().to_string());
            out.push(LiveTarget {
                id,
                info,
                watch,
                managed,
                rundir,
                store: None,
                keep,
                reuse,
                trials: 0,
                fresh: false,
            });
        }
        Self::set_labels(&mut out, &[]);
        Ok(out)
    }

    /// Name the targets: the user's `--label`s in order (an empty one keeps what the
    /// target is), then every label made distinct (`x`, `x#2`).
    pub fn set_labels(targets: &mut [LiveTarget], given: &[String]) {
        for (t, l) in targets.iter_mut().zip(given) {
            if !l.trim().is_empty() {
                t.info.label = l.trim().to_string();
            }
        }
        let mut labels: Vec<String> = targets.iter().map(|t| t.info.label.clone()).collect();
        crate::storage::distinct_labels(&mut labels);
        for (t, l) in targets.iter_mut().zip(labels) {
            t.info.label = l;
        }
    }

    /// The `reformat` op: format a managed file system afresh now (unmount, mkfs, mount,
    /// a new run directory); the next trial then starts on it without another format.
    pub fn reformat(&mut self) -> Result<()> {
        let Some(m) = self.managed.as_mut() else {
            return Err(Error::failed("reformat: not a managed file system"));
        };
        if let Some(mut rd) = self.rundir.take() {
            rd.set_keep(true); // the format takes it with everything in it
        }
        m.refresh()?;
        self.info.managed = Some(m.details().clone());
        self.rundir = Some(RunDir::create(&self.info.path, self.keep)?);
        self.fresh = true;
        Ok(())
    }

    /// Get ready for one trial: a managed file system is formatted afresh (except for
    /// the first trial, which gets the fresh format of its creation, or with `reuse`,
    /// or after a timed `reformat`).
    pub fn begin_trial(&mut self) -> Result<&RunDir> {
        if self.trials > 0 && !self.reuse && !std::mem::take(&mut self.fresh) {
            if let Some(m) = self.managed.as_mut() {
                if let Some(mut rd) = self.rundir.take() {
                    rd.set_keep(true); // the format below takes it with everything in it
                }
                m.refresh()?;
                self.info.managed = Some(m.details().clone());
                self.rundir = Some(RunDir::create(&self.info.path, self.keep)?);
            }
        }
        // A FUSE daemon (a share's client) is started anew with every mount: its CPU and
        // I/O are the file system's own (measure::machine), not a neighbour's.
        if let Some(m) = self.managed.as_ref() {
            self.watch.serving = m.serving_pids();
        }
        // Formatted afresh before the next trial: what this one leaves need not be removed.
        if let (Some(rd), Some(_), false) = (self.rundir.as_mut(), self.managed.as_ref(), self.reuse) {
            rd.set_disposable(true);
        }
        self.trials += 1;
        self.rundir.as_ref().ok_or_else(|| Error::failed("run directory missing"))
    }

    /// Start a new block of runs (`analysis::blocks`): undo what one invocation shares
    /// across its runs. A directory target gets a new run directory (a new inode, and
    /// on ext4 and XFS a new place on the device); a managed file system is formatted
    /// afresh before every trial anyway. Then the target's file system is synced, the
    /// page cache dropped where allowed (as root), and the machine left alone for a
    /// moment, as between two invocations. Under MPI, or with `--keep`, the run
    /// directory stays (ranks share it; the user asked to keep it).
    pub fn new_block(&mut self) -> Result<()> {
        let movable = self.managed.is_none() && !self.keep && ranks::size() == 1;
        if movable {
            if let Some(mut old) = self.rundir.take() {
                // The new one first, so it cannot take the old one's freed inode.
                let parent = self.store.as_ref().map_or(self.info.path.as_path(), |s| s.scratch());
                self.rundir = Some(RunDir::create(parent, self.keep)?);
                old.remove()
                    .map_err(|e| Error::failed(format!("cannot remove run directory {}: {e}", old.path.display())))?;
                old.set_keep(true); // removed above
            }
        }
        if let Some(rd) = self.rundir.as_ref() {
            let _ = rustix::fs::syncfs(rd.fd());
        }
        if rustix::process::geteuid().is_root() {
            let _ = crate::storage::cache::drop_caches();
        }
        std::thread::sleep(BLOCK_PAUSE);
        Ok(())
    }

    /// The run directory of the current trial (after [`LiveTarget::begin_trial`]).
    pub fn rundir(&self) -> Option<&RunDir> {
        self.rundir.as_ref()
    }

    /// Remove the run directory (unless kept) and tear a managed file system down.
    pub fn finish(mut self) -> Result<()> {
        if let Some(mut rd) = self.rundir.take() {
            if !ranks::makes_dirs() {
                rd.set_keep(true); // --shared-dir: rank 0's run directory, rank 0 removes it
            } else if self.keep {
                eprintln!("manyfiles: kept run directory {}", rd.path.display());
                rd.set_keep(true);
            } else {
                rd.remove()
                    .map_err(|e| Error::failed(format!("cannot remove run directory {}: {e}", rd.path.display())))?;
                rd.set_keep(true);
            }
        }
        if let Some(m) = self.managed.as_mut() {
            m.teardown()?;
        }
        if let Some(line) = self.store.as_ref().and_then(UserStore::leftovers) {
            eprintln!("{line}");
        }
        Ok(())
    }

    /// How a bucket of the user's (`--target s3://…`) is reached; None for the others.
    pub fn user_store(&self) -> Option<crate::experiment::user_store::Endpoint> {
        self.store.as_ref().map(UserStore::endpoint)
    }
}

/// `base`, or `base#2`, `base#3` … : the first not in `ids` (then added to it).
fn unique_id(base: &str, ids: &mut Vec<String>) -> String {
    let mut id = base.to_string();
    let mut k = 2;
    while ids.contains(&id) {
        id = format!("{base}#{k}");
        k += 1;
    }
    ids.push(id.clone());
    id
}

/// Refuse a bucket (`--target s3://…`) where `what` runs on files only.
pub fn refuse_urls(specs: &[TargetSpec], what: &str) -> Result<()> {
    match specs.iter().find(|s| matches!(s, TargetSpec::Dir(p) if is_url(p))) {
        Some(TargetSpec::Dir(p)) => Err(Error::bad(
            "--target",
            format!(
                "{}: {what} works on files; a bucket is a target of ladder and ops with \
                 --ops obj:put,obj:head,obj:list,obj:get,obj:delete,obj:delete-batch",
                p.display()
            ),
        )),
        _ => Ok(()),
    }
}
