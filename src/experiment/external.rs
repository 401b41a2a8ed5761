//! External tools as ops (`--cmd NAME='TEMPLATE'`): the user's own copier (cp, rsync,
//! tar, rclone, ...) run on the same generated trees and targets as the built-in ops.
//! Timed as a whole process: wall clock from spawn to exit, and the child's user and
//! system CPU and peak RSS from wait4's rusage. Afterwards DST is compared with SRC
//! (names, kinds, sizes, symlink targets; contents with --verify): a tool that failed or
//! produced a wrong tree gets an error, so its run stays out of the statistics.

use crate::engine::copy::verify::{self, Checks};
use crate::measure::{Latency, PhaseResult, Portion};
use crate::ops::copy::failed_result;
use crate::ops::registry::PairOp;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One `--cmd NAME=TEMPLATE`: the template is split into words like a shell would
/// (quotes and backslashes), then `{src}` and `{dst}` are replaced in every word. No
/// shell runs unless the template asks for one (`sh -c "..."`).
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalCmd {
    pub name: String,
    pub template: String,
    pub words: Vec<String>,
    /// Compare contents too afterwards.
    pub verify: bool,
}

impl ExternalCmd {
    /// Parse `NAME=TEMPLATE`; errors are reasons for `--cmd`.
    pub fn parse(s: &str) -> Result<ExternalCmd, String> {
        let (name, template) =
            s.split_once('=').ok_or_else(|| format!("'{s}': expected NAME='COMMAND {{src}} {{dst}}'"))?;
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(format!("'{name}': a name is letters, digits, - and _"));
        }
        let words = split_words(template)?;
        if words.is_empty() {
            return Err(format!("{name}: empty command"));
        }
        if !template.contains("{src}") || !template.contains("{dst}") {
            return Err(format!("{name}: the command must name {{src}} and {{dst}}"));
        }
        Ok(ExternalCmd { name: name.to_string(), template: template.to_string(), words, verify: false })
    }

    /// The command line for one run.
    pub fn argv(&self, src: &Path, dst: &Path) -> Vec<String> {
        let (s, d) = (src.display().to_string(), dst.display().to_string());
        self.words.iter().map(|w| w.replace("{src}", &s).replace("{dst}", &d)).collect()
    }
}

