//! The safety invariant harness (issue 38): instead of a list of cases, random topologies
//! — bind mounts, overlayfs, tmpfs, symlinks and FIFOs at every depth, SRC and DST
//! overlapping in every way, renamed parents, busy and nested mounts — and every command
//! that writes run against them. After each command:
//! - nothing outside what it was told to write changed: a snapshot of the whole scratch
//!   root (mounts included: kind, mode, owner, size, content hash, inode, file mtime, link
//!   target) before and after, every difference matched against the command's allowed
//!   roots and their aliases, less the mount points below them;
//! - a copy added no more entries than SRC had (a copy into itself is caught by its count);
//! - it ended within its deadline, with exit 0, 1 or 2 (no panic), no output line over 8 KiB;
//! - nothing was left: no mount, loop device, registry record or process naming the scratch root.
//!
//! Seeded: `MANYFILES_INVARIANT_SEEDS=N` topologies (default 300) from
//! `MANYFILES_INVARIANT_FIRST` (default 0); a failure prints the seed, the topology and the
//! command, and `MANYFILES_INVARIANT_FIRST=K MANYFILES_INVARIANT_SEEDS=1` replays it.
//! `MANYFILES_INVARIANT_COMMANDS=copy,rm` runs some commands only;
//! `MANYFILES_INVARIANT_VERBOSE=1` prints every command with its exit code;
//! `MANYFILES_INVARIANT_BIN=PATH` runs another build's binary. Needs root (mounts).

mod cases;
mod reproductions;
mod snapshot;
mod topology;
mod umount_case;

use cases::{Case, resolved};
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(60);
const MAX_LINE: usize = 8 * 1024;

pub struct Ran {
    pub code: Option<i32>,
    pub stderr: String,
    pub stdout: String,
    pub timed_out: bool,
    /// Wall time from spawn to exit (or to the kill).
    pub secs: f64,
}

/// The binary under test: this build's, or `MANYFILES_INVARIANT_BIN` (to run the same
/// topologies against another build, e.g. the one before a change).
fn bin() -> PathBuf {
    std::env::var_os("MANYFILES_INVARIANT_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_manyfiles")), PathBuf::from)
}

/// A small ladder's results file, made once, for the report command's cases.
pub fn sample_results() -> PathBuf {
    static MADE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    MADE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("mf-inv-sample-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let json = dir.join("sample.json");
        let mut a: Vec<&OsStr> =
            std::iter::once("ladder").chain(cases::TINY_LADDER.iter().copied()).map(OsStr::new).collect();
        a.extend([OsStr::new("--target"), dir.as_os_str(), OsStr::new("--json"), json.as_os_str()]);
        let r = run_bin(&a, &dir);
        assert_eq!(r.code, Some(0), "the sample ladder: {}", r.stderr);
        json
    })
    .clone()
}

fn state_home() -> PathBuf {
    std::env::temp_dir().join(format!("mf-inv-state-{}", std::process::id()))
}

/// Run the binary in `cwd` under the deadline; killed (its process group) past it.
pub fn run_bin(args: &[&OsStr], cwd: &Path) -> Ran {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(bin());
    c.args(args)
        .current_dir(cwd)
        .env("XDG_STATE_HOME", state_home())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = c.spawn().expect("spawn manyfiles");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let o = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > DEADLINE {
            // SAFETY: kill(2) on the child's own process group.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            timed_out = true;
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stdout = String::from_utf8_lossy(&o.join().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&e.join().unwrap()).into_owned();
    Ran { code: status.and_then(|s| s.code()), stderr, stdout, timed_out, secs: start.elapsed().as_secs_f64() }
}

/// Every mount point of this mount namespace.
pub fn mount_points() -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines().filter_map(|l| l.split(' ').nth(4)).map(|f| PathBuf::from(f.replace("\\040", " "))).collect()
}

