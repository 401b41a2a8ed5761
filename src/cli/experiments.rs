//! The experiments and `gen`. Every experiment's subcommand is built here from its
//! `experiment::kinds::KINDS` entry ([`subcommand`]: its own flags, as plain data, and
//! the shared groups of `common.rs`), and its config made through [`config`] (the
//! shared groups handed over as `experiment::flags::Common`); `gen` is a clap struct.

use super::common::{
    Hint, RUN_PORTION_DEFAULT, Replace, RunArgs, ShapeArgs, TreeSizeArgs, WriteArgs, check_output, check_runs, threads,
};
use clap::{ArgMatches, Args, FromArgMatches};
use manyfiles::error::{Error, Result};
use manyfiles::experiment::flags::{CommandLine, Common, Flag, Group, RunSettings, Takes, Value, Values};
use manyfiles::experiment::kinds::{self, Config};
use manyfiles::experiment::{Order, TargetSpec, TreeExperiment};
use manyfiles::generate::GenConfig;
use manyfiles::ops::CreateOptions;
use manyfiles::results::Until;
use manyfiles::tree::{SizeDist, TreeSpec};
use manyfiles::units::{parse_count, parse_size};
use std::path::PathBuf;

/// Copy ops' extras for ladder and ops: external tools and content verification.
#[derive(Args, Debug)]
pub struct PairArgs {
    /// Time an external tool as op cmd:NAME on the same trees, e.g. --cmd cp='cp -a {src}/. {dst}'
    /// (repeatable); its destination is checked against the source afterwards
    #[arg(long = "cmd", value_name = "NAME=TEMPLATE")]
    pub cmds: Vec<String>,
    /// Compare contents too when checking an external tool's destination
    #[arg(long)]
    pub verify: bool,
}

impl PairArgs {
    fn apply(&self, mut cfg: TreeExperiment) -> Result<TreeExperiment> {
        use manyfiles::experiment::external::ExternalCmd;
        for c in &self.cmds {
            let mut cmd = ExternalCmd::parse(c).map_err(|e| Error::bad("--cmd", e))?;
            cmd.verify = self.verify;
            cfg.commands.push(cmd);
        }
        manyfiles::experiment::add_commands(&mut cfg.ops, &cfg.commands)?;
        Ok(cfg)
    }
}

#[derive(Args, Debug)]
pub struct GenArgs {
    /// Directory to write into: new, empty, or made by an earlier `manyfiles gen` and holding only what
    /// it wrote (its mark names the directory itself, so a copy is not one; anything else in it → refused)
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    #[command(flatten)]
    pub tree: TreeSizeArgs,
    /// Worker threads (default: available cores)
    #[arg(long)]
    pub threads: Option<usize>,
    /// No progress bar
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[command(flatten)]
    pub write: WriteArgs,
}

pub fn gen_config(a: &GenArgs) -> Result<GenConfig> {
    Ok(GenConfig {
        dir: a.dir.clone(),
        spec: a.tree.spec(&a.shape)?,
        create: a.write.options()?,
        threads: threads(a.threads)?,
        quiet: a.quiet,
    })
}

/// `gen DIR`: the tree written, and what it cost.
pub fn generate(a: &GenArgs) -> Result<()> {
    use manyfiles::units::{fmt_rate, fmt_secs, fmt_size};
    let cfg = gen_config(a)?;
    let g = manyfiles::generate::generate(&cfg)?;
    let r = &g.result;
    super::out(&format!(
        "created {} files ({}) in {} directories under {} in {} on {} thread{} (one run: {}, {} MiB/s)\n",
        r.files,
        fmt_size(r.bytes as f64),
        g.dirs,
        cfg.dir.display(),
        fmt_secs(r.elapsed_s),
        g.threads,
        if g.threads == 1 { "" } else { "s" },
        fmt_rate(r.files as f64 / r.elapsed_s.max(1e-9), "files"),
        manyfiles::units::sig3(r.bytes as f64 / r.elapsed_s.max(1e-9) / 1048576.0)
    ));
    super::out(&format!("file system: {} on {}\n", g.info.fs_type, g.info.mount_point));
    Ok(())
}

/// An experiment whose command line its `KINDS` entry describes, as parsed.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// Its `KINDS` entry's name.
    pub name: &'static str,
    /// Its subcommand's matches.
    pub matches: ArgMatches,
}

