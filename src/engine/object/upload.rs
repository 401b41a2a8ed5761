//! Local → object: the source walked (fd-relative, no symlink followed), every file PUT
//! under the prefix (multipart above [`MULTIPART_ABOVE`]) with its mtime as metadata,
//! `in_flight` requests at once. `sync` lists the prefix first and sends only what is
//! new or changed — a different size, or an object last modified before the file was
//! (`aws s3 sync`'s rule: the LIST answers it, no HEAD per object) — and with `--delete`
//! removes what the source has not, 1,000 keys a request. Filter rules are applied as
//! the walk goes, as the local engine applies them (an excluded directory is not
//! entered); `--verify` then GETs every object the walk selected ([`super::verify`]).

use super::verify::{Item, Way};
use super::{
    EMPTY_DIRS, LossTally, MTIME_KEY, MULTIPART_ABOVE, ObjectUrl, Options, PART, Summary, connect, each, list_all,
    mtime_value, why,
};
use crate::engine::walker::{join, open_below, split_last};
use crate::error::{Error, Result};
use crate::fs::walk::{Kind, meta_at, read_dir};
use crate::measure::progress::Progress;
use object_store::{Attribute, Attributes, ObjectStore, PutMultipartOptions, PutOptions, PutPayload};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// A file to send: its path below SRC (its key below the prefix), size and mtime.
#[derive(Debug, Clone)]
struct LocalFile {
    rel: String,
    size: u64,
    mtime: (i64, u32),
}

/// What a walk of SRC found.
struct Walked {
    files: Vec<LocalFile>,
    dirs: u64,
    losses: LossTally,
    /// Entries the filters left out (a directory once).
    excluded: u64,
}

/// Copy or sync `src` to `dst`.
pub fn run(o: &Options, src: &Path, dst: &ObjectUrl) -> Result<Summary> {
    let t0 = Instant::now();
    let cpu0 = crate::measure::cpu_times();
    let root = crate::fs::walk::open_root(src)
        .map_err(|e| Error::bad("SRC", format!("{}: {e} (a directory to copy)", src.display())))?;
    let (client, any) = connect(&o.reach, dst, crate::storage::object_client::Retries::Backoff)?;
    if !o.sync && any {
        return Err(Error::bad(
            "DST",
            format!("{dst} holds objects: copy writes only under an empty prefix (sync updates one)"),
        ));
    }
    let mut s = Summary::new(o, &client);
    let progress = Progress::new(o.quiet);
    progress.phase("walk", 0);
    let walked = walk(&root, src, o, &mut s);
    s.losses = walked.losses.rows();
    s.excluded = walked.excluded;
    s.src_dirs = walked.dirs;
    s.src_files = walked.files.len() as u64;
    s.src_bytes = walked.files.iter().map(|f| f.size).sum();
    let there: HashMap<String, super::Listed> = if o.sync {
        progress.phase("list", 0);
        list_all(&client, &dst.dir_prefix(), &progress)?.into_iter().map(|l| (l.key.clone(), l)).collect()
    } else {
        HashMap::new()
    };
    s.dst_entries = there.len() as u64;
    s.list_s = t0.elapsed().as_secs_f64();
    let (send, extra) = plan(&walked.files, &there, dst, &mut s);
    let t1 = Instant::now();
    let root = Arc::new(root);
    if !o.dry_run {
        progress.phase("upload", send.len() as u64);
        put_all(o, &client, root.clone(), dst, send, &mut s, &progress);
    }
    s.transfer_s = t1.elapsed().as_secs_f64();
    let t2 = Instant::now();
    let present = super::select::dirs_of(walked.files.iter().map(|f| f.rel.as_str()));
    super::delete_extra_keys(o, &client, (&dst.dir_prefix(), present), extra, &mut s, &progress);
    s.delete_s = t2.elapsed().as_secs_f64();
    if o.verify && crate::signals::pending() == 0 {
        let items = walked.files.iter().map(|f| Item { rel: f.rel.clone(), key: dst.key(&f.rel), dst_key: None });
        s.verify = Some(super::verify::run(&client, o.in_flight, Way::Up(root), items.collect(), &progress));
    }
    progress.finish();
    super::finish(&mut s, &client, t0, cpu0);
    Ok(s)
}

