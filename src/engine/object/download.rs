//! Object → local: the prefix listed, every object GET into a file under DST at the
//! key's path below the prefix, with its mtime from the `mtime` metadata (else its
//! last-modified). Never outside DST, never through a symlink: directories are made and
//! opened one below the other with no symlink followed and no mount entered (`engine::walker::open_below_same_mount`),
//! a file is written under a temporary name made with `O_EXCL` and renamed into place.
//! A key that cannot be a path below DST (an empty, `.` or `..` part) is a failure.
//! `sync` compares size first and, for an equal size, the object's mtime (one HEAD:
//! LIST does not carry metadata) with the file's, to the nanosecond.
//! `--delete` then removes what DST has and no key names ([`delete_extra`]), but not
//! what the filters protect (the keys' rules: [`super::select`]; DST's entries: the
//! local engine's, each entry as the walk reaches it). `--verify` then GETs every object
//! selected and compares it with its file ([`super::verify`]).

use super::changes::sent;
use super::select::{Keys, Side};
use super::verify::{Item, Way};
use super::{Listed, MTIME_KEY, MULTIPART_ABOVE, ObjectUrl, Options, Summary, connect, each, list_all, why};
use crate::engine::copy::itemize::{Change, Verb, kind_word};
use crate::engine::filter::Filter;
use crate::engine::walker::{open_below_same_mount as open_below, split_last};
use crate::error::{Error, Result};
use crate::fs::walk::Kind;
use crate::measure::progress::Progress;
use crate::storage::object_client::ObjectClient;
use futures_util::StreamExt;
use object_store::{Attribute, GetOptions, ObjectStore};
use rustix::fs::{Mode, OFlags};
use std::collections::HashSet;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use std::time::Instant;

/// An object to fetch: its key, its path below DST, its size.
#[derive(Debug, Clone)]
struct Wanted {
    key: String,
    rel: String,
    size: u64,
}

/// Copy or sync `src` into `dst`.
pub fn run(o: &Options, src: &ObjectUrl, dst: &Path) -> Result<Summary> {
    let t0 = Instant::now();
    let cpu0 = crate::measure::cpu_times();
    let (client, _) = connect(&o.reach, src, crate::storage::object_client::Retries::Backoff)?;
    if o.delete && dst.canonicalize().is_ok_and(|p| p == Path::new("/")) {
        return Err(Error::bad("DST", "/: sync --delete into the root directory is refused"));
    }
    let mut s = Summary::new(o, &client);
    let progress = Progress::new(o.quiet);
    progress.phase("list", 0);
    // Listed before DST is made or touched: a prefix with nothing under it is refused as
    // a missing local SRC is (a misspelled prefix with --delete would empty DST).
    let listed = list_all(&client, &src.dir_prefix(), &progress)?;
    if listed.is_empty() {
        return Err(Error::bad("SRC", format!("{src}: no object under this prefix")));
    }
    let wanted = paths(&listed, src, o.filter.as_deref(), &mut s);
    if wanted.is_empty() && o.delete {
        return Err(Error::bad(
            "SRC",
            format!(
                "{src}: no object under this prefix {}: --delete would empty DST",
                if s.filtered {
                    "is selected by the filters or can be a file below DST"
                } else {
                    "can be a file below DST"
                }
            ),
        ));
    }
    let root = prepare(dst, o.sync, o.dry_run)?.map(Arc::new);
    let named: HashSet<String> = wanted.iter().map(|w| w.rel.clone()).collect();
    s.list_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    if let (Some(root), true, false) = (&root, o.sync, o.dry_run) {
        remove_leftovers(root, &mut s);
    }
    let check: Vec<Item> = match o.verify {
        true => wanted.iter().map(|w| Item { rel: w.rel.clone(), key: w.key.clone(), dst_key: None }).collect(),
        false => Vec::new(),
    };
    let fetch = match (&root, o.sync) {
        (Some(root), true) => compare(o, &client, root, wanted, &mut s, &progress),
        _ => {
            wanted.iter().for_each(|w| s.change(sent(&w.rel, None)));
            wanted
        }
    };
    if o.dry_run {
        s.copied = fetch.len() as u64;
        s.bytes_transferred = fetch.iter().map(|w| w.size).sum();
    } else if let Some(root) = &root {
        progress.phase("download", fetch.len() as u64);
        get_all(o, &client, root.clone(), fetch, &mut s, &progress);
    }
    s.transfer_s = t1.elapsed().as_secs_f64();
    let t2 = Instant::now();
    match (&root, o.delete) {
        (Some(root), true) if crate::signals::pending() == 0 => delete_extra(root, &named, o, &mut s),
        _ => {}
    }
    s.delete_s = t2.elapsed().as_secs_f64();
    if o.verify && crate::signals::pending() == 0 {
        s.verify = Some(super::verify::run(&client, o.in_flight, Way::Down(root), check, &progress));
    }
    progress.finish();
    super::finish(&mut s, &client, t0, cpu0);
    Ok(s)
}

