//! The index a scan writes: one trait, one file per database (sqlite.rs, postgres.rs).
//!
//! Rows are keyed by an id the scan assigns (so a child can name its parent's id
//! without a round trip); `path` is unique. Paths and names are bytes (BLOB / bytea):
//! Linux names need not be UTF-8. The root directory is the row with the empty path.

use crate::fs::walk::Kind;

/// What a scan records about one entry; a change in any field is a change of the row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Meta {
    pub kind: Kind,
    pub size: u64,
    /// Modification time in nanoseconds since the epoch.
    pub mtime_ns: i64,
    pub mode: u32,
    pub inode: u64,
    /// st_blocks × 512.
    pub allocated: u64,
}

/// A row to insert.
#[derive(Debug, Clone, Copy)]
pub struct NewRow<'a> {
    pub id: i64,
    /// None for the root.
    pub parent: Option<i64>,
    pub path: &'a [u8],
    pub name: &'a [u8],
    pub meta: Meta,
}

/// One batch of writes, applied inside one transaction.
#[derive(Debug, Default)]
pub struct Changes<'a> {
    pub inserts: Vec<NewRow<'a>>,
    /// (id, new metadata): path, name and parent of an id never change.
    pub updates: Vec<(i64, Meta)>,
    pub deletes: Vec<i64>,
}

impl Changes<'_> {
    pub fn len(&self) -> usize {
        self.inserts.len() + self.updates.len() + self.deletes.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An index database. Errors are one-line strings; the caller names the flag.
pub trait IndexBackend: Send {
    /// Where the index lives, without secrets (e.g. `postgres://user@host:5432/db`).
    fn describe(&self) -> String;
    /// Rows of this many changes per transaction.
    fn batch_rows(&self) -> usize;
    /// The root the index was made from, if any.
    fn root(&mut self) -> Result<Option<String>, String>;
    /// Record the root (in the same transaction as the first batch).
    fn set_root(&mut self, root: &str) -> Result<(), String>;
    /// Rows in the index.
    fn count(&mut self) -> Result<u64, String>;
    /// Every indexed row, streamed: (id, path, metadata).
    fn load(&mut self, f: &mut dyn FnMut(i64, &[u8], Meta)) -> Result<(), String>;
    /// Write a batch; opens a transaction if none is open.
    fn apply(&mut self, c: &Changes) -> Result<(), String>;
    /// Commit the open transaction (nothing when none is open).
    fn commit(&mut self) -> Result<(), String>;
}

/// Stored type names (readable in SQL: `WHERE type = 'dir'`).
pub fn kind_name(k: Kind) -> &'static str {
    k.name()
}

pub fn kind_from_name(s: &str) -> Kind {
    match s {
        "file" => Kind::File,
        "dir" => Kind::Dir,
        "symlink" => Kind::Symlink,
        _ => Kind::Other,
    }
}
