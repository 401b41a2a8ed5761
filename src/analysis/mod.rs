//! Pure math over numbers: statistics over repeated runs, the per-file / per-byte /
//! per-directory cost model, and detections. No file I/O, no result files (those are
//! `results`, one layer up).

pub mod detect;
pub mod model;
pub mod stats;
