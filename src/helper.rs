//! External helper programs (mkfs.*, mount, umount, losetup, ntfs-3g, exfat-fuse, ...)
//! run so that none can hang the tool: stdin from /dev/null, stdout and stderr drained
//! by threads that keep only the last few KiB (a flood costs no memory, a full pipe never
//! blocks the helper), the exit waited for with a deadline and with an eye on
//! SIGINT/SIGTERM, and the helper's whole process group killed when either comes first.
//!
//! Why not `Command::output()`: it waits for end of file on the pipes, which never comes
//! when a helper daemonises with its stdio still open (a FUSE mount whose daemon
//! inherited them), and it has no deadline.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Default deadline for one helper: generous for mkfs of a large image on a slow disk,
/// short enough that a hung helper is noticed. `MANYFILES_HELPER_TIMEOUT` (seconds)
/// overrides it, for every helper.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Extra time per GiB for helpers whose work grows with the image (mkfs, image copies).
pub const PER_GIB: Duration = Duration::from_secs(10);

/// The deadline for a helper working over `bytes` of image.
pub fn timeout_for(bytes: u64) -> Duration {
    if let Some(t) = env_timeout() {
        return t;
    }
    DEFAULT_TIMEOUT + PER_GIB * (bytes >> 30) as u32
}

fn env_timeout() -> Option<Duration> {
    parse_env_timeout(&std::env::var_os("MANYFILES_HELPER_TIMEOUT")?).ok()
}

fn parse_env_timeout(v: &std::ffi::OsStr) -> Result<Duration, String> {
    let text = v.to_string_lossy();
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 1e9)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("MANYFILES_HELPER_TIMEOUT: must be a number of seconds above 0, not '{text}'"))
}

/// Refuse a `MANYFILES_HELPER_TIMEOUT` that is set but not a number of seconds (checked
/// at start, before anything is made, rather than ignored when a helper runs).
pub fn check_env() -> Result<(), String> {
    match std::env::var_os("MANYFILES_HELPER_TIMEOUT") {
        None => Ok(()),
        Some(v) => parse_env_timeout(&v).map(|_| ()),
    }
}

/// How a helper run ended, when it did not succeed.
#[derive(Debug, Clone, PartialEq)]
pub enum HelperError {
    /// Could not be started (not found, not executable).
    Start(String),
    /// Exited non-zero or was killed by a signal: the command and its last line of output.
    Failed(String),
    /// Still running at the deadline: its process group was killed.
    TimedOut(String),
    /// SIGINT/SIGTERM arrived while waiting: the helper's group was killed.
    Interrupted(i32),
}

impl std::fmt::Display for HelperError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HelperError::Start(m) | HelperError::Failed(m) | HelperError::TimedOut(m) => f.write_str(m),
            HelperError::Interrupted(sig) => write!(f, "interrupted by signal {sig} while waiting for a helper"),
        }
    }
}

/// The last bytes a pipe carried, collected by a thread that reads it to its end. The
/// thread ends when every holder of the pipe's write end has closed it (for a daemon
/// that kept it: when the daemon exits); nobody waits for that.
pub struct Tail {
    buf: Arc<Mutex<Vec<u8>>>,
    done: std::sync::mpsc::Receiver<()>,
}

impl Tail {
    const KEEP: usize = 8192;

    pub fn spawn(mut pipe: impl Read + Send + 'static) -> Tail {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = std::sync::mpsc::channel();
        let shared = Arc::clone(&buf);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 16384];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                let mut b = shared.lock().unwrap_or_else(|p| p.into_inner());
                b.extend_from_slice(&chunk[..n]);
                if b.len() > 2 * Self::KEEP {
                    let cut = b.len() - Self::KEEP;
                    b.drain(..cut);
                }
            }
            let _ = tx.send(());
        });
        Tail { buf, done }
    }

    /// What was read so far, after waiting at most `grace` for the end of the pipe
    /// (a short grace lets the output of a helper that just exited arrive).
    pub fn text(&self, grace: Duration) -> String {
        let _ = self.done.recv_timeout(grace);
        let b = self.buf.lock().unwrap_or_else(|p| p.into_inner());
        let start = b.len().saturating_sub(Self::KEEP);
        String::from_utf8_lossy(&b[start..]).into_owned()
    }
}

/// Last non-empty line of `err`, else of `out`.
fn last_line(err: &str, out: &str) -> String {
    err.lines().chain(out.lines()).rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string()
}

