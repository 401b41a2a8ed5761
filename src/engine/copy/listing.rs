//! One directory's entries with their metadata (getdents, then one statx per entry, on
//! several threads for a large directory), held compactly, and the pairing of SRC's
//! and DST's listings by name that sync compares.

use super::engine::CopyShared;
use crate::fs::walk::{self, Meta, meta_at};
use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::Mode as FsMode;
use rustix::io::Errno;
use std::ffi::CStr;
use std::sync::atomic::Ordering;

/// One entry of a listing with its metadata.
#[derive(Clone, Copy)]
pub(super) struct Item<'a> {
    pub(super) name: &'a CStr,
    pub(super) m: Meta,
}

/// One directory's entries with their metadata, in getdents' order. Names sit in one
/// buffer: sync holds both sides' listings of a directory at once, and with one
/// allocation per name a directory of 1,000,000 entries took 188 MiB (now about 60 bytes
/// an entry and side).
#[derive(Default)]
pub(super) struct Listing {
    pub(super) names: Vec<u8>,
    /// (offset of the name in `names`, its length without the NUL, metadata)
    pub(super) items: Vec<(u32, u32, Meta)>,
}

/// The name at `off` (`len` bytes and a NUL) in a listing's name buffer. Unchecked: a
/// checked CStr reads the whole name, and for DST's entries, looked up in hash order,
/// that read was a cache miss per entry (8% of a 1,000,000-file sync -n across two file
/// systems, issue 15), while most of them are only compared by metadata.
fn name_in(names: &[u8], off: u32, len: u32) -> &CStr {
    let bytes = &names[off as usize..=(off + len) as usize];
    debug_assert!(CStr::from_bytes_with_nul(bytes).is_ok());
    // SAFETY: `list` stores each name as getdents returned it (a C string: no NUL
    // inside) followed by its NUL, and `off`/`len` are where it stored it.
    unsafe { CStr::from_bytes_with_nul_unchecked(bytes) }
}

/// In [`Listing::matches`]: no entry of that name.
pub(super) const NO_MATCH: u32 = u32::MAX;

impl Listing {
    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    pub(super) fn bytes(&self, (off, len, _): &(u32, u32, Meta)) -> &[u8] {
        &self.names[*off as usize..(off + len) as usize]
    }

    /// Drop the entries the filter leaves out (`rel`: this directory's path from the
    /// root); returns how many. Their names stay in the buffer, unused.
    pub(super) fn exclude(&mut self, filter: &crate::engine::filter::Filter, rel: &[u8]) -> u64 {
        let before = self.items.len();
        let names = &self.names;
        self.items.retain(|&(off, len, m)| {
            let name = &names[off as usize..(off + len) as usize];
            !filter.excluded(&super::engine::rel_join(rel, name), m.kind == crate::fs::walk::Kind::Dir)
        });
        (before - self.items.len()) as u64
    }

    pub(super) fn item(&self, i: usize) -> Item<'_> {
        let (off, len, m) = self.items[i];
        Item { name: name_in(&self.names, off, len), m }
    }

    /// For each of `other`'s entries, the index of this listing's entry of the same name
    /// (or [`NO_MATCH`]). Two directories of one file system with the same names often
    /// list them in the same order (ext4 and others return them in hash order): the
    /// longest prefix that matches pair by pair needs nothing more. The rest goes through
    /// a hash of the names rather than a sort and merge: on 1,000,000 entries a side,
    /// sorting both listings and merging them took 0.9 s on one thread (issue 15); the
    /// lookups of a large directory run on every thread.
    pub(super) fn matches(&self, other: &Listing) -> Vec<u32> {
        let same = self.items.iter().zip(&other.items).take_while(|(a, b)| self.bytes(a) == other.bytes(b)).count();
        let mut out: Vec<u32> = (0..same as u32).collect();
        let (mine, theirs) = (&self.items[same..], &other.items[same..]);
        if theirs.is_empty() {
            return out;
        }
        if mine.is_empty() {
            out.resize(other.len(), NO_MATCH);
            return out;
        }
        // foldhash: SipHash (std's default) was a third of the lookups' time, and names
        // from a directory need no defence against chosen collisions beyond a seed.
        let mut by_name =
            std::collections::HashMap::with_capacity_and_hasher(mine.len(), foldhash::fast::RandomState::default());
        for (i, it) in mine.iter().enumerate() {
            by_name.insert(self.bytes(it), (same + i) as u32);
        }
        let find = |it: &(u32, u32, Meta)| by_name.get(other.bytes(it)).copied().unwrap_or(NO_MATCH);
        if theirs.len() > CHUNK {
            use rayon::prelude::*;
            out.par_extend(theirs.par_iter().with_min_len(CHUNK).map(find));
        } else {
            out.extend(theirs.iter().map(find));
        }
        out
    }
}

/// statx a directory's entries in inode order rather than getdents' (hash) order. Off:
/// not measured faster (issue 15: sync -n and scan of 100,000 files in 100 directories,
/// 5 interleaved rounds each way on a loaded machine, CPU equal, wall within the noise).
const INODE_ORDER: bool = false;

