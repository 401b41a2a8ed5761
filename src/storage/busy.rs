//! Who uses a mounted file system, as fuser(1) -m would say: the processes with their
//! working directory, root directory, an open file or a mapped file in it. Found through
//! /proc without touching the file system itself (a hung FUSE daemon cannot hang the
//! scan): an open file's mount is `mnt_id` in /proc/PID/fdinfo, a working or root
//! directory's that of an `O_PATH` descriptor of it (no open, no lookup in the file
//! system), a mapping's device is a column of /proc/PID/maps.

use std::collections::BTreeMap;
use std::path::Path;

/// One process using the file system, and how (`cwd`, `root`, `open file`, `mapped file`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub command: String,
    pub uses: Vec<&'static str>,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pid {} ({}: {})", self.pid, self.command, self.uses.join(", "))
    }
}

/// The command name of a process: its argv[0] without the directory (comm is cut at 15
/// bytes: `toxiproxy-serve`), else /proc/PID/comm, or `?` if it is gone.
pub fn command_of(pid: u32) -> String {
    let argv0 = std::fs::read(format!("/proc/{pid}/cmdline")).ok().and_then(|c| {
        // A rewritten title (`sshd: /usr/sbin/sshd -D [listener]`) is no path: comm then.
        let first = c.split(|&b| b == 0).next().filter(|a| !a.contains(&b' '))?;
        let name = first.rsplit(|&b| b == b'/').next()?;
        (!name.is_empty()).then(|| String::from_utf8_lossy(name).into_owned())
    });
    argv0.unwrap_or_else(|| {
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|s| s.trim_end().to_string())
            .unwrap_or_else(|_| "?".into())
    })
}

/// The command names of `pids`, for messages.
pub fn commands_of(pids: &[u32]) -> Vec<String> {
    pids.iter().map(|&p| command_of(p)).collect()
}

/// The mount id in an fdinfo file's text (`mnt_id:\t42`).
fn mnt_id_in(fdinfo: &str) -> Option<u64> {
    fdinfo.lines().find_map(|l| l.strip_prefix("mnt_id:")).and_then(|v| v.trim().parse().ok())
}

/// The mount id of what the magic link `link` (/proc/PID/cwd, /proc/PID/root) points at.
fn mnt_id_of_link(link: &Path) -> Option<u64> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(link, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let raw = rustix::fd::AsRawFd::as_raw_fd(&fd);
    mnt_id_in(&std::fs::read_to_string(format!("/proc/self/fdinfo/{raw}")).ok()?)
}

/// Does a line of /proc/PID/maps map a file of device `dev` (its 4th column, `maj:min`
/// in hex)?
fn maps_dev(line: &str, dev: (u32, u32)) -> bool {
    let mut cols = line.split_ascii_whitespace();
    let (Some(d), Some(ino)) = (cols.nth(3), cols.next()) else { return false };
    let Some((a, b)) = d.split_once(':') else { return false };
    ino != "0" && u32::from_str_radix(a, 16).ok() == Some(dev.0) && u32::from_str_radix(b, 16).ok() == Some(dev.1)
}

/// The processes (this one too: `umount .` from inside) that use a file system mounted as `mount_ids`
/// (its mount and any bind mount of it) on device `dev` (`major:minor`), pid order.
pub fn holders(mount_ids: &[u64], dev: Option<(u32, u32)>) -> Vec<Holder> {
    let mut found: BTreeMap<u32, Vec<&'static str>> = BTreeMap::new();
    let Ok(procs) = std::fs::read_dir("/proc") else { return Vec::new() };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let dir = p.path();
        let mut uses: Vec<&'static str> = Vec::new();
        for (link, what) in [("cwd", "cwd"), ("root", "root")] {
            if mnt_id_of_link(&dir.join(link)).is_some_and(|id| mount_ids.contains(&id)) {
                uses.push(what);
            }
        }
        if let Ok(fds) = std::fs::read_dir(dir.join("fdinfo")) {
            let open = fds.flatten().any(|fd| {
                std::fs::read_to_string(fd.path())
                    .ok()
                    .and_then(|t| mnt_id_in(&t))
                    .is_some_and(|id| mount_ids.contains(&id))
            });
            if open {
                uses.push("open file");
            }
        }
        if let (Some(dev), Ok(maps)) = (dev, std::fs::read_to_string(dir.join("maps"))) {
            if maps.lines().any(|l| maps_dev(l, dev)) {
                uses.push("mapped file");
            }
        }
        if !uses.is_empty() {
            found.insert(pid, uses);
        }
    }
    found.into_iter().map(|(pid, uses)| Holder { pid, command: command_of(pid), uses }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_command_by_its_argv0() {
        let mut c = std::process::Command::new("/bin/sleep").arg("30").spawn().unwrap();
        // Between fork and exec the child still carries this thread's name: wait for the exec.
        let mut name = command_of(c.id());
        for _ in 0..200 {
            if name == "sleep" {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            name = command_of(c.id());
        }
        let _ = c.kill();
        let _ = c.wait();
        assert_eq!(name, "sleep");
        assert_eq!(command_of(u32::MAX), "?");
    }

    #[test]
    fn parses_fdinfo_and_maps() {
        assert_eq!(mnt_id_in("pos:\t0\nflags:\t02\nmnt_id:\t31\nino:\t5\n"), Some(31));
        assert_eq!(mnt_id_in("pos:\t0\n"), None);
        let line = "7f00-7f10 r--p 00000000 00:2a 1234    /mnt/x/lib.so";
        assert!(maps_dev(line, (0, 42)));
        assert!(!maps_dev(line, (0, 43)));
        assert!(!maps_dev("7f00-7f10 rw-p 00000000 00:00 0 ", (0, 0)), "anonymous memory is no file");
    }

    /// A child whose working directory is in a tmpdir's mount is found.
    #[test]
    fn finds_a_child_by_its_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let id = mnt_id_of_link(dir.path()).expect("a mount id");
        let mut child = std::process::Command::new("sleep").arg("30").current_dir(dir.path()).spawn().unwrap();
        let h = holders(&[id], None);
        let _ = child.kill();
        let _ = child.wait();
        let mine = h.iter().find(|h| h.pid == child.id()).expect("the child is found");
        assert!(mine.uses.contains(&"cwd"), "{mine}");
        assert!(!holders(&[u64::MAX], None).iter().any(|h| h.pid == child.id()), "no mount id: nobody");
    }
}
