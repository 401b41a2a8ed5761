//! PostgreSQL index: new rows by binary COPY straight into `files` (their ids are new,
//! so nothing to merge); changed rows by binary COPY into a temporary staging table
//! merged with one UPDATE … FROM; deleted rows by one `DELETE … = ANY($1)`. One round
//! trip per statement per batch, never per row.

use super::backend::{Changes, IndexBackend, Meta, kind_from_name, kind_name};
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::{ToSql, Type};
use postgres::{Client, Config, NoTls};
use std::str::FromStr;
use std::time::Duration;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS files (
    id BIGINT PRIMARY KEY,
    parent BIGINT,
    path BYTEA NOT NULL UNIQUE,
    name BYTEA NOT NULL,
    type TEXT NOT NULL,
    size BIGINT NOT NULL,
    mtime_ns BIGINT NOT NULL,
    mode INTEGER NOT NULL,
    inode BIGINT NOT NULL,
    allocated BIGINT NOT NULL
);
CREATE OR REPLACE VIEW dirs AS SELECT * FROM files WHERE type = 'dir';
CREATE TABLE IF NOT EXISTS scan_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TEMP TABLE IF NOT EXISTS scan_stage (
    id BIGINT, type TEXT, size BIGINT, mtime_ns BIGINT, mode INTEGER, inode BIGINT, allocated BIGINT
) ON COMMIT DELETE ROWS;
";

/// Only one scan writes an index at a time (ids are assigned by the scan).
const LOCK_KEY: i64 = 0x6d61_6e79_6669_6c65; // "manyfile"

pub struct Postgres {
    describe: String,
    client: Client,
    in_tx: bool,
}

