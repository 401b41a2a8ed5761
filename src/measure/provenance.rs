//! Provenance: which tool, command and machine produced a result.

use serde::{Deserialize, Serialize};

/// What build.rs found: "commit <hash> (<date>)", the same followed by ", with uncommitted
/// changes" when the sources differ from that commit, or "not from git".
pub const BUILT_FROM: &str = env!("MANYFILES_BUILT_FROM");

/// `--version`'s text: the version and what it was built from.
pub const LONG_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), ", built from ", env!("MANYFILES_BUILT_FROM"));

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub tool: String,
    pub version: String,
    /// The git commit and its date the binary was built from, or "not from git".
    #[serde(default)]
    pub built_from: String,
    pub command_line: Vec<String>,
    pub started_utc: String,
    pub host: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cores: usize,
    pub memory_bytes: u64,
    pub ranks: usize,
    /// Under MPI: every rank's host, in rank order (empty with one rank).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// This invocation's id (128 random bits, hex): pooling refuses one invocation twice.
    /// Empty in files from before it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub invocation: String,
}

/// 128 bits, hex, from two hashers std seeds at random per process, fed the time and pid.
fn invocation_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let half = || {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(now);
        h.write_u32(std::process::id());
        h.finish()
    };
    format!("{:016x}{:016x}", half(), half())
}

impl Provenance {
    pub fn collect(command_line: Vec<String>) -> Provenance {
        let uts = rustix::system::uname();
        Provenance {
            tool: "manyfiles".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            built_from: BUILT_FROM.into(),
            command_line,
            started_utc: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            host: uts.nodename().to_string_lossy().into_owned(),
            kernel: format!("{} {}", uts.sysname().to_string_lossy(), uts.release().to_string_lossy()),
            cpu_model: cpu_model().unwrap_or_else(|| "unknown".into()),
            cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            memory_bytes: memory_bytes().unwrap_or(0),
            ranks: crate::ranks::size(),
            hosts: if crate::ranks::size() > 1 { crate::ranks::hosts() } else { Vec::new() },
            invocation: invocation_id(),
        }
    }

    /// Are these two the provenance of one invocation? By id when both have one, else by
    /// host, start (to the second) and command line.
    pub fn same_invocation(&self, other: &Provenance) -> bool {
        if !self.invocation.is_empty() && !other.invocation.is_empty() {
            return self.invocation == other.invocation;
        }
        self.host == other.host && self.started_utc == other.started_utc && self.command_line == other.command_line
    }

    /// One line for the bottom of a table: where these figures come from.
    pub fn machine_line(&self) -> String {
        if self.host.is_empty() {
            // A peer's output read as a result (results::peers): no machine in it.
            return format!("machine: not recorded in {}'s output · {} {}", self.tool, self.tool, self.version);
        }
        let mut hosts = self.hosts.clone();
        hosts.sort();
        hosts.dedup();
        let ranks = if self.ranks > 1 {
            format!(" · {} MPI ranks on {} hosts", self.ranks, hosts.len())
        } else {
            String::new()
        };
        format!(
            "machine: {} · {} · {} · {} cores · {:.0} GiB RAM · {} {}{ranks}",
            self.host,
            self.kernel,
            self.cpu_model,
            self.cores,
            self.memory_bytes as f64 / (1u64 << 30) as f64,
            if self.tool.is_empty() { "manyfiles" } else { &self.tool },
            self.version
        )
    }
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_this_machine() {
        let p = Provenance::collect(vec!["manyfiles".into(), "ladder".into()]);
        assert!(p.cores >= 1);
        assert!(p.memory_bytes > 0);
        assert!(p.kernel.starts_with("Linux"));
        assert!(p.started_utc.ends_with('Z'));
        assert!(p.machine_line().contains(&p.host));
    }
}
