//! create: mkdir every directory, then open/write/close every file.

use super::{Op, Worker, for_each_dir_in_parent, for_each_file};
use crate::fs::write_all;
use crate::tree::Unit;
use rustix::fd::AsFd;
use rustix::fs::{FileType, Mode, OFlags, fcntl_setfl, fsync, mkdirat, mknodat, openat, syncfs};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsyncMode {
    /// Leave it to the kernel's writeback.
    None,
    /// fsync every file before close.
    File,
    /// fsync each directory after its files are created (every work unit).
    Dir,
    /// One syncfs at the end of the phase (timed).
    End,
}

impl FsyncMode {
    pub fn parse(s: &str) -> Result<FsyncMode, String> {
        match s {
            "none" => Ok(FsyncMode::None),
            "file" => Ok(FsyncMode::File),
            "dir" => Ok(FsyncMode::Dir),
            "end" => Ok(FsyncMode::End),
            _ => Err(format!("'{s}': expected none, file, dir or end")),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CreateOptions {
    /// Bytes per write() call.
    pub block_size: usize,
    pub fsync: FsyncMode,
    /// Open files with O_DIRECT (block size must be a multiple of 4 KiB).
    pub direct: bool,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions { block_size: 1 << 20, fsync: FsyncMode::None, direct: false }
    }
}

pub struct Create {
    pub opts: CreateOptions,
}

const DIR_MODE: u32 = 0o755;
const FILE_MODE: u32 = 0o644;

impl Op for Create {
    fn name(&self) -> &'static str {
        "create"
    }
    fn writes(&self) -> bool {
        true
    }

    fn before(&self, w: &mut Worker) {
        let n = w.shared.plan.dirs.len() as u32;
        for_each_dir_in_parent(
            w,
            1..n,
            |w, parent, d| {
                mkdirat(parent, w.shared.plan.dirs[d as usize].name.as_c_str(), Mode::from_raw_mode(DIR_MODE))?;
                w.dirs += 1;
                Ok(())
            },
            "mkdir",
        );
    }

    fn unit(&self, w: &mut Worker, u: Unit) {
        let mut flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if self.opts.direct {
            flags |= OFlags::DIRECT;
        }
        let dir = for_each_file(w, "create", u, |w, dir, i| {
            let spec = w.shared.spec;
            let size = spec.size.size_of(spec.seed, i);
            self.write_file(w, dir, i, size, flags).map(|_| size)
        });
        if let (Some(dir), FsyncMode::Dir) = (dir, self.opts.fsync) {
            if let Err(e) = fsync(&dir) {
                w.error("fsync", u.dir, None, e, 1);
            }
        }
    }

    fn after(&self, w: &mut Worker) {
        if self.opts.fsync == FsyncMode::End {
            if let Err(e) = syncfs(w.shared.root) {
                w.error("syncfs", 0, None, e, 1);
            }
        }
    }
}

impl Create {
    #[inline]
    fn write_file(
        &self,
        w: &mut Worker,
        dir: rustix::fd::BorrowedFd<'_>,
        index: u64,
        size: u64,
        flags: OFlags,
    ) -> Result<(), Errno> {
        let name = w.file_name(index);
        if size == 0 && self.opts.fsync != FsyncMode::File {
            // An empty file needs no descriptor: one mknodat instead of openat + close
            // (fails with EEXIST on an existing name and never follows a symlink, as
            // O_CREAT | O_EXCL does).
            return mknodat(dir, name, FileType::RegularFile, Mode::from_raw_mode(FILE_MODE), 0);
        }
        let fd = openat(dir, name, flags, Mode::from_raw_mode(FILE_MODE))?;
        let block = self.opts.block_size as u64;
        let mut off = 0u64;
        let mut direct = self.opts.direct;
        while off < size {
            let n = (size - off).min(block) as usize;
            if direct && n % super::IoBuf::ALIGN != 0 {
                // O_DIRECT needs aligned lengths: write the unaligned tail buffered.
                fcntl_setfl(&fd, flags.difference(OFlags::DIRECT | OFlags::CREATE | OFlags::EXCL))?;
                direct = false;
            }
            write_all(fd.as_fd(), w.shared.content.bytes(index, off, n))?;
            off += n as u64;
        }
        if self.opts.fsync == FsyncMode::File {
            fsync(&fd)?;
        }
        // close(2) errors (e.g. delayed ENOSPC on NFS) would be lost by drop; rustix
        // has no fallible close, so the fsync modes are the way to see them.
        drop(fd);
        Ok(())
    }
}
