//! Command-line definitions (clap) and their translation into the engine's plain config
//! structs. Nothing below this layer sees clap. This file holds the parser (`Cli`, the
//! `Command` enum whose doc comments are the help text, and [`command`], which adds a
//! subcommand for every experiment `experiment::kinds::KINDS` describes), clap's error
//! lines, the MPI allow-list and [`out`]; each command family's arguments, config
//! translation and run live in the files below.

mod common;
mod docs;
mod engines;
mod experiments;
mod mounts;
mod results;
mod runfiles;
mod storage;

use clap::{Parser, Subcommand};
use docs::{CompletionsArgs, ManArgs};
use engines::{CopyArgs, RmArgs, ScanArgs, SyncArgs};
use experiments::{Experiment, GenArgs};
use mounts::{CleanupArgs, MountArgs, UmountArgs};
use results::{CompareArgs, PlanArgs, PredictArgs, ReportArgs};
use runfiles::RunFileArgs;

use manyfiles::error::{Error, Result};
use manyfiles::ranks;
use std::io::Write;
use std::process::ExitCode;

pub use docs::{man, print_completions};
pub use engines::{copy, rm, scan, sync};
pub use experiments::{config, generate};
pub use mounts::mount_config;
pub use results::{compare, plan_config, predict, report_config};
pub use runfiles::file_command;
pub use storage::{cleanup, mount, umount};

#[derive(Parser, Debug)]
#[command(
    name = "manyfiles",
    version = manyfiles::measure::provenance::LONG_VERSION,
    about = "Measure what many small files cost a storage system",
    long_about = "Measure what many small files cost a storage system: the same bytes as 1 file or as \
                  65,536 files, timed phase by phase with honest statistics, and the per-file and \
                  per-byte cost fitted from them."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// An experiment whose subcommand its `experiment::kinds::KINDS` entry describes
    /// (every experiment: see [`command`]).
    #[command(skip)]
    Experiment(Experiment),
    /// Write a deterministic tree (same spec + seed → byte-identical tree) into DIR
    Gen(GenArgs),
    /// Run an experiment described in a TOML file (keys are the command's long flags)
    Run(RunFileArgs),
    /// Walk a tree and index its metadata (SQLite or PostgreSQL); a rescan writes only changes
    Scan(ScanArgs),
    /// Remove what killed runs left behind: mounts, loop devices, images, daemons (only what manyfiles made)
    Cleanup(CleanupArgs),
    /// Bring up a managed target (a device class, an exFAT/NTFS image, a tmpfs) at DIR for your own tools
    Mount(MountArgs),
    /// Take down what `manyfiles mount` made at DIR: unmount, loop device, daemons, image
    Umount(UmountArgs),
    /// Copy SRC's contents into DST (new or empty): parallel per directory, mode, mtime and symlinks kept
    Copy(CopyArgs),
    /// Remove trees fast: parallel per directory, never follows symlinks, stays on one file system
    ///
    /// Every PATH is checked before anything is removed: `/`, anything resolving to it, a
    /// path that cannot be resolved, or ending in `.`/`..` is refused (exit 2). A symlink
    /// PATH is removed itself. Mount points inside the trees are left alone and listed as
    /// failures (exit 1) unless --cross-mounts. "freed" is the free space the file systems
    /// involved gained (statvfs before and after: no per-file stat), so other writers on
    /// them, or file systems that free blocks in the background (btrfs, XFS), make it
    /// approximate.
    Rm(RmArgs),
    /// Make DST equal SRC: copy new and changed entries (size + mtime, or --checksum), optionally --delete
    Sync(SyncArgs),
    /// Charts and tables of result files: --html report (inline SVG), --png DIR, --csv, --markdown
    Report(ReportArgs),
    /// A/B: every measurement in both result files, the ratio B/A with its 95% CI and a verdict
    Compare(CompareArgs),
    /// Predict a real tree's time for every modelled op and target (model from a ladder's results, or
    /// calibrated first on --on DIR / --fs SPEC with trees shaped like it)
    Predict(PredictArgs),
    /// Cluster sizes for a tree: allocated space and slack, predicted write time, a recommendation
    Plan(PlanArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout
    Completions(CompletionsArgs),
    /// Write man pages (manyfiles.1 and one manyfiles-COMMAND.1 per command) into DIR
    Man(ManArgs),
}

