//! How an engine's time starts and ends (`--cold`, `--durable` on copy, sync, scan and
//! rm), so its figures compare with the ladder's cold and durable phases:
//!
//! - **cold**: before the clock starts, what the timed work reads is evicted with the
//!   ladder's own evictor (`storage::cache::evict`: a syncfs, every file's pages
//!   dropped, and as root the page, dentry and inode caches dropped); **warm**: left as
//!   it is.
//! - **durable**: the time ends after a syncfs of every file system the work wrote
//!   returned (timed apart as `sync_s`, inside `elapsed_s`, as the ladder's `flush_s`);
//!   **returned**: it ends when the work returned (written data may still be in memory).
//!
//! Every summary carries a [`Timing`], flags or not (`warm`, `returned` without them).

use crate::error::{Error, Result};
use crate::storage::cache::{self, CacheState};
use rustix::fd::{AsFd, BorrowedFd};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Instant;

/// What an engine's time includes. Flattened into the summaries' JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Timing {
    /// `cold` (what the work reads was evicted before the clock started) or `warm`.
    pub cache: String,
    /// What the eviction did, named as the ladder records it: `warm` (nothing),
    /// `data-evicted` (file data only; directories and inodes stay cached: no root),
    /// `all-dropped` (file data evicted and every cache dropped: root).
    pub cache_state: String,
    /// Regular files whose cached pages were dropped (cold only).
    pub files_evicted: u64,
    /// What may still be cached after the eviction.
    pub cache_caveat: Option<String>,
    /// `durable` (`elapsed_s` ends when a syncfs of every written file system returned)
    /// or `returned` (it ends when the work returned).
    pub until: String,
    /// Seconds until the work returned: `elapsed_s` without the syncfs.
    pub returned_s: f64,
    /// Seconds of the syncfs, part of `elapsed_s` (durable only).
    pub sync_s: Option<f64>,
    /// The file systems synced, one path on each.
    pub synced: Vec<String>,
    /// A syncfs that failed: what was written may not be on the storage (exit 1).
    pub sync_error: Option<String>,
}

impl Default for Timing {
    /// Warm and returned: what every engine measured before these options existed.
    fn default() -> Timing {
        Timing {
            cache: "warm".into(),
            cache_state: CacheState::Warm.name().into(),
            files_evicted: 0,
            cache_caveat: None,
            until: "returned".into(),
            returned_s: 0.0,
            sync_s: None,
            synced: Vec::new(),
            sync_error: None,
        }
    }
}

/// Refuse `--cold` before anything is done when nothing it reads can be evicted: a root
/// (`what` names it, e.g. "SRC") on a memory file system, or no root and no root user.
pub fn check_cold(roots: &[(&str, &Path)]) -> Result<()> {
    for (what, p) in roots {
        let kind = cache::memory_fs(p).map_err(|e| Error::bad("--cold", e))?;
        if let Some(kind) = kind {
            return Err(Error::bad(
                "--cold",
                format!("{what} {} is on {kind}, whose storage is memory: nothing can be evicted", p.display()),
            ));
        }
    }
    if roots.is_empty() && !rustix::process::geteuid().is_root() {
        return Err(Error::bad(
            "--cold",
            "no directory to evict (only files named) and dropping the kernel's caches needs root",
        ));
    }
    Ok(())
}

impl Timing {
    /// Evict what the timed work reads (the trees below `roots`), now, before its clock
    /// starts; [`check_cold`] has passed. With no roots (rm of files only) and root, the
    /// kernel's caches are dropped.
    pub fn cold(roots: &[&Path], threads: usize) -> Result<Timing> {
        let fail = |e: String| Error::failed(format!("--cold: {e}"));
        let e = if roots.is_empty() {
            cache::drop_caches()?;
            cache::Eviction { state: CacheState::AllDropped, caveat: None, files: 0 }
        } else {
            cache::evict(roots, threads).map_err(fail)?
        };
        if matches!(e.state, CacheState::NotApplicable | CacheState::Warm) {
            return Err(fail("nothing could be evicted (memory file systems only)".into()));
        }
        Ok(Timing {
            cache: "cold".into(),
            cache_state: e.state.name().into(),
            files_evicted: e.files,
            cache_caveat: e.caveat,
            ..Timing::default()
        })
    }

    /// `Timing::cold` when `cold`, else warm.
    pub fn start(cold: bool, roots: &[&Path], threads: usize) -> Result<Timing> {
        if cold { Timing::cold(roots, threads) } else { Ok(Timing::default()) }
    }

