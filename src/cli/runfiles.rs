//! `run FILE`: an experiment described in a TOML file, turned into the command line it
//! stands for.

use super::Cli;
use clap::Args;
use manyfiles::error::{Error, Result};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct RunFileArgs {
    /// Experiment file: `command = "ladder"` plus the command's long flags as keys
    /// (fs = "ext4,xfs", to = 16384, runs = 5, keep = true, ...)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// Turn a TOML experiment file into the command line it stands for, so a file and
/// the flags mean exactly the same thing (one parser, one validation).
pub fn toml_args(path: &std::path::Path) -> Result<Vec<String>> {
    let bad = |r: String| Error::bad("FILE", format!("{}: {r}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| bad(e.message().to_string()))?;
    let mut args = vec!["manyfiles".to_string()];
    let command = match table.get("command") {
        Some(toml::Value::String(c)) if ["ladder", "ops", "bigfile", "clusters", "dirsize"].contains(&c.as_str()) => {
            c.clone()
        }
        Some(v) => return Err(bad(format!("command = {v} is not one of ladder, ops, bigfile, clusters, dirsize"))),
        None => return Err(bad("no `command = \"...\"` key (ladder, ops, bigfile, clusters or dirsize)".into())),
    };
    args.push(command.clone());
    let sub = {
        use clap::CommandFactory;
        Cli::command().find_subcommand(&command).cloned()
    };
    for (k, v) in &table {
        if k == "command" {
            continue;
        }
        let flag = format!("--{}", k.replace('_', "-"));
        let arg = sub.as_ref().and_then(|c| c.get_arguments().find(|a| a.get_long() == Some(&flag[2..])).cloned());
        let switch = arg.as_ref().is_some_and(|a| !a.get_action().takes_values());
        if switch && !matches!(v, toml::Value::Boolean(_)) {
            return Err(bad(format!("key {k}: must be true or false, not {v}")));
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
