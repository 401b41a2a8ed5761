//! Native object-store ops (`obj:put`, `obj:head`, `obj:list`, `obj:get`, `obj:delete`,
//! `obj:delete-batch`): the tree's files as objects sent to an object-store target's
//! endpoint through [`crate::storage::object_client`], in the API of the target's
//! provider (`--fs s3`: S3's; `--fs azblob`: Azure Blob's), beside the file ops that
//! reach an S3 bucket through its s3fs mount. The names are the provider's neither: one
//! op compares the providers in one column, its requests counted by the same kinds.
//! One file per op; all share one runner ([`each_object`]) and one bookkeeping
//! ([`Recorder`]), so they have the statistics, portions and latency of every op, plus
//! the requests they sent by kind.
//!
//! Object `i` of the tree is `PREFIX/DIR/NAME` (the plan's directory path and file name;
//! no directory objects). Requests run on the client's runtime, `in_flight` at most at
//! once; each request's latency is timed where it runs.

pub mod delete;
pub mod delete_batch;
pub mod get;
pub mod head;
pub mod list;
pub mod put;

use crate::measure::progress::Progress;
use crate::measure::{self, Latency, PhaseResult, RequestCounts, new_histogram, portions_from_points};
use crate::signals;
use crate::storage::object_client::ObjectClient;
use crate::tree::Prepared;
use futures_util::StreamExt;
use hdrhistogram::Histogram;
use std::time::{Duration, Instant};

/// The native ops, in the order they run on one tree (as create, stat, list, read, delete).
pub const NAMES: [&str; 6] = ["obj:put", "obj:head", "obj:list", "obj:get", "obj:delete", "obj:delete-batch"];

/// Requests in flight when `--threads` is not given (a file op's default, the cores,
/// would leave an object store's round trips mostly idle).
pub const DEFAULT_IN_FLIGHT: usize = 16;

/// Is `op` a native object-store op?
pub fn is_object_op(op: &str) -> bool {
    NAMES.contains(&op)
}

/// One timed native op over the tree's objects.
pub trait ObjectOp: Sync {
    fn name(&self) -> &'static str;
    /// Run the phase (timed from its first request to its last answer).
    fn run(&self, run: &Run) -> PhaseResult;
}

fn op_by_name(name: &str) -> Box<dyn ObjectOp> {
    match name {
        "obj:put" => Box::new(put::Put),
        "obj:head" => Box::new(head::Head),
        "obj:list" => Box::new(list::List),
        "obj:get" => Box::new(get::Get),
        "obj:delete" => Box::new(delete::Delete),
        "obj:delete-batch" => Box::new(delete_batch::DeleteBatch),
        other => unreachable!("object op names are checked by parse_ops: {other}"),
    }
}

/// What every phase of one trial shares: the client, where the tree's objects go, the
/// tree, and how many requests may be in flight.
pub struct Run<'a> {
    pub client: &'a ObjectClient,
    /// The tree's key prefix (ends with `/`).
    pub prefix: String,
    pub tree: &'a Prepared,
    pub in_flight: usize,
    pub portion_files: u64,
    pub progress: &'a Progress,
    /// Whose mark every object PUT carries (a store of the user's:
    /// `storage::object_owner`); None: no mark.
    pub owner: Option<&'a crate::storage::object_owner::Owner>,
    /// (file index, key) of every object, by directory.
    keys: Vec<(u64, String)>,
}

impl<'a> Run<'a> {
    pub fn new(
        client: &'a ObjectClient,
        prefix: String,
        tree: &'a Prepared,
        in_flight: usize,
        portion_files: u64,
        progress: &'a Progress,
    ) -> Run<'a> {
        let plan = &tree.plan;
        let mut name = [0u8; crate::tree::layout::NAME_BUF];
        let mut keys = Vec::with_capacity(plan.files as usize);
        for (d, dir) in plan.dirs.iter().enumerate() {
            let path = plan.dir_path(d as u32);
            let dir_prefix = if path == "." { prefix.clone() } else { format!("{prefix}{path}/") };
            for i in dir.first_file..dir.first_file + dir.nfiles {
                let n = plan.file_name(i, &mut name);
                keys.push((i, format!("{dir_prefix}{}", String::from_utf8_lossy(&name[..n]))));
            }
        }
        let (in_flight, portion_files) = (in_flight.max(1), portion_files.max(1));
        Run { client, prefix, tree, in_flight, portion_files, progress, owner: None, keys }
    }

    /// Its PUTs marked as `owner`'s.
    pub fn owned_by(self, owner: Option<&'a crate::storage::object_owner::Owner>) -> Run<'a> {
        Run { owner, ..self }
    }

    /// Bytes of file `index` as the tree spec draws them.
    pub fn size_of(&self, index: u64) -> u64 {
        let spec = &self.tree.spec;
        spec.size.size_of(spec.seed, index)
    }

    /// The keys of every object, by directory.
    pub fn keys(&self) -> &[(u64, String)] {
        &self.keys
    }
}

