//! `manyfiles plan`: for a tree's real file sizes, the space every cluster size would
//! allocate and waste, the predicted write time per cluster size (from a clusters
//! experiment's models), and a recommendation with its reasoning. Pure computation.

use super::model::Prediction;
use super::predict::Shape;
use crate::error::{Error, Result};
use crate::fs::walk::{self, Kind};
use crate::results::ResultSet;
use crate::signals;
use crate::storage::allocation::{Allocation, DirNames, Layout, allocate, utf16_units};
use crate::tree::inventory::Inventory;
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, StatxFlags, statx};
use serde::Serialize;
use std::path::Path;
use std::sync::Mutex;

/// Slack share of the data up to which a larger cluster is considered affordable.
pub const AFFORDABLE_SLACK: f64 = 0.05;

/// Where the file sizes come from.
pub enum Source {
    /// Every regular file's size and name length, and every directory's entry names,
    /// read by walking the tree.
    Sizes { shape: Shape, files: Vec<(u16, u64)>, dirs: Vec<DirNames> },
    /// An inventory: exact for the cluster sizes it holds; it has no names, so no
    /// file system's directories and metadata can be counted from it.
    Inventory(Box<Inventory>),
}

impl Source {
    pub fn shape(&self) -> Shape {
        match self {
            Source::Sizes { shape, .. } => *shape,
            Source::Inventory(i) => Shape::from(i.as_ref()),
        }
    }

    /// What the tree takes in clusters of `cluster` bytes on `layout` (an empty file
    /// takes none); None where the source cannot say.
    pub fn allocated(&self, layout: Layout, cluster: u64) -> Option<Allocation> {
        match (self, layout) {
            (Source::Sizes { files, dirs, .. }, _) => Some(allocate(layout, cluster, files, dirs)),
            (Source::Inventory(i), Layout::Files) => {
                i.per_cluster_allocated(cluster).map(|files_bytes| Allocation { files_bytes, metadata_bytes: 0 })
            }
            (Source::Inventory(_), _) => None,
        }
    }
}

/// What the walk gathers.
#[derive(Default)]
struct Walked {
    files: Vec<(u16, u64)>,
    dirs: Vec<DirNames>,
    unreadable: u64,
    /// Σ files-per-directory².
    dir_sq: f64,
    max_files_per_dir: u64,
}

/// Sizes and name lengths of every regular file below `path` (symlinks are not
/// followed, hard links count once per link, as in the inventory), every directory's
/// entry names, with the tree's counts.
pub fn walk_sizes(path: &Path, threads: usize) -> Result<Source> {
    let root = walk::open_root(path)
        .map_err(|e| Error::bad("PATH", format!("{}: cannot open as a directory: {e}", path.display())))?;
    let acc = Mutex::new(Walked::default());
    walk::par_tasks(threads, vec![walk::DirTask::Root(root)], |t: walk::DirTask, spawn| {
        if signals::pending() != 0 {
            return;
        }
        let Ok((fd, entries)) = t.open().and_then(|fd| walk::read_dir(fd.as_fd()).map(|e| (fd, e))) else {
            let mut a = acc.lock().expect("walk lock");
            a.dirs.push(DirNames::default());
            a.unreadable += 1;
            return;
        };
        let mut files = Vec::new();
        let mut names = DirNames::default();
        for e in entries {
            let units = utf16_units(e.name.as_bytes());
            names.add(units);
            match e.kind {
                Kind::File => {
                    if let Ok(st) = statx(&*fd, &e.name, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::SIZE) {
                        files.push((units.min(u16::MAX as u64) as u16, st.stx_size));
                    }
                }
                Kind::Dir => {
                    spawn(walk::DirTask::Below(std::sync::Arc::clone(&fd), e.name));
                }
                _ => {}
            }
        }
        let mut a = acc.lock().expect("walk lock");
        let n = files.len() as u64;
        a.dir_sq += (n as f64) * (n as f64);
        a.max_files_per_dir = a.max_files_per_dir.max(n);
        a.files.extend(files);
        a.dirs.push(names);
    });
    let signal = signals::pending();
    if signal != 0 {
        return Err(Error::Interrupted { signal });
    }
    let w = acc.into_inner().expect("walk finished");
    if w.unreadable > 0 {
        eprintln!("manyfiles: warning: {} directories could not be read; their files are not counted", w.unreadable);
    }
    let shape = Shape {
        files: w.files.len() as u64,
        bytes: w.files.iter().map(|f| f.1).sum(),
        dirs: w.dirs.len() as u64,
        dir_sq: w.dir_sq,
        max_files_per_dir: w.max_files_per_dir,
    };
    Ok(Source::Sizes { shape, files: w.files, dirs: w.dirs })
}

#[derive(Debug, Clone, Serialize)]
pub struct ClusterRow {
    pub cluster_bytes: u64,
    /// The files' clusters plus, with a file system named, its directories and
    /// metadata records (`metadata_bytes`): what `df` shows after the copy.
    pub allocated_bytes: u64,
    pub metadata_bytes: u64,
    pub slack_bytes: u64,
    /// Share of the allocated space not holding data.
    pub slack_share: f64,
    /// Predicted time to write the tree on that cluster size (create op), when a model
    /// for a target of that block size was given.
    pub write_time: Option<Prediction>,
    /// Target the prediction came from.
    pub model_target: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    #[serde(flatten)]
    pub shape: Shape,
    /// Which file system's directories and metadata are counted (`files`: none).
    pub layout: Layout,
    pub rows: Vec<ClusterRow>,
    pub recommended_cluster: Option<u64>,
    pub reasoning: String,
}

