//! `scan s3://BUCKET/PREFIX`: the prefix listed page by page (ListObjectsV2, 1,000 keys a
//! page) and summed: objects, bytes, the "directories" their keys imply, sizes, ages.
//! No index is written (`--db` is for local trees). Filter rules leave keys out as the
//! local scan leaves entries out ([`super::select`]: a key's path below the prefix).

use super::{ObjectUrl, connect, list_all};
use crate::error::Result;
use crate::measure::RequestCounts;
use crate::measure::progress::Progress;
use crate::storage::object_endpoint::Reach;
use serde::Serialize;
use std::collections::HashSet;
use std::time::Instant;

#[derive(Debug)]
pub struct Options {
    pub url: ObjectUrl,
    pub reach: Reach,
    pub quiet: bool,
    /// Filter rules: what they exclude is not counted (only as `excluded`).
    pub filter: Option<std::sync::Arc<crate::engine::filter::Filter>>,
}

/// What `scan` found (`--json`: this document).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub url: String,
    /// Whose API (`s3`, `azblob`): what `requests` are named and priced by.
    pub provider: crate::storage::object_stack::Provider,
    pub endpoint: String,
    pub objects: u64,
    pub bytes: u64,
    /// Distinct key prefixes up to a `/` (what a file tree would have as directories).
    pub dirs: u64,
    pub smallest: u64,
    pub median: u64,
    pub largest: u64,
    /// Last-modified of the oldest and newest object (seconds since the epoch).
    pub oldest_s: i64,
    pub newest_s: i64,
    /// Keys the filters left out (a directory counts once); None: no filter given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded: Option<u64>,
    pub requests: RequestCounts,
    pub elapsed_s: f64,
    pub interrupted: bool,
}

impl Summary {
    pub fn text(&self) -> String {
        use crate::units::{fmt_rate, fmt_secs, fmt_size};
        let excluded = match self.excluded {
            Some(n) => format!("excluded {n} (left out by the filters)\n"),
            None => String::new(),
        };
        format!(
            "scan {}: {} objects, {} in {} directories ({}); sizes: smallest {}, median {}, largest {}\n\
             requests: {}\nelapsed {} ({}){}\n",
            self.url,
            self.objects,
            fmt_size(self.bytes as f64),
            self.dirs,
            self.endpoint,
            fmt_size(self.smallest as f64),
            fmt_size(self.median as f64),
            fmt_size(self.largest as f64),
            super::fmt_engine_requests(&self.requests, self.provider),
            fmt_secs(self.elapsed_s),
            fmt_rate(self.objects as f64 / self.elapsed_s.max(1e-9), "objects"),
            if self.interrupted { "; interrupted: the counts are partial" } else { "" }
        ) + &excluded
    }
}

pub fn run(o: &Options) -> Result<Summary> {
    crate::signals::install();
    let t0 = Instant::now();
    let (client, _) = connect(&o.reach, &o.url, crate::storage::object_client::Retries::Backoff)?;
    let progress = Progress::new(o.quiet);
    progress.phase("list", 0);
    let prefix = o.url.dir_prefix();
    let mut select = super::select::Keys::new(o.filter.as_deref(), super::select::Side::Sender);
    let listed: Vec<super::Listed> = list_all(&client, &prefix, &progress)?
        .into_iter()
        .filter(|l| !select.out(l.key.strip_prefix(&prefix).unwrap_or(&l.key)))
        .collect();
    progress.finish();
    let mut dirs: HashSet<&str> = HashSet::new();
    for l in &listed {
        let mut d = l.key.strip_prefix(&prefix).unwrap_or(&l.key);
        while let Some(i) = d.rfind('/') {
            d = &d[..i];
            if !dirs.insert(d) {
                break;
            }
        }
    }
    let mut sizes: Vec<u64> = listed.iter().map(|l| l.size).collect();
    sizes.sort_unstable();
    Ok(Summary {
        url: o.url.to_string(),
        provider: client.provider,
        endpoint: client.endpoint.clone(),
        objects: listed.len() as u64,
        bytes: sizes.iter().sum(),
        dirs: dirs.len() as u64,
        smallest: sizes.first().copied().unwrap_or(0),
        median: sizes.get(sizes.len() / 2).copied().unwrap_or(0),
        largest: sizes.last().copied().unwrap_or(0),
        oldest_s: listed.iter().map(|l| l.modified.0).min().unwrap_or(0),
        newest_s: listed.iter().map(|l| l.modified.0).max().unwrap_or(0),
        excluded: o.filter.as_ref().map(|_| select.excluded),
        requests: client.requests(),
        elapsed_s: t0.elapsed().as_secs_f64(),
        interrupted: crate::signals::pending() != 0,
    })
}