/// What a command could leave behind, as lines naming the scratch root: mounts below it,
/// registry records and loop devices naming it, processes working in it or naming it.
fn leftovers(root: &Path, except: &[u32]) -> Vec<String> {
    // With a slash: `s1-sync` is not to match `s1-sync-delete`, another job's root.
    let r = format!("{}/", root.to_string_lossy());
    let mut v: Vec<String> = mount_points()
        .into_iter()
        .filter(|p| p.starts_with(root) && p != root)
        .map(|p| format!("mount {}", p.display()))
        .collect();
    if let Ok(rd) = std::fs::read_dir("/run/manyfiles") {
        for e in rd.flatten() {
            if std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains(&r)) {
                v.push(format!("record {}", e.path().display()));
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir("/sys/block") {
        for e in rd.flatten() {
            let bf = e.path().join("loop/backing_file");
            if std::fs::read_to_string(&bf).is_ok_and(|t| t.contains(&r)) {
                v.push(format!("loop device {}", e.file_name().to_string_lossy()));
            }
        }
    }
    let me = std::process::id();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
            if pid == me || except.contains(&pid) {
                continue;
            }
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cwd = std::fs::read_link(e.path().join("cwd")).unwrap_or_default();
            let named = String::from_utf8_lossy(&cmd).split('\0').any(|a| a.starts_with(&r) || a == &r[..r.len() - 1]);
            if named || cwd.starts_with(root) {
                v.push(format!("process {pid}: {}", String::from_utf8_lossy(&cmd).replace('\0', " ")));
            }
        }
    }
    v.sort();
    v
}

/// Is the change at `p` one the command was told to make?
fn allowed(t: &topology::Topology, case: &Case, p: &Path, what: &str) -> bool {
    let aliases = t.aliases(p);
    if aliases.iter().any(|a| case.exact.contains(a)) {
        return true;
    }
    // A directory made on the way to an allowed root (DST's parent that did not exist,
    // an overlay copying a lower directory up to write below it).
    if case.may_mkdir_above && what == "added" && case.allowed.iter().any(|r| r.starts_with(p)) {
        return true;
    }
    if case.may_mkdir_above
        && what.starts_with("changed")
        && aliases.iter().any(|a| case.allowed.iter().any(|r| r.starts_with(a) && r != a))
    {
        return true; // an overlay copy-up of a directory on the way (its mode/owner as the lower's)
    }
    aliases.iter().any(|a| {
        case.allowed.iter().any(|root| a.starts_with(root) && !t.mounts_below(root).iter().any(|m| a.starts_with(m)))
    })
}

/// Check one command's run against its case; violations as lines.
fn judge(
    t: &topology::Topology,
    case: &Case,
    before: &snapshot::Snap,
    after: &snapshot::Snap,
    ran: &Ran,
) -> Vec<String> {
    let mut v = Vec::new();
    if ran.timed_out {
        v.push(format!("hang: still running after {} s (killed)", DEADLINE.as_secs()));
    }
    if !ran.timed_out && !matches!(ran.code, Some(0..=2)) {
        v.push(format!("exit {:?} (0, 1 or 2 expected): {}", ran.code, ran.stderr.lines().last().unwrap_or("")));
    }
    for line in ran.stderr.lines().chain(ran.stdout.lines()) {
        if line.len() > MAX_LINE {
            v.push(format!("an output line of {} bytes: {}…", line.len(), line.chars().take(200).collect::<String>()));
            break;
        }
    }
    let changes = snapshot::diff(before, after);
    let mut bad: Vec<String> = changes
        .iter()
        .filter(|(p, what)| !allowed(t, case, p, what))
        .map(|(p, what)| format!("{}: {what}", t.rel(p)))
        .collect();
    if let Some(src) = &case.protected {
        let dst_inside: Vec<PathBuf> =
            case.allowed.iter().filter(|a| a.starts_with(src) && *a != src).cloned().collect();
        for (p, what) in &changes {
            let al = t.aliases(p);
            let in_src = al.iter().any(|a| a.starts_with(src));
            let in_dst = al.iter().any(|a| dst_inside.iter().any(|d| a.starts_with(d)));
            if in_src && !in_dst {
                bad.push(format!("{}: {what} (inside SRC)", t.rel(p)));
            }
        }
    }
    bad.sort();
    bad.dedup();
    if !bad.is_empty() {
        let n = bad.len();
        bad.truncate(12);
        v.push(format!("changed outside what it was told to write ({n}):\n      {}", bad.join("\n      ")));
    }
    if let Some((dst, most)) = &case.max_new {
        // DST's own entries: a mount below DST (a bind mount of DST inside itself) shows
        // them again, and what changes in a mount below is judged above already.
        let below = t.mounts_below(dst);
        let added = changes
            .iter()
            .filter(|(p, w)| w == "added" && p.starts_with(dst) && !below.iter().any(|m| p.starts_with(m)))
            .count();
        if added > *most {
            v.push(format!("{added} entries added below DST, SRC had {most}: a copy into itself?"));
        }
    }
    v
}

