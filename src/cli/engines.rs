//! The engines that work on real trees: copy, sync, rm and scan (their arguments and
//! their translation into engine options), and their runs: the summary printed, the
//! JSON written, and the exit code's reason when anything failed.

use super::common::{check_output, cores, in_flight};
use super::out;
use clap::Args;
use manyfiles::engine::object::is_url;
use manyfiles::error::{Error, Result};
use manyfiles::ranks;
use manyfiles::storage::object_stack::Provider;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct CopyArgs {
    /// Source directory, or s3://BUCKET/PREFIX or azblob://CONTAINER/PREFIX
    #[arg(value_name = "SRC")]
    pub src: PathBuf,
    /// Destination directory: new or empty; or s3://BUCKET/PREFIX (azblob://CONTAINER/PREFIX):
    /// an empty prefix
    #[arg(value_name = "DST")]
    pub dst: PathBuf,
    /// Try a reflink (shared extents) first for every file
    #[arg(long)]
    pub reflink: bool,
    #[command(flatten)]
    pub common: CopyCommonArgs,
}

#[derive(Args, Debug)]
pub struct SyncArgs {
    /// Source directory, or s3://BUCKET/PREFIX or azblob://CONTAINER/PREFIX
    #[arg(value_name = "SRC")]
    pub src: PathBuf,
    /// Destination directory (made if missing), or s3://BUCKET/PREFIX or
    /// azblob://CONTAINER/PREFIX
    #[arg(value_name = "DST")]
    pub dst: PathBuf,
    /// Decide by content instead of size + mtime
    #[arg(long)]
    pub checksum: bool,
    /// Delete what DST has and SRC has not
    #[arg(long)]
    pub delete: bool,
    /// Compare only: write and delete nothing, report what would change
    #[arg(long, short = 'n')]
    pub dry_run: bool,
    /// With --delete: also delete what the filters exclude in DST (rules without their own
    /// side apply to SRC only; P rules still protect), as rsync's --delete-excluded
    #[arg(long, requires = "delete")]
    pub delete_excluded: bool,
    /// With --delete onto s3://BUCKET/ or azblob://CONTAINER/ (no prefix): delete what SRC
    /// has not anywhere in the bucket or container (refused without it)
    #[arg(long, requires = "delete")]
    pub whole_bucket: bool,
    #[command(flatten)]
    pub common: CopyCommonArgs,
}

