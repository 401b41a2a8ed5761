//! `pack` onto an object store (`--dst-fs s3[@rtt=…]` or `azblob[@rtt=…]`, or a bucket of
//! the user's: `--dst-target s3://BUCKET/PREFIX` or `azblob://CONTAINER/PREFIX`, [`crate::experiment::user_store::Endpoint`]): does sharding pay? Per trial the source tree goes up as loose objects (one PUT per file) and then,
//! for every `--shard-size`, as tar shards of that size with one index beside them
//! (`crate::pack::shards`), and each way is read back; every step is timed, its requests
//! counted by kind and priced (`results::prices`).
//!
//! On a bucket of the user's every key lies below a prefix of the run's own,
//! `PREFIX/manyfiles-pack-PID-RANDOM/` (claimed for `cleanup`: `user_store::Claim`), and
//! every object carries the run's mark (`storage::object_owner`).
//!
//! Ops, per route (`loose`, `FORMAT@SIZE`, e.g. `tar@1MiB`, `tar.zst@1MiB`: the formats
//! `--containers` names, tar and tar.zst by default, each at every `--shard-size`):
//! - `ROUTE:put`: read the tree's files (cold, as pack's other steps) and send them:
//!   loose, a PUT per file under `RUNDIR/loose/`; sharded, the files packed in the walk's
//!   order into shards as they are read (tar.zst: each compressed, in the time), each
//!   shard a PUT as it is sealed, then the index (`RUNDIR/ROUTE/index.json`), a PUT;
//! - `ROUTE:get-all`: read everything back, finding it as a reader would: loose, LIST
//!   the prefix (1,000 keys a page) and GET every object; sharded, GET the index and
//!   every shard (tar.zst: decompressed as it arrives, in the time);
//! - `ROUTE:get-one`: one file (the middle one of the walk's sorted list): loose, its
//!   GET; sharded, GET the index and a range GET of the file's place in its shard
//!   (tar.zst: its member's frame, decompressed).
//!
//! Each answer's length is checked as it arrives; the one file read is compared byte for
//! byte with the source (untimed). A route's objects are deleted (untimed, 1,000 keys a
//! request) before the next route goes up. Requests run `--threads` at once (default
//! [`crate::ops::object::DEFAULT_IN_FLIGHT`]), on the client's runtime in the stack's
//! network namespace; at most [`SHARD_BYTES_HELD`] of sealed shards wait in memory.

use super::{Io, Steps, Watches, interrupted, untimed};
use crate::engine::object::{each, list_all, why};
use crate::engine::walker::{open_below, split_last};
use crate::experiment::Stop;
use crate::experiment::TargetSpec;
use crate::experiment::user_store::{self, Claim, Endpoint};
use crate::fs::walk::{self, Kind};
use crate::measure::PhaseResult;
use crate::measure::progress::Progress;
use crate::ops::object::Tally;
use crate::pack::shards::{Format, INDEX_KEY, Index, ShardBuilder, Sharding, member, unpacked_len};
use crate::results::prices::PriceTable;
use crate::signals;
use crate::storage::object_client::ObjectClient;
use crate::storage::object_owner::Owner;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use object_store::{GetOptions, ObjectStore, PutOptions, PutPayload};
use rustix::fd::{AsFd, OwnedFd};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Sealed shards waiting for their PUT, in bytes, at most (fewer requests in flight
/// than `--threads` when shards are large).
pub const SHARD_BYTES_HELD: u64 = 1 << 30;

/// Largest `--shard-size`: a shard is built in memory and sent with one PUT.
pub const MAX_SHARD: u64 = 1 << 30;
/// Smallest `--shard-size`: a header, a block of data and the end of the archive.
pub const MIN_SHARD: u64 = 4 << 10;

/// The three steps of every route, in the order they run.
pub const STEPS: [&str; 3] = ["put", "get-all", "get-one"];

/// `1MiB`, `64KiB`, `1000B`: a shard size as op names carry it.
pub fn size_label(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}KiB", b >> 10),
        b => format!("{b}B"),
    }
}

