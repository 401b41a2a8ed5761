//! A store of the user's written by a run (`ladder`/`ops --target s3://BUCKET/PREFIX`,
//! `experiment::user_store`; `predict --on s3://…`, `experiment::calibrate_objects`;
//! `pack --dst-target s3://…`, `experiment::pack::objects`; `azblob://…` the same): the
//! run writes only below a prefix of its own (`PREFIX/manyfiles-ladder-PID-RANDOM/`,
//! `…/manyfiles-pack-PID-RANDOM/`, `…/manyfiles-calibration-PID[-N]/`), marks every
//! object it PUTs as its own (`storage::object_owner`) and deletes what it wrote before it
//! ends; a kill -9 leaves those objects. Its record names the store — provider, bucket,
//! endpoint and region, never a credential —, that prefix and the run's nonce; `cleanup`
//! reaches the store again from its own environment (the AWS or Azure variables, as the
//! run did) only when they point at the same endpoint and region — or through the
//! `manyfiles mount` the run named with `--s3-via` —, lists the keys below that exact
//! prefix, HEADs each and deletes those that carry the run's mark: nothing above or
//! beside the prefix, nothing below it that the run did not write (counted and reported,
//! left as it is), and no prefix that is not one the tool names (a record edited to name
//! another is left alone). A record of an older build (no nonce) deletes nothing. Nothing
//! is mounted.

use super::super::fsspec::FsSpec;
use super::super::managed::ManagedFs;
use super::super::object_owner::{Owner, Swept};
use super::super::object_stack::Provider;
use super::super::registry::{CleanupReport, MountEntry, Record};
use super::{Kind, Preflight};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// What undoes a trial on a user's bucket: where the store is, and the run's own prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserObjectsRecord {
    pub provider: Provider,
    pub bucket: String,
    /// `PREFIX/manyfiles-ladder-PID-RANDOM/` (or that name alone, at the bucket's top;
    /// `manyfiles-pack-PID-RANDOM`, `manyfiles-calibration-PID[-N]` the same).
    pub run_prefix: String,
    /// The endpoint the run reached (`AWS_ENDPOINT_URL`; None: AWS's own), no credential.
    #[serde(default)]
    pub endpoint: Option<String>,
    pub region: String,
    /// The local scratch directory its run directories (markers only) were made in
    /// (`manyfiles-objects-*`): removed once empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scratch: Option<std::path::PathBuf>,
    /// The run's nonce (`object_owner::Owner`, 32 hex digits): its objects carry its mark.
    /// None: a record of an older build, which marked nothing (nothing is deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The `manyfiles mount` the run reached the store through (`--s3-via DIR`); None: the
    /// environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<std::path::PathBuf>,
}

/// Is `p` a run's own prefix as the tool names them: ending in `/`, its last part
/// `manyfiles-ladder-PID-RANDOM` or `manyfiles-pack-PID-RANDOM` (RANDOM: 8 hex digits), or
/// `manyfiles-calibration-PID` or `manyfiles-calibration-PID-N`?
pub fn is_run_prefix(p: &str) -> bool {
    let Some(body) = p.strip_suffix('/') else { return false };
    let last = body.rsplit('/').next().unwrap_or(body);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = last.strip_prefix("manyfiles-calibration-") {
        return match rest.split_once('-') {
            Some((pid, n)) => digits(pid) && digits(n),
            None => digits(rest),
        };
    }
    let Some(rest) = last.strip_prefix("manyfiles-ladder-").or_else(|| last.strip_prefix("manyfiles-pack-")) else {
        return false;
    };
    match rest.split_once('-') {
        Some((pid, random)) => {
            digits(pid) && random.len() == 8 && random.bytes().all(|b| b.is_ascii_hexdigit())
        }
        None => false,
    }
}

impl UserObjectsRecord {
    /// `s3://BUCKET/RUN_PREFIX`, for messages.
    fn url(&self) -> String {
        format!("{}://{}/{}", self.provider.name(), self.bucket, self.run_prefix)
    }

    /// How this environment reaches the run's store: the mount it named, or the
    /// environment when it points where the run's did. Err: a line why not.
    fn reach(&self) -> std::result::Result<Option<super::super::object_endpoint::Reach>, String> {
        use super::super::object_endpoint;
        let url = self.url();
        if let Some(dir) = &self.via {
            // The mount's store goes with it when it is taken down: nothing is left then.
            if !object_endpoint::store_mounted_at(dir) {
                return Ok(None);
            }
            return object_endpoint::from_mount(dir, self.provider)
                .map(Some)
                .map_err(|e| format!("{url}: cannot reach it through {} ({e}); left for a later cleanup", dir.display()));
        }
        let reach = object_endpoint::from_env(self.provider)
            .map_err(|e| format!("{url}: cannot reach it from this environment ({e}); left for a later cleanup"))?;
        if reach.endpoint != self.endpoint || reach.region != self.region {
            let at = |e: &Option<String>, r: &str| e.clone().unwrap_or_else(|| format!("AWS S3 in {r}"));
            return Err(format!(
                "{url}: the run reached {}, this environment reaches {}; left for a cleanup with the run's settings",
                at(&self.endpoint, &self.region),
                at(&reach.endpoint, &reach.region)
            ));
        }
        Ok(Some(reach))
    }

