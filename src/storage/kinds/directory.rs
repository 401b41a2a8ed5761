//! A directory on an existing mount (`--target DIR`): the tool works only inside a run
//! directory it makes there ([`super::super::rundir`]), recorded so that a killed run's is
//! removed. Nothing to format or mount: the directory is the target.

use super::super::fsspec::FsSpec;
use super::super::managed::ManagedFs;
use super::super::registry::{CleanupReport, MountEntry, Record};
use super::{Kind, Preflight};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What undoes a directory target: its run directory (with its marker).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectoryRecord {
    #[serde(default)]
    pub run_dir: Option<PathBuf>,
}

impl Kind for DirectoryRecord {
    /// No `--fs` spec makes a directory: it is given by `--target`.
    fn plan(_spec: &FsSpec, _key: &str) -> Option<Self> {
        None
    }

    fn preflight(&self, _spec: &FsSpec, _p: &mut Preflight) -> Result<()> {
        Ok(())
    }

    fn start(&self, _fs: &mut ManagedFs) -> Result<()> {
        Err(Error::failed("a directory target is made by its run directory, not formatted"))
    }

    fn owns_mount(&self, _m: &MountEntry) -> bool {
        false
    }

    fn stop(&self, _rec: &Record, rep: &mut CleanupReport) {
        let Some(rd) = &self.run_dir else { return };
        match super::super::rundir::remove_run_dir(rd) {
            Ok(true) => rep.deleted.push(rd.display().to_string()),
            Ok(false) => {}
            Err(e) => rep.problems.push(format!("{}: {e}", rd.display())),
        }
    }
}
