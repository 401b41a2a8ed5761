//! Scenario 11: output paths the tool does not own. A device node, a fifo, a socket or a
//! symlink given as `--json` is written through, never replaced; a directory is refused
//! before anything runs; `-` is standard output. Issue 38: an existing file manyfiles
//! did not write is not replaced by any output flag (exit 2) unless `--force`; run files
//! name no target or output outside their directory unless `run --allow-outside`; run
//! files and result files are bounded input.

mod reliability_common;

use reliability_common::*;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

fn ladder(target: &Path, json: &Path) -> Out {
    let (t, j) = (target.as_os_str(), json.as_os_str());
    run_bounded(
        &[
            "ladder".as_ref(),
            "--target".as_ref(),
            t,
            "--total".as_ref(),
            "64k".as_ref(),
            "--to".as_ref(),
            "16".as_ref(),
            "--runs".as_ref(),
            "2".as_ref(),
            "-q".as_ref(),
            "--json".as_ref(),
            j,
        ],
        LIMIT,
        None,
    )
}

fn is_result(text: &str) {
    let v: serde_json::Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("not one JSON document: {e}"));
    assert_eq!(v["schema"], 1);
    assert!(!v["measurements"].as_array().unwrap().is_empty());
}

#[test]
fn reliability_outputs_device_node_stays_a_device() {
    let Some(_g) = root_only("making a device node needs root") else { return };
    let t = tempfile::tempdir().unwrap();
    let node = t.path().join("null");
    // A private /dev/null (char 1:3): the real one is never put at risk by a test.
    let c = std::ffi::CString::new(node.to_str().unwrap()).unwrap();
    // SAFETY: mknod with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) }, 0);
    let out = ladder(t.path(), &node);
    assert_eq!(out.code, Some(0), "{}", out.show());
    let md = std::fs::symlink_metadata(&node).unwrap();
    assert!(md.file_type().is_char_device(), "the device node was replaced: {md:?}");
    assert_eq!(md.len(), 0);
    let left: Vec<_> = std::fs::read_dir(t.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("null")], "no temporary file beside it");
}