#[derive(Args, Debug)]
pub struct CopyCommonArgs {
    /// Worker threads, parallel across directories, fixed (default: see --in-flight)
    #[arg(long)]
    pub threads: Option<usize>,
    /// Operations in flight, fixed at N: directories, and batches of a directory's entries
    /// (statx, compare, copy), on N threads. Default: on local storage, twice the
    /// available cores (sync --dry-run: the cores) with no limit; where a root is on FUSE,
    /// NFS, SMB, 9p, Ceph or AFS (each operation a round trip), adaptive from 16 up to 64
    /// while the storage keeps up; the summary's `in flight` line says which. With an
    /// s3:// or azblob:// side: requests in flight, 64 by default
    #[arg(long, value_name = "N", conflicts_with = "threads")]
    pub in_flight: Option<usize>,
    #[command(flatten)]
    pub s3: S3Args,
    /// Write the summary as JSON here
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress on stderr
    #[arg(long, short)]
    pub quiet: bool,
    /// Compare DST with SRC afterwards: contents, modes, mtimes and every attribute kept
    /// (owner, xattrs, ACLs, hard links, holes, flags); differences listed by kind, exit 1.
    /// After sync --dry-run: what differs now. With an object-store side: every object read back
    /// (a GET each, counted and priced) and compared byte for byte, and a download's mtimes
    #[arg(long)]
    pub verify: bool,
    /// List every change on stdout, one line each, in dry runs too: `new file a/b`,
    /// `changed file a/c (size, time)`, `type changed a/d (symlink, was file)`, `deleted
    /// a/e (and 12 entries below)`; in rsync's order (by name in each directory, a
    /// directory before what is below it), printed when the run ends. With --json, the
    /// same list is the document's `changes` array
    #[arg(long, short = 'i')]
    pub itemize: bool,
    /// How --itemize writes a change: `words` (above) or `rsync` (rsync's 11-character
    /// codes, `>f.st...... a/c`, `cd+++++++++ a/n/`, `*deleting   a/e`, as `rsync -i` prints)
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = ItemizeFormat::Words, requires = "itemize")]
    pub itemize_format: ItemizeFormat,
    /// Do not keep owner and group (kept by default: both as root, the group otherwise)
    #[arg(long)]
    pub no_owner: bool,
    /// Do not keep extended attributes (user.*; trusted.* and security.* as root)
    #[arg(long)]
    pub no_xattrs: bool,
    /// Do not keep POSIX ACLs (system.posix_acl_access/default)
    #[arg(long)]
    pub no_acls: bool,
    /// Copy hard-linked files as separate files (default: one inode in DST for one in SRC)
    #[arg(long)]
    pub no_hard_links: bool,
    /// Write holes of sparse files as zeros (default: holes found with SEEK_DATA/SEEK_HOLE kept)
    #[arg(long)]
    pub no_sparse: bool,
    /// Leave out FIFOs, sockets and device nodes (default: made; devices need root)
    #[arg(long)]
    pub no_specials: bool,
    /// Do not copy inode flags (chattr: immutable, append-only, nodump, compressed)
    #[arg(long)]
    pub no_flags: bool,
    /// Accept what the destination cannot hold (owners, modes, fine mtimes, xattrs, links
    /// on exFAT, say): still counted and listed, but not a failure (exit 0)
    #[arg(long)]
    pub lossy: bool,
    /// Start cold, as the ladder's cold phases do: before the clock starts, SRC's files
    /// (and sync's DST) are evicted from the page cache, and as root every cache is
    /// dropped (directories and inodes too); the summary says which. Refused (exit 2)
    /// when SRC is on a memory file system
    #[arg(long)]
    pub cold: bool,
    /// End the time durable: a syncfs of DST's file system inside the reported time
    /// (also shown apart as sync_s); without it the time ends when the copy returned
    #[arg(long)]
    pub durable: bool,
    #[command(flatten)]
    pub replace: super::common::Replace,
    /// Also enter mount points below DST: write into them and, with --delete, empty them
    /// (the mount point itself stays). Default: leave them alone, and report them (exit 1)
    #[arg(long)]
    pub cross_mounts: bool,
    #[command(flatten)]
    pub filters: super::common::FilterArgs,
}

/// How an s3:// or azblob:// URL is reached, on copy, sync, rm and scan.
#[derive(Args, Debug, Clone, Default)]
pub struct S3Args {
    /// Reach s3:// (azblob://) URLs through the object store `manyfiles mount s3… DIR`
    /// (`mount azblob… DIR`) brought up at DIR (its endpoint, credentials and network
    /// namespace). Without it, s3://: the endpoint, region and keys of the environment
    /// (AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, else
    /// AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials under AWS_PROFILE); azblob://:
    /// AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT + AZURE_STORAGE_KEY (+
    /// AZURE_STORAGE_BLOB_ENDPOINT)
    #[arg(long, value_name = "DIR", visible_alias = "store-via")]
    pub s3_via: Option<PathBuf>,
}

/// `--itemize-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ItemizeFormat {
    Words,
    Rsync,
}

/// Options for `copy` / `sync`, and where the JSON summary goes. `writes`: false for
/// `sync --dry-run`, which only walks.
pub fn copy_config(
    mode: manyfiles::engine::copy::Mode,
    src: &std::path::Path,
    dst: &std::path::Path,
    c: &CopyCommonArgs,
    writes: bool,
) -> Result<(manyfiles::engine::copy::Options, Option<PathBuf>)> {
    if let Some(j) = &c.json {
        check_output(j, "--json", c.replace.force)?;
    }
    let default = manyfiles::engine::copy::default_threads(cores(), writes);
    let (threads, in_flight_max) = in_flight(c.threads, c.in_flight, default, &[src, dst])?;
    let mut o = manyfiles::engine::copy::Options::new(mode, src, dst, threads);
    o.in_flight_max = in_flight_max;
    o.quiet = c.quiet;
    o.itemize = c.itemize;
    o.itemize_format = match c.itemize_format {
        ItemizeFormat::Words => manyfiles::engine::copy::itemize::Format::Words,
        ItemizeFormat::Rsync => manyfiles::engine::copy::itemize::Format::Rsync,
    };
    o.verify = c.verify;
    (o.cold, o.durable) = (c.cold, c.durable);
    o.cross_mounts = c.cross_mounts;
    o.filter = c.filters.filter()?.map(std::sync::Arc::new);
    o.keep = manyfiles::engine::copy::attrs::Keep {
        owner: !c.no_owner,
        xattrs: !c.no_xattrs,
        acls: !c.no_acls,
        hard_links: !c.no_hard_links,
        sparse: !c.no_sparse,
        specials: !c.no_specials,
        flags: !c.no_flags,
        lossy: c.lossy,
        ..Default::default()
    };
    Ok((o, c.json.clone()))
}

