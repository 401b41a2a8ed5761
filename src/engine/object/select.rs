//! Filter rules (`--exclude`, `--include`, `--filter`, `--files-from`; `engine::filter`,
//! rsync's meaning) on an object side: a key's path below the prefix is what a rule
//! matches, as a file's path below SRC or DST is on a file system.
//!
//! An object store has keys, not directories: here a "directory" is a key prefix ending
//! in `/` that has at least one key below it (`a/b/c` implies the directories `a` and
//! `a/b`). Each key is judged as rsync's walk would reach it: every directory above it
//! from the top down (as a directory: `dir/` rules match it), the first excluded one
//! leaving out everything below it, then the key itself (as a file). So `- cache/`
//! leaves out every key below `cache/` and no key named `cache`, and an excluded
//! directory counts once in `excluded`, as the local engines count it (nothing below it
//! is looked at). Where this differs from a file system: a directory with nothing in it
//! does not exist on a store, so no rule can match one there (rsync's `+ */`, `- *`
//! makes empty directories at a local DST and nothing on a store), and a "folder" marker
//! key (`dir/`, a console's empty folder) is judged as its directory.
//!
//! On the receiving side (what `sync --delete` may remove), a directory the source has
//! too is not judged (it is not deleted; rsync looks at each entry inside it), the first
//! one it has not is, and so is everything below that (rsync and the local engine keep
//! what is protected inside a directory they delete): [`Keys::present`].

use crate::engine::filter::Filter;
use std::collections::{HashMap, HashSet};

/// The directories `rels` (paths below a prefix) imply: `a` and `a/b` for `a/b/c`.
pub fn dirs_of<'s>(rels: impl Iterator<Item = &'s str>) -> HashSet<String> {
    let mut dirs = HashSet::new();
    for rel in rels {
        let mut d = rel;
        while let Some(i) = d.rfind('/') {
            d = &d[..i];
            if !dirs.insert(d.to_string()) {
                break;
            }
        }
    }
    dirs
}

/// Which side's rules decide ([`Filter::excluded`], [`Filter::protected`],
/// [`Filter::spares`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// What is copied, listed or scanned (the sender's rules).
    Sender,
    /// What `sync --delete` may remove at DST (the receiver's rules).
    Receiver,
    /// What `rm` keeps (either side's rules).
    Rm,
}

/// Keys judged one by one, the directories above them remembered.
#[derive(Debug)]
pub struct Keys<'a> {
    filter: Option<&'a Filter>,
    side: Side,
    /// Directories judged so far: excluded or not.
    dirs: HashMap<String, bool>,
    /// Directories the source has (receiving side): not judged.
    present: HashSet<String>,
    /// Keys and directories left out, each counted where it was decided (a directory
    /// once, nothing below it again).
    pub excluded: u64,
}

impl<'a> Keys<'a> {
    pub fn new(filter: Option<&'a Filter>, side: Side) -> Keys<'a> {
        Keys { filter, side, dirs: HashMap::new(), present: HashSet::new(), excluded: 0 }
    }

    /// The directories the source has (their paths below the prefix), not judged.
    pub fn present(mut self, dirs: HashSet<String>) -> Keys<'a> {
        self.present = dirs;
        self
    }

    fn test(&self, rel: &str, is_dir: bool) -> bool {
        let Some(f) = self.filter else { return false };
        let rel = rel.as_bytes();
        match self.side {
            Side::Sender => f.excluded(rel, is_dir),
            Side::Receiver => f.protected(rel, is_dir),
            Side::Rm => f.spares(rel, is_dir),
        }
    }

