//! The engines where a side is an object store (`s3://BUCKET/PREFIX`, or Azure Blob's
//! `azblob://CONTAINER/PREFIX`: [`url`]): `copy` and `sync`
//! local → object ([`upload`]), object → local ([`download`]) and object → object
//! (server-side copies, [`remote`]); `rm` of a prefix ([`rm`]); `scan` of one ([`scan`]).
//!
//! Every request goes through [`ObjectClient`] (object_store's S3 or Azure client on a
//! runtime of its own; a `manyfiles mount`'s stack is reached inside its network
//! namespace), which counts each HTTP request by kind; the summaries say how many of each
//! were sent (the caller prices them at the provider's list prices). Requests run
//! `in_flight` at once ([`each`]); listing goes page by page (S3: 1,000 keys; Azure
//! Blob: 5,000, List Blobs' most), deletes in batches (S3: DeleteObjects of 1,000 keys;
//! Azure Blob: Blob Batch requests of 256 deletes, object_store 0.14's, which has no
//! single Delete Blob call — the summaries name them `Blob Batch`). Server-side copies
//! are S3's CopyObject and Azure's Copy Blob (object_store's `copy`, which overwrites:
//! sync replaces a changed object; copy's "empty prefix" rule is checked by a LIST first,
//! so no `copy_if_not_exists` is needed, whose Azure form, `If-None-Match: *`, differs
//! from S3's).
//!
//! An object holds bytes, a key and metadata: a file's mtime goes with it as user
//! metadata `mtime` (`x-amz-meta-mtime`, seconds with nanoseconds, as rclone writes
//! it) and comes back on download. What an object cannot hold (modes, owners, xattrs,
//! symlinks, hard links, special files, empty directories) is counted as a loss in
//! engine/copy's vocabulary, and fails the run unless accepted (`--lossy`, `--no-…`).
//!
//! As the local engines: filter rules with rsync's meaning on either side ([`select`]:
//! a key's path below the prefix is what they match), `--itemize` ([`changes`]: the
//! changes in rsync's order, in copy's words or rsync's codes, and in the JSON) and
//! `--verify` ([`verify`]: every file or object the source has read back from DST and
//! compared byte for byte, after the transfer; its GETs are counted and priced with the
//! others).

pub mod changes;
pub mod download;
pub mod remote;
pub mod rm;
pub mod scan;
pub mod select;
pub mod upload;
pub mod url;
pub mod verify;

pub use url::{ObjectUrl, is_url};

use crate::engine::copy::itemize::Change;
use crate::engine::copy::losses::{Loss, LossRow};
use crate::engine::filter::Filter;
use crate::error::{Error, Result};
use crate::measure::RequestCounts;
use crate::measure::progress::Progress;
use crate::signals;
use crate::storage::object_client::{ObjectClient, Retries};
use crate::storage::object_endpoint::Reach;
use crate::storage::object_stack::Provider;
use futures_util::StreamExt;
use object_store::ObjectStore;
use object_store::list::PaginatedListOptions;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Requests in flight by default: an object store's round trips want many at once.
pub const DEFAULT_IN_FLIGHT: usize = 64;
/// Files above this go up as multipart uploads, in parts of [`PART`].
pub const MULTIPART_ABOVE: u64 = 64 << 20;
pub const PART: usize = 16 << 20;
/// Keys per LIST page and per DeleteObjects request: S3's most (an Azure store's are its
/// provider's: [`Provider::list_page`], [`Provider::delete_batch`]).
pub const PAGE: usize = 1000;
/// Failure lines kept in a summary.
const MAX_FAILURES: usize = 20;
/// The user metadata key of a file's mtime.
pub const MTIME_KEY: &str = "mtime";

/// One side of a copy or sync.
#[derive(Debug, Clone)]
pub enum Side {
    Local(PathBuf),
    Object(ObjectUrl),
}

