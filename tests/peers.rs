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

/// What a recorded mdtest output says of itself, read here apart from the parser under
/// test: its tasks, the job's files, `-w` and `-e`, and the mean rate of each row.
struct MdtestOutput {
    tasks: u64,
    files: u64,
    write: u64,
    read: u64,
    rates: Vec<(String, f64)>,
}

fn mdtest_output(text: &str) -> MdtestOutput {
    let launch = text.lines().find(|l| l.contains(" was launched with ")).expect("launch line");
    let tasks = launch.split(" was launched with ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    let files =
        text.lines().find_map(|l| l.split_once(" tasks, ")).unwrap().1.split(' ').next().unwrap().parse().unwrap();
    let args: Vec<String> = text
        .lines()
        .find_map(|l| l.strip_prefix("Command line used: "))
        .unwrap()
        .split_whitespace()
        .map(|w| w.trim_matches('\'').to_string())
        .collect();
    let arg = |flag: &str| args.iter().position(|a| a == flag).map_or(0, |i| args[i + 1].parse().unwrap());
    let table = text.split("SUMMARY rate").nth(1).unwrap();
    let rates = table
        .lines()
        .skip(3)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().filter(|w| *w != ":").collect();
            let n = w.len();
            (w[..n - 4].join(" "), w[n - 2].parse::<f64>().unwrap())
        })
        .collect();
    MdtestOutput { tasks, files, write: arg("-w"), read: arg("-e"), rates }
}

/// mdtest's text output, recorded from mdtest 4.1 built from hpc/ior (the commands that
/// made each file are in tests/data/peers/README.md): `report` reads its File creation,
/// stat, read and removal as create, stat, read and delete of the job's files in the time
/// its mean rate gives, its tasks as ranks, and names Tree creation and removal as not
/// read; one HTML page draws it beside a `manyfiles mdtest` run.
#[test]
fn mdtest_outputs_are_read_as_their_phases() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/peers");
    let tmp = tempfile::tempdir().unwrap();
    let mut read = 0;
    for entry in std::fs::read_dir(&data).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("mdtest-") && name.ends_with(".txt")) {
            continue;
        }
        read += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let want = mdtest_output(&text);
        let json = tmp.path().join(format!("{name}.json"));
        run(["report", path.to_str().unwrap(), "--json", json.to_str().unwrap()]).ok();
        let rs: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(rs["provenance"]["tool"], "mdtest", "{name}");
        assert_eq!(rs["provenance"]["ranks"].as_u64(), Some(want.tasks), "{name}");
        let ms = rs["measurements"].as_array().unwrap();
        let mut ops = Vec::new();
        for (row, op, bytes) in [
            ("File creation", "create", want.write),
            ("File stat", "stat", 0),
            ("File read", "read", want.read),
            ("File removal", "delete", 0),
        ] {
            let Some((_, rate)) = want.rates.iter().find(|(r, rate)| r == row && *rate > 0.0) else { continue };
            let m = ms.iter().find(|m| m["op"] == op).unwrap_or_else(|| panic!("{name}: no {op}"));
            assert_eq!(m["files"].as_u64(), Some(want.files), "{name} {op}");
            assert_eq!(m["bytes"].as_u64(), Some(want.files * bytes), "{name} {op}");
            let secs = m["elapsed_s"].as_f64().unwrap();
            assert!((want.files as f64 / secs / rate - 1.0).abs() < 1e-9, "{name} {op}: mdtest's rate {rate}");
            ops.push(op);
        }
        assert!(ops.contains(&"create") && ops.contains(&"delete"), "{name}: {ops:?}");
        assert_eq!(ms.len(), ops.len(), "{name}: one measurement per mapped phase");
        let notes = rs["warnings"].to_string();
        assert!(notes.contains("mdtest's Tree creation not read"), "{name}: {notes}");
    }
    assert!(read >= 2, "recorded mdtest outputs in {}", data.display());

    // Beside a manyfiles mdtest run, in one HTML page.
    let target = tmp.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let ours = tmp.path().join("ours.json");
    let t = target.to_str().unwrap();
    run(["mdtest", "--easy", "--files", "200", "--runs", "1", "--target", t, "--json", ours.to_str().unwrap()]).ok();
    let theirs = data.join("mdtest-easy-np1.txt");
    let html = tmp.path().join("r.html");
    run(["report", ours.to_str().unwrap(), theirs.to_str().unwrap(), "--html", html.to_str().unwrap()]).ok();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("mdtest on ") && page.contains("(mdtest-easy-np1.txt)"), "mdtest's target in the page");
}

/// A value of elbencho's JSON (it writes every value as a string: "400").
fn elb(v: &serde_json::Value, path: &[&str]) -> Option<u64> {
    let f = path.iter().try_fold(v, |v, k| v.get(k))?;
    f.as_u64().or_else(|| f.as_str()?.parse().ok())
}

