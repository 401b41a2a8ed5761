//! The command-line surface pinned (as fuc pins its command reference): every command's
//! `--help` is checked in under tests/golden/help/, and a flag, default or help text
//! that changes without its golden file changing fails here. After an intended change:
//! `MANYFILES_UPDATE_GOLDEN=1 cargo test --test cli_golden`, then review the diff.

use std::path::PathBuf;
use std::process::Command;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_manyfiles"))
}

/// `manyfiles ARGS --help` as a user without a terminal sees it (clap wraps at 100
/// columns when stdout is not a terminal; COLUMNS is removed so the width is fixed).
fn help(args: &[&str]) -> String {
    let out = Command::new(bin()).args(args).arg("--help").env_remove("COLUMNS").output().unwrap();
    assert!(out.status.success(), "{args:?} --help: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The commands `manyfiles --help` lists (so a new command gets a golden file too).
fn commands(top: &str) -> Vec<String> {
    top.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

#[test]
fn every_help_text_matches_its_golden_file() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/help");
    let update = std::env::var_os("MANYFILES_UPDATE_GOLDEN").is_some();
    let top = help(&[]);
    let cmds = commands(&top);
    assert!(cmds.len() >= 19, "commands listed by --help: {cmds:?}");
    let mut pages = vec![("manyfiles".to_string(), top.clone())];
    pages.extend(cmds.iter().map(|c| (format!("manyfiles-{c}"), help(&[c.as_str()]))));
    let mut differ = Vec::new();
    for (name, text) in &pages {
        let path = dir.join(format!("{name}.txt"));
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, text).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(want) if &want == text => {}
            Ok(want) => {
                let first = want.lines().zip(text.lines()).position(|(a, b)| a != b).unwrap_or(0);
                differ.push(format!(
                    "{name}: line {}: golden {:?}, now {:?}",
                    first + 1,
                    want.lines().nth(first).unwrap_or(""),
                    text.lines().nth(first).unwrap_or("")
                ));
            }
            Err(e) => differ.push(format!("{name}: no golden file {} ({e})", path.display())),
        }
    }
    // Golden files of commands that no longer exist.
    if !update {
        for e in std::fs::read_dir(&dir).unwrap() {
            let n = e.unwrap().file_name().to_string_lossy().trim_end_matches(".txt").to_string();
            if !pages.iter().any(|(p, _)| *p == n) {
                differ.push(format!("{n}: golden file of a command --help no longer lists"));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "the CLI changed (if intended: MANYFILES_UPDATE_GOLDEN=1 cargo test --test cli_golden, and review):\n{}",
        differ.join("\n")
    );
}