impl Side {
    /// An `s3://` or `azblob://` argument as a URL, anything else as a local path.
    pub fn of(p: &Path, flag: &str) -> Result<Side> {
        match p.to_str().filter(|_| is_url(p)) {
            Some(s) => ObjectUrl::parse(s).map(Side::Object).map_err(|e| Error::bad(flag, e)),
            None => Ok(Side::Local(p.to_path_buf())),
        }
    }

    fn text(&self) -> String {
        match self {
            Side::Local(p) => p.display().to_string(),
            Side::Object(u) => u.to_string(),
        }
    }
}

/// What a copy or sync keeps of a file that an object cannot (each off: not counted).
#[derive(Debug, Clone, Copy)]
pub struct Keep {
    pub owner: bool,
    pub xattrs: bool,
    pub hard_links: bool,
    pub specials: bool,
    /// Accept every loss: counted and listed, not a failure.
    pub lossy: bool,
}

/// `copy` or `sync` with a side on an object store.
#[derive(Debug)]
pub struct Options {
    pub sync: bool,
    pub src: Side,
    pub dst: Side,
    pub reach: Reach,
    pub in_flight: usize,
    pub dry_run: bool,
    pub delete: bool,
    /// `--whole-bucket`: sync `--delete` onto a bare bucket or container (no prefix), which
    /// deletes what the source has not anywhere in it, is refused without it.
    pub whole_bucket: bool,
    pub quiet: bool,
    pub keep: Keep,
    /// Filter rules: what they exclude at the source is not copied, what they protect at
    /// DST `--delete` leaves ([`select`]).
    pub filter: Option<std::sync::Arc<Filter>>,
    /// Keep every change for `--itemize` ([`Summary::changes`]).
    pub itemize: bool,
    /// Compare DST with the source afterwards ([`verify`]).
    pub verify: bool,
}

/// What a copy or sync did (`--json`: this document).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub mode: String,
    /// Whose API the store speaks (`s3`, `azblob`): what `requests` are named and priced by.
    pub provider: Provider,
    pub src: String,
    pub dst: String,
    /// Where the store was reached (endpoint; never a credential).
    pub endpoint: String,
    pub dry_run: bool,
    pub in_flight: usize,
    /// Files (or objects) at the source, their directories and bytes.
    pub src_files: u64,
    pub src_dirs: u64,
    pub src_bytes: u64,
    /// Files or objects at the destination before (under the prefix or DST).
    pub dst_entries: u64,
    pub copied: u64,
    pub bytes_transferred: u64,
    /// Of `copied`, sent as multipart uploads.
    pub multipart: u64,
    pub skipped: u64,
    pub deleted: u64,
    /// At the destination and not at the source, kept (no `--delete`, or protected by
    /// the filters).
    pub extraneous: u64,
    /// Source entries the filters left out (a directory counts once: nothing below it
    /// is looked at).
    pub excluded: u64,
    /// Filters were given (the summary's line names `excluded` then).
    pub filtered: bool,
    pub failed: u64,
    pub losses: Vec<LossRow>,
    pub losses_accepted: bool,
    pub requests: RequestCounts,
    pub elapsed_s: f64,
    /// Wall time of the listing (walk and LIST pages), the transfers, the deletes.
    pub list_s: f64,
    pub transfer_s: f64,
    pub delete_s: f64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub interrupted: bool,
    pub failures: Vec<String>,
    pub failures_omitted: u64,
    /// `--verify`: DST compared with the source afterwards (None: not verified).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<crate::engine::copy::verify::Report>,
    /// `--itemize`: every change, in rsync's order ([`changes`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<Vec<Change>>,
}

impl Summary {
    fn new(o: &Options, client: &ObjectClient) -> Summary {
        Summary {
            mode: if o.sync { "sync" } else { "copy" }.into(),
            provider: client.provider,
            src: o.src.text(),
            dst: o.dst.text(),
            endpoint: client.endpoint.clone(),
            dry_run: o.dry_run,
            in_flight: o.in_flight,
            losses_accepted: o.keep.lossy,
            filtered: o.filter.is_some(),
            changes: o.itemize.then(Vec::new),
            ..Default::default()
        }
    }

