//! read: open every file and read it to the end.

use super::{Op, Worker, for_each_file};
use crate::tree::Unit;
use rustix::fs::{Mode, OFlags, openat};
use rustix::io::{Errno, read};

pub struct Read;

impl Op for Read {
    fn name(&self) -> &'static str {
        "read"
    }

    fn unit(&self, w: &mut Worker, u: Unit) {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        for_each_file(w, "read", u, |w, dir, i| {
            let fd = openat(dir, w.file_name(i), flags, Mode::empty())?;
            let buf = w.buf.get();
            let mut total = 0u64;
            loop {
                match read(&fd, &mut *buf) {
                    Ok(0) => return Ok(total),
                    Ok(n) => total += n as u64,
                    Err(Errno::INTR) => continue,
                    Err(e) => return Err(e),
                }
            }
        });
    }
}
