//! What the rest of the machine did during a phase: CPU time used by other processes,
//! iowait and steal, from /proc/stat, minus this process's own CPU time (getrusage,
//! children included: external tools) and minus kernel threads (journal, writeback,
//! loop-device workers: mostly work the phase itself causes). A run during which
//! others used more than [`DISTURBED_CORES`] cores on average is marked disturbed:
//! on a shared machine such a run measures the neighbours as much as the storage.
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
    /// other_cores > [`DISTURBED_CORES`] and other_cpu_s >= [`MIN_OTHER_S`].
    pub disturbed: bool,
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

/// Kernel threads' (pid, utime + stime) from /proc/*/stat.
fn kthreads() -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return out };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        if let Some(t) = kthread_ticks(&stat) {
            out.push((pid, t));
        }
    }
    out.sort_unstable();
    out
}

/// utime + stime of a /proc/PID/stat line when it is a kernel thread.
fn kthread_ticks(stat: &str) -> Option<u64> {
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts with field 3 (state): flags is field 9, utime 14, stime 15.
    let flags: u64 = f.get(6)?.parse().ok()?;
    if flags & PF_KTHREAD == 0 {
        return None;
    }
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

fn own_cpu_s() -> f64 {
    let (u, s) = super::cpu_times();
    let (cu, cs) = super::children_cpu_times();
    u + s + cu + cs
}

impl Snapshot {
    /// Counters now; `None` where /proc/stat cannot be read (then nothing is judged).
    pub fn now() -> Option<Snapshot> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let (busy, steal, iowait) = cpu_line(&stat)?;
        Some(Snapshot { at: Instant::now(), busy, steal, iowait, kthreads: kthreads(), own_s: own_cpu_s() })
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
        activity(busy, own, kernel, d(self.steal, after.steal), d(self.iowait, after.iowait), wall)
    }
}

/// The judgement from the differences (seconds), apart so tests can feed it numbers.
fn activity(busy: f64, own: f64, kernel: f64, steal: f64, iowait: f64, wall: f64) -> Activity {
    let other = (busy - own - kernel).max(0.0);
    let other_cores = if wall > 0.0 { other / wall } else { 0.0 };
    Activity {
        other_cpu_s: other,
        kernel_threads_cpu_s: kernel,
        steal_s: steal,
        iowait_s: iowait,
        other_cores,
        disturbed: other_cores > DISTURBED_CORES && other >= MIN_OTHER_S,
    }
}

/// Runs `phase` and says what the rest of the machine did meanwhile.
pub fn around<T>(phase: impl FnOnce() -> T) -> (T, Option<Activity>) {
    let before = Snapshot::now();
    let r = phase();
    let act = before.and_then(|b| Snapshot::now().map(|a| b.until(&a)));
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
        // 1 s phase, 2 s of busy CPU, 1.2 s ours, 0.1 s kernel threads: 0.7 cores others.
        let a = activity(2.0, 1.2, 0.1, 0.0, 0.0, 1.0);
        assert!((a.other_cores - 0.7).abs() < 1e-9 && a.disturbed);
        // Alone: others ~0.
        assert!(!activity(1.25, 1.2, 0.05, 0.0, 0.0, 1.0).disturbed);
        // A short phase: one stray 10 ms tick is 2 cores over 5 ms, but not enough time to judge.
        let a = activity(0.01, 0.0, 0.0, 0.0, 0.0, 0.005);
        assert!(a.other_cores > 1.0 && !a.disturbed);
        // Our own accounting may run ahead of /proc/stat: never negative.
        assert_eq!(activity(1.0, 1.5, 0.0, 0.0, 0.0, 1.0).other_cpu_s, 0.0);
    }

    #[test]
    fn sees_a_busy_neighbour() {
        // A spinning child not waited for during the phase is someone else's load (its
        // time reaches our rusage only once it is reaped, after the second snapshot).
        let mut child = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        let (_, act) = around(|| std::thread::sleep(std::time::Duration::from_millis(800)));
        child.kill().unwrap();
        child.wait().unwrap();
        let act = act.expect("/proc/stat is readable on Linux");
        // Even on a loaded 2-core machine the child gets a good part of a core.
        assert!(act.other_cpu_s >= 0.1, "{act:?}");
        assert!(act.disturbed, "{act:?}");
    }
}
