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
        (vec!["run".into(), p.into_os_string()], true)
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
