//! The experiments, one entry each in [`KINDS`]: its command name, whether it runs under
//! MPI, whether a run file may name it, its command line (own flags as plain data, the
//! CLI's shared groups it takes and its config function: `flags::CommandLine`) and its
//! view (terminal tables and HTML page, `report::views::View`). The CLI builds each
//! experiment's subcommand from its entry; its MPI allow-list, run files, completions,
//! man pages, the printing after a run and `report --html` read this table.
//!
//! A new experiment is its folder or file (`experiment/NAME/mod.rs` with its `KIND`,
//! flags, config and trial body, and `view.rs`) and one line here: see ARCHITECTURE.md.

use super::flags::CommandLine;
use super::{TreeExperiment, bigfile, chosen_ops, clusters, dirsize, ladder, mdtest, pack};
use crate::error::Result;
use crate::report::views::{self as view, View};
use crate::results::ResultSet;
use std::path::Path;

/// One experiment.
#[derive(Clone, Copy)]
pub struct Kind {
    /// Its command (`manyfiles NAME`) and `experiment.name` in its result files.
    pub name: &'static str,
    /// Runs under MPI: every rank in its own run directory (or `--shared-dir`).
    pub mpi: bool,
    /// A run file's `command = "NAME"` may name it.
    pub run_file: bool,
    /// Its command line, from which the CLI builds its subcommand (None: a command of
    /// the CLI's own, with its own dispatch).
    pub command: Option<CommandLine>,
    /// Its tables after a run and its HTML page's own parts.
    pub view: &'static View,
}

/// Every experiment, in the order the CLI lists them.
pub const KINDS: &[Kind] = &[
    ladder::KIND,     // ladder/
    chosen_ops::KIND, // ops: chosen_ops.rs
    bigfile::KIND,    // bigfile/
    clusters::KIND,   // clusters/
    dirsize::KIND,    // dirsize/
    pack::KIND,       // pack/
    mdtest::KIND,     // mdtest/
];

/// The experiment named `name`.
pub fn kind(name: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|k| k.name == name)
}

/// The view of a result file's experiment (the generic one for any other: `calibrate`).
pub fn view(name: &str) -> &'static View {
    kind(name).map(|k| k.view).unwrap_or(&view::GENERIC)
}

/// The names of the experiments with `pick`, in table order.
pub fn names(pick: impl Fn(&Kind) -> bool) -> Vec<&'static str> {
    KINDS.iter().filter(|k| pick(k)).map(|k| k.name).collect()
}

/// An experiment's config, as the CLI makes it.
pub trait Config: std::fmt::Debug {
    /// The experiment it is (an entry of [`KINDS`]).
    fn name(&self) -> &str;
    /// Run it: the results, and lines of its own before and after its view's tables.
    fn run(&self) -> Result<Finished>;
    /// Where its results are written.
    fn json(&self) -> Option<&Path>;
}

/// What an experiment's run gives its view.
pub struct Finished {
    pub results: ResultSet,
    pub before: String,
    pub after: String,
}

impl Finished {
    /// Only results: no lines of its own around the tables.
    pub fn results(results: ResultSet) -> Finished {
        Finished { results, before: String::new(), after: String::new() }
    }
}

/// Run `cfg` and say what it found: its view's tables between the title and the footer.
pub fn run(cfg: &dyn Config) -> Result<String> {
    let done = cfg.run()?;
    let body = format!("{}{}{}", done.before, (view(cfg.name()).terminal)(&done.results), done.after);
    Ok(view::after_run(&done.results, &body, cfg.json()))
}

impl Config for TreeExperiment {
    fn name(&self) -> &str {
        &self.name
    }
    fn run(&self) -> Result<Finished> {
        super::run(self).map(Finished::results)
    }
    fn json(&self) -> Option<&Path> {
        self.json.as_deref()
    }
}