/// The route of `shard` (None: loose): `loose`, `tar@1MiB`, `tar.zst@64KiB`.
pub fn route_name(shard: Option<Sharding>) -> String {
    match shard {
        None => "loose".into(),
        Some(s) => format!("{}@{}", s.format.name(), size_label(s.size)),
    }
}

/// The shardings a pack onto an object store tries: the formats `--containers` names
/// (tar and tar.zst when it names none), each at every `--shard-size`.
pub fn shardings(cfg: &super::PackExperiment) -> Vec<Sharding> {
    let formats: Vec<Format> = match cfg.named {
        true => Format::ALL.into_iter().filter(|f| cfg.containers.iter().any(|c| c == f.name())).collect(),
        false => Format::ALL.to_vec(),
    };
    formats.into_iter().flat_map(|format| cfg.shard_sizes.iter().map(move |&size| Sharding { format, size })).collect()
}

/// Every op an object pack records, in order.
pub fn op_names(shardings: &[Sharding]) -> Vec<String> {
    let routes = std::iter::once(None).chain(shardings.iter().map(|s| Some(*s)));
    routes.flat_map(|r| STEPS.iter().map(move |s| format!("{}:{s}", route_name(r)))).collect()
}

/// Is the destination an object store (`--dst-fs s3…`, `azblob…`)? Then: the source is
/// not one, no container but tar is named, and the shard sizes are in range. Without one,
/// `--shard-size` and `--prices` are refused.
pub fn check(cfg: &super::PackExperiment) -> crate::error::Result<bool> {
    use crate::error::Error;
    let object = |t: Option<&TargetSpec>| matches!(t, Some(TargetSpec::Fs(f)) if f.object().is_some());
    if object(Some(&cfg.src)) {
        return Err(Error::bad("--src-fs", "an object store is a destination only: give it as --dst-fs"));
    }
    if !object(cfg.dst.as_ref()) && cfg.dst_url.is_none() {
        if cfg.shard_sizes_given {
            return Err(Error::bad(
                "--shard-size",
                "shards are for an object-store destination (--dst-fs s3…, --dst-target s3://… or azblob://…)",
            ));
        }
        if cfg.prices.is_some() {
            return Err(Error::bad(
                "--prices",
                "prices are for an object-store destination (--dst-fs s3…, --dst-target s3://… or azblob://…)",
            ));
        }
        return Ok(false);
    }
    if cfg.named && cfg.containers.iter().any(|c| Format::parse(c).is_none()) {
        return Err(Error::bad(
            "--containers",
            "onto an object store tar and tar.zst shards are compared with loose objects (--shard-size sets their \
             sizes)",
        ));
    }
    if let Some(s) = cfg.shard_sizes.iter().find(|s| !(MIN_SHARD..=MAX_SHARD).contains(*s)) {
        return Err(Error::bad(
            "--shard-size",
            format!("{}: a shard is 4 KiB to 1 GiB (built in memory, sent with one PUT)", size_label(*s)),
        ));
    }
    Ok(true)
}

