//! `--verify` on the object engines: after the transfer (and the deletes), every file or
//! object the source has (what the filters select) is read back from DST and compared
//! with the source byte for byte, `in_flight` at once: on upload one GET per object
//! against the file read again; on download one GET per object against the file
//! written, and the file's mtime against the object's (`mtime` metadata, else its
//! last-modified: what download sets); between prefixes one GET of each side. Sizes are
//! compared first (a GET's answer carries the object's): a different size is not read.
//!
//! No ETag is trusted: an ETag is an MD5 of the bytes only for a single-part upload
//! without SSE-KMS or SSE-C (a multipart upload's is an MD5 of the parts' MD5s, and a
//! store may use anything), so comparing it would pass or fail for reasons other than the
//! bytes. Reading them back costs a GET per object (two between prefixes) and the bytes
//! once more; those requests are counted and priced with the run's.
//!
//! In a dry run nothing was written: the comparison says what differs now (a file not
//! yet at DST is `missing`). Differences are counted by kind (`missing`, `size`,
//! `content`, `mode_mtime`, `error`), the first listed, as copy's `--verify` reports
//! them ([`Report`]), and fail the run (exit 1).

use super::{MAX_FAILURES, each, why};
use crate::engine::copy::verify::Report;
use crate::engine::walker::{open_below_same_mount, split_last};
use crate::measure::progress::Progress;
use crate::storage::object_client::ObjectClient;
use futures_util::{Stream, StreamExt};
use object_store::{GetOptions, GetResult, ObjectStore};
use rustix::fs::{Mode, OFlags};
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::Instant;

/// What one comparison found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    Same,
    /// DST has nothing there.
    Missing,
    /// Sizes differ: (source, DST).
    Size(u64, u64),
    Content,
    /// The file's mtime is not the object's (download).
    Mtime,
    /// A request or a read failed.
    Error(String),
}

impl Found {
    fn kind(&self) -> &'static str {
        match self {
            Found::Same => "",
            Found::Missing => "missing",
            Found::Size(..) => "size",
            Found::Content => "content",
            Found::Mtime => "mode_mtime",
            Found::Error(_) => "error",
        }
    }

    fn text(&self) -> String {
        match self {
            Found::Same => "the same".into(),
            Found::Missing => "missing at DST".into(),
            Found::Size(a, b) => format!("size differs ({a} bytes at the source, {b} at DST)"),
            Found::Content => "content differs".into(),
            Found::Mtime => "mtime differs from the object's".into(),
            Found::Error(e) => format!("cannot compare: {e}"),
        }
    }
}

/// One thing to compare: its path (for the report), and where each side is.
#[derive(Debug, Clone)]
pub struct Item {
    pub rel: String,
    /// Upload: DST's key; download: the source's key; remote: the source's key.
    pub key: String,
    /// Remote: DST's key.
    pub dst_key: Option<String>,
}

/// Which way the run went: where the local tree is, if any.
pub enum Way {
    /// Local SRC (the root opened), objects at DST.
    Up(Arc<OwnedFd>),
    /// Objects at the source, local DST (None: a dry run's DST not made yet).
    Down(Option<Arc<OwnedFd>>),
    /// Objects on both sides.
    Between,
}

/// Compare every item, `n` in flight; the report as copy's `--verify` writes it.
pub fn run(client: &ObjectClient, n: usize, way: Way, items: Vec<Item>, progress: &Progress) -> Report {
    let t0 = Instant::now();
    let mut r = Report { content_checked: true, ..Default::default() };
    progress.phase("verify", items.len() as u64);
    let mut done = 0;
    let note = |r: &mut Report, rel: &str, found: Found, bytes: u64| {
        r.files += 1;
        r.bytes += bytes;
        if found != Found::Same {
            r.differences += 1;
            *r.kinds.entry(found.kind().to_string()).or_default() += 1;
            if r.examples.len() < MAX_FAILURES {
                r.examples.push(format!("{rel}: {}", found.text()));
            }
        }
    };
    if let Way::Down(None) = way {
        items.iter().for_each(|i| note(&mut r, &i.rel, Found::Missing, 0));
    } else {
        each(
            client,
            n,
            items,
            |item| {
                let store = client.store.clone();
                let root = match &way {
                    Way::Up(root) | Way::Down(Some(root)) => Some(root.clone()),
                    _ => None,
                };
                let up = matches!(way, Way::Up(_));
                let rel = item.rel.clone();
                let fut = async move {
                    Ok(match root {
                        Some(root) if up => up_one(store, &root, &item).await,
                        Some(root) => down_one(store, &root, &item).await,
                        None => between_one(store, &item).await,
                    })
                };
                (rel, fut)
            },
            |rel, answer: std::result::Result<(Found, u64), String>| {
                let (found, bytes) = answer.unwrap_or_else(|e| (Found::Error(e), 0));
                note(&mut r, &rel, found, bytes);
                done += 1;
                progress.set(done);
            },
        );
    }
    r.elapsed_s = t0.elapsed().as_secs_f64();
    r
}

