//! delete: unlink every file, then rmdir every directory deepest first. unlinkat never
//! follows symlinks, and only names of the plan are removed.

use super::{Op, Worker, for_each_dir_in_parent};
use crate::tree::Unit;
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, unlinkat};
use std::time::Instant;

pub struct Delete;

impl Op for Delete {
    fn name(&self) -> &'static str {
        "delete"
    }

    fn unit(&self, w: &mut Worker, u: Unit) {
        let dir = match w.open_dir(u.dir) {
            Ok(fd) => fd,
            Err(e) => return w.error("delete", u.dir, None, e, u.count),
        };
        for i in u.first..u.first + u.count {
            if w.stopping() {
                return;
            }
            let t0 = Instant::now();
            match unlinkat(dir.as_fd(), w.file_name(i), AtFlags::empty()) {
                Ok(()) => w.done(t0, 0),
                Err(e) => w.error("delete", u.dir, Some(i), e, 1),
            }
        }
    }

    fn after(&self, w: &mut Worker) {
        let n = w.shared.plan.dirs.len() as u32;
        for_each_dir_in_parent(
            w,
            (1..n).rev(),
            |w, parent, d| {
                unlinkat(
                    parent,
                    w.shared.plan.dirs[d as usize].name.as_c_str(),
                    AtFlags::REMOVEDIR,
                )?;
                w.dirs += 1;
                Ok(())
            },
            "rmdir",
        );
    }
}
