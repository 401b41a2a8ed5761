//! `manyfiles compare A B`: verdicts on synthetic result files with a known difference,
//! the ratio and its CI, `--fail-if-slower` as a gate (exit 1), and bad input.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A real result file (one small ops run), used as the template for synthetic ones.
fn template(dir: &Path) -> Value {
    let json = dir.join("t.json");
    let a = format!(
        "ops --files 200 --runs 5 --ops create,read --target {} --json {} --quiet",
        dir.display(),
        json.display()
    );
    run(words(&a)).ok();
    load_json(&json)
}

/// The template with every elapsed time replaced: op -> per-run seconds (derived
/// figures are recomputed by the reader from the raw measurements).
fn synthetic(t: &Value, dir: &Path, name: &str, times: &[(&str, [f64; 5])]) -> PathBuf {
    let mut v = t.clone();
    for m in v["measurements"].as_array_mut().unwrap() {
        let op = m["op"].as_str().unwrap().to_string();
        let run = m["run"].as_u64().unwrap() as usize;
        let (_, xs) = times.iter().find(|(o, _)| *o == op).unwrap();
        m["elapsed_s"] = Value::from(xs[run - 1]);
    }
    // Summaries as the experiment would have written them.
    let mut rs: manyfiles::results::ResultSet = serde_json::from_value(v).unwrap();
    rs.derive();
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec(&rs).unwrap()).unwrap();
    p
}

fn row<'a>(out: &'a str, op: &str) -> &'a str {
    out.lines().find(|l| l.starts_with(&format!("│ {op} "))).unwrap_or_else(|| panic!("no {op} row in\n{out}"))
}

#[test]
fn verdicts_ratio_and_gate() {
    let tmp = tempfile::tempdir().unwrap();
    let t = template(tmp.path());
    let base = [1.00, 1.02, 0.98, 1.01, 0.99];
    let a = synthetic(&t, tmp.path(), "a.json", &[("create", base), ("read", base)]);
    // create 30% slower, read unchanged within noise.
    let b = synthetic(
        &t,
        tmp.path(),
        "b.json",
        &[("create", base.map(|x| x * 1.3)), ("read", [1.01, 0.99, 1.00, 1.02, 0.98])],
    );
    let r = run(["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    r.ok();
    let create = row(&r.stdout, "create");
    assert!(create.contains("slower") && create.contains("1.30"), "{create}");
    let read = row(&r.stdout, "read");
    assert!(read.contains("no sig. diff."), "{read}");
    // The table fits 100 columns; --wide has the verdict in full.
    assert!(r.stdout.lines().all(|l| l.chars().count() <= 100 || !l.starts_with('│')), "{}", r.stdout);
    let w = run(["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--wide"]);
    assert!(row(&w.stdout, "read").contains("no significant difference"), "{}", w.stdout);
    // The other way round B is faster.
    let r = run(["compare", b.to_str().unwrap(), a.to_str().unwrap()]);
    assert!(row(&r.stdout, "create").contains("faster"), "{}", r.stdout);

    // Gate: 30% slower fails a 10% threshold (exit 1), passes a 50% one.
    let r = run(["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--fail-if-slower", "10"]);
    r.expect_code(1);
    assert!(r.stderr.contains("slower by more than 10%"), "{}", r.stderr);
    assert!(row(&r.stdout, "create").contains("slower"), "the table is still printed");
    run(["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--fail-if-slower", "50"]).ok();
    // Faster never fails the gate.
    run(["compare", b.to_str().unwrap(), a.to_str().unwrap(), "--fail-if-slower", "0"]).ok();
}

#[test]
fn compare_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let t = template(tmp.path());
    let a = synthetic(&t, tmp.path(), "a.json", &[("create", [1.0; 5]), ("read", [1.0; 5])]);
    let missing = tmp.path().join("missing.json");
    assert_bad_input(&run(["compare", a.to_str().unwrap(), missing.to_str().unwrap()]), "B.json", "missing B");
    assert_bad_input(&run(["compare", missing.to_str().unwrap(), a.to_str().unwrap()]), "A.json", "missing A");
    let r = run(["compare", a.to_str().unwrap(), a.to_str().unwrap(), "--fail-if-slower=-5"]);
    assert_bad_input(&r, "--fail-if-slower", "negative threshold");
    // Nothing in common: a different op only.
    let mut v = t.clone();
    for m in v["measurements"].as_array_mut().unwrap() {
        m["tree_key"] = Value::from("other tree");
    }
    let mut rs: manyfiles::results::ResultSet = serde_json::from_value(v).unwrap();
    rs.derive();
    let other = tmp.path().join("other.json");
    std::fs::write(&other, serde_json::to_vec(&rs).unwrap()).unwrap();
    assert_bad_input(&run(["compare", a.to_str().unwrap(), other.to_str().unwrap()]), "B.json", "nothing shared");
}

#[test]
fn equivalence_and_the_gate_at_the_interval_boundary() {
    let tmp = tempfile::tempdir().unwrap();
    let t = template(tmp.path());
    let base = [1.00, 1.02, 0.98, 1.01, 0.99];
    let a = synthetic(&t, tmp.path(), "a.json", &[("create", base), ("read", base)]);
    // create 12% slower with scatter: its interval reaches below 1.10; read the same.
    let b = synthetic(
        &t,
        tmp.path(),
        "b.json",
        &[("create", [1.02, 1.22, 1.05, 1.20, 1.11]), ("read", [1.01, 0.99, 1.00, 1.02, 0.98])],
    );
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let r = run(["compare", a, b, "--equivalence", "5"]);
    r.ok();
    assert!(row(&r.stdout, "read").contains("same ±5%"), "{}", r.stdout);
    let wide = run(["compare", a, b, "--equivalence", "5", "--wide"]);
    assert!(row(&wide.stdout, "read").contains("same within the margin"), "{}", wide.stdout);
    assert!(row(&r.stdout, "create").contains("slower"), "{}", r.stdout);
    assert!(r.stdout.contains("per cell at the 95% level: 1 of 2 cells differ"), "{}", r.stdout);
    // The point estimate is 12% slower, but the gate looks at the interval's low end.
    let lo: f64 = {
        // "… │ 1.12 (1.03 … 1.21) │ …": the number before the ellipsis.
        let line = row(&wide.stdout, "create");
        let before = &line[..line.find(" … ").unwrap()];
        before.rsplit('(').next().unwrap().parse().unwrap()
    };
    assert!(lo > 1.0 && lo < 1.10, "low end {lo} in {}", r.stdout);
    run(["compare", a, b, "--fail-if-slower", "10"]).ok();
    let below = format!("{}", ((lo - 1.0) * 100.0 - 0.5).max(0.0));
    run(["compare", a, b, "--fail-if-slower", below.as_str()]).expect_code(1);
}
