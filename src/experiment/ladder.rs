//! The ladder: a fixed total of bytes split into 1, 4, 16, ... files. Time against file
//! count shows the per-file cost; the fit separates it from the per-byte cost.

use crate::error::{Error, Result};
use crate::tree::{SizeDist, TreeSpec};

#[derive(Debug, Clone, PartialEq)]
pub struct LadderSpec {
    pub total: u64,
    pub from: u64,
    pub to: u64,
    pub step: u64,
}

impl Default for LadderSpec {
    fn default() -> Self {
        LadderSpec { total: 64 << 20, from: 1, to: 65_536, step: 4 }
    }
}

/// Largest number of rungs (a typo like `--step 1.0001` must not make millions).
const MAX_RUNGS: usize = 64;

impl LadderSpec {
    /// File counts of the rungs: from, from·step, ... up to `to` (inclusive).
    pub fn rungs(&self) -> Result<Vec<u64>> {
        if self.from == 0 {
            return Err(Error::bad("--from", "must be at least 1"));
        }
        if self.to == 0 {
            return Err(Error::bad("--to", "must be at least 1"));
        }
        if self.from > self.to {
            return Err(Error::bad("--from", format!("{} is larger than --to {}", self.from, self.to)));
        }
        if self.step < 2 {
            return Err(Error::bad("--step", "must be at least 2"));
        }
        if self.total == 0 {
            return Err(Error::bad("--total", "must be more than 0 bytes"));
        }
        let mut v = Vec::new();
        let mut n = self.from;
        while n <= self.to {
            v.push(n);
            if v.len() > MAX_RUNGS {
                return Err(Error::bad("--step", format!("more than {MAX_RUNGS} rungs between --from and --to")));
            }
            n = match n.checked_mul(self.step) {
                Some(x) => x,
                None => break,
            };
        }
        Ok(v)
    }

    /// One tree per rung: `shape` gives layout, names, content and seed; each rung has
    /// n files of total/n bytes (rounded down).
    pub fn trees(&self, shape: &TreeSpec) -> Result<Vec<TreeSpec>> {
        Ok(self
            .rungs()?
            .into_iter()
            .map(|n| TreeSpec { files: n, size: SizeDist::Fixed { bytes: self.total / n }, ..shape.clone() })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rungs() {
        let r = LadderSpec::default().rungs().unwrap();
        assert_eq!(r, vec![1, 4, 16, 64, 256, 1024, 4096, 16384, 65536]);
    }

    #[test]
    fn bad_rungs() {
        let bad = |f, t, s, tot| LadderSpec { total: tot, from: f, to: t, step: s }.rungs().unwrap_err();
        assert!(bad(0, 4, 4, 1).to_string().starts_with("--from"));
        assert!(bad(8, 4, 4, 1).to_string().contains("larger than --to"));
        assert!(bad(1, 4, 1, 1).to_string().starts_with("--step"));
        assert!(bad(1, 4, 2, 0).to_string().starts_with("--total"));
        assert_eq!(bad(1, 4, 2, 0).exit_code(), 2);
    }
}
