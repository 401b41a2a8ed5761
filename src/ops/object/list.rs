//! obj:list: the tree's prefix listed page by page (S3's ListObjectsV2, 1,000 keys a
//! page; Blob's List Blobs, 5,000: each API's most and Blob's default; no delimiter: every
//! object under it), one page after the other as a continuation token asks; one latency
//! sample per page. Every object must be listed once.

use super::{ObjectOp, Recorder, Run};
use crate::measure::PhaseResult;
use object_store::list::PaginatedListOptions;
use std::time::Instant;

pub struct List;

impl ObjectOp for List {
    fn name(&self) -> &'static str {
        "obj:list"
    }

    fn run(&self, run: &Run) -> PhaseResult {
        let total = run.keys().len() as u64;
        let mut rec = Recorder::start(run, self.name(), total);
        let mut token: Option<String> = None;
        loop {
            let opts = PaginatedListOptions {
                max_keys: Some(run.client.provider.list_page()),
                page_token: token.take(),
                ..Default::default()
            };
            let (store, prefix) = (run.client.store.clone(), run.prefix.clone());
            let page = run.client.block_on(run.client.handle().spawn(async move {
                let t0 = Instant::now();
                let r = store.list_paginated(Some(prefix.as_str()), opts).await;
                (t0.elapsed(), r)
            }));
            match page {
                Ok((latency, Ok(p))) => {
                    rec.done(latency, p.result.objects.len() as u64, 0);
                    token = p.page_token;
                }
                Ok((_, Err(e))) => rec.error(1, format!("obj:list: {e}")),
                Err(e) => rec.error(1, format!("obj:list: request task: {e}")),
            }
            if token.is_none() || rec.stopping() {
                break;
            }
        }
        if rec.clean() && rec.files() != total {
            rec.error(1, format!("obj:list: {} objects listed, the tree has {total}", rec.files()));
        }
        rec.finish()
    }
}
