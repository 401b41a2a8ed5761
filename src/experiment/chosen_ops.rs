//! The ops experiment (`manyfiles ops`): chosen ops timed over one tree, generated from
//! --files and --size or drawn like an inventory or a preset. Its view is the generic one.

use super::flags::{CommandLine, Common, Flag, Group, OP_NAMES, Values};
use super::kinds::{Config, Kind};
use crate::error::Result;
use crate::report::views::GENERIC;

/// Its entry in `experiment::kinds::KINDS`.
pub const KIND: Kind = Kind { name: "ops", mpi: true, run_file: true, command: Some(COMMAND), view: &GENERIC };

const COMMAND: CommandLine = CommandLine {
    about: "Time chosen ops (create, stat, list, read, delete) over one generated tree",
    flags: &[Flag::text(
        "ops",
        "OPS",
        "Ops to time, comma separated, run in this order: create, stat, list, read, walk, scan, rescan, rm or \
         delete, reformat (--fs targets: unmount, mkfs, mount with the tree on it); the native requests \
         obj:put, obj:head, obj:list, obj:get, obj:delete, obj:delete-batch on an object store (--fs s3, azblob)",
    )
    .default("create,stat,list,read,delete")
    .hints(OP_NAMES)],
    groups: &[Group::TreeSize, Group::Own, Group::Pair, Group::Run, Group::Shape, Group::Write],
    defaults: &[],
    config,
};

fn config(v: &Values, common: &dyn Common) -> Result<Box<dyn Config>> {
    let tree = common.tree()?;
    Ok(Box::new(common.experiment("ops", vec![tree], v.text("ops").unwrap_or_default())?))
}
