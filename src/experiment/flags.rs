//! An experiment's command line as plain data (clap stays in the CLI): its own flags
//! ([`Flag`]), the CLI's shared flag groups it takes ([`Group`]), and the function that
//! turns the parsed values ([`Values`]) and those groups ([`Common`]) into its config.
//! The CLI builds one subcommand per [`super::kinds::KINDS`] entry from this, so run
//! files, completions, man pages and the MPI allow-list reach a new experiment with no
//! edit of their own.

use super::kinds::Config;
use super::rounds::MockTiming;
use super::{Order, TargetSpec, TreeExperiment};
use crate::error::Result;
use crate::ops::CreateOptions;
use crate::report::export::Output;
use crate::results::Until;
use crate::results::adaptive::Adaptive;
use crate::storage::cache::CacheMode;
use crate::tree::{SizeDist, TreeSpec};
use std::path::PathBuf;

/// What a flag takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// A count: 10000, 10k, 1M (`units::parse_count`).
    Count,
    /// Bytes: 4k, 64MiB (`units::parse_size`).
    Size,
    /// A plain whole number (no suffixes), at most [`Flag::max`].
    Number,
    /// A path.
    Path,
    /// Text the experiment's config judges itself.
    Text,
    /// On when given.
    Switch,
}

/// One flag of an experiment's own.
#[derive(Clone, Copy, Debug)]
pub struct Flag {
    /// `--LONG` (also its run-file key, with `_` for `-`).
    pub long: &'static str,
    /// Its help line.
    pub help: &'static str,
    pub takes: Takes,
    /// The value when not given, as typed (None: absent, or off for a switch).
    pub default: Option<&'static str>,
    /// The value's name in the help (`--max <MAX>`; empty for a switch).
    pub value_name: &'static str,
    /// Values shells complete (the help line lists them itself).
    pub hints: &'static [&'static str],
    /// The largest [`Takes::Number`] taken.
    pub max: u64,
    /// `-C` as well as `--LONG`.
    pub short: Option<char>,
    /// Taken by position (`manyfiles pack PATH`), not as `--LONG`.
    pub positional: bool,
    /// Own flags (long names) it cannot be given with.
    pub conflicts: &'static [&'static str],
    /// An own flag (long name) it needs.
    pub requires: Option<&'static str>,
}

impl Flag {
    const fn new(long: &'static str, takes: Takes, value_name: &'static str, help: &'static str) -> Flag {
        Flag {
            long,
            help,
            takes,
            default: None,
            value_name,
            hints: &[],
            max: u64::MAX,
            short: None,
            positional: false,
            conflicts: &[],
            requires: None,
        }
    }
    /// `--LONG VALUE_NAME`: a count.
    pub const fn count(long: &'static str, value_name: &'static str, help: &'static str) -> Flag {
        Flag::new(long, Takes::Count, value_name, help)
    }
    /// `--LONG VALUE_NAME`: bytes.
    pub const fn size(long: &'static str, value_name: &'static str, help: &'static str) -> Flag {
        Flag::new(long, Takes::Size, value_name, help)
    }
    /// `--LONG VALUE_NAME`: a plain whole number.
    pub const fn number(long: &'static str, value_name: &'static str, help: &'static str) -> Flag {
        Flag::new(long, Takes::Number, value_name, help)
    }
    /// `--LONG VALUE_NAME`: a path.
    pub const fn path(long: &'static str, value_name: &'static str, help: &'static str) -> Flag {
        Flag::new(long, Takes::Path, value_name, help)
    }
    /// `VALUE_NAME` by position (`long` names it in [`Values`] and conflicts): a path.
    pub const fn positional_path(long: &'static str, value_name: &'static str, help: &'static str) -> Flag {
        Flag { positional: true, ..Flag::new(long, Takes::Path, value_name, help) }
    }
    /// `--LONG VALUE_NAME`: text.
    pub const fn text(long: &'static str, value_name: &'static str, help: &'static str) -> Flag {
        Flag::new(long, Takes::Text, value_name, help)
    }
    /// `--LONG`: a switch.
    pub const fn switch(long: &'static str, help: &'static str) -> Flag {
        Flag::new(long, Takes::Switch, "", help)
    }
    pub const fn default(self, value: &'static str) -> Flag {
        Flag { default: Some(value), ..self }
    }
    pub const fn hints(self, hints: &'static [&'static str]) -> Flag {
        Flag { hints, ..self }
    }
    pub const fn at_most(self, max: u64) -> Flag {
        Flag { max, ..self }
    }
    pub const fn short(self, c: char) -> Flag {
        Flag { short: Some(c), ..self }
    }
    pub const fn conflicts(self, with: &'static [&'static str]) -> Flag {
        Flag { conflicts: with, ..self }
    }
    pub const fn requires(self, flag: &'static str) -> Flag {
        Flag { requires: Some(flag), ..self }
    }
}

