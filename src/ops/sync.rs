//! The sync ops: `sync` (into an empty DST), `sync-nochange` (DST already equal: the
//! compare-only cost a periodic sync pays every time) and `sync-change:P` (P% of DST's
//! files made stale first, so the sync compares everything and copies P%).

use super::copy::engine;
use super::registry::PairOp;
use crate::engine::copy::Mode;
use crate::fs::walk::{self, Kind};
use crate::measure::PhaseResult;
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, Timespec, Timestamps, utimensat};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SyncKind {
    Empty,
    NoChange,
    /// Percentage of files changed in DST before the timed sync.
    Change(f64),
}

pub struct Sync {
    pub kind: SyncKind,
}

impl PairOp for Sync {
    fn name(&self) -> String {
        match self.kind {
            SyncKind::Empty => "sync".into(),
            SyncKind::NoChange => "sync-nochange".into(),
            SyncKind::Change(p) => format!("sync-change:{p}"),
        }
    }

    fn prepare(&self, src: &Path, dst: &Path, threads: usize) -> Result<(), String> {
        if self.kind == SyncKind::Empty {
            return Ok(());
        }
        let first = engine(Mode::Sync, src, dst, crate::engine::inflight::Plan::Fixed(threads));
        if !first.complete() {
            return Err(format!("the untimed first sync failed: {}", first.first_error.unwrap_or_default()));
        }
        if let SyncKind::Change(p) = self.kind {
            let want = (p * 10_000.0).round() as u64;
            // A small tree may get none picked (10% of 4 files): then it is a no-change sync.
            make_stale(dst, want, threads)?;
        }
        Ok(())
    }

    fn run(&self, src: &Path, dst: &Path, plan: crate::engine::inflight::Plan) -> PhaseResult {
        engine(Mode::Sync, src, dst, plan)
    }
}

/// Is the file named `name` one of the `per_million` in a million picked? A hash of the
/// name (FNV-1a), so the same tree gets the same files picked on every run.
pub fn picked(name: &[u8], per_million: u64) -> bool {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h % 1_000_000 < per_million
}

/// Give the picked files of DST an old mtime (2001-09-09), so a size + mtime sync sees
/// them as changed. Returns how many were touched.
pub fn make_stale(dst: &Path, per_million: u64, threads: usize) -> Result<u64, String> {
    let root = walk::open_root(dst).map_err(|e| format!("{}: {e}", dst.display()))?;
    let touched = AtomicU64::new(0);
    let first_err = std::sync::Mutex::new(None);
    let old = Timestamps {
        last_access: Timespec { tv_sec: 1_000_000_000, tv_nsec: 0 },
        last_modification: Timespec { tv_sec: 1_000_000_000, tv_nsec: 0 },
    };
    walk::par_tasks(threads, vec![walk::DirTask::Root(root)], |t: walk::DirTask, spawn| {
        let r = t.open().and_then(|dir| {
            for e in walk::read_dir(dir.as_fd())? {
                match e.kind {
                    Kind::Dir => spawn(walk::DirTask::Below(std::sync::Arc::clone(&dir), e.name)),
                    Kind::File if picked(e.name.to_bytes(), per_million) => {
                        utimensat(&dir, &e.name, &old, AtFlags::SYMLINK_NOFOLLOW)?;
                        touched.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {}
                }
            }
            Ok(())
        });
        if let Err(e) = r {
            first_err.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
        }
    });
    match first_err.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(format!("making files stale in {}: {e}", dst.display())),
        None => Ok(touched.into_inner()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_about_the_share_asked_for() {
        let n = (0..100_000u32).filter(|i| picked(format!("f{i:08}").as_bytes(), 100_000)).count();
        assert!((9_000..11_000).contains(&n), "{n} of 100000 picked for 10%");
        assert!((0..1000u32).all(|i| picked(format!("{i}").as_bytes(), 1_000_000)));
        assert!(!(0..1000u32).any(|i| picked(format!("{i}").as_bytes(), 0)));
    }
}
