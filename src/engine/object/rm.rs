//! `rm s3://BUCKET/PREFIX`: what the prefix names listed (the object `PREFIX` itself and
//! everything below `PREFIX/`, never a sibling such as `PREFIX2`), then deleted 1,000
//! keys a request (DeleteObjects), `in_flight` requests at once. The whole bucket (no
//! prefix) only when the user says so in words (`--whole-bucket`). Filter rules keep
//! what they exclude or protect, as the local rm does ([`super::select`]: a key's path
//! below `PREFIX/`; the object `PREFIX` itself is the top, which no rule judges).

use super::{ObjectUrl, connect, delete_keys, list_all};
use crate::error::{Error, Result};
use crate::measure::RequestCounts;
use crate::measure::progress::Progress;
use crate::storage::object_endpoint::Reach;
use serde::Serialize;
use std::time::Instant;

#[derive(Debug)]
pub struct Options {
    pub url: ObjectUrl,
    pub reach: Reach,
    pub in_flight: usize,
    pub quiet: bool,
    /// An empty prefix deletes every object of the bucket: refused without this.
    pub whole_bucket: bool,
    /// Filter rules: what they exclude or protect is kept.
    pub filter: Option<std::sync::Arc<crate::engine::filter::Filter>>,
}

/// What `rm` did (`--json`: this document).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub url: String,
    /// Whose API (`s3`, `azblob`): what `requests` are named and priced by.
    pub provider: crate::storage::object_stack::Provider,
    pub endpoint: String,
    pub in_flight: usize,
    /// Objects the prefix named, and their bytes.
    pub objects: u64,
    pub bytes: u64,
    pub deleted: u64,
    /// Keys the filters kept (a directory counts once).
    pub excluded: u64,
    /// Filters were given (the summary says `excluded` then).
    pub filtered: bool,
    pub failed: u64,
    pub requests: RequestCounts,
    pub elapsed_s: f64,
    pub list_s: f64,
    pub delete_s: f64,
    pub interrupted: bool,
    pub failures: Vec<String>,
}

impl Summary {
    pub fn text(&self) -> String {
        use crate::units::{fmt_rate, fmt_secs, fmt_size};
        let mut s = format!(
            "rm {}: deleted {} of {} objects ({}), failed {} ({})\nrequests: {}\n",
            self.url,
            self.deleted,
            self.objects,
            fmt_size(self.bytes as f64),
            self.failed,
            self.endpoint,
            super::fmt_engine_requests(&self.requests, self.provider)
        );
        if self.filtered {
            s.push_str(&format!("excluded {} (kept by the filters)\n", self.excluded));
        }
        s.push_str(&format!(
            "elapsed {} ({}) with up to {} requests in flight; list {}, delete {}\n",
            fmt_secs(self.elapsed_s),
            fmt_rate(self.deleted as f64 / self.elapsed_s.max(1e-9), "objects"),
            self.in_flight,
            fmt_secs(self.list_s),
            fmt_secs(self.delete_s)
        ));
        for f in &self.failures {
            s.push_str(&format!("failed: {f}\n"));
        }
        if self.interrupted {
            s.push_str("interrupted: the rest was left as it was\n");
        }
        s
    }
}

pub fn run(o: &Options) -> Result<Summary> {
    crate::signals::install();
    if o.url.prefix.is_empty() && !o.whole_bucket {
        return Err(Error::bad(
            "PATH",
            format!(
                "{} names the whole {}: rm deletes every object in it only with --whole-bucket",
                o.url,
                o.url.bucket_word()
            ),
        ));
    }
    let t0 = Instant::now();
    let (client, _) = connect(&o.reach, &o.url, crate::storage::object_client::Retries::Backoff)?;
    let progress = Progress::new(o.quiet);
    progress.phase("list", 0);
    let (exact, below) = (o.url.prefix.clone(), o.url.dir_prefix());
    let mut spared = super::select::Keys::new(o.filter.as_deref(), super::select::Side::Rm);
    let named: Vec<super::Listed> = list_all(&client, &exact, &progress)?
        .into_iter()
        .filter(|l| l.key == exact || l.key.strip_prefix(&below).is_some_and(|rel| !spared.out(rel)))
        .collect();
    let mut s = Summary {
        url: o.url.to_string(),
        provider: client.provider,
        endpoint: client.endpoint.clone(),
        in_flight: o.in_flight,
        objects: named.len() as u64,
        bytes: named.iter().map(|l| l.size).sum(),
        excluded: spared.excluded,
        filtered: o.filter.is_some(),
        list_s: t0.elapsed().as_secs_f64(),
        ..Default::default()
    };
    let t1 = Instant::now();
    if crate::signals::pending() == 0 {
        progress.phase("delete", named.len() as u64);
        let keys: Vec<String> = named.into_iter().map(|l| l.key).collect();
        let asked: std::collections::HashSet<String> = keys.iter().cloned().collect();
        let mut fails = Vec::new();
        s.deleted = delete_keys(&client, o.in_flight, keys, |f| fails.push(f));
        // A LIST again: a key the store acknowledged and kept (a "folder" marker `p/`,
        // which object_store 0.14 names without its slash, so the delete went to `p`)
        // is not counted as deleted.
        if crate::signals::pending() == 0 && s.deleted > 0 {
            // Only what was asked: what the filters kept is there by design.
            let left: Vec<String> = list_all(&client, &exact, &progress)?
                .into_iter()
                .map(|l| l.key)
                .filter(|k| asked.contains(k))
                .collect();
            let kept = left.len() as u64;
            if kept > 0 {
                s.deleted = s.deleted.saturating_sub(kept);
                fails.extend(left.into_iter().map(|k| {
                    format!("{k}: still there after its delete was acknowledged (a folder marker `…/` object_store cannot name?)")
                }));
            }
        }
        s.failed = fails.len() as u64;
        fails.truncate(20);
        s.failures = fails;
    }
    progress.finish();
    s.delete_s = t1.elapsed().as_secs_f64();
    s.elapsed_s = t0.elapsed().as_secs_f64();
    s.requests = client.requests();
    s.interrupted = crate::signals::pending() != 0;
    Ok(s)
}
