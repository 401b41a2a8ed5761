//! Peers' results read as result sets, so `report` and `compare` draw them beside
//! manyfiles' (issue 42, item 5). Each peer is one file here, whose `read` says whether a
//! file's text is that tool's output and, if so, what it measured in manyfiles' terms;
//! [`PEERS`] lists them. A phase that is no manyfiles op is named in the set's notes with
//! the reason, never guessed. Every peer's set has targets of their own (`TOOL on
//! DIRECTORY (FILE)`), the tool's version and command line as provenance, and no machine
//! (none of these outputs records one).
//!
//! - [`fio`]: fio's JSON (`fio --output-format=json`);
//! - [`mdtest`]: mdtest's text output (`mdtest … > FILE`);
//! - [`elbencho`]: elbencho's `--jsonfile` and `--csvfile`.
//!
//! A new peer: a file with `pub fn read(text: &str, file: &str) -> Option<Result<ResultSet,
//! String>>` building its set with [`peer_set`], [`target`] and [`measurement`], and one
//! entry in [`PEERS`].

pub mod elbencho;
pub mod fio;
pub mod mdtest;

use super::{ExperimentInfo, Measurement, ResultSet};
use crate::measure::provenance::Provenance;
use crate::measure::{Latency, PhaseResult};
use crate::storage::TargetInfo;
use crate::tree::spec::{Content, Layout, SizeDist, TreeSpec};

/// What a peer's reader makes of a file's text (`text`, named `file`): None when it is
/// not that tool's output, else its result set or why it cannot be one.
pub type Reader = fn(&str, &str) -> Option<Result<ResultSet, String>>;

/// The peers this build reads, tried in this order on a file that is no manyfiles result.
pub const PEERS: &[(&str, Reader)] = &[("fio", fio::read), ("mdtest", mdtest::read), ("elbencho", elbencho::read)];

/// `path` read as a peer's output: None when it is none this build reads (a manyfiles
/// file, say), else the result set or why it cannot be one.
pub fn read(path: &std::path::Path) -> Option<Result<ResultSet, String>> {
    let text = crate::fs::input::read_bounded(path, crate::fs::input::JSON_MAX).ok()?;
    let file = path.display().to_string();
    PEERS.iter().find_map(|(tool, reader)| {
        reader(&text, &file).map(|r| r.map_err(|e| format!("{file} ({tool}'s output): {e}")))
    })
}

/// One phase a peer timed, in manyfiles' terms.
#[derive(Debug, Clone)]
pub struct Run {
    pub op: &'static str,
    /// Files the phase worked on, and the bytes it wrote or read (0 for stat and delete).
    pub files: u64,
    pub bytes: u64,
    /// Bytes in each file of the tree it ran on, whatever the op moved.
    pub file_size: u64,
    /// How the files lay in directories, and how many directories that is.
    pub layout: Layout,
    pub dirs: u64,
    /// Threads (or ranks) that worked at once.
    pub threads: usize,
    /// Seconds until the last worker finished (the phase's time), and the first.
    pub secs: f64,
    pub first_s: f64,
    pub latency: Latency,
    /// The tool's own CPU seconds (user, system), 0 when it does not give them.
    pub cpu: [f64; 2],
}

impl Run {
    /// A phase of `files` files in one directory, one worker, timed `secs`, nothing else known.
    pub fn flat(op: &'static str, files: u64, bytes: u64, file_size: u64, secs: f64) -> Run {
        Run {
            op,
            files,
            bytes,
            file_size,
            layout: Layout::Flat,
            dirs: 1,
            threads: 1,
            secs,
            first_s: secs,
            latency: Latency::default(),
            cpu: [0.0; 2],
        }
    }
}

/// A target standing for where a peer ran: `label` is what the report shows.
pub fn target(id: &str, label: &str, dir: &str) -> TargetInfo {
    TargetInfo::unmounted(id, "peer", dir, "", label)
}

/// The file's name without its directory, as target labels show it.
pub fn short_name(file: &str) -> String {
    std::path::Path::new(file).file_name().map_or(file.into(), |n| n.to_string_lossy().into_owned())
}

/// One run of a peer's: `tool` measured `run` on `target`; `order` is its place among the
/// set's measurements, `run_no` its repetition of the same (target, op, tree) from 1.
pub fn measurement(tool: &str, target: &str, run: &Run, order: u64, run_no: u32) -> Measurement {
    let tree = TreeSpec {
        files: run.files,
        size: SizeDist::Fixed { bytes: run.file_size },
        layout: run.layout.clone(),
        name_len: 0,
        content: Content::Zeros,
        seed: 0,
    };
    let result = PhaseResult {
        elapsed_s: run.secs,
        files: run.files,
        bytes: run.bytes,
        dirs: run.dirs,
        threads: run.threads,
        cpu_user_s: run.cpu[0],
        cpu_sys_s: run.cpu[1],
        latency_us: run.latency.clone(),
        first_finish_s: run.first_s,
        last_finish_s: run.secs,
        ..PhaseResult::default()
    };
    Measurement {
        experiment: tool.into(),
        target: target.into(),
        op: run.op.into(),
        tree_key: tree.key(),
        tree_files: run.files,
        tree_bytes: run.files * run.file_size,
        tree_dirs: run.dirs,
        tree,
        run: run_no,
        order,
        block: None,
        at_s: None,
        result,
    }
}

/// A peer's result set before any measurement: its tool, version, command line and start
/// as provenance, `order` saying how it ran its phases, what is unknown left empty.
pub fn peer_set(
    tool: &str,
    version: &str,
    file: &str,
    command_line: Vec<String>,
    started: &str,
    order: &str,
) -> ResultSet {
    let provenance = Provenance {
        tool: tool.into(),
        version: version.into(),
        built_from: format!("read from {file}"),
        command_line,
        started_utc: started.into(),
        host: String::new(),
        kernel: String::new(),
        cpu_model: String::new(),
        cores: 0,
        memory_bytes: 0,
        ranks: 1,
        hosts: Vec::new(),
        invocation: String::new(),
    };
    let experiment = ExperimentInfo {
        name: tool.into(),
        ops: Vec::new(),
        runs: 1,
        warmup: 0,
        threads: 1,
        portion_files: 0,
        order: order.into(),
        create: Default::default(),
        caches: crate::storage::cache::CacheMode::Warm,
        until: Default::default(),
        adaptive: None,
        side_trees: Vec::new(),
    };
    let mut rs = ResultSet::new(provenance, experiment, Vec::new());
    rs.complete = true;
    rs
}

/// Add `op` to the set's ops if it is not there yet.
pub fn note_op(rs: &mut ResultSet, op: &str) {
    if !rs.experiment.ops.iter().any(|o| o == op) {
        rs.experiment.ops.push(op.into());
    }
}