#[test]
fn reliability_outputs_fifo_gets_one_document() {
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("results.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        // The reader keeps the fifo open until the writer closes it: one read to EOF.
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    std::thread::sleep(Duration::from_millis(200)); // the reader is waiting in open()
    let work = tempfile::tempdir().unwrap();
    let out = ladder(work.path(), &fifo);
    assert_eq!(out.code, Some(0), "{}", out.show());
    is_result(&reader.join().unwrap());
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn reliability_outputs_fifo_without_reader_is_an_error_not_a_hang() {
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("nobody.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let work = tempfile::tempdir().unwrap();
    let out = ladder(work.path(), &fifo);
    assert_eq!(out.code, Some(1), "{}", out.show());
    assert!(out.stderr.contains("no reader"), "{}", out.show());
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn reliability_outputs_socket_is_written_through() {
    let t = tempfile::tempdir().unwrap();
    let sock = t.path().join("results.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let (mut s, _) = listener.accept().unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    });
    let work = tempfile::tempdir().unwrap();
    let out = ladder(work.path(), &sock);
    assert_eq!(out.code, Some(0), "{}", out.show());
    is_result(&reader.join().unwrap());
    assert!(std::fs::symlink_metadata(&sock).unwrap().file_type().is_socket());
}

#[test]
fn reliability_outputs_symlink_is_kept_and_its_target_written() {
    let t = tempfile::tempdir().unwrap();
    let shared = t.path().join("shared/results");
    std::fs::create_dir_all(&shared).unwrap();
    // An earlier result (a file manyfiles wrote: anything else is refused, see below).
    std::fs::write(shared.join("run42.json"), "{\"schema\": 1, \"provenance\": {\"tool\": \"manyfiles\"}}").unwrap();
    let link = t.path().join("results.json");
    std::os::unix::fs::symlink(shared.join("run42.json"), &link).unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = ladder(work.path(), &link);
    assert_eq!(out.code, Some(0), "{}", out.show());
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    assert_eq!(std::fs::read_link(&link).unwrap(), shared.join("run42.json"));
    is_result(&std::fs::read_to_string(shared.join("run42.json")).unwrap());
    assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 1, "no temporary file left beside the target");
}

#[test]
fn reliability_outputs_directory_is_refused_before_anything_runs() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("out");
    std::fs::create_dir(&dir).unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = ladder(work.path(), &dir);
    assert_eq!(out.code, Some(2), "{}", out.show());
    assert_eq!(out.lines().len(), 1, "one line: {}", out.show());
    assert!(out.stderr.contains("--json") && out.stderr.contains("is a directory"), "{}", out.show());
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0, "nothing created");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    // a symlink to a directory too
    let link = t.path().join("link");
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    assert_eq!(ladder(work.path(), &link).code, Some(2));
}

#[test]
fn reliability_outputs_dash_is_standard_output_alone() {
    let work = tempfile::tempdir().unwrap();
    let out = ladder(work.path(), Path::new("-"));
    assert_eq!(out.code, Some(0), "{}", out.show());
    is_result(&out.stdout);
    assert!(out.stderr.contains("files"), "the table goes to stderr: {}", out.show());
}

/// `args` run bounded (10 s: a refusal is immediate).
fn quick(args: &[&str]) -> Out {
    run_bounded(args, Duration::from_secs(60), None)
}

/// Exit 2, one stderr line naming `flag`, nothing on stdout.
fn refused(out: &Out, flag: &str, what: &str) {
    assert_eq!(out.code, Some(2), "{what}: {}", out.show());
    assert_eq!(out.lines().len(), 1, "{what}: one line: {}", out.show());
    assert!(out.stderr.contains(flag), "{what}: names {flag}: {}", out.show());
    assert!(out.stdout.is_empty(), "{what}: {}", out.show());
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// Issue 38, 4: `--json notes.txt` replaced notes.txt. Every output flag of every command
/// (experiments' --json/--csv/--markdown, copy/scan/rm/plan/predict --json, report
/// --html/--png/--csv/--markdown/--json, compare --html, man DIR) refuses an existing file
/// manyfiles did not write: exit 2, one line naming the flag and the file, the file
/// byte-identical, nothing else made. Its own outputs are replaced as before, and
/// `--force` replaces the user's file.
#[test]
fn reliability_outputs_foreign_files_are_not_replaced() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let p = |n: &str| d.join(n).to_string_lossy().into_owned();
    // A results file and a tree to work on.
    let work = tempfile::tempdir().unwrap();
    let r = p("r.json");
    let out = ladder(work.path(), Path::new(&r));
    assert_eq!(out.code, Some(0), "{}", out.show());
    std::fs::create_dir(d.join("src")).unwrap();
    std::fs::write(d.join("src/a"), "a").unwrap();
    let notes = d.join("notes.txt");
    let mine = b"my notes, not a manyfiles output\n";
    std::fs::write(&notes, mine).unwrap();
    std::fs::create_dir(d.join("pngs")).unwrap();
    std::fs::write(d.join("pngs/bars-largest-tree.png"), mine).unwrap();
    std::fs::create_dir(d.join("man")).unwrap();
    std::fs::write(d.join("man/manyfiles.1"), mine).unwrap();
    // A symlink to the user's file is judged by the file it names.
    std::os::unix::fs::symlink(&notes, d.join("link.json")).unwrap();
    let before = names(d);
    let n = p("notes.txt");
    let (src, dst, w) = (p("src"), p("dst"), work.path().to_str().unwrap().to_string());
    let ladder_args = |flag: &str, file: &str| {
        vec!["ladder", "--target", &w, "--total", "64k", "--to", "16", "--runs", "1", "-q", flag, file]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (ladder_args("--json", &n), "--json"),
        (ladder_args("--json", &p("link.json")), "--json"),
        (ladder_args("--csv", &n), "--csv"),
        (ladder_args("--markdown", &n), "--markdown"),
        (["copy", &src, &dst, "--json", &n].map(String::from).to_vec(), "--json"),
        (["scan", &src, "--json", &n].map(String::from).to_vec(), "--json"),
        (["scan", &src, "--inventory", &n].map(String::from).to_vec(), "--inventory"),
        (["plan", &src, "--json", &n].map(String::from).to_vec(), "--json"),
        (["predict", "--model", &r, "--tree", &src, "--json", &n].map(String::from).to_vec(), "--json"),
        (["report", &r, "--html", &n].map(String::from).to_vec(), "--html"),
        (["report", &r, "--csv", &n].map(String::from).to_vec(), "--csv"),
        (["report", &r, "--markdown", &n].map(String::from).to_vec(), "--markdown"),
        (["report", &r, "--json", &n].map(String::from).to_vec(), "--json"),
        (["report", &r, "--html", &p("new.html"), "--png", &p("pngs")].map(String::from).to_vec(), "--png"),
        (["compare", &r, &r, "--html", &n].map(String::from).to_vec(), "--html"),
        (["man", &p("man")].map(String::from).to_vec(), "DIR"),
    ];
    for (args, flag) in &cases {
        let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let what = a.join(" ");
        let out = quick(&a);
        refused(&out, flag, &what);
        assert!(out.stderr.contains("not a manyfiles output"), "{what}: {}", out.show());
        assert_eq!(std::fs::read(&notes).unwrap(), mine, "{what}: notes.txt replaced");
        assert_eq!(names(d), before, "{what}: something made or removed");
        assert_eq!(names(&d.join("pngs")), ["bars-largest-tree.png"], "{what}");
        assert_eq!(std::fs::read(d.join("pngs/bars-largest-tree.png")).unwrap(), mine, "{what}");
        assert_eq!(std::fs::read(d.join("man/manyfiles.1")).unwrap(), mine, "{what}");
        assert!(run_dirs(work.path()).is_empty(), "{what}: a run started");
    }
    // Its own outputs are replaced without --force, every kind twice.
    std::fs::remove_file(d.join("pngs/bars-largest-tree.png")).unwrap();
    std::fs::remove_file(d.join("man/manyfiles.1")).unwrap();
    let own: Vec<Vec<String>> = vec![
        ladder_args("--json", &p("own.json")),
        ladder_args("--csv", &p("own.csv")),
        ladder_args("--markdown", &p("own.md")),
        ["copy", &src, &p("dst2"), "--json", &p("copy.json")].map(String::from).to_vec(),
        ["scan", &src, "--json", &p("scan.json"), "--inventory", &p("inv.json")].map(String::from).to_vec(),
        ["plan", &src, "--json", &p("plan.json")].map(String::from).to_vec(),
        ["predict", "--model", &r, "--tree", &src, "--json", &p("pred.json")].map(String::from).to_vec(),
        ["report", &r, "--html", &p("r.html"), "--png", &p("pngs"), "--csv", &p("r.csv"), "--markdown", &p("r.md")]
            .map(String::from)
            .to_vec(),
        ["compare", &r, &r, "--html", &p("c.html")].map(String::from).to_vec(),
        ["man", &p("man")].map(String::from).to_vec(),
    ];
    for args in &own {
        let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        for round in 1..=2 {
            let out = quick(&a);
            // predict exits 1 when no fit passed its check (a loaded machine); its outputs
            // are written all the same, and that is what this test is about.
            let no_answer =
                a[0] == "predict" && out.code == Some(1) && out.stderr.contains("every fit failed its check");
            assert!(out.code == Some(0) || no_answer, "{} (round {round}): {}", a.join(" "), out.show());
            if a[0] == "copy" {
                std::fs::remove_dir_all(d.join("dst2")).unwrap(); // copy wants a new DST
            }
        }
    }
    // --force replaces the user's file.
    let mut forced = ladder_args("--json", &n);
    forced.push("--force".into());
    let out = quick(&forced.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    assert_eq!(out.code, Some(0), "{}", out.show());
    is_result(&std::fs::read_to_string(&notes).unwrap());
}

/// Issue 38, 4: a run file's `json` (or `target`, `csv`, `markdown`, `fs` = "…@dev:…" /
/// "…@disk:DIR", `destroy_device`) naming a place outside the file's own directory is
/// refused (exit 2 naming the key; a symlink or `..` that leads out counts) unless
/// `run FILE --allow-outside`; `force` is the command line's alone, and so is running the
/// file's own commands (`cmd`: `run --allow-commands`). Relative paths are
/// taken from the file's directory.
#[test]
fn reliability_outputs_run_file_stays_in_its_directory() {
    let t = tempfile::tempdir().unwrap();
    let (runs, outside) = (t.path().join("runs"), t.path().join("outside"));
    std::fs::create_dir_all(&runs).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let victim = outside.join("passwd");
    std::fs::write(&victim, "root:x:0:0::/root:/bin/sh\n").unwrap();
    std::os::unix::fs::symlink(&outside, runs.join("out")).unwrap();
    let file = runs.join("x.toml");
    let head = "command = \"ladder\"\ntotal = \"64k\"\nto = 16\nruns = 1\nquiet = true\n";
    let base = format!("{head}target = \".\"\n");
    let v = victim.to_str().unwrap();
    let o = outside.to_str().unwrap();
    for (extra, key) in [
        (format!("json = \"{v}\""), "key json"),
        ("json = \"../outside/new.json\"".to_string(), "key json"),
        ("json = \"out/new.json\"".to_string(), "key json"),
        ("csv = \"out/passwd\"".to_string(), "key csv"),
        ("markdown = \"out/passwd\"".to_string(), "key markdown"),
        (format!("target = \"{o}\""), "key target"),
        ("fs = \"ext4@dev:/dev/null\"".to_string(), "key fs"),
        (format!("fs = [\"tmpfs\", \"ext4@disk:{o}\"]"), "key fs"),
        ("force = true".to_string(), "key force"),
        (format!("cmd = [\"x=touch {o}/made\"]"), "key cmd"),
    ] {
        let text = if extra.starts_with("target") { format!("{head}{extra}\n") } else { format!("{base}{extra}\n") };
        std::fs::write(&file, &text).unwrap();
        let out = quick(&["run", file.to_str().unwrap()]);
        refused(&out, key, &text);
        assert!(out.stderr.contains("FILE"), "{}", out.show());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root:x:0:0::/root:/bin/sh\n", "{text}");
        assert_eq!(names(&outside), ["passwd"], "{text}: something made outside");
        assert_eq!(names(&runs), ["out", "x.toml"], "{text}: something made beside the file");
    }
    // Allowed from the command line: a new file outside is written; the user's file
    // there is still not replaced (it is no manyfiles output).
    std::fs::write(&file, format!("{base}json = \"{o}/new.json\"\n")).unwrap();
    let out = quick(&["run", file.to_str().unwrap(), "--allow-outside"]);
    assert_eq!(out.code, Some(0), "{}", out.show());
    is_result(&std::fs::read_to_string(outside.join("new.json")).unwrap());
    std::fs::write(&file, format!("{base}json = \"{v}\"\n")).unwrap();
    refused(&quick(&["run", file.to_str().unwrap(), "--allow-outside"]), "--json", "foreign file outside");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root:x:0:0::/root:/bin/sh\n");
    // Relative paths are the file's: run from elsewhere, the results land beside it.
    std::fs::write(&file, format!("{base}json = \"r.json\"\n")).unwrap();
    let out = quick(&["run", file.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.show());
    is_result(&std::fs::read_to_string(runs.join("r.json")).unwrap());
    assert!(run_dirs(&runs).is_empty(), "the run directory was removed");
}

/// Issue 38, 11: `manyfiles run /dev/zero` never returned (2.4 GB RSS in 5 s). Run
/// files, result files and inventories are regular files of bounded size: a device, a
/// fifo (no writer: no wait) or an oversized file is refused at once, exit 2, one line.
#[test]
fn reliability_outputs_inputs_are_bounded() {
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let big = t.path().join("big.toml");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(100 << 30).unwrap(); // 100 GiB, sparse
    drop(f);
    let dir = t.path().join("tree");
    std::fs::create_dir(&dir).unwrap();
    let (fi, bi, d) = (fifo.to_str().unwrap(), big.to_str().unwrap(), dir.to_str().unwrap());
    let html = t.path().join("x.html");
    let x = html.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", "/dev/zero"], "FILE"),
        (vec!["run", fi], "FILE"),
        (vec!["run", bi], "FILE"),
        (vec!["report", "/dev/zero", "--html", x], "RESULTS.json"),
        (vec!["report", fi, "--html", x], "RESULTS.json"),
        (vec!["report", bi, "--html", x], "RESULTS.json"),
        (vec!["compare", "/dev/zero", bi], "A.json"),
        (vec!["predict", "--model", "/dev/zero", "--tree", d], "--model"),
        (vec!["plan", "--inventory", "/dev/zero"], "--inventory"),
        (vec!["ops", "--like", fi, "--target", d], "--like"),
    ];
    for (args, flag) in cases {
        let start = std::time::Instant::now();
        let out = quick(&args);
        refused(&out, flag, &args.join(" "));
        assert!(start.elapsed() < Duration::from_secs(10), "{args:?} took {:?}", start.elapsed());
        assert!(
            out.stderr.contains("not a regular file") || out.stderr.contains("larger than"),
            "{args:?}: {}",
            out.show()
        );
    }
    assert!(!html.exists());
}