/// GET `key`: None when there is no such object.
async fn get<S: ObjectStore + ?Sized>(store: &S, key: &str) -> std::result::Result<Option<GetResult>, String> {
    let location = object_store::path::Path::parse(key).map_err(|e| why(&e))?;
    match store.get_opts(&location, GetOptions::default()).await {
        Ok(got) => Ok(Some(got)),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(why(&e)),
    }
}

/// Upload: the object at `key` against the file `rel` below SRC.
async fn up_one<S: ObjectStore + ?Sized>(store: Arc<S>, root: &OwnedFd, item: &Item) -> (Found, u64) {
    let mut file = match super::upload::open_file(root, &item.rel) {
        Ok(f) => f,
        Err(e) => return (Found::Error(format!("the source file: {e}")), 0),
    };
    let size = match file.metadata() {
        Ok(m) => m.len(),
        Err(e) => return (Found::Error(format!("the source file: {e}")), 0),
    };
    let got = match get(&*store, &item.key).await {
        Ok(Some(got)) => got,
        Ok(None) => return (Found::Missing, 0),
        Err(e) => return (Found::Error(e), 0),
    };
    if got.meta.size != size {
        return (Found::Size(size, got.meta.size), 0);
    }
    match same_as_reader(got.into_stream(), &mut file).await {
        Ok(true) => (Found::Same, size),
        Ok(false) => (Found::Content, size),
        Err(e) => (Found::Error(e), 0),
    }
}

/// Download: the file `rel` below DST against the object at `key`, bytes and mtime.
async fn down_one<S: ObjectStore + ?Sized>(store: Arc<S>, root: &OwnedFd, item: &Item) -> (Found, u64) {
    let got = match get(&*store, &item.key).await {
        Ok(Some(got)) => got,
        // Listed and gone (or a folder marker object_store names without its slash).
        Ok(None) => return (Found::Error("the object is no longer there".into()), 0),
        Err(e) => return (Found::Error(e), 0),
    };
    let mut file = match open_dst(root, &item.rel) {
        Ok(Some(f)) => f,
        Ok(None) => return (Found::Missing, 0),
        Err(e) => return (Found::Error(e), 0),
    };
    let (size, mtime) = match rustix::fs::fstat(&file) {
        Ok(st) => (st.st_size as u64, (st.st_mtime, st.st_mtime_nsec as u32)),
        Err(e) => return (Found::Error(format!("cannot stat the file: {e}")), 0),
    };
    if got.meta.size != size {
        return (Found::Size(got.meta.size, size), 0);
    }
    let theirs = super::download::object_mtime(&got.attributes, &got.meta);
    match same_as_reader(got.into_stream(), &mut file).await {
        Ok(true) if theirs == mtime => (Found::Same, size),
        Ok(true) => (Found::Mtime, size),
        Ok(false) => (Found::Content, size),
        Err(e) => (Found::Error(e), 0),
    }
}

/// Between prefixes: the object at `dst_key` against the one at `key`.
async fn between_one<S: ObjectStore + ?Sized>(store: Arc<S>, item: &Item) -> (Found, u64) {
    let dst_key = item.dst_key.as_deref().unwrap_or(&item.key);
    let (a, b) = futures_util::join!(get(&*store, &item.key), get(&*store, dst_key));
    let (a, b) = match (a, b) {
        (Ok(Some(a)), Ok(Some(b))) => (a, b),
        (Ok(Some(_)), Ok(None)) => return (Found::Missing, 0),
        (Ok(None), _) => return (Found::Error("the source object is no longer there".into()), 0),
        (Err(e), _) | (_, Err(e)) => return (Found::Error(e), 0),
    };
    if a.meta.size != b.meta.size {
        return (Found::Size(a.meta.size, b.meta.size), 0);
    }
    let size = a.meta.size;
    match same_streams(a.into_stream(), b.into_stream()).await {
        Ok(true) => (Found::Same, size),
        Ok(false) => (Found::Content, size),
        Err(e) => (Found::Error(e), 0),
    }
}

/// The file `rel` below DST opened to read (no symlink followed, no mount entered);
/// None when nothing is there.
fn open_dst(root: &OwnedFd, rel: &str) -> std::result::Result<Option<std::fs::File>, String> {
    let (dir, name) = split_last(rel.as_bytes());
    let parent = match open_below_same_mount(root.as_fd(), dir) {
        Ok(p) => p,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(e) => return Err(format!("cannot open its directory: {e}")),
    };
    let name = std::ffi::CString::new(name).map_err(|_| "a NUL in the name".to_string())?;
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let fd = match rustix::fs::openat(parent.as_fd(), name.as_c_str(), flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(e) => return Err(format!("cannot open the file: {e}")),
    };
    let st = rustix::fs::fstat(&fd).map_err(|e| format!("cannot stat the file: {e}"))?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return Err("not a regular file at DST".into());
    }
    Ok(Some(std::fs::File::from(fd)))
}

