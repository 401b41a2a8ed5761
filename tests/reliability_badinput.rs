//! Scenario 9, bad input at scale: 10,000 generated malformed inputs (4,000 command lines,
//! 3,000 TOML experiment files through `run`, 3,000 result JSON files through report,
//! compare, predict and plan). Never a panic; a malformed input gives exactly one line
//! `manyfiles: ...` on stderr, nothing on stdout, exit 2, and nothing created. Generated
//! from a fixed seed (printed with every failure) so a failure can be replayed.

mod reliability_common;

use reliability_common::*;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;
use std::time::Duration;

const CMDLINES: usize = 4_000;
const TOMLS: usize = 3_000;
const JSONS: usize = 3_000;
const LIMIT: Duration = Duration::from_secs(30);

/// Every base names things that do not exist, so no mutation can make a run that writes.
const BASES: &[&str] = &[
    "ladder --target /nonexistent/t --total 1M --to 64 --runs 1 --seed 3",
    "ops --target /nonexistent/t --files 100 --size 4k --ops create,stat,read --threads 2",
    "gen /nonexistent/parent/dir --files 10 --size 1k --seed 1",
    "bigfile --target /nonexistent/t --size 1M --block 64k --runs 1",
    "clusters --target /nonexistent/t --cluster 4k,64k --runs 1",
    "dirsize --target /nonexistent/t --files 1000 --runs 1",
    "copy /nonexistent/src /nonexistent/dst --threads 2",
    "sync /nonexistent/src /nonexistent/dst --delete --checksum",
    "scan /nonexistent/tree --db sqlite:/nonexistent/db.sqlite --threads 2",
    "report /nonexistent/r.json --markdown /nonexistent/o.md",
    "compare /nonexistent/a.json /nonexistent/b.json --fail-if-slower 5",
    "predict --model /nonexistent/r.json --tree /nonexistent/t --interval 15m",
    "plan /nonexistent/t --cluster 4k,64k",
    "run /nonexistent/e.toml",
];

const GARBAGE: &[&str] = &[
    "",
    "-1",
    "0",
    "1e999",
    "99999999999999999999999999",
    "NaN",
    "inf",
    "x\ny",
    "1M,",
    ",",
    "0x",
    "∞",
    "1;ls",
    "--",
    "-",
    "4kk",
    "1..2",
    "abc",
    "   ",
    "\t",
    "1 2",
    "%s%n",
    "../../..",
    "\u{0}x",
];

fn garbage(r: &mut Rng) -> OsString {
    match r.below(4) {
        0 => OsString::from_vec(vec![0xff, 0xfe, b'a' + r.below(26) as u8]),
        1 => {
            let n = 1 + r.below(12) as usize;
            (0..n).map(|_| (0x21 + r.below(94) as u8) as char).collect::<String>().into()
        }
        _ => GARBAGE[r.below(GARBAGE.len() as u64) as usize].replace('\0', "").into(),
    }
}

/// The paths that do not exist (and the flag naming them) stay: removing or replacing
/// them could turn the line into a valid run in the working directory.
fn protected(v: &[OsString], i: usize) -> bool {
    v.get(i).is_some_and(|a| a.to_string_lossy().contains("/nonexistent"))
}

/// One malformed command line: a base with one or two mutations.
fn cmdline(r: &mut Rng) -> Vec<OsString> {
    let base = BASES[r.below(BASES.len() as u64) as usize];
    let mut v: Vec<OsString> = base.split(' ').map(OsString::from).collect();
    for _ in 0..1 + r.below(2) {
        let flags: Vec<usize> = (1..v.len()).filter(|&i| v[i].to_string_lossy().starts_with("--")).collect();
        match r.below(6) {
            0 => v.push(format!("--zz{}", r.below(1000)).into()),
            1 | 2 if !flags.is_empty() => {
                let i = flags[r.below(flags.len() as u64) as usize];
                if protected(&v, i + 1) {
                    v.push(garbage(r)); // a stray extra argument instead
                    continue;
                }
                if i + 1 < v.len() && !v[i + 1].to_string_lossy().starts_with("--") {
                    v[i + 1] = garbage(r);
                } else {
                    v.insert(i + 1, garbage(r));
                }
            }
            3 if v.len() > 2 => {
                let i = 1 + r.below(v.len() as u64 - 1) as usize;
                if protected(&v, i) || protected(&v, i + 1) {
                    v.insert(i, garbage(r));
                } else {
                    v.remove(i);
                }
            }
            4 => {
                let i = 1 + r.below(v.len() as u64) as usize;
                v.insert(i, garbage(r));
            }
            _ => {
                let i = 1 + r.below(v.len() as u64 - 1) as usize;
                v.insert(i, v[i].clone());
            }
        }
    }
    v
}

