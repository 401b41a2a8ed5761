//! One backend test suite, run against SQLite (temp files) and a real PostgreSQL server
//! (MANYFILES_TEST_PG, or a throwaway server this test starts and stops: initdb in a
//! temp dir, bound to 127.0.0.1 on a free port). In CI (CI=true) the PostgreSQL run
//! must happen; elsewhere it is skipped with a reason when PostgreSQL is not installed.

mod common;

use common::{Run, assert_bad_input, run};
use manyfiles::engine::scan::DbUrl;
use manyfiles::engine::scan::backend::Meta;
use manyfiles::fs::walk::Kind;
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

/// How the suite talks to one database kind.
struct Backend {
    name: &'static str,
    /// A fresh, empty index named `name`: its --db URL.
    new_db: Box<dyn Fn(&str) -> String>,
    /// Run a `SELECT count(*) …` and return the number.
    count: Box<dyn Fn(&str, &str) -> i64>,
    /// Something that changes when any row of `files` is written.
    fingerprint: Box<dyn Fn(&str) -> String>,
}

/// The tree as the file system reports it: path (relative, root = "") → metadata.
fn snapshot(root: &Path) -> BTreeMap<Vec<u8>, Meta> {
    fn meta(md: &std::fs::Metadata) -> Meta {
        Meta {
            kind: Kind::from_mode(md.mode()),
            size: md.size(),
            mtime_ns: md.mtime() * 1_000_000_000 + md.mtime_nsec(),
            mode: md.mode() & 0o7777,
            inode: md.ino(),
            allocated: md.blocks() * 512,
        }
    }
    fn walk(dir: &Path, rel: &str, out: &mut BTreeMap<Vec<u8>, Meta>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            let path = if rel.is_empty() { name } else { format!("{rel}/{name}") };
            let md = std::fs::symlink_metadata(e.path()).unwrap();
            out.insert(path.clone().into_bytes(), meta(&md));
            if md.is_dir() {
                walk(&e.path(), &path, out);
            }
        }
    }
    let mut out = BTreeMap::new();
    out.insert(Vec::new(), meta(&std::fs::symlink_metadata(root).unwrap()));
    walk(root, "", &mut out);
    out
}

/// Every row of the index, read through the same trait the scan writes with.
fn rows(url: &str) -> BTreeMap<Vec<u8>, Meta> {
    let mut db = DbUrl::parse(url).unwrap().open().unwrap();
    let mut out = BTreeMap::new();
    db.load(&mut |_, path, meta| {
        out.insert(path.to_vec(), meta);
    })
    .unwrap();
    out
}