    /// A failure: counted, its line kept (the first [`MAX_FAILURES`]).
    pub fn fail(&mut self, line: String) {
        self.failed += 1;
        if self.failures.len() < MAX_FAILURES {
            self.failures.push(line);
        } else {
            self.failures_omitted += 1;
        }
    }

    /// No failure, no loss left unaccepted, no difference found by `--verify`, not
    /// interrupted.
    pub fn ok(&self) -> bool {
        self.failed == 0
            && !self.interrupted
            && (self.losses_accepted || self.losses.is_empty())
            && self.verify.as_ref().is_none_or(|v| v.ok())
    }

    /// Keep a change for `--itemize` (nothing without it).
    pub fn change(&mut self, c: Change) {
        if let Some(all) = self.changes.as_mut() {
            all.push(c);
        }
    }

    /// The summary for the terminal (copy's form).
    pub fn text(&self) -> String {
        use crate::units::{fmt_rate, fmt_secs, fmt_size};
        let verb = if self.dry_run { "would copy" } else { "copied" };
        let mut s = format!(
            "{} {} → {}{}\n",
            self.mode,
            self.src,
            self.dst,
            if self.dry_run { " (dry run: nothing written or deleted)" } else { "" }
        );
        s.push_str(&format!(
            "scanned: {} files at source ({} dirs, {}), {} at destination ({})\n",
            self.src_files,
            self.src_dirs,
            fmt_size(self.src_bytes as f64),
            self.dst_entries,
            self.endpoint
        ));
        s.push_str(&format!(
            "{verb} {} ({} transferred{}), skipped {} unchanged, {} {}, extraneous kept {}{}, failed {}\n",
            self.copied,
            fmt_size(self.bytes_transferred as f64),
            if self.multipart > 0 { format!(", {} multipart", self.multipart) } else { String::new() },
            self.skipped,
            if self.dry_run { "would delete" } else { "deleted" },
            self.deleted,
            self.extraneous,
            if self.filtered { format!(", excluded {}", self.excluded) } else { String::new() },
            self.failed
        ));
        s.push_str(&losses_text(&self.losses, self.losses_accepted));
        s.push_str(&format!("requests: {}\n", fmt_engine_requests(&self.requests, self.provider)));
        s.push_str(&format!(
            "elapsed {} ({}) with up to {} requests in flight; list {}, transfer {}, delete {}; cpu user {} sys {}\n",
            fmt_secs(self.elapsed_s),
            fmt_rate(self.copied as f64 / self.elapsed_s.max(1e-9), "files"),
            self.in_flight,
            fmt_secs(self.list_s),
            fmt_secs(self.transfer_s),
            fmt_secs(self.delete_s),
            fmt_secs(self.cpu_user_s),
            fmt_secs(self.cpu_sys_s)
        ));
        s.push_str(&failures_text(&self.failures, self.failures_omitted));
        if let Some(v) = &self.verify {
            s.push_str(&format!("verify: {}\n", v.text()));
        }
        if self.interrupted {
            s.push_str("interrupted: the rest was left as it was\n");
        }
        s
    }
}

/// `lost: …` lines as copy prints them.
fn losses_text(losses: &[LossRow], accepted: bool) -> String {
    if losses.is_empty() {
        return String::new();
    }
    let total: u64 = losses.iter().map(|l| l.count).sum();
    let mut s = format!(
        "lost: {total} ({}; {})\n",
        losses.iter().map(|l| format!("{} {}", l.kind, l.count)).collect::<Vec<_>>().join(", "),
        if accepted { "accepted with --lossy" } else { "an object cannot hold them: --lossy or --no-… accepts" }
    );
    for l in losses {
        let (what, flag) = loss_words(&l.kind);
        s.push_str(&format!("  {} {}: {what} ({flag}), e.g. {}\n", l.kind, l.count, l.paths.join(", ")));
    }
    s
}

