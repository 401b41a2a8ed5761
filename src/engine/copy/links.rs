//! Hard links within a copy: the (device, inode) → first copy map, and the links made
//! to that first copy.

use super::attrs::Loss;
use super::engine::CopyShared;
use super::file;
use super::file::Step;
use rustix::fd::BorrowedFd;
use rustix::fs::AtFlags;
use rustix::io::Errno;
use std::ffi::{CStr, CString};

/// The hard-link map: (device, inode) of a SRC file with st_nlink > 1 → the DST path
/// (relative to DST's root) and inode of its first copy. Only such files enter it, so
/// it costs nothing on trees without hard links. A thread that meets an inode whose
/// first copy is still being written waits for it (the writer waits on nothing).
#[derive(Default)]
pub(crate) struct Links {
    map: std::sync::Mutex<std::collections::HashMap<(u64, u64), LinkState>>,
    done: std::sync::Condvar,
}

#[derive(Clone)]
enum LinkState {
    Pending,
    Done(Vec<u8>, u64),
    Failed,
}

/// What [`Links::claim`] found.
pub(crate) enum Claim<'a> {
    /// This is the first: copy it, then [`LinkGuard::done`].
    First(LinkGuard<'a>),
    /// Link to this DST path (relative to DST's root), inode there.
    To(Vec<u8>, u64),
    /// The first copy failed: copy this one on its own.
    Alone,
}

/// Marks a claimed inode failed unless [`LinkGuard::done`] was called.
pub(crate) struct LinkGuard<'a> {
    links: &'a Links,
    key: (u64, u64),
    set: bool,
}

impl LinkGuard<'_> {
    pub(crate) fn done(mut self, rel: Vec<u8>, ino: u64) {
        self.links.set(self.key, LinkState::Done(rel, ino));
        self.set = true;
    }
}

impl Drop for LinkGuard<'_> {
    fn drop(&mut self) {
        if !self.set {
            self.links.set(self.key, LinkState::Failed);
        }
    }
}

impl Links {
    pub(crate) fn claim(&self, key: (u64, u64)) -> Claim<'_> {
        let mut m = self.map.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match m.get(&key) {
                None => {
                    m.insert(key, LinkState::Pending);
                    return Claim::First(LinkGuard { links: self, key, set: false });
                }
                Some(LinkState::Pending) => m = self.done.wait(m).unwrap_or_else(|p| p.into_inner()),
                Some(LinkState::Done(rel, ino)) => return Claim::To(rel.clone(), *ino),
                Some(LinkState::Failed) => return Claim::Alone,
            }
        }
    }
    fn set(&self, key: (u64, u64), st: LinkState) {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).insert(key, st);
        self.done.notify_all();
    }
    /// The (device, inode) keys this process copied first, with their DST paths.
    pub(crate) fn firsts(&self) -> Vec<((u64, u64), Vec<u8>)> {
        let m = self.map.lock().unwrap_or_else(|p| p.into_inner());
        m.iter()
            .filter_map(|(k, v)| match v {
                LinkState::Done(rel, _) => Some((*k, rel.clone())),
                _ => None,
            })
            .collect()
    }
}

/// Make `target` in `dst` a hard link to `rel` (below DST's root). None: no link could
/// be made (a destination without hard links, too many links, the first copy out of
/// reach): counted as a loss, and the caller copies the file on its own.
pub(super) fn make_link(
    ctx: &CopyShared,
    rel: &[u8],
    dst: BorrowedFd<'_>,
    target: &CStr,
    lost: &dyn Fn() -> String,
) -> Option<file::StepResult<()>> {
    let root = ctx.dst_root.as_ref()?;
    if ctx.losses.unsupported(Loss::HardLinks) {
        ctx.losses.add(Loss::HardLinks, lost);
        return None;
    }
    let from = CString::new(rel).ok()?;
    match rustix::fs::linkat(root, from.as_c_str(), dst, target, AtFlags::empty()) {
        Ok(()) => Some(Ok(())),
        Err(e) => {
            if matches!(e, Errno::PERM | Errno::OPNOTSUPP | Errno::NOSYS | Errno::XDEV) {
                ctx.losses.mark_unsupported(Loss::HardLinks);
            }
            if e == Errno::EXIST || super::losses::unholdable_name(target.to_bytes(), e) {
                return Some(Err((Step::Create, e)));
            }
            ctx.losses.add(Loss::HardLinks, lost);
            None
        }
    }
}