/// Entries per statx task: a directory with more is listed on several threads.
const CHUNK: usize = 2048;

/// List a directory with one statx per entry, unsorted (getdents' order). Entries
/// that vanish between getdents and statx are skipped; other statx errors fail the entry.
/// The statx calls go in chunks on several threads for a large directory.
pub(super) fn list(ctx: &CopyShared, dir: BorrowedFd<'_>, path: &str) -> std::result::Result<Listing, Errno> {
    let own = rustix::fs::openat(dir, c".", walk::DIR_FLAGS, FsMode::empty())?;
    let mut names = Vec::new();
    let mut found: Vec<(u64, u32, u32)> = Vec::new();
    walk::for_each_name(own.as_fd(), |name, ino| {
        let bytes = name.to_bytes_with_nul();
        found.push((ino, names.len() as u32, bytes.len() as u32 - 1));
        names.extend_from_slice(bytes);
    })?;
    drop(own);
    if INODE_ORDER {
        found.sort_unstable_by_key(|f| f.0);
    }
    let stat_one = |&(_, off, len): &(u64, u32, u32)| -> Option<(u32, u32, Meta)> {
        let name = name_in(&names, off, len);
        match meta_at(dir, name) {
            Ok(m) => Some((off, len, m)),
            Err(Errno::NOENT) => None,
            Err(err) => {
                ctx.c.src_entries.fetch_add(1, Ordering::Relaxed);
                ctx.fail_entry(path, Some(name), "stat", err);
                None
            }
        }
    };
    let stat = |part: &[(u64, u32, u32)]| -> Vec<(u32, u32, Meta)> {
        let mut out = Vec::with_capacity(part.len());
        out.extend(part.iter().filter_map(stat_one));
        out
    };
    let items = if ctx.gate.is_some() {
        // In-flight gate: batches of entries on as many threads as it lets through (on a
        // share, statx is a round trip: the more in flight, the sooner the listing ends).
        let per = crate::engine::inflight::map_range(ctx.gate, found.len(), |i| stat_one(&found[i]));
        per.into_iter().flatten().collect()
    } else if found.len() > CHUNK {
        use rayon::prelude::*;
        found.par_chunks(CHUNK).flat_map_iter(stat).collect()
    } else {
        stat(&found)
    };
    let mut out = Listing { names, items };
    out.items.shrink_to_fit();
    out.names.shrink_to_fit();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::walk::Kind;

    fn listing(names: &[&str]) -> Listing {
        let mut l = Listing::default();
        let m = Meta::plain(Kind::File, 0o644, 0);
        for n in names {
            l.items.push((l.names.len() as u32, n.len() as u32, m));
            l.names.extend_from_slice(n.as_bytes());
            l.names.push(0);
        }
        l
    }

    /// What `matches` must find, by names: a brute-force search.
    fn expected(dst: &Listing, src: &Listing) -> Vec<u32> {
        (0..src.len())
            .map(|i| (0..dst.len()).find(|&j| dst.item(j).name == src.item(i).name).map_or(NO_MATCH, |j| j as u32))
            .collect()
    }

    #[test]
    fn matches_pairs_names_in_any_order() {
        let cases: &[(&[&str], &[&str])] = &[
            (&[], &[]),
            (&[], &["a", "b"]),
            (&["a", "b"], &[]),
            (&["a", "b", "c"], &["a", "b", "c"]), // same order: the prefix only
            (&["c", "a", "b"], &["a", "b", "c"]), // another order: the hash only
            (&["a", "b", "x", "c"], &["a", "b", "c", "y"]), // a prefix, then the hash
            (&["a", "ab", "abc"], &["abc", "ab", "a", "abcd"]), // names that are prefixes of others
            (&["a"], &["a", "b", "c"]),           // DST runs out after the prefix
        ];
        for (dst, src) in cases {
            let (d, s) = (listing(dst), listing(src));
            assert_eq!(d.matches(&s), expected(&d, &s), "dst {dst:?} src {src:?}");
        }
    }

    #[test]
    fn matches_a_large_directory_on_every_thread() {
        // More than CHUNK names, in another order on each side, some on one side only.
        let src: Vec<String> = (0..3 * CHUNK).map(|i| format!("f{i}")).collect();
        let dst: Vec<String> =
            (0..3 * CHUNK).rev().filter(|i| i % 7 != 0).map(|i| format!("f{i}")).chain(["only-dst".into()]).collect();
        let (s, d) = (
            listing(&src.iter().map(String::as_str).collect::<Vec<_>>()),
            listing(&dst.iter().map(String::as_str).collect::<Vec<_>>()),
        );
        let got = d.matches(&s);
        assert_eq!(got, expected(&d, &s));
        assert_eq!(got.iter().filter(|&&j| j == NO_MATCH).count(), (3 * CHUNK).div_ceil(7));
    }
}
