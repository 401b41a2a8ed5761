//! obj:put: one PUT per file of the tree, its bytes drawn as `create` writes them (one
//! request each, however large: no multipart); on a store of the user's each carries the
//! run's mark (`storage::object_owner`).

use super::{ObjectOp, Run, each_object, path};
use crate::measure::PhaseResult;
use object_store::{ObjectStore, PutOptions, PutPayload};

pub struct Put;

impl ObjectOp for Put {
    fn name(&self) -> &'static str {
        "obj:put"
    }

    fn run(&self, run: &Run) -> PhaseResult {
        each_object(run, self.name(), |i, key| {
            let size = run.size_of(i);
            let mut data = vec![0u8; size as usize];
            run.tree.content.fill(i, 0, &mut data);
            let (store, location) = (run.client.store.clone(), path(key));
            let attributes = run.owner.map(|o| o.attributes(location.as_ref())).unwrap_or_default();
            async move {
                let opts = PutOptions { attributes, ..Default::default() };
                let put = store.put_opts(&location, PutPayload::from(data), opts).await;
                put.map(|_| size).map_err(|e| e.to_string())
            }
        })
    }
}
