//! obj:delete-batch: the objects removed in batches, as many keys a request as the
//! provider takes (S3's DeleteObjects: 1,000; Azure's Blob Batch: 256), batches in
//! flight as other ops' requests (none sent after a signal, those in flight awaited); one
//! latency sample per batch. A key the answer names as not deleted is an error.

use super::{ObjectOp, Recorder, Run, path};
use crate::measure::PhaseResult;
use futures_util::StreamExt;
use object_store::ObjectStore;
use std::time::{Duration, Instant};

pub struct DeleteBatch;

impl ObjectOp for DeleteBatch {
    fn name(&self) -> &'static str {
        "obj:delete-batch"
    }

    fn run(&self, run: &Run) -> PhaseResult {
        let mut rec = Recorder::start(run, self.name(), run.keys().len() as u64);
        let handle = run.client.handle().clone();
        run.client.block_on(async {
            let mut answers = futures_util::stream::iter(
                run.keys().chunks(run.client.provider.delete_batch()).take_while(|_| crate::signals::pending() == 0),
            )
            .map(|chunk| {
                let keys: Vec<object_store::Result<object_store::path::Path>> =
                    chunk.iter().map(|(_, k)| Ok(path(k))).collect();
                let (n, store) = (keys.len() as u64, run.client.store.clone());
                let task = handle.spawn(async move {
                    let t0 = Instant::now();
                    let deleted: Vec<_> = store.delete_stream(futures_util::stream::iter(keys).boxed()).collect().await;
                    (t0.elapsed(), deleted)
                });
                async move {
                    match task.await {
                        Ok((latency, deleted)) => (
                            n,
                            latency,
                            deleted.into_iter().map(|r| r.map(|_| ()).map_err(|e| e.to_string())).collect(),
                        ),
                        Err(e) => (n, Duration::ZERO, vec![Err(format!("request task: {e}"))]),
                    }
                }
            })
            .buffer_unordered(run.in_flight);
            while let Some((n, latency, deleted)) = answers.next().await {
                let deleted: Vec<Result<(), String>> = deleted;
                let ok = deleted.iter().filter(|r| r.is_ok()).count() as u64;
                rec.done(latency, ok, 0);
                if ok < n {
                    let e = deleted.into_iter().find_map(|r| r.err()).unwrap_or_else(|| "fewer keys answered".into());
                    rec.error(n - ok, format!("obj:delete-batch: {} of {n} keys not deleted: {e}", n - ok));
                }
            }
        });
        rec.finish()
    }
}
