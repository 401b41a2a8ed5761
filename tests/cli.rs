//! `--help`, `--version` and the documented defaults.

mod common;

use common::*;

#[test]
fn help_lists_the_subcommands() {
    let r = run(["--help"]);
    r.ok();
    for sub in ["ladder", "ops", "gen"] {
        assert!(r.stdout.contains(sub), "--help must list {sub}:\n{}", r.stdout);
    }
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    // -h works too.
    run(["-h"]).ok();
}

/// `--version`: name, version and the commit and date it was built from (this test
/// runs from the project's checkout, so from git when git and `.git` are there).
#[test]
fn version_prints_name_version_and_commit() {
    let r = run(["--version"]);
    r.ok();
    let line = r.stdout.trim();
    let prefix = format!("manyfiles {}, built from ", env!("CARGO_PKG_VERSION"));
    let from = line.strip_prefix(&prefix).unwrap_or_else(|| panic!("{line}"));
    // As build.rs decides: a .git here and git able to read it (not, e.g., refused as
    // "dubious ownership").
    let head = std::process::Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let head = match head {
        Some(h) if std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".git").exists() => h,
        _ => {
            assert_eq!(from, "not from git", "{line}");
            return;
        }
    };
    // Built from sources that differ from HEAD: the version says so (build.rs reruns on a
    // source change); the sources are as they were when cargo built the binary just now.
    let dirty = std::process::Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "status", "--porcelain", "--"])
        .args(["src", "build.rs", "Cargo.toml", "Cargo.lock", "assets"])
        .output()
        .is_ok_and(|o| !o.stdout.is_empty());
    let from = match from.strip_suffix(", with uncommitted changes") {
        Some(f) => {
            assert!(dirty, "{line}: says uncommitted changes, git status shows none");
            f
        }
        None => {
            assert!(!dirty, "{line}: git status shows uncommitted changes, the version does not say so");
            from
        }
    };
    let (commit, date) =
        from.strip_prefix("commit ").and_then(|r| r.split_once(' ')).unwrap_or_else(|| panic!("{line}"));
    assert_eq!(commit, head, "--version names the commit checked out (build.rs reruns when HEAD moves)");
    let d = date.trim_matches(|c| c == '(' || c == ')');
    assert!(d.len() == 10 && d.chars().filter(|c| *c == '-').count() == 2, "date {d}");
}

/// The bash completion script loads in bash and completes a subcommand and a flag.
#[test]
fn bash_completion_completes_commands() {
    let r = run(["completions", "bash"]);
    r.ok();
    if std::process::Command::new("bash").arg("--version").output().is_err() {
        println!("skipped the bash check: no bash here");
        return;
    }
    let script = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(script.path(), &r.stdout).unwrap();
    // As bash calls a completion function: $1 the command, $2 the word being completed, $3 the one before.
    let complete = |words: &str, cword: usize| {
        let code = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{words}'; COMP_POINT=${{#COMP_LINE}}; \
             _manyfiles manyfiles \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.path().display()
        );
        let o = std::process::Command::new("bash").arg("-c").arg(&code).output().unwrap();
        assert!(o.status.success(), "bash: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).lines().map(String::from).collect::<Vec<_>>()
    };
    assert_eq!(complete("manyfiles la", 1), vec!["ladder"], "subcommand");
    let c = complete("manyfiles co", 1);
    assert!(
        c.contains(&"copy".to_string()) && c.contains(&"compare".to_string()) && c.contains(&"completions".to_string()),
        "{c:?}"
    );
    assert!(complete("manyfiles gen --see", 2).contains(&"--seed".to_string()), "a flag of gen");
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let r = run(["completions", shell]);
        r.ok();
        assert!(r.stdout.contains("ladder") && r.stdout.contains("seed"), "{shell} script names commands and flags");
    }
    assert_bad_input(&run(["completions", "tcsh"]), "tcsh", "unknown shell");
}

/// `man DIR`: one page per command; each renders with `man -l` (when man is installed).
#[test]
fn man_pages_render() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(["man", dir.path().to_str().unwrap()]);
    r.ok();
    let mut pages: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    pages.sort();
    let commands = "ladder ops gen bigfile clusters dirsize mdtest run scan cleanup mount umount copy sync rm report compare predict plan pack completions man";
    let mut want: Vec<String> = commands.split(' ').map(|c| format!("manyfiles-{c}.1")).collect();
    want.push("manyfiles.1".into());
    want.sort();
    assert_eq!(pages, want, "one page per command plus manyfiles.1");
    // A missing DIR is made (parents too); a file where DIR should be is bad input.
    let made = dir.path().join("new/man1");
    run(["man", made.to_str().unwrap()]).ok();
    assert_eq!(std::fs::read_dir(&made).unwrap().count(), pages.len(), "man made its missing DIR");
    let file = dir.path().join("new/plain");
    std::fs::write(&file, "x").unwrap();
    assert_bad_input(&run(["man", file.to_str().unwrap()]), "DIR", "man into a regular file");
    // Every page has the sections a man page is read for.
    for p in &pages {
        let text = std::fs::read_to_string(dir.path().join(p)).unwrap();
        for sec in [".SH EXAMPLES", ".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH FILES", ".SH \"SEE ALSO\""] {
            assert!(text.contains(sec), "{p} lacks {sec}");
        }
        assert!(text.contains("MANYFILES_HELPER_TIMEOUT") && text.contains("/run/manyfiles"), "{p}");
    }
    if std::process::Command::new("man").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "man is missing in CI (.ci/run installs man-db)");
        println!("skipped rendering: `man` is not installed (apt-get install man-db)");
        return;
    }
    for page in ["manyfiles.1", "manyfiles-gen.1"] {
        let o = std::process::Command::new("man")
            .arg("-l")
            .arg(dir.path().join(page))
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        assert!(o.status.success(), "man -l {page}: {}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("NAME") && text.contains("SYNOPSIS"), "{page} rendered:\n{text}");
        for sec in ["EXAMPLES", "EXIT STATUS", "ENVIRONMENT", "FILES", "SEE ALSO"] {
            assert!(text.lines().any(|l| l.trim() == sec), "{page} rendered without {sec}:\n{text}");
        }
        if page == "manyfiles-gen.1" {
            assert!(text.contains("--seed"), "gen's page lists its flags:\n{text}");
            // Its own example (README's), and not ladder's.
            assert!(text.contains("manyfiles gen data --files 100000"), "{text}");
            assert!(!text.contains("manyfiles ladder --fs"), "{text}");
        }
    }
}