struct Tally {
    /// Seconds per command (the run, snapshots and checks).
    per_command: std::collections::BTreeMap<&'static str, f64>,
    runs: usize,
    checked_paths: usize,
    violations: Vec<String>,
}

fn one(base: &Path, seed: u64, cmd_index: usize, name: &'static str, tally: &mut Tally) {
    let root = base.join(format!("s{seed}-{name}"));
    let mut t = topology::Topology::build(&root, seed);
    let mut rng = topology::Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(cmd_index as u64));
    let case = cases::make(name, &mut t, &mut rng);
    let c = run_and_judge(t, case, |_, _| Vec::new());
    tally.runs += 1;
    tally.checked_paths += c.paths;
    if std::env::var_os("MANYFILES_INVARIANT_VERBOSE").is_some() {
        eprintln!(
            "seed {seed} {name}: manyfiles {} → exit {:?} {}",
            c.shown,
            c.ran.code,
            c.ran.stderr.lines().last().unwrap_or("")
        );
    }
    if !c.violations.is_empty() {
        tally.violations.push(format!("seed {seed}, command {name}: {}", c.report()));
    }
}

/// One command run against its topology and judged; the topology is torn down.
pub struct Checked {
    pub ran: Ran,
    pub violations: Vec<String>,
    /// The command line, paths relative to the scratch root.
    pub shown: String,
    pub description: String,
    pub paths: usize,
}

impl Checked {
    pub fn report(&self) -> String {
        format!(
            "manyfiles {}\n  exit {:?} after {:.1} s; stderr: {}\n  topology: {}\n  {}",
            self.shown,
            self.ran.code,
            self.ran.secs,
            self.ran.stderr.trim().chars().take(600).collect::<String>(),
            self.description,
            self.violations.join("\n  ")
        )
    }
}

/// Snapshot the scratch root, run the case's command, snapshot again, judge every
/// difference and what is left behind (and `also`, a fixed case's own checks), then tear
/// the topology down.
pub fn run_and_judge(
    t: topology::Topology,
    mut case: Case,
    also: impl FnOnce(&topology::Topology, &Ran) -> Vec<String>,
) -> Checked {
    let root = t.root.clone();
    let busy: Vec<u32> = case.umount.as_ref().and_then(|u| u.busy.as_ref()).map(|c| vec![c.id()]).unwrap_or_default();
    let left_before = leftovers(&root, &busy);
    let before = snapshot::take(&root, &t.skip);
    let args: Vec<&OsStr> = case.args.iter().map(|a| a.as_os_str()).collect();
    let ran = run_bin(&args, &root);
    let after = snapshot::take(&root, &t.skip);
    let mut v = judge(&t, &case, &before, &after, &ran);
    v.extend(also(&t, &ran));
    let left_after = leftovers(&root, &busy);
    let umounted = case.umount.as_ref().map(|u| format!("mount {}", u.dir.display()));
    let new_left: Vec<&String> =
        left_after.iter().filter(|l| !left_before.contains(l) && Some(*l) != umounted.as_ref()).collect();
    if !new_left.is_empty() {
        v.push(format!("left behind: {new_left:?}"));
    }
    if let Some(u) = case.umount.as_mut() {
        umount_case::finish(&t, u, ran.code, &mut v);
    }
    let paths = before.len().max(after.len());
    let shown = args.iter().map(|a| t.rel(Path::new(a))).collect::<Vec<_>>().join(" ");
    let description = t.describe();
    t.teardown();
    let rest = leftovers(&root, &[]);
    forget_records(&root);
    if !rest.is_empty() {
        v.push(format!("left after teardown: {rest:?}"));
    }
    Checked { ran, violations: v, shown, description, paths }
}