/// DST opened (made if missing; copy: new or empty). None: a dry run's DST that does
/// not exist yet.
fn prepare(dst: &Path, sync: bool, dry_run: bool) -> Result<Option<OwnedFd>> {
    if !dst.exists() && dst.symlink_metadata().is_err() {
        if dry_run {
            return Ok(None);
        }
        std::fs::create_dir(dst).map_err(|e| Error::bad("DST", format!("{}: cannot make it: {e}", dst.display())))?;
    }
    let root = crate::fs::walk::open_root(dst)
        .map_err(|e| Error::bad("DST", format!("{}: {e} (a directory to copy into)", dst.display())))?;
    if !sync {
        let entries = crate::fs::walk::read_dir(root.as_fd())
            .map_err(|e| Error::bad("DST", format!("{}: {e}", dst.display())))?;
        if !entries.is_empty() {
            return Err(Error::bad(
                "DST",
                format!("{}: not empty (copy writes into a new or empty one)", dst.display()),
            ));
        }
    }
    Ok(Some(root))
}

/// Each object's path below DST; keys that cannot be one are failures, `…/` markers
/// (a console's "folders") are left out, and so is what the filters exclude (counted).
fn paths(listed: &[Listed], src: &ObjectUrl, filter: Option<&Filter>, s: &mut Summary) -> Vec<Wanted> {
    let prefix = src.dir_prefix();
    let mut select = Keys::new(filter, Side::Sender);
    let mut dirs: HashSet<&str> = HashSet::new();
    let mut out = Vec::with_capacity(listed.len());
    for l in listed {
        let rel = l.key.strip_prefix(&prefix).unwrap_or(&l.key);
        if rel.ends_with('/') || select.out(rel) {
            continue;
        }
        if rel.split('/').any(|p| p.is_empty() || p == "." || p == ".." || p.contains('\0')) {
            s.fail(format!("{}: the key cannot be a path below DST", l.key));
            continue;
        }
        let mut d = rel;
        while let Some(i) = d.rfind('/') {
            d = &d[..i];
            if !dirs.insert(d) {
                break;
            }
        }
        s.src_bytes += l.size;
        out.push(Wanted { key: l.key.clone(), rel: rel.to_string(), size: l.size });
    }
    s.src_files = out.len() as u64;
    s.src_dirs = dirs.len() as u64;
    s.excluded = select.excluded;
    out
}