fn failures_text(failures: &[String], omitted: u64) -> String {
    let mut s: String = failures.iter().map(|f| format!("failed: {f}\n")).collect();
    if omitted > 0 {
        s.push_str(&format!("failed: … and {omitted} more\n"));
    }
    s
}

/// `12 (PUT 10, LIST 2)`: the requests sent to an S3 store, by kind, the kinds with none
/// left out.
pub fn fmt_requests(r: &RequestCounts) -> String {
    fmt_requests_of(r, Provider::S3)
}

/// The requests sent, by kind, in the provider's words: a batched delete is S3's
/// `DeleteObjects`, Azure Blob's `Blob Batch` (counted as `delete_objects` in the JSON).
pub fn fmt_requests_of(r: &RequestCounts, provider: Provider) -> String {
    let batch = match provider {
        Provider::S3 => "DeleteObjects",
        Provider::Azblob => "Blob Batch",
    };
    let kinds = [
        ("PUT", r.put),
        ("GET", r.get),
        ("HEAD", r.head),
        ("LIST", r.list),
        ("DELETE", r.delete),
        (batch, r.delete_objects),
        ("POST", r.post),
        ("other", r.other),
    ];
    let sent: Vec<String> = kinds.iter().filter(|k| k.1 > 0).map(|(n, c)| format!("{n} {c}")).collect();
    format!("{} ({})", r.total(), if sent.is_empty() { "none".into() } else { sent.join(", ") })
}

/// The requests an engine sent ([`fmt_requests_of`]), and how many of them failed and
/// were sent again by its client ([`Retries::Backoff`]): `12 (PUT 10, LIST 2), 3 failed
/// and retried (up to 5 times a request)`.
pub fn fmt_engine_requests(r: &RequestCounts, provider: Provider) -> String {
    let sent = fmt_requests_of(r, provider);
    match r.failed {
        0 => sent,
        n => format!(
            "{sent}, {n} failed and retried (up to {} times a request)",
            crate::storage::object_client::ENGINE_RETRIES
        ),
    }
}

/// The one kind of loss that is not copy's: a directory with nothing in it (an object
/// store has no directories, only keys).
pub const EMPTY_DIRS: &str = "empty_dirs";

/// What a loss kind means and the flag that accepts it.
fn loss_words(kind: &str) -> (&'static str, &'static str) {
    if kind == EMPTY_DIRS {
        return ("empty directories not kept (an object store has keys, not directories)", "--lossy");
    }
    match Loss::ALL.iter().find(|k| k.name() == kind) {
        Some(Loss::Modes) => ("permission bits not kept (files come back 0644, directories 0755)", "--lossy"),
        Some(Loss::Owner) => ("owner/group not kept (files come back the downloader's)", "--no-owner"),
        Some(Loss::Names) => {
            ("names an object key cannot hold (not UTF-8, or a control character): not copied", "--lossy")
        }
        Some(k) => (k.what(), k.flag()),
        None => ("", "--lossy"),
    }
}

/// Losses counted by kind with their first paths.
#[derive(Debug, Default)]
pub struct LossTally {
    rows: Vec<LossRow>,
}

impl LossTally {
    pub fn add(&mut self, kind: &str, path: &str) {
        let i = match self.rows.iter().position(|r| r.kind == kind) {
            Some(i) => i,
            None => {
                self.rows.push(LossRow { kind: kind.into(), count: 0, paths: Vec::new() });
                self.rows.len() - 1
            }
        };
        let r = &mut self.rows[i];
        r.count += 1;
        if r.paths.len() < crate::engine::copy::losses::LOSS_PATHS {
            r.paths.push(path.to_string());
        }
    }

    /// The rows in copy's order of kinds, empty directories last.
    pub fn rows(mut self) -> Vec<LossRow> {
        let order = |k: &str| Loss::ALL.iter().position(|l| l.name() == k).unwrap_or(Loss::ALL.len());
        self.rows.sort_by_key(|r| order(&r.kind));
        self.rows
    }
}

