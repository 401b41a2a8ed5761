//! `--paths full` (the default): the calls mdtest makes, each file named by its whole
//! path as mdtest names it (`sprintf(item, "%s/file.mdtest…", path)`, then `open64`,
//! `stat`, `unlink`; hpc/ior `src/mdtest.c` and `aiori-POSIX.c`), so the kernel walks
//! every directory of the path again on every call, as it does for mdtest. That walk
//! is much of a cached stat's cost: relative to an open directory (`--paths relative`,
//! how manyfiles' own ops work) stat runs 1.7× mdtest's rate on RAM-backed ext4.
//!
//! - create: `open(path, O_CREAT|O_RDWR, 0664)` (mdtest's flags; `O_EXCL|O_NOFOLLOW`
//!   added: they cost no extra lookup and keep a name planted meanwhile from being
//!   written through), the file's bytes in one `write` (hard: 3,901), `close`;
//! - stat: `stat(path)` (newfstatat);
//! - read: `open(path, O_RDONLY)`, one `read` of the file's bytes (mdtest `-e`), `close`;
//! - delete: `unlink(path)`.
//!
//! A path resolved per call is not an identity: the caller checks first that no other
//! user can change what the directory's path resolves to (`fs::trusted_path`).

use crate::fs::write_all;
use crate::ops::{Op, Worker, for_each_file};
use crate::tree::Unit;
use rustix::fs::{AtFlags, CWD, Mode, OFlags, open, statat, unlinkat};
use rustix::io::{Errno, read};
use std::ffi::{CStr, CString};

/// Which of mdtest's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Call {
    Create,
    Stat,
    Read,
    Delete,
}

/// One phase's files, each named by `dir` + `/` + its name.
pub(super) struct ByPath {
    pub call: Call,
    /// The directory's whole path, as the calls name it.
    pub dir: CString,
    /// Bytes each file holds (written by create, read by read).
    pub bytes: u64,
}

const FILE_MODE: u32 = 0o664;

impl Op for ByPath {
    fn name(&self) -> &'static str {
        match self.call {
            Call::Create => "create",
            Call::Stat => "stat",
            Call::Read => "read",
            Call::Delete => "delete",
        }
    }
    fn writes(&self) -> bool {
        matches!(self.call, Call::Create | Call::Delete)
    }

    fn unit(&self, w: &mut Worker, u: Unit) {
        // One buffer a unit: the directory's path, `/`, then each file's name.
        let mut path = Vec::with_capacity(self.dir.as_bytes().len() + 256);
        path.extend_from_slice(self.dir.as_bytes());
        path.push(b'/');
        let base = path.len();
        for_each_file(w, self.name(), u, |w, _dir, i| {
            path.truncate(base);
            path.extend_from_slice(w.file_name(i).to_bytes_with_nul());
            let p = CStr::from_bytes_with_nul(&path).expect("one NUL, at the end");
            match self.call {
                Call::Create => create(w, p, i, self.bytes),
                Call::Stat => statat(CWD, p, AtFlags::empty()).map(|_| 0),
                Call::Read => read_file(w, p, self.bytes),
                Call::Delete => unlinkat(CWD, p, AtFlags::empty()).map(|_| 0),
            }
        });
    }
}

fn create(w: &mut Worker, p: &CStr, i: u64, bytes: u64) -> Result<u64, Errno> {
    let flags = OFlags::CREATE | OFlags::RDWR | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = open(p, flags, Mode::from_raw_mode(FILE_MODE))?;
    if bytes > 0 {
        write_all(rustix::fd::AsFd::as_fd(&fd), w.shared.content.bytes(i, 0, bytes as usize))?;
    }
    Ok(bytes)
}

fn read_file(w: &mut Worker, p: &CStr, bytes: u64) -> Result<u64, Errno> {
    let fd = open(p, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    let buf = w.buf.get();
    let len = (bytes as usize).min(buf.len());
    let buf = &mut buf[..len];
    let mut got = 0;
    while got < buf.len() {
        match read(&fd, &mut buf[got..]) {
            // Shorter than written: mdtest counts it an error too.
            Ok(0) => return Err(Errno::NODATA),
            Ok(n) => got += n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(got as u64)
}
