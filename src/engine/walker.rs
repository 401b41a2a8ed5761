//! One tree walked by every rank together: the walker the engines' MPI variants share
//! (`copy::mpi`, `rm::mpi`, `scan::mpi`), and how their work spread over the ranks
//! ([`RankCounts`]).
//!
//! Work items are byte strings — a directory's path relative to a root the engine opened
//! on every rank, with whatever prefix the engine needs (which PATH, which kind of task) —
//! so they can move between processes; an engine opens each one again below its root
//! ([`open_below`]: no symlink followed anywhere on the way). [`Walker`] is the one
//! interface: [`LocalWalk`] runs the items on this process's threads (work stealing by
//! rayon, the same task tree as `engine::walk::par_tasks`), [`MpiWalk`] on every rank's
//! threads together. An engine written on [`Walker`] runs the same in both; with one rank
//! the CLI keeps the fd-based local engines (no path re-resolution per directory), so a
//! run without a launcher is exactly what it was before.
//!
//! Distributed work stealing (as libcircle / mpiFileUtils do):
//! - each rank keeps a local queue of items; its worker threads take from the back
//!   (depth first: the queue stays as short as the directories in flight) and push the
//!   items their work spawns;
//! - MPI calls are made by the calling (main) thread alone (the MPI thread level may be
//!   only FUNNELED): it answers requests, asks for work and passes the token, and hands
//!   received items to the workers through the queue;
//! - a rank whose queue is empty and whose workers are all idle (passive) asks one other
//!   rank for work, round robin from its right neighbour (every rank is asked in turn, so
//!   a single busy rank is found within one round; backoff after a refusal keeps an idle
//!   job from flooding the busy ones); the asked rank gives half of its queue, taken from
//!   the front (the oldest, shallowest directories: the largest subtrees);
//! - termination by the Dijkstra–Safra token ring: every rank counts work messages sent
//!   minus received and turns black when it receives one; rank 0 sends a token round the
//!   ring while passive, each rank adds its count when passive and blackens it if black;
//!   a white token back at a white, passive rank 0 with a sum of 0 means no rank has work
//!   and none is in flight, and rank 0 tells every rank to stop.
//!
//! Messages go over a duplicate of the world communicator made for each walk, so
//! requests still in flight when the walk ends (answered by nobody) can never be mistaken
//! for the next walk's, nor disturb the collectives of the rest of the tool.

use crate::fs::walk::Kind;
use crate::ranks;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

/// What one rank did in a walk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalkStats {
    /// Items this rank's workers ran.
    pub items: u64,
    /// Items given to other ranks / received from them.
    pub given: u64,
    pub received: u64,
    /// Requests for work this rank sent.
    pub requests: u64,
}

/// An item's work: the item, and `spawn` for each new item it makes.
pub type Work<'a> = dyn Fn(&[u8], &mut dyn FnMut(Vec<u8>)) + Sync + 'a;