fn help_of(sub: &str) -> String {
    let r = run([sub, "--help"]);
    r.ok();
    r.stdout
}

fn assert_mentions(help: &str, sub: &str, flags: &[&str]) {
    for f in flags {
        assert!(help.contains(f), "`{sub} --help` must mention {f}:\n{help}");
    }
}

#[test]
fn ladder_help_mentions_its_flags() {
    let h = help_of("ladder");
    assert_mentions(
        &h,
        "ladder",
        &[
            "--total",
            "--from",
            "--to",
            "--step",
            "--ops",
            "--runs",
            "--warmup",
            "--threads",
            "--portion",
            "--target",
            "--json",
            "--keep",
            "--quiet",
            "--flat",
            "--files-per-dir",
            "--fanout",
            "--depth",
            "--name-len",
            "--content",
            "--seed",
            "--block-size",
            "--fsync",
            "--direct",
        ],
    );
    assert!(h.contains("64MiB"), "default --total shown:\n{h}");
    assert!(h.contains("65536"), "default --to shown:\n{h}");
}

#[test]
fn ops_help_mentions_its_flags() {
    let h = help_of("ops");
    assert_mentions(
        &h,
        "ops",
        &["--files", "--size", "--ops", "--runs", "--target", "--json", "--portion", "--flat", "--content", "--fsync"],
    );
    assert_mentions(&h, "ops", &["create", "stat", "list", "read", "delete", "uniform:", "lognormal:"]);
}

#[test]
fn gen_help_mentions_its_flags() {
    let h = help_of("gen");
    assert_mentions(
        &h,
        "gen",
        &[
            "DIR",
            "--files",
            "--size",
            "--threads",
            "--quiet",
            "--flat",
            "--files-per-dir",
            "--fanout",
            "--name-len",
            "--content",
            "--seed",
        ],
    );
    // gen times nothing: no run flags.
    for f in ["--runs", "--json", "--target"] {
        assert!(!h.contains(f), "`gen --help` must not offer {f}:\n{h}");
    }
}

/// The `[default: N]` shown for `flag` in `help` (help lines may wrap anywhere).
fn default_of(help: &str, flag: &str) -> String {
    let at = help.find(&format!("{flag} <")).unwrap_or_else(|| panic!("{flag} not in help:\n{help}"));
    let rest = &help[at + flag.len()..];
    // The entry ends where the next option's line starts.
    let mut lines = rest.lines();
    let mut entry = lines.next().unwrap_or("").to_string();
    for l in lines.take_while(|l| !l.trim_start().starts_with('-')) {
        entry.push(' ');
        entry.push_str(l);
    }
    let entry: String = entry.split_whitespace().collect::<Vec<_>>().join(" ");
    let d = entry.find("[default: ").unwrap_or_else(|| panic!("no default for {flag}: {entry}"));
    let v = &entry[d + "[default: ".len()..];
    v[..v.find(']').unwrap()].to_string()
}

#[test]
fn documented_defaults() {
    let ladder = help_of("ladder");
    assert_eq!(default_of(&ladder, "--total"), "64MiB");
    assert_eq!(default_of(&ladder, "--from"), "1");
    assert_eq!(default_of(&ladder, "--to"), "65536");
    assert_eq!(default_of(&ladder, "--step"), "4");
    // Without --runs, runs are adaptive: the defaults of the precision target and budget.
    let flat: String = ladder.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("(default: adaptive runs to --precision)"), "{flat}");
    assert_eq!(default_of(&ladder, "--precision"), "5%");
    assert_eq!(default_of(&ladder, "--min-runs"), "6");
    assert_eq!(default_of(&ladder, "--max-runs"), "30");
    assert_eq!(default_of(&ladder, "--max-time"), "3m");
    assert_eq!(default_of(&ladder, "--portion"), "10000");
    assert_eq!(default_of(&ladder, "--files-per-dir"), "1000");
    assert_eq!(default_of(&ladder, "--fanout"), "16");
    assert_eq!(default_of(&ladder, "--name-len"), "16");
    assert_eq!(default_of(&ladder, "--content"), "random");
    assert_eq!(default_of(&ladder, "--block-size"), "1MiB");
    assert_eq!(default_of(&ladder, "--fsync"), "none");
    let ops = help_of("ops");
    assert_eq!(default_of(&ops, "--files"), "10000");
    assert_eq!(default_of(&ops, "--size"), "4k");
    assert_eq!(default_of(&ops, "--ops"), "create,stat,list,read,delete");
    let genh = help_of("gen");
    assert_eq!(default_of(&genh, "--size"), "4k");
    // gen and ops share one --files/--size group (README documents 10,000).
    assert_eq!(default_of(&genh, "--files"), "10000", "gen's default --files");
}
