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

#[test]
fn version_prints_name_and_version() {
    let r = run(["--version"]);
    r.ok();
    assert_eq!(r.stdout.trim(), format!("manyfiles {}", env!("CARGO_PKG_VERSION")));
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
    // --runs has a per-command default (bigfile 10), stated in its help text.
    let flat: String = ladder.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("(default 3; bigfile 10)"), "{flat}");
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
