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
//! names the store — bucket, endpoint and region, never a credential —, the run's own
//! prefix and its nonce ([`Claim`]), and is removed when the run ends ([`UserStore`]'s
//! drop); every object the run PUTs carries the nonce's mark of its key
//! (`storage::object_owner`), and `manyfiles cleanup` of a killed run's record reaches
//! the store again from its environment and deletes the keys below that exact prefix
//! that carry it (an object someone else put below it stays, and is counted).
//! `predict --on` and `pack --dst-target` claim their own prefixes the same way.

use crate::engine::object::ObjectUrl;
use crate::error::{Error, Result};
use crate::storage::TargetInfo;
use crate::storage::object_client::{ObjectClient, Retries};
use crate::storage::object_endpoint::Reach;
use crate::storage::object_owner::Owner;
use crate::storage::object_stack::{ObjectDetails, Provider};
use std::path::Path;

/// Where a run's objects go: a managed stack (`--fs s3…`, `--dst-fs s3…`: its bucket,
/// keys below the run directory's name) or a URL of the user's (keys below
/// [`Endpoint::base`] and the run directory's name; only keys this run wrote are deleted,
/// and every object it PUTs carries its owner's mark).
#[derive(Clone)]
pub enum Endpoint {
    Stack(Box<ObjectDetails>),
    Url { reach: Box<Reach>, url: ObjectUrl, base: String, owner: Owner },
}

impl Endpoint {
    /// A URL of the user's, its keys below `base` (a prefix ending in `/`, or empty), its
    /// objects marked as `owner`'s.
    pub fn url(reach: Reach, url: &ObjectUrl, base: String, owner: Owner) -> Endpoint {
        Endpoint::Url { reach: Box::new(reach), url: url.clone(), base, owner }
    }

    /// Whose mark the objects PUT there carry (None: a managed stack's, no mark).
    pub fn owner(&self) -> Option<&Owner> {
        match self {
            Endpoint::Stack(_) => None,
            Endpoint::Url { owner, .. } => Some(owner),
        }
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

/// A run's own name below PREFIX: `manyfiles-WHAT-PID-RANDOM` (`ladder`, `pack`).
pub fn run_name(what: &str) -> String {
    let mut r = [0u8; 4];
    let random = std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut r));
    let bits = match random {
        Ok(()) => u32::from_le_bytes(r),
        // No /dev/urandom: the clock's nanoseconds.
        Err(_) => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos()),
    };
    format!("manyfiles-{what}-{}-{bits:08x}", std::process::id())
}

/// A bucket of the user's as a target: where it is reached, the run's own prefix, and
/// the local scratch directory the run directories (markers only) are made in.
pub struct UserStore {
    pub url: ObjectUrl,
    reach: Reach,
    /// `PREFIX/manyfiles-ladder-PID-RANDOM/`.
    pub run_prefix: String,
    scratch: tempfile::TempDir,
    claim: Claim,
}

/// A run's claim on its own prefix in a store of the user's: its nonce, whose mark every
/// object it PUTs carries, and the record `cleanup` finds if the run is killed (removed
/// when the claim is dropped: the run ended, its trials deleted what they wrote).
pub struct Claim {
    pub owner: Owner,
    /// None: no registry here (not root).
    registration: Option<crate::storage::registry::Registration>,
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(r) = self.registration.take() {
            let _ = r.unregister();
        }
    }
}

impl Claim {
    /// Draw the nonce and record the run's own prefix on `url` (reached by `reach`; through
    /// the mount `via`, if one) for `cleanup`, before any object is written; the record
    /// is best effort (none without a registry).
    pub fn register(
        url: &ObjectUrl,
        reach: &Reach,
        run_prefix: &str,
        (scratch, via): (Option<&Path>, Option<&Path>),
    ) -> Result<Claim> {
        use crate::storage::kinds::{KindRecord, user_objects::UserObjectsRecord};
        use crate::storage::registry;
        let owner = Owner::new()?;
        let record = UserObjectsRecord {
            provider: url.provider,
            bucket: url.bucket.clone(),
            run_prefix: run_prefix.to_string(),
            endpoint: reach.endpoint.clone(),
            region: reach.region.clone(),
            scratch: scratch.map(Path::to_path_buf),
            owner: Some(owner.to_hex()),
            via: via.and_then(|d| std::fs::canonicalize(d).ok()),
        };
        // A count of its own for each claim of this process (two URLs in one second).
        static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let key = format!("{}-objects{n}", crate::storage::rundir::run_id());
        let rec = registry::Record { kind: KindRecord::UserObjects(record), ..registry::own_record(&url.to_string()) };
        Ok(Claim { owner, registration: registry::register(&key, rec).ok() })
    }
}

/// Refuse `run_prefix` on `url` unless nothing is below it yet (`flag`: the option that
/// named the store).
pub fn check_unused(client: &ObjectClient, url: &ObjectUrl, run_prefix: &str, flag: &str) -> Result<()> {
    let hidden = crate::measure::progress::Progress::hidden();
    let there = crate::engine::object::list_all(client, run_prefix, &hidden)?;
    if there.is_empty() {
        return Ok(());
    }
    Err(Error::bad(
        flag,
        format!(
            "{}://{}/{run_prefix} already holds {} object(s): the run writes only below a prefix of its own that \
             nothing else is under; run it again (another name is drawn)",
            url.provider.name(),
            url.bucket,
            there.len()
        ),
    ))
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
        let run_prefix = format!("{}{}/", url.dir_prefix(), run_name("ladder"));
        let client = ObjectClient::reach(&reach, &url.bucket, Retries::Never)?;
        check_unused(&client, url, &run_prefix, "--target")?;
        let scratch = tempfile::Builder::new()
            .prefix("manyfiles-objects-")
            .tempdir()
            .map_err(|e| Error::failed(format!("cannot make a scratch directory for {url}: {e}")))?;
        let claim = Claim::register(url, &reach, &run_prefix, (Some(scratch.path()), None))?;
        Ok(UserStore { url: url.clone(), reach, run_prefix, scratch, claim })
    }

    /// Where its run directories (markers only) are made.
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// How the run reaches it.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint::url(self.reach.clone(), &self.url, self.run_prefix.clone(), self.claim.owner.clone())
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