/// One object as a LIST page gives it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub key: String,
    pub size: u64,
    /// Last-modified, (seconds, nanoseconds) since the epoch.
    pub modified: (i64, u32),
}

/// Every object whose key starts with `prefix` (raw: no `/` added), page by page.
pub fn list_all(client: &ObjectClient, prefix: &str, progress: &Progress) -> Result<Vec<Listed>> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let max_keys = Some(client.provider.list_page());
        let opts = PaginatedListOptions { max_keys, page_token: token.take(), ..Default::default() };
        let (store, p) = (client.store.clone(), prefix.to_string());
        let page = client
            .block_on(client.handle().spawn(async move { store.list_paginated(Some(p.as_str()), opts).await }))
            .map_err(|e| Error::failed(format!("LIST task: {e}")))?
            .map_err(|e| Error::failed(format!("LIST {prefix}: {}", why(&e))))?;
        out.extend(page.result.objects.into_iter().map(|m| Listed {
            key: m.location.as_ref().to_string(),
            size: m.size,
            modified: (m.last_modified.timestamp(), m.last_modified.timestamp_subsec_nanos()),
        }));
        progress.set(out.len() as u64);
        token = page.page_token;
        if token.is_none() || signals::pending() != 0 {
            return Ok(out);
        }
    }
}

/// An object_store error as one short line (its sources joined).
pub fn one_line(e: &str) -> String {
    let s: String = e.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() > 300 { format!("{}…", s.chars().take(300).collect::<String>()) } else { s }
}

/// An error and its sources, as one line (`error sending request: … connection reset`).
pub fn why(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = s.source();
    }
    one_line(&text)
}

/// The client for `bucket`, checked with one request (a LIST of one key under the
/// prefix): an endpoint that does not answer, a bucket it does not have or keys it
/// refuses end here, as one line, exit 2. Also says whether the prefix holds anything.
/// The engines' clients retry ([`Retries::Backoff`]); a measurement's check passes
/// [`Retries::Never`].
pub fn connect(reach: &Reach, url: &ObjectUrl, retries: Retries) -> Result<(ObjectClient, bool)> {
    let client = ObjectClient::reach(reach, &url.bucket, retries)?;
    let opts = PaginatedListOptions { max_keys: Some(1), ..Default::default() };
    let (store, p) = (client.store.clone(), url.dir_prefix());
    let r = client.block_on(client.handle().spawn(async move { store.list_paginated(Some(p.as_str()), opts).await }));
    match r {
        Ok(Ok(page)) => Ok((client, !page.result.objects.is_empty())),
        Ok(Err(e)) => Err(Error::bad(
            url.to_string(),
            format!("cannot list it at {} ({}): {}", client.endpoint, reach.via, why(&e)),
        )),
        Err(e) => Err(Error::failed(format!("LIST task: {e}"))),
    }
}

/// Was an object last modified before the file was (upload sync's rule)? At the
/// resolution its store's LIST gives: S3's in milliseconds and below, Azure Blob's in
/// whole seconds (List Blobs' `Last-Modified` is an RFC 1123 date), so on Azure a file
/// is judged by its mtime's second (one changed within the second its object was
/// written, at the same size, is not seen: the listing cannot tell).
pub fn older_than_file(provider: Provider, object: (i64, u32), file: (i64, u32)) -> bool {
    match provider {
        Provider::S3 => object < file,
        Provider::Azblob => object.0 < file.0,
    }
}

/// A file's mtime as the `mtime` metadata value, as rclone writes it for the provider:
/// on S3 `SECONDS.NANOSECONDS` (rclone's float seconds), on Azure Blob RFC 3339 with
/// nanoseconds in UTC (`2023-11-14T22:13:20.000000005Z`, rclone's azureblob format), so
/// either tool reads the other's.
pub fn mtime_value(provider: Provider, (s, ns): (i64, u32)) -> String {
    match (provider, chrono::DateTime::from_timestamp(s, ns)) {
        (Provider::Azblob, Some(t)) => t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true),
        _ => format!("{s}.{ns:09}"),
    }
}

