//! Statistics over repeated runs, the per-file / per-byte / per-directory cost model,
//! detections, and what is computed from them (compare, predict, plan).

pub mod compare;
pub mod detect;
pub mod model;
pub mod plan;
pub mod predict;
pub mod stats;
