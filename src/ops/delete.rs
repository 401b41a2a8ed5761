//! delete: unlink every file, then rmdir every directory deepest first. unlinkat never
//! follows symlinks, and only names of the plan are removed.

use super::{Op, Worker, for_each_dir_in_parent, for_each_file};
use crate::tree::Unit;
use rustix::fs::{AtFlags, unlinkat};

pub struct Delete;

impl Op for Delete {
    fn name(&self) -> &'static str {
        "delete"
    }
    fn writes(&self) -> bool {
        true
    }

    fn unit(&self, w: &mut Worker, u: Unit) {
        for_each_file(w, "delete", u, |w, dir, i| unlinkat(dir, w.file_name(i), AtFlags::empty()).map(|_| 0));
    }

    fn after(&self, w: &mut Worker) {
        let n = w.shared.plan.dirs.len() as u32;
        for_each_dir_in_parent(
            w,
            (1..n).rev(),
            |w, parent, d| {
                unlinkat(parent, w.shared.plan.dirs[d as usize].name.as_c_str(), AtFlags::REMOVEDIR)?;
                w.dirs += 1;
                Ok(())
            },
            "rmdir",
        );
    }
}
