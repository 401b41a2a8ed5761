//! The house's size limits, counted (issue 39): no file in src/ over 800 lines, no
//! function over 150. Functions are measured as `../shared/tools/fnlen.py` measures them
//! (from the `fn` line to its closing brace, braces counted outside strings, character
//! literals and comments), here in Rust so the test needs nothing beside the repository.

use std::path::{Path, PathBuf};

/// Lines a source file may have.
const FILE_LIMIT: usize = 800;
/// Lines a function may have.
const FN_LIMIT: usize = 150;

/// One function: where it starts and how many lines it spans.
#[derive(Debug, PartialEq)]
struct Function {
    name: String,
    start: usize,
    lines: usize,
}

/// Every `.rs` file below `dir`, in name order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
    out
}

/// The name of the function a line starts (`pub(crate) const unsafe fn name`), if any.
fn fn_name(line: &str) -> Option<String> {
    let mut rest = line.trim_start();
    // An optional `pub` or `pub(…)`, then whitespace.
    if let Some(r) = rest.strip_prefix("pub") {
        let r = match r.strip_prefix('(') {
            Some(inner) => &inner[inner.find(')')? + 1..],
            None => r,
        };
        if r.starts_with(char::is_whitespace) {
            rest = r.trim_start();
        }
    }
    // Any of `const`, `async`, `unsafe`, `extern "ABI"`, each followed by whitespace.
    loop {
        let after = ["const", "async", "unsafe"].iter().find_map(|q| rest.strip_prefix(q)).or_else(|| {
            let r = rest.strip_prefix("extern").filter(|r| r.starts_with(char::is_whitespace))?;
            let r = r.trim_start().strip_prefix('"')?;
            Some(&r[r.find('"')? + 1..])
        });
        match after {
            Some(r) if r.starts_with(char::is_whitespace) => rest = r.trim_start(),
            _ => break,
        }
    }
    let r = rest.strip_prefix("fn")?;
    if !r.starts_with(char::is_whitespace) {
        return None;
    }
    let name: String = r.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty()).then_some(name)
}

/// Where a line ends: in code, in a block comment, or in a string.
#[derive(Clone, Copy, PartialEq)]
enum In {
    Code,
    Comment,
    Str,
}

/// The code of `line` without comments, strings and character literals.
fn strip(line: &str, state: &mut In) -> String {
    let b: Vec<char> = line.chars().collect();
    let at = |i: usize, s: &str| s.chars().enumerate().all(|(k, c)| b.get(i + k) == Some(&c));
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match *state {
            In::Comment => {
                if at(i, "*/") {
                    *state = In::Code;
                    i += 2;
                } else {
                    i += 1;
                }
                continue;
            }
            In::Str => {
                if c == '\\' {
                    i += 2;
                    continue;
                }
                if c == '"' {
                    *state = In::Code;
                }
                i += 1;
                continue;
            }
            In::Code => {}
        }
        if at(i, "//") {
            break;
        }
        if at(i, "/*") {
            *state = In::Comment;
            i += 2;
            continue;
        }
        if c == '"' {
            *state = In::Str;
            i += 1;
            continue;
        }
        if c == '\'' {
            // 'x' or '\x' (a lifetime's quote is code).
            if b.get(i + 1) == Some(&'\\') && b.len() > i + 3 && b[i + 3] == '\'' {
                i += 4;
                continue;
            }
            if b.get(i + 1).is_some_and(|&x| x != '\\' && x != '\'') && b.get(i + 2) == Some(&'\'') {
                i += 3;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Every function of a file's text with its length (nested ones too).
fn functions(text: &str) -> Vec<Function> {
    let mut found = Vec::new();
    let mut state = In::Code;
    // A function seen, not closed yet: (name, first line, brace depth at its `fn`).
    type Open = (String, usize, i64);
    let (mut depth, mut open, mut pending): (i64, Vec<Open>, Option<Open>) = (0, Vec::new(), None);
    for (n, line) in text.split('\n').enumerate().map(|(i, l)| (i + 1, l)) {
        let name = if state == In::Code { fn_name(line) } else { None };
        let code = strip(line, &mut state);
        if let Some(name) = name {
            pending = Some((name, n, depth));
        }
        for c in code.chars() {
            if c == ';' && pending.as_ref().is_some_and(|p| p.2 == depth) {
                pending = None; // a declaration without a body
            }
            if c == '{' {
                if pending.as_ref().is_some_and(|p| p.2 == depth) {
                    open.extend(pending.take());
                }
                depth += 1;
            } else if c == '}' {
                depth -= 1;
                if open.last().is_some_and(|f| f.2 == depth) {
                    let (name, start, _) = open.pop().unwrap();
                    found.push(Function { name, start, lines: n - start + 1 });
                }
            }
        }
    }
    found
}

/// What is over the limits below `dir`: files over [`FILE_LIMIT`] lines, functions over
/// [`FN_LIMIT`], one line each.
fn over_limits(dir: &Path) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut over = Vec::new();
    for p in rust_files(dir) {
        let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        let rel = p.strip_prefix(&root).unwrap_or(&p).display().to_string();
        let lines = text.matches('\n').count();
        if lines > FILE_LIMIT {
            over.push(format!("{rel}: {lines} lines (limit {FILE_LIMIT})"));
        }
        for f in functions(&text).into_iter().filter(|f| f.lines > FN_LIMIT) {
            over.push(format!("{rel}:{} `{}`: {} lines (limit {FN_LIMIT})", f.start, f.name, f.lines));
        }
    }
    over
}

fn src(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(sub)
}

/// The whole of src/: the house's limits (issue 39).
#[test]
fn no_src_file_over_800_lines_and_no_function_over_150() {
    let over = over_limits(&src(""));
    assert!(over.is_empty(), "over the house's limits:\n{}", over.join("\n"));
}

/// The rooms already within the limits: the engines, the ops and the result model.
#[test]
fn engines_ops_and_results_hold_the_limits() {
    for sub in ["engine", "ops", "results"] {
        let over = over_limits(&src(sub));
        assert!(over.is_empty(), "src/{sub} is over the house's limits:\n{}", over.join("\n"));
    }
}

#[test]
fn functions_are_counted_from_fn_to_closing_brace() {
    let text = r#"
pub(crate) const fn a() -> u8 {
    let s = "}}}"; // }
    let c = '}';
    /* } */
    fn inner<'a>(x: &'a str) -> &'a str {
        x
    }
    0
}
trait T {
    fn declared(&self);
    unsafe fn b(&self) {}
}
pub fn c() {
    let _ = "a string
    across lines }";
}
"#;
    let got: Vec<(String, usize, usize)> = functions(text).into_iter().map(|f| (f.name, f.start, f.lines)).collect();
    assert_eq!(got, vec![("inner".into(), 6, 3), ("a".into(), 2, 9), ("b".into(), 13, 1), ("c".into(), 15, 4)]);
    assert_eq!(fn_name("    pub async fn go(x: u8) {"), Some("go".into()));
    assert_eq!(fn_name(r#"extern "C" fn cb() {"#), Some("cb".into()));
    assert_eq!(fn_name("let fnord = 1;"), None);
    assert_eq!(fn_name("pub(super) fn x()"), Some("x".into()));
}