/// A walk over byte-string work items (see the module doc).
pub trait Walker {
    /// Runs `work` on `roots` and every item spawned from them until none is left on any
    /// rank. Every rank calls it together; the roots may be given on one rank only.
    fn run(&self, roots: Vec<Vec<u8>>, work: &Work<'_>) -> WalkStats;
}

/// The items on this process's threads only.
pub struct LocalWalk {
    pub threads: usize,
}

impl Walker for LocalWalk {
    fn run(&self, roots: Vec<Vec<u8>>, work: &Work<'_>) -> WalkStats {
        let items = std::sync::atomic::AtomicU64::new(0);
        crate::fs::walk::par_tasks(self.threads, roots, |item: Vec<u8>, spawn| {
            items.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            work(&item, spawn)
        });
        WalkStats { items: items.into_inner(), ..Default::default() }
    }
}

/// The items on every rank's threads (work stealing between ranks); with one rank (no
/// launcher, or a build without the `mpi` feature) the same as [`LocalWalk`].
pub struct MpiWalk {
    pub threads: usize,
}

impl Walker for MpiWalk {
    fn run(&self, roots: Vec<Vec<u8>>, work: &Work<'_>) -> WalkStats {
        #[cfg(feature = "mpi")]
        if crate::ranks::size() > 1 {
            return spread::run(self.threads, roots, work);
        }
        LocalWalk { threads: self.threads }.run(roots, work)
    }
}

/// Opens directory `rel` (a relative path, `/`-separated; empty: `root` itself) below
/// `root` without following a symlink anywhere on the way and without leaving `root`
/// (`openat2` with `RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH`, or one component at a time
/// with `O_NOFOLLOW` where the kernel has no `openat2`).
pub fn open_below(root: BorrowedFd<'_>, rel: &[u8]) -> Result<OwnedFd, Errno> {
    use rustix::fs::{Mode, ResolveFlags, openat, openat2};
    let flags = crate::fs::walk::DIR_FLAGS;
    if rel.is_empty() {
        return openat(root, c".", flags, Mode::empty());
    }
    if rel.contains(&0) {
        return Err(Errno::INVAL);
    }
    let path = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(rel);
    match openat2(root, path, flags, Mode::empty(), ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH) {
        // No openat2 (kernel < 5.6, or a seccomp filter), a rename meanwhile, or a path
        // longer than PATH_MAX: one component at a time.
        Err(Errno::NOSYS) | Err(Errno::AGAIN) | Err(Errno::NAMETOOLONG) | Err(Errno::PERM) => {}
        r => return r,
    }
    let mut fd = openat(root, c".", flags, Mode::empty())?;
    for part in rel.split(|&b| b == b'/').filter(|p| !p.is_empty()) {
        if part == b".." || part == b"." {
            return Err(Errno::INVAL);
        }
        let name = std::ffi::CString::new(part).map_err(|_| Errno::INVAL)?;
        fd = crate::fs::walk::open_dir_at(fd.as_fd(), &name)?;
    }
    Ok(fd)
}

/// [`open_below`], and never into another mount on the way (`RESOLVE_NO_XDEV`: a mount
/// point or a bind mount below `root` is not entered; EXDEV). For engines that write or
/// delete below a root the user named and have no `--cross-mounts` (the object engines'
/// local side): a bind mount inside DST is someone else's tree, whatever its path says.
/// Without `openat2`, each component is checked to be no mount root and on `root`'s
/// device.
pub fn open_below_same_mount(root: BorrowedFd<'_>, rel: &[u8]) -> Result<OwnedFd, Errno> {
    use rustix::fs::{Mode, ResolveFlags, openat2};
    let flags = crate::fs::walk::DIR_FLAGS;
    if rel.is_empty() {
        return open_below(root, rel);
    }
    if rel.contains(&0) {
        return Err(Errno::INVAL);
    }
    let path = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(rel);
    let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH | ResolveFlags::NO_XDEV;
    match openat2(root, path, flags, Mode::empty(), resolve) {
        Err(Errno::NOSYS) | Err(Errno::AGAIN) | Err(Errno::NAMETOOLONG) | Err(Errno::PERM) => {}
        r => return r,
    }
    let dev = crate::fs::walk::dir_id(root)?.dev;
    let mut fd = open_below(root, b"")?;
    for part in rel.split(|&b| b == b'/').filter(|p| !p.is_empty()) {
        if part == b".." || part == b"." {
            return Err(Errno::INVAL);
        }
        let name = std::ffi::CString::new(part).map_err(|_| Errno::INVAL)?;
        fd = crate::fs::walk::open_dir_at(fd.as_fd(), &name)?;
        if crate::fs::walk::dir_id(fd.as_fd())?.crosses(dev) {
            return Err(Errno::XDEV);
        }
    }
    Ok(fd)
}

/// `a/b` from `a` and `b` (`b` alone when `a` is empty).
pub fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(dir.len() + 1 + name.len());
    p.extend_from_slice(dir);
    if !dir.is_empty() {
        p.push(b'/');
    }
    p.extend_from_slice(name);
    p
}

/// (`a/b`, `c`) from `a/b/c`; (``, `c`) from `c`.
pub fn split_last(rel: &[u8]) -> (&[u8], &[u8]) {
    match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&[], rel),
    }
}

