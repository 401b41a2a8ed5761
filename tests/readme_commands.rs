//! README's Commands table against `--help`: every "`--flag` (DEFAULT)" it states for a
//! command is a flag of that command and its `[default: …]` in the command's help.

mod common;

use common::*;

fn norm(s: &str) -> String {
    s.chars().filter(|c| !matches!(c, ',' | '×' | ' ' | '`')).collect::<String>().to_lowercase()
}

#[test]
fn commands_table_matches_help() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let table = readme.split("\n## Commands\n").nth(1).unwrap().split("\n\n").next().unwrap();
    let mut checked = 0;
    for row in table.lines().filter(|l| l.starts_with("| `manyfiles ")) {
        let cmd = row["| `manyfiles ".len()..].split([' ', '`']).next().unwrap();
        let help = run([cmd, "--help"]);
        help.ok();
        // Each `--flag` named in the row exists in the help.
        for part in row.split("`--").skip(1) {
            let flag: String = part.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            let flag = format!("--{flag}");
            // "`--flag` (X)": the flag is the command's and X its help's default
            // (numbers as written in prose).
            let rest = part.split_once('`').map(|x| x.1).unwrap_or("");
            let Some(value) = rest.strip_prefix(" (").and_then(|r| r.split(')').next()) else { continue };
            assert!(help.stdout.contains(&flag), "{cmd}: README names {flag}, --help has no such flag");
            if value.contains('…') || (value.contains(' ') && !value.chars().next().unwrap().is_ascii_digit()) {
                continue; // a description, not a default
            }
            let line = help
                .stdout
                .lines()
                .skip_while(|l| {
                    let t = l.trim_start();
                    !(t.starts_with(&format!("{flag} ")) || t.starts_with(&format!("{flag} <")) || t == flag)
                })
                .collect::<Vec<_>>();
            let block: String = line.iter().take(4).cloned().collect::<Vec<_>>().join(" ");
            let Some(default) = block.split("[default: ").nth(1).and_then(|d| d.split(']').next()) else {
                panic!("{cmd}: README gives {flag} the default ({value}); --help states none:\n{block}");
            };
            assert_eq!(norm(value), norm(default), "{cmd}: README says {flag} ({value}), --help [default: {default}]");
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} defaults checked");
}