/// The destination's endpoint and the prices its requests are priced at (`--prices
/// FILE`, or its provider's list prices). A URL is reached as the engines reach it
/// (`--s3-via DIR`, or the environment) and checked with one LIST: an endpoint that does
/// not answer or a bucket it has not is one line, exit 2, before anything is made there.
/// There the run writes only below a prefix of its own, `PREFIX/manyfiles-pack-PID-RANDOM/`
/// (refused unless empty), claimed for `cleanup` while the [`Claim`] lives.
pub fn endpoint_and_prices(
    cfg: &super::PackExperiment,
    dst: &crate::experiment::targets::LiveTarget,
) -> crate::error::Result<(Endpoint, PriceTable, Option<Claim>)> {
    use crate::error::Error;
    let (endpoint, provider, claim) = match &cfg.dst_url {
        Some(url) => {
            let reach = match &cfg.s3_via {
                Some(dir) => crate::storage::object_endpoint::from_mount(dir, url.provider)?,
                None => crate::storage::object_endpoint::from_env(url.provider)?,
            };
            let (client, _) =
                crate::engine::object::connect(&reach, url, crate::storage::object_client::Retries::Never)?;
            let run_prefix = format!("{}{}/", url.dir_prefix(), user_store::run_name("pack"));
            user_store::check_unused(&client, url, &run_prefix, "--dst-target")?;
            let claim = Claim::register(url, &reach, &run_prefix, (None, cfg.s3_via.as_deref()))?;
            eprintln!(
                "manyfiles: {url}: this run writes only below {}://{}/{run_prefix}",
                url.provider.name(),
                url.bucket
            );
            (Endpoint::url(reach, url, run_prefix, claim.owner.clone()), url.provider, Some(claim))
        }
        None => {
            let d = dst.info.managed.as_ref().and_then(|m| m.object.as_deref()).cloned();
            let d = d.ok_or_else(|| Error::failed("the object-store destination has no endpoint recorded"))?;
            let provider = d.object.provider;
            (Endpoint::Stack(Box::new(d)), provider, None)
        }
    };
    let prices = match &cfg.prices {
        Some(f) => PriceTable::load(f).map_err(|e| Error::bad("--prices", e))?,
        None => PriceTable::list_prices(provider),
    };
    Ok((endpoint, prices, claim))
}

/// What the object routes need beside pack's own setup.
pub struct ObjectSetup<'a> {
    pub endpoint: &'a Endpoint,
    pub shardings: &'a [Sharding],
    pub in_flight: usize,
    pub prices: &'a PriceTable,
}

/// A file of the source tree: its path below the root (its key below a route's prefix).
#[derive(Debug, Clone)]
struct LocalFile {
    rel: String,
}

