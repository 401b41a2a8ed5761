//! Completion scripts loaded in their own shells (bash, zsh, fish): enumerated flags
//! complete their values (`--cache` → cold, warm, drop; not file names), `--fs` its
//! types, `--db` its schemes. A shell that is missing skips the test with a printed
//! reason, except in CI (`.ci/run` installs bash, zsh and fish).

mod common;

use common::*;

fn have(shell: &str) -> bool {
    let ok = std::process::Command::new(shell).arg("-c").arg("exit 0").output().is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var_os("CI").is_none(), "CI: {shell} is missing (.ci/run installs it)");
        println!("skipped: {shell} is not installed (apt-get install {shell})");
    }
    ok
}

fn script(shell: &str) -> tempfile::NamedTempFile {
    let r = run(["completions", shell]);
    r.ok();
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), &r.stdout).unwrap();
    f
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// (words typed, what the last word must complete to).
const CASES: &[(&str, &[&str])] = &[
    ("manyfiles ladder --cache ", &["cold", "drop", "warm"]),
    ("manyfiles ops --until ", &["durable", "returned"]),
    ("manyfiles ladder --order ", &["interleaved", "sequential"]),
    ("manyfiles ladder --fs ", &["btrfs", "exfat", "ext2", "ext3", "ext4", "ntfs", "tmpfs", "xfs"]),
    ("manyfiles pack --mount-with ", &["auto", "fuse", "kernel"]),
    ("manyfiles ops --fsync ", &["dir", "end", "file", "none"]),
    ("manyfiles scan /x --db ", &["postgres://", "sqlite:"]),
    ("manyfiles pack --cache ", &["cold", "drop", "warm"]),
];

#[test]
fn bash_completes_the_values_of_enumerated_flags() {
    if !have("bash") {
        return;
    }
    let s = script("bash");
    for (line, want) in CASES {
        let words: Vec<&str> = line.split_whitespace().collect();
        let cword = words.len(); // completing a new, empty word
        let code = format!(
            "source {}; COMP_WORDS=({} ''); COMP_CWORD={cword}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; \
             _manyfiles manyfiles '' \"${{COMP_WORDS[COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            s.path().display(),
            words.join(" ")
        );
        let o = std::process::Command::new("bash").arg("-c").arg(&code).output().unwrap();
        assert!(o.status.success(), "bash: {}", String::from_utf8_lossy(&o.stderr));
        let got = sorted(String::from_utf8_lossy(&o.stdout).lines().map(String::from).collect());
        assert_eq!(got, *want, "bash: {line}");
    }
}

#[test]
fn fish_loads_the_script_and_completes_values() {
    if !have("fish") {
        return;
    }
    let s = script("fish");
    for (line, want) in CASES {
        let code = format!("source {}; complete -C '{line}'", s.path().display());
        let o = std::process::Command::new("fish").arg("--no-config").arg("-c").arg(&code).output().unwrap();
        assert!(o.status.success() && o.stderr.is_empty(), "fish: {}", String::from_utf8_lossy(&o.stderr));
        // `complete -C` prints "candidate<TAB>description".
        let got = sorted(
            String::from_utf8_lossy(&o.stdout).lines().map(|l| l.split('\t').next().unwrap().to_string()).collect(),
        );
        assert_eq!(got, *want, "fish: {line}");
    }
    // Commands and flags still complete.
    let code = format!("source {}; complete -C 'manyfiles la'", s.path().display());
    let o = std::process::Command::new("fish").arg("--no-config").arg("-c").arg(&code).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).lines().any(|l| l.starts_with("ladder")));
}

#[test]
fn zsh_loads_the_script_and_it_names_the_values() {
    if !have("zsh") {
        return;
    }
    let s = script("zsh");
    // Loaded the way zsh loads completion functions: compinit, then the script defines
    // _manyfiles and registers it for manyfiles.
    let code = format!(
        "autoload -U compinit && compinit -u -D && source {} && whence -w _manyfiles && print -r -- ${{_comps[manyfiles]}}",
        s.path().display()
    );
    let o = std::process::Command::new("zsh").arg("-f").arg("-c").arg(&code).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "zsh: {}{}", out, String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("_manyfiles: function"), "{out}");
    assert!(out.lines().any(|l| l.trim() == "_manyfiles"), "registered for manyfiles: {out}");
    // The value lists zsh offers (its _arguments specs): `--cache` offers the modes,
    // not files.
    let text = std::fs::read_to_string(s.path()).unwrap();
    for want in ["(cold warm drop)", "(durable returned)", "(interleaved sequential)", "(sqlite\\: postgres\\://)"] {
        assert!(text.contains(want), "zsh script lacks {want}");
    }
}