/// sync --delete: what DST has and no object names — files, symlinks, special files,
/// then the directories left empty that no key lies below — removed, each by name from
/// its directory (nothing followed through a symlink; a mount point inside DST is not
/// entered). What the filters protect stays (a directory not entered), with the
/// directories above it, counted as extraneous. In a dry run only counted.
fn delete_extra(root: &OwnedFd, named: &HashSet<String>, o: &Options, s: &mut Summary) {
    use crate::fs::walk::{ATTR_MOUNT_ROOT, meta_at, read_dir};
    let dry_run = o.dry_run;
    let protects = o.filter.as_deref().filter(|f| f.protects());
    // The directories above what is kept: not removed.
    let mut holding: HashSet<Vec<u8>> = HashSet::new();
    let mut hold = |rel: &[u8]| {
        let mut d = rel;
        while let Some(i) = d.iter().rposition(|&b| b == b'/') {
            d = &d[..i];
            if !holding.insert(d.to_vec()) {
                break;
            }
        }
    };
    let keep_dirs: HashSet<&str> =
        named.iter().flat_map(|rel| rel.match_indices('/').map(move |(i, _)| &rel[..i])).collect();
    // Paths as bytes: a name that is not UTF-8 is opened as it is (a lossy form would be
    // another entry's name) and can be no key's, so it is extraneous.
    let is_named = |rel: &[u8]| std::str::from_utf8(rel).is_ok_and(|r| named.contains(r));
    let is_kept_dir = |rel: &[u8]| std::str::from_utf8(rel).is_ok_and(|r| keep_dirs.contains(r));
    let shown = |rel: &[u8]| String::from_utf8_lossy(rel).into_owned();
    let root_dev = crate::fs::walk::meta_of(root.as_fd()).map(|m| m.dev).unwrap_or(0);
    let (mut stack, mut dirs): (Vec<Vec<u8>>, Vec<Vec<u8>>) = (vec![Vec::new()], Vec::new());
    while let Some(rel) = stack.pop() {
        let Ok(fd) = open_below(root.as_fd(), &rel) else { continue };
        let Ok(entries) = read_dir(fd.as_fd()) else {
            s.fail(format!("{}: cannot read the directory for --delete", shown(&rel)));
            continue;
        };
        for e in entries {
            let child = crate::engine::walker::join(&rel, e.name.to_bytes());
            let Ok(m) = meta_at(fd.as_fd(), &e.name) else { continue };
            // What the source has is not judged (a directory: what is inside it is).
            let present = if m.kind == Kind::Dir { is_kept_dir(&child) } else { is_named(&child) };
            if !present && protects.is_some_and(|f| f.protected(&child, m.kind == Kind::Dir)) {
                s.extraneous += 1;
                hold(&child);
                continue;
            }
            if m.kind == Kind::Dir {
                if m.dev == root_dev && m.attrs & ATTR_MOUNT_ROOT == 0 {
                    stack.push(child.clone());
                    dirs.push(child);
                }
                continue;
            }
            if is_named(&child) {
                continue;
            }
            s.change(Change::new(Verb::Deleted, kind_word(&m), &child));
            match dry_run {
                true => s.deleted += 1,
                false => match rustix::fs::unlinkat(fd.as_fd(), e.name.as_c_str(), rustix::fs::AtFlags::empty()) {
                    Ok(()) => s.deleted += 1,
                    Err(err) => s.fail(format!("{}: cannot delete: {err}", shown(&child))),
                },
            }
        }
    }
    // Deepest first: a directory's children before it.
    for rel in dirs.iter().rev().filter(|d| !is_kept_dir(d) && !holding.contains(*d)) {
        s.change(Change::new(Verb::Deleted, "dir", rel));
        if dry_run {
            s.deleted += 1;
            continue;
        }
        let (dir, name) = split_last(rel);
        let Ok(parent) = open_below(root.as_fd(), dir) else { continue };
        match rustix::fs::unlinkat(parent.as_fd(), name, rustix::fs::AtFlags::REMOVEDIR) {
            Ok(()) => s.deleted += 1,
            Err(err) => s.fail(format!("{}: cannot delete the directory: {err}", shown(rel))),
        }
    }
}

/// What DST has at `rel`: (kind, size, mtime), None when nothing is there.
fn local(root: &OwnedFd, rel: &str) -> Option<(Kind, u64, (i64, u32))> {
    let (dir, name) = split_last(rel.as_bytes());
    let parent = open_below(root.as_fd(), dir).ok()?;
    let name = std::ffi::CString::new(name).ok()?;
    let m = crate::fs::walk::meta_at(parent.as_fd(), &name).ok()?;
    Some((m.kind, m.size, (m.mtime_s, m.mtime_ns)))
}

/// Sync: the objects to fetch (not in DST, another size, or another mtime: one HEAD
/// for each of equal size); what is in the way and not a file is a failure.
fn compare(
    o: &Options,
    client: &ObjectClient,
    root: &OwnedFd,
    wanted: Vec<Wanted>,
    s: &mut Summary,
    progress: &Progress,
) -> Vec<Wanted> {
    let (mut fetch, mut same_size) = (Vec::new(), Vec::new());
    for w in wanted {
        match local(root, &w.rel) {
            None => {
                s.change(sent(&w.rel, None));
                fetch.push(w)
            }
            Some((Kind::File, size, mtime)) if size == w.size => same_size.push((w, mtime)),
            Some((Kind::File, _, _)) => {
                s.change(sent(&w.rel, Some((true, false))));
                fetch.push(w)
            }
            Some((kind, _, _)) => {
                s.fail(format!("{}: a {} is in DST where the object's file goes", w.rel, kind.name()))
            }
        }
    }
    s.dst_entries = (fetch.len() + same_size.len()) as u64;
    progress.phase("compare", same_size.len() as u64);
    let mut done = 0;
    each(
        client,
        o.in_flight,
        same_size,
        |(w, mtime)| {
            let store = client.store.clone();
            let key = w.key.clone();
            let fut = async move {
                let location = object_store::path::Path::parse(&key).map_err(|e| why(&e))?;
                let opts = GetOptions { head: true, ..Default::default() };
                let r = store.get_opts(&location, opts).await.map_err(|e| why(&e))?;
                Ok(object_mtime(&r.attributes, &r.meta))
            };
            ((w, mtime), fut)
        },
        |(w, mtime), r| {
            done += 1;
            progress.set(done);
            match r {
                Ok(theirs) if theirs == mtime => s.skipped += 1,
                Ok(_) => {
                    s.change(sent(&w.rel, Some((false, true))));
                    fetch.push(w)
                }
                Err(e) => s.fail(format!("{}: HEAD: {e}", w.key)),
            }
        },
    );
    fetch
}