/// The command line (`args`, and the same as the OS gave it) checked and parsed, with its
/// command's name; or the exit code once help, the version or the error was printed.
pub fn parse(args: &[String]) -> std::result::Result<(Cli, String), ExitCode> {
    if let Some((flag, value)) = negative_value(args) {
        eprintln!("manyfiles: {flag}: must not be negative: {value}");
        return Err(ExitCode::from(2));
    }
    if let Err(e) = manyfiles::helper::check_env() {
        eprintln!("manyfiles: {e}");
        return Err(ExitCode::from(2));
    }
    parse_from(std::env::args_os()).map_err(|e| {
        use clap::error::ErrorKind::*;
        match e.kind() {
            DisplayHelp | DisplayVersion => {
                let _ = e.print();
                ExitCode::SUCCESS
            }
            DisplayHelpOnMissingArgumentOrSubcommand => {
                // In --help's order: the experiments of KINDS first.
                let root = command();
                let mut subs: Vec<&clap::Command> = root.get_subcommands().collect();
                subs.sort_by_key(|s| s.get_display_order());
                let names: Vec<&str> = subs.iter().map(|s| s.get_name()).collect();
                eprintln!("manyfiles: a command is needed: {} (see manyfiles --help)", listed(&names, "or"));
                ExitCode::from(2)
            }
            _ => {
                eprintln!("manyfiles: {} (see manyfiles --help)", clap_line(&e));
                ExitCode::from(2)
            }
        }
    })
}

/// The whole command line: `Cli`'s commands and one subcommand per experiment whose
/// command line its `KINDS` entry describes. `--help` lists the experiments first, in
/// table order, then the other commands in `Command`'s order.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    use manyfiles::experiment::kinds::{KINDS, kind};
    let mut root = Cli::command();
    for k in KINDS {
        if let Some(line) = &k.command {
            root = root.subcommand(experiments::subcommand(k.name, line));
        }
    }
    let others: Vec<String> =
        root.get_subcommands().map(|s| s.get_name().to_string()).filter(|n| kind(n).is_none()).collect();
    let order = KINDS.iter().map(|k| k.name.to_string()).chain(others);
    for (i, name) in order.enumerate() {
        root = root.mut_subcommand(name, |s| s.display_order(i));
    }
    root
}

/// `args` parsed (as `Cli::try_parse_from`, with the experiments of [`command`]), with
/// the command's name.
pub fn parse_from<I, T>(args: I) -> std::result::Result<(Cli, String), clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::FromArgMatches;
    let matches = command().try_get_matches_from(args)?;
    let name = matches.subcommand_name().unwrap_or_default().to_string();
    let experiment = manyfiles::experiment::kinds::kind(&name).filter(|k| k.command.is_some());
    if let (Some(k), Some((_, sub))) = (experiment, matches.subcommand()) {
        return Ok((Cli { command: Command::Experiment(Experiment { name: k.name, matches: sub.clone() }) }, name));
    }
    let cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command()))?;
    Ok((cli, name))
}

/// The engines that run distributed under MPI (`ranks::size() > 1`).
const MPI_ENGINES: &[&str] = &["copy", "sync", "rm", "scan"];

/// Under MPI only the experiments `experiment::kinds::KINDS` marks so (each rank in its
/// own run directory) and the distributed engines run, and `run` (its file's command is
/// judged in turn); the other commands would have every rank work on the same paths.
pub fn refuse_under_mpi(command: &str) -> Result<()> {
    let mut able = manyfiles::experiment::kinds::names(|k| k.mpi);
    able.extend(MPI_ENGINES);
    if ranks::size() <= 1 || command == "run" || able.contains(&command) {
        return Ok(());
    }
    Err(Error::bad(
        "COMMAND",
        format!(
            "this command does not run under MPI ({} do): refused, not distributed; start it without mpirun",
            listed(&able, "and")
        ),
    ))
}