    /// Delete the objects below the run's own prefix that carry the run's mark, reached
    /// from this environment: how many, and how many others were left. An error line
    /// when the environment points elsewhere or a request failed.
    fn sweep(&self) -> std::result::Result<Swept, String> {
        use super::super::object_client::{ObjectClient, Retries};
        let url = self.url();
        if !is_run_prefix(&self.run_prefix) {
            return Err(format!("{url}: not a prefix this tool names its runs by; left alone"));
        }
        let Some(reach) = self.reach()? else { return Ok(Swept::default()) };
        let client = ObjectClient::reach(&reach, &self.bucket, Retries::Backoff).map_err(|e| format!("{url}: {e}"))?;
        let owner = match self.owner.as_deref().map(Owner::from_hex) {
            Some(None) => return Err(format!("{url}: its run's nonce is not 32 hex digits; left alone")),
            // An older build's record: its objects carry no mark; counted, none deleted.
            o => o.flatten(),
        };
        super::super::object_owner::sweep_owned(&client, &self.run_prefix, owner.as_ref())
        .map_err(|e| format!("{url}: {e}"))
    }
}

/// The scratch directory `d` (named `manyfiles-objects-*`): its run directories (each
/// only with its marker, as `cleanup` removes a run directory), then itself if empty.
fn remove_scratch(d: &std::path::Path, rep: &mut CleanupReport) {
    if !d.file_name().is_some_and(|n| n.to_string_lossy().starts_with("manyfiles-objects-")) {
        rep.problems.push(format!("{}: not a scratch directory of this tool; left alone", d.display()));
        return;
    }
    let inside = std::fs::read_dir(d).into_iter().flatten().flatten().map(|e| e.path());
    for rd in inside.filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("manyfiles-run-"))) {
        match super::super::rundir::remove_run_dir(&rd) {
            Ok(true) => rep.deleted.push(rd.display().to_string()),
            Ok(false) => {}
            Err(e) => rep.problems.push(format!("{}: {e}", rd.display())),
        }
    }
    match std::fs::remove_dir(d) {
        Ok(()) => rep.deleted.push(d.display().to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => rep.problems.push(format!("{}: {e}", d.display())),
    }
}

impl Kind for UserObjectsRecord {
    /// No `--fs` spec makes one: it is a `--target s3://…` of the user's.
    fn plan(_spec: &FsSpec, _key: &str) -> Option<Self> {
        None
    }

    fn preflight(&self, _spec: &FsSpec, _p: &mut Preflight) -> Result<()> {
        Ok(())
    }

    fn start(&self, _fs: &mut ManagedFs) -> Result<()> {
        Err(Error::failed("a bucket of the user's is reached, not made"))
    }

    fn owns_mount(&self, _m: &MountEntry) -> bool {
        false
    }

    fn stop(&self, _rec: &Record, rep: &mut CleanupReport) {
        match self.sweep() {
            Ok(Swept { deleted, left }) => {
                rep.objects.push(format!("{}: {deleted} object(s)", self.url()));
                if left > 0 {
                    let why = match self.owner {
                        Some(_) => "that this run did not write",
                        None => "(a record of an older manyfiles, which marked none of its objects as its own)",
                    };
                    rep.left_objects.push(format!("{}: {left} object(s) {why}", self.url()));
                }
            }
            Err(e) => rep.problems.push(e),
        }
        if let Some(d) = &self.scratch {
            remove_scratch(d, rep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_tools_own_run_prefixes_are_swept() {
        for p in [
            "p/manyfiles-ladder-12-0a1b2c3d/",
            "manyfiles-ladder-1-ffffffff/",
            "a/b/manyfiles-ladder-9-00000000/",
            "p/manyfiles-pack-12-0a1b2c3d/",
            "p/manyfiles-calibration-12/",
            "manyfiles-calibration-12-3/",
        ] {
            assert!(is_run_prefix(p), "{p}");
        }
        for p in [
            "p/",
            "",
            "p/manyfiles-ladder-12-0a1b2c3d",
            "p/manyfiles-ladder-12-0a1b2c3d/x/",
            "p/manyfiles-ladder--0a1b2c3d/",
            "p/manyfiles-ladder-12-0a1b2c3/",
            "p/manyfiles-ladder-12-0a1b2c3g/",
            "p/manyfiles-ladder-x-0a1b2c3d/",
            "p/manyfiles-run-12/",
            "p/manyfiles-pack-12/",
            "p/manyfiles-calibration-/",
            "p/manyfiles-calibration-12-/",
            "p/manyfiles-calibration-12-x/",
            "p/manyfiles-calibration-x/",
        ] {
            assert!(!is_run_prefix(p), "{p}");
        }
        // A record that names another prefix is left alone, reached or not.
        let r = UserObjectsRecord {
            provider: Provider::S3,
            bucket: "b".into(),
            run_prefix: "p/".into(),
            endpoint: None,
            region: "us-east-1".into(),
            scratch: None,
            owner: None,
            via: None,
        };
        let e = r.sweep().unwrap_err();
        assert!(e.contains("not a prefix this tool names") && e.contains("s3://b/p/"), "{e}");
    }
}