/// The object's mtime: its `mtime` metadata, else its last-modified.
pub(super) fn object_mtime(attributes: &object_store::Attributes, meta: &object_store::ObjectMeta) -> (i64, u32) {
    attributes
        .get(&Attribute::Metadata(MTIME_KEY.into()))
        .and_then(|v| super::parse_mtime(v))
        .unwrap_or((meta.last_modified.timestamp(), meta.last_modified.timestamp_subsec_nanos()))
}

/// Make the directories above `rel` below `root` (none followed through a symlink);
/// `made`: those known to be there.
fn make_dirs(root: &OwnedFd, rel: &str, made: &mut HashSet<String>) -> std::result::Result<(), String> {
    let (dir, _) = split_last(rel.as_bytes());
    let dir = std::str::from_utf8(dir).map_err(|_| "not UTF-8".to_string())?;
    if dir.is_empty() || made.contains(dir) {
        return Ok(());
    }
    let mut at = String::new();
    for part in dir.split('/') {
        let parent = open_below(root.as_fd(), at.as_bytes()).map_err(|e| format!("{at}: {e}"))?;
        at = if at.is_empty() { part.to_string() } else { format!("{at}/{part}") };
        if made.contains(&at) {
            continue;
        }
        match rustix::fs::mkdirat(parent.as_fd(), part, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(format!("cannot make directory {at}: {e}")),
        }
        open_below(root.as_fd(), at.as_bytes()).map_err(|e| format!("{at}: not a directory to write into: {e}"))?;
        made.insert(at.clone());
    }
    Ok(())
}

/// GET every object of `fetch` into its file, `o.in_flight` at once.
fn get_all(
    o: &Options,
    client: &ObjectClient,
    root: Arc<OwnedFd>,
    fetch: Vec<Wanted>,
    s: &mut Summary,
    progress: &Progress,
) {
    let mut made = HashSet::new();
    let mut ready = Vec::with_capacity(fetch.len());
    for w in fetch {
        match make_dirs(&root, &w.rel, &mut made) {
            Ok(()) => ready.push(w),
            Err(e) => s.fail(format!("{}: {e}", w.rel)),
        }
    }
    let replace = o.sync;
    // Each directory opened once for the run of its keys (a listing gives a directory's
    // keys together), not once a file: the open is a path walk below DST.
    let mut parent: Option<(String, Arc<std::result::Result<OwnedFd, String>>)> = None;
    each(
        client,
        o.in_flight,
        ready,
        |w| {
            let dir = std::str::from_utf8(split_last(w.rel.as_bytes()).0).unwrap_or_default();
            let fd = match &parent {
                Some((d, fd)) if d == dir => fd.clone(),
                _ => {
                    let fd = Arc::new(
                        open_below(root.as_fd(), dir.as_bytes()).map_err(|e| format!("cannot open its directory: {e}")),
                    );
                    parent = Some((dir.to_string(), fd.clone()));
                    fd
                }
            };
            let store = client.store.clone();
            let rel = w.rel.clone();
            (rel, async move { get_file(store, &fd, &w, replace).await })
        },
        |rel, r| {
            match r {
                Ok(Some(bytes)) => {
                    s.copied += 1;
                    s.bytes_transferred += bytes;
                }
                // A "folder" marker (`…/`): listed without its slash, not there as named.
                Ok(None) => s.skipped += 1,
                Err(e) => s.fail(format!("{rel}: {e}")),
            }
            progress.set(s.copied + s.failed);
        },
    );
}