/// How deep `rel` lies below the root: 0 for the root itself (``), 1 for `a`, 2 for `a/b`.
pub fn depth(rel: &[u8]) -> u32 {
    if rel.is_empty() { 0 } else { 1 + rel.iter().filter(|&&b| b == b'/').count() as u32 }
}

/// Items back to back, each with a little-endian u32 length.
pub fn encode_items<'a>(items: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for it in items {
        out.extend_from_slice(&(it.len() as u32).to_le_bytes());
        out.extend_from_slice(it);
    }
    out
}

/// The items of [`encode_items`].
pub fn decode_items(mut b: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while b.len() >= 4 {
        let n = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let end = (4 + n).min(b.len());
        out.push(b[4..end].to_vec());
        b = &b[end..];
    }
    out
}

#[cfg(feature = "mpi")]
mod spread {
    use super::{WalkStats, Work, decode_items, encode_items};
    use mpi::point_to_point::MatchedReceiveVec;
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::*;
    use std::collections::VecDeque;
    use std::sync::{Condvar, Mutex};
    use std::time::{Duration, Instant};

    const REQUEST: i32 = 1;
    const WORK: i32 = 2;
    const NO_WORK: i32 = 3;
    const TOKEN: i32 = 4;
    const DONE: i32 = 5;

    struct State {
        queue: VecDeque<Vec<u8>>,
        /// Workers running an item.
        busy: usize,
        done: bool,
        items: u64,
    }

    struct Shared {
        state: Mutex<State>,
        /// Workers wait here for items (or the end).
        work_cv: Condvar,
        /// The communicating thread waits here (with a timeout: it also polls MPI).
        main_cv: Condvar,
    }