/// The recorded elbencho phases (tests/data/peers/elbencho-dir.json: one JSON object a
/// line), read here apart from the reader under test.
fn elbencho_phases() -> Vec<serde_json::Value> {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/peers/elbencho-dir.json");
    let text = std::fs::read_to_string(data).unwrap();
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// elbencho's `--jsonfile` and `--csvfile`, recorded from elbencho 3.1-10 (the commands
/// in tests/data/peers/README.md): `report` reads WRITE, READ, STAT and RMFILES as create,
/// read, stat and delete of the phase's entries in entries ÷ entries/s (within elbencho's
/// whole milliseconds), with hosts × threads as threads and each iteration (`-i 3`) a run
/// of the same cell; MKDIRS, RMDIRS, SYNC and DROPCACHE are named as not read. The CSV of
/// the same runs reads the same, and `compare` reads both.
#[test]
fn elbencho_outputs_are_read_as_their_phases() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/peers");
    let tmp = tempfile::tempdir().unwrap();
    let phases = elbencho_phases();
    let op_of = |p: &serde_json::Value| match p["phase_type"].as_str().unwrap() {
        "WRITE" => Some("create"),
        "READ" => Some("read"),
        "STAT" => Some("stat"),
        "RMFILES" => Some("delete"),
        _ => None,
    };
    let mut sets = Vec::new();
    for name in ["elbencho-dir.json", "elbencho-dir.csv"] {
        let out = tmp.path().join(format!("{name}.result.json"));
        run(["report", data.join(name).to_str().unwrap(), "--json", out.to_str().unwrap()]).ok();
        let rs: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        assert_eq!(rs["provenance"]["tool"], "elbencho", "{name}");
        assert_eq!(rs["provenance"]["version"], phases[0]["config"]["version"], "{name}");
        let ms = rs["measurements"].as_array().unwrap().clone();
        let mapped: Vec<(&str, &serde_json::Value)> = phases.iter().filter_map(|p| Some((op_of(p)?, p))).collect();
        assert_eq!(ms.len(), mapped.len(), "{name}: one measurement per WRITE, READ, STAT, RMFILES");
        for ((op, p), m) in mapped.iter().zip(&ms) {
            let entries = elb(p, &["last_done", "entries"]).unwrap();
            let rate = elb(p, &["last_done", "entries/s"]).unwrap();
            let whole_ms = elb(p, &["last_done", "elapsed_time_ms"]).unwrap() as f64;
            assert_eq!(m["op"], *op, "{name}");
            assert_eq!(m["files"].as_u64(), Some(entries), "{name} {op}");
            let secs = m["elapsed_s"].as_f64().unwrap();
            assert!((secs * rate as f64 / entries as f64 - 1.0).abs() < 1e-12, "{name} {op}: {secs} s at {rate}/s");
            assert!(secs * 1e3 >= whole_ms && secs * 1e3 < whole_ms + 1.0, "{name} {op}: {secs} s in {whole_ms} ms");
            let bytes = if matches!(*op, "create" | "read") { elb(p, &["last_done", "bytes"]).unwrap() } else { 0 };
            assert_eq!(m["bytes"].as_u64(), Some(bytes), "{name} {op}");
            let threads = elb(p, &["config", "threads"]).unwrap() * elb(p, &["config", "hosts"]).unwrap();
            assert_eq!(m["threads"].as_u64(), Some(threads), "{name} {op}");
            assert_eq!(m["tree_bytes"].as_u64(), Some(entries * elb(p, &["config", "file_size"]).unwrap()));
        }
        // Each op of each tree was run three times (-i 3): runs 1, 2 and 3 of one cell.
        for (op, _) in &mapped {
            let runs: Vec<u64> = ms.iter().filter(|m| m["op"] == *op).map(|m| m["run"].as_u64().unwrap()).collect();
            assert!(runs.contains(&3) && !runs.contains(&4), "{name} {op}: runs {runs:?}");
        }
        let notes = rs["warnings"].to_string();
        for phase in ["MKDIRS", "RMDIRS", "SYNC", "DROPCACHE"] {
            assert!(notes.contains(&format!("elbencho's {phase} not read: ")), "{name}: {phase} named: {notes}");
        }
        let label = rs["targets"][0]["label"].as_str().unwrap().to_string();
        assert_eq!(label, format!("elbencho on /mnt/elb-ram/elbencho ({name})"));
        sets.push(ms);
    }
    // The CSV's rows are the JSON's figures: the same measurements.
    let key = |m: &serde_json::Value| {
        (m["op"].to_string(), m["files"].as_u64(), m["bytes"].as_u64(), m["elapsed_s"].as_f64(), m["run"].as_u64())
    };
    assert_eq!(sets[0].iter().map(key).collect::<Vec<_>>(), sets[1].iter().map(key).collect::<Vec<_>>());

    // compare reads peers' files as report does: the JSON against the CSV, cell by cell.
    let (j, c) = (data.join("elbencho-dir.json"), data.join("elbencho-dir.csv"));
    let r = run(["compare", j.to_str().unwrap(), c.to_str().unwrap()]);
    r.ok();
    let cells = sets[0]
        .iter()
        .map(|m| (m["op"].to_string(), m["tree_key"].to_string()))
        .collect::<std::collections::BTreeSet<_>>();
    let compared = r.stdout.lines().filter(|l| l.contains(" 1.00 [")).count();
    assert_eq!(compared, cells.len(), "every cell compared, at a ratio of 1.00:\n{}", r.stdout);

    // Its --resfile is refused, pointing at the two it reads.
    let r = run([
        "report",
        data.join("elbencho-dir.txt").to_str().unwrap(),
        "--json",
        tmp.path().join("t.json").to_str().unwrap(),
    ]);
    r.expect_code(2);
    assert!(r.stderr.contains("--jsonfile") && r.stderr.contains("--csvfile"), "{}", r.stderr);
}

