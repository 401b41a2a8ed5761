//! Statistics over repeated runs and the per-file / per-byte cost model.

pub mod model;
pub mod stats;