/// A TOML experiment file with at least one certain fault (bad syntax, wrong type,
/// unknown key or command, bad value, invalid UTF-8); its target does not exist.
fn toml_file(r: &mut Rng) -> Vec<u8> {
    let cmd = ["ladder", "ops", "bigfile", "clusters", "dirsize"][r.below(5) as usize];
    let mut lines = vec![
        "target = \"/nonexistent/t\"".to_string(),
        format!("command = \"{cmd}\""),
        "runs = 1".into(),
        "total = \"1M\"".into(),
        "quiet = true".into(),
    ];
    let g = garbage(r).to_string_lossy().replace(['"', '\\', '\n'], "?");
    let fault = match r.below(9) {
        0 => format!("total = {}", ["5.5", "[1, {a=1}]", "{a = 1}", "1979-05-27T07:32:00Z"][r.below(4) as usize]),
        1 => format!("nosuch_{} = 1", r.below(100)),
        2 => format!("command = \"{g}x\""),
        3 => format!("runs = \"{g}\""),
        4 => "runs = [".into(),
        5 => "= 1".into(),
        6 => "total = \"unterminated".into(),
        7 => "[section]\nkey = 1".into(),
        _ => "threads = -5".into(),
    };
    let at = r.below(lines.len() as u64 + 1) as usize;
    lines.insert(at, fault);
    let mut bytes = lines.join("\n").into_bytes();
    match r.below(4) {
        0 => {
            let i = r.below(bytes.len() as u64) as usize;
            bytes.insert(i, 0xff); // invalid UTF-8
        }
        1 => bytes.truncate(r.below(bytes.len() as u64) as usize + 1),
        _ => {}
    }
    bytes
}

/// A mutated result file. `certain`: the mutation always makes it malformed (truncated,
/// not JSON, wrong top level); otherwise (a value changed or removed) the file may still
/// be acceptable, and exit 0 is allowed.
fn json_file(r: &mut Rng, valid: &[u8], value: &serde_json::Value) -> (Vec<u8>, bool) {
    match r.below(6) {
        0 => {
            let end = valid.trim_ascii_end().len();
            (valid[..r.below(end as u64 - 1) as usize].to_vec(), true)
        }
        1 => (
            [b"", &b"null"[..], b"[]", b"42", b"\"x\"", b"\xff\xfe{", b"{\"schema\": 99}"][r.below(7) as usize]
                .to_vec(),
            true,
        ),
        2 => {
            let mut b = valid.to_vec();
            for _ in 0..1 + r.below(4) {
                let i = r.below(b.len() as u64) as usize;
                b[i] = r.below(256) as u8;
            }
            (b, false)
        }
        _ => {
            let mut v = value.clone();
            let bad = [
                serde_json::json!(null),
                serde_json::json!(-1),
                serde_json::json!("x"),
                serde_json::json!([]),
                serde_json::json!({}),
                serde_json::json!(1e308),
                serde_json::json!(true),
            ];
            let b = bad[r.below(bad.len() as u64) as usize].clone();
            // Walk down a random path and replace (or remove) what is there.
            let mut cur = &mut v;
            loop {
                let (keys, len) = match cur {
                    serde_json::Value::Object(m) => (m.keys().cloned().collect::<Vec<_>>(), m.len()),
                    serde_json::Value::Array(a) => (Vec::new(), a.len()),
                    _ => break,
                };
                if len == 0 || r.below(3) == 0 {
                    break;
                }
                let i = r.below(len as u64) as usize;
                cur = match cur {
                    serde_json::Value::Object(m) if r.below(4) == 0 => {
                        m.remove(&keys[i]);
                        return (serde_json::to_vec(&v).unwrap(), false);
                    }
                    serde_json::Value::Object(m) => m.get_mut(&keys[i]).unwrap(),
                    serde_json::Value::Array(a) => &mut a[i],
                    _ => unreachable!(),
                };
            }
            *cur = b;
            (serde_json::to_vec(&v).unwrap(), false)
        }
    }
}

