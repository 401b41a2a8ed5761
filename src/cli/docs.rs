//! `completions` and `man`: shell completion scripts and man pages generated from the
//! same clap definitions.

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
    /// Directory to write the pages into (made if missing)
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    #[command(flatten)]
    pub replace: super::common::Replace,
}

/// The completion script for `shell`, generated from these very definitions.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = super::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "manyfiles", &mut out);
    out
}

/// README, whose "Examples" block the man pages' EXAMPLES come from.
const README: &str = include_str!("../../README.md");

/// README's examples: (what it does, command line), from the first code block under
/// `## Examples`; a `# comment` line describes the command lines below it.
pub fn readme_examples() -> Vec<(String, String)> {
    let Some(section) = README.split("\n## Examples\n").nth(1) else { return Vec::new() };
    let Some(block) = section.split("```sh\n").nth(1).and_then(|b| b.split("```").next()) else { return Vec::new() };
    let mut out = Vec::new();
    let mut what = String::new();
    for line in block.lines().map(str::trim) {
        if let Some(c) = line.strip_prefix('#') {
            what = c.trim().to_string();
        } else if line.starts_with("manyfiles ") {
            out.push((what.clone(), line.to_string()));
        }
    }
    out
}

/// The command an example runs (`manyfiles ladder --runs 3` → `ladder`).
fn example_command(line: &str) -> &str {
    line.split_whitespace().nth(1).unwrap_or("")
}

/// roff-escaped text: backslashes, and a leading dot or quote that would start a request.
fn roff(s: &str) -> String {
    let t = s.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') { format!("\\&{t}") } else { t }
}

/// The sections clap_mangen does not write: EXAMPLES (README's, for this command or
/// all of them), EXIT STATUS, ENVIRONMENT, FILES, SEE ALSO.
fn extra_sections(name: Option<&str>, commands: &[String]) -> String {
    let mut r = String::new();
    let examples: Vec<(String, String)> =
        readme_examples().into_iter().filter(|(_, l)| name.is_none_or(|n| example_command(l) == n)).collect();
    if !examples.is_empty() {
        r.push_str(".SH EXAMPLES\n");
        for (what, line) in &examples {
            r.push_str(&format!(".TP\n.B {}\n{}\n", roff(line), roff(what)));
        }
    }
    r.push_str(".SH \"EXIT STATUS\"\n");
    for (code, what) in [
        ("0", "Done."),
        (
            "1",
            "The run failed (out of space, a helper failed, entries that could not be copied or read; compare: a significant slowdown past \\-\\-fail\\-if\\-slower). Finished measurements are saved and the run directory is removed.",
        ),
        ("2", "Bad input: one line naming the flag (or run\\-file key) and the reason; nothing was created."),
        (
            "130, 143",
            "Interrupted by SIGINT or SIGTERM: results so far saved, run directory removed. A second signal ends the process at once; manyfiles cleanup then undoes what it left.",
        ),
    ] {
        r.push_str(&format!(".TP\n.B {code}\n{what}\n"));
    }
    r.push_str(".SH ENVIRONMENT\n");
    for (var, what) in [
        (
            "MANYFILES_HELPER_TIMEOUT",
            "Seconds every external helper (mkfs, mount, losetup, ntfs\\-3g, exfat\\-fuse, ...) may take before it is killed with its process group and the run fails naming it. Default: 120 s, plus 10 s per GiB of image for mkfs.",
        ),
        (
            "MANYFILES_DIST_CHUNK",
            "Under MPI, copy and sync split files of at least this size (default 64M) into chunks of this size that any rank copies.",
        ),
        (
            "XDG_STATE_HOME",
            "gen keeps the spec of each tree it wrote under $XDG_STATE_HOME/manyfiles/gen/ (default ~/.local/state).",
        ),
        (
            "OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS",
            "Ranks on this host (set by the MPI launcher): the default \\-\\-threads divides the host's cores among them.",
        ),
    ] {
        r.push_str(&format!(".TP\n.B {var}\n{what}\n"));
    }
    r.push_str(".SH FILES\n");
    for (file, what) in [
        (
            "/run/manyfiles",
            "The registry (root only): one record per image, loop device and mount a run made, written before each exists, so manyfiles cleanup can undo a killed run and touch nothing else.",
        ),
        (
            "TARGET/manyfiles\\-run\\-ID/.manyfiles\\-run",
            "The run directory made inside \\-\\-target and its marker: the tool writes only below it and removes it at the end (\\-\\-keep keeps it).",
        ),
        ("/dev/shm", "Images of test file systems backed by @ram (the default backing)."),
        (
            "$XDG_STATE_HOME/manyfiles/gen/",
            "gen's records of the trees it wrote (the directory's own user.manyfiles attribute names it).",
        ),
    ] {
        r.push_str(&format!(".TP\n.B {file}\n{what}\n"));
    }
    r.push_str(".SH \"SEE ALSO\"\n");
    let mut see: Vec<String> = match name {
        None => commands.iter().map(|c| format!("manyfiles\\-{c}(1)")).collect(),
        Some(n) => std::iter::once("manyfiles(1)".to_string())
            .chain(related(n).iter().filter(|c| **c != n).map(|c| format!("manyfiles\\-{c}(1)")))
            .collect(),
    };
    see.extend(["mkfs(8)", "mount(8)", "losetup(8)"].map(String::from));
    r.push_str(&format!("{}\n", see.join(", ")));
    r
}

