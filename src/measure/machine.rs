//! What the rest of the machine did during a phase: CPU time used by other processes,
//! iowait and steal, from /proc/stat, minus this process's own CPU time (getrusage,
//! children included: external tools), minus kernel threads (journal, writeback,
//! loop-device workers: mostly work the phase itself causes) and minus the processes
//! serving the target (a FUSE daemon: the file system's own work); and the bytes other
//! processes read from or wrote to storage (/proc/PID/io). A run is marked disturbed
//! when others used more than [`DISTURBED_CORES`] cores on average (signal `cpu`) or
//! moved more than [`DISTURBED_IO_BPS`] of storage traffic (signal `io`): on a shared
//! machine such a run measures the neighbours as much as the storage.
//!
//! /proc/stat counts in clock ticks (10 ms at the usual USER_HZ of 100), so a phase
//! shorter than a few ticks cannot be judged: it needs [`MIN_OTHER_S`] of others' CPU
//! time as well (one stray tick in a 5 ms phase would otherwise read as 2 cores).

use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Other processes' average CPU use (cores) above which a run is disturbed: a quarter
/// of a core, the threshold bench/create.sh used (an idle VM shows ~0.01–0.05).
pub const DISTURBED_CORES: f64 = 0.25;

/// And at least this much of others' CPU time (seconds): 5 ticks at USER_HZ 100.
pub const MIN_OTHER_S: f64 = 0.05;

/// Other processes' storage traffic (bytes read + written per second of the phase)
/// above which a run is disturbed: an idle VM's daemons (journald, logs) stay far
/// below 1 MiB/s; a neighbour's copy or `dd` moves tens to hundreds.
pub const DISTURBED_IO_BPS: f64 = 4.0 * 1024.0 * 1024.0;

/// And at least this many bytes of others' traffic (a short phase is not judged on a
/// few log lines).
pub const MIN_OTHER_IO: u64 = 8 << 20;

/// Machine activity over one phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Activity {
    /// CPU seconds used by other processes (all CPUs' busy time, steal included, minus
    /// this process and its children, minus kernel threads).
    pub other_cpu_s: f64,
    /// CPU seconds of kernel threads (mostly work this phase caused: journal,
    /// writeback, loop devices).
    pub kernel_threads_cpu_s: f64,
    /// CPU seconds the hypervisor gave to other guests (steal; part of other_cpu_s).
    pub steal_s: f64,
    /// Idle CPU seconds with I/O outstanding (iowait).
    pub iowait_s: f64,
    /// Others' average use in cores over the phase's wall time.
    pub other_cores: f64,
    /// Disturbed by any signal (see `disturbed_by`).
    pub disturbed: bool,
    /// CPU seconds of the processes serving the target (a FUSE daemon): the file
    /// system's work, counted neither as others' nor as this process's.
    #[serde(default)]
    pub serving_cpu_s: f64,
    /// Bytes other processes read from and wrote to storage during the phase
    /// (/proc/PID/io of the processes this user may inspect; None: not readable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_io_bytes: Option<u64>,
    /// Which signals fired: `cpu` (other_cores > [`DISTURBED_CORES`] and other_cpu_s >=
    /// [`MIN_OTHER_S`]), `io` (other_io_bytes >= [`MIN_OTHER_IO`] at more than
    /// [`DISTURBED_IO_BPS`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbed_by: Vec<String>,
}

/// Cumulative counters at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    at: Instant,
    /// user + nice + system + irq + softirq + steal, in ticks.
    busy: u64,
    steal: u64,
    iowait: u64,
    /// Kernel threads' user + system ticks (by pid).
    kthreads: Vec<(u32, u64)>,
    /// The serving processes' user + system ticks (by pid).
    serving: Vec<(u32, u64)>,
    /// Other processes' storage bytes read + written so far (by pid; None: /proc
    /// unreadable).
    io: Option<Vec<(u32, u64)>>,
    /// This process's user + system (children included), seconds.
    own_s: f64,
}

fn ticks_per_s() -> f64 {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as f64 } else { 100.0 }
}