/// The harness's own teardown of a `manyfiles mount` record that a failed umount left
/// (its mount went with the scratch root): so one violation is not counted again by
/// every later run. Only records naming this scratch root.
fn forget_records(root: &Path) {
    let r = format!("{}/", root.to_string_lossy());
    if let Ok(rd) = std::fs::read_dir("/run/manyfiles") {
        for e in rd.flatten() {
            if std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains(&r)) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

#[test]
fn nothing_outside_what_a_command_was_told_to_write_changes() {
    if !rustix::process::geteuid().is_root() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI runs as root: the harness mounts");
        eprintln!("skipped: the invariant harness needs root (it builds mount topologies)");
        return;
    }
    let seeds = env_num("MANYFILES_INVARIANT_SEEDS", 300);
    let first = env_num("MANYFILES_INVARIANT_FIRST", 0);
    let only = std::env::var("MANYFILES_INVARIANT_COMMANDS").ok();
    let commands: Vec<(usize, &'static str)> = cases::COMMANDS
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, c)| only.as_deref().is_none_or(|o| o.split(',').any(|x| x == *c)))
        .collect();
    let base = std::env::temp_dir().join(format!("mf-inv-{}", std::process::id()));
    std::fs::create_dir_all(&base).unwrap();
    let start = Instant::now();
    let jobs: Vec<(u64, usize, &'static str)> = (first..first + seeds)
        .flat_map(|seed| commands.iter().map(move |&(i, name)| (seed, i, name)))
        .filter(|&(seed, _, name)| name != "predict-on" || seed % cases::PREDICT_EVERY == 0)
        .collect();
    // Several at once: most of a command's time is waiting (a ladder's pauses, syncfs),
    // and each job has its own scratch root.
    let threads = env_num("MANYFILES_INVARIANT_JOBS", 3).max(1) as usize;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let tally = std::sync::Mutex::new(Tally {
        per_command: Default::default(),
        runs: 0,
        checked_paths: 0,
        violations: Vec::new(),
    });
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&(seed, i, name)) = jobs.get(k) else { break };
                    let mut mine =
                        Tally { per_command: Default::default(), runs: 0, checked_paths: 0, violations: Vec::new() };
                    let clock = Instant::now();
                    one(&base, seed, i, name, &mut mine);
                    let mut t = tally.lock().unwrap();
                    *t.per_command.entry(name).or_default() += clock.elapsed().as_secs_f64();
                    t.runs += mine.runs;
                    t.checked_paths += mine.checked_paths;
                    t.violations.extend(mine.violations);
                    if (k + 1) % 300 == 0 {
                        eprintln!(
                            "invariants: {} of {} runs, {} violations so far, {:.0} s",
                            k + 1,
                            jobs.len(),
                            t.violations.len(),
                            start.elapsed().as_secs_f64()
                        );
                    }
                }
            });
        }
    });
    let mut tally = tally.into_inner().unwrap();
    tally.violations.sort_by_key(|v| {
        let seed: u64 = v.split([' ', ',']).nth(1).and_then(|x| x.parse().ok()).unwrap_or(0);
        seed
    });
    let _ = std::fs::remove_dir_all(&base);
    let _ = std::fs::remove_dir_all(state_home());
    let _ = std::fs::remove_dir_all(sample_results().parent().unwrap());
    eprintln!(
        "invariants: {seeds} topologies (seeds {first}..{}) × {} commands = {} runs, {} paths compared, {} violations, {:.0} s",
        first + seeds,
        commands.len(),
        tally.runs,
        tally.checked_paths,
        tally.violations.len(),
        start.elapsed().as_secs_f64()
    );
    let per: Vec<String> = tally.per_command.iter().map(|(c, s)| format!("{c} {s:.0} s")).collect();
    eprintln!("invariants: time per command (summed over jobs): {}", per.join(", "));
    if !tally.violations.is_empty() {
        let n = tally.violations.len();
        let shown: Vec<&String> = tally.violations.iter().take(25).collect();
        panic!(
            "{n} violations (first {}):\n{}",
            shown.len(),
            shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n\n")
        );
    }
}