/// The regular files below `root`, sorted by path (fd-relative, no symlink followed;
/// anything else than files and directories is refused: an object holds neither a link
/// nor a device).
fn list_files(root: &OwnedFd) -> Result<Vec<LocalFile>, String> {
    let mut out = Vec::new();
    let mut dirs: Vec<String> = vec![String::new()];
    while let Some(rel) = dirs.pop() {
        let fd = open_below(root.as_fd(), rel.as_bytes()).map_err(|e| format!("{rel}: cannot open: {e}"))?;
        for e in walk::read_dir(fd.as_fd()).map_err(|e| format!("{rel}: cannot list: {e}"))? {
            let name = e.name.to_str().map_err(|_| format!("{rel}: a name that is not UTF-8 (an object key is)"))?;
            let path = if rel.is_empty() { name.to_string() } else { format!("{rel}/{name}") };
            match e.kind {
                Kind::Dir => dirs.push(path),
                Kind::File => {
                    object_store::path::Path::parse(&path).map_err(|x| format!("{path}: not an object key: {x}"))?;
                    out.push(LocalFile { rel: path });
                }
                k => return Err(format!("{path}: a {}: an object store holds only files", k.name())),
            }
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

/// The bytes of `rel` below `root` (no symlink followed, a regular file).
fn read_file(root: &OwnedFd, rel: &str) -> Result<Vec<u8>, String> {
    use rustix::fs::{Mode, OFlags, openat};
    let (dir, name) = split_last(rel.as_bytes());
    let parent = open_below(root.as_fd(), dir).map_err(|e| format!("{rel}: cannot open its directory: {e}"))?;
    let name = std::ffi::CString::new(name).map_err(|_| format!("{rel}: a NUL in the name"))?;
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = openat(parent.as_fd(), name.as_c_str(), flags, Mode::empty()).map_err(|e| format!("{rel}: {e}"))?;
    let mut data = Vec::new();
    std::fs::File::from(fd).read_to_end(&mut data).map_err(|e| format!("{rel}: read: {e}"))?;
    Ok(data)
}

/// One request's answer: how long it took and the bytes it moved.
type Answer = Result<(Duration, u64), String>;

/// `f` timed where it runs.
async fn timed(f: impl std::future::Future<Output = Result<u64, String>>) -> Answer {
    let t0 = Instant::now();
    f.await.map(|n| (t0.elapsed(), n))
}

/// GET `key` (whole, or `range`): its bytes.
async fn get(
    store: Arc<dyn crate::storage::object_client::Store>,
    key: String,
    range: Option<std::ops::Range<u64>>,
) -> Result<bytes::Bytes, String> {
    let opts = GetOptions::new().with_range(range);
    let body = store
        .get_opts(&object_store::path::Path::from(key.as_str()), opts)
        .await
        .map_err(|e| format!("GET {key}: {}", why(&e)))?;
    body.bytes().await.map_err(|e| format!("GET {key}: {}", why(&e)))
}

/// PUT `data` at `key` (marked as `owner`'s: a store of the user's): its length.
async fn put(
    store: Arc<dyn crate::storage::object_client::Store>,
    (key, owner): (String, Option<Owner>),
    data: Vec<u8>,
) -> Result<u64, String> {
    let n = data.len() as u64;
    let location = object_store::path::Path::from(key.as_str());
    let attributes = owner.map(|o| o.attributes(location.as_ref())).unwrap_or_default();
    store
        .put_opts(&location, PutPayload::from(data), PutOptions { attributes, ..Default::default() })
        .await
        .map_err(|e| format!("PUT {key}: {}", why(&e)))?;
    Ok(n)
}

/// What every step of one trial shares.
struct Ctx<'a> {
    client: &'a ObjectClient,
    /// Whose mark every PUT carries (a store of the user's).
    owner: Option<&'a Owner>,
    root: &'a OwnedFd,
    files: &'a [LocalFile],
    in_flight: usize,
}

impl Ctx<'_> {
    /// Run `f` (which spawns its requests on the client's runtime) and wait for it.
    fn one(
        &self,
        f: impl std::future::Future<Output = Result<bytes::Bytes, String>> + Send + 'static,
    ) -> Result<(Duration, bytes::Bytes), String> {
        let t0 = Instant::now();
        let task = self.client.handle().spawn(f);
        let r = self.client.block_on(task).map_err(|e| format!("request task: {e}"))?;
        r.map(|b| (t0.elapsed(), b))
    }

    /// GET the index below `prefix`, into `t`.
    fn index(&self, prefix: &str, t: &mut Tally) -> Option<Index> {
        let got = self.one(get(self.client.store.clone(), format!("{prefix}{INDEX_KEY}"), None));
        match got.and_then(|(d, b)| Index::parse(&b).map(|i| (d, b.len() as u64, i))) {
            Ok((d, n, i)) => {
                t.answer(0, Ok((d, n)));
                Some(i)
            }
            Err(e) => {
                t.error(1, e);
                None
            }
        }
    }
}

/// loose:put: a PUT per file.
fn loose_put(c: &Ctx, prefix: &str) -> PhaseResult {
    let mut t = Tally::start(c.client, c.in_flight);
    let handle = c.client.handle().clone();
    c.client.block_on(async {
        // Every PUT sent is awaited, also after a signal: none lands after the route's
        // objects are deleted.
        let mut pending = FuturesUnordered::new();
        for f in c.files {
            if signals::pending() != 0 {
                break;
            }
            while pending.len() >= c.in_flight {
                if let Some(r) = pending.next().await {
                    t.answer(1, r);
                }
            }
            let data = read_file(c.root, &f.rel);
            let (store, key) = (c.client.store.clone(), (format!("{prefix}{}", f.rel), c.owner.cloned()));
            let task = handle.spawn(timed(async move { put(store, key, data?).await }));
            pending.push(async move { task.await.unwrap_or_else(|e| Err(format!("request task: {e}"))) });
        }
        while let Some(r) = pending.next().await {
            t.answer(1, r);
        }
    });
    t.finish()
}

/// FORMAT@SIZE:put: shards PUT as they are sealed (at most [`SHARD_BYTES_HELD`] waiting),
/// then the index. Every key a PUT was sent for goes into `sent` (what the route then
/// deletes: only what it wrote).
fn shards_put(c: &Ctx, prefix: &str, sharding: Sharding, sent: &mut Vec<String>) -> PhaseResult {
    let mut t = Tally::start(c.client, c.in_flight);
    let limit = c.in_flight.min((SHARD_BYTES_HELD / sharding.size).max(1) as usize);
    let handle = c.client.handle().clone();
    let mut send = |files: u64, key: String, data: Vec<u8>| {
        let key = format!("{prefix}{key}");
        sent.push(key.clone());
        let task = handle.spawn(timed(put(c.client.store.clone(), (key, c.owner.cloned()), data)));
        async move { (files, task.await.unwrap_or_else(|e| Err(format!("request task: {e}")))) }
    };
    c.client.block_on(async {
        let mut pending = FuturesUnordered::new();
        let mut b = match ShardBuilder::new(sharding) {
            Ok(b) => b,
            Err(e) => {
                t.error(1, e);
                return;
            }
        };
        let mut held = 0u64; // files in the shard being filled
        for f in c.files {
            if signals::pending() != 0 || t.errors() > 0 {
                break;
            }
            let sealed = read_file(c.root, &f.rel).and_then(|d| b.add(&f.rel, &d));
            match sealed {
                Err(e) => t.error(1, e),
                Ok(None) => held += 1,
                Ok(Some((i, shard))) => {
                    while pending.len() >= limit {
                        if let Some((n, r)) = pending.next().await {
                            t.answer(n, r);
                        }
                    }
                    pending.push(send(held, crate::pack::shards::shard_key(i, sharding.format), shard));
                    held = 1;
                }
            }
        }
        if t.errors() == 0 && signals::pending() == 0 {
            let (last, index) = b.finish();
            if let Some((i, shard)) = last {
                pending.push(send(held, crate::pack::shards::shard_key(i, sharding.format), shard));
            }
            pending.push(send(0, INDEX_KEY.to_string(), index.to_json()));
        }
        while let Some((n, r)) = pending.next().await {
            t.answer(n, r);
        }
    });
    t.finish()
}

/// loose:get-all: LIST the prefix, GET every object.
fn loose_get_all(c: &Ctx, prefix: &str) -> PhaseResult {
    let mut t = Tally::start(c.client, c.in_flight);
    let listed = match list_all(c.client, prefix, &Progress::hidden()) {
        Ok(l) => l,
        Err(e) => {
            t.error(1, e.to_string());
            return t.finish();
        }
    };
    if listed.len() != c.files.len() {
        t.error(1, format!("LIST {prefix}: {} objects, {} files sent", listed.len(), c.files.len()));
    }
    each(
        c.client,
        c.in_flight,
        listed,
        |l| {
            let store = c.client.store.clone();
            (1, timed(async move { check_len(get(store, l.key.clone(), None).await?, l.size, &l.key) }))
        },
        |n, r| t.answer(n, r),
    );
    t.finish()
}

/// A body's length, if it is `want`.
fn check_len(b: bytes::Bytes, want: u64, key: &str) -> Result<u64, String> {
    match b.len() as u64 {
        n if n == want => Ok(n),
        n => Err(format!("GET {key}: {n} bytes, expected {want}")),
    }
}

/// FORMAT@SIZE:get-all: GET the index, then every shard (tar.zst's decompressed as a
/// reader would, in the time).
fn shards_get_all(c: &Ctx, prefix: &str) -> PhaseResult {
    let mut t = Tally::start(c.client, c.in_flight);
    let Some(index) = c.index(prefix, &mut t) else { return t.finish() };
    let format = index.shard_format();
    let shards: Vec<(u64, String, u64)> = index
        .shards
        .iter()
        .enumerate()
        .map(|(i, s)| (index.files.iter().filter(|f| f.1 as usize == i).count() as u64, s.key.clone(), s.bytes))
        .collect();
    each(
        c.client,
        c.in_flight,
        shards,
        |(files, key, bytes)| {
            let (store, key) = (c.client.store.clone(), format!("{prefix}{key}"));
            let whole = async move {
                let body = get(store, key.clone(), None).await?;
                unpacked_len(format, &body).map_err(|e| format!("GET {key}: {e}"))?;
                check_len(body, bytes, &key)
            };
            (files, timed(whole))
        },
        |n, r| t.answer(n, r),
    );
    t.finish()
}

/// ROUTE:get-one: file `f` (loose: its GET; sharded: the index's GET and a range GET,
/// tar.zst's frame decompressed in the time). Returns the file's bytes as read.
fn get_one(c: &Ctx, prefix: &str, sharded: bool, f: &LocalFile) -> (PhaseResult, Option<Vec<u8>>) {
    let mut t = Tally::start(c.client, 1);
    let mut format = None;
    let (key, range) = if sharded {
        let Some(index) = c.index(prefix, &mut t) else { return (t.finish(), None) };
        format = Some(index.shard_format());
        match index.find(&f.rel) {
            Some((key, offset, len)) => (format!("{prefix}{key}"), Some(offset..offset + len)),
            None => {
                t.error(1, format!("{}: not in the index", f.rel));
                return (t.finish(), None);
            }
        }
    } else {
        (format!("{prefix}{}", f.rel), None)
    };
    let t0 = Instant::now();
    let got = c.one(get(c.client.store.clone(), key, range)).and_then(|(_, b)| {
        let data = match format {
            Some(fm) => member(fm, &b, &f.rel)?,
            None => b.to_vec(),
        };
        Ok((t0.elapsed(), b.len() as u64, data))
    });
    let body = got.as_ref().ok().map(|(_, _, d)| d.clone());
    t.answer(1, got.map(|(d, n, _)| (d, n)));
    (t.finish(), body)
}

/// Every op of one trial on the object store: the routes one after another (see the
/// module's doc); `src` is the source tree, `bucket_dir` the run directory's name.
pub(super) fn routes(s: &mut Steps, o: &ObjectSetup, src: &Path, bucket_dir: &str, w: Watches) -> Option<Stop> {
    let client = match o.endpoint.client() {
        Ok(c) => c,
        Err(e) => return Some(Stop::Failed(e.to_string())),
    };
    let root = match walk::open_root(src) {
        Ok(fd) => fd,
        Err(e) => return Some(Stop::Failed(format!("{}: {e}", src.display()))),
    };
    let files = match list_files(&root) {
        Ok(f) if f.is_empty() => return Some(Stop::Failed(format!("{}: no file to send", src.display()))),
        Ok(f) => f,
        Err(e) => return Some(Stop::Failed(e)),
    };
    let c = Ctx { client: &client, owner: o.endpoint.owner(), root: &root, files: &files, in_flight: o.in_flight };
    let routes = std::iter::once(None).chain(o.shardings.iter().map(|s| Some(*s)));
    for shard in routes {
        if let Some(stop) = route(s, &c, o, shard, (src, bucket_dir), w) {
            return Some(stop);
        }
    }
    None
}

/// One route's three steps, its objects deleted after them.
fn route(
    s: &mut Steps,
    c: &Ctx,
    o: &ObjectSetup,
    shard: Option<Sharding>,
    (src, bucket_dir): (&Path, &str),
    w: Watches,
) -> Option<Stop> {
    let name = route_name(shard);
    let prefix = format!("{}{bucket_dir}/{name}/", o.endpoint.base());
    let one = &c.files[c.files.len() / 2];
    let step = |s: &mut Steps, op: &str, reads: Option<&Path>, phase: &mut dyn FnMut() -> PhaseResult| {
        let io = Io { reads, writes: None, watch: w.dst };
        let mut r = match s.measure(op, io, phase) {
            Ok(r) => r,
            Err(e) => return Some(Stop::Failed(e)),
        };
        r.cost = r.requests.as_ref().map(|q| o.prices.cost(q));
        s.record(op, r)
    };
    let mut read = None;
    let mut sent = Vec::new();
    let mut stop = step(s, &format!("{name}:put"), Some(src), &mut || match shard {
        None => loose_put(c, &prefix),
        Some(sharding) => shards_put(c, &prefix, sharding, &mut sent),
    });
    if stop.is_none() {
        stop = step(s, &format!("{name}:get-all"), None, &mut || match shard {
            None => loose_get_all(c, &prefix),
            Some(_) => shards_get_all(c, &prefix),
        });
    }
    if stop.is_none() {
        stop = step(s, &format!("{name}:get-one"), None, &mut || {
            let (r, body) = get_one(c, &prefix, shard.is_some(), one);
            read = body;
            r
        });
    }
    if stop.is_none() {
        stop = untimed(same_bytes(c, one, read.as_deref(), &name));
    }
    // The route's objects go, whatever happened (untimed): the keys it sent.
    let keys: Vec<String> = match shard {
        None => c.files.iter().map(|f| format!("{prefix}{}", f.rel)).collect(),
        Some(_) => sent,
    };
    let failed = crate::engine::object::delete_own(c.client, keys);
    stop.or_else(|| failed.map(|e| Stop::Failed(format!("deleting {name}'s objects: {e}")))).or_else(interrupted)
}

/// The file read by get-one against the source's bytes.
fn same_bytes(c: &Ctx, f: &LocalFile, got: Option<&[u8]>, route: &str) -> Result<(), String> {
    let want = read_file(c.root, &f.rel)?;
    match got {
        Some(g) if g == want.as_slice() => Ok(()),
        Some(g) => Err(format!(
            "{route}:get-one: {} read back as {} bytes that differ from the source's {}",
            f.rel,
            g.len(),
            want.len()
        )),
        None => Err(format!("{route}:get-one: {} not read", f.rel)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names_carry_the_shard_size() {
        assert_eq!(size_label(1 << 20), "1MiB");
        assert_eq!(size_label(64 << 10), "64KiB");
        assert_eq!(size_label(3 << 30), "3GiB");
        assert_eq!(size_label(1_000_000), "1000000B");
        assert_eq!(size_label((1 << 20) + 1024), "1025KiB");
        let tar = |size| Sharding { format: Format::Tar, size };
        let zst = |size| Sharding { format: Format::TarZst, size };
        let ops = op_names(&[tar(64 << 10), tar(16 << 20), zst(64 << 10)]);
        assert_eq!(ops.len(), 12);
        assert_eq!(ops[0..3], ["loose:put", "loose:get-all", "loose:get-one"]);
        assert_eq!(ops[3], "tar@64KiB:put");
        assert_eq!(ops[8], "tar@16MiB:get-one");
        assert_eq!(ops[9], "tar.zst@64KiB:put");
    }

    #[test]
    fn the_tree_is_listed_sorted_and_links_refused() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("b/c")).unwrap();
        std::fs::write(d.path().join("b/c/x"), b"xyz").unwrap();
        std::fs::write(d.path().join("a"), b"").unwrap();
        let root = walk::open_root(d.path()).unwrap();
        let files = list_files(&root).unwrap();
        let got: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(got, ["a", "b/c/x"]);
        assert_eq!(read_file(&root, "b/c/x").unwrap(), b"xyz");
        std::os::unix::fs::symlink("a", d.path().join("b/l")).unwrap();
        assert!(list_files(&root).unwrap_err().contains("b/l: a symlink"));
        std::fs::remove_file(d.path().join("b/l")).unwrap();
        std::os::unix::fs::symlink("c", d.path().join("b/c2")).unwrap();
        assert!(read_file(&root, "b/c2/x").is_err(), "no symlink followed on the way");
    }
}