/// A phase's clock and tallies over one client, kept on the thread that drives it: the
/// requests sent since it started, CPU, a latency histogram, objects and bytes done,
/// errors and the first one. Every timed object-store phase records these (the native
/// ops through [`Recorder`], which adds portions and progress; pack's object routes as
/// they are: a step is one timed whole).
pub struct Tally<'c> {
    client: &'c ObjectClient,
    in_flight: usize,
    start: Instant,
    requests0: RequestCounts,
    cpu0: (f64, f64),
    hist: Histogram<u64>,
    files: u64,
    bytes: u64,
    errors: u64,
    first_error: Option<String>,
}

impl<'c> Tally<'c> {
    /// Start the clock: requests and CPU counted from now.
    pub fn start(client: &'c ObjectClient, in_flight: usize) -> Tally<'c> {
        let requests0 = client.requests();
        let cpu0 = measure::cpu_times();
        Tally {
            client,
            in_flight,
            start: Instant::now(),
            requests0,
            cpu0,
            hist: new_histogram(),
            files: 0,
            bytes: 0,
            errors: 0,
            first_error: None,
        }
    }

    /// One request answered after `latency`, covering `files` objects and `bytes` bytes.
    pub fn done(&mut self, latency: Duration, files: u64, bytes: u64) {
        let _ = self.hist.record((latency.as_nanos() as u64).clamp(1, 3_600_000_000_000));
        self.files += files;
        self.bytes += bytes;
    }

    /// A request's answer: (latency, bytes) covering `files` objects, or why it failed.
    pub fn answer(&mut self, files: u64, r: Result<(Duration, u64), String>) {
        match r {
            Ok((latency, bytes)) => self.done(latency, files, bytes),
            Err(e) => self.error(1, e),
        }
    }

    /// A request that failed (`count` objects not done).
    pub fn error(&mut self, count: u64, msg: String) {
        self.errors += count;
        if self.first_error.is_none() {
            self.first_error = Some(msg);
        }
    }

    /// Objects done so far.
    pub fn files(&self) -> u64 {
        self.files
    }

    /// Objects that failed so far.
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// The phase's result, a whole: the time to now, the requests sent since the start.
    pub fn finish(self) -> PhaseResult {
        self.finish_with(|_, _| Vec::new())
    }

    /// The phase's result with the portions `portions(files, elapsed)` makes.
    pub fn finish_with(self, portions: impl FnOnce(u64, f64) -> Vec<measure::Portion>) -> PhaseResult {
        let elapsed = self.start.elapsed().as_secs_f64();
        let (u1, s1) = measure::cpu_times();
        PhaseResult {
            elapsed_s: elapsed,
            files: self.files,
            bytes: self.bytes,
            dirs: 0,
            threads: self.in_flight,
            cpu_user_s: u1 - self.cpu0.0,
            cpu_sys_s: s1 - self.cpu0.1,
            errors: self.errors,
            first_error: self.first_error,
            interrupted: signals::pending() != 0,
            failed: None,
            portions: portions(self.files, elapsed),
            latency_us: Latency::from_histogram(&self.hist),
            first_finish_s: elapsed,
            last_finish_s: elapsed,
            requests: Some(self.client.requests().since(&self.requests0)),
            ..Default::default()
        }
    }
}

/// A native op's phase: its [`Tally`], plus portions (every `portion_files` objects and
/// at least once a second) and the progress line.
pub struct Recorder<'r> {
    run: &'r Run<'r>,
    tally: Tally<'r>,
    points: Vec<(u64, f64)>,
    last_point: Instant,
}

impl<'r> Recorder<'r> {
    /// Start timing phase `name` over `total` objects.
    pub fn start(run: &'r Run<'r>, name: &str, total: u64) -> Recorder<'r> {
        run.progress.phase(name, total);
        let tally = Tally::start(run.client, run.in_flight);
        let last_point = tally.start;
        Recorder { run, tally, points: Vec::new(), last_point }
    }

    /// One request answered after `latency`, covering `files` objects and `bytes` bytes.
    pub fn done(&mut self, latency: Duration, files: u64, bytes: u64) {
        let before = self.tally.files;
        self.tally.done(latency, files, bytes);
        let now = Instant::now();
        let (p, done) = (self.run.portion_files, self.tally.files);
        if done / p != before / p || now.duration_since(self.last_point) >= Duration::from_secs(1) {
            self.points.push((done, now.duration_since(self.tally.start).as_secs_f64()));
            self.last_point = now;
        }
        if done / 1024 != before / 1024 {
            self.run.progress.set(done);
        }
    }

    /// A request that failed (`count` objects not done).
    pub fn error(&mut self, count: u64, msg: String) {
        self.tally.error(count, msg);
    }

    /// Objects done so far.
    pub fn files(&self) -> u64 {
        self.tally.files
    }

    /// No request failed so far and no signal arrived.
    pub fn clean(&self) -> bool {
        self.tally.errors == 0 && !self.stopping()
    }

    /// A signal arrived: stop sending.
    pub fn stopping(&self) -> bool {
        signals::pending() != 0
    }

    /// The phase's result: the time to the last answer, the requests it sent.
    pub fn finish(self) -> PhaseResult {
        self.run.progress.set(self.tally.files);
        let points = self.points;
        self.tally.finish_with(|files, elapsed| portions_from_points(points, files, elapsed))
    }
}

