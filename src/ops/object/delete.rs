//! obj:delete: one request per object: on S3 a `DELETE /key` (the client with bulk delete
//! off); on Azure Blob a Blob Batch request of one delete (object_store 0.14 sends every
//! Azure delete through Blob Batch: it has no single Delete Blob call).

use super::{ObjectOp, Run, each_object, path};
use crate::measure::PhaseResult;
use futures_util::StreamExt;
use object_store::ObjectStore;

pub struct Delete;

impl ObjectOp for Delete {
    fn name(&self) -> &'static str {
        "obj:delete"
    }

    fn run(&self, run: &Run) -> PhaseResult {
        each_object(run, self.name(), |_, key| {
            let (store, location) = (run.client.single_delete.clone(), path(key));
            async move {
                let mut answers = store.delete_stream(futures_util::stream::iter([Ok(location)]).boxed());
                match answers.next().await {
                    Some(Ok(_)) => Ok(0),
                    Some(Err(e)) => Err(e.to_string()),
                    None => Err("no answer to a DELETE".into()),
                }
            }
        })
    }
}
