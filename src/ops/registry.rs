//! The ops by name: which names a tree experiment knows and in which order they run,
//! `--ops` parsed into that order, an op made from its name (a tree op, [`op_by_name`];
//! a pair op, [`pair_op_by_name`], and the [`PairOp`] trait they implement), and which
//! ops read a tree.

use super::{CreateOptions, Op};
use crate::engine::inflight::Plan;
use crate::error::{Error, Result};
use crate::measure::PhaseResult;
use std::path::Path;

/// The ops a tree experiment knows, in the order they can run on one tree.
pub const OP_NAMES: [&str; 9] = ["create", "stat", "list", "read", "walk", "scan", "rescan", "rm", "delete"];

/// The `reformat` op: at the end of a trial, with the tree still on it, the managed
/// file system is unmounted, formatted and mounted again, timed as a whole: what
/// "formatting is faster than deleting" costs (the next trial then needs no format).
pub const REFORMAT: &str = "reformat";

/// The `bigfile` experiment's phases, in the order they run (its own trial body, not a
/// tree op; named here so its report view can find them).
pub const BIGFILE_OPS: [&str; 3] = ["bigfile-write", "bigfile-close", "bigfile-unlink"];

/// Phases that read a tree (every pair op reads its source): made cold before. The
/// native object-store ops read through no cache of this machine's.
pub fn reads_tree(op: &str) -> bool {
    !matches!(op, "create" | "delete" | REFORMAT) && !super::object::is_object_op(op)
}

/// The ops that remove the tree at the end of a trial (pair ops run before them).
pub fn removes_tree(op: &str) -> bool {
    op == "delete" || op == "rm"
}

/// Parse `create,read,delete` into the canonical order; errors name `--ops`. Pair ops
/// (copy, sync, sync-nochange, sync-change:P) keep their given order and run after the
/// tree ops, before delete. Native object-store ops (`obj:put` …) run after them, in
/// their own order ([`super::object::NAMES`]).
pub fn parse_ops(s: &str) -> Result<Vec<String>> {
    let mut want = Vec::new();
    let mut pairs: Vec<String> = Vec::new();
    let mut reformat = false;
    for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if p == REFORMAT {
            reformat = true;
            continue;
        }
        if let Some(r) = pair_op_by_name(p) {
            r.map_err(|e| Error::bad("--ops", e))?;
            if !pairs.iter().any(|q| q == p) {
                pairs.push(p.to_string());
            }
            continue;
        }
        if super::object::is_object_op(p) {
            want.push(p.to_string());
            continue;
        }
        if !OP_NAMES.contains(&p) {
            return Err(Error::bad(
                "--ops",
                format!(
                    "unknown op '{p}' (known: {}, copy, sync, sync-nochange, sync-change:P, pack:FORMAT, reformat; \
                     on --fs s3 or azblob: {})",
                    OP_NAMES.join(", "),
                    super::object::NAMES.join(", ")
                ),
            ));
        }
        want.push(p.to_string());
    }
    if want.is_empty() && pairs.is_empty() && !reformat {
        return Err(Error::bad("--ops", "no op given"));
    }
    if want.iter().any(|w| w == "rescan") && !want.iter().any(|w| w == "scan") {
        return Err(Error::bad("--ops", "rescan needs scan before it (it rescans scan's index)"));
    }
    if want.iter().any(|w| w == "rm") && (want.iter().any(|w| w == "delete") || reformat) {
        return Err(Error::bad(
            "--ops",
            "rm removes the tree as delete does: give one of rm and delete, and rm without reformat",
        ));
    }
    let mut v: Vec<String> = OP_NAMES.iter().filter(|n| want.iter().any(|w| w == *n)).map(|s| s.to_string()).collect();
    let at = v.iter().position(|o| removes_tree(o)).unwrap_or(v.len());
    v.splice(at..at, pairs);
    v.extend(super::object::NAMES.iter().filter(|n| want.iter().any(|w| w == *n)).map(|s| s.to_string()));
    if reformat {
        v.push(REFORMAT.to_string());
    }
    Ok(v)
}

pub fn op_by_name(name: &str, create: &CreateOptions) -> Box<dyn Op> {
    match name {
        "create" => Box::new(super::Create { opts: create.clone() }),
        "stat" => Box::new(super::Stat),
        "list" => Box::new(super::List),
        "read" => Box::new(super::Read),
        "walk" => Box::new(super::scan::Scan { rescan: false, index: false }),
        "scan" => Box::new(super::scan::Scan { rescan: false, index: true }),
        "rescan" => Box::new(super::scan::Scan { rescan: true, index: true }),
        "rm" => Box::new(super::rm::Rm),
        "delete" => Box::new(super::Delete),
        other => unreachable!("op names are checked by parse_ops: {other}"),
    }
}

/// One timed kind of work that reads SRC and writes DST: a pair op (`copy`, the sync
/// family in `ops/`, `pack:FORMAT`; external tools in `experiment::external`).
pub trait PairOp: Sync {
    /// The op's name in results and tables.
    fn name(&self) -> String;
    /// Untimed preparation of DST (an empty directory on entry): e.g. a first sync.
    fn prepare(&self, _src: &Path, _dst: &Path, _threads: usize) -> std::result::Result<(), String> {
        Ok(())
    }
    /// The timed work, on the threads (and in-flight limit) of `plan`.
    fn run(&self, src: &Path, dst: &Path, plan: Plan) -> PhaseResult;
}

/// The pair op named `name` (copy, sync, sync-nochange, sync-change:P, pack:FORMAT), or None.
pub fn pair_op_by_name(name: &str) -> Option<std::result::Result<Box<dyn PairOp>, String>> {
    use super::sync::{Sync, SyncKind};
    Some(Ok(match name {
        "copy" => Box::new(super::copy::Copy),
        "sync" => Box::new(Sync { kind: SyncKind::Empty }),
        "sync-nochange" => Box::new(Sync { kind: SyncKind::NoChange }),
        _ if name.starts_with("pack:") => return Some(super::pack::by_name(&name[5..]).map(|p| Box::new(p) as _)),
        _ => {
            let p = name.strip_prefix("sync-change:")?;
            match p.parse::<f64>() {
                Ok(v) if v > 0.0 && v <= 100.0 && !p.contains(['e', 'E']) => {
                    Box::new(Sync { kind: SyncKind::Change(v) })
                }
                _ => return Some(Err(format!("{name}: P must be a percentage above 0 and at most 100"))),
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_parse_in_canonical_order() {
        assert_eq!(parse_ops("delete,create").unwrap(), vec!["create", "delete"]);
        assert_eq!(parse_ops("read,bogus").unwrap_err().exit_code(), 2);
        assert_eq!(parse_ops("delete,sync,create,copy").unwrap(), vec!["create", "sync", "copy", "delete"]);
        assert_eq!(parse_ops("rm,copy,walk,create").unwrap(), vec!["create", "walk", "copy", "rm"]);
        for bad in ["rm,delete", "create,rm,reformat"] {
            let e = parse_ops(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains("give one of rm and delete"), "{e}");
        }
        assert_eq!(parse_ops("sync-change:5").unwrap(), vec!["sync-change:5"]);
        assert_eq!(parse_ops("sync-change:0").unwrap_err().exit_code(), 2);
        assert_eq!(
            parse_ops("obj:delete-batch,obj:get,create,obj:put,obj:delete").unwrap(),
            vec!["create", "obj:put", "obj:get", "obj:delete", "obj:delete-batch"]
        );
        assert!(parse_ops("s3:put").unwrap_err().to_string().contains("on --fs s3 or azblob: obj:put"));
    }
}