/// The `mtime` metadata value back as (seconds, nanoseconds): float seconds (ours and
/// rclone's on S3) or RFC 3339 (rclone's on Azure Blob).
pub fn parse_mtime(v: &str) -> Option<(i64, u32)> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(v.trim()) {
        return Some((t.timestamp(), t.timestamp_subsec_nanos()));
    }
    let (s, frac) = v.trim().split_once('.').unwrap_or((v.trim(), ""));
    let secs: i64 = s.parse().ok()?;
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ns: u32 = if frac.is_empty() { 0 } else { format!("{frac:0<9}").parse().ok()? };
    Some((secs, ns))
}

/// Run the requests `make(item)` makes, `n` in flight on the client's runtime, and give
/// each answer to `done(item's tag, answer)` on this thread. At a signal nothing more is
/// made or sent, but every request already in flight is awaited and its answer given to
/// `done`: a request sent lands (or not) whether anyone listens, so a summary counts
/// every one (RELIABILITY.md: after SIGINT `copied` undercounted what landed).
pub fn each<T, G, V, F, Fut, D>(client: &ObjectClient, n: usize, items: Vec<T>, mut make: F, mut done: D)
where
    F: FnMut(T) -> (G, Fut),
    Fut: std::future::Future<Output = std::result::Result<V, String>> + Send + 'static,
    V: Send + 'static,
    D: FnMut(G, std::result::Result<V, String>),
{
    let handle = client.handle().clone();
    client.block_on(async {
        let mut answers = futures_util::stream::iter(items)
            // Asked before each item is made (buffer_unordered takes one when a slot is free).
            .take_while(|_| std::future::ready(signals::pending() == 0))
            .map(|item| {
                let (tag, fut) = make(item);
                let task = handle.spawn(fut);
                async move { (tag, task.await.unwrap_or_else(|e| Err(format!("request task: {e}")))) }
            })
            .buffer_unordered(n.max(1));
        while let Some((tag, r)) = answers.next().await {
            done(tag, r);
        }
    });
}

/// Delete `keys`, a batch a request (S3: 1,000 keys; Azure Blob: 256), `n` requests in
/// flight; returns how many were deleted and gives a line for every key not deleted to
/// `fail`.
pub fn delete_keys(client: &ObjectClient, n: usize, keys: Vec<String>, mut fail: impl FnMut(String)) -> u64 {
    let batch_name = match client.provider {
        Provider::S3 => "DeleteObjects",
        Provider::Azblob => "Blob Batch",
    };
    let batches: Vec<Vec<String>> = keys.chunks(client.provider.delete_batch()).map(|c| c.to_vec()).collect();
    let mut deleted = 0;
    each(
        client,
        n,
        batches,
        |batch| {
            let store = client.store.clone();
            let count = batch.len() as u64;
            let fut = async move {
                let paths: Vec<object_store::Result<object_store::path::Path>> =
                    batch.iter().map(|k| object_store::path::Path::parse(k).map_err(Into::into)).collect();
                let answers: Vec<_> = store.delete_stream(futures_util::stream::iter(paths).boxed()).collect().await;
                // A key already gone is deleted (Azure's `BlobNotFound`: a batch sent again
                // after a reset that the store had carried out finds its keys gone).
                let failed: Vec<String> = answers
                    .into_iter()
                    .filter_map(|r| r.err())
                    .filter(|e| !matches!(e, object_store::Error::NotFound { .. }))
                    .map(|e| why(&e))
                    .collect();
                Ok(failed)
            };
            (count, fut)
        },
        |count, r: std::result::Result<Vec<String>, String>| match r {
            Ok(failed) => {
                deleted += count - failed.len() as u64;
                failed.into_iter().for_each(|e| fail(format!("{batch_name}: {e}")));
            }
            Err(e) => (0..count).for_each(|_| fail(format!("{batch_name}: {e}"))),
        },
    );
    deleted
}