#[derive(Args, Debug)]
pub struct RmArgs {
    /// Files or directories to remove (a symlink is removed itself, never followed); or
    /// one s3://BUCKET/PREFIX (azblob://CONTAINER/PREFIX): the object PREFIX and every
    /// object below PREFIX/
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// With s3://BUCKET/ or azblob://CONTAINER/ (no prefix): delete every object of the
    /// bucket or container (refused without it)
    #[arg(long)]
    pub whole_bucket: bool,
    #[command(flatten)]
    pub s3: S3Args,
    /// Also remove below mount points inside the trees, and empty a PATH that is a mount
    /// point (kept, said in the summary). Default: mount points inside are left and
    /// reported (exit 1); a PATH that is one is refused (exit 2)
    #[arg(long)]
    pub cross_mounts: bool,
    /// Worker threads, parallel across directories, fixed (default: see --in-flight)
    #[arg(long)]
    pub threads: Option<usize>,
    /// Operations in flight, fixed at N: directories, and batches of a directory's unlinks,
    /// on N threads. Default: on local storage, the available cores with no limit; where a
    /// path is on FUSE, NFS, SMB, 9p, Ceph or AFS (each operation a round trip), adaptive
    /// from 16 up to 64 while the storage keeps up; the summary's `in flight` line says
    /// which
    #[arg(long, value_name = "N", conflicts_with = "threads")]
    pub in_flight: Option<usize>,
    /// No progress line
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Write the summary as JSON here (`-`: standard output)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Start cold: before the clock starts, the trees are evicted from the page cache, and
    /// as root every cache is dropped (directories and inodes too); the summary says which
    #[arg(long)]
    pub cold: bool,
    /// End the time durable: a syncfs of every file system removed from inside the
    /// reported time (also shown apart as sync_s)
    #[arg(long)]
    pub durable: bool,
    #[command(flatten)]
    pub replace: super::common::Replace,
    #[command(flatten)]
    pub filters: super::common::FilterArgs,
}

pub fn rm_config(a: &RmArgs) -> Result<(manyfiles::engine::rm::Options, Option<PathBuf>)> {
    if a.filters.files_from.is_some() {
        return Err(Error::bad("--files-from", "not supported by rm (name the paths to remove as PATHs)"));
    }
    if let Some(j) = &a.json {
        check_output(j, "--json", a.replace.force)?;
    }
    let (threads, in_flight_max) =
        in_flight(a.threads, a.in_flight, cores(), &a.paths.iter().map(|p| p.as_path()).collect::<Vec<_>>())?;
    let o = manyfiles::engine::rm::Options {
        paths: a.paths.clone(),
        threads,
        in_flight_max,
        cross_mounts: a.cross_mounts,
        quiet: a.quiet,
        cold: a.cold,
        durable: a.durable,
        filter: a.filters.filter()?.map(std::sync::Arc::new),
    };
    Ok((o, a.json.clone()))
}

#[derive(Args, Debug)]
pub struct ScanArgs {
    /// Directory to scan (never written to), or s3://BUCKET/PREFIX or azblob://CONTAINER/PREFIX
    /// (listed and summed; no --db)
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    #[command(flatten)]
    pub s3: S3Args,
    /// Index to write: sqlite:FILE (embedded) or postgres://USER@HOST[:PORT]/DB; without it, walk and statx only
    #[arg(long, value_name = "URL", value_parser = super::common::DB_HINTS, hide_possible_values = true)]
    pub db: Option<String>,
    /// Also write the tree's shape (counts and histograms, no names) as JSON here
    #[arg(long, value_name = "FILE")]
    pub inventory: Option<PathBuf>,
    /// Walk threads, parallel across directories, fixed (default: see --in-flight)
    #[arg(long)]
    pub threads: Option<usize>,
    /// Operations in flight, fixed at N: directories, and batches of a directory's statx
    /// calls, on N threads. Default: on local storage, the available cores with no limit;
    /// where the path is on FUSE, NFS, SMB, 9p, Ceph or AFS (each operation a round trip),
    /// adaptive from 16 up to 64 while the storage keeps up; the report's `in flight`
    /// line says which
    #[arg(long, value_name = "N", conflicts_with = "threads")]
    pub in_flight: Option<usize>,
    /// Write the scan report (counts, diff, phase times, provenance) as JSON here
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Start cold: before the clock starts, the tree is evicted from the page cache, and as
    /// root every cache is dropped (directories and inodes too); the report says which
    #[arg(long)]
    pub cold: bool,
    /// End the time durable: a syncfs of the SQLite index's file system inside the reported
    /// time (also shown apart as sync_s). Needs --db sqlite:FILE (without --db nothing is
    /// written)
    #[arg(long)]
    pub durable: bool,
    #[command(flatten)]
    pub replace: super::common::Replace,
    #[command(flatten)]
    pub filters: super::common::FilterArgs,
}