/// Both outputs of a helper whatever its exit status (empty when it could not run or
/// was killed): for tools that print a version on stderr or exit non-zero after it.
pub fn run_output(argv: &[String], timeout: Duration) -> (String, String) {
    match spawn_and_wait(argv, timeout) {
        Ok((_, out, err)) => (out, err),
        Err(_) => (String::new(), String::new()),
    }
}

/// Run `argv` with the default deadline; Ok(stdout) or why not.
pub fn run(argv: &[String]) -> Result<String, HelperError> {
    run_with(argv, env_timeout().unwrap_or(DEFAULT_TIMEOUT))
}

/// Run `argv` with a deadline. The helper gets its own process group (a Ctrl-C at the
/// terminal reaches the tool, which then ends the helper itself, not half-way through
/// on its own), stdin from /dev/null and drained pipes.
pub fn run_with(argv: &[String], timeout: Duration) -> Result<String, HelperError> {
    let (status, stdout, stderr) = spawn_and_wait(argv, timeout)?;
    if status.success() {
        return Ok(stdout);
    }
    let said = last_line(&stderr, &stdout);
    Err(HelperError::Failed(format!("`{}` failed ({status}): {said}", argv.join(" "))))
}

/// The exit status and the tails of stdout and stderr, or why there are none.
fn spawn_and_wait(
    argv: &[String],
    timeout: Duration,
) -> Result<(std::process::ExitStatus, String, String), HelperError> {
    let shown = argv.join(" ");
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| HelperError::Start(format!("cannot run {}: {e}", argv[0])))?;
    let out = Tail::spawn(child.stdout.take().expect("piped"));
    let err = Tail::spawn(child.stderr.take().expect("piped"));
    let pgid = child.id() as i32;
    let start = Instant::now();
    // A signal that arrived before the helper started (teardown after Ctrl-C runs umount
    // and losetup -d) does not stop it: only one that comes while it runs.
    let signalled_before = crate::signals::pending();
    let mut nap = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) => return Err(HelperError::Failed(format!("`{shown}`: wait: {e}"))),
        }
        let sig = if signalled_before == 0 { crate::signals::pending() } else { 0 };
        let late = start.elapsed() >= timeout;
        if sig != 0 || late {
            kill_group(pgid);
            let _ = child.wait();
            if sig != 0 {
                return Err(HelperError::Interrupted(sig));
            }
            let said = last_line(&err.text(Duration::from_millis(200)), &out.text(Duration::ZERO));
            return Err(HelperError::TimedOut(format!(
                "`{shown}` did not finish within {:.0} s and was killed{}",
                timeout.as_secs_f64(),
                if said.is_empty() { String::new() } else { format!("; it last said: {said}") }
            )));
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(25));
    };
    // A helper that exited may have left a daemon holding the pipes (FUSE): take what
    // arrived within a moment and go on.
    let grace = Duration::from_millis(100);
    Ok((status, out.text(grace), err.text(grace)))
}

/// SIGKILL to the helper's process group (what it forked too, unless that left the group).
fn kill_group(pgid: i32) {
    // SAFETY: kill with a negative pid signals a process group; no memory is involved.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    #[test]
    fn success_returns_stdout_and_failure_the_last_line() {
        assert_eq!(run(&sh("echo hello")).unwrap(), "hello\n");
        let e = run(&sh("echo first >&2; echo 'the reason' >&2; exit 3")).unwrap_err();
        assert!(matches!(&e, HelperError::Failed(m) if m.ends_with("the reason")), "{e}");
        assert!(matches!(run(&["/nonexistent/tool".to_string()]), Err(HelperError::Start(_))));
    }

    #[test]
    fn a_helper_past_its_deadline_is_killed_with_its_children() {
        let t = Instant::now();
        let e = run_with(&sh("echo starting >&2; sleep 300 & sleep 300"), Duration::from_millis(300)).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert!(matches!(&e, HelperError::TimedOut(m) if m.contains("starting")), "{e}");
    }

    #[test]
    fn a_daemon_keeping_the_pipes_does_not_hold_the_caller() {
        // The child exits at once; its background grandchild keeps stdout and stderr open.
        let t = Instant::now();
        let out = run_with(&sh("echo ready; (sleep 30 &) ; exit 0"), Duration::from_secs(10)).unwrap();
        assert_eq!(out, "ready\n");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }

    #[test]
    fn a_flood_of_output_keeps_only_the_tail() {
        let out = run(&sh("head -c 50000000 /dev/zero | tr '\\0' x; echo; echo end")).unwrap();
        assert!(out.len() <= Tail::KEEP, "{}", out.len());
        assert!(out.ends_with("end\n"));
    }
}
