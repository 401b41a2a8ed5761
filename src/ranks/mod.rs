//! MPI, communication only: join the job, rank and size, barrier, all-gather of bytes,
//! `from_root`, `agree`, point-to-point bytes, abort, and the shared-directory checks.
//! Many clients at once: the same command on every MPI rank (started by `mpirun` or
//! `srun`).
//!
//! Without the `mpi` feature, or when the process was not started by an MPI launcher,
//! there is one rank and every function here is a no-op: the tool behaves as before.
//! Only the few collective calls the tool needs are wrapped, so the rest of the code
//! never sees MPI. What the ranks exchange is the callers' business (the experiment
//! driver aggregates phases, the engines spread walks); this module knows no phase,
//! tree or engine.

use crate::error::{Error, Result};

#[cfg(feature = "mpi")]
mod world {
    use mpi::datatype::PartitionMut;
    use mpi::topology::{Communicator, SimpleCommunicator};
    use mpi::traits::CommunicatorCollectives;
    use std::sync::{Mutex, OnceLock};

    static UNIVERSE: OnceLock<Mutex<Option<mpi::environment::Universe>>> = OnceLock::new();

    /// Environment variables set by the launchers we know (OpenMPI, MPICH/Hydra, PMIx, Slurm).
    fn launched() -> bool {
        ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"]
            .iter()
            .any(|v| std::env::var_os(v).is_some())
    }

    pub fn init() {
        if !launched() {
            return;
        }
        // Funneled: only the main thread makes MPI calls (workers never do).
        if let Some((u, _)) = mpi::initialize_with_threading(mpi::Threading::Funneled) {
            let _ = UNIVERSE.set(Mutex::new(Some(u)));
        }
    }

    fn active() -> bool {
        UNIVERSE.get().is_some()
    }

    pub fn rank() -> usize {
        if active() { SimpleCommunicator::world().rank() as usize } else { 0 }
    }

    pub fn size() -> usize {
        if active() { SimpleCommunicator::world().size() as usize } else { 1 }
    }

    pub fn barrier() {
        if active() {
            SimpleCommunicator::world().barrier();
        }
    }

    pub fn all_gather(mine: &[u8]) -> Vec<Vec<u8>> {
        if !active() {
            return vec![mine.to_vec()];
        }
        let world = SimpleCommunicator::world();
        let n = world.size() as usize;
        // One leading byte so no rank sends or receives an empty buffer (which some MPI
        // libraries refuse in MPI_Allgatherv).
        let mut framed = Vec::with_capacity(mine.len() + 1);
        framed.push(1u8);
        framed.extend_from_slice(mine);
        let mine = &framed[..];
        let len = mine.len() as i32;
        let mut lens = vec![0i32; n];
        world.all_gather_into(&len, &mut lens[..]);
        let displs: Vec<i32> = lens.iter().scan(0, |acc, &l| Some(std::mem::replace(acc, *acc + l))).collect();
        let mut all = vec![0u8; lens.iter().map(|&l| l as usize).sum()];
        {
            let mut part = PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
            world.all_gather_varcount_into(mine, &mut part);
        }
        lens.iter().zip(&displs).map(|(&l, &d)| all[d as usize + 1..(d + l) as usize].to_vec()).collect()
    }

    pub fn abort(code: i32) -> ! {
        SimpleCommunicator::world().abort(code)
    }

    pub fn finalize() {
        if let Some(m) = UNIVERSE.get() {
            drop(m.lock().unwrap_or_else(|p| p.into_inner()).take());
        }
    }
}

#[cfg(not(feature = "mpi"))]
mod world {
    /// Started by an MPI launcher as one of several processes, but built without MPI:
    /// each process would run the whole job alone, call itself the only rank and write
    /// the same outputs as the others. Refused (exit 2) before anything runs.
    pub fn init() {
        let size = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
            .iter()
            .find_map(|v| std::env::var(v).ok()?.parse::<u64>().ok())
            .unwrap_or(1);
        if size > 1 {
            eprintln!(
                "manyfiles: started by an MPI launcher as one of {size} processes, but this build has no MPI \
                 (cargo build --release --features mpi): each process would run alone"
            );
            std::process::exit(2);
        }
    }
    pub fn rank() -> usize {
        0
    }
    pub fn size() -> usize {
        1
    }
    pub fn barrier() {}
    pub fn all_gather(mine: &[u8]) -> Vec<Vec<u8>> {
        vec![mine.to_vec()]
    }
    pub fn abort(code: i32) -> ! {
        std::process::exit(code)
    }
    pub fn finalize() {}
}

