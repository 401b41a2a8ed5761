//! scan / rescan / walk as ops: the whole `scan` engine (walk + statx + SQLite index) over
//! the generated tree, timed as one operation, so an experiment can compare the storage's
//! stat cost with the cost of indexing; `walk` is the engine without an index (what
//! `manyfiles scan DIR` does without `--db`: `predict` calibrates its scan with it). The index lives beside the tree in the run
//! directory (on the storage under test). `rescan` needs `scan` earlier in the same
//! trial and, on an unchanged tree, measures the diff against a full index.

use super::{Op, Worker};
use crate::engine::scan::{DbUrl, ScanConfig, scan};
use crate::tree::Unit;
use rustix::fd::AsRawFd;
use std::path::PathBuf;
use std::time::Instant;

pub struct Scan {
    pub rescan: bool,
    /// Write the SQLite index (scan, rescan); without it: `walk`.
    pub index: bool,
}

/// File name of the index, in the run directory next to the tree.
const INDEX: &str = "manyfiles-scan-index.sqlite";

impl Scan {
    /// The tree's path and its index's path, from the tree root's descriptor.
    fn paths(w: &Worker) -> std::io::Result<(PathBuf, PathBuf)> {
        let tree = std::fs::read_link(format!("/proc/self/fd/{}", w.shared.root.as_raw_fd()))?;
        let index = tree.parent().unwrap_or(&tree).join(INDEX);
        Ok((tree, index))
    }
}

impl Op for Scan {
    fn name(&self) -> &'static str {
        match (self.index, self.rescan) {
            (false, _) => "walk",
            (true, true) => "rescan",
            (true, false) => "scan",
        }
    }

    /// All the work is here (the engine runs its own walk threads); units do nothing.
    fn before(&self, w: &mut Worker) {
        let t0 = Instant::now();
        let (tree, index) = match Self::paths(w) {
            Ok(p) => p,
            Err(e) => return w.fail(format!("{}: cannot find the tree's path: {e}", self.name())),
        };
        if self.index && !self.rescan {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", index.display()));
            }
        } else if self.rescan && !index.exists() {
            return w.fail("rescan: no index (give scan before rescan in --ops)".into());
        }
        // As `manyfiles scan` runs without --threads (predict checks with it).
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let (threads, in_flight_max) = crate::engine::default_plan(cores, &[&tree]).threads_and_max();
        let cfg = ScanConfig {
            root: tree,
            db: self.index.then_some(DbUrl::Sqlite(index)),
            inventory: None,
            threads,
            in_flight_max,
            json: None,
            command_line: Vec::new(),
            cold: false,
            durable: false,
            filter: None,
        };
        match scan(&cfg) {
            Ok(r) => {
                w.dirs += r.dirs.saturating_sub(1); // the root is not counted (as create's)
                w.done_many(t0, r.files, r.bytes);
                if r.errors + r.denied + r.vanished > 0 {
                    w.errors += r.errors + r.denied + r.vanished;
                }
            }
            Err(e) => w.fail(format!("{}: {e}", self.name())),
        }
    }

    fn unit(&self, _w: &mut Worker, _u: Unit) {}
}