/// Check one run: no panic; a refusal is one line, exit 2, empty stdout; `scratch`
/// (where outputs would go) stays empty unless the run succeeded.
fn check(args: &[OsString], cwd: &Path, scratch: &Path, certain: bool, seed: u64) -> Option<i32> {
    let mut c = command(&args.iter().map(|a| a.as_os_str()).collect::<Vec<_>>(), None);
    c.current_dir(cwd);
    let out = c.output().unwrap();
    let o = Out {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    let ctx = || format!("seed {seed}, args {args:?}\n{}", o.show());
    assert!(!o.stderr.contains("panicked"), "panic: {}", ctx());
    if certain || o.code != Some(0) {
        assert_eq!(o.code, Some(2), "malformed input must exit 2: {}", ctx());
        assert_eq!(o.lines().len(), 1, "exactly one stderr line: {}", ctx());
        assert!(o.lines()[0].starts_with("manyfiles: "), "{}", ctx());
        assert!(o.stdout.is_empty(), "nothing on stdout: {}", ctx());
        let made: Vec<_> = std::fs::read_dir(scratch).unwrap().flatten().map(|e| e.path()).collect();
        assert!(made.is_empty(), "refused input created {made:?}: {}", ctx());
        let made: Vec<_> = std::fs::read_dir(cwd).unwrap().flatten().map(|e| e.path()).collect();
        assert!(made.is_empty(), "refused input created {made:?} in the working directory: {}", ctx());
    }
    for e in std::fs::read_dir(scratch).unwrap().flatten() {
        let _ = std::fs::remove_file(e.path());
    }
    o.code
}

/// Run `n` cases on two threads; `case(i)` builds the arguments and whether the input is
/// certainly malformed. Returns the exit codes seen (code → count).
fn run_cases(
    n: usize,
    case: impl Fn(usize, &mut Rng, &Path) -> (Vec<OsString>, bool) + Sync,
) -> std::collections::BTreeMap<i32, usize> {
    let seen = std::sync::Mutex::new(std::collections::BTreeMap::new());
    std::thread::scope(|s| {
        for part in 0..2 {
            let (case, seen) = (&case, &seen);
            s.spawn(move || {
                let t = tempfile::tempdir().unwrap();
                let (cwd, scratch, inputs) = (t.path().join("cwd"), t.path().join("out"), t.path().join("in"));
                for d in [&cwd, &scratch, &inputs] {
                    std::fs::create_dir(d).unwrap();
                }
                for i in (part..n).step_by(2) {
                    let seed = 0x9e3779b97f4a7c15 ^ (i as u64 + 1);
                    let mut r = Rng(seed);
                    let (args, certain) = case(i, &mut r, &inputs);
                    let args: Vec<OsString> = args
                        .into_iter()
                        .map(|a| if a == "OUT" { scratch.join("o").into_os_string() } else { a })
                        .collect();
                    let code = check(&args, &cwd, &scratch, certain, seed);
                    *seen.lock().unwrap().entry(code.unwrap_or(-1)).or_insert(0) += 1;
                }
            });
        }
    });
    let seen = seen.into_inner().unwrap();
    eprintln!("exit codes over {n} inputs: {seen:?}");
    seen
}

#[test]
fn reliability_badinput_command_lines() {
    let seen = run_cases(CMDLINES, |_, r, _| (cmdline(r), true));
    assert_eq!(seen.get(&2), Some(&CMDLINES));
}

#[test]
fn reliability_badinput_toml_files() {
    let seen = run_cases(TOMLS, |i, r, dir| {
        let p = dir.join(format!("e{i}.toml"));
        std::fs::write(&p, toml_file(r)).unwrap();
        // --allow-outside: the target lies outside the file's directory; the faults
        // tried here are the keys' own (run files' paths: reliability_outputs.rs).
        (vec!["run".into(), p.into_os_string(), "--allow-outside".into()], true)
    });
    assert_eq!(seen.get(&2), Some(&TOMLS));
}

#[test]
fn reliability_badinput_result_files() {
    // One real result file (a tiny ladder on a temp dir) to mutate.
    let t = tempfile::tempdir().unwrap();
    let json = t.path().join("r.json");
    let o = run_bounded(
        &[
            OsString::from("ladder"),
            "--target".into(),
            t.path().into(),
            "--total".into(),
            "64k".into(),
            "--to".into(),
            "16".into(),
            "--runs".into(),
            "2".into(),
            "--json".into(),
            json.clone().into(),
            "-q".into(),
        ],
        LIMIT,
        None,
    );
    assert_eq!(o.code, Some(0), "{}", o.show());
    let valid = std::fs::read(&json).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&valid).unwrap();
    let src = env!("CARGO_MANIFEST_DIR").to_string() + "/src/units.rs";
    let seen = run_cases(JSONS, |i, r, dir| {
        let (bytes, certain) = json_file(r, &valid, &value);
        let p = dir.join(format!("r{i}.json"));
        std::fs::write(&p, bytes).unwrap();
        let p = p.into_os_string();
        let args: Vec<OsString> = match i % 4 {
            0 => vec!["report".into(), p, "--markdown".into(), "OUT".into()],
            1 => vec!["compare".into(), json.clone().into(), p],
            2 => vec!["predict".into(), "--model".into(), p, "--tree".into(), src.clone().into()],
            _ => vec!["plan".into(), src.clone().into(), "--model".into(), p],
        };
        (args, certain)
    });
    assert_eq!(seen.keys().filter(|&&c| c != 0 && c != 2).count(), 0, "only exit 0 or 2: {seen:?}");
}