/// Delete `keys` (this run's own), 1,000 a request, one request at a time — also after
/// a signal (the engines' `delete_keys` stops sending then; a bucket of the user's must
/// not keep a stopped run's objects). The first failure, if any.
///
/// A batch that failed is sent again, up to 3 more times (0.25, 0.5, 1 s apart), a key
/// already gone counting as deleted. Written here rather than left to object_store's
/// retries: the client is often a measurement's, built to send every request once, and
/// this is the clean-up after it, which must not leave a user's bucket holding the
/// run's objects because one batch met a closed connection (seen on Azurite after a
/// SIGINT: 5 Blob Batches of a sweep failed, 1,256 blobs stayed).
pub fn delete_own(client: &ObjectClient, keys: Vec<String>) -> Option<String> {
    let mut first = None;
    for batch in keys.chunks(PAGE) {
        let mut e = None;
        for pause_ms in [0, 250, 500, 1000] {
            if pause_ms > 0 {
                std::thread::sleep(std::time::Duration::from_millis(pause_ms));
            }
            let store = client.store.clone();
            let paths: Vec<object_store::Result<object_store::path::Path>> =
                batch.iter().map(|k| Ok(object_store::path::Path::from(k.as_str()))).collect();
            let task = client.handle().spawn(async move {
                let answers: Vec<_> = store.delete_stream(futures_util::stream::iter(paths).boxed()).collect().await;
                answers
                    .into_iter()
                    .filter_map(|r| r.err())
                    .find(|e| !matches!(e, object_store::Error::NotFound { .. }))
                    .map(|e| why(&e))
            });
            e = client.block_on(task).unwrap_or_else(|e| Some(format!("DeleteObjects task: {e}")));
            if e.is_none() {
                break;
            }
        }
        first = first.or(e);
    }
    first
}

/// Dispatch a copy or sync by its sides.
pub fn run(o: &Options) -> Result<Summary> {
    if let Side::Object(dst) = &o.dst
        && o.sync
        && o.delete
        && dst.prefix.is_empty()
        && !o.whole_bucket
    {
        return Err(Error::bad(
            "DST",
            format!(
                "{dst} names the whole {0}: sync --delete deletes what SRC has not anywhere in it only with --whole-bucket",
                dst.bucket_word()
            ),
        ));
    }
    // SIGINT/SIGTERM stop sending; what was sent is summed up (exit 128 + signal).
    signals::install();
    match (&o.src, &o.dst) {
        (Side::Local(src), Side::Object(dst)) => upload::run(o, src, dst),
        (Side::Object(src), Side::Local(dst)) => download::run(o, src, dst),
        (Side::Object(src), Side::Object(dst)) => remote::run(o, src, dst),
        (Side::Local(_), Side::Local(_)) => Err(Error::bad("SRC", "neither side is an s3:// or azblob:// URL")),
    }
}

/// CPU time since `cpu0`, and the summary's end.
fn finish(s: &mut Summary, client: &ObjectClient, t0: Instant, cpu0: (f64, f64)) {
    let (u, sy) = crate::measure::cpu_times();
    s.cpu_user_s = u - cpu0.0;
    s.cpu_sys_s = sy - cpu0.1;
    s.elapsed_s = t0.elapsed().as_secs_f64();
    s.requests = client.requests();
    s.interrupted = signals::pending() != 0;
    if let Some(c) = s.changes.as_mut() {
        c.sort_by(|a, b| a.order.cmp(&b.order));
    }
}