/// `postgres://user@host:port/db` without the password.
fn describe(cfg: &Config) -> String {
    let host = cfg
        .get_hosts()
        .first()
        .map(|h| match h {
            postgres::config::Host::Tcp(s) => s.clone(),
            postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    format!(
        "postgres://{}@{host}:{port}/{}",
        cfg.get_user().unwrap_or(""),
        cfg.get_dbname().unwrap_or(cfg.get_user().unwrap_or(""))
    )
}

impl Postgres {
    /// Connect, take the scan lock and make the schema: every way this can fail
    /// (unreachable, refused, no such database, no rights) shows here, before any walk.
    pub fn connect(url: &str) -> Result<Postgres, String> {
        let mut cfg = Config::from_str(url).map_err(|e| format!("{url}: {e}"))?;
        if cfg.get_connect_timeout().is_none() {
            cfg.connect_timeout(Duration::from_secs(10));
        }
        let describe = describe(&cfg);
        let mut client = cfg.connect(NoTls).map_err(|e| format!("cannot connect to {describe}: {}", chain(&e)))?;
        // A scan that just ended may still hold the lock for a moment: the server ends its
        // session only after the client went away. Wait a little before calling it busy.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let got = loop {
            let got: bool = client
                .query_one("SELECT pg_try_advisory_lock($1)", &[&LOCK_KEY])
                .map_err(|e| format!("{describe}: {}", chain(&e)))?
                .get(0);
            if got || std::time::Instant::now() >= deadline {
                break got;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        if !got {
            return Err(format!("{describe}: another scan is writing this index"));
        }
        check_schema(&mut client).map_err(|e| format!("{describe}: {e}"))?;
        client.batch_execute(SCHEMA).map_err(|e| format!("{describe}: {}", chain(&e)))?;
        // New, or made before the mark: marked now (the same words every time).
        client
            .batch_execute(&format!("COMMENT ON TABLE files IS '{MARK}'"))
            .map_err(|e| format!("{describe}: {}", chain(&e)))?;
        Ok(Postgres { describe, client, in_tx: false })
    }

    fn begin(&mut self) -> Result<(), String> {
        if !self.in_tx {
            self.client.batch_execute("BEGIN").map_err(|e| chain(&e))?;
            self.in_tx = true;
        }
        Ok(())
    }
}

/// The comment on `files` that marks the schema's tables as a manyfiles index.
pub const MARK: &str = "manyfiles index 1";

const FILES_COLUMNS: &[(&str, &str)] = &[
    ("id", "bigint"),
    ("parent", "bigint"),
    ("path", "bytea"),
    ("name", "bytea"),
    ("type", "text"),
    ("size", "bigint"),
    ("mtime_ns", "bigint"),
    ("mode", "integer"),
    ("inode", "bigint"),
    ("allocated", "bigint"),
];
const SCAN_INFO_COLUMNS: &[(&str, &str)] = &[("key", "text"), ("value", "text")];

/// Before anything is created: the current schema (the first of `search_path`) must hold
/// nothing, or manyfiles' index — marked, or exactly its tables as made before the mark.
/// Tables of other names, or `files`/`scan_info` of other columns → refused, nothing
/// altered. Tables a user added beside a marked index are left alone.
fn check_schema(client: &mut Client) -> Result<(), String> {
    let rows = client
        .query(
            "SELECT c.relname::text, c.relkind::text, coalesce(obj_description(c.oid, 'pg_class'), '') \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'v', 'm', 'p', 'f', 'S') ORDER BY 1",
            &[],
        )
        .map_err(|e| chain(&e))?;
    let objects: Vec<(String, String, String)> = rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect();
    let marked = objects.iter().any(|(n, k, c)| n == "files" && k == "r" && c == MARK);
    let mut columns = |t: &str| -> Result<Vec<(String, String)>, String> {
        let rows = client
            .query(
                "SELECT column_name::text, data_type::text FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
                &[&t],
            )
            .map_err(|e| chain(&e))?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    };
    let same = |got: &[(String, String)], want: &[(&str, &str)]| {
        got.len() == want.len() && got.iter().zip(want).all(|((n, t), (wn, wt))| n == wn && t == wt)
    };
    for (name, kind, _) in &objects {
        let ok = match (name.as_str(), kind.as_str()) {
            ("files", "r") => same(&columns("files")?, FILES_COLUMNS),
            ("scan_info", "r") => same(&columns("scan_info")?, SCAN_INFO_COLUMNS),
            ("dirs", "v") => true,
            ("files" | "scan_info" | "dirs", _) => false,
            _ => marked,
        };
        if !ok {
            let what = match name.as_str() {
                "files" | "scan_info" | "dirs" => format!("its schema holds a '{name}' of another definition"),
                _ => format!("its schema holds '{name}', which manyfiles does not make"),
            };
            return Err(format!(
                "{what}: not an index manyfiles made, left as it was (give an empty database, or another \
                 schema with ?options=-csearch_path%3DNAME)"
            ));
        }
    }
    Ok(())
}

const META_TYPES: [Type; 6] = [Type::TEXT, Type::INT8, Type::INT8, Type::INT4, Type::INT8, Type::INT8];

impl Drop for Postgres {
    fn drop(&mut self) {
        // Release the scan lock now rather than when the server notices the disconnect.
        let _ = self.client.execute("SELECT pg_advisory_unlock($1)", &[&LOCK_KEY]);
    }
}

/// The metadata columns (type, size, mtime_ns, mode, inode, allocated) as SQL values.
struct MetaCols {
    kind: &'static str,
    size: i64,
    mtime_ns: i64,
    mode: i32,
    inode: i64,
    allocated: i64,
}

impl MetaCols {
    fn of(m: &Meta) -> MetaCols {
        // BIGINT is signed: sizes and inode numbers above 2^63 wrap (none seen in practice).
        MetaCols {
            kind: kind_name(m.kind),
            size: m.size as i64,
            mtime_ns: m.mtime_ns,
            mode: m.mode as i32,
            inode: m.inode as i64,
            allocated: m.allocated as i64,
        }
    }
    fn refs(&self) -> [&(dyn ToSql + Sync); 6] {
        [&self.kind, &self.size, &self.mtime_ns, &self.mode, &self.inode, &self.allocated]
    }
}

/// The error with its cause (the postgres crate puts the server's message there).
fn chain(e: &postgres::Error) -> String {
    match std::error::Error::source(e) {
        Some(s) => format!("{e}: {s}"),
        None => e.to_string(),
    }
}

impl IndexBackend for Postgres {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn batch_rows(&self) -> usize {
        50_000
    }

    fn root(&mut self) -> Result<Option<String>, String> {
        let r = self.client.query_opt("SELECT value FROM scan_info WHERE key = 'root'", &[]).map_err(|e| chain(&e))?;
        Ok(r.map(|r| r.get(0)))
    }

    fn set_root(&mut self, root: &str) -> Result<(), String> {
        self.begin()?;
        self.client
            .execute(
                "INSERT INTO scan_info (key, value) VALUES ('root', $1) \
                 ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                &[&root],
            )
            .map(|_| ())
            .map_err(|e| chain(&e))
    }

    fn count(&mut self) -> Result<u64, String> {
        let n: i64 = self.client.query_one("SELECT count(*) FROM files", &[]).map_err(|e| chain(&e))?.get(0);
        Ok(n as u64)
    }

    fn load(&mut self, f: &mut dyn FnMut(i64, &[u8], Meta)) -> Result<(), String> {
        let q = "SELECT id, path, type, size, mtime_ns, mode, inode, allocated FROM files";
        let mut rows = self.client.query_raw(q, std::iter::empty::<&dyn ToSql>()).map_err(|e| chain(&e))?;
        while let Some(r) = rows.next().map_err(|e| chain(&e))? {
            let meta = Meta {
                kind: kind_from_name(r.get::<_, &str>(2)),
                size: r.get::<_, i64>(3) as u64,
                mtime_ns: r.get(4),
                mode: r.get::<_, i32>(5) as u32,
                inode: r.get::<_, i64>(6) as u64,
                allocated: r.get::<_, i64>(7) as u64,
            };
            f(r.get(0), r.get::<_, &[u8]>(1), meta);
        }
        Ok(())
    }

    fn apply(&mut self, c: &Changes) -> Result<(), String> {
        self.begin()?;
        let e = |e: postgres::Error| chain(&e);
        if !c.inserts.is_empty() {
            let sink = self
                .client
                .copy_in(
                    "COPY files (id, parent, path, name, type, size, mtime_ns, mode, inode, allocated) \
                     FROM STDIN BINARY",
                )
                .map_err(e)?;
            let types: Vec<Type> =
                [Type::INT8, Type::INT8, Type::BYTEA, Type::BYTEA].into_iter().chain(META_TYPES).collect();
            let mut w = BinaryCopyInWriter::new(sink, &types);
            for r in &c.inserts {
                let m = MetaCols::of(&r.meta);
                let [k, sz, mt, md, ino, al] = m.refs();
                w.write(&[&r.id, &r.parent, &r.path, &r.name, k, sz, mt, md, ino, al]).map_err(e)?;
            }
            w.finish().map_err(e)?;
        }
        if !c.updates.is_empty() {
            let sink = self
                .client
                .copy_in("COPY scan_stage (id, type, size, mtime_ns, mode, inode, allocated) FROM STDIN BINARY")
                .map_err(e)?;
            let types: Vec<Type> = std::iter::once(Type::INT8).chain(META_TYPES).collect();
            let mut w = BinaryCopyInWriter::new(sink, &types);
            for (id, m) in &c.updates {
                let m = MetaCols::of(m);
                let [k, sz, mt, md, ino, al] = m.refs();
                w.write(&[id, k, sz, mt, md, ino, al]).map_err(e)?;
            }
            w.finish().map_err(e)?;
            self.client
                .batch_execute(
                    "UPDATE files f SET type = s.type, size = s.size, mtime_ns = s.mtime_ns, mode = s.mode, \
                     inode = s.inode, allocated = s.allocated FROM scan_stage s WHERE f.id = s.id; \
                     TRUNCATE scan_stage",
                )
                .map_err(e)?;
        }
        if !c.deletes.is_empty() {
            self.client.execute("DELETE FROM files WHERE id = ANY($1)", &[&c.deletes]).map_err(e)?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), String> {
        if self.in_tx {
            self.client.batch_execute("COMMIT").map_err(|e| chain(&e))?;
            self.in_tx = false;
        }
        Ok(())
    }
}