/// The files to send (all for copy; new or changed for sync) and the keys under the
/// prefix the source has not. Counts what is skipped (and, in a dry run, copied).
fn plan(
    files: &[LocalFile],
    there: &HashMap<String, super::Listed>,
    dst: &ObjectUrl,
    s: &mut Summary,
) -> (Vec<LocalFile>, Vec<String>) {
    let mut send = Vec::new();
    let mut wanted: HashSet<String> = HashSet::with_capacity(files.len());
    for f in files {
        let key = dst.key(&f.rel);
        let at = there.get(&key);
        let older = |l: &super::Listed| super::older_than_file(dst.provider, l.modified, f.mtime);
        let unchanged = at.is_some_and(|l| l.size == f.size && !older(l));
        wanted.insert(key);
        if unchanged {
            s.skipped += 1;
        } else {
            s.change(super::changes::sent(&f.rel, at.map(|l| (l.size != f.size, older(l)))));
            if s.dry_run {
                s.copied += 1;
                s.bytes_transferred += f.size;
            }
            send.push(f.clone());
        }
    }
    let mut extra: Vec<String> = there.keys().filter(|k| !wanted.contains(*k)).cloned().collect();
    extra.sort();
    (send, extra)
}

/// PUT every file of `send`, `o.in_flight` at once.
fn put_all(
    o: &Options,
    client: &crate::storage::object_client::ObjectClient,
    root: Arc<OwnedFd>,
    dst: &ObjectUrl,
    send: Vec<LocalFile>,
    s: &mut Summary,
    progress: &Progress,
) {
    each(
        client,
        o.in_flight,
        send,
        |f| {
            let (store, root) = (client.store.clone(), root.clone());
            let key = dst.key(&f.rel);
            let rel = f.rel.clone();
            let provider = dst.provider;
            (rel, async move { put_file(store, &root, &f, (&key, provider)).await })
        },
        |rel, r| {
            match r {
                Ok((bytes, multipart)) => {
                    s.copied += 1;
                    s.bytes_transferred += bytes;
                    s.multipart += multipart as u64;
                }
                Err(e) => s.fail(format!("{rel}: {e}")),
            }
            progress.set(s.copied + s.failed);
        },
    );
}

/// Open `rel` below `root`: no symlink followed on the way or at the end, a regular file.
pub(super) fn open_file(root: &OwnedFd, rel: &str) -> std::result::Result<std::fs::File, String> {
    use rustix::fs::{Mode, OFlags, openat};
    let (dir, name) = split_last(rel.as_bytes());
    let parent = open_below(root.as_fd(), dir).map_err(|e| format!("cannot open its directory: {e}"))?;
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let name = std::ffi::CString::new(name).map_err(|_| "a NUL in the name".to_string())?;
    let fd = openat(parent.as_fd(), name.as_c_str(), flags, Mode::empty()).map_err(|e| format!("cannot open: {e}"))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| format!("cannot stat: {e}"))?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return Err("no longer a regular file".into());
    }
    Ok(std::fs::File::from(fd))
}

/// One file up: a PUT, or a multipart upload above [`MULTIPART_ABOVE`]. Returns the
/// bytes sent and whether it went multipart.
async fn put_file<S: ObjectStore + ?Sized>(
    store: Arc<S>,
    root: &OwnedFd,
    f: &LocalFile,
    (key, provider): (&str, crate::storage::object_stack::Provider),
) -> std::result::Result<(u64, bool), String> {
    let mut file = open_file(root, &f.rel)?;
    let location = object_store::path::Path::parse(key).map_err(|e| why(&e))?;
    let mut attributes = Attributes::new();
    attributes.insert(Attribute::Metadata(MTIME_KEY.into()), mtime_value(provider, f.mtime).into());
    if f.size <= MULTIPART_ABOVE {
        let mut data = Vec::with_capacity(f.size as usize);
        file.read_to_end(&mut data).map_err(|e| format!("read: {e}"))?;
        let n = data.len() as u64;
        let opts = PutOptions { attributes, ..Default::default() };
        store.put_opts(&location, PutPayload::from(data), opts).await.map_err(|e| why(&e))?;
        return Ok((n, false));
    }
    let opts = PutMultipartOptions { attributes, ..Default::default() };
    let mut upload = store.put_multipart_opts(&location, opts).await.map_err(|e| why(&e))?;
    let mut sent = 0u64;
    let result: std::result::Result<(), String> = async {
        loop {
            let mut part = Vec::with_capacity(PART);
            (&mut file).take(PART as u64).read_to_end(&mut part).map_err(|e| format!("read: {e}"))?;
            if part.is_empty() {
                return Ok(());
            }
            sent += part.len() as u64;
            upload.put_part(PutPayload::from(part)).await.map_err(|e| why(&e))?;
        }
    }
    .await;
    match result {
        Ok(()) => {
            upload.complete().await.map_err(|e| why(&e))?;
            Ok((sent, true))
        }
        Err(e) => {
            let _ = upload.abort().await;
            Err(e)
        }
    }
}