/// One object down: GET, written under a temporary name (`O_EXCL`, no symlink
/// followed), its mtime set, renamed into place (copy: never over anything).
async fn get_file<S: ObjectStore + ?Sized>(
    store: Arc<S>,
    parent: &std::result::Result<OwnedFd, String>,
    w: &Wanted,
    replace: bool,
) -> std::result::Result<Option<u64>, String> {
    let parent = parent.as_ref().map_err(|e| e.clone())?;
    let location = object_store::path::Path::parse(&w.key).map_err(|e| why(&e))?;
    let got = match store.get_opts(&location, GetOptions::default()).await {
        Ok(got) => got,
        // object_store lists a marker key `p/` as `p` (it drops the slash); an empty
        // object listed that is not there by that name is one: no file, no failure.
        Err(object_store::Error::NotFound { .. }) if w.size == 0 => return Ok(None),
        Err(e) => return Err(why(&e)),
    };
    let mtime = object_mtime(&got.attributes, &got.meta);
    let name = split_last(w.rel.as_bytes()).1;
    // The local engine's temporary names: short whatever the name (a 255-byte name plus a
    // suffix would pass NAME_MAX), and known to the next sync as leftovers to remove.
    let tmp = crate::engine::copy::file::tmp_name();
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(parent.as_fd(), tmp.as_c_str(), flags, Mode::from_raw_mode(0o644))
        .map_err(|e| format!("cannot create {}: {e}", tmp.to_string_lossy()))?;
    // Removed unless renamed into place: on an error, and when the task is dropped (a
    // signal ends the run with downloads in flight).
    let mut guard = TmpFile { dir: parent.as_fd(), name: Some(tmp.as_c_str()) };
    let mut file = std::fs::File::from(fd);
    let written: std::result::Result<Option<u64>, String> = async {
        let mut n = 0u64;
        if got.meta.size > MULTIPART_ABOVE {
            let mut stream = got.into_stream();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| why(&e))?;
                file.write_all(&chunk).map_err(|e| format!("write: {e}"))?;
                n += chunk.len() as u64;
            }
        } else {
            let bytes = got.bytes().await.map_err(|e| why(&e))?;
            file.write_all(&bytes).map_err(|e| format!("write: {e}"))?;
            n = bytes.len() as u64;
        }
        let t = rustix::fs::Timestamps {
            last_access: rustix::fs::Timespec { tv_sec: 0, tv_nsec: rustix::fs::UTIME_OMIT },
            last_modification: rustix::fs::Timespec { tv_sec: mtime.0, tv_nsec: mtime.1 as _ },
        };
        rustix::fs::futimens(&file, &t).map_err(|e| format!("cannot set its mtime: {e}"))?;
        let how = if replace { rustix::fs::RenameFlags::empty() } else { rustix::fs::RenameFlags::NOREPLACE };
        rustix::fs::renameat_with(parent.as_fd(), tmp.as_c_str(), parent.as_fd(), name, how)
            .map_err(|e| format!("cannot put it in place: {e}"))?;
        guard.name = None;
        Ok(Some(n))
    }
    .await;
    drop(guard);
    written
}

/// A temporary file being written: unlinked when dropped, unless renamed (`name` None).
struct TmpFile<'a> {
    dir: rustix::fd::BorrowedFd<'a>,
    name: Option<&'a std::ffi::CStr>,
}

impl Drop for TmpFile<'_> {
    fn drop(&mut self) {
        if let Some(name) = self.name {
            let _ = rustix::fs::unlinkat(self.dir, name, rustix::fs::AtFlags::empty());
        }
    }
}

/// sync: the temporary files a killed run left in DST (the local engine's names,
/// `.manyfiles-tmp.PID.N`) removed, wherever they are below DST (no symlink followed,
/// no mount entered). Their count goes to the summary's deleted.
fn remove_leftovers(root: &OwnedFd, s: &mut Summary) {
    use crate::fs::walk::{ATTR_MOUNT_ROOT, meta_at, read_dir};
    let root_dev = crate::fs::walk::meta_of(root.as_fd()).map(|m| m.dev).unwrap_or(0);
    let mut stack: Vec<Vec<u8>> = vec![Vec::new()];
    while let Some(rel) = stack.pop() {
        let Ok(fd) = open_below(root.as_fd(), &rel) else { continue };
        let Ok(entries) = read_dir(fd.as_fd()) else { continue };
        for e in entries {
            let Ok(m) = meta_at(fd.as_fd(), &e.name) else { continue };
            if m.kind == Kind::Dir {
                if m.dev == root_dev && m.attrs & ATTR_MOUNT_ROOT == 0 {
                    stack.push(crate::engine::walker::join(&rel, e.name.to_bytes()));
                }
            } else if m.kind == Kind::File && crate::engine::copy::file::is_tmp_name(&e.name) {
                match rustix::fs::unlinkat(fd.as_fd(), e.name.as_c_str(), rustix::fs::AtFlags::empty()) {
                    Ok(()) => s.deleted += 1,
                    Err(err) => {
                        s.fail(format!("{}: a leftover temporary file: cannot delete: {err}", e.name.to_string_lossy()))
                    }
                }
            }
        }
    }
}
