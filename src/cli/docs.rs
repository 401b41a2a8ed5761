//! `completions` and `man`: shell completion scripts and man pages generated from the
//! same clap definitions.

use super::Cli;
use clap::Args;
use manyfiles::error::{Error, Result};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// An existing directory to write the pages into
    #[arg(default_value = ".")]
    pub dir: PathBuf,
}

/// The completion script for `shell`, generated from these very definitions.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "manyfiles", &mut out);
    out
}

/// Man pages (roff) for the tool and each command into `dir`; returns the files written.
pub fn man_pages(dir: &std::path::Path) -> Result<Vec<PathBuf>> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(Error::bad("DIR", format!("{} is not a directory", dir.display()))),
        Err(e) => return Err(Error::bad("DIR", format!("{}: {e}", dir.display()))),
    }
    // Built once so subcommands carry their full names (`manyfiles-gen`) and the version.
    let mut cmd = <Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    cmd.build();
    let mut pages = vec![cmd.clone()];
    pages.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
    let mut written = Vec::new();
    for page in pages {
        let man = clap_mangen::Man::new(page);
        let path = dir.join(man.get_filename());
        let mut text = Vec::new();
        man.render(&mut text).map_err(|e| Error::failed(format!("man page: {e}")))?;
        manyfiles::fs::output::write_file(&path, &text)?;
        written.push(path);
    }
    Ok(written)
}