/// Commands whose pages a command's page points to.
fn related(command: &str) -> Vec<&'static str> {
    let run_file_kinds = || manyfiles::experiment::kinds::names(|k| k.run_file);
    let fixed: &[&str] = match command {
        "run" => return run_file_kinds(),
        "pack" => &["ladder", "copy"],
        c if run_file_kinds().contains(&c) => &["run", "report", "compare", "predict", "cleanup"],
        "report" | "compare" | "predict" | "plan" => &["ladder", "report", "compare"],
        "copy" | "sync" | "rm" => &["copy", "sync", "rm"],
        "scan" | "gen" => &["scan", "gen", "plan"],
        "cleanup" => &["ladder", "pack"],
        _ => &["ladder"],
    };
    fixed.to_vec()
}

/// Man pages (roff) for the tool and each command into `dir` (made if missing);
/// returns the files written.
pub fn man_pages(dir: &std::path::Path, force: bool) -> Result<Vec<PathBuf>> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(Error::bad("DIR", format!("{} is not a directory", dir.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| Error::failed(format!("cannot make {}: {e}", dir.display())))?
        }
        Err(e) => return Err(Error::bad("DIR", format!("{}: {e}", dir.display()))),
    }
    // Built once so subcommands carry their full names (`manyfiles-gen`) and the version.
    let mut cmd = super::command().disable_help_subcommand(true);
    cmd.build();
    let commands: Vec<String> =
        cmd.get_subcommands().filter(|s| !s.is_hide_set()).map(|s| s.get_name().to_string()).collect();
    let mut pages = vec![(None, cmd.clone())];
    pages.extend(
        cmd.get_subcommands().filter(|s| !s.is_hide_set()).map(|s| (Some(s.get_name().to_string()), s.clone())),
    );
    let mut rendered = Vec::new();
    for (name, page) in pages {
        let man = clap_mangen::Man::new(page);
        let path = dir.join(man.get_filename());
        let mut text = Vec::new();
        man.render(&mut text).map_err(|e| Error::failed(format!("man page: {e}")))?;
        text.extend_from_slice(extra_sections(name.as_deref(), &commands).as_bytes());
        rendered.push((path, text));
    }
    // Every page is checked before any is written: a file of that name that is no
    // manyfiles page stops them all.
    for (path, _) in &rendered {
        manyfiles::fs::output::check_path(path, force).map_err(|e| Error::bad("DIR", e))?;
    }
    let mut written = Vec::new();
    for (path, text) in rendered {
        manyfiles::fs::output::write_file(&path, &text)?;
        written.push(path);
    }
    Ok(written)
}

/// `completions SHELL`.
pub fn print_completions(a: &CompletionsArgs) -> Result<()> {
    super::out(&String::from_utf8_lossy(&completions(a.shell)));
    Ok(())
}

/// `man DIR`.
pub fn man(a: &ManArgs) -> Result<()> {
    let pages = man_pages(&a.dir, a.replace.force)?;
    super::out(&format!(
        "wrote {} man pages into {} (manyfiles.1, manyfiles-COMMAND.1)\n",
        pages.len(),
        a.dir.display()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every example in README's block runs through the parser (so the man pages show
    /// command lines that work), and every command has at least one.
    #[test]
    fn readme_examples_parse_and_cover_every_command() {
        let ex = readme_examples();
        assert!(ex.len() >= 20, "{ex:?}");
        for (what, line) in &ex {
            assert!(!what.is_empty(), "{line}: no description");
            let words: Vec<&str> = line.split('>').next().unwrap().split_whitespace().collect();
            if let Err(e) = super::super::parse_from(&words) {
                panic!("{line}: {e}");
            }
        }
        let cmd = super::super::command();
        for c in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
            assert!(ex.iter().any(|(_, l)| example_command(l) == c.get_name()), "no example for {}", c.get_name());
        }
    }
}