pub fn scan_config(a: &ScanArgs, command_line: Vec<String>) -> Result<manyfiles::engine::scan::ScanConfig> {
    let db =
        a.db.as_deref().map(manyfiles::engine::scan::DbUrl::parse).transpose().map_err(|e| Error::bad("--db", e))?;
    for (p, flag) in [(&a.inventory, "--inventory"), (&a.json, "--json")] {
        if let Some(p) = p {
            check_output(p, flag, a.replace.force)?;
        }
    }
    // --cold and --durable are judged by the scan (ScanConfig::check_timing), after PATH.
    let (threads, in_flight_max) = in_flight(a.threads, a.in_flight, cores(), &[a.path.as_path()])?;
    let cfg = manyfiles::engine::scan::ScanConfig {
        root: a.path.clone(),
        db,
        inventory: a.inventory.clone(),
        threads,
        in_flight_max,
        json: a.json.clone(),
        command_line,
        cold: a.cold,
        durable: a.durable,
        filter: a.filters.filter()?.map(std::sync::Arc::new),
    };
    Ok(cfg)
}

/// `copy SRC DST`.
pub fn copy(a: &CopyArgs, command_line: Vec<String>) -> Result<()> {
    if is_url(&a.src) || is_url(&a.dst) {
        let how = (false, false, false, false);
        return objects_copy(false, &a.src, &a.dst, &a.common, &[(a.reflink, "--reflink")], how);
    }
    let (mut o, json) = copy_config(manyfiles::engine::copy::Mode::Copy, &a.src, &a.dst, &a.common, true)?;
    o.reflink = a.reflink;
    copy_report(o, json.as_deref(), command_line)
}

/// `sync SRC DST`.
pub fn sync(a: &SyncArgs, command_line: Vec<String>) -> Result<()> {
    if is_url(&a.src) || is_url(&a.dst) {
        let how = (a.dry_run, a.delete, a.delete_excluded, a.whole_bucket);
        return objects_copy(true, &a.src, &a.dst, &a.common, &[(a.checksum, "--checksum")], how);
    }
    if a.whole_bucket {
        return Err(Error::bad("--whole-bucket", "only with --delete onto s3://BUCKET/ or azblob://CONTAINER/"));
    }
    let (mut o, json) = copy_config(manyfiles::engine::copy::Mode::Sync, &a.src, &a.dst, &a.common, !a.dry_run)?;
    (o.checksum, o.delete, o.dry_run) = (a.checksum, a.delete, a.dry_run);
    if a.delete && a.common.filters.files_from.is_some() {
        return Err(Error::bad(
            "--files-from",
            "not with --delete yet (what a listed directory's deletions are is rsync's -r question)",
        ));
    }
    if a.delete_excluded {
        let mut f = o.filter.as_deref().cloned().unwrap_or_default();
        f.delete_excluded();
        o.filter = Some(std::sync::Arc::new(f));
    }
    copy_report(o, json.as_deref(), command_line)
}

