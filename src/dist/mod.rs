//! MPI: everything that knows there may be more than one rank ([`ranks`]: init, barrier,
//! all-gather, `agree`, hosts, phase aggregation; [`walk`]: one tree walked by every rank
//! with work stealing; the engines on it: [`copy`] (and sync), [`rm`], [`scan`]). Without
//! the `mpi` feature or a launcher there is one rank and every call is a no-op.

pub mod copy;
pub mod ranks;
pub mod rm;
pub mod scan;
pub mod walk;

use crate::fs::walk::Kind;
use serde::{Deserialize, Serialize};

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

/// Every rank's [`walk::WalkStats`] of one walk, in rank order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WalkTotals {
    pub items: Vec<u64>,
    pub given: Vec<u64>,
    pub received: Vec<u64>,
    pub requests: Vec<u64>,
}

impl WalkTotals {
    /// Collective: every rank calls it with its own stats and gets everyone's.
    pub fn gather(mine: walk::WalkStats) -> WalkTotals {
        let all: Vec<walk::WalkStats> = ranks::all_gather(&serde_json::to_vec(&mine).expect("serialisable"))
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