/// (busy, steal, iowait) ticks of all CPUs, from the first line of /proc/stat.
fn cpu_line(stat: &str) -> Option<(u64, u64, u64)> {
    let line = stat.lines().next()?;
    let f: Vec<u64> = line.split_whitespace().skip(1).map(|x| x.parse().unwrap_or(0)).collect();
    if f.len() < 8 {
        return None;
    }
    // user nice system idle iowait irq softirq steal [guest guest_nice: inside user]
    let busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
    Some((busy, f[7], f[4]))
}

/// PF_KTHREAD in /proc/PID/stat's flags field.
const PF_KTHREAD: u64 = 0x0020_0000;

/// Per process, from /proc: kernel threads' and the serving processes' ticks, and the
/// other processes' storage bytes (this process aside: its own figures come from
/// getrusage and the phase).
struct Procs {
    kthreads: Vec<(u32, u64)>,
    serving: Vec<(u32, u64)>,
    io: Option<Vec<(u32, u64)>>,
}

fn procs(serving: &[u32]) -> Procs {
    let mut out = Procs { kthreads: Vec::new(), serving: Vec::new(), io: None };
    let Ok(dir) = std::fs::read_dir("/proc") else { return out };
    let me = std::process::id();
    let mut io = Vec::new();
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some((ticks, kthread)) = stat_ticks(&stat) else { continue };
        if kthread {
            out.kthreads.push((pid, ticks));
        } else if serving.contains(&pid) {
            out.serving.push((pid, ticks));
        } else if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/io")) {
            io.push((pid, io_bytes(&text)));
        }
    }
    out.kthreads.sort_unstable();
    out.serving.sort_unstable();
    io.sort_unstable();
    out.io = Some(io);
    out
}

/// read_bytes + write_bytes of a /proc/PID/io text (what reached or will reach storage;
/// cancelled writes, such as a file truncated before writeback, subtracted).
fn io_bytes(text: &str) -> u64 {
    let field =
        |k: &str| text.lines().find_map(|l| l.strip_prefix(k)).and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0);
    (field("read_bytes:") + field("write_bytes:")).saturating_sub(field("cancelled_write_bytes:"))
}

/// Sum over processes present at both ends of what grew; a process new at the end
/// counts whole (one that started during the phase did it all then).
fn grown(before: &[(u32, u64)], after: &[(u32, u64)]) -> u64 {
    let mut sum = 0;
    for &(pid, v) in after {
        match before.binary_search_by_key(&pid, |&(p, _)| p) {
            Ok(i) => sum += v.saturating_sub(before[i].1),
            Err(_) => sum += v,
        }
    }
    sum
}

/// utime + stime of a /proc/PID/stat line, and whether it is a kernel thread.
fn stat_ticks(stat: &str) -> Option<(u64, bool)> {
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts with field 3 (state): flags is field 9, utime 14, stime 15.
    let flags: u64 = f.get(6)?.parse().ok()?;
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some((ticks, flags & PF_KTHREAD != 0))
}

/// utime + stime of a /proc/PID/stat line when it is a kernel thread.
#[cfg(test)]
fn kthread_ticks(stat: &str) -> Option<u64> {
    stat_ticks(stat).and_then(|(t, k)| k.then_some(t))
}

fn own_cpu_s() -> f64 {
    let (u, s) = super::cpu_times();
    let (cu, cs) = super::children_cpu_times();
    u + s + cu + cs
}