/// Walk SRC (one thread: the requests, not the walk, take the time): its files, its
/// directories counted, and what an object cannot hold counted as losses; what the
/// filters exclude is not looked at (a directory not entered), only counted. A directory
/// whose every entry is excluded is an empty directory at DST, which an object store
/// cannot hold (the local engine would make it): a loss.
fn walk(root: &OwnedFd, src: &Path, o: &Options, s: &mut Summary) -> Walked {
    let (keep, filter) = (o.keep, o.filter.as_deref());
    let mut w = Walked { files: Vec::new(), dirs: 0, losses: LossTally::default(), excluded: 0 };
    let (uid, gid) = (rustix::process::geteuid().as_raw(), rustix::process::getegid().as_raw());
    let mut seen_inodes: HashSet<(u64, u64)> = HashSet::new();
    let mut stack: Vec<Vec<u8>> = vec![Vec::new()];
    while let Some(rel) = stack.pop() {
        let shown = String::from_utf8_lossy(&rel).into_owned();
        let entries = open_below(root.as_fd(), &rel).and_then(|fd| Ok((read_dir(fd.as_fd())?, fd)));
        let (entries, fd) = match entries {
            Ok(x) => x,
            Err(e) => {
                s.fail(format!("{}: cannot read the directory: {e}", if rel.is_empty() { "." } else { &shown }));
                continue;
            }
        };
        let (listed, mut left_out) = (entries.len(), 0);
        for e in entries {
            let child = join(&rel, e.name.to_bytes());
            let path = String::from_utf8_lossy(&child).into_owned();
            let meta = match meta_at(fd.as_fd(), &e.name) {
                Ok(m) => m,
                Err(err) => {
                    s.fail(format!("{path}: cannot stat: {err}"));
                    continue;
                }
            };
            if filter.is_some_and(|f| f.excluded(&child, meta.kind == Kind::Dir)) {
                (w.excluded, left_out) = (w.excluded + 1, left_out + 1);
                continue;
            }
            let name_ok = std::str::from_utf8(e.name.to_bytes()).is_ok_and(|n| !n.chars().any(char::is_control));
            if !name_ok {
                w.losses.add("names", &path);
                continue;
            }
            if keep.owner && (meta.uid != uid || meta.gid != gid) {
                w.losses.add("owner", &path);
            }
            match meta.kind {
                Kind::Dir => {
                    w.dirs += 1;
                    if meta.perm != 0o755 {
                        w.losses.add("modes", &path);
                    }
                    stack.push(child);
                }
                Kind::Symlink => w.losses.add("symlinks", &path),
                Kind::Other if keep.specials => w.losses.add("specials", &path),
                Kind::Other => {}
                Kind::File => {
                    if meta.perm != 0o644 {
                        w.losses.add("modes", &path);
                    }
                    if keep.hard_links && meta.nlink > 1 && !seen_inodes.insert((meta.dev, meta.ino)) {
                        w.losses.add("hard_links", &path);
                    }
                    if keep.xattrs && rustix::fs::llistxattr_query(src.join(&path)).is_ok_and(|n| n > 0) {
                        w.losses.add("xattrs", &path);
                    }
                    w.files.push(LocalFile { rel: path, size: meta.size, mtime: (meta.mtime_s, meta.mtime_ns) });
                }
            }
        }
        if left_out == listed && !rel.is_empty() {
            w.losses.add(EMPTY_DIRS, &shown);
        }
    }
    w
}
