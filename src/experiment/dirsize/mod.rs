//! The dirsize experiment: keep adding files to one directory, portion by portion, and
//! find the knee where the per-file cost jumps (published: a folder slows by ≥ 23.7%
//! past 200–300 k files). Its command line, config and view (`view.rs`) are here.

pub mod view;

use super::flags::{CommandLine, Common, Flag, Group, Values};
use super::kinds::{Config, Kind};
use crate::error::{Error, Result};
use crate::tree::{Layout, SizeDist, TreeSpec};

/// Its entry in `experiment::kinds::KINDS`.
pub const KIND: Kind = Kind { name: "dirsize", mpi: true, run_file: true, command: Some(COMMAND), view: &view::VIEW };

const COMMAND: CommandLine = CommandLine {
    about: "Fill one directory portion by portion and find where the per-file cost jumps",
    flags: &[
        Flag::count("max", "MAX", "Files to put in the one directory").default("1000000"),
        Flag::size("size", "SIZE", "Size of every file").default("0"),
    ],
    groups: &[Group::Own, Group::Run, Group::Shape, Group::Write],
    defaults: &[],
    config,
};

fn config(v: &Values, common: &dyn Common) -> Result<Box<dyn Config>> {
    let (max, size) = (v.number("max"), v.number("size"));
    if max == 0 {
        return Err(Error::bad("--max", "must be at least 1"));
    }
    let shape = common.shape(max, SizeDist::Fixed { bytes: size }).map_err(|e| match e {
        Error::BadInput { flag, reason } if flag == "--files" => Error::bad("--max", reason),
        e => e,
    })?;
    Ok(Box::new(common.experiment("dirsize", vec![tree(max, size, &shape)], "create")?))
}

/// `max` files of `size` bytes in one directory, named and filled as `shape` says.
pub fn tree(max: u64, size: u64, shape: &TreeSpec) -> TreeSpec {
    TreeSpec { files: max, size: SizeDist::Fixed { bytes: size }, layout: Layout::Flat, ..shape.clone() }
}