/// Run a copy or sync, print its summary (and failures), write the JSON; non-zero exit
/// when anything failed or differed.
fn copy_report(mut o: manyfiles::engine::copy::Options, json: Option<&Path>, args: Vec<String>) -> Result<()> {
    // --itemize --json: the changes go into the document when the run ends.
    if o.itemize
        && let Some(p) = json
    {
        if ranks::size() > 1 {
            return Err(Error::bad(
                "--itemize",
                "with --json is not supported under MPI yet (run it without --json for the lines)",
            ));
        }
        o.changes = Some(std::sync::Arc::new(manyfiles::engine::copy::itemize::JsonLog::new(p)));
    }
    // Under a launcher every rank copies part of the tree (dist::copy); one rank is the
    // local engine, as always.
    let mut s = if ranks::size() > 1 {
        manyfiles::engine::copy::mpi::run(&o, args)?
    } else {
        manyfiles::engine::copy::run(&o, args)?
    };
    out(&s.text());
    if let Some(p) = json.filter(|_| ranks::is_root()) {
        manyfiles::engine::copy::write_json(&o, &mut s, p)?;
    }
    if s.interrupted {
        return Err(interrupted());
    }
    if s.ok() {
        return Ok(());
    }
    let what = match s.verify.as_ref() {
        Some(v) => format!("{} failed, {} differences after verify", s.failed, v.differences),
        None => format!("{} failed", s.failed),
    };
    let what = match s.losses.iter().map(|l| l.count).sum::<u64>() {
        0 => what,
        _ if s.losses_accepted => what,
        n => format!("{what}, {n} losses (what the destination cannot hold; --lossy or --no-… accepts)"),
    };
    let what = match &s.timing.sync_error {
        Some(e) => format!("{what}; --durable: {e}"),
        None => what,
    };
    Err(Error::failed(what))
}

/// `rm PATH...`.
pub fn rm(a: &RmArgs) -> Result<()> {
    if a.paths.iter().any(|p| is_url(p)) {
        return objects_rm(a);
    }
    let (o, json) = rm_config(a)?;
    // Under a launcher every rank removes part of the same trees (dist::rm); one
    // rank is the local engine, as always.
    let s = if ranks::size() > 1 { manyfiles::engine::rm::mpi::run(&o)? } else { manyfiles::engine::rm::run(&o)? };
    out(&s.text());
    if let Some(p) = json.filter(|_| ranks::is_root()) {
        let text = serde_json::to_vec_pretty(&s).map_err(|e| Error::failed(e.to_string()))?;
        manyfiles::fs::output::write_file(&p, &text)?;
    }
    if s.interrupted {
        return Err(interrupted());
    }
    if s.failed > 0 {
        let what = if s.failed == 1 { "1 entry" } else { &format!("{} entries", s.failed) };
        return Err(Error::failed(format!("{what} could not be removed")));
    }
    if let Some(e) = &s.timing.sync_error {
        return Err(Error::failed(format!("--durable: {e} (what was removed may not be on the storage)")));
    }
    Ok(())
}

/// `scan TREE`.
pub fn scan(a: &ScanArgs, command_line: Vec<String>) -> Result<()> {
    if is_url(&a.path) {
        return objects_scan(a);
    }
    let cfg = scan_config(a, command_line)?;
    // Under a launcher every rank scans part of the tree, rank 0 writes the index.
    let r =
        if ranks::size() > 1 { manyfiles::engine::scan::mpi::run(&cfg)? } else { manyfiles::engine::scan::scan(&cfg)? };
    out(&r.text());
    if let Some(signal) = r.interrupted_by {
        return Err(Error::Interrupted { signal });
    }
    if r.denied + r.errors > 0 {
        // Partial: the rest was indexed, but the exit code must say so (as copy/sync do).
        return Err(Error::failed(format!(
            "scan incomplete: {} directories denied, {} other errors (the rest was scanned)",
            r.denied, r.errors
        )));
    }
    if let Some(e) = &r.timing.sync_error {
        return Err(Error::failed(format!("--durable: {e} (the index may not be on the storage)")));
    }
    Ok(())
}

/// The error of a job that was interrupted: by a signal here, or (under MPI) on another
/// rank, which every rank learns from the summary.
fn interrupted() -> Error {
    match manyfiles::signals::pending() {
        0 => Error::failed("interrupted on another rank: the rest was left as it was"),
        signal => Error::Interrupted { signal },
    }
}

/// How the object-store URLs of a command (`provider`'s) are reached: a mount's stack,
/// or the environment.
fn s3_reach(a: &S3Args, provider: Provider) -> Result<manyfiles::storage::object_endpoint::Reach> {
    if ranks::size() > 1 {
        return Err(Error::bad(
            format!("{}://", provider.name()),
            "the object-store engines run on one rank (not under MPI)",
        ));
    }
    match &a.s3_via {
        Some(dir) => manyfiles::storage::object_endpoint::from_mount(dir, provider),
        None => manyfiles::storage::object_endpoint::from_env(provider),
    }
}