impl Snapshot {
    /// Counters now, `serving` being the processes that serve the target; `None` where
    /// /proc/stat cannot be read (then nothing is judged).
    pub fn now(serving: &[u32]) -> Option<Snapshot> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let (busy, steal, iowait) = cpu_line(&stat)?;
        let p = procs(serving);
        Some(Snapshot {
            at: Instant::now(),
            busy,
            steal,
            iowait,
            kthreads: p.kthreads,
            serving: p.serving,
            io: p.io,
            own_s: own_cpu_s(),
        })
    }

    /// Activity from `self` (before) to `after`.
    pub fn until(&self, after: &Snapshot) -> Activity {
        let hz = ticks_per_s();
        let d = |a: u64, b: u64| b.saturating_sub(a) as f64 / hz;
        // Threads present at both ends (one that exits meanwhile is missed; it is then
        // counted as another process: the cautious side).
        let mut k = 0u64;
        let mut i = 0;
        for &(pid, t) in &after.kthreads {
            while i < self.kthreads.len() && self.kthreads[i].0 < pid {
                i += 1;
            }
            if let Some(&(p0, t0)) = self.kthreads.get(i) {
                if p0 == pid {
                    k += t.saturating_sub(t0);
                }
            }
        }
        let kernel = k as f64 / hz;
        let wall = after.at.duration_since(self.at).as_secs_f64();
        let busy = d(self.busy, after.busy);
        let own = (after.own_s - self.own_s).max(0.0);
        // A serving process that exits meanwhile is missed (then counted as others').
        let serving = grown(&self.serving, &after.serving) as f64 / hz;
        let io = match (&self.io, &after.io) {
            (Some(a), Some(b)) => Some(grown(a, b)),
            _ => None,
        };
        let cpu =
            Cpu { busy, own, kernel, serving, steal: d(self.steal, after.steal), iowait: d(self.iowait, after.iowait) };
        activity(cpu, io, wall)
    }
}

/// CPU seconds over one phase, by whom.
struct Cpu {
    busy: f64,
    own: f64,
    kernel: f64,
    serving: f64,
    steal: f64,
    iowait: f64,
}

/// The judgement from the differences (seconds, bytes), apart so tests can feed it numbers.
fn activity(c: Cpu, other_io: Option<u64>, wall: f64) -> Activity {
    let other = (c.busy - c.own - c.kernel - c.serving).max(0.0);
    let other_cores = if wall > 0.0 { other / wall } else { 0.0 };
    let mut by = Vec::new();
    if other_cores > DISTURBED_CORES && other >= MIN_OTHER_S {
        by.push("cpu".to_string());
    }
    if other_io.is_some_and(|b| b >= MIN_OTHER_IO && wall > 0.0 && b as f64 / wall > DISTURBED_IO_BPS) {
        by.push("io".to_string());
    }
    Activity {
        other_cpu_s: other,
        kernel_threads_cpu_s: c.kernel,
        steal_s: c.steal,
        iowait_s: c.iowait,
        other_cores,
        disturbed: !by.is_empty(),
        serving_cpu_s: c.serving,
        other_io_bytes: other_io,
        disturbed_by: by,
    }
}

