//! obj:get: one GET per object, its body read to the end; a body of another length than
//! the file's is an error.

use super::{ObjectOp, Run, each_object, path};
use crate::measure::PhaseResult;
use object_store::{GetOptions, ObjectStore};

pub struct Get;

impl ObjectOp for Get {
    fn name(&self) -> &'static str {
        "obj:get"
    }

    fn run(&self, run: &Run) -> PhaseResult {
        each_object(run, self.name(), |i, key| {
            let size = run.size_of(i);
            let (store, location) = (run.client.store.clone(), path(key));
            async move {
                let body = store.get_opts(&location, GetOptions::new()).await.map_err(|e| e.to_string())?;
                let n = body.bytes().await.map_err(|e| e.to_string())?.len() as u64;
                match n == size {
                    true => Ok(n),
                    false => Err(format!("{location}: {n} bytes, expected {size}")),
                }
            }
        })
    }
}
