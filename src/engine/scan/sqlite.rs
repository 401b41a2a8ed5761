//! SQLite index (embedded, bundled): WAL, prepared statements, one transaction per batch.

use super::backend::{Changes, IndexBackend, Meta, kind_from_name, kind_name};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
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

/// `PRAGMA application_id` of a manyfiles index ("mnyf"), and its `user_version`: the
/// index format. Written when the index is made; checked before anything is written.
pub const APPLICATION_ID: i32 = 0x6d6e_7966;
pub const FORMAT_VERSION: i32 = 1;

/// The columns (name, declared type) of the tables manyfiles makes, as SQLite reports them.
const FILES_COLUMNS: &[(&str, &str)] = &[
    ("id", "INTEGER"),
    ("parent", "INTEGER"),
    ("path", "BLOB"),
    ("name", "BLOB"),
    ("type", "TEXT"),
    ("size", "INTEGER"),
    ("mtime_ns", "INTEGER"),
    ("mode", "INTEGER"),
    ("inode", "INTEGER"),
    ("allocated", "INTEGER"),
];
const SCAN_INFO_COLUMNS: &[(&str, &str)] = &[("key", "TEXT"), ("value", "TEXT")];

/// What an existing file at the index path is, found without writing anything.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    /// Nothing there, an empty file, or an empty database nobody marked: make the index.
    New,
    /// A manyfiles index: marked, or (made before the mark) exactly manyfiles' tables.
    Ours { marked: bool },
}

/// Is the file at `path` a manyfiles index (or nothing yet)? Read-only, and without
/// leaving any file beside it: the database is opened `immutable` unless a -wal file is
/// already there (then its pages count, and reading it creates nothing new).
fn inspect(path: &Path) -> Result<Found, String> {
    let md = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::New),
        Err(e) => return Err(e.to_string()),
        Ok(md) => md,
    };
    if !md.is_file() {
        return Err("not a regular file: refusing to use it as an index".into());
    }
    if md.len() == 0 {
        return Ok(Found::New);
    }
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let abs = std::path::absolute(path).map_err(|e| e.to_string())?;
    // URI: percent-encode what the URI syntax reserves.
    let mut uri = String::from("file:");
    for b in abs.as_os_str().as_encoded_bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => uri.push(*b as char),
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri.push_str(if Path::new(&wal).exists() { "?mode=ro" } else { "?mode=ro&immutable=1" });
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let not_ours = |why: String| {
        Err(format!("{why}: not an index manyfiles made, left as it was (give a new file, or an empty one)"))
    };
    let conn = Connection::open_with_flags(&uri, flags).map_err(|e| e.to_string())?;
    let header = |p: &str| conn.query_row(&format!("PRAGMA {p}"), [], |r| r.get::<_, i32>(0));
    let (app, version) = match (header("application_id"), header("user_version")) {
        (Ok(a), Ok(v)) => (a, v),
        (Err(e), _) | (_, Err(e)) => return not_ours(format!("not a SQLite database ({e})")),
    };
    let objects: Vec<(String, String)> = {
        let q = conn.prepare("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name");
        let rows = q.and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect());
        match rows {
            Ok(r) => r,
            Err(e) => return not_ours(format!("not a readable SQLite database ({e})")),
        }
    };
    let marked = app == APPLICATION_ID;
    if app != 0 && !marked {
        return not_ours(format!("a SQLite database of another application (application_id {app:#x})"));
    }
    if marked && version > FORMAT_VERSION {
        return Err(format!("an index of a newer manyfiles (format {version}; this one writes {FORMAT_VERSION})"));
    }
    if !marked && objects.is_empty() {
        if version != 0 {
            return not_ours(format!("an empty SQLite database with user_version {version}"));
        }
        return Ok(Found::New);
    }
    let columns = |table: &str| -> Result<Vec<(String, String)>, rusqlite::Error> {
        let mut st = conn.prepare(&format!("PRAGMA table_info({table})"))?;
        st.query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, String>(2)?)))?.collect()
    };
    let same = |got: &[(String, String)], want: &[(&str, &str)]| {
        got.len() == want.len() && got.iter().zip(want).all(|((n, t), (wn, wt))| n == wn && t.eq_ignore_ascii_case(wt))
    };
    for (kind, name) in &objects {
        let ok = match (kind.as_str(), name.as_str()) {
            ("table", "files") => same(&columns("files").map_err(|e| e.to_string())?, FILES_COLUMNS),
            ("table", "scan_info") => same(&columns("scan_info").map_err(|e| e.to_string())?, SCAN_INFO_COLUMNS),
            ("view", "dirs") => true,
            // Tables a user added to a marked index are theirs to keep; ours are untouched.
            _ => marked,
        };
        if !ok {
            let what = match name.as_str() {
                "files" | "scan_info" => format!("it holds a {kind} '{name}' of another schema"),
                _ => format!("it holds a {kind} '{name}' manyfiles does not make"),
            };
            return not_ours(what);
        }
    }
    Ok(Found::Ours { marked })
}

impl Sqlite {
    /// Open (or create) the index and its schema. A file that is not a manyfiles index
    /// (not SQLite, another application's database, tables manyfiles does not make, or
    /// a `files` table of another schema) is refused before anything is written to it.
    /// Fails too on a directory that does not exist, or a database another process is writing.
    pub fn open(path: &Path) -> Result<Sqlite, String> {
        let found = inspect(path)?;
        let conn = Connection::open(path).map_err(|e| e.to_string())?;
        // WAL: readers are not blocked while a scan writes; NORMAL sync is safe with WAL
        // (a crash loses at most the last transactions, never consistency).
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(|e| e.to_string())?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(|e| e.to_string())?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(|e| e.to_string())?;
        conn.pragma_update(None, "cache_size", -32768).map_err(|e| e.to_string())?; // 32 MiB
        conn.execute_batch(SCHEMA).map_err(|e| e.to_string())?;
        if found != (Found::Ours { marked: true }) {
            // A new index, or one made before the mark: mark it now.
            conn.pragma_update(None, "application_id", APPLICATION_ID).map_err(|e| e.to_string())?;
            conn.pragma_update(None, "user_version", FORMAT_VERSION).map_err(|e| e.to_string())?;
        }
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
