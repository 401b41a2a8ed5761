//! stat: statx of every directory and every file (not following symlinks).

use super::{Op, Worker, for_each_dir_in_parent, for_each_file};
use crate::tree::Unit;
use rustix::fs::{AtFlags, StatxFlags, statx};

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
                statx(parent, w.shared.plan.dirs[d as usize].name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW, FIELDS)?;
                w.dirs += 1;
                Ok(())
            },
            "stat",
        );
    }

    fn unit(&self, w: &mut Worker, u: Unit) {
        for_each_file(w, "stat", u, |w, dir, i| {
            statx(dir, w.file_name(i), AtFlags::SYMLINK_NOFOLLOW, FIELDS).map(|_| 0)
        });
    }
}
