//! Rescan diffing: the writer's map of what the index holds, keyed by path key
//! (8 bytes) with the row's id, a hash of its metadata and its parent's key: 32 bytes a
//! row in the table, so a million-row index takes ~64 MiB. Unchanged rows cost one map lookup and no database write; rows
//! the walk did not see are deleted only after a complete walk, and never below a
//! directory the walk could not read.

use super::backend::{Changes, IndexBackend, Meta, NewRow};
use super::producer::{Batch, parent_path, path_key};
use crate::fs::walk::Kind;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

struct Slot {
    /// The row's id (≥ 1), negated once this scan has seen the row.
    id: i64,
    meta: u64,
    /// Parent's key; 0 for the root.
    parent: u64,
}

impl Slot {
    fn seen(&self) -> bool {
        self.id < 0
    }
    fn id(&self) -> i64 {
        self.id.abs()
    }
}

/// New, changed, unchanged and deleted rows of one scan.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct DiffCounts {
    pub new: u64,
    pub changed: u64,
    pub unchanged: u64,
    pub deleted: u64,
}

#[derive(Default)]
pub struct Index {
    map: HashMap<u64, Slot>,
    next_id: i64,
    pub counts: DiffCounts,
}

fn meta_hash(m: &Meta) -> u64 {
    BuildHasherDefault::<DefaultHasher>::default().hash_one(m)
}

impl Index {
    /// Read every row the index holds.
    pub fn load(db: &mut dyn IndexBackend) -> Result<Index, String> {
        // Sized once: growing a table of millions doubles it, and briefly holds both.
        let rows = db.count()?;
        let mut ix = Index { next_id: 1, map: HashMap::with_capacity(rows as usize), ..Default::default() };
        db.load(&mut |id, path, meta| {
            let parent = parent_path(path).map(path_key).unwrap_or(0);
            ix.map.insert(path_key(path), Slot { id, meta: meta_hash(&meta), parent });
            ix.next_id = ix.next_id.max(id + 1);
        })?;
        Ok(ix)
    }

    pub fn indexed(&self) -> usize {
        self.map.len()
    }

    /// Compare a batch with the index and add what must be written to `out`.
    pub fn diff<'b>(&mut self, batch: &'b Batch, out: &mut Changes<'b>) {
        for r in &batch.rows {
            let mh = meta_hash(&r.meta);
            if let Some(slot) = self.map.get_mut(&r.key) {
                slot.id = -slot.id();
                if slot.meta == mh {
                    self.counts.unchanged += 1;
                } else {
                    slot.meta = mh;
                    out.updates.push((slot.id(), r.meta));
                    self.counts.changed += 1;
                }
                continue;
            }
            let id = self.next_id;
            self.next_id += 1;
            // The parent's row was sent (and diffed) before any of its children.
            let parent = r.parent.and_then(|p| self.map.get(&p)).map(|s| s.id());
            out.inserts.push(NewRow { id, parent, path: batch.path(r), name: batch.name(r), meta: r.meta });
            self.counts.new += 1;
            if r.meta.kind == Kind::Dir {
                // Only directories are remembered: children need their id; files are
                // never looked up again in this scan.
                self.map.insert(r.key, Slot { id: -id, meta: mh, parent: r.parent.unwrap_or(0) });
            }
        }
    }

    /// Ids of rows this scan did not see, except those at or below a directory in
    /// `unread` (keys of directories that could not be read: their contents are unknown).
    pub fn missing(&mut self, unread: &HashSet<u64>) -> Vec<i64> {
        let mut out = Vec::new();
        for slot in self.map.values() {
            if slot.seen() {
                continue;
            }
            let mut p = slot.parent;
            let mut below_unread = false;
            while p != 0 {
                if unread.contains(&p) {
                    below_unread = true;
                    break;
                }
                p = self.map.get(&p).map(|s| s.parent).unwrap_or(0);
            }
            if !below_unread {
                out.push(slot.id());
            }
        }
        self.counts.deleted = out.len() as u64;
        out
    }
}
