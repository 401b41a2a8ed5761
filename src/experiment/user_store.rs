//! Where the experiments' objects go ([`Endpoint`]: a managed stack's bucket, or a URL
//! of the user's) and a bucket of the user's as a target of the tree experiments
//! ([`UserStore`]: `ladder --target s3://BUCKET/PREFIX` or `azblob://CONTAINER/PREFIX`,
//! `ops`, `clusters` …: the native ops `obj:*` on a store the tool did not make).
//!
//! A user's store is reached as the engines reach it (`storage::object_endpoint::
//! from_env`: the AWS environment variables and shared credentials file, or Azure's
//! `AZURE_STORAGE_*`; a secret is held in memory only) and checked with one LIST before anything is made: an endpoint
//! that does not answer, a bucket it has not or keys it refuses are one line, exit 2.
//! The run then writes only below a prefix of its own, `PREFIX/manyfiles-ladder-PID-
//! RANDOM/`, refused unless nothing is there yet; every trial's keys lie below it
//! (`RUN-DIRECTORY-NAME/objects/…`, the run directory being a local scratch one that
//! holds only the driver's marker). Objects are deleted by key, never by listing: the
//! ops delete the tree's keys, and a trial that failed or was stopped has the keys it
//! sent PUTs for deleted again afterwards ([`UserStore::sweep`], also after a signal),
//! once every request it sent has been answered. Whatever else is under PREFIX — or
//! under the run's own prefix, put there by someone else — stays as it was.
//!
//! A kill -9 gives the run no chance to delete: while it runs, a registry record
//! (`storage::kinds::user_objects`, best effort: without root there is no registry)
//! names the store — bucket, endpoint and region, never a credential — and the run's own
//! prefix, and is removed when the run ends ([`UserStore`]'s drop); `manyfiles cleanup`
//! of a killed run's record reaches the store again from its environment and deletes the
//! keys below that exact prefix (there, an object someone else put below it goes too).

use crate::engine::object::ObjectUrl;
use crate::error::{Error, Result};
use crate::storage::TargetInfo;
use crate::storage::object_client::{ObjectClient, Retries};
use crate::storage::object_endpoint::Reach;
use crate::storage::object_stack::{ObjectDetails, Provider};
use std::path::Path;

/// Where a run's objects go: a managed stack (`--fs s3…`, `--dst-fs s3…`: its bucket,
/// keys below the run directory's name) or a URL of the user's (keys below
/// [`Endpoint::base`] and the run directory's name; only keys this run wrote are deleted).
#[derive(Clone)]
pub enum Endpoint {
    Stack(Box<ObjectDetails>),
    Url { reach: Box<Reach>, url: ObjectUrl, base: String },
}

impl Endpoint {
    /// A URL of the user's, its keys below `base` (a prefix ending in `/`, or empty).
    pub fn url(reach: Reach, url: &ObjectUrl, base: String) -> Endpoint {
        Endpoint::Url { reach: Box::new(reach), url: url.clone(), base }
    }

    /// A fresh client (one per trial: no stale pooled connection).
    pub fn client(&self) -> Result<ObjectClient> {
        match self {
            Endpoint::Stack(d) => ObjectClient::connect(d, Retries::Never),
            Endpoint::Url { reach, url, .. } => ObjectClient::reach(reach, &url.bucket, Retries::Never),
        }
    }

    /// The keys' prefix above the run directory's name.
    pub fn base(&self) -> &str {
        match self {
            Endpoint::Stack(_) => "",
            Endpoint::Url { base, .. } => base,
        }
    }

    /// Whose API it speaks (a URL: its scheme's).
    pub fn provider(&self) -> Provider {
        match self {
            Endpoint::Stack(d) => d.object.provider,
            Endpoint::Url { url, .. } => url.provider,
        }
    }

    /// A bucket of the user's: keys are deleted again after a trial that did not end clean.
    pub fn is_users(&self) -> bool {
        matches!(self, Endpoint::Url { .. })
    }
}

/// `--target s3://…` or `azblob://…`: the text of a target that is a URL, parsed (None:
/// a directory).
pub fn target_url(p: &Path) -> Result<Option<ObjectUrl>> {
    match p.to_str().filter(|_| crate::engine::object::is_url(p)) {
        Some(text) => ObjectUrl::parse(text).map(Some).map_err(|e| Error::bad("--target", e)),
        None => Ok(None),
    }
}

/// The run's own name below PREFIX: `manyfiles-ladder-PID-RANDOM`.
fn run_name() -> String {
    let mut r = [0u8; 4];
    let random = std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut r));
    let bits = match random {
        Ok(()) => u32::from_le_bytes(r),
        // No /dev/urandom: the clock's nanoseconds.
        Err(_) => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos()),
    };
    format!("manyfiles-ladder-{}-{bits:08x}", std::process::id())
}

/// A bucket of the user's as a target: where it is reached, the run's own prefix, and
/// the local scratch directory the run directories (markers only) are made in.
pub struct UserStore {
    pub url: ObjectUrl,
    reach: Reach,
    /// `PREFIX/manyfiles-ladder-PID-RANDOM/`.
    pub run_prefix: String,
    scratch: tempfile::TempDir,
    /// The record `cleanup` finds if the run is killed (None: no registry here).
    registration: Option<crate::storage::registry::Registration>,
}

