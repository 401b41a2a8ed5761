//! obj:head: one HEAD per object (what `stat` is to a file); a size other than the
//! file's is an error.

use super::{ObjectOp, Run, each_object, path};
use crate::measure::PhaseResult;
use object_store::{GetOptions, ObjectStore};

pub struct Head;

impl ObjectOp for Head {
    fn name(&self) -> &'static str {
        "obj:head"
    }

    fn run(&self, run: &Run) -> PhaseResult {
        each_object(run, self.name(), |i, key| {
            let size = run.size_of(i);
            let (store, location) = (run.client.store.clone(), path(key));
            async move {
                let head = store.get_opts(&location, GetOptions::new().with_head(true)).await;
                let meta = head.map_err(|e| e.to_string())?.meta;
                match meta.size == size {
                    true => Ok(0),
                    false => Err(format!("{location}: {} bytes, expected {size}", meta.size)),
                }
            }
        })
    }
}