/// The subcommand `name`: its own flags and the shared groups, in the order `line`
/// lists them (the order of its help page).
pub fn subcommand(name: &'static str, line: &CommandLine) -> clap::Command {
    let mut cmd = clap::Command::new(name);
    for group in line.groups {
        cmd = match group {
            Group::Own => line.flags.iter().fold(cmd, |cmd, f| cmd.arg(arg(f))),
            Group::TreeSize => TreeSizeArgs::augment_args(cmd),
            Group::Pair => PairArgs::augment_args(cmd),
            Group::Run => RunArgs::augment_args(cmd),
            Group::Shape => ShapeArgs::augment_args(cmd),
            Group::Write => WriteArgs::augment_args(cmd),
            Group::Replace => Replace::augment_args(cmd),
        };
    }
    // --prices prices a tree experiment's native object-store ops: hidden where none run
    // (bigfile, mdtest: no tree shape).
    if line.groups.contains(&Group::Run) && !line.groups.contains(&Group::Shape) {
        cmd = cmd.mut_arg("prices", |a| a.hide(true));
    }
    for &(id, value) in line.defaults {
        cmd = cmd.mut_arg(id, |a| a.default_value(value));
    }
    // After the groups: a derived group sets the command's about to its own doc comment.
    cmd.about(line.about).long_about(None)
}

/// One own flag as clap takes it (its id is its long name).
fn arg(f: &Flag) -> clap::Arg {
    use clap::ArgAction;
    let mut a = clap::Arg::new(f.long).help(f.help).conflicts_with_all(f.conflicts.iter().copied());
    if !f.positional {
        a = a.long(f.long);
    }
    if let Some(c) = f.short {
        a = a.short(c);
    }
    if let Some(r) = f.requires {
        a = a.requires(r);
    }
    let a = match f.takes {
        Takes::Switch => return a.action(ArgAction::SetTrue),
        Takes::Count => a.value_parser(parse_count),
        Takes::Size => a.value_parser(parse_size),
        Takes::Number => a.value_parser(clap::value_parser!(u64).range(..=f.max)),
        Takes::Path => a.value_parser(clap::value_parser!(PathBuf)),
        Takes::Text if f.hints.is_empty() => a.value_parser(clap::value_parser!(String)),
        Takes::Text => a.value_parser(Hint(f.hints)).hide_possible_values(true),
    };
    let a = a.action(ArgAction::Set).value_name(f.value_name);
    match f.default {
        Some(d) => a.default_value(d),
        None => a,
    }
}

/// The values of `flags` in `m`.
fn values(flags: &[Flag], m: &ArgMatches) -> Values {
    let value = |f: &Flag| match f.takes {
        Takes::Switch => Value::Switch(m.get_flag(f.long)),
        Takes::Count | Takes::Size | Takes::Number => {
            m.get_one::<u64>(f.long).map_or(Value::Absent, |n| Value::Number(*n))
        }
        Takes::Text => m.get_one::<String>(f.long).map_or(Value::Absent, |t| Value::Text(t.clone())),
        Takes::Path => m.get_one::<PathBuf>(f.long).map_or(Value::Absent, |p| Value::Path(p.clone())),
    };
    Values(flags.iter().map(|f| (f.long, value(f))).collect())
}

/// The config of experiment `e`, from its own flags and the shared groups it takes.
pub fn config(e: &Experiment, command_line: Vec<String>) -> Result<Box<dyn Config>> {
    let line = kinds::kind(e.name)
        .and_then(|k| k.command)
        .ok_or_else(|| Error::failed(format!("{}: no command line in experiment::kinds::KINDS", e.name)))?;
    let m = &e.matches;
    let takes = |g: Group| line.groups.contains(&g);
    // Only the groups the command has are in `m`; clap's derive answers for them.
    fn group<T: FromArgMatches>(m: &ArgMatches, taken: bool) -> Result<Option<T>> {
        if !taken {
            return Ok(None);
        }
        T::from_arg_matches(m).map(Some).map_err(|e| Error::failed(format!("command line: {e}")))
    }
    let shared = Shared {
        tree: group(m, takes(Group::TreeSize))?,
        pair: group(m, takes(Group::Pair))?,
        run: group(m, takes(Group::Run))?,
        shape: group(m, takes(Group::Shape))?,
        write: group(m, takes(Group::Write))?,
        replace: group(m, takes(Group::Replace))?,
        command_line,
    };
    (line.config)(&values(line.flags, m), &shared)
}

/// The shared groups an experiment's command line has, parsed.
struct Shared {
    tree: Option<TreeSizeArgs>,
    pair: Option<PairArgs>,
    run: Option<RunArgs>,
    shape: Option<ShapeArgs>,
    write: Option<WriteArgs>,
    replace: Option<Replace>,
    command_line: Vec<String>,
}

/// A group the experiment's config asks for: a slip in its file when its command line
/// lacks it.
fn taken<'a, T>(g: &'a Option<T>, what: &str) -> Result<&'a T> {
    g.as_ref().ok_or_else(|| Error::failed(format!("this experiment's command line has no {what} flags")))
}

