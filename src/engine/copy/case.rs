//! Names that differ only in case, on a destination that folds case (exFAT, FAT): SRC's
//! `A` and `a` are one entry there. Copied one after the other, the second replaced the
//! first (sync: its temporary renamed over it), so every sync copied again and DST
//! alternated between them, with exit 0 (issue 38). Of SRC's names that fold to one,
//! one is made — the one DST already holds under that exact name, else the first in
//! byte order, so a second sync copies nothing — and the others are a loss of kind
//! `names` (exit 1 without --lossy), with everything below them.

use super::engine::{CopyShared, Node, join};
use super::listing::{Listing, NO_MATCH};
use super::losses::Loss;
use super::unmade::{count_below, name_lost};
use crate::fs::walk::{self, Kind, Meta, open_dir_at};
use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::{AtFlags, StatxFlags, statx};
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::atomic::Ordering;

/// The probe: does `dst` show its entry `name` (made just now, with lowercase ASCII
/// letters) under the name in capitals too? Only the lowercase one was made (its name
/// holds this process's id), so finding the other is finding the same entry. Not by
/// inode: exfat-fuse gives one entry another inode number on every lookup.
pub(super) fn same_entry_by_other_case(dst: BorrowedFd<'_>, name: &CStr) -> bool {
    let Ok(upper) = CString::new(name.to_bytes().to_ascii_uppercase()) else { return false };
    upper.as_c_str() != name && exists(dst, name) && exists(dst, &upper)
}

fn exists(dir: BorrowedFd<'_>, name: &CStr) -> bool {
    statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::TYPE).is_ok()
}

/// A dry run writes no probe: an entry of DST's root with an ASCII letter, looked up
/// with its letters' case swapped (read only): found though not listed, DST folds case.
/// None: no such entry to tell by.
pub(super) fn folds_listed(dst: BorrowedFd<'_>) -> Option<bool> {
    let entries = walk::read_dir(dst).ok()?;
    let e = entries.iter().find(|e| e.name.to_bytes().iter().any(u8::is_ascii_alphabetic))?;
    let swapped: Vec<u8> = e
        .name
        .to_bytes()
        .iter()
        .map(|b| if b.is_ascii_lowercase() { b.to_ascii_uppercase() } else { b.to_ascii_lowercase() })
        .collect();
    if entries.iter().any(|x| x.name.to_bytes() == swapped.as_slice()) {
        return Some(false); // both spellings listed: case-sensitive
    }
    Some(exists(dst, &CString::new(swapped).ok()?))
}

/// The key names fold to: lowercase (Unicode for UTF-8 names, ASCII otherwise).
pub(super) fn folded(name: &[u8]) -> Vec<u8> {
    match std::str::from_utf8(name) {
        Ok(s) => s.to_lowercase().into_bytes(),
        Err(_) => name.to_ascii_lowercase(),
    }
}

/// Which of SRC's entries are lost to case (true), given `matched` (each SRC entry's
/// exact match in DST's listing, or [`NO_MATCH`]). None when no two names fold to one:
/// one map of the directory's names, only on a destination that folds case.
pub(super) fn lost_to_case(src: &Listing, matched: &[u32]) -> Option<Vec<bool>> {
    let mut keeper: HashMap<Vec<u8>, usize> = HashMap::with_capacity(src.len());
    let mut lost: Option<Vec<bool>> = None;
    for i in 0..src.len() {
        let name = src.item(i).name.to_bytes();
        let Some(&k) = keeper.get(&folded(name)) else {
            keeper.insert(folded(name), i);
            continue;
        };
        // DST's exact name wins, then the first in byte order.
        let held = |j: usize| matched[j] != NO_MATCH;
        let i_wins = (held(i) && !held(k)) || (held(i) == held(k) && name < src.item(k).name.to_bytes());
        let l = lost.get_or_insert_with(|| vec![false; src.len()]);
        if i_wins {
            l[k] = true;
            keeper.insert(folded(name), i);
        } else {
            l[i] = true;
        }
    }
    lost
}

/// SRC's entry `name` (`m`) of `node`, lost to case: counted as a `names` loss with
/// everything below it.
pub(super) fn lose(ctx: &CopyShared, node: &Node, name: &CStr, m: &Meta) {
    let shown = format!(
        "{} (only its case differs from another name in {})",
        name_lost(&node.path, name),
        join(&node.path, None)
    );
    if m.kind == Kind::Dir {
        let below = open_dir_at(node.src.as_fd(), name).map(|fd| count_below(ctx, fd.as_fd()));
        let (entries, dirs) = below.as_ref().map_or((0, 0), |b| (b.entries, b.dirs));
        ctx.c.lost_entries.fetch_add(entries - dirs, Ordering::Relaxed);
        ctx.losses.add(Loss::Names, || match below {
            Ok(b) => b.said(shown),
            Err(_) => shown,
        });
    } else {
        ctx.c.lost_entries.fetch_add(1, Ordering::Relaxed);
        ctx.losses.add(Loss::Names, || shown);
    }
}