/// The harness itself: a change outside the allowed roots is caught, one inside is not,
/// and a mount point below an allowed root is not allowed (a check that cannot fail is a
/// defect).
#[test]
fn the_judge_catches_what_it_should() {
    if !rustix::process::geteuid().is_root() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI runs as root: the harness mounts");
        eprintln!("skipped: the invariant harness needs root (it builds mount topologies)");
        return;
    }
    let base = std::env::temp_dir().join(format!("mf-inv-judge-{}", std::process::id()));
    let mut t = topology::Topology::build(&base, 7);
    let dst = t.root.join("t/dst");
    std::fs::create_dir(&dst).unwrap();
    let foreign = t.root.join("u/foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("k"), b"x").unwrap();
    let at = dst.join("bm");
    std::fs::create_dir(&at).unwrap();
    assert!(t.bind(&foreign, &at));
    let case = Case {
        args: Vec::new(),
        allowed: t.aliases(&resolved(&dst)),
        exact: Vec::new(),
        may_mkdir_above: true,
        max_new: Some((dst.clone(), 3)),
        protected: None,
        umount: None,
    };
    let quiet = Ran { code: Some(0), stderr: String::new(), stdout: String::new(), timed_out: false, secs: 0.1 };
    let before = snapshot::take(&t.root, &t.skip);
    std::fs::write(dst.join("new"), b"allowed").unwrap();
    let after = snapshot::take(&t.root, &t.skip);
    assert!(judge(&t, &case, &before, &after, &quiet).is_empty(), "a write inside DST is allowed");
    std::fs::remove_file(foreign.join("k")).unwrap();
    let emptied = snapshot::take(&t.root, &t.skip);
    let v = judge(&t, &case, &after, &emptied, &quiet);
    assert!(v.iter().any(|l| l.contains("u/foreign/k") && l.contains("t/dst/bm/k")), "{v:?}");
    std::fs::write(t.root.join("u/other"), b"x").unwrap();
    let v = judge(&t, &case, &emptied, &snapshot::take(&t.root, &t.skip), &quiet);
    assert!(v.iter().any(|l| l.contains("u/other: added")), "{v:?}");
    let mut deep = dst.clone();
    for _ in 0..5 {
        deep.push("again");
        let _ = std::fs::create_dir(&deep);
    }
    let v = judge(&t, &case, &emptied, &snapshot::take(&t.root, &t.skip), &quiet);
    assert!(v.iter().any(|l| l.contains("entries added below DST")), "{v:?}");
    let hung = Ran { code: None, stderr: String::new(), stdout: "x".repeat(MAX_LINE + 1), timed_out: true, secs: 60.0 };
    let v = judge(&t, &case, &emptied, &emptied, &hung);
    assert!(v.iter().any(|l| l.starts_with("hang")) && v.iter().any(|l| l.contains("output line")), "{v:?}");
    t.teardown();
    let _ = std::fs::remove_dir(&base);
}
