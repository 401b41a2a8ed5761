//! Hard links within a copy: the (device, inode) → first copy map, and the links made
//! to that first copy; under MPI (one map per rank) every DST name per inode is kept
//! too, and [`join_across_ranks`] links the names other ranks copied to one inode.

use super::attrs::Loss;
use super::engine::CopyShared;
use super::file;
use super::file::Step;
use rustix::fd::{BorrowedFd, OwnedFd};
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
    /// Under MPI: every DST name (relative to DST's root) made or found per inode.
    names: Option<std::sync::Mutex<Vec<Named>>>,
}

/// A SRC inode and one DST name of it.
type Named = ((u64, u64), Vec<u8>);

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
    /// A map that also keeps every DST name per inode (for [`join_across_ranks`]).
    pub(crate) fn keeping_names() -> Links {
        Links { names: Some(Default::default()), ..Links::default() }
    }
    /// DST name `rel` is (a link to) this process's copy of SRC inode `key`.
    pub(crate) fn named(&self, key: (u64, u64), rel: impl FnOnce() -> Vec<u8>) {
        if let Some(n) = &self.names {
            n.lock().unwrap_or_else(|p| p.into_inner()).push((key, rel()));
        }
    }
}

/// Under MPI each rank links the names of an inode it meets to its own first copy, so
/// names that fell to different ranks are copies of their own. Rank 0 gathers every
/// rank's names per inode and makes each name of a later rank a link to the first
/// rank's copy (a link beside the name, renamed over it); a name it cannot relink is a
/// `hard_links` loss, never a silent split. Collective: every rank calls it (`dst`:
/// DST's root, None when nothing is to be done), and all wait until rank 0 is done.
pub(crate) fn join_across_ranks(ctx: &CopyShared, dst: Option<BorrowedFd<'_>>) {
    let mine: &[Named] =
        &ctx.links.names.as_ref().map(|n| n.lock().unwrap_or_else(|p| p.into_inner()).clone()).unwrap_or_default();
    let all: Vec<Vec<Named>> = crate::ranks::all_gather(&serde_json::to_vec(mine).expect("serialisable"))
        .iter()
        .map(|b| serde_json::from_slice(b).expect("every rank runs the same manyfiles"))
        .collect();
    if let (true, Some(root)) = (crate::ranks::is_root(), dst) {
        // SRC inode → (rank, DST name) of every name any rank made of it.
        type ByRank = Vec<(usize, Vec<u8>)>;
        let mut groups: std::collections::BTreeMap<(u64, u64), ByRank> = Default::default();
        for (rank, names) in all.into_iter().enumerate() {
            for (key, rel) in names {
                groups.entry(key).or_default().push((rank, rel));
            }
        }
        for names in groups.into_values() {
            let first = names.iter().map(|n| n.0).min().unwrap_or(0);
            if names.iter().all(|n| n.0 == first) {
                continue;
            }
            let canonical = &names.iter().find(|n| n.0 == first).expect("the first rank's name").1;
            for (_, rel) in names.iter().filter(|n| n.0 != first) {
                if relink(root, canonical, rel).is_err() {
                    ctx.losses.add(Loss::HardLinks, || String::from_utf8_lossy(rel).into_owned());
                }
            }
        }
    }
    crate::ranks::barrier();
}

/// Make DST name `rel` a link to `canonical` (both relative to DST's root, opened below
/// it without following symlinks), unless it is one already.
fn relink(root: BorrowedFd<'_>, canonical: &[u8], rel: &[u8]) -> Result<(), Errno> {
    use crate::engine::walker::open_below;
    let split = |p: &[u8]| -> Result<(OwnedFd, CString), Errno> {
        let (dir, name) = match p.iter().rposition(|b| *b == b'/') {
            Some(i) => (&p[..i], &p[i + 1..]),
            None => (&p[..0], p),
        };
        Ok((open_below(root, dir)?, CString::new(name).map_err(|_| Errno::INVAL)?))
    };
    let (cdir, cname) = split(canonical)?;
    let (dir, name) = split(rel)?;
    let ino = |d: &OwnedFd, n: &CStr| rustix::fs::statat(d, n, AtFlags::SYMLINK_NOFOLLOW).map(|st| st.st_ino);
    if ino(&cdir, &cname)? == ino(&dir, &name)? {
        return Ok(());
    }
    let tmp = file::tmp_name();
    rustix::fs::linkat(&cdir, &cname, &dir, &tmp, AtFlags::empty())?;
    rustix::fs::renameat(&dir, &tmp, &dir, &name).inspect_err(|_| {
        let _ = rustix::fs::unlinkat(&dir, &tmp, AtFlags::empty());
    })
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