/// `a, b and c` (`last` joins the last two).
pub fn listed(items: &[&str], last: &str) -> String {
    match items.split_last() {
        None => String::new(),
        Some((only, [])) => only.to_string(),
        Some((end, rest)) => format!("{} {last} {end}", rest.join(", ")),
    }
}

/// Print to stdout; a closed pipe (`| head`) is not an error.
pub fn out(text: &str) {
    if !ranks::is_root() {
        return; // under MPI, rank 0 speaks for the job
    }
    if manyfiles::fs::output::stdout_taken() {
        eprint!("{text}"); // an output file is `-`: standard output carries only that
        return;
    }
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes());
    let _ = o.flush();
}

/// clap's error as one line: its first line (which names the flag and the reason), with
/// the list of a "required arguments were not provided" error joined in.
pub fn clap_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("bad arguments").trim_start_matches("error: ").to_string();
    if e.kind() == clap::error::ErrorKind::MissingRequiredArgument {
        let listed: Vec<&str> = lines
            .take_while(|l| !l.starts_with("Usage:"))
            .map(|l| OR_ELSE.iter().find(|(one, _)| *one == l).map_or(l, |(_, every)| every))
            .collect();
        let first = first.trim_end_matches(':');
        return if listed.is_empty() {
            format!("{first}: {}", required_hint(e))
        } else {
            format!("{first}: {}", listed.join(", "))
        };
    }
    // clap's suggestion ("tip: a similar subcommand exists: 'ladder'"), kept on the line.
    match lines.find_map(|l| l.strip_prefix("tip: ")) {
        Some(tip) => format!("{first}; {tip}"),
        None => first,
    }
}

/// What a command with an empty "required arguments" list (clap leaves out arguments
/// that are required unless another is present) needs.
/// Requirements clap names by one flag that other flags satisfy too (its
/// `required_unless_present*`): every way, in the words of the error line.
const OR_ELSE: &[(&str, &str)] = &[
    ("--model <RESULTS.json>", "--model RESULTS.json, or --on DIR or --fs SPEC to calibrate first"),
    ("--tree <PATH>", "--tree PATH (or --inventory FILE)"),
];

fn required_hint(e: &clap::Error) -> String {
    let usage = match e.get(clap::error::ContextKind::Usage) {
        Some(u) => u.to_string(),
        None => String::new(),
    };
    if usage.contains("predict") {
        "--tree PATH (or --inventory FILE)".into()
    } else if usage.contains("plan") {
        "PATH (or --inventory FILE)".into()
    } else {
        "see the usage".into()
    }
}

/// `--min-runs` → `min_runs` (the TOML key a flag stands for).
pub fn flag_key(flag: &str) -> String {
    flag.trim_start_matches("--").replace('-', "_")
}

/// The first `--flag VALUE` whose VALUE is negative (`-1`, `-5%`, `-1m`, `-.5`): clap
/// would take it for a flag and answer "unexpected argument '-1'" without naming the
/// flag. Only flags that take a value count; nothing after `--`.
pub fn negative_value(args: &[String]) -> Option<(String, String)> {
    let root = command();
    let sub_name = args.iter().skip(1).find(|a| !a.starts_with('-'))?;
    let sub = root.find_subcommand(sub_name)?;
    let takes_value =
        |long: &str| sub.get_arguments().any(|a| a.get_long() == Some(long) && a.get_action().takes_values());
    for w in args.windows(2) {
        if w[0] == "--" {
            break;
        }
        let Some(long) = w[0].strip_prefix("--") else { continue };
        if long.contains('=') || !takes_value(long) {
            continue;
        }
        let v = &w[1];
        if v.len() > 1 && v.starts_with('-') && v[1..].starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            return Some((w[0].clone(), v.clone()));
        }
    }
    None
}
