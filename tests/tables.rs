//! Tables fit 100 columns by default (units in the headers, ±% intervals, files/s
//! beside the time of rungs with many files); `--wide` prints the full form.

mod common;

use common::*;

fn table_lines(out: &str) -> Vec<&str> {
    out.lines().filter(|l| l.starts_with(['│', '┌', '└', '╞'])).collect()
}

#[test]
fn ladder_and_ops_tables_fit_100_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().display().to_string();
    let r = run(words(&format!("ladder --target {t} --runs 2 --total 1MiB --to 4096 --quiet")));
    r.ok();
    let lines = table_lines(&r.stdout);
    assert!(lines.len() > 10, "{}", r.stdout);
    for l in &lines {
        assert!(l.chars().count() <= 100, "{} columns: {l}", l.chars().count());
    }
    // Units in the header; files/s beside the time from 1,000 files on, blank below.
    let header = lines.iter().find(|l| l.contains("files/s")).expect("a files/s column");
    assert!(header.contains("create (") && header.contains("read ("), "{header}");
    let row = |files: &str| {
        lines.iter().find(|l| l.trim_start_matches('│').split_whitespace().next() == Some(files)).unwrap()
    };
    assert!(row("4096").split_whitespace().any(|w| w.ends_with('k') || w.ends_with('M')), "{}", row("4096"));
    assert!(!row("1").contains('k'), "no rate for one file: {}", row("1"));
    // --wide: the intervals in full.
    let w = run(words(&format!("ladder --target {t} --runs 2 --total 1MiB --to 64 --quiet --wide")));
    w.ok();
    assert!(w.stdout.contains("(median [95% CI])"), "{}", w.stdout);
    // ops: one tree, its detail in 100 columns.
    let o = run(words(&format!("ops --target {t} --runs 2 --files 2000 --quiet")));
    o.ok();
    for l in table_lines(&o.stdout) {
        assert!(l.chars().count() <= 100, "{} columns: {l}", l.chars().count());
    }
    assert!(o.stdout.contains("files/s"), "{}", o.stdout);
}