/// One case of the table: arguments (`T` = an existing empty target directory, `S` = an
/// existing source tree, `N` = a path that does not exist yet in the scratch directory,
/// `D` = an existing empty directory used as an output path, `R` = a valid result file,
/// `F:name` = a file in the inputs directory), environment, and what the one stderr line
/// must name.
struct Case {
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
    names: String,
}

fn case(args: &str, names: &str) -> Case {
    Case { args: args.split(' ').map(String::from).collect(), env: vec![], names: names.to_string() }
}

/// Every entry under `root` (path, size), for "nothing created or changed".
fn listing(root: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let md = e.metadata().unwrap();
            out.push((e.path().display().to_string(), if md.is_dir() { 0 } else { md.len() }));
            if md.is_dir() {
                stack.push(e.path());
            }
        }
    }
    out.sort();
    out
}

fn table() -> Vec<Case> {
    let mut v: Vec<Case> = Vec::new();
    // 1. Numeric flags of every command: negative, fractional, huge, not a number.
    let count_bad = ["-1", "2.5", "abc", "99999999999999999999999", "1x"];
    let numeric: &[(&str, &[&str])] = &[
        (
            "ladder --target T --runs 1",
            &[
                "--total",
                "--from",
                "--to",
                "--step",
                "--portion",
                "--files-per-dir",
                "--fanout",
                "--block-size",
                "--fs-size",
            ],
        ),
        ("ops --target T --runs 1", &["--files", "--portion", "--files-per-dir", "--fanout"]),
        ("gen N", &["--files", "--files-per-dir", "--fanout", "--block-size"]),
        ("bigfile --target T --runs 1", &["--size", "--block"]),
        ("clusters --target T --runs 1", &["--portions"]),
        ("dirsize --target T --runs 1", &["--max", "--size"]),
        ("pack --src-target T --runs 1", &["--to", "--from", "--step", "--total", "--fs-size"]),
    ];
    for (base, flags) in numeric {
        for f in *flags {
            for b in count_bad {
                v.push(case(&format!("{base} {f} {b}"), f));
            }
        }
    }
    // Integer flags (plain numbers, no units).
    let int_bad = ["-1", "2.5", "abc", "99999999999999999999999"];
    let ints: &[(&str, &[&str])] = &[
        (
            "ladder --target T",
            &["--runs", "--warmup", "--threads", "--depth", "--name-len", "--seed", "--min-runs", "--max-runs"],
        ),
        ("ops --target T --runs 1", &["--threads", "--seed"]),
        ("gen N", &["--threads", "--seed", "--name-len"]),
        ("bigfile --target T", &["--runs", "--seed"]),
        ("copy S N", &["--threads"]),
        ("sync S N", &["--threads"]),
        ("scan S", &["--threads"]),
        ("rm N", &["--threads"]),
        ("pack --src-target T", &["--runs", "--copies", "--warmup", "--threads"]),
        ("predict --model R --tree S", &["--threads"]),
        ("plan S", &["--threads"]),
    ];
    for (base, flags) in ints {
        for f in *flags {
            for b in int_bad {
                v.push(case(&format!("{base} {f} {b}"), f));
            }
        }
    }
    // Floats, percentages, durations.
    for b in ["-1", "abc", "NaN", "inf", "0"] {
        v.push(case(&format!("gen N --tree nextcloud-like --scale {b}"), "--scale"));
    }
    for b in ["-5", "abc", "NaN", "inf"] {
        v.push(case(&format!("compare R R --fail-if-slower {b}"), "--fail-if-slower"));
    }
    for b in ["-5", "abc", "NaN", "inf", "0"] {
        v.push(case(&format!("compare R R --equivalence {b}"), "--equivalence"));
    }
    for b in ["-5%", "abc", "0%", "-1"] {
        v.push(case(&format!("ladder --target T --precision {b}"), "--precision"));
    }
    for b in ["-1m", "abc", "5parsecs"] {
        v.push(case(&format!("ladder --target T --max-time {b}"), "--max-time"));
        v.push(case(&format!("predict --model R --tree S --interval {b}"), "--interval"));
    }
    // 2. Missing required arguments, every command that has them.
    for (args, names) in [
        ("copy", "required"),
        ("copy S", "required"),
        ("sync", "required"),
        ("sync S", "required"),
        ("rm", "required"),
        ("scan", "required"),
        ("gen", "required"),
        ("run", "required"),
        ("report", "required"),
        ("compare", "required"),
        ("compare R", "required"),
        ("predict", "required"),
        ("predict --model R", "--tree"),
        ("predict --tree S", "--model"),
        ("plan", "PATH"),
        ("plan --model R", "PATH"),
        ("completions", "required"),
        ("ladder --json", "--json"),
        ("gen N --files", "--files"),
    ] {
        v.push(case(args, names));
    }
    // 3. Output paths that are directories.
    for (args, flag) in [
        ("ladder --target T --runs 1 --json D", "--json"),
        ("ladder --target T --runs 1 --csv D", "--csv"),
        ("ladder --target T --runs 1 --markdown D", "--markdown"),
        ("report R --markdown D", "--markdown"),
        ("report R --json D", "--json"),
        ("report R --csv D", "--csv"),
        ("report R --html D", "--html"),
        ("predict --model R --tree S --json D", "--json"),
        ("plan S --json D", "--json"),
        ("scan S --json D", "--json"),
        ("copy S N --json D", "--json"),
        ("sync S N --json D", "--json"),
        ("scan S --inventory D", "--inventory"),
    ] {
        v.push(case(args, flag));
    }
    // 4. Bad result files, through every command that reads one.
    let bad_results = [
        "schema99",
        "schema_str",
        "no_schema",
        "neg_time",
        "nan_time",
        "huge_time",
        "no_measurements",
        "no_provenance",
        "neg_files",
        "not_json",
        "empty",
    ];
    for r in bad_results {
        for (args, flag) in [
            (format!("report F:{r} --markdown N"), "RESULTS.json"),
            (format!("compare R F:{r}"), "B.json"),
            (format!("compare F:{r} R"), "A.json"),
            (format!("predict --model F:{r} --tree S"), "--model"),
            (format!("plan S --model F:{r}"), "--model"),
        ] {
            v.push(case(&args, flag));
        }
    }
    // 5. Bad experiment files: every kind of fault per key.
    for (toml, key) in [
        ("runs = -3", "runs"),
        ("runs = 2.5", "runs"),
        ("runs = \"x\"", "runs"),
        ("runs = true", "runs"),
        ("to = 16.5", "to"),
        ("to = -1", "to"),
        ("to = \"lots\"", "to"),
        ("total = -1", "total"),
        ("total = 1.5", "total"),
        ("total = [1, 2]", "total"),
        ("quiet = \"yes\"", "quiet"),
        ("quiet = 1", "quiet"),
        ("keep = \"no\"", "keep"),
        ("reuse = 0", "reuse"),
        ("threads = -5", "threads"),
        ("threads = 1.5", "threads"),
        ("warmup = -1", "warmup"),
        ("precision = \"-5%\"", "precision"),
        ("max_time = \"-1m\"", "max_time"),
        ("min_runs = -1", "min_runs"),
        ("portion = 0.5", "portion"),
        ("fanout = -16", "fanout"),
        ("files_per_dir = 1.5", "files_per_dir"),
        ("seed = -1", "seed"),
        ("nosuch = 1", "nosuch"),
        ("order = 3", "order"),
    ] {
        // --allow-outside: the target is outside the file's directory (see above).
        let args = vec!["run".into(), format!("F:toml:{toml}"), "--allow-outside".into()];
        v.push(Case { args, env: vec![], names: key.to_string() });
    }
    // 6. Environment variables, for every command.
    for cmdline in [
        "ladder --target T --runs 1",
        "ops --target T --runs 1",
        "gen N --files 1",
        "copy S N",
        "sync S N",
        "scan S",
        "rm N",
        "report R --markdown N",
        "compare R R",
        "predict --model R --tree S",
        "plan S",
        "cleanup",
    ] {
        for val in ["abc", "-1", "0", "NaN", ""] {
            let mut c = case(cmdline, "MANYFILES_HELPER_TIMEOUT");
            c.env.push(("MANYFILES_HELPER_TIMEOUT", val.to_string()));
            v.push(c);
        }
    }
    v
}

