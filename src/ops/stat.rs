//! stat: statx of every directory and every file (not following symlinks).

use super::{Op, Worker, for_each_dir_in_parent};
use crate::tree::Unit;
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, StatxFlags, statx};
use std::time::Instant;

pub struct Stat;

/// What `ls -l` or a sync tool needs; asking for less lets some file systems skip work.
const FIELDS: StatxFlags = StatxFlags::BASIC_STATS;

impl Op for Stat {
    fn name(&self) -> &'static str {
        "stat"
    }

    fn before(&self, w: &mut Worker) {
        let n = w.shared.plan.dirs.len() as u32;
        for_each_dir_in_parent(
            w,
            1..n,
            |w, parent, d| {
                statx(
                    parent,
                    w.shared.plan.dirs[d as usize].name.as_c_str(),
                    AtFlags::SYMLINK_NOFOLLOW,
                    FIELDS,
                )?;
                w.dirs += 1;
                Ok(())
            },
            "stat",
        );
    }

    fn unit(&self, w: &mut Worker, u: Unit) {
        let dir = match w.open_dir(u.dir) {
            Ok(fd) => fd,
            Err(e) => return w.error("stat", u.dir, None, e, u.count),
        };
        for i in u.first..u.first + u.count {
            if w.stopping() {
                return;
            }
            let t0 = Instant::now();
            match statx(
                dir.as_fd(),
                w.file_name(i),
                AtFlags::SYMLINK_NOFOLLOW,
                FIELDS,
            ) {
                Ok(_) => w.done(t0, 0),
                Err(e) => w.error("stat", u.dir, Some(i), e, 1),
            }
        }
    }
}