    impl Shared {
        fn lock(&self) -> std::sync::MutexGuard<'_, State> {
            self.state.lock().unwrap_or_else(|p| p.into_inner())
        }
    }

    fn worker(sh: &Shared, work: &Work<'_>) {
        loop {
            let item = {
                let mut g = sh.lock();
                loop {
                    if g.done {
                        return;
                    }
                    if let Some(x) = g.queue.pop_back() {
                        g.busy += 1;
                        break x;
                    }
                    g = sh.work_cv.wait(g).unwrap_or_else(|p| p.into_inner());
                }
            };
            let mut kids = Vec::new();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&item, &mut |k| kids.push(k))));
            if r.is_err() {
                // The other ranks would wait for this one forever: end the job.
                eprintln!("manyfiles: rank {}: a walk task panicked", crate::ranks::rank());
                crate::ranks::abort(101);
            }
            let more = !kids.is_empty();
            {
                let mut g = sh.lock();
                g.queue.extend(kids);
                g.busy -= 1;
                g.items += 1;
            }
            if more {
                sh.work_cv.notify_all();
            }
            sh.main_cv.notify_one();
        }
    }

    fn token_bytes(q: i64, black: bool) -> Vec<u8> {
        let mut b = q.to_le_bytes().to_vec();
        b.push(black as u8);
        b
    }

    fn token_of(b: &[u8]) -> (i64, bool) {
        let mut q = [0u8; 8];
        q.copy_from_slice(&b[..8]);
        (i64::from_le_bytes(q), b.get(8) == Some(&1))
    }

    pub fn run(threads: usize, roots: Vec<Vec<u8>>, work: &Work<'_>) -> WalkStats {
        let comm = SimpleCommunicator::world().duplicate();
        let (me, n) = (comm.rank(), comm.size());
        let sh = Shared {
            state: Mutex::new(State { queue: roots.into(), busy: 0, done: false, items: 0 }),
            work_cv: Condvar::new(),
            main_cv: Condvar::new(),
        };
        let mut stats = WalkStats::default();
        std::thread::scope(|s| {
            for i in 0..threads.max(1) {
                let sh = &sh;
                std::thread::Builder::new()
                    .name(format!("manyfiles-dwalk-{i}"))
                    .spawn_scoped(s, move || worker(sh, work))
                    .expect("a walk thread can be started");
            }
            // Safra's counter (work messages sent − received) and colour.
            let mut count: i64 = 0;
            let mut black = false;
            let mut token: Option<(i64, bool)> = None;
            let mut token_out = false; // rank 0: a probe is on its way round
            let mut asked = false; // a request is waiting for its answer
            let mut victim = (me + 1) % n;
            let mut not_before = Instant::now();
            let mut backoff = Duration::from_micros(50);
            let next = |r: i32| (r + 1) % n;
            'walk: loop {
                while let Some(probed) = comm.any_process().immediate_matched_probe() {
                    let (buf, st) = probed.matched_receive_vec::<u8>();
                    let from = st.source_rank();
                    match st.tag() {
                        REQUEST => {
                            let give: Vec<Vec<u8>> = {
                                let mut g = sh.lock();
                                let k = g.queue.len().div_ceil(2);
                                g.queue.drain(..k).collect()
                            };
                            let dest = comm.process_at_rank(from);
                            if give.is_empty() {
                                dest.send_with_tag(&[0u8][..], NO_WORK);
                            } else {
                                count += 1;
                                stats.given += give.len() as u64;
                                dest.send_with_tag(&encode_items(give.iter().map(|v| &v[..]))[..], WORK);
                            }
                        }
                        WORK => {
                            count -= 1;
                            black = true;
                            asked = false;
                            backoff = Duration::from_micros(50);
                            let items = decode_items(&buf);
                            stats.received += items.len() as u64;
                            sh.lock().queue.extend(items);
                            sh.work_cv.notify_all();
                        }
                        NO_WORK => {
                            asked = false;
                            victim = next(victim);
                            if victim == me {
                                victim = next(victim);
                            }
                            not_before = Instant::now() + backoff;
                            backoff = (backoff * 2).min(Duration::from_millis(20));
                        }
                        TOKEN => token = Some(token_of(&buf)),
                        DONE => break 'walk,
                        _ => {}
                    }
                }
                let passive = {
                    let g = sh.lock();
                    g.queue.is_empty() && g.busy == 0
                };
                if passive {
                    if !asked && Instant::now() >= not_before {
                        comm.process_at_rank(victim).send_with_tag(&[0u8][..], REQUEST);
                        stats.requests += 1;
                        asked = true;
                    }
                    if me == 0 {
                        if let Some((q, b)) = token.take() {
                            if !b && !black && q + count == 0 {
                                for r in 1..n {
                                    comm.process_at_rank(r).send_with_tag(&[0u8][..], DONE);
                                }
                                break 'walk;
                            }
                            black = false;
                            comm.process_at_rank(next(me)).send_with_tag(&token_bytes(0, false)[..], TOKEN);
                        } else if !token_out {
                            token_out = true;
                            comm.process_at_rank(next(me)).send_with_tag(&token_bytes(0, false)[..], TOKEN);
                        }
                    } else if let Some((q, b)) = token.take() {
                        comm.process_at_rank(next(me)).send_with_tag(&token_bytes(q + count, b || black)[..], TOKEN);
                        black = false;
                    }
                }
                let g = sh.lock();
                let wait = if passive { Duration::from_micros(500) } else { Duration::from_millis(2) };
                drop(sh.main_cv.wait_timeout(g, wait).unwrap_or_else(|p| p.into_inner()));
            }
            let mut g = sh.lock();
            g.done = true;
            stats.items = g.items;
            drop(g);
            sh.work_cv.notify_all();
        });
        stats
    }
}

/// An entry's kind as one byte in the items and rows ranks send each other ([`kind_of`]
/// reads it back).
pub(crate) fn kind_byte(k: Kind) -> u8 {
    match k {
        Kind::File => 0,
        Kind::Dir => 1,
        Kind::Symlink => 2,
        Kind::Other => 3,
    }
}

/// The kind a [`kind_byte`] stands for.
pub(crate) fn kind_of(b: u8) -> Kind {
    match b {
        0 => Kind::File,
        1 => Kind::Dir,
        2 => Kind::Symlink,
        _ => Kind::Other,
    }
}

/// Every rank's [`WalkStats`] of one walk, in rank order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WalkTotals {
    pub items: Vec<u64>,
    pub given: Vec<u64>,
    pub received: Vec<u64>,
    pub requests: Vec<u64>,
}

