//! Statistics over repeated runs, the per-file / per-byte / per-directory cost model
//! (on its least-squares kernel, `linalg`), detections, and what is computed from them
//! (compare, predict, plan).

pub mod compare;
pub mod detect;
mod linalg;
pub mod model;
pub mod plan;
pub mod predict;
pub mod stats;
