//! rm as an op: the whole `rm` engine (`crate::engine::rm`) over the generated tree,
//! root included, timed as one operation: what `manyfiles rm DIR` costs, where `delete`
//! unlinks the plan's names without reading a directory. `predict` calibrates with it so
//! that its delete prediction is checked by the command the user runs (issue 27).
//!
//! The engine removes the tree's root as well; an empty root is made again after the
//! timed work (outside the engine's time, inside the phase's: a mkdir) so that the trial
//! ends as after `delete`. It runs where `delete` runs, the last op of a trial, and the
//! two are not given together.

use super::{Op, Worker};
use crate::engine::rm::{Options, run};
use crate::tree::Unit;
use rustix::fd::AsRawFd;
use std::time::Instant;

pub struct Rm;

impl Op for Rm {
    fn name(&self) -> &'static str {
        "rm"
    }
    fn writes(&self) -> bool {
        true
    }

    /// All the work is here (the engine runs its own threads); units do nothing.
    fn before(&self, w: &mut Worker) {
        let t0 = Instant::now();
        // The tree's path from its root's descriptor, checked to be that directory (the
        // run directory is ours; a path swapped meanwhile is refused, not removed).
        let root_fd = w.shared.root;
        let tree = match std::fs::read_link(format!("/proc/self/fd/{}", root_fd.as_raw_fd())) {
            Ok(p) => p,
            Err(e) => return w.fail(format!("rm: cannot find the tree's path: {e}")),
        };
        let same = match (rustix::fs::fstat(root_fd), rustix::fs::lstat(&tree)) {
            (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
            _ => false,
        };
        if !same {
            return w.fail(format!("rm: {} is no longer the tree's root; nothing removed", tree.display()));
        }
        // As `manyfiles rm` runs without --threads (predict checks with it).
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let (threads, in_flight_max) = crate::engine::default_plan(cores, &[&tree]).threads_and_max();
        let o = Options {
            paths: vec![tree.clone()],
            threads,
            in_flight_max,
            cross_mounts: false,
            quiet: true,
            cold: false,
            durable: false,
            filter: None,
        };
        match run(&o) {
            Ok(s) => {
                w.dirs += s.dirs.saturating_sub(1);
                // No bytes moved (as delete): what was freed is not written.
                w.done_many(t0, s.files, 0);
                if s.failed > 0 {
                    w.errors += s.failed;
                }
                if s.interrupted {
                    return;
                }
                if let Err(e) = std::fs::create_dir(&tree) {
                    w.fail(format!("rm: cannot make the empty tree root again: {e}"));
                }
            }
            Err(e) => w.fail(format!("rm: {e}")),
        }
    }

    fn unit(&self, _w: &mut Worker, _u: Unit) {}
}
