//! MPI: everything that knows there may be more than one rank ([`ranks`]: init, barrier,
//! all-gather, `agree`, hosts, phase aggregation). Without the `mpi` feature or a
//! launcher there is one rank and every call is a no-op.

pub mod ranks;
