//! read: open every file and read it to the end.

use super::{Op, Worker};
use crate::tree::Unit;
use rustix::fd::AsFd;
use rustix::fs::{Mode, OFlags, openat};
use rustix::io::{Errno, read};
use std::time::Instant;

pub struct Read;

impl Op for Read {
    fn name(&self) -> &'static str {
        "read"
    }

    fn unit(&self, w: &mut Worker, u: Unit) {
        let dir = match w.open_dir(u.dir) {
            Ok(fd) => fd,
            Err(e) => return w.error("read", u.dir, None, e, u.count),
        };
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        for i in u.first..u.first + u.count {
            if w.stopping() {
                return;
            }
            let t0 = Instant::now();
            let r = (|| -> Result<u64, Errno> {
                let fd = openat(dir.as_fd(), w.file_name(i), flags, Mode::empty())?;
                let buf = w.buf.get();
                let mut total = 0u64;
                loop {
                    match read(&fd, &mut *buf) {
                        Ok(0) => break,
                        Ok(n) => total += n as u64,
                        Err(Errno::INTR) => continue,
                        Err(e) => return Err(e),
                    }
                }
                Ok(total)
            })();
            match r {
                Ok(bytes) => w.done(t0, bytes),
                Err(e) => w.error("read", u.dir, Some(i), e, 1),
            }
        }
    }
}