/// Split like a POSIX shell does words: '...' literal, "..." with \" and \\, \x outside.
fn split_words(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut it = s.chars();
    while let Some(c) = it.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match it.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err("unterminated ' quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match it.next() {
                        Some('"') => break,
                        Some('\\') => match it.next() {
                            Some(x @ ('"' | '\\' | '$' | '`')) => cur.push(x),
                            Some(x) => {
                                cur.push('\\');
                                cur.push(x)
                            }
                            None => return Err("unterminated \" quote".into()),
                        },
                        Some(x) => cur.push(x),
                        None => return Err("unterminated \" quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(x) = it.next() {
                    cur.push(x)
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c)
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// What wait4 reports about a finished child.
struct Exit {
    status: i32,
    wall_s: f64,
    user_s: f64,
    sys_s: f64,
    max_rss_bytes: u64,
}

/// Wait for `pid` with wait4 (its own rusage, not every child's), on this thread.
fn wait4(pid: i32, start: Instant) -> std::io::Result<Exit> {
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: status and ru are valid and writable; pid is our own child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
    let wall_s = start.elapsed().as_secs_f64();
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(Exit {
        status,
        wall_s,
        user_s: tv(ru.ru_utime),
        sys_s: tv(ru.ru_stime),
        max_rss_bytes: ru.ru_maxrss as u64 * 1024,
    })
}

impl PairOp for ExternalCmd {
    fn name(&self) -> String {
        format!("cmd:{}", self.name)
    }

    fn run(&self, src: &Path, dst: &Path, _plan: crate::engine::inflight::Plan) -> PhaseResult {
        let argv = self.argv(src, dst);
        let start = Instant::now();
        let mut child = match Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => return failed_result(format!("{}: cannot start {}: {e}", self.name, argv[0])),
        };
        let pid = child.id() as i32;
        // Keep the last few KiB of stderr for the failure message (reading it also keeps
        // a chatty tool from blocking on a full pipe).
        let tail = crate::helper::Tail::spawn(child.stderr.take().expect("piped"));
        // wait4 on a helper thread (it returns the moment the child exits: exact wall
        // time); this thread forwards a SIGINT/SIGTERM to the tool.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(wait4(pid, start));
        });
        let exit = loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(r) => break r,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if crate::signals::pending() != 0 {
                        // SAFETY: pid is our unreaped child.
                        unsafe { libc::kill(pid, libc::SIGTERM) };
                    }
                }
                Err(e) => break Err(std::io::Error::other(e.to_string())),
            }
        };
        drop(child); // already reaped by wait4; dropping does not wait
        // A tool that left a daemon holding its stderr does not hold us: a moment's grace.
        let tail = tail.text(Duration::from_millis(200)).trim().to_string();
        let exit = match exit {
            Ok(x) => x,
            Err(e) => return failed_result(format!("{}: wait: {e}", self.name)),
        };
        if crate::signals::pending() != 0 {
            return PhaseResult { interrupted: true, ..failed_result(format!("{}: interrupted", self.name)) };
        }
        let mut r = PhaseResult {
            elapsed_s: exit.wall_s,
            threads: 1,
            cpu_user_s: exit.user_s,
            cpu_sys_s: exit.sys_s,
            first_finish_s: exit.wall_s,
            last_finish_s: exit.wall_s,
            latency_us: Latency::default(),
            peak_rss_bytes: Some(exit.max_rss_bytes),
            ..PhaseResult::default()
        };
        let code = if libc::WIFEXITED(exit.status) { libc::WEXITSTATUS(exit.status) } else { -1 };
        if code != 0 {
            let last = tail.lines().last().unwrap_or("");
            r.errors = 1;
            r.first_error = Some(format!("{} exited with {code}: {last}", self.name));
            return r;
        }
        // Durable: flush what it wrote before anything else touches the tree.
        super::make_durable(&mut r, dst);
        // Check the tree it made (untimed).
        let v = verify::compare(src, dst, &Checks { content: self.verify, meta: false }, 2);
        r.files = v.files;
        r.dirs = v.dirs;
        r.bytes = v.bytes;
        let returned = r.returned_s.unwrap_or(exit.wall_s);
        let whole = vec![Portion { files: v.files, elapsed_s: returned, end_files: v.files }];
        r.portions = crate::ops::with_flush(whole, r.flush_s);
        if !v.ok() {
            r.errors = v.differences;
            r.first_error = Some(format!(
                "{} produced a wrong tree ({} differences), e.g. {}",
                self.name,
                v.differences,
                v.examples.first().cloned().unwrap_or_default()
            ));
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_a_shell() {
        let c = ExternalCmd::parse(r#"tar=sh -c "tar -C {src} -cf - . | tar -C {dst} -xf -""#).unwrap();
        assert_eq!(c.words, vec!["sh", "-c", "tar -C {src} -cf - . | tar -C {dst} -xf -"]);
        assert_eq!(c.argv(Path::new("/a b"), Path::new("/d"))[2], "tar -C /a b -cf - . | tar -C /d -xf -");
        let c = ExternalCmd::parse("cp=cp -a '{src}/.' {dst}").unwrap();
        assert_eq!(c.words, vec!["cp", "-a", "{src}/.", "{dst}"]);
        assert!(ExternalCmd::parse("x=cp {src}").unwrap_err().contains("{dst}"));
        assert!(ExternalCmd::parse("bad name=cp {src} {dst}").is_err());
        assert!(ExternalCmd::parse("cp='cp {src} {dst}").unwrap_err().contains("unterminated"));
        assert!(ExternalCmd::parse("nothing").is_err());
    }

    #[test]
    fn times_a_process_and_checks_its_tree() {
        let t = tempfile::tempdir().unwrap();
        let (s, d) = (t.path().join("s"), t.path().join("d"));
        std::fs::create_dir_all(s.join("sub")).unwrap();
        std::fs::write(s.join("sub/f"), b"abc").unwrap();
        std::fs::create_dir(&d).unwrap();
        let good = ExternalCmd::parse("cp=cp -a {src}/. {dst}").unwrap();
        let r = good.run(&s, &d, crate::engine::inflight::Plan::Fixed(1));
        assert!(r.complete(), "{r:?}");
        assert_eq!((r.files, r.bytes, r.dirs), (1, 3, 1));
        assert!(r.peak_rss_bytes.unwrap() > 0 && r.elapsed_s > 0.0);
        std::fs::remove_dir_all(&d).unwrap();
        std::fs::create_dir(&d).unwrap();
        // Exits 0 but copies nothing: a wrong tree, reported as an error.
        let lazy = ExternalCmd::parse("lazy=true {src} {dst}").unwrap();
        let r = lazy.run(&s, &d, crate::engine::inflight::Plan::Fixed(1));
        assert!(!r.complete() && r.first_error.unwrap().contains("wrong tree"));
        let fails = ExternalCmd::parse("f=false {src} {dst}").unwrap();
        assert!(
            fails.run(&s, &d, crate::engine::inflight::Plan::Fixed(1)).first_error.unwrap().contains("exited with 1")
        );
    }
}