    /// Is the key at `rel` (its path below the prefix, no leading `/`) left out: not
    /// copied (sender), kept from deletion (receiver, rm)? A `rel` ending in `/` (a folder
    /// marker) is judged as its directory.
    pub fn out(&mut self, rel: &str) -> bool {
        if self.filter.is_none() || rel.is_empty() {
            return false;
        }
        for (i, _) in rel.match_indices('/') {
            let dir = &rel[..i];
            if self.present.contains(dir) {
                continue;
            }
            match self.dirs.get(dir) {
                Some(true) => return true,
                Some(false) => continue,
                None => {
                    let out = self.test(dir, true);
                    self.dirs.insert(dir.to_string(), out);
                    if out {
                        self.excluded += 1;
                        return true;
                    }
                }
            }
        }
        if rel.ends_with('/') {
            return false;
        }
        let out = self.test(rel, false);
        self.excluded += out as u64;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(rules: &[&str], side: Side, keys: &[&str]) -> (Vec<String>, u64) {
        let f = Filter::from_rules(rules).unwrap();
        let mut k = Keys::new(Some(&f), side);
        let kept = keys.iter().filter(|r| !k.out(r)).map(|r| r.to_string()).collect();
        (kept, k.excluded)
    }

    #[test]
    fn a_directory_rule_matches_a_prefix_with_keys_below_and_counts_once() {
        let keys = ["a.txt", "x.tmp", "cache/1", "cache/2/3", "d/cache/4", "cache", "d/e.tmp", "d/f"];
        let (kept, n) = judge(&["- cache/", "- *.tmp"], Side::Sender, &keys);
        // `cache` (a key, a file) is not the directory; d/cache is (unanchored).
        assert_eq!(kept, ["a.txt", "cache", "d/f"]);
        // x.tmp, cache/ (once for its two keys), d/cache/, d/e.tmp.
        assert_eq!(n, 4);
        let (kept, _) = judge(&["- /cache/"], Side::Sender, &keys);
        assert_eq!(kept, ["a.txt", "x.tmp", "d/cache/4", "cache", "d/e.tmp", "d/f"]);
    }

    #[test]
    fn includes_before_a_catch_all_and_files_from_select_as_on_a_tree() {
        let keys = ["src/a.rs", "src/b.c", "doc/x.rs", "top.rs"];
        // rsync's idiom: every directory, *.rs, nothing else.
        let (kept, _) = judge(&["+ */", "+ *.rs", "- *"], Side::Sender, &keys);
        assert_eq!(kept, ["src/a.rs", "doc/x.rs", "top.rs"]);
        // Without `+ */` a directory falls to `- *` and nothing below it is looked at.
        let (kept, n) = judge(&["+ *.rs", "- *"], Side::Sender, &keys);
        assert_eq!((kept, n), (vec!["top.rs".to_string()], 2));
        let mut f = Filter::default();
        f.files_from("src/b.c\n# a comment\n./top.rs\n").unwrap();
        let mut k = Keys::new(Some(&f), Side::Sender);
        let kept: Vec<&str> = keys.iter().copied().filter(|r| !k.out(r)).collect();
        assert_eq!(kept, ["src/b.c", "top.rs"]);
    }

    #[test]
    fn sides_protect_and_spare_and_no_filter_keeps_all() {
        let keys = ["keep/a", "b", "p.log"];
        let (kept, _) = judge(&["P keep/", "H *.log"], Side::Receiver, &keys);
        assert_eq!(kept, ["b", "p.log"], "a hide rule does not protect");
        let (kept, _) = judge(&["P keep/", "H *.log"], Side::Rm, &keys);
        assert_eq!(kept, ["b"], "rm keeps what either side's rules exclude");
        let mut f = Filter::from_rules(&["- *.log"]).unwrap();
        f.delete_excluded();
        assert!(!Keys::new(Some(&f), Side::Receiver).out("p.log"), "--delete-excluded");
        let mut none = Keys::new(None, Side::Sender);
        assert!(keys.iter().all(|k| !none.out(k)) && none.excluded == 0);
        // A directory the source has is not judged, what lies below it is: a protected
        // directory deleted keeps its contents, one the source has does not.
        let f = Filter::from_rules(&["P keep/"]).unwrap();
        let mut k = Keys::new(Some(&f), Side::Receiver).present(dirs_of(["keep/a", "x/y/z"].into_iter()));
        assert!(!k.out("keep/old") && !k.out("x/keep") && k.out("x/y/keep/1") && k.out("gone/keep/2"));
        assert_eq!(dirs_of(["a/b/c", "a/d", "e"].into_iter()).len(), 2);
        // A folder marker is its directory.
        let (kept, _) = judge(&["- cache/"], Side::Sender, &["cache/", "c/"]);
        assert_eq!(kept, ["c/"]);
    }
}