/// sync into a prefix (`dst`, as a directory: `P/`): the keys no source names, deleted
/// in batches with `--delete` (counted only in a dry run or after a signal), else counted
/// as extraneous; what the filters protect is kept and counted as extraneous (`present`:
/// the directories the source has, below the prefix).
pub(super) fn delete_extra_keys(
    o: &Options,
    client: &ObjectClient,
    (dst, present): (&str, std::collections::HashSet<String>),
    extra: Vec<String>,
    s: &mut Summary,
    progress: &Progress,
) {
    let mut protected = select::Keys::new(o.filter.as_deref(), select::Side::Receiver).present(present);
    let (kept, extra): (Vec<String>, Vec<String>) =
        extra.into_iter().partition(|k| protected.out(k.strip_prefix(dst).unwrap_or(k)));
    s.extraneous += kept.len() as u64;
    if o.delete {
        for k in &extra {
            let rel = k.strip_prefix(dst).unwrap_or(k);
            s.change(Change::new(crate::engine::copy::itemize::Verb::Deleted, "file", rel.as_bytes()));
        }
    }
    if o.delete && !o.dry_run && crate::signals::pending() == 0 {
        progress.phase("delete", extra.len() as u64);
        let mut fails = Vec::new();
        s.deleted = delete_keys(client, o.in_flight, extra, |f| fails.push(f));
        fails.into_iter().for_each(|f| s.fail(f));
    } else if o.delete {
        s.deleted = extra.len() as u64;
    } else {
        s.extraneous += extra.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_last_modified_is_compared_by_the_second() {
        let (obj, file) = ((100, 0), (100, 5));
        assert!(older_than_file(Provider::S3, obj, file));
        assert!(!older_than_file(Provider::Azblob, obj, file));
        assert!(older_than_file(Provider::Azblob, (99, 999_999_999), file));
    }

    #[test]
    fn mtimes_round_trip_and_read_rclone_floats() {
        for p in [Provider::S3, Provider::Azblob] {
            assert_eq!(parse_mtime(&mtime_value(p, (1_700_000_000, 5))), Some((1_700_000_000, 5)));
        }
        assert_eq!(mtime_value(Provider::Azblob, (1_700_000_000, 5)), "2023-11-14T22:13:20.000000005Z");
        assert_eq!(parse_mtime("2023-11-14T22:13:20.5Z"), Some((1_700_000_000, 500_000_000)));
        assert_eq!(parse_mtime("1700000000.5"), Some((1_700_000_000, 500_000_000)));
        assert_eq!(parse_mtime("1700000000"), Some((1_700_000_000, 0)));
        assert_eq!(parse_mtime("x"), None);
    }

    #[test]
    fn requests_are_written_by_kind() {
        let r = RequestCounts { put: 3, list: 1, ..Default::default() };
        assert_eq!(fmt_requests(&r), "4 (PUT 3, LIST 1)");
        assert_eq!(fmt_requests(&RequestCounts::default()), "0 (none)");
        let b = RequestCounts { delete_objects: 2, list: 1, ..Default::default() };
        assert_eq!(fmt_requests_of(&b, Provider::Azblob), "3 (LIST 1, Blob Batch 2)");
        assert_eq!(fmt_engine_requests(&b, Provider::Azblob), "3 (LIST 1, Blob Batch 2)");
        let failed = RequestCounts { put: 5, failed: 2, ..Default::default() };
        assert_eq!(
            fmt_engine_requests(&failed, Provider::S3),
            "5 (PUT 5), 2 failed and retried (up to 5 times a request)"
        );
    }

    #[test]
    fn losses_are_tallied_in_copy_order() {
        let mut t = LossTally::default();
        t.add(EMPTY_DIRS, "e");
        t.add("symlinks", "l");
        t.add("modes", "m");
        t.add("modes", "n");
        let rows = t.rows();
        let kinds: Vec<(&str, u64)> = rows.iter().map(|r| (r.kind.as_str(), r.count)).collect();
        assert_eq!(kinds, [("modes", 2), ("symlinks", 1), (EMPTY_DIRS, 1)]);
        assert!(losses_text(&rows, false).contains("an object cannot hold them"));
    }
}