    /// The work returned after `returned_s`: with `durable`, a syncfs of each file
    /// system of `fds` (each once; `(path shown, fd)`), timed now and added. Under MPI
    /// every rank syncs and waits for the others (`ranks::barrier`), so the time ends when
    /// the last rank's data are on its storage. Returns the whole time.
    pub fn end(&mut self, returned_s: f64, durable: bool, fds: &[(String, BorrowedFd<'_>)]) -> f64 {
        self.returned_s = returned_s;
        if !durable {
            return returned_s;
        }
        let t = Instant::now();
        let mut seen = Vec::new();
        for (shown, fd) in fds {
            let dev = rustix::fs::fstat(fd).map(|st| st.st_dev).ok();
            if dev.is_some() && seen.contains(&dev) {
                continue;
            }
            seen.push(dev);
            match rustix::fs::syncfs(fd.as_fd()) {
                Ok(()) => self.synced.push(shown.clone()),
                Err(e) => {
                    self.sync_error.get_or_insert_with(|| format!("syncfs {shown}: {e}"));
                }
            }
        }
        crate::ranks::barrier();
        let sync = t.elapsed().as_secs_f64();
        self.until = "durable".into();
        self.sync_s = Some(sync);
        returned_s + sync
    }

    /// One line for the terminal summaries: `timing: cold (…), durable (…)`.
    pub fn text(&self) -> String {
        use crate::units::fmt_secs;
        let start = match self.cache_state.as_str() {
            "all-dropped" => format!(
                "cold ({} files' pages evicted and the page, dentry and inode caches dropped (ext4: its journal checkpointed first) before the clock started)",
                self.files_evicted
            ),
            "data-evicted" => format!(
                "cold ({} files' pages evicted before the clock started; {})",
                self.files_evicted,
                self.cache_caveat.as_deref().unwrap_or("metadata may stay cached")
            ),
            _ => "warm (caches left as they were; --cold evicts first)".to_string(),
        };
        let end = match self.sync_s {
            Some(s) => format!(
                "durable (the time includes a syncfs of {}: {}; returned after {})",
                match self.synced.len() {
                    0 => "no file system".to_string(),
                    1 => format!("the file system holding {}", self.synced[0]),
                    _ => format!("the file systems holding {}", self.synced.join(", ")),
                },
                fmt_secs(s),
                fmt_secs(self.returned_s)
            ),
            None => "returned (the time ends when the work returned: written data may still be in memory; --durable syncs inside the time)".into(),
        };
        let mut s = format!("timing: {start}, {end}\n");
        if let Some(e) = &self.sync_error {
            s.push_str(&format!("not durable: {e} (what was written may not be on the storage)\n"));
        }
        s
    }

    /// Exit status part: a failed syncfs is a failure.
    pub fn ok(&self) -> bool {
        self.sync_error.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_flags_it_says_warm_and_returned() {
        let t = Timing::default();
        let text = t.text();
        assert!(text.starts_with("timing: warm ("), "{text}");
        assert!(text.contains(", returned ("), "{text}");
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!((v["cache"].as_str(), v["until"].as_str()), (Some("warm"), Some("returned")));
        // Summaries written before these fields existed measured warm and returned.
        let old: Timing = serde_json::from_str("{}").unwrap();
        assert_eq!(old, Timing::default());
    }

    #[test]
    fn durable_adds_the_syncfs_to_the_time() {
        let dir = tempfile::tempdir().unwrap();
        let fd = crate::fs::walk::open_root(dir.path()).unwrap();
        let mut t = Timing::default();
        let fds = [("a".to_string(), fd.as_fd()), ("b".to_string(), fd.as_fd())];
        let total = t.end(1.5, true, &fds);
        assert_eq!(t.until, "durable");
        let s = t.sync_s.unwrap();
        assert!((total - (1.5 + s)).abs() < 1e-12 && t.returned_s == 1.5);
        assert_eq!(t.synced, vec!["a".to_string()], "one syncfs per file system");
        assert!(t.text().contains("durable (the time includes a syncfs of the file system holding a:"), "{}", t.text());
        let mut r = Timing::default();
        assert_eq!(r.end(2.0, false, &fds), 2.0);
        assert_eq!((r.until.as_str(), r.sync_s), ("returned", None));
    }

    #[test]
    fn cold_on_a_memory_file_system_is_refused() {
        let Ok(Some(_)) = cache::memory_fs(Path::new("/dev/shm")) else {
            eprintln!("skipped: /dev/shm is not a memory file system here");
            return;
        };
        let e = check_cold(&[("SRC", Path::new("/dev/shm"))]).unwrap_err().to_string();
        assert!(e.contains("--cold") && e.contains("SRC /dev/shm is on tmpfs"), "{e}");
    }
}