/// Joins the MPI job when started by a launcher (call first thing in `main`).
pub fn init() {
    world::init()
}

/// Leaves the MPI job (call before exiting normally).
pub fn finalize() {
    world::finalize()
}

/// This process's rank (0 without MPI).
pub fn rank() -> usize {
    world::rank()
}

/// Number of ranks (1 without MPI).
pub fn size() -> usize {
    world::size()
}

/// Rank 0 prints, shows progress and writes results; the others only work.
pub fn is_root() -> bool {
    rank() == 0
}

pub fn barrier() {
    world::barrier()
}

/// Collective: `at_depth(d)` for every depth `d` from the deepest of any rank (`mine`:
/// this rank's deepest) up to 0, a barrier after each, so that no rank starts a depth
/// before every rank has finished the one below (directories removed or their metadata
/// set after everything below them).
pub fn deepest_first(mine: u32, mut at_depth: impl FnMut(u32)) {
    let max =
        all_gather(&mine.to_le_bytes()).iter().map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).max().unwrap_or(0);
    for d in (0..=max).rev() {
        at_depth(d);
        barrier();
    }
}

/// Every rank's bytes, in rank order, on every rank.
pub fn all_gather(mine: &[u8]) -> Vec<Vec<u8>> {
    world::all_gather(mine)
}

