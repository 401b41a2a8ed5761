//! list: read every directory's entries with getdents64 into a reused buffer.

use super::{Op, Worker};
use crate::tree::Unit;
use rustix::fs::RawDir;
use std::mem::MaybeUninit;
use std::time::Instant;

pub struct List;

/// getdents64 buffer: 32 KiB holds ~1,000 entries of short names per call.
const DENTS_BUF: usize = 32 * 1024;

impl Op for List {
    fn name(&self) -> &'static str {
        "list"
    }

    fn per_directory(&self) -> bool {
        true
    }

    fn unit(&self, w: &mut Worker, u: Unit) {
        let t0 = Instant::now();
        let dir = match w.open_dir(u.dir) {
            Ok(fd) => fd,
            Err(e) => return w.error("list", u.dir, None, e, 1),
        };
        let mut space = [MaybeUninit::<u8>::uninit(); DENTS_BUF];
        let mut it = RawDir::new(&dir, &mut space);
        let mut entries = 0u64;
        while let Some(entry) = it.next() {
            match entry {
                Ok(e) => {
                    let n = e.file_name().to_bytes();
                    if n != b"." && n != b".." {
                        entries += 1;
                    }
                }
                Err(e) => return w.error("list", u.dir, None, e, 1),
            }
        }
        // One latency sample per directory; `files` counts the entries seen, `dirs` the
        // directories listed.
        w.done_many(t0, entries, 0);
        w.dirs += 1;
    }
}