/// The ops a tree experiment's `--ops` completes.
pub const OP_NAMES: &[&str] = &["create", "stat", "list", "read", "walk", "scan", "rescan", "rm", "delete", "reformat"];
/// The file system types an `--fs` spec completes.
pub const FS_TYPES: &[&str] = &["ext2", "ext3", "ext4", "xfs", "btrfs", "ntfs", "exfat", "tmpfs"];
/// `--cache`'s values.
pub const CACHE_MODES: &[&str] = &["cold", "warm", "drop"];
/// `--until`'s values.
pub const UNTIL_TIMES: &[&str] = &["durable", "returned"];

/// A part of an experiment's command line, in the order its help lists them: its own
/// flags, or one of the CLI's shared groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// The experiment's own [`Flag`]s.
    Own,
    /// --files, --size, --like, --tree, --scale: [`Common::tree`].
    TreeSize,
    /// --cmd, --verify (external tools timed as ops): applied by [`Common::experiment`].
    Pair,
    /// Where and how often to run (--target, --fs, --runs, --json, ...).
    Run,
    /// The tree's shape (--flat, --files-per-dir, --name-len, --content, --seed, ...):
    /// [`Common::shape`].
    Shape,
    /// How files are written (--block-size, --fsync, --direct): [`Common::create`].
    Write,
    /// --force (outputs may replace files manyfiles did not write): [`Common::check_output`].
    Replace,
}

/// An experiment's command line: its parts in help order and its config from them.
#[derive(Clone, Copy)]
pub struct CommandLine {
    /// Its help's first line.
    pub about: &'static str,
    pub flags: &'static [Flag],
    pub groups: &'static [Group],
    /// Shared groups' flags whose default differs here: (long name, value), as typed.
    pub defaults: &'static [(&'static str, &'static str)],
    pub config: fn(&Values, &dyn Common) -> Result<Box<dyn Config>>,
}

/// A parsed value of an own flag.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Number(u64),
    Text(String),
    Switch(bool),
    Path(PathBuf),
    /// Not given and no default.
    Absent,
}