/// The objects' bytes moved by one request, or why it failed.
pub type Outcome = Result<u64, String>;

/// Phase `name`: one request per object (`request(index, key)` makes it; it runs on the
/// client's runtime), at most `run.in_flight` at once; after a signal none is sent and
/// those in flight are awaited.
pub fn each_object<F, Fut>(run: &Run, name: &str, mut request: F) -> PhaseResult
where
    F: FnMut(u64, &str) -> Fut,
    Fut: std::future::Future<Output = Outcome> + Send + 'static,
{
    let mut rec = Recorder::start(run, name, run.keys.len() as u64);
    let handle = run.client.handle().clone();
    run.client.block_on(async {
        // No request is sent after a signal, and every one sent is awaited: none lands
        // after the trial's objects are deleted.
        let mut answers = futures_util::stream::iter(run.keys.iter().take_while(|_| signals::pending() == 0))
            .map(|(i, key)| {
                let fut = request(*i, key.as_str());
                let task = handle.spawn(async move {
                    let t0 = Instant::now();
                    let r = fut.await;
                    (t0.elapsed(), r)
                });
                async move { task.await.unwrap_or_else(|e| (Duration::ZERO, Err(format!("request task: {e}")))) }
            })
            .buffer_unordered(run.in_flight);
        while let Some((latency, r)) = answers.next().await {
            match r {
                Ok(bytes) => rec.done(latency, 1, bytes),
                Err(e) => rec.error(1, format!("{name}: {e}")),
            }
        }
    });
    rec.finish()
}

/// `key` as object_store names it (generated names need no escaping).
pub fn path(key: &str) -> object_store::path::Path {
    object_store::path::Path::from(key)
}

/// Run the native ops of `wanted` (in [`NAMES`] order) over the tree: `obj:put` first
/// (untimed when not asked for: the others need the objects), and the objects removed
/// at the end (untimed `obj:delete-batch` when no delete was asked for; with both deletes,
/// the objects are put again, untimed, between them). Each timed phase runs inside
/// `timed` (the experiment's watch of the machine). Returns the timed phases and why
/// the trial stopped early, if it did (a signal: the caller sees it pending).
pub fn run_trial(
    run: &Run,
    wanted: &[String],
    timed: &mut dyn FnMut(&mut dyn FnMut() -> PhaseResult) -> PhaseResult,
) -> (Vec<(String, PhaseResult)>, Option<String>) {
    let want = |n: &str| wanted.iter().any(|w| w == n);
    let deletes: Vec<&str> = ["obj:delete", "obj:delete-batch"].into_iter().filter(|d| want(d)).collect();
    let mut steps: Vec<(&str, bool)> = vec![("obj:put", want("obj:put"))];
    steps.extend(["obj:head", "obj:list", "obj:get"].into_iter().filter(|n| want(n)).map(|n| (n, true)));
    for (k, d) in deletes.iter().copied().enumerate() {
        if k > 0 {
            steps.push(("obj:put", false));
        }
        steps.push((d, true));
    }
    if deletes.is_empty() {
        steps.push(("obj:delete-batch", false));
    }
    let mut done = Vec::new();
    for (name, is_timed) in steps {
        let op = op_by_name(name);
        let r = if is_timed { timed(&mut || op.run(run)) } else { op.run(run) };
        let stop = if r.interrupted {
            Some(None)
        } else if !is_timed && (r.errors > 0 || r.failed.is_some()) {
            Some(Some(format!(
                "{name} (untimed setup) had {} errors: {}",
                r.errors,
                r.failed.clone().or(r.first_error.clone()).unwrap_or_default()
            )))
        } else {
            None
        };
        if is_timed {
            done.push((name.to_string(), r));
        }
        if let Some(why) = stop {
            return (done, why);
        }
    }
    (done, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_known_and_distinct_from_file_ops() {
        for n in NAMES {
            assert!(is_object_op(n) && !crate::ops::OP_NAMES.contains(&n));
            assert_eq!(op_by_name(n).name(), n);
        }
        assert!(!is_object_op("create") && !is_object_op("obj:copy") && !is_object_op("s3:put"));
    }
}
