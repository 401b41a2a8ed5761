//! The dirsize experiment: keep adding files to one directory, portion by portion, and
//! find the knee where the per-file cost jumps (published: a folder slows by ≥ 23.7%
//! past 200–300 k files). Its command line, config and view (`view.rs`) are here.

pub mod view;

use super::flags::{CommandLine, Common, Flag, Group, Values};
use super::kinds::{Config, Kind};
use crate::analysis::detect::KNEE_PORTIONS;
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
    let mut exp = common.experiment("dirsize", vec![tree(max, size, &shape)], "create")?;
    let r = common.run_settings()?;
    if r.portion == r.portion_default {
        exp.portion_files = default_portion(max);
    }
    Ok(Box::new(exp))
}

/// Files a portion when `--portion` is not given: a round number that cuts `max` into
/// at least twice [`KNEE_PORTIONS`] portions, at most the run flags' default (10,000).
/// With the default alone, `dirsize --fs exfat --max 20000` closed two portions (and a
/// slow one once a second: 6,000 files there) and said "too few portions to look" under
/// a table whose per-file cost rose ×5 (issue 40, session 26).
pub fn default_portion(max: u64) -> u64 {
    let want = (max / (2 * KNEE_PORTIONS)).max(1);
    let mut decade = 1u64;
    while decade.saturating_mul(10) <= want {
        decade *= 10;
    }
    let round = [10u64, 20, 25, 50, 100].iter().map(|m| decade * m / 10).filter(|g| *g <= want).max().unwrap_or(1);
    round.clamp(1, 10_000)
}

/// `max` files of `size` bytes in one directory, named and filled as `shape` says.
pub fn tree(max: u64, size: u64, shape: &TreeSpec) -> TreeSpec {
    TreeSpec { files: max, size: SizeDist::Fixed { bytes: size }, layout: Layout::Flat, ..shape.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_portion_gives_a_knee_enough_portions() {
        // 20,000 files: 500 a portion (40 portions); a million: the run flags' 10,000.
        assert_eq!(default_portion(20_000), 500);
        assert_eq!(default_portion(1_000_000), 10_000);
        assert_eq!(default_portion(65_536), 1_000);
        assert_eq!(default_portion(10), 1);
        for max in [1u64, 7, 100, 999, 4_096, 20_000, 300_000, 10_000_000] {
            let p = default_portion(max);
            assert!((1..=10_000).contains(&p), "{max}: {p}");
            assert!(max / p >= (2 * KNEE_PORTIONS).min(max) || p == 10_000, "{max}: {p}");
        }
    }
}