/// The provider of a copy's or sync's object sides: one, or both sides' if they agree.
fn sides_provider(src: &manyfiles::engine::object::Side, dst: &manyfiles::engine::object::Side) -> Result<Provider> {
    use manyfiles::engine::object::Side;
    match (src, dst) {
        (Side::Object(a), Side::Object(b)) if a.provider != b.provider => Err(Error::bad(
            "DST",
            format!("{b} and {a}: object to object copies within one store only (a server-side copy)"),
        )),
        (Side::Object(u), _) | (_, Side::Object(u)) => Ok(u.provider),
        _ => Err(Error::bad("SRC", "neither side is an s3:// or azblob:// URL")),
    }
}

/// Refuse the flags an object-store run does not do (yet): each (given, flag).
fn refuse_for_objects(given: &[(bool, &str)]) -> Result<()> {
    match given.iter().find(|g| g.0) {
        Some((_, flag)) => Err(Error::bad(*flag, "not with an object-store side (s3://, azblob://) (yet)")),
        None => Ok(()),
    }
}

/// What the requests a run sent cost at the provider's list prices (AWS S3 Standard's,
/// Azure Blob hot LRS's), as a line, and the same as JSON for the summary document.
fn requests_price(r: &manyfiles::measure::RequestCounts, provider: Provider) -> (String, serde_json::Value) {
    use manyfiles::results::prices::{PriceTable, fmt_amount};
    let table = match provider {
        Provider::S3 => PriceTable::aws_s3_standard(),
        Provider::Azblob => PriceTable::azure_blob_hot(),
    };
    let cost = table.cost(r);
    let line = format!(
        "price of these requests: {} at {} (requests only: no storage, no data transfer)\n",
        fmt_amount(cost.amount, &cost.currency),
        cost.prices
    );
    (line, serde_json::to_value(&cost).unwrap_or_default())
}

/// Print a summary with its price; write it (and the price as `cost`) as JSON.
fn objects_report(
    text: String,
    doc: serde_json::Value,
    (r, provider): (&manyfiles::measure::RequestCounts, Provider),
    json: Option<&Path>,
) -> Result<()> {
    let (line, cost) = requests_price(r, provider);
    out(&format!("{text}{line}"));
    if let Some(p) = json {
        let mut doc = doc;
        doc["cost"] = cost;
        let text = serde_json::to_vec_pretty(&doc).map_err(|e| Error::failed(e.to_string()))?;
        manyfiles::fs::output::write_file(p, &text)?;
    }
    Ok(())
}

/// `copy`/`sync` with an s3:// side; `(dry_run, delete, delete_excluded, whole_bucket)`
/// are sync's.
fn objects_copy(
    sync: bool,
    src: &Path,
    dst: &Path,
    c: &CopyCommonArgs,
    own: &[(bool, &str)],
    (dry_run, delete, delete_excluded, whole_bucket): (bool, bool, bool, bool),
) -> Result<()> {
    use manyfiles::engine::object::{Keep, Options, Side};
    refuse_for_objects(own)?;
    refuse_for_objects(&[(c.cold, "--cold"), (c.durable, "--durable"), (c.cross_mounts, "--cross-mounts")])?;
    if delete && c.filters.files_from.is_some() {
        return Err(Error::bad(
            "--files-from",
            "not with --delete yet (what a listed directory's deletions are is rsync's -r question)",
        ));
    }
    let mut filter = c.filters.filter()?;
    if let Some(f) = filter.as_mut().filter(|_| delete_excluded) {
        f.delete_excluded();
    }
    if let Some(j) = &c.json {
        check_output(j, "--json", c.replace.force)?;
    }
    let (src, dst) = (Side::of(src, "SRC")?, Side::of(dst, "DST")?);
    let provider = sides_provider(&src, &dst)?;
    let o = Options {
        sync,
        src,
        dst,
        reach: s3_reach(&c.s3, provider)?,
        in_flight: c.in_flight.or(c.threads).unwrap_or(manyfiles::engine::object::DEFAULT_IN_FLIGHT).max(1),
        dry_run,
        delete,
        whole_bucket,
        quiet: c.quiet,
        keep: Keep {
            owner: !c.no_owner,
            xattrs: !c.no_xattrs,
            hard_links: !c.no_hard_links,
            specials: !c.no_specials,
            lossy: c.lossy,
        },
        filter: filter.map(std::sync::Arc::new),
        itemize: c.itemize,
        verify: c.verify,
    };
    let s = manyfiles::engine::object::run(&o)?;
    let doc = serde_json::to_value(&s).map_err(|e| Error::failed(e.to_string()))?;
    // --itemize: the changes, in rsync's order, before the summary (as copy prints them).
    let format = match c.itemize_format {
        ItemizeFormat::Words => manyfiles::engine::copy::itemize::Format::Words,
        ItemizeFormat::Rsync => manyfiles::engine::copy::itemize::Format::Rsync,
    };
    let changes = s.changes.as_deref().map(|c| manyfiles::engine::object::changes::lines(c, format));
    objects_report(changes.unwrap_or_default() + &s.text(), doc, (&s.requests, provider), c.json.as_deref())?;
    if s.interrupted {
        return Err(interrupted());
    }
    if s.ok() {
        return Ok(());
    }
    let what = match s.verify.as_ref() {
        Some(v) => format!("{} failed, {} differences after verify", s.failed, v.differences),
        None => format!("{} failed", s.failed),
    };
    Err(Error::failed(match s.losses.iter().map(|l| l.count).sum::<u64>() {
        n if n > 0 && !s.losses_accepted => {
            format!("{what}, {n} losses (what an object cannot hold; --lossy or --no-… accepts)")
        }
        _ => what,
    }))
}

