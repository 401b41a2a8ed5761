//! SQLite index (embedded, bundled): WAL, prepared statements, one transaction per batch.

use super::backend::{Changes, IndexBackend, Meta, kind_from_name, kind_name};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    parent INTEGER,
    path BLOB NOT NULL UNIQUE,
    name BLOB NOT NULL,
    type TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    mode INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    allocated INTEGER NOT NULL
);
CREATE VIEW IF NOT EXISTS dirs AS SELECT * FROM files WHERE type = 'dir';
CREATE TABLE IF NOT EXISTS scan_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
";

pub struct Sqlite {
    path: PathBuf,
    conn: Connection,
    in_tx: bool,
}

impl Sqlite {
    /// Open (or create) the index and its schema. Fails on a file that is not SQLite,
    /// a directory that does not exist, or a database another process is writing.
    pub fn open(path: &Path) -> Result<Sqlite, String> {
        let conn = Connection::open(path).map_err(|e| e.to_string())?;
        // WAL: readers are not blocked while a scan writes; NORMAL sync is safe with WAL
        // (a crash loses at most the last transactions, never consistency).
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(|e| e.to_string())?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(|e| e.to_string())?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(|e| e.to_string())?;
        conn.pragma_update(None, "cache_size", -32768).map_err(|e| e.to_string())?; // 32 MiB
        conn.execute_batch(SCHEMA).map_err(|e| e.to_string())?;
        Ok(Sqlite { path: path.to_path_buf(), conn, in_tx: false })
    }

    fn begin(&mut self) -> Result<(), String> {
        if !self.in_tx {
            self.conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| e.to_string())?;
            self.in_tx = true;
        }
        Ok(())
    }
}

fn i(v: u64) -> i64 {
    v as i64 // SQLite integers are i64; sizes and inode numbers fit in practice
}

impl IndexBackend for Sqlite {
    fn describe(&self) -> String {
        format!("sqlite:{}", self.path.display())
    }

    fn batch_rows(&self) -> usize {
        20_000
    }

    fn root(&mut self) -> Result<Option<String>, String> {
        self.conn
            .query_row("SELECT value FROM scan_info WHERE key = 'root'", [], |r| r.get(0))
            .optional()
            .map_err(|e| e.to_string())
    }

    fn set_root(&mut self, root: &str) -> Result<(), String> {
        self.begin()?;
        self.conn
            .execute("INSERT OR REPLACE INTO scan_info (key, value) VALUES ('root', ?1)", [root])
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn count(&mut self) -> Result<u64, String> {
        let n: i64 = self.conn.query_row("SELECT count(*) FROM files", [], |r| r.get(0)).map_err(|e| e.to_string())?;
        Ok(n as u64)
    }

    fn load(&mut self, f: &mut dyn FnMut(i64, &[u8], Meta)) -> Result<(), String> {
        let mut st = self
            .conn
            .prepare("SELECT id, path, type, size, mtime_ns, mode, inode, allocated FROM files")
            .map_err(|e| e.to_string())?;
        let mut rows = st.query([]).map_err(|e| e.to_string())?;
        while let Some(r) = rows.next().map_err(|e| e.to_string())? {
            let kind: String = r.get(2).map_err(|e| e.to_string())?;
            let g = |i: usize| r.get::<_, i64>(i).map_err(|e| e.to_string());
            let meta = Meta {
                kind: kind_from_name(&kind),
                size: g(3)? as u64,
                mtime_ns: g(4)?,
                mode: g(5)? as u32,
                inode: g(6)? as u64,
                allocated: g(7)? as u64,
            };
            let path = r.get_ref(1).map_err(|e| e.to_string())?.as_blob().map_err(|e| e.to_string())?;
            f(g(0)?, path, meta);
        }
        Ok(())
    }

    fn apply(&mut self, c: &Changes) -> Result<(), String> {
        self.begin()?;
        let e = |e: rusqlite::Error| e.to_string();
        if !c.inserts.is_empty() {
            let mut st = self
                .conn
                .prepare_cached(
                    "INSERT INTO files (id, parent, path, name, type, size, mtime_ns, mode, inode, allocated) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )
                .map_err(e)?;
            for r in &c.inserts {
                let m = &r.meta;
                st.execute(params![
                    r.id,
                    r.parent,
                    r.path,
                    r.name,
                    kind_name(m.kind),
                    i(m.size),
                    m.mtime_ns,
                    m.mode,
                    i(m.inode),
                    i(m.allocated)
                ])
                .map_err(e)?;
            }
        }
        if !c.updates.is_empty() {
            let mut st = self
                .conn
                .prepare_cached(
                    "UPDATE files SET type = ?2, size = ?3, mtime_ns = ?4, mode = ?5, inode = ?6, allocated = ?7 \
                     WHERE id = ?1",
                )
                .map_err(e)?;
            for (id, m) in &c.updates {
                st.execute(params![id, kind_name(m.kind), i(m.size), m.mtime_ns, m.mode, i(m.inode), i(m.allocated)])
                    .map_err(e)?;
            }
        }
        if !c.deletes.is_empty() {
            let mut st = self.conn.prepare_cached("DELETE FROM files WHERE id = ?1").map_err(e)?;
            for id in &c.deletes {
                st.execute([id]).map_err(e)?;
            }
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), String> {
        if self.in_tx {
            self.conn.execute_batch("COMMIT").map_err(|e| e.to_string())?;
            self.in_tx = false;
        }
        Ok(())
    }
}