impl WalkTotals {
    /// Collective: every rank calls it with its own stats and gets everyone's.
    pub fn gather(mine: WalkStats) -> WalkTotals {
        let all: Vec<WalkStats> = ranks::all_gather(&serde_json::to_vec(&mine).expect("serialisable"))
            .iter()
            .map(|b| serde_json::from_slice(b).expect("every rank runs the same manyfiles"))
            .collect();
        WalkTotals {
            items: all.iter().map(|s| s.items).collect(),
            given: all.iter().map(|s| s.given).collect(),
            received: all.iter().map(|s| s.received).collect(),
            requests: all.iter().map(|s| s.requests).collect(),
        }
    }
}

/// How a distributed engine's work spread over the ranks (in its summary and JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankCounts {
    pub ranks: usize,
    /// Host of each rank, in rank order.
    pub hosts: Vec<String>,
    /// What `work` counts (e.g. "entries removed").
    pub unit: String,
    /// The engine's work per rank, in rank order.
    pub work: Vec<u64>,
    /// The walk's items per rank and how many moved between ranks.
    pub walk: WalkTotals,
}

impl RankCounts {
    /// Collective (gathers the host names).
    pub fn new(unit: &str, work: Vec<u64>, walk: WalkTotals) -> RankCounts {
        RankCounts { ranks: ranks::size(), hosts: ranks::hosts(), unit: unit.to_string(), work, walk }
    }

    /// The busiest rank's work over the mean (1 = even).
    pub fn spread(&self) -> f64 {
        let n = self.work.len().max(1) as f64;
        let mean = self.work.iter().sum::<u64>() as f64 / n;
        let max = self.work.iter().copied().max().unwrap_or(0) as f64;
        if mean > 0.0 { max / mean } else { 1.0 }
    }

    /// One line for a summary.
    pub fn text(&self) -> String {
        let mut hosts = self.hosts.clone();
        hosts.dedup();
        let per: Vec<String> = self.work.iter().map(|w| w.to_string()).collect();
        format!(
            "ranks: {} on {}; {} per rank: {} (busiest {:.2}× the mean); {} work items moved between ranks\n",
            self.ranks,
            hosts.join(", "),
            self.unit,
            per.join(" / "),
            self.spread(),
            self.walk.received.iter().sum::<u64>()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn paths_join_and_split() {
        assert_eq!(join(b"", b"a"), b"a");
        assert_eq!(join(b"a/b", b"c"), b"a/b/c");
        assert_eq!(split_last(b"a/b/c"), (&b"a/b"[..], &b"c"[..]));
        assert_eq!(split_last(b"c"), (&b""[..], &b"c"[..]));
        let items: Vec<&[u8]> = vec![b"", b"x/y", b"\xff"];
        assert_eq!(decode_items(&encode_items(items.clone())), items.iter().map(|i| i.to_vec()).collect::<Vec<_>>());
    }

    #[test]
    fn open_below_refuses_symlinks_on_the_way() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("a/b")).unwrap();
        std::os::unix::fs::symlink("a", t.path().join("l")).unwrap();
        let root = crate::fs::walk::open_root(t.path()).unwrap();
        assert!(open_below(root.as_fd(), b"a/b").is_ok());
        assert!(open_below(root.as_fd(), b"").is_ok());
        assert!(open_below(root.as_fd(), b"l/b").is_err());
        assert!(open_below(root.as_fd(), b"../x").is_err());
        assert!(open_below_same_mount(root.as_fd(), b"a/b").is_ok());
        assert!(open_below_same_mount(root.as_fd(), b"l/b").is_err());
    }

    #[test]
    fn local_walk_runs_every_item_once() {
        let seen = Mutex::new(Vec::new());
        let stats = MpiWalk { threads: 3 }.run(vec![b"".to_vec()], &|item: &[u8], spawn: &mut dyn FnMut(Vec<u8>)| {
            seen.lock().unwrap().push(item.to_vec());
            if item.len() < 3 {
                for c in [b'a', b'b'] {
                    let mut k = item.to_vec();
                    k.push(c);
                    spawn(k);
                }
            }
        });
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        assert_eq!(seen.len(), 1 + 2 + 4 + 8);
        seen.dedup();
        assert_eq!(seen.len(), 15);
        assert_eq!(stats.items, 15);
    }
}
