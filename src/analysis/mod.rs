//! Pure math over numbers: statistics over repeated runs, the per-file / per-byte /
//! per-directory cost model (on its least-squares kernel, `linalg`), and detections.
//! No file I/O, no result files (those are `results`, one layer up).

pub mod blocks;
pub mod detect;
mod linalg;
pub mod model;
pub mod stats;
