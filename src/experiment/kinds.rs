//! The experiments, one entry each in [`KINDS`]: its command name, whether it runs under
//! MPI, whether a run file may name it, and its view (terminal tables and HTML page,
//! `report::views::View`). The CLI's MPI allow-list, run files, man pages, the printing
//! after a run and `report --html` read this table. Its config is the type implementing
//! [`Config`] whose `name` is the entry's (`TreeExperiment` for ladder, ops, clusters and
//! dirsize; `BigfileConfig`; `PackExperiment`). A new experiment is its file (preset or
//! trial body), its view and one entry.

use super::TreeExperiment;
use super::bigfile::BigfileConfig;
use super::pack::{PackExperiment, PackSource};
use crate::error::Result;
use crate::report::views::{self as view, View, bigfile, clusters, dirsize, pack_html};
use crate::results::ResultSet;
use crate::units::fmt_size;
use std::path::Path;

/// One experiment.
pub struct Kind {
    /// Its command (`manyfiles NAME`) and `experiment.name` in its result files.
    pub name: &'static str,
    /// Runs under MPI: every rank in its own run directory (or `--shared-dir`).
    pub mpi: bool,
    /// A run file's `command = "NAME"` may name it.
    pub run_file: bool,
    /// Its tables after a run and its HTML page's own parts.
    pub view: &'static View,
}

/// Every experiment, in the order the CLI lists them.
pub const KINDS: &[Kind] = &[
    Kind { name: "ladder", mpi: true, run_file: true, view: &view::LADDER },
    Kind { name: "ops", mpi: true, run_file: true, view: &view::GENERIC },
    Kind { name: "bigfile", mpi: false, run_file: true, view: &bigfile::VIEW },
    Kind { name: "clusters", mpi: false, run_file: true, view: &clusters::VIEW },
    Kind { name: "dirsize", mpi: true, run_file: true, view: &dirsize::VIEW },
    Kind { name: "pack", mpi: false, run_file: false, view: &pack_html::VIEW },
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
pub trait Config {
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
    fn results(results: ResultSet) -> Finished {
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

impl Config for BigfileConfig {
    fn name(&self) -> &str {
        "bigfile"
    }
    fn run(&self) -> Result<Finished> {
        super::bigfile::run(self).map(Finished::results)
    }
    fn json(&self) -> Option<&Path> {
        self.json.as_deref()
    }
}

impl Config for PackExperiment {
    fn name(&self) -> &str {
        "pack"
    }
    /// A real tree is named before the tables; skipped containers are listed after them.
    fn run(&self) -> Result<Finished> {
        let o = super::pack::run(self)?;
        let mut before = String::new();
        if let PackSource::Path(p) = &self.source {
            let m = &o.results.measurements;
            let (files, bytes) = m.first().map(|m| (m.tree_files, m.tree_bytes)).unwrap_or_default();
            before = format!(
                "tree: {} ({files} files, {}; recorded as n={files} with their mean size)\n",
                p.display(),
                fmt_size(bytes as f64)
            );
        }
        let after = o.skipped.iter().map(|w| format!("skipped: {w}\n")).collect();
        Ok(Finished { results: o.results, before, after })
    }
    fn json(&self) -> Option<&Path> {
        self.json.as_deref()
    }
}