impl Drop for UserStore {
    /// The run ended (its trials deleted what they wrote, also after a signal): its
    /// record goes.
    fn drop(&mut self) {
        if let Some(r) = self.registration.take() {
            let _ = r.unregister();
        }
    }
}

/// Record the run's own prefix on `url` (reached by `reach`) for `cleanup`, before any
/// object is written; None without a registry (not root).
fn register(
    url: &ObjectUrl,
    reach: &Reach,
    run_prefix: &str,
    scratch: &Path,
) -> Option<crate::storage::registry::Registration> {
    use crate::storage::kinds::{KindRecord, user_objects::UserObjectsRecord};
    use crate::storage::registry;
    let record = UserObjectsRecord {
        provider: url.provider,
        bucket: url.bucket.clone(),
        run_prefix: run_prefix.to_string(),
        endpoint: reach.endpoint.clone(),
        region: reach.region.clone(),
        scratch: Some(scratch.to_path_buf()),
    };
    // A count of its own for each target of this process (two URLs in one second).
    static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let key = format!("{}-objects{n}", crate::storage::rundir::run_id());
    let rec = registry::Record { kind: KindRecord::UserObjects(record), ..registry::own_record(&url.to_string()) };
    registry::register(&key, rec).ok()
}

impl UserStore {
    /// Reach `url` from the environment and check it with one LIST (exit 2, one line,
    /// when it does not answer, has no such bucket or refuses the keys).
    pub fn check(url: &ObjectUrl) -> Result<Reach> {
        let reach = crate::storage::object_endpoint::from_env(url.provider)?;
        drop(crate::engine::object::connect(&reach, url, Retries::Never)?);
        Ok(reach)
    }

    /// Check `url`, choose the run's own prefix below it (refused when anything is
    /// there already) and make the scratch directory.
    pub fn open(url: &ObjectUrl) -> Result<UserStore> {
        let reach = Self::check(url)?;
        let run_prefix = format!("{}{}/", url.dir_prefix(), run_name());
        let client = ObjectClient::reach(&reach, &url.bucket, Retries::Never)?;
        let hidden = crate::measure::progress::Progress::hidden();
        let there = crate::engine::object::list_all(&client, &run_prefix, &hidden)?;
        if !there.is_empty() {
            return Err(Error::bad(
                "--target",
                format!(
                    "{}://{}/{run_prefix} already holds {} object(s): the run writes only below a prefix of its \
                     own that nothing else is under; run it again (another name is drawn)",
                    url.provider.name(),
                    url.bucket,
                    there.len()
                ),
            ));
        }
        let scratch = tempfile::Builder::new()
            .prefix("manyfiles-objects-")
            .tempdir()
            .map_err(|e| Error::failed(format!("cannot make a scratch directory for {url}: {e}")))?;
        let registration = register(url, &reach, &run_prefix, scratch.path());
        Ok(UserStore { url: url.clone(), reach, run_prefix, scratch, registration })
    }

    /// Where its run directories (markers only) are made.
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// How the run reaches it.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint::url(self.reach.clone(), &self.url, self.run_prefix.clone())
    }

    /// What the results record: the URL the user gave (never the endpoint's keys); a
    /// block of 1 byte (an object has none; the result schema's least).
    pub fn info(&self, id: &str) -> TargetInfo {
        let (url, kind) = (self.url.to_string(), self.url.provider.name());
        TargetInfo { block_size: 1, ..TargetInfo::unmounted(id, kind, &url, kind, &url) }
    }

    /// Delete `keys` (a trial's, below the run's own prefix) whatever happened, also
    /// after a signal; a line if some could not be.
    pub fn sweep(client: &ObjectClient, keys: Vec<String>) -> Option<String> {
        crate::engine::object::delete_own(client, keys).map(|e| format!("deleting the run's own objects: {e}"))
    }

    /// At the end: does anything remain below the run's own prefix? (Not deleted: the
    /// run deletes only keys it wrote.) A line for the user when so.
    pub fn leftovers(&self) -> Option<String> {
        let at = format!("{}://{}/{}", self.url.provider.name(), self.url.bucket, self.run_prefix);
        // Not a measurement: a client that retries, and a LIST that fails says so.
        let hidden = crate::measure::progress::Progress::hidden();
        let listed = ObjectClient::reach(&self.reach, &self.url.bucket, Retries::Backoff)
            .and_then(|client| crate::engine::object::list_all(&client, &self.run_prefix, &hidden));
        match listed {
            Err(e) => Some(format!(
                "manyfiles: could not check what remains below {at}: {e}; list it with `manyfiles scan {at}`"
            )),
            Ok(left) if !left.is_empty() => Some(format!(
                "manyfiles: {} object(s) remain below {at} that this run did not write (or could not delete); \
                 left as they are",
                left.len()
            )),
            Ok(_) => None,
        }
    }
}