impl Common for Shared {
    fn shape(&self, files: u64, size: SizeDist) -> Result<TreeSpec> {
        taken(&self.shape, "shape")?.spec(files, size)
    }
    fn tree(&self) -> Result<TreeSpec> {
        taken(&self.tree, "tree size")?.spec(taken(&self.shape, "shape")?)
    }
    fn experiment(&self, name: &str, trees: Vec<TreeSpec>, ops: &str) -> Result<TreeExperiment> {
        let run = taken(&self.run, "run")?;
        let cfg = run.experiment(name, trees, ops, self.create()?, self.command_line.clone())?;
        match &self.pair {
            Some(pair) => pair.apply(cfg),
            None => Ok(cfg),
        }
    }
    fn portion(&self) -> Result<u64> {
        Ok(taken(&self.run, "run")?.portion)
    }
    fn fs(&self) -> Option<&str> {
        self.run.as_ref().and_then(|r| r.fs.as_deref())
    }
    fn has_target(&self) -> bool {
        self.run.as_ref().is_some_and(|r| r.target.is_some())
    }
    fn confirm_devices(&self, targets: &mut [TargetSpec]) -> Result<()> {
        taken(&self.run, "run")?.confirm_devices(targets)
    }
    fn run_settings(&self) -> Result<RunSettings> {
        let r = taken(&self.run, "run")?;
        let caches = r.cache_mode()?;
        let until = Until::parse(&r.until)?;
        if let Some(j) = &r.json {
            check_output(j, "--json", r.replace.force)?;
        }
        // A view setting, not the experiment's: the tables printed at the end.
        manyfiles::report::table::set_wide(r.wide);
        Ok(RunSettings {
            targets: r.targets()?,
            labels: r.labels()?,
            fs_size: r.fs_size,
            reuse: r.reuse,
            order: Order::parse(&r.order)?,
            caches,
            until,
            runs: r.runs.map(check_runs).transpose()?,
            adaptive: r.adaptive()?,
            mock: r.mock()?,
            warmup: r.warmup,
            threads: r.threads,
            portion: r.portion,
            portion_default: RUN_PORTION_DEFAULT,
            shared_dir: r.shared_dir,
            keep: r.keep,
            json: r.json.clone(),
            exports: r.exports()?,
            quiet: r.quiet,
            command_line: self.command_line.clone(),
        })
    }
    fn create(&self) -> Result<CreateOptions> {
        taken(&self.write, "write")?.options()
    }
    fn check_output(&self, path: &std::path::Path, flag: &str) -> Result<()> {
        // --force comes with the run flags or on its own.
        let force = self.replace.or(self.run.as_ref().map(|r| r.replace)).is_some_and(|r| r.force);
        check_output(path, flag, force)
    }
    fn check_runs(&self, runs: u32) -> Result<u32> {
        check_runs(runs)
    }
    fn threads(&self, given: Option<usize>) -> Result<usize> {
        threads(given)
    }
    fn command_line(&self) -> Vec<String> {
        self.command_line.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Own flags of every form an experiment can declare.
    const FLAGS: &[Flag] = &[
        Flag::positional_path("path", "PATH", "A tree").conflicts(&["count"]),
        Flag::count("count", "N", "A count").default("20"),
        Flag::number("small", "K", "At most 9").default("1").at_most(9),
        Flag::text("word", "WORD", "A word").requires("count").hints(&["a", "b"]),
        Flag::switch("loud", "A switch").short('l'),
    ];

    fn parse(args: &[&str]) -> std::result::Result<Values, clap::Error> {
        let cmd = FLAGS.iter().fold(clap::Command::new("t"), |cmd, f| cmd.arg(arg(f)));
        let m = cmd.try_get_matches_from(std::iter::once("t").chain(args.iter().copied()))?;
        Ok(values(FLAGS, &m))
    }

    #[test]
    fn own_flags_parse_as_their_data_says() {
        let v = parse(&[]).unwrap();
        assert_eq!((v.number("count"), v.number("small")), (20, 1), "defaults");
        assert!(v.path("path").is_none() && v.text("word").is_none() && !v.switch("loud"));
        let v = parse(&["--count", "5", "--word", "c", "-l", "--small", "9"]).unwrap();
        assert_eq!((v.number("count"), v.text("word"), v.switch("loud"), v.number("small")), (5, Some("c"), true, 9));
        assert_eq!(parse(&["some/dir"]).unwrap().path("path"), Some(std::path::Path::new("some/dir")));
        assert!(parse(&["--small", "10"]).is_err(), "above its maximum");
        assert!(parse(&["--count", "x"]).is_err(), "not a count");
        assert!(parse(&["some/dir", "--count", "3"]).is_err(), "conflicts");
        assert!(parse(&["--word", "a"]).is_err(), "requires --count given");
    }

    /// Every experiment's subcommand, built from its `KINDS` entry, passes clap's own
    /// checks (ids of conflicts and requirements exist, no flag twice).
    #[test]
    fn every_experiment_command_is_consistent() {
        let root = super::super::command();
        for k in kinds::KINDS {
            assert!(root.find_subcommand(k.name).is_some(), "{} has no subcommand", k.name);
        }
        root.debug_assert();
    }
}
