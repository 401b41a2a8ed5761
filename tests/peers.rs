//! Issue 42, item 5: a peer's results beside manyfiles'. fio (Debian's) runs here with
//! jobs that measure what manyfiles' ops measure (filecreate, filestat, reads of whole
//! files) and one that does not (a write into files it laid out); `manyfiles report`
//! reads its JSON beside a ladder's result file: fio's jobs are rows and chart lines of
//! their own target, with fio's own times; the write job is named as not read, with why.

mod common;

use common::run;
use std::process::Command;

fn fio_ready() -> bool {
    if Command::new("fio").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "CI installs fio");
    eprintln!("skipped: fio not found (Debian package fio)");
    false
}

const JOBS: &str = "[global]
filesize=4k
bs=4k
openfiles=1

[create100]
ioengine=filecreate
rw=write
nrfiles=100
filename_format=c100.$filenum
stonewall

[create400]
ioengine=filecreate
rw=write
nrfiles=400
filename_format=c400.$filenum
stonewall

[stat400]
ioengine=filestat
rw=read
nrfiles=400
filename_format=c400.$filenum
stonewall

[read64]
ioengine=psync
rw=read
nrfiles=64
size=256k
filename_format=r64.$filenum
stonewall

[write4]
ioengine=psync
rw=write
nrfiles=4
size=16k
filename_format=w4.$filenum
stonewall
";

#[test]
fn fio_results_are_drawn_beside_a_ladder() {
    if !fio_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fio-dir");
    std::fs::create_dir(&dir).unwrap();
    let jobs = JOBS.replacen("[global]\n", &format!("[global]\ndirectory={}\n", dir.display()), 1);
    std::fs::write(tmp.path().join("jobs.fio"), jobs).unwrap();
    let fio_json = tmp.path().join("fio.json");
    let o = Command::new("fio")
        .args(["--output-format=json", "--output"])
        .arg(&fio_json)
        .arg(tmp.path().join("jobs.fio"))
        .output()
        .unwrap();
    assert!(o.status.success(), "fio: {}", String::from_utf8_lossy(&o.stderr));
    let fio: serde_json::Value = serde_json::from_slice(&std::fs::read(&fio_json).unwrap()).unwrap();
    let runtime_ms = |job: &str, side: &str| {
        fio["jobs"].as_array().unwrap().iter().find(|j| j["jobname"] == job).unwrap()[side]["runtime"].as_f64().unwrap()
    };

    let ladder = tmp.path().join("ladder.json");
    let target = tmp.path().join("ladder-target");
    std::fs::create_dir(&target).unwrap();
    run([
        "ladder",
        "--target",
        target.to_str().unwrap(),
        "--total",
        "64k",
        "--to",
        "64",
        "--runs",
        "2",
        "--ops",
        "create,stat,read",
        "--quiet",
        "--json",
        ladder.to_str().unwrap(),
    ])
    .ok();

    let (md, html) = (tmp.path().join("r.md"), tmp.path().join("r.html"));
    let r = run([
        "report",
        ladder.to_str().unwrap(),
        fio_json.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    r.ok();
    let md = std::fs::read_to_string(&md).unwrap();
    let label = format!("fio on {} (fio.json)", dir.display());
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with(&format!("| {label} |"))).collect();
    // create at 100 and 400 files, stat at 400, read at 64 (each file read whole once).
    let has = |op: &str, n: &str| rows.iter().any(|l| l.contains(&format!("| {op} | n={n} ")));
    assert!(has("create", "100") && has("create", "400") && has("stat", "400") && has("read", "64"), "{md}");
    assert_eq!(rows.len(), 4, "four of fio's five jobs are manyfiles ops: {rows:#?}");
    // fio's own time, as fio gives it (whole ms).
    let create400 = rows.iter().find(|l| l.contains("| create | n=400 ")).unwrap();
    let ms = runtime_ms("create400", "write");
    let shown = if ms >= 1000.0 { format!("{} s", crate_sig3(ms / 1e3)) } else { format!("{} ms", crate_sig3(ms)) };
    assert!(create400.contains(&shown), "fio's {ms} ms as {shown}: {create400}");
    // The write job is named, with why.
    assert!(md.contains("fio job write4 not read: rw=write"), "{md}");

    // The HTML draws fio's line in the create chart beside the ladder's.
    let html = std::fs::read_to_string(&html).unwrap();
    let svgs: Vec<&str> = html.split("<svg").skip(1).collect();
    assert!(svgs.iter().any(|s| s.contains(&label) || html.contains(&label)), "fio's target in the page");
    assert!(html.contains("fio 3") || html.contains("fio's output"), "the page says fio measured it");

    // Neither a manyfiles result nor a peer's output: still refused, exit 2.
    let junk = tmp.path().join("junk.json");
    std::fs::write(&junk, b"{\"hello\": 1}").unwrap();
    let r = run(["report", junk.to_str().unwrap(), "--markdown", tmp.path().join("j.md").to_str().unwrap()]);
    r.expect_code(2);
    assert!(r.stderr.contains("is not a manyfiles result"), "{}", r.stderr);
}

/// Three significant figures as the tables print them (manyfiles::units::sig3).
fn crate_sig3(x: f64) -> String {
    manyfiles::units::sig3(x)
}
