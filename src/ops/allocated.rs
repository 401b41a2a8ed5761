//! allocated: sum of st_blocks × 512 over every file, the space the file system says
//! each file takes (run untimed after create when asked: slack per file size).

use super::{Op, Worker, for_each_file};
use crate::tree::Unit;
use rustix::fs::{AtFlags, StatxFlags, statx};

pub struct Allocated;

impl Op for Allocated {
    fn name(&self) -> &'static str {
        "allocated"
    }

    fn unit(&self, w: &mut Worker, u: Unit) {
        for_each_file(w, "allocated", u, |w, dir, i| {
            statx(dir, w.file_name(i), AtFlags::SYMLINK_NOFOLLOW, StatxFlags::BLOCKS).map(|st| st.stx_blocks * 512)
        });
    }
}
