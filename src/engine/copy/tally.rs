//! One directory's tallies in the copy engine (added to the shared counters once per
//! directory, or once per range of its entries when they run on several threads) and the
//! phases its thread time is counted in.

use super::Counters;
use std::sync::atomic::Ordering;

/// Per-directory tallies, added to the shared counters once per directory (what SRC
/// lists goes into the counters at listing, see `do_dir`).
#[derive(Default)]
pub(super) struct Tally {
    pub(super) src_files: u64,
    pub(super) dst_entries: u64,
    pub(super) copied: u64,
    pub(super) deleted: u64,
    pub(super) skipped: u64,
    /// Files whose attributes were set in place (content unchanged).
    pub(super) attrs_updated: u64,
    pub(super) extraneous: u64,
    pub(super) excluded: u64,
    pub(super) bytes: u64,
    pub(super) phase: [std::time::Duration; 5],
}

impl Tally {
    /// Adds `o`'s counts and times to these.
    pub(super) fn add(&mut self, o: &Tally) {
        self.src_files += o.src_files;
        self.dst_entries += o.dst_entries;
        self.copied += o.copied;
        self.deleted += o.deleted;
        self.skipped += o.skipped;
        self.attrs_updated += o.attrs_updated;
        self.extraneous += o.extraneous;
        self.excluded += o.excluded;
        self.bytes += o.bytes;
        for (a, b) in self.phase.iter_mut().zip(o.phase) {
            *a += b;
        }
    }

    pub(super) fn flush(&self, c: &Counters) {
        let add = |a: &std::sync::atomic::AtomicU64, v: u64| {
            if v != 0 {
                a.fetch_add(v, Ordering::Relaxed);
            }
        };
        add(&c.src_files, self.src_files);
        add(&c.dst_entries, self.dst_entries);
        add(&c.copied, self.copied);
        add(&c.deleted, self.deleted);
        add(&c.skipped, self.skipped);
        add(&c.attrs_updated, self.attrs_updated);
        add(&c.extraneous, self.extraneous);
        add(&c.excluded, self.excluded);
        add(&c.bytes, self.bytes);
        for (slot, d) in c.phase_ns.iter().zip(self.phase) {
            add(slot, d.as_nanos() as u64);
        }
    }
}

pub(super) const SCAN_SRC: usize = 0;
pub(super) const SCAN_DST: usize = 1;
pub(super) const COMPARE: usize = 2;
pub(super) const TRANSFER: usize = 3;
pub(super) const DELETE: usize = 4;