/// The values of an experiment's own flags, by long name.
#[derive(Clone, Debug, Default)]
pub struct Values(pub Vec<(&'static str, Value)>);

impl Values {
    fn get(&self, long: &str) -> &Value {
        match self.0.iter().find(|(l, _)| *l == long) {
            Some((_, v)) => v,
            // The config and its flags are written side by side: a name missing here is
            // a slip in that file, not the user's.
            None => panic!("--{long} is not one of this experiment's flags"),
        }
    }
    /// A count, size or number flag's value (0 when absent).
    pub fn number(&self, long: &str) -> u64 {
        self.given_number(long).unwrap_or(0)
    }
    /// A count, size or number flag's value, if given (or defaulted).
    pub fn given_number(&self, long: &str) -> Option<u64> {
        match self.get(long) {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }
    /// A path flag's value.
    pub fn path(&self, long: &str) -> Option<&std::path::Path> {
        match self.get(long) {
            Value::Path(p) => Some(p.as_path()),
            _ => None,
        }
    }
    /// A text flag's value.
    pub fn text(&self, long: &str) -> Option<&str> {
        match self.get(long) {
            Value::Text(t) => Some(t.as_str()),
            _ => None,
        }
    }
    /// A switch's value.
    pub fn switch(&self, long: &str) -> bool {
        matches!(self.get(long), Value::Switch(true))
    }
}

/// What the CLI's shared groups give an experiment's config (the command line checked
/// as every tree experiment checks it).
pub trait Common {
    /// A tree of `files` files of `size` in the --flat / --files-per-dir / --fanout /
    /// --depth shape with --name-len, --content and --seed (checked).
    fn shape(&self, files: u64, size: SizeDist) -> Result<TreeSpec>;
    /// The tree of --files, --size, --like, --tree and --scale ([`Group::TreeSize`]).
    fn tree(&self) -> Result<TreeSpec>;
    /// The experiment `name` timing `ops` on `trees` on the targets of --target and
    /// --fs, written as --block-size, --fsync and --direct say, with --cmd and --verify
    /// when it takes [`Group::Pair`].
    fn experiment(&self, name: &str, trees: Vec<TreeSpec>, ops: &str) -> Result<TreeExperiment>;
    /// --portion.
    fn portion(&self) -> Result<u64>;
    /// --fs as given.
    fn fs(&self) -> Option<&str>;
    /// Whether --target was given.
    fn has_target(&self) -> bool;
    /// Attach each --destroy-device to the `@dev:` target naming the same device.
    fn confirm_devices(&self, targets: &mut [TargetSpec]) -> Result<()>;
    /// The run flags checked, for an experiment with a trial body of its own.
    fn run_settings(&self) -> Result<RunSettings>;
    /// How files are written: --block-size, --fsync, --direct (checked).
    fn create(&self) -> Result<CreateOptions>;
    /// An output file checked as every command checks it (not a directory, its directory
    /// there, an existing file one manyfiles wrote unless --force); `flag` names it.
    fn check_output(&self, path: &std::path::Path, flag: &str) -> Result<()>;
    /// A run count checked (1 … 10000).
    fn check_runs(&self, runs: u32) -> Result<u32>;
    /// Worker threads: `given`, checked, or the cores this process may use (shared
    /// among the MPI ranks on this host).
    fn threads(&self, given: Option<usize>) -> Result<usize>;
    /// The command line as typed (for the results' provenance).
    fn command_line(&self) -> Vec<String>;
}

/// The run flags ([`Group::Run`]) checked, for an experiment that is no
/// [`TreeExperiment`] (bigfile): what it does not use is here as given, so it can refuse
/// it rather than ignore it.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// --target, then --fs's specs (`.` when neither), devices confirmed.
    pub targets: Vec<TargetSpec>,
    /// --label, checked against the targets.
    pub labels: Vec<String>,
    pub fs_size: Option<u64>,
    pub reuse: bool,
    pub order: Order,
    /// --cache (or --cold, --drop-caches).
    pub caches: CacheMode,
    pub until: Until,
    /// --runs N (checked); None: adaptive.
    pub runs: Option<u32>,
    pub adaptive: Option<Adaptive>,
    /// The hidden --mock-timing.
    pub mock: Option<MockTiming>,
    pub warmup: u32,
    /// --threads as given.
    pub threads: Option<usize>,
    /// --portion as given, and its default.
    pub portion: u64,
    pub portion_default: u64,
    pub shared_dir: bool,
    pub keep: bool,
    /// --json, checked as an output.
    pub json: Option<PathBuf>,
    /// --csv, --markdown.
    pub exports: Vec<Output>,
    pub quiet: bool,
    /// The command line as typed (for the results' provenance).
    pub command_line: Vec<String>,
}