/// The `<section>` of chart `id` in a report page (or Chromium's DOM of it).
fn chart_section<'a>(page: &'a str, id: &str) -> &'a str {
    let start = page.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no chart {id}"));
    let rest = &page[start..];
    &rest[..rest.find("</section>").unwrap_or(rest.len())]
}

/// Chromium's serialized DOM of `html` (None: no Chromium here, which CI does not accept).
fn chromium_dom(html: &std::path::Path) -> Option<String> {
    let browser =
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].into_iter().find(|p| std::path::Path::new(p).exists());
    let Some(browser) = browser else {
        assert!(std::env::var("CI").is_err(), "CI must install chromium (.ci/run)");
        eprintln!("skipped: the headless Chromium part needs Debian's chromium");
        return None;
    };
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"])
        .args(["--disable-component-update", "--disable-sync", "--dump-dom"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium --dump-dom: {}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Issue 42's done-when: fio's (run here), elbencho's and mdtest's (recorded) outputs
/// beside a manyfiles ladder in one HTML report: each tool's runs are lines of their own
/// in the create chart, under their own labels beside the ladder's target, in the page
/// and in Chromium's DOM of it.
#[test]
fn one_page_draws_every_peer_beside_a_ladder() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/peers");
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("ladder-target");
    std::fs::create_dir(&target).unwrap();
    let ladder = tmp.path().join("ladder.json");
    let l = ladder.to_str().unwrap();
    let t = target.to_str().unwrap();
    run(["ladder", "--target", t, "--total", "64k", "--to", "64", "--runs", "2", "--quiet", "--json", l]).ok();
    let ours: serde_json::Value = serde_json::from_slice(&std::fs::read(&ladder).unwrap()).unwrap();
    let ours = ours["targets"][0]["label"].as_str().unwrap().to_string();

    let mut files = vec![ladder.clone(), data.join("elbencho-dir.json"), data.join("mdtest-hard-np1.txt")];
    let mut labels = vec![
        ours,
        "elbencho on /mnt/elb-ram/elbencho (elbencho-dir.json)".to_string(),
        "mdtest on /mnt/mdtest-ram/mdtest-hard (mdtest-hard-np1.txt)".to_string(),
    ];
    if fio_ready() {
        let dir = tmp.path().join("fio-dir");
        std::fs::create_dir(&dir).unwrap();
        let jobs = format!(
            "[global]\ndirectory={}\nfilesize=4k\nopenfiles=1\n\n[create200]\nioengine=filecreate\nrw=write\n\
             nrfiles=200\nfilename_format=c.$filenum\nstonewall\n",
            dir.display()
        );
        std::fs::write(tmp.path().join("jobs.fio"), jobs).unwrap();
        let fio_json = tmp.path().join("fio.json");
        let o = Command::new("fio")
            .args(["--output-format=json", "--output"])
            .arg(&fio_json)
            .arg(tmp.path().join("jobs.fio"))
            .output()
            .unwrap();
        assert!(o.status.success(), "fio: {}", String::from_utf8_lossy(&o.stderr));
        files.push(fio_json);
        labels.push(format!("fio on {} (fio.json)", dir.display()));
    }

    let html = tmp.path().join("r.html");
    let mut args: Vec<String> = vec!["report".into()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(["--html".into(), html.display().to_string()]);
    run(&args).ok();
    let page = std::fs::read_to_string(&html).unwrap();
    let check = |page: &str, what: &str| {
        let create = chart_section(page, "time-vs-files-create");
        for label in &labels {
            assert!(create.contains(&format!("data-target-label=\"{label}\"")), "{what}: {label} in the create chart");
        }
        // Each line of its own: one legend entry per label.
        assert_eq!(create.matches("data-target-label=").count(), labels.len(), "{what}: {create}");
    };
    check(&page, "the page");
    if let Some(dom) = chromium_dom(&html) {
        check(&dom, "Chromium's DOM");
    }
}