/// The bad result files of the table, from a valid one.
fn bad_result(name: &str, valid: &serde_json::Value) -> Vec<u8> {
    let mut v = valid.clone();
    let m0 = |v: &mut serde_json::Value| v["measurements"][0].as_object_mut().unwrap().clone();
    match name {
        "schema99" => v["schema"] = 99.into(),
        "schema_str" => v["schema"] = "1".into(),
        "no_schema" => {
            v.as_object_mut().unwrap().remove("schema");
        }
        "neg_time" => v["measurements"][0]["elapsed_s"] = (-1.0).into(),
        "nan_time" => v["measurements"][0]["elapsed_s"] = "NaN".into(),
        "huge_time" => v["measurements"][0]["elapsed_s"] = 5e12.into(),
        "no_measurements" => {
            v.as_object_mut().unwrap().remove("measurements");
        }
        "no_provenance" => {
            v.as_object_mut().unwrap().remove("provenance");
        }
        "neg_files" => {
            let mut m = m0(&mut v);
            m.insert("files".into(), (-5).into());
            v["measurements"][0] = m.into();
        }
        "not_json" => return b"{\"schema\": 1,".to_vec(),
        "empty" => return Vec::new(),
        _ => unreachable!(),
    }
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn reliability_badinput_table() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let (cwd, tgt, src, outd, inputs, dird) =
        (root.join("cwd"), root.join("tgt"), root.join("src"), root.join("out"), root.join("in"), root.join("dir"));
    for d in [&cwd, &tgt, &src, &outd, &inputs, &dird] {
        std::fs::create_dir(d).unwrap();
    }
    for i in 0..5 {
        std::fs::write(src.join(format!("f{i}")), vec![b'x'; 100 * i]).unwrap();
    }
    // A valid result file with models (a tiny ladder).
    let lt = tempfile::tempdir().unwrap();
    let good = inputs.join("good.json");
    let o = run_bounded(
        &[
            "ladder",
            "--target",
            lt.path().to_str().unwrap(),
            "--total",
            "64k",
            "--to",
            "16",
            "--runs",
            "2",
            "-q",
            "--json",
            good.to_str().unwrap(),
        ],
        LIMIT,
        None,
    );
    assert_eq!(o.code, Some(0), "{}", o.show());
    let valid: serde_json::Value = serde_json::from_slice(&std::fs::read(&good).unwrap()).unwrap();
    let cases = table();
    let before = listing(root);
    let mut unclean = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let mut args: Vec<OsString> = Vec::new();
        for a in &c.args {
            let a: OsString = match a.as_str() {
                "T" => tgt.clone().into(),
                "S" => src.clone().into(),
                "N" => outd.join("new").into(),
                "D" => dird.clone().into(),
                "R" => good.clone().into(),
                a if a.starts_with("F:toml:") => {
                    let p = inputs.join(format!("e{i}.toml"));
                    let text = format!(
                        "command = \"ladder\"\ntarget = \"{}\"\nruns = 1\n{}\n",
                        tgt.display(),
                        &a["F:toml:".len()..]
                    );
                    // The fault replaces a key of the same name.
                    let key = a["F:toml:".len()..].split(" =").next().unwrap();
                    let text: String = text
                        .lines()
                        .enumerate()
                        .filter(|(n, l)| *n == 3 || !l.starts_with(&format!("{key} =")))
                        .map(|(_, l)| format!("{l}\n"))
                        .collect();
                    std::fs::write(&p, text).unwrap();
                    p.into()
                }
                a if a.starts_with("F:") => {
                    let p = inputs.join(format!("{}.json", &a[2..]));
                    std::fs::write(&p, bad_result(&a[2..], &valid)).unwrap();
                    p.into()
                }
                a => a.into(),
            };
            args.push(a);
        }
        let mut cmd = command(&args.iter().map(|a| a.as_os_str()).collect::<Vec<_>>(), None);
        cmd.current_dir(&cwd);
        for (k, val) in &c.env {
            cmd.env(k, val);
        }
        let out = cmd.output().unwrap();
        let o = Out {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        let lines = o.lines();
        let mut why = Vec::new();
        if o.code != Some(2) {
            why.push("exit is not 2");
        }
        if lines.len() != 1 {
            why.push("not exactly one stderr line");
        }
        if !lines.first().is_some_and(|l| l.starts_with("manyfiles: ")) {
            why.push("stderr does not start with 'manyfiles: '");
        }
        if !lines.first().is_some_and(|l| l.contains(&c.names)) {
            why.push("the line does not name the flag/key/variable");
        }
        if !o.stdout.is_empty() {
            why.push("stdout not empty");
        }
        // Inputs written for this case are expected; anything else is not.
        let now: Vec<_> = listing(root).into_iter().filter(|(p, _)| !p.starts_with(inputs.to_str().unwrap())).collect();
        let was: Vec<_> = before.iter().filter(|(p, _)| !p.starts_with(inputs.to_str().unwrap())).cloned().collect();
        if now != was {
            why.push("something was created or changed");
            let _ = std::fs::remove_dir_all(outd.join("new"));
            for e in std::fs::read_dir(&tgt).unwrap().flatten() {
                let _ = std::fs::remove_dir_all(e.path());
            }
            for e in std::fs::read_dir(&cwd).unwrap().flatten() {
                let _ = std::fs::remove_dir_all(e.path()).or_else(|_| std::fs::remove_file(e.path()));
            }
        }
        if !why.is_empty() {
            unclean.push(format!(
                "{:?} env {:?} (must name {}): {}\n{}",
                c.args,
                c.env,
                c.names,
                why.join(", "),
                o.show()
            ));
        }
    }
    eprintln!("bad input table: {} cases, {} unclean", cases.len(), unclean.len());
    assert!(cases.len() >= 200, "{} cases", cases.len());
    assert!(unclean.is_empty(), "{} of {} unclean:\n{}", unclean.len(), cases.len(), unclean.join("\n"));
}

