//! File-system primitives every layer uses, relative to directory fds: the walk
//! ([`walk`]: getdents, `O_NOFOLLOW` opens, the work-stealing task tree), bounded
//! removal ([`remove`]), bounded input files ([`input`]), output files ([`output`]), whether a path is out of other users' reach ([`trusted_path`]) and [`write_all`]. Imports nothing
//! else of the crate but `error`.

pub mod input;
pub mod output;
pub mod remove;
pub mod trusted_path;
pub mod walk;

use rustix::io::{Errno, write};

/// write(2) until all of `buf` is written (short writes and EINTR are retried).
pub fn write_all(fd: rustix::fd::BorrowedFd<'_>, mut buf: &[u8]) -> Result<(), Errno> {
    while !buf.is_empty() {
        match write(fd, buf) {
            Ok(0) => return Err(Errno::NOSPC),
            Ok(n) => buf = &buf[n..],
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