/// Runs `phase` and says what the rest of the machine did meanwhile; `serving` are the
/// processes serving the target (their work is the file system's).
pub fn around<T>(serving: &[u32], phase: impl FnOnce() -> T) -> (T, Option<Activity>) {
    let before = Snapshot::now(serving);
    let r = phase();
    let act = before.and_then(|b| Snapshot::now(serving).map(|a| b.until(&a)));
    (r, act)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_stat_and_kernel_threads() {
        let (busy, steal, iowait) = cpu_line("cpu  100 5 50 1000 7 3 2 9 0 0\ncpu0 1 2 3\n").unwrap();
        assert_eq!((busy, steal, iowait), (100 + 5 + 50 + 3 + 2 + 9, 9, 7));
        assert_eq!(cpu_line("cpu 1 2"), None);
        // kworker: flags 0x04208060 has PF_KTHREAD; a name with ") (" inside.
        let k = "42 (kworker/0:1) (x)) I 2 0 0 0 -1 69238880 0 0 0 0 17 4 0 0 20 0 1 0 5 0 0";
        assert_eq!(kthread_ticks(k), Some(21));
        let user = "43 (bash) S 1 43 43 34816 43 4194560 100 0 0 0 7 3 0 0 20 0 1 0 5 0 0";
        assert_eq!(kthread_ticks(user), None);
    }

    #[test]
    fn judges_disturbance() {
        let cpu = |busy, own, kernel, serving| Cpu { busy, own, kernel, serving, steal: 0.0, iowait: 0.0 };
        // 1 s phase, 2 s of busy CPU, 1.2 s ours, 0.1 s kernel threads: 0.7 cores others.
        let a = activity(cpu(2.0, 1.2, 0.1, 0.0), Some(0), 1.0);
        assert!((a.other_cores - 0.7).abs() < 1e-9 && a.disturbed);
        assert_eq!(a.disturbed_by, vec!["cpu"]);
        // The same with 0.6 s of it a FUSE daemon serving the target: 0.1 cores others.
        let a = activity(cpu(2.0, 1.2, 0.1, 0.6), Some(0), 1.0);
        assert!((a.other_cores - 0.1).abs() < 1e-9 && !a.disturbed, "{a:?}");
        // Alone: others ~0.
        assert!(!activity(cpu(1.25, 1.2, 0.05, 0.0), Some(0), 1.0).disturbed);
        // A short phase: one stray 10 ms tick is 2 cores over 5 ms, but not enough time to judge.
        let a = activity(cpu(0.01, 0.0, 0.0, 0.0), None, 0.005);
        assert!(a.other_cores > 1.0 && !a.disturbed);
        // Our own accounting may run ahead of /proc/stat: never negative.
        assert_eq!(activity(cpu(1.0, 1.5, 0.0, 0.0), None, 1.0).other_cpu_s, 0.0);
        // Others' storage traffic: 200 MiB in 2 s is disturbed by io alone; 2 MiB is not.
        let a = activity(cpu(1.25, 1.2, 0.05, 0.0), Some(200 << 20), 2.0);
        assert!(a.disturbed && a.disturbed_by == vec!["io"], "{a:?}");
        assert!(!activity(cpu(1.25, 1.2, 0.05, 0.0), Some(2 << 20), 2.0).disturbed);
        // 20 MiB over a minute: below the rate.
        assert!(!activity(cpu(1.25, 1.2, 0.05, 0.0), Some(20 << 20), 60.0).disturbed);
    }

    #[test]
    fn sees_a_busy_neighbour() {
        // A spinning child not waited for during the phase is someone else's load (its
        // time reaches our rusage only once it is reaped, after the second snapshot).
        // Killed by the kernel should this test process be killed before it does (the
        // loop would otherwise spin on, unowned).
        let mut spinner = std::process::Command::new("sh");
        spinner.args(["-c", "while :; do :; done"]);
        // SAFETY: only an async-signal-safe prctl between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut spinner, || {
                rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
                Ok(())
            });
        }
        let mut child = spinner.spawn().unwrap();
        let (_, act) = around(&[], || std::thread::sleep(std::time::Duration::from_millis(800)));
        // The same child serving the target: the file system's own work.
        let (_, serving) = around(&[child.id()], || std::thread::sleep(std::time::Duration::from_millis(800)));
        child.kill().unwrap();
        child.wait().unwrap();
        let act = act.expect("/proc/stat is readable on Linux");
        // Even on a loaded 2-core machine the child gets a good part of a core.
        assert!(act.other_cpu_s >= 0.1, "{act:?}");
        assert!(act.disturbed && act.disturbed_by.contains(&"cpu".to_string()), "{act:?}");
        let serving = serving.unwrap();
        assert!(serving.serving_cpu_s >= 0.1, "{serving:?}");
        assert!(serving.other_cpu_s < act.other_cpu_s, "{serving:?} against {act:?}");
    }

    #[test]
    fn sees_a_neighbour_writing_to_storage() {
        // A writer that is not this process: 64 MiB written and fsynced to the disk the
        // temporary directory is on (io accounting counts at dirtying; tmpfs has none).
        let dir = tempfile::tempdir_in(std::env::var_os("MANYFILES_IO_TEST_DIR").unwrap_or("/var/tmp".into())).unwrap();
        let target = dir.path().join("w");
        let fs = rustix::fs::statfs(dir.path()).unwrap();
        if fs.f_type == 0x0102_1994 {
            eprintln!("skipped: {} is tmpfs (no storage I/O accounting)", dir.path().display());
            return;
        }
        let (mut dd, act) = around(&[], || {
            let st = std::process::Command::new("dd")
                .args(["if=/dev/zero", &format!("of={}", target.display()), "bs=1M", "count=64", "conv=fsync"])
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            // Not reaped before the second snapshot: its I/O is a neighbour's.
            std::thread::sleep(std::time::Duration::from_millis(1500));
            st
        });
        dd.wait().unwrap();
        let act = act.unwrap();
        let io = act.other_io_bytes.expect("/proc/PID/io of our own child is readable");
        assert!(io >= 60 << 20, "{act:?}");
        assert!(act.disturbed_by.contains(&"io".to_string()), "{act:?}");
    }
}
