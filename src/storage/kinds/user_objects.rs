//! A bucket of the user's as a target (`ladder`/`ops --target s3://BUCKET/PREFIX`,
//! `experiment::user_store`): the run writes only below a prefix of its own,
//! `PREFIX/manyfiles-ladder-PID-RANDOM/`, and deletes what it wrote before it ends; a
//! kill -9 leaves those objects. Its record names the store — provider, bucket, endpoint
//! and region, never a credential — and that prefix; `cleanup` reaches the store again
//! from its own environment (the AWS variables and files, as the run did), only when
//! they point at the same endpoint and region, lists the keys below that exact prefix and
//! deletes them by key: nothing above it or beside it, and no prefix that is not one the
//! tool names (a record edited to name another is left alone). Nothing is mounted.

use super::super::fsspec::FsSpec;
use super::super::managed::ManagedFs;
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
    /// `PREFIX/manyfiles-ladder-PID-RANDOM/` (or that name alone, at the bucket's top).
    pub run_prefix: String,
    /// The endpoint the run reached (`AWS_ENDPOINT_URL`; None: AWS's own), no credential.
    #[serde(default)]
    pub endpoint: Option<String>,
    pub region: String,
    /// The local scratch directory its run directories (markers only) were made in
    /// (`manyfiles-objects-*`): removed once empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scratch: Option<std::path::PathBuf>,
}

/// Is `p` a run's own prefix as the tool names them: ending in `/`, its last part
/// `manyfiles-ladder-PID-RANDOM` (RANDOM: 8 hex digits)?
pub fn is_run_prefix(p: &str) -> bool {
    let Some(body) = p.strip_suffix('/') else { return false };
    let last = body.rsplit('/').next().unwrap_or(body);
    let Some(rest) = last.strip_prefix("manyfiles-ladder-") else { return false };
    match rest.split_once('-') {
        Some((pid, random)) => {
            !pid.is_empty()
                && pid.bytes().all(|b| b.is_ascii_digit())
                && random.len() == 8
                && random.bytes().all(|b| b.is_ascii_hexdigit())
        }
        None => false,
    }
}

impl UserObjectsRecord {
    /// `s3://BUCKET/RUN_PREFIX`, for messages.
    fn url(&self) -> String {
        format!("{}://{}/{}", self.provider.name(), self.bucket, self.run_prefix)
    }

    /// Delete every key below the run's own prefix, reached from this environment: how
    /// many. An error line when the environment points elsewhere or a request failed.
    fn sweep(&self) -> std::result::Result<u64, String> {
        use super::super::object_client::{ObjectClient, Retries};
        use futures_util::StreamExt;
        use object_store::ObjectStore;
        use object_store::list::PaginatedListOptions;
        let url = self.url();
        if !is_run_prefix(&self.run_prefix) {
            return Err(format!("{url}: not a prefix this tool names its runs by; left alone"));
        }
        let reach = super::super::object_endpoint::from_env(self.provider)
            .map_err(|e| format!("{url}: cannot reach it from this environment ({e}); left for a later cleanup"))?;
        if reach.endpoint != self.endpoint || reach.region != self.region {
            let at = |e: &Option<String>, r: &str| e.clone().unwrap_or_else(|| format!("AWS S3 in {r}"));
            return Err(format!(
                "{url}: the run reached {}, this environment reaches {}; left for a cleanup with the run's settings",
                at(&self.endpoint, &self.region),
                at(&reach.endpoint, &reach.region)
            ));
        }
        let client = ObjectClient::reach(&reach, &self.bucket, Retries::Backoff).map_err(|e| format!("{url}: {e}"))?;
        let (store, prefix) = (client.store.clone(), self.run_prefix.clone());
        let task = client.handle().spawn(async move {
            let mut keys = Vec::new();
            let mut token = None;
            loop {
                let opts = PaginatedListOptions { page_token: token.take(), ..Default::default() };
                let page = store.list_paginated(Some(prefix.as_str()), opts).await.map_err(|e| e.to_string())?;
                let below = page.result.objects.into_iter().map(|m| m.location.as_ref().to_string());
                keys.extend(below.filter(|k| k.starts_with(prefix.as_str())));
                token = page.page_token;
                if token.is_none() {
                    break;
                }
            }
            let n = keys.len() as u64;
            let paths = keys.into_iter().map(|k| Ok(object_store::path::Path::from(k))).collect::<Vec<_>>();
            let answers: Vec<_> = store.delete_stream(futures_util::stream::iter(paths).boxed()).collect().await;
            match answers.into_iter().filter_map(|r| r.err()).find(|e| !matches!(e, object_store::Error::NotFound { .. }))
            {
                Some(e) => Err(e.to_string()),
                None => Ok(n),
            }
        });
        client.block_on(task).map_err(|e| format!("{url}: {e}"))?.map_err(|e| format!("{url}: {e}"))
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
            Ok(n) => rep.objects.push(format!("{}: {n} object(s)", self.url())),
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
        for p in ["p/manyfiles-ladder-12-0a1b2c3d/", "manyfiles-ladder-1-ffffffff/", "a/b/manyfiles-ladder-9-00000000/"] {
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
        };
        let e = r.sweep().unwrap_err();
        assert!(e.contains("not a prefix this tool names") && e.contains("s3://b/p/"), "{e}");
    }
}