fn scan(tree: &Path, url: &str, extra: &[&str]) -> (Run, Value) {
    let json = tree.with_extension("scan.json");
    let mut args = vec!["scan".to_string(), tree.display().to_string(), "--db".into(), url.into()];
    args.extend(["--json".to_string(), json.display().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let r = run(&args);
    let v = std::fs::read(&json).map(|b| serde_json::from_slice(&b).unwrap()).unwrap_or(Value::Null);
    (r, v)
}

fn diff(v: &Value) -> [u64; 4] {
    let d = &v["diff"];
    ["new", "changed", "deleted", "unchanged"].map(|k| d[k].as_u64().unwrap())
}

/// A small tree with nested directories, files of several sizes, a symlink and a FIFO.
fn make_tree(base: &Path) -> PathBuf {
    let t = base.join("tree");
    for d in 0..4 {
        for s in 0..3 {
            let dir = t.join(format!("d{d}/s{s}"));
            std::fs::create_dir_all(&dir).unwrap();
            for f in 0..(5 + d * 3 + s) {
                std::fs::write(dir.join(format!("f{f}.dat")), vec![b'x'; f * 997 + d]).unwrap();
            }
        }
    }
    std::fs::write(t.join("top.txt"), b"top").unwrap();
    std::os::unix::fs::symlink("d0/s0/f1.dat", t.join("link")).unwrap();
    let fifo = t.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    t
}

fn index_matches_tree(b: &Backend, base: &Path) {
    let tree = make_tree(base);
    let url = (b.new_db)("matches");
    let (r, v) = scan(&tree, &url, &["--threads", "3"]);
    r.ok();
    let want = snapshot(&tree);
    let got = rows(&url);
    assert_eq!(got, want, "{}: index rows differ from the tree", b.name);
    assert_eq!(diff(&v), [want.len() as u64, 0, 0, 0]);
    assert_eq!(v["entries"].as_u64(), Some(want.len() as u64));
    assert_eq!(v["symlinks"].as_u64(), Some(1));
    assert_eq!(v["other"].as_u64(), Some(1));
    assert_eq!(v["dirs"].as_u64(), Some(1 + 4 + 12));
    for k in ["walk_thread_s", "stat_thread_s", "db_write_s", "commit_s"] {
        assert!(v["phases"][k].as_f64().unwrap() > 0.0, "{}: phase {k} not timed", b.name);
    }
    // Every row but the root has a parent, and every parent is a directory.
    assert_eq!(
        (b.count)(&url, "SELECT count(*) FROM files f LEFT JOIN files p ON f.parent = p.id WHERE p.id IS NULL"),
        1
    );
    assert_eq!(
        (b.count)(&url, "SELECT count(*) FROM files f JOIN files p ON f.parent = p.id WHERE p.type <> 'dir'"),
        0
    );
    assert_eq!((b.count)(&url, "SELECT count(*) FROM dirs"), 17);
}

fn unchanged_rescan_writes_nothing(b: &Backend, base: &Path) {
    let tree = make_tree(base);
    let url = (b.new_db)("unchanged");
    scan(&tree, &url, &[]).0.ok();
    let before = (b.fingerprint)(&url);
    let (r, v) = scan(&tree, &url, &[]);
    r.ok();
    let n = snapshot(&tree).len() as u64;
    assert_eq!(diff(&v), [0, 0, 0, n], "{}", r.stdout);
    assert_eq!((b.fingerprint)(&url), before, "{}: an unchanged rescan wrote rows", b.name);
    assert!(r.stdout.contains(&format!("0 new, 0 changed, 0 deleted, {n} unchanged")), "{}", r.stdout);
}

fn rescan_applies_changes(b: &Backend, base: &Path) {
    let tree = make_tree(base);
    let url = (b.new_db)("changes");
    scan(&tree, &url, &[]).0.ok();
    let before = snapshot(&tree);
    std::thread::sleep(std::time::Duration::from_millis(20)); // distinct mtimes
    std::fs::write(tree.join("d1/s0/new1"), b"n").unwrap();
    std::fs::create_dir(tree.join("d2/newdir")).unwrap();
    std::fs::write(tree.join("d2/newdir/new2"), b"nn").unwrap();
    std::fs::write(tree.join("d0/s1/f3.dat"), b"changed").unwrap();
    std::fs::set_permissions(tree.join("top.txt"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::remove_file(tree.join("d3/s2/f0.dat")).unwrap();
    std::fs::remove_dir_all(tree.join("d3/s1")).unwrap();
    std::fs::remove_file(tree.join("link")).unwrap();
    std::os::unix::fs::symlink("elsewhere", tree.join("link")).unwrap(); // same path, new inode
    let after = snapshot(&tree);
    let new = after.keys().filter(|k| !before.contains_key(*k)).count() as u64;
    let deleted = before.keys().filter(|k| !after.contains_key(*k)).count() as u64;
    let changed = after.iter().filter(|(k, m)| before.get(*k).is_some_and(|o| o != *m)).count() as u64;
    let unchanged = after.len() as u64 - new - changed;
    assert!(new == 3 && deleted > 5 && changed >= 4, "the test's own edits: {new} {deleted} {changed}");
    let (r, v) = scan(&tree, &url, &[]);
    r.ok();
    assert_eq!(diff(&v), [new, changed, deleted, unchanged], "{}: {}", b.name, r.stdout);
    assert_eq!(rows(&url), after, "{}: index after rescan differs from the tree", b.name);
    assert_eq!(
        (b.count)(&url, "SELECT count(*) FROM files f LEFT JOIN files p ON f.parent = p.id WHERE p.id IS NULL"),
        1
    );
}

fn other_root_is_refused(b: &Backend, base: &Path) {
    let tree = make_tree(base);
    let other = base.join("other");
    std::fs::create_dir(&other).unwrap();
    let url = (b.new_db)("otherroot");
    scan(&tree, &url, &[]).0.ok();
    let before = (b.fingerprint)(&url);
    let r = run(["scan", other.to_str().unwrap(), "--db", &url]);
    assert_bad_input(&r, "--db", "an index of another tree");
    assert_eq!((b.fingerprint)(&url), before);
}

/// Runs the scan as an unprivileged user when the test is root (root reads everything).
fn denied_directories_are_listed_and_kept(b: &Backend, base: &Path) {
    let root = rustix::process::geteuid().is_root();
    let tree = make_tree(base);
    for p in [base, &tree] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let mut p = base.parent();
    while let Some(d) = p {
        if root && d.starts_with(std::env::temp_dir()) && d != std::env::temp_dir() {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        p = d.parent();
    }
    let url = (b.new_db)("denied");
    let as_user = |args: &[&str]| -> Run {
        let mut c = if root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(common::bin());
            c
        } else {
            Command::new(common::bin())
        };
        let o = c.args(args).output().unwrap();
        Run {
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into(),
            stderr: String::from_utf8_lossy(&o.stderr).into(),
        }
    };
    let t = tree.to_str().unwrap();
    as_user(&["scan", t, "--db", &url]).ok();
    let indexed = rows(&url).len();
    let locked = tree.join("d1/s2");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let r = as_user(&["scan", t, "--db", &url]);
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    r.expect_code(1); // partial: the denied directory is reported, the rest indexed
    assert!(r.stdout.contains("1 directories denied"), "{}: {}", b.name, r.stdout);
    assert!(r.stdout.contains("not readable: d1/s2"), "{}", r.stdout);
    // Its files are kept (not known to be gone); only its own mode changed.
    assert_eq!(rows(&url).len(), indexed);
    assert!(r.stdout.contains("0 new, 1 changed, 0 deleted"), "{}", r.stdout);
}

fn suite(b: &Backend) {
    let cases: [(&str, fn(&Backend, &Path)); 5] = [
        ("index_matches_tree", index_matches_tree),
        ("unchanged_rescan_writes_nothing", unchanged_rescan_writes_nothing),
        ("rescan_applies_changes", rescan_applies_changes),
        ("other_root_is_refused", other_root_is_refused),
        ("denied_directories_are_listed_and_kept", denied_directories_are_listed_and_kept),
    ];
    for (name, case) in cases {
        eprintln!("{}: {name}", b.name);
        let base = tempfile::tempdir().unwrap();
        case(b, base.path());
    }
}

#[test]
fn sqlite_backend() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap(); // the denied case runs as nobody
    let d = dir.path().to_path_buf();
    let file = move |url: &str| url.strip_prefix("sqlite:").unwrap().to_string();
    let b = Backend {
        name: "sqlite",
        new_db: Box::new(move |name| format!("sqlite:{}", d.join(format!("{name}.db")).display())),
        count: Box::new(move |url, sql| {
            let c = rusqlite::Connection::open(file(url)).unwrap();
            c.query_row(sql, [], |r| r.get(0)).unwrap()
        }),
        fingerprint: Box::new(move |url| {
            // The database and its WAL, byte for byte.
            let f = file(url);
            let mut s = String::new();
            for p in [f.clone(), format!("{f}-wal")] {
                if let Ok(b) = std::fs::read(&p) {
                    let mut h = common::Fnv::new();
                    h.update(&b);
                    s.push_str(&format!("{p}:{}:{};", b.len(), h.finish()));
                }
            }
            s
        }),
    };
    suite(&b);
}

/// A PostgreSQL server owned by this test: initdb into a temp dir, started on a free
/// port of 127.0.0.1 (and a socket in the temp dir), stopped and removed on drop.
struct PgServer {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
}

impl PgServer {
    fn bin_dir() -> Option<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|p| p.join("initdb").exists())
            .collect();
        found.sort();
        found.pop()
    }

    fn cmd(&self, tool: &str) -> Command {
        let mut c = if self.as_postgres {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=postgres", "--regid=postgres", "--init-groups", "--"]).arg(self.bin.join(tool));
            c
        } else {
            Command::new(self.bin.join(tool))
        };
        c.current_dir(self.dir.path());
        c
    }

    fn start() -> PgServer {
        let bin = Self::bin_dir().expect("PostgreSQL binaries in /usr/lib/postgresql/*/bin");
        let dir = tempfile::tempdir().unwrap();
        let as_postgres = rustix::process::geteuid().is_root(); // initdb refuses to run as root
        if as_postgres {
            let out = Command::new("id").args(["-u", "postgres"]).output().unwrap();
            let uid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().expect("a postgres user");
            let out = Command::new("id").args(["-g", "postgres"]).output().unwrap();
            let gid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let s = PgServer { dir, bin, port, as_postgres };
        let data = s.dir.path().join("data");
        let ok = s
            .cmd("initdb")
            .args(["-D", data.to_str().unwrap(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .output()
            .unwrap();
        assert!(ok.status.success(), "initdb: {}", String::from_utf8_lossy(&ok.stderr));
        let opts = format!("-k {} -h 127.0.0.1 -p {} -F", s.dir.path().display(), s.port);
        let log = s.dir.path().join("log");
        let ok = s
            .cmd("pg_ctl")
            .args(["-D", data.to_str().unwrap(), "-o", &opts, "-l", log.to_str().unwrap(), "-w", "start"])
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "pg_ctl start: {}{}",
            String::from_utf8_lossy(&ok.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        s
    }

    fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let _ = self.cmd("pg_ctl").args(["-D", data.to_str().unwrap(), "-m", "fast", "-w", "stop"]).output();
    }
}

fn pg_client(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).unwrap()
}

#[test]
fn postgres_backend() {
    // A server given from outside (URL of a database where we may CREATE DATABASE), or our own.
    let given = std::env::var("MANYFILES_TEST_PG").ok();
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if given.is_none() && PgServer::bin_dir().is_none() {
        assert!(!ci, "CI=true but PostgreSQL is not installed (.ci/run installs it)");
        eprintln!("skipped: PostgreSQL is not installed (apt-get install postgresql) and MANYFILES_TEST_PG is not set");
        return;
    }
    let server = if given.is_none() { Some(PgServer::start()) } else { None };
    let admin = given.clone().unwrap_or_else(|| server.as_ref().unwrap().url("postgres"));
    let base = admin.rsplit_once('/').unwrap().0.to_string();
    let run_id = std::process::id();
    let created = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let b = Backend {
        name: "postgres",
        new_db: Box::new({
            let (admin, base, created) = (admin.clone(), base.clone(), created.clone());
            move |name| {
                let db = format!("manyfiles_test_{run_id}_{name}");
                let mut c = pg_client(&admin);
                c.batch_execute(&format!("DROP DATABASE IF EXISTS {db}")).unwrap();
                c.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
                created.lock().unwrap().push(db.clone());
                format!("{base}/{db}")
            }
        }),
        count: Box::new(|url, sql| pg_client(url).query_one(sql, &[]).unwrap().get(0)),
        fingerprint: Box::new(|url| {
            // xmin changes on every insert or update of a row; the count on deletes.
            let r = pg_client(url)
                .query_one(
                    "SELECT count(*)::text || ':' || coalesce(string_agg(xmin::text, ',' ORDER BY id), '') FROM files",
                    &[],
                )
                .unwrap();
            r.get(0)
        }),
    };
    suite(&b);
    foreign_schema_is_not_touched(&b);
    drop(b);
    if given.is_some() {
        let mut c = pg_client(&admin);
        for db in created.lock().unwrap().iter() {
            let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {db}"));
        }
    }
    drop(server);
}

/// Issue 25, Why 7: a PostgreSQL schema holding tables manyfiles did not make (a `files`
/// table of other columns; an unrelated table) → exit 2, one line, nothing altered (the
/// schema's relations, columns, comments and rows as they were). Its own index (marked)
/// is rescanned, and a table a user adds beside it is left alone.
fn foreign_schema_is_not_touched(b: &Backend) {
    let base = tempfile::tempdir().unwrap();
    let tree = make_tree(base.path());
    let state = |url: &str| -> String {
        let mut c = pg_client(url);
        let rels: String = c
            .query_one(
                "SELECT coalesce(string_agg(c.relname::text || ':' || c.relkind::text || ':' || \
                 coalesce(obj_description(c.oid, 'pg_class'), ''), ',' ORDER BY c.relname), '') \
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'",
                &[],
            )
            .unwrap()
            .get(0);
        let cols: String = c
            .query_one(
                "SELECT coalesce(string_agg(table_name || '.' || column_name || ':' || data_type, ',' \
                 ORDER BY table_name, ordinal_position), '') FROM information_schema.columns WHERE table_schema = 'public'",
                &[],
            )
            .unwrap()
            .get(0);
        format!("{rels}|{cols}")
    };
    for (name, ddl, says, rows) in [
        (
            "foreign_files",
            "CREATE TABLE files (path TEXT PRIMARY KEY, owner TEXT); INSERT INTO files VALUES ('/a', 'me');",
            "'files' of another definition",
            "SELECT string_agg(path || owner, ',') FROM files",
        ),
        (
            "foreign_other",
            "CREATE TABLE customers (id INT PRIMARY KEY, name TEXT); INSERT INTO customers VALUES (1, 'x');",
            "'customers'",
            "SELECT string_agg(id || name, ',') FROM customers",
        ),
    ] {
        let url = (b.new_db)(name);
        pg_client(&url).batch_execute(ddl).unwrap();
        let before = (state(&url), pg_client(&url).query_one(rows, &[]).unwrap().get::<_, String>(0));
        let r = run(["scan", tree.to_str().unwrap(), "--db", &url]);
        common::assert_bad_input(&r, "--db", name);
        assert!(r.stderr.contains(says), "{name}: {}", r.stderr);
        let after = (state(&url), pg_client(&url).query_one(rows, &[]).unwrap().get::<_, String>(0));
        assert_eq!(after, before, "{name}: the schema and its rows must be as they were");
    }
    // Its own index: marked when made, rescanned; a user's table beside it is kept.
    let url = (b.new_db)("own_marked");
    scan(&tree, &url, &[]).0.ok();
    let mark: String =
        pg_client(&url).query_one("SELECT obj_description('files'::regclass, 'pg_class')", &[]).unwrap().get(0);
    assert_eq!(mark, "manyfiles index 1");
    pg_client(&url).batch_execute("CREATE TABLE my_notes (n TEXT); INSERT INTO my_notes VALUES ('keep');").unwrap();
    let (r, _) = scan(&tree, &url, &[]);
    r.ok();
    let kept: String = pg_client(&url).query_one("SELECT n FROM my_notes", &[]).unwrap().get(0);
    assert_eq!(kept, "keep");
}
