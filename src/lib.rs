//! manyfiles: measure what many small files cost a storage system.
//!
//! The engine knows nothing of the command line: `cli` (in the binary) turns flags into
//! the plain config structs of [`experiment`] and [`tree`].

pub mod analysis;
pub mod engine;
pub mod error;
pub mod experiment;
pub mod fs;
pub mod generate;
pub mod helper;
pub mod measure;
pub mod ops;
pub mod pack;
pub mod ranks;
pub mod report;
pub mod results;
pub mod signals;
pub mod storage;
pub mod tree;
pub mod units;