/// Rank 0's values on every rank: a decision every rank must follow alike (one rank:
/// the values themselves).
pub fn from_root(mine: Vec<u32>) -> Vec<u32> {
    if size() < 2 {
        return mine;
    }
    let bytes: Vec<u8> = mine.iter().flat_map(|v| v.to_le_bytes()).collect();
    let all = all_gather(&bytes);
    all.first().map_or(mine, |r| r.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// Ends every rank of the job at once with `code` (a rank that failed alone would
/// otherwise leave the others waiting at the next barrier).
pub fn abort(code: i32) -> ! {
    world::abort(code)
}

static SHARED_DIR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `--shared-dir`: every rank works in the same directories (rank 0's run directory and
/// tree), each on its own files (names end in `.r<rank>`), to load directories from many
/// clients at once. Directories are made and removed by rank 0 alone, behind barriers.
pub fn set_shared_dir(on: bool) {
    SHARED_DIR.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// `--shared-dir` in a job of more than one rank.
pub fn shared_dir() -> bool {
    SHARED_DIR.load(std::sync::atomic::Ordering::Relaxed) && size() > 1
}

/// Does this rank make and remove the directories? (All ranks do, except with
/// `--shared-dir`, where only rank 0 does.)
pub fn makes_dirs() -> bool {
    !shared_dir() || is_root()
}

/// With `--shared-dir`: wait for every rank (e.g. until rank 0 made the directories).
pub fn shared_barrier() {
    if shared_dir() {
        barrier();
    }
}

/// Collective: whether `mine` is true on any rank (the same answer on every rank).
pub fn any(mine: bool) -> bool {
    all_gather(&[mine as u8]).iter().any(|b| b.first() == Some(&1))
}

/// Collective: every rank must have opened the same directories (a file system every rank
/// sees), compared by their inode numbers `inos` (device numbers of one network file system
/// differ between hosts); otherwise bad input for `flag` on every rank, saying `why`.
pub fn same_dirs(inos: &[u64], flag: &str, why: &str) -> Result<()> {
    let mine: Vec<u8> = inos.iter().flat_map(|i| i.to_le_bytes()).collect();
    let same = all_gather(&mine).iter().all(|b| *b == mine);
    agree(if same { Ok(()) } else { Err(Error::bad(flag, why)) })
}

static AGREED_FAILURE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Every rank learns whether every rank succeeded; if one failed, all return an error
/// naming the first failed rank (with its exit code), so all ranks stop at the same point
/// and leave cleanly instead of waiting at a barrier. With one rank, returns `r` as is.
pub fn agree<T>(r: Result<T>) -> Result<T> {
    if size() == 1 {
        return r;
    }
    let mine = match &r {
        Ok(_) => String::new(),
        Err(e) => format!("{}\t{e}", e.exit_code()),
    };
    let all = all_gather(mine.as_bytes());
    let failed = all.iter().enumerate().find(|(_, b)| !b.is_empty());
    match (r, failed) {
        (Ok(v), None) => Ok(v),
        (r, Some((i, b))) => {
            AGREED_FAILURE.store(true, std::sync::atomic::Ordering::Relaxed);
            if let Err(e) = r {
                if i == rank() {
                    return Err(e);
                }
            }
            let text = String::from_utf8_lossy(b);
            let (code, msg) = text.split_once('\t').unwrap_or(("1", &text));
            let msg = format!("rank {i}: {msg}");
            Err(match code.parse::<i32>() {
                Ok(2) => Error::bad("MPI", msg),
                Ok(c) if c > 128 => Error::Interrupted { signal: c - 128 },
                _ => Error::failed(msg),
            })
        }
        (Err(e), None) => Err(e), // cannot happen: our own failure is in `all`
    }
}

/// Records that every rank knows of a failure (each learnt it from the same gathered
/// result), so each can leave normally: see [`failure_agreed`].
pub fn set_failure_agreed() {
    AGREED_FAILURE.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// A failure every rank knows of (from [`agree`], or [`set_failure_agreed`]): each rank
/// can leave normally.
pub fn failure_agreed() -> bool {
    AGREED_FAILURE.load(std::sync::atomic::Ordering::Relaxed)
}

/// Host names of every rank, in rank order.
pub fn hosts() -> Vec<String> {
    let me = rustix::system::uname().nodename().to_string_lossy().into_owned();
    all_gather(me.as_bytes()).into_iter().map(|b| String::from_utf8_lossy(&b).into_owned()).collect()
}

/// `{rank}` in a target path becomes this rank's number (a directory per rank, e.g. on
/// node-local storage or to load one shared file system from per-rank subtrees).
pub fn expand(path: &std::path::Path) -> std::path::PathBuf {
    let s = path.to_string_lossy();
    if s.contains("{rank}") { s.replace("{rank}", &rank().to_string()).into() } else { path.to_path_buf() }
}

/// Sends `bytes` to rank `to` (point to point on the world communicator; blocks until
/// MPI has taken the buffer). Only from the main thread. Without MPI there is no other
/// rank to send to.
pub fn send_bytes(to: usize, tag: i32, bytes: &[u8]) {
    #[cfg(feature = "mpi")]
    {
        use mpi::traits::*;
        mpi::topology::SimpleCommunicator::world().process_at_rank(to as i32).send_with_tag(bytes, tag);
    }
    #[cfg(not(feature = "mpi"))]
    unreachable!("no rank {to} to send {} bytes with tag {tag} to without MPI", bytes.len())
}

/// The next message with `tag` from rank `from` (see [`send_bytes`]).
pub fn recv_bytes(from: usize, tag: i32) -> Vec<u8> {
    #[cfg(feature = "mpi")]
    {
        use mpi::traits::*;
        mpi::topology::SimpleCommunicator::world().process_at_rank(from as i32).receive_vec_with_tag::<u8>(tag).0
    }
    #[cfg(not(feature = "mpi"))]
    unreachable!("no rank {from} to receive tag {tag} from without MPI")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rank_without_mpi() {
        assert_eq!(size(), 1);
        assert!(is_root());
        assert_eq!(all_gather(b"x"), vec![b"x".to_vec()]);
        assert_eq!(expand(std::path::Path::new("/a/{rank}/b")), std::path::PathBuf::from("/a/0/b"));
    }
}