/// `--json /dev/stdout` (and `--markdown`, `/dev/fd/1`) into a pipe: /dev/stdout leads to
/// `/proc/self/fd/1 -> pipe:[N]`, which names no path; the output goes to the descriptor.
/// Exit 0, the document (only) on the pipe.
#[test]
fn reliability_outputs_to_dev_stdout_pipe() {
    let t = tempfile::tempdir().unwrap();
    let good = t.path().join("good.json");
    let o = run_bounded(
        &[
            "ladder",
            "--target",
            t.path().to_str().unwrap(),
            "--total",
            "64k",
            "--to",
            "16",
            "--runs",
            "2",
            "-q",
            "--json",
            good.to_str().unwrap(),
        ],
        LIMIT,
        None,
    );
    assert_eq!(o.code, Some(0), "{}", o.show());
    let g = good.to_str().unwrap();
    for (flag, path) in [("--json", "/dev/stdout"), ("--json", "/dev/fd/1"), ("--markdown", "/dev/stdout")] {
        let o = run_bounded(&["report", g, flag, path], LIMIT, None);
        assert_eq!(o.code, Some(0), "{flag} {path}: {}", o.show());
        if flag == "--json" {
            let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{flag} {path}: {e}"));
            assert_eq!(v["schema"], 1);
        } else {
            // The Markdown mark first (so `--markdown` may replace the file later), then the heading.
            assert!(o.stdout.starts_with("<!-- written by manyfiles"), "{}", o.show());
            assert!(o.stdout.lines().nth(1).is_some_and(|l| l.starts_with("## manyfiles")), "{}", o.show());
        }
    }
}