/// `rm s3://BUCKET/PREFIX`.
fn objects_rm(a: &RmArgs) -> Result<()> {
    let [path] = a.paths.as_slice() else {
        return Err(Error::bad("PATH", "rm takes one s3:// or azblob:// URL at a time, and no local path beside it"));
    };
    refuse_for_objects(&[(a.cold, "--cold"), (a.durable, "--durable"), (a.cross_mounts, "--cross-mounts")])?;
    if a.filters.files_from.is_some() {
        return Err(Error::bad("--files-from", "not supported by rm (name the paths to remove as PATHs)"));
    }
    if let Some(j) = &a.json {
        check_output(j, "--json", a.replace.force)?;
    }
    let url =
        manyfiles::engine::object::ObjectUrl::parse(&path.to_string_lossy()).map_err(|e| Error::bad("PATH", e))?;
    let provider = url.provider;
    let o = manyfiles::engine::object::rm::Options {
        url,
        reach: s3_reach(&a.s3, provider)?,
        in_flight: a.in_flight.or(a.threads).unwrap_or(manyfiles::engine::object::DEFAULT_IN_FLIGHT).max(1),
        quiet: a.quiet,
        whole_bucket: a.whole_bucket,
        filter: a.filters.filter()?.map(std::sync::Arc::new),
    };
    let s = manyfiles::engine::object::rm::run(&o)?;
    let doc = serde_json::to_value(&s).map_err(|e| Error::failed(e.to_string()))?;
    objects_report(s.text(), doc, (&s.requests, provider), a.json.as_deref())?;
    if s.interrupted {
        return Err(interrupted());
    }
    match s.failed {
        0 => Ok(()),
        n => Err(Error::failed(format!("{n} objects could not be deleted"))),
    }
}

/// `scan s3://BUCKET/PREFIX`.
fn objects_scan(a: &ScanArgs) -> Result<()> {
    refuse_for_objects(&[
        (a.db.is_some(), "--db"),
        (a.inventory.is_some(), "--inventory"),
        (a.cold, "--cold"),
        (a.durable, "--durable"),
        (a.threads.is_some() || a.in_flight.is_some(), "--threads/--in-flight"),
    ])?;
    if let Some(j) = &a.json {
        check_output(j, "--json", a.replace.force)?;
    }
    let url =
        manyfiles::engine::object::ObjectUrl::parse(&a.path.to_string_lossy()).map_err(|e| Error::bad("PATH", e))?;
    let filter = a.filters.filter()?.map(std::sync::Arc::new);
    let provider = url.provider;
    let o = manyfiles::engine::object::scan::Options { url, reach: s3_reach(&a.s3, provider)?, quiet: false, filter };
    let s = manyfiles::engine::object::scan::run(&o)?;
    let doc = serde_json::to_value(&s).map_err(|e| Error::failed(e.to_string()))?;
    objects_report(s.text(), doc, (&s.requests, provider), a.json.as_deref())?;
    if s.interrupted {
        return Err(interrupted());
    }
    Ok(())
}