/// Cluster sizes the source cannot answer exactly (only an inventory has such).
pub fn unsupported(src: &Source, clusters: &[u64]) -> Vec<u64> {
    clusters.iter().copied().filter(|&c| src.allocated(Layout::Files, c).is_none()).collect()
}

/// The create model of a target formatted with `cluster`-byte blocks (one that is an
/// answer: `analysis::model::check`).
fn model_for(rs: &ResultSet, cluster: u64) -> Option<&crate::results::ModelRow> {
    rs.models.iter().find(|m| {
        m.op == "create" && m.usable() && rs.targets.iter().any(|t| t.id == m.target && t.block_size == cluster)
    })
}

pub fn plan(src: &Source, layout: Layout, clusters: &[u64], model: Option<&ResultSet>) -> Plan {
    let shape = src.shape();
    let rows: Vec<ClusterRow> = clusters
        .iter()
        .filter_map(|&c| {
            let a = src.allocated(layout, c)?;
            let allocated = a.files_bytes + a.metadata_bytes;
            let slack = allocated.saturating_sub(shape.bytes);
            let m = model.and_then(|rs| model_for(rs, c));
            Some(ClusterRow {
                cluster_bytes: c,
                allocated_bytes: allocated,
                metadata_bytes: a.metadata_bytes,
                slack_bytes: slack,
                slack_share: if allocated > 0 { slack as f64 / allocated as f64 } else { 0.0 },
                write_time: m.map(|m| shape.predict(&m.model, 1)),
                model_target: m.map(|m| m.target.clone()),
            })
        })
        .collect();
    let (recommended_cluster, reasoning) = recommend(&rows, shape.bytes);
    Plan { shape, layout, rows, recommended_cluster, reasoning }
}

/// With write times: the least slack among the clusters whose time is not told apart
/// from the fastest (overlapping 95% intervals). Without: the largest cluster whose
/// slack stays within 5% of the data (larger clusters mean fewer allocations and less
/// fragmentation for big files); if none, the least slack.
fn recommend(rows: &[ClusterRow], data: u64) -> (Option<u64>, String) {
    use crate::units::{fmt_secs, fmt_size, sig3};
    if rows.is_empty() {
        return (None, "no cluster size to compare".into());
    }
    let least_slack = rows.iter().min_by_key(|r| (r.slack_bytes, r.cluster_bytes)).expect("non-empty");
    let timed: Vec<&ClusterRow> = rows.iter().filter(|r| r.write_time.is_some()).collect();
    let range = |p: &Prediction| p.interval95.unwrap_or([p.seconds, p.seconds]);
    if let Some(fastest) =
        timed.iter().min_by(|a, b| a.write_time.unwrap().seconds.total_cmp(&b.write_time.unwrap().seconds))
    {
        let [_, fast_hi] = range(&fastest.write_time.expect("timed"));
        let tied: Vec<&&ClusterRow> =
            timed.iter().filter(|r| range(&r.write_time.expect("timed"))[0] <= fast_hi).collect();
        let pick = tied.iter().min_by_key(|r| (r.slack_bytes, r.cluster_bytes)).expect("fastest is tied with itself");
        let t = pick.write_time.expect("timed");
        let mut why = format!(
            "{} writes this tree in a predicted {} and wastes {} ({}% of its allocation)",
            fmt_size(pick.cluster_bytes as f64),
            fmt_secs(t.seconds),
            fmt_size(pick.slack_bytes as f64),
            sig3(pick.slack_share * 100.0)
        );
        if tied.len() > 1 {
            why.push_str(&format!(
                "; {} cluster sizes are not told apart from the fastest by their 95% intervals, and it wastes the least of them",
                tied.len()
            ));
        } else {
            why.push_str("; it is the fastest, outside the others' 95% intervals");
        }
        if timed.len() < rows.len() {
            why.push_str(&format!(
                "; cluster sizes without a model: {} (judged by space only)",
                rows.len() - timed.len()
            ));
        }
        return (Some(pick.cluster_bytes), why);
    }
    let affordable = rows.iter().filter(|r| (r.slack_bytes as f64) <= AFFORDABLE_SLACK * data as f64);
    match affordable.max_by_key(|r| r.cluster_bytes) {
        Some(r) => (
            Some(r.cluster_bytes),
            format!(
                "{} is the largest cluster size whose slack ({}, {}% of the allocation) stays within {}% of the data; \
                 larger clusters mean fewer allocations for big files. No write-time model was given (--model from a clusters experiment)",
                fmt_size(r.cluster_bytes as f64),
                fmt_size(r.slack_bytes as f64),
                sig3(r.slack_share * 100.0),
                AFFORDABLE_SLACK * 100.0
            ),
        ),
        None => (
            Some(least_slack.cluster_bytes),
            format!(
                "every cluster size wastes more than {}% of the data; {} wastes the least ({}). No write-time model was given",
                AFFORDABLE_SLACK * 100.0,
                fmt_size(least_slack.cluster_bytes as f64),
                fmt_size(least_slack.slack_bytes as f64)
            ),
        ),
    }
}
