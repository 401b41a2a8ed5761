//! `run FILE`: an experiment described in a TOML file, turned into the command line it
//! stands for.

use super::{Cli, Command};
use clap::Args;
use manyfiles::error::{Error, Result};
use manyfiles::experiment::kinds;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct RunFileArgs {
    /// Experiment file: `command = "ladder"` plus the command's long flags as keys
    /// (fs = "ext4,xfs", to = 16384, runs = 5, keep = true, ...); relative paths in it are
    /// taken from its own directory
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Let the file name targets and outputs outside its own directory (by default a
    /// key such as target, json or fs = "ext4@disk:DIR" must stay inside it, exit 2)
    #[arg(long)]
    pub allow_outside: bool,
    /// Let the file's `cmd` keys run their commands (external tools timed as ops): by
    /// default a run file runs no command of its own choosing (exit 2)
    #[arg(long)]
    pub allow_commands: bool,
    #[command(flatten)]
    pub replace: super::common::Replace,
}

/// `run FILE`: the command the file stands for, parsed, with its name and the command line
/// provenance records (the command as typed, `=>`, what the file stood for).
pub fn file_command(a: &RunFileArgs, typed: Vec<String>) -> Result<(Cli, String, Vec<String>)> {
    let file_args = toml_args(a)?;
    if let Some((flag, value)) = super::negative_value(&file_args) {
        return Err(Error::bad(
            "FILE",
            format!("{}: key {}: must not be negative: {value}", a.file.display(), super::flag_key(&flag)),
        ));
    }
    let (inner, name) = super::parse_from(&file_args).map_err(|e| {
        let line = super::clap_line(&e);
        let key = match e.get(clap::error::ContextKind::InvalidArg) {
            Some(clap::error::ContextValue::String(arg)) if arg.starts_with("--") => {
                let flag = arg.split([' ', '=']).next().unwrap_or(arg);
                format!("key {}: ", super::flag_key(flag))
            }
            _ => String::new(),
        };
        Error::bad("FILE", format!("{}: {key}{line}", a.file.display()))
    })?;
    if matches!(inner.command, Command::Run(_)) {
        return Err(Error::bad("FILE", "an experiment file cannot run another"));
    }
    let mut recorded = typed;
    recorded.push("=>".into());
    recorded.extend(file_args);
    Ok((inner, name, recorded))
}

/// Keys whose value is a path the run writes to or works in (outputs and targets):
/// relative ones are taken from the file's directory and, unless `--allow-outside`,
/// must stay inside it.
const WRITE_PATH_KEYS: &[&str] = &["target", "json", "csv", "markdown", "destroy_device"];
/// Keys whose value is a path the run only reads: relative ones are taken from the
/// file's directory.
const READ_PATH_KEYS: &[&str] = &["like"];

/// Keys whose flag takes a comma-separated list although its value name does not say so.
const LIST_KEYS: &[&str] = &["ops", "cluster", "sizes"];

/// Keys a file may not hold although the command has the flag, and why: what they
/// would seem to say is not what would happen.
fn refused(command: &str, key: &str, v: &toml::Value) -> Option<String> {
    match (command, key, v) {
        (_, "cold", toml::Value::Boolean(false)) => Some(
            "false is not a setting: cold reads are the default and --cold only says so; \
             for warm reads write cache = \"warm\""
                .into(),
        ),
        (_, "force", _) => Some(
            "only the command line may let outputs replace files manyfiles did not write: \
             manyfiles run FILE --force"
                .into(),
        ),
        ("bigfile", "fsync", _) => Some(
            "has no effect (kept for old command lines): the write phase always ends with a timed fsync; \
             until = \"returned\" times the write loop alone"
                .into(),
        ),
        _ => None,
    }
}

/// Turn a TOML experiment file into the command line it stands for, so a file and
/// the flags mean exactly the same thing (one parser, one validation). The file is
/// bounded input (a regular file of at most 1 MiB); paths in it are taken from its own
/// directory and, unless `a.allow_outside`, must not leave it; `a.replace.force` is
/// passed on as `--force`.
pub fn toml_args(a: &RunFileArgs) -> Result<Vec<String>> {
    let path = &a.file;
    let text = manyfiles::fs::input::read_bounded(path, manyfiles::fs::input::RUN_FILE_MAX)
        .map_err(|e| Error::bad("FILE", format!("{}: {e}", path.display())))?;
    let dir = std::fs::canonicalize(path)
        .ok()
        .and_then(|p| p.parent().map(|d| d.to_path_buf()))
        .ok_or_else(|| Error::bad("FILE", format!("{}: cannot resolve its directory", path.display())))?;
    let rule = PathRule { dir, allow_outside: a.allow_outside, allow_commands: a.allow_commands };
    let mut args = text_args(&text, path, &rule)?;
    if a.replace.force {
        args.push("--force".into());
    }
    Ok(args)
}

/// Where a run file's paths are taken from and whether they may leave it.
struct PathRule {
    /// The file's directory (canonical).
    dir: PathBuf,
    allow_outside: bool,
    /// `cmd` keys allowed (`run --allow-commands`).
    allow_commands: bool,
}

impl PathRule {
    /// `value` of path key `k`: relative to the file's directory; an error (the reason)
    /// when it writes outside that directory and that is not allowed.
    fn resolve(&self, k: &str, value: &str) -> std::result::Result<String, String> {
        let p = self.dir.join(value);
        if WRITE_PATH_KEYS.contains(&k) && !self.allow_outside && !inside(&self.dir, &p) {
            return Err(format!(
                "{value} is outside {} (the run file's directory); manyfiles run FILE --allow-outside allows it",
                self.dir.display()
            ));
        }
        Ok(p.to_string_lossy().into_owned())
    }

    /// An `--fs` list: the paths in `@disk:DIR` and `@dev:/dev/NAME` items resolved and
    /// checked as [`PathRule::resolve`] does.
    fn resolve_fs(&self, value: &str) -> std::result::Result<String, String> {
        let mut items = Vec::new();
        for item in value.split(',') {
            let found = ["@disk:", "@dev:"].iter().find_map(|m| item.find(m).map(|i| (i + m.len(), *m)));
            match found {
                Some((at, _)) if !item[at..].is_empty() => {
                    let dir = self.resolve("target", &item[at..])?;
                    items.push(format!("{}{dir}", &item[..at]));
                }
                _ => items.push(item.to_string()),
            }
        }
        Ok(items.join(","))
    }
}

/// Is `p` (absolute, maybe not there yet) inside `dir` (canonical) once its existing
/// part is resolved (symlinks followed, as the run will follow them)? A `..` in the part
/// that does not exist yet is never inside.
fn inside(dir: &std::path::Path, p: &std::path::Path) -> bool {
    let mut existing = p.to_path_buf();
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(&existing).is_err() {
        let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else { return false };
        rest.push(name.to_os_string());
        existing = parent.to_path_buf();
    }
    if p.components().any(|c| c == std::path::Component::ParentDir) && !rest.is_empty() {
        return false;
    }
    let Ok(mut resolved) = std::fs::canonicalize(&existing) else { return false };
    resolved.extend(rest.iter().rev());
    resolved.starts_with(dir)
}

/// [`toml_args`] of a file's text (`path` names it in messages).
fn text_args(text: &str, path: &std::path::Path, rule: &PathRule) -> Result<Vec<String>> {
    let bad = |r: String| Error::bad("FILE", format!("{}: {r}", path.display()));
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| bad(e.message().to_string()))?;
    let mut args = vec!["manyfiles".to_string()];
    let runnable = kinds::names(|k| k.run_file);
    let command = match table.get("command") {
        Some(toml::Value::String(c)) if runnable.contains(&c.as_str()) => c.clone(),
        Some(v) => return Err(bad(format!("command = {v} is not one of {}", runnable.join(", ")))),
        None => return Err(bad(format!("no `command = \"...\"` key ({})", super::listed(&runnable, "or")))),
    };
    args.push(command.clone());
    let sub = super::command().find_subcommand(&command).cloned();
    for (k, v) in &table {
        if k == "command" {
            continue;
        }
        let flag = format!("--{}", k.replace('_', "-"));
        let arg = sub
            .as_ref()
            .and_then(|c| c.get_arguments().find(|a| a.get_long() == Some(&flag[2..]) && !a.is_hide_set()).cloned());
        let Some(arg) = arg else {
            return Err(bad(format!(
                "key {k}: {command} has no {flag} (keys are its long flags; see manyfiles {command} --help)"
            )));
        };
        let switch = !arg.get_action().takes_values();
        if switch && !matches!(v, toml::Value::Boolean(_)) {
            return Err(bad(format!("key {k}: must be true or false, not {v}")));
        }
        if let Some(why) = refused(&command, k, v) {
            return Err(bad(format!("key {k}: {why}")));
        }
        if k == "cmd" && !rule.allow_commands {
            return Err(bad(format!(
                "key {k}: runs commands of the file's choosing; manyfiles run FILE --allow-commands allows it"
            )));
        }
        let v = &match v {
            toml::Value::String(s) if WRITE_PATH_KEYS.contains(&k.as_str()) || READ_PATH_KEYS.contains(&k.as_str()) => {
                toml::Value::String(rule.resolve(k, s).map_err(|why| bad(format!("key {k}: {why}")))?)
            }
            toml::Value::String(s) if k == "fs" => {
                toml::Value::String(rule.resolve_fs(s).map_err(|why| bad(format!("key {k}: {why}")))?)
            }
            toml::Value::Array(items) if k == "destroy_device" || k == "fs" => {
                let one = |s: &str| if k == "fs" { rule.resolve_fs(s) } else { rule.resolve(k, s) };
                let items: std::result::Result<Vec<_>, String> = items
                    .iter()
                    .map(|i| match i {
                        toml::Value::String(s) => one(s).map(toml::Value::String),
                        other => Ok(other.clone()),
                    })
                    .collect();
                toml::Value::Array(items.map_err(|why| bad(format!("key {k}: {why}")))?)
            }
            other => other.clone(),
        };
        // A list only where the flag takes one: `target = ["a", "b"]` would be one
        // directory named "a,b".
        let list = arg.get_value_delimiter().is_some()
            || matches!(arg.get_action(), clap::ArgAction::Append)
            || arg.get_value_names().is_some_and(|n| n.iter().any(|n| n.contains(",...")))
            || LIST_KEYS.contains(&k.as_str());
        if matches!(v, toml::Value::Array(_)) && !list {
            return Err(bad(format!("key {k}: {flag} takes one value, not a list")));
        }
        match v {
            toml::Value::Boolean(true) => args.push(flag),
            toml::Value::Boolean(false) => {}
            toml::Value::String(s) => args.extend([flag, s.clone()]),
            toml::Value::Integer(i) => args.extend([flag, i.to_string()]),
            toml::Value::Float(f) => args.extend([flag, f.to_string()]),
            toml::Value::Array(items) => {
                let parts: Vec<String> = items
                    .iter()
                    .map(|i| match i {
                        toml::Value::String(s) => Ok(s.clone()),
                        toml::Value::Integer(n) => Ok(n.to_string()),
                        other => Err(bad(format!("key {k}: list item {other} is not a string or number"))),
                    })
                    .collect::<Result<_>>()?;
                if k == "cmd" || k == "destroy_device" {
                    // Repeatable flag (templates may hold commas): one --cmd per item.
                    args.extend(parts.into_iter().flat_map(|p| [flag.clone(), p]));
                } else {
                    args.extend([flag, parts.join(",")]);
                }
            }
            other => return Err(bad(format!("key {k}: {other} is not a string, number, boolean or list"))),
        }
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Command;

    /// The configuration a file stands for (Debug text, without the command line), or
    /// the error it gets.
    fn config_of(text: &str) -> std::result::Result<String, String> {
        let rule = PathRule { dir: std::env::temp_dir(), allow_outside: true, allow_commands: true };
        let args = text_args(text, std::path::Path::new("t.toml"), &rule).map_err(|e| e.to_string())?;
        let (cli, _) = crate::cli::parse_from(&args).map_err(|e| e.to_string())?;
        let c = match &cli.command {
            Command::Experiment(e) => crate::cli::config(e, vec![]).map(|c| format!("{c:?}")),
            other => panic!("not an experiment: {other:?}"),
        };
        c.map_err(|e| e.to_string())
    }

    /// Whether `v` is what the command does without the key (clap's default, or `.`
    /// for --target).
    fn is_default(command: &str, key: &str, v: &toml::Value) -> bool {
        let long = key.replace('_', "-");
        let sub = crate::cli::command().find_subcommand(command).cloned().unwrap();
        let arg = sub.get_arguments().find(|a| a.get_long() == Some(long.as_str())).cloned().unwrap();
        let text = match v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map_or_else(|| i.to_string(), String::from))
                .collect::<Vec<_>>()
                .join(","),
            other => other.to_string(),
        };
        arg.get_default_values().iter().any(|d| d.to_str() == Some(text.as_str())) || (key == "target" && text == ".")
    }

    /// Every key of every example either changes the configuration (its removal
    /// changes what the file builds) or states the command's default; and every
    /// example builds.
    #[test]
    fn every_key_of_every_example_is_honoured() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        assert!(files.len() >= 6, "{files:?}");
        let mut keys_checked = 0;
        for f in files.iter().filter(|f| f.extension().is_some_and(|e| e == "toml")) {
            let text = std::fs::read_to_string(f).unwrap();
            let full = config_of(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let table: toml::Table = text.parse().unwrap();
            let command = table["command"].as_str().unwrap().to_string();
            for (k, v) in table.iter().filter(|(k, _)| *k != "command") {
                let mut without = table.clone();
                without.remove(k);
                let other = config_of(&toml::to_string(&without).unwrap());
                let changed = other.as_ref() != Ok(&full);
                assert!(
                    changed || is_default(&command, k, v),
                    "{}: key {k} = {v} changed nothing and is not the default",
                    f.display()
                );
                keys_checked += 1;
            }
        }
        assert!(keys_checked >= 30, "{keys_checked}");
    }

    /// What a file would seem to say but not do is refused, naming the key.
    #[test]
    fn keys_that_would_be_ignored_are_refused() {
        let refused = |text: &str, key: &str| {
            let e = config_of(text).expect_err(text);
            assert!(e.contains(&format!("key {key}:")), "{text}: {e}");
        };
        refused("command = \"ops\"\ncold = false\n", "cold");
        refused("command = \"ops\"\nwarp = 9\n", "warp");
        refused("command = \"ops\"\ntarget = [\"a\", \"b\"]\n", "target");
        refused("command = \"bigfile\"\nfsync = true\n", "fsync");
        refused("command = \"ops\"\nmock_timing = \"cv=0.1\"\n", "mock_timing");
        let e = config_of("command = \"bigfile\"\nthreads = 4\n").unwrap_err();
        assert!(e.contains("--threads"), "{e}");
        // And what they should write instead is honoured: warm reads.
        let warm = config_of("command = \"ops\"\ncache = \"warm\"\n").unwrap();
        assert!(warm.contains("caches: Warm"), "{warm}");
        assert!(config_of("command = \"ops\"\ncold = true\n").unwrap().contains("caches: Cold"));
        assert!(config_of("command = \"ops\"\nkeep = false\n").is_ok(), "false for an off switch is its default");
    }
}