/// Is the body `stream` the same bytes as what `r` reads, to its end?
pub async fn same_as_reader<S, B, E>(mut stream: S, r: &mut impl Read) -> std::result::Result<bool, String>
where
    S: Stream<Item = std::result::Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    let mut buf = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| e.to_string())?;
        let chunk = chunk.as_ref();
        buf.resize(chunk.len(), 0);
        let got = read_full(r, &mut buf).map_err(|e| format!("read: {e}"))?;
        if got < chunk.len() || buf[..] != *chunk {
            return Ok(false);
        }
    }
    // The reader must be at its end too.
    Ok(read_full(r, &mut [0u8; 1]).map_err(|e| format!("read: {e}"))? == 0)
}

/// Read until `buf` is full or the end: the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Are two bodies the same bytes, whatever their chunks?
pub async fn same_streams<S, T, B, C, E, F>(mut a: S, mut b: T) -> std::result::Result<bool, String>
where
    S: Stream<Item = std::result::Result<B, E>> + Unpin,
    T: Stream<Item = std::result::Result<C, F>> + Unpin,
    B: AsRef<[u8]>,
    C: AsRef<[u8]>,
    E: std::fmt::Display,
    F: std::fmt::Display,
{
    // The chunk in hand on each side and how far into it the comparison is.
    let (mut ca, mut pa): (Option<B>, usize) = (None, 0);
    let (mut cb, mut pb): (Option<C>, usize) = (None, 0);
    loop {
        while ca.as_ref().is_none_or(|c| pa == c.as_ref().len()) {
            match a.next().await {
                Some(c) => (ca, pa) = (Some(c.map_err(|e| e.to_string())?), 0),
                None => {
                    ca = None;
                    break;
                }
            }
        }
        while cb.as_ref().is_none_or(|c| pb == c.as_ref().len()) {
            match b.next().await {
                Some(c) => (cb, pb) = (Some(c.map_err(|e| e.to_string())?), 0),
                None => {
                    cb = None;
                    break;
                }
            }
        }
        let (x, y) = match (&ca, &cb) {
            (None, None) => return Ok(true),
            (Some(x), Some(y)) => (&x.as_ref()[pa..], &y.as_ref()[pb..]),
            _ => return Ok(false),
        };
        let n = x.len().min(y.len());
        if x[..n] != y[..n] {
            return Ok(false);
        }
        pa += n;
        pb += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::stream;

    fn body(chunks: &[&[u8]]) -> impl Stream<Item = std::result::Result<Vec<u8>, String>> + Unpin {
        stream::iter(chunks.iter().map(|c| Ok(c.to_vec())).collect::<Vec<_>>())
    }

    fn block<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    #[test]
    fn a_body_is_compared_with_a_file_to_its_last_byte() {
        let same = |chunks: &[&[u8]], file: &[u8]| block(same_as_reader(body(chunks), &mut &file[..])).unwrap();
        assert!(same(&[b"abc", b"", b"def"], b"abcdef"));
        assert!(same(&[], b""));
        assert!(!same(&[b"abc", b"dez"], b"abcdef"), "one byte differs");
        assert!(!same(&[b"abc"], b"abcdef"), "the file is longer");
        assert!(!same(&[b"abcdefg"], b"abcdef"), "the body is longer");
        let failing = stream::iter(vec![Ok(b"ab".to_vec()), Err("connection reset".to_string())]);
        assert_eq!(block(same_as_reader(failing, &mut &b"abcd"[..])), Err("connection reset".into()));
    }

    #[test]
    fn two_bodies_are_compared_whatever_their_chunks() {
        let same = |a: &[&[u8]], b: &[&[u8]]| block(same_streams(body(a), body(b))).unwrap();
        assert!(same(&[b"ab", b"cdef"], &[b"abc", b"", b"d", b"ef"]));
        assert!(same(&[], &[b""]));
        assert!(!same(&[b"ab", b"cdef"], &[b"abc", b"dxf"]));
        assert!(!same(&[b"abc"], &[b"abc", b"d"]));
        assert!(!same(&[b"abcd"], &[b"abc"]));
    }

    #[test]
    fn each_difference_has_its_kind_and_words() {
        assert_eq!(
            (Found::Size(3, 4).kind(), Found::Size(3, 4).text().as_str()),
            ("size", "size differs (3 bytes at the source, 4 at DST)")
        );
        assert_eq!(Found::Missing.kind(), "missing");
        assert_eq!(Found::Mtime.kind(), "mode_mtime");
    }
}
