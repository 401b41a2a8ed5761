//! Object → object in one bucket: server-side copies (CopyObject: the bytes never leave
//! the store, the metadata — the `mtime` — goes with them). `sync` sends what is new,
//! of another size, or last modified at DST before the source object was; `--delete`
//! removes what the source prefix has not, 1,000 keys a request.

use super::{Options, S3Url, Summary, connect, each, list_all, why};
use crate::error::{Error, Result};
use crate::measure::progress::Progress;
use object_store::ObjectStoreExt;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// Copy or sync `src` to `dst` (the same bucket).
pub fn run(o: &Options, src: &S3Url, dst: &S3Url) -> Result<Summary> {
    if src.bucket != dst.bucket {
        return Err(Error::bad("DST", "object to object copies within one bucket only (a server-side copy)"));
    }
    let (sp, dp) = (src.dir_prefix(), dst.dir_prefix());
    if sp.starts_with(&dp) || dp.starts_with(&sp) {
        return Err(Error::bad("DST", format!("{dst} and {src} overlap: one lies within the other")));
    }
    let t0 = Instant::now();
    let cpu0 = crate::measure::cpu_times();
    let (client, any) = connect(&o.reach, dst)?;
    if !o.sync && any {
        return Err(Error::bad("DST", format!("{dst} holds objects: copy writes only under an empty prefix")));
    }
    let mut s = Summary::new(o, &client);
    let progress = Progress::new(o.quiet);
    progress.phase("list", 0);
    let from = list_all(&client, &sp, &progress)?;
    let there: HashMap<String, super::Listed> = if o.sync {
        list_all(&client, &dp, &progress)?.into_iter().map(|l| (l.key.clone(), l)).collect()
    } else {
        HashMap::new()
    };
    s.list_s = t0.elapsed().as_secs_f64();
    s.src_files = from.len() as u64;
    s.src_bytes = from.iter().map(|l| l.size).sum();
    s.dst_entries = there.len() as u64;
    let mut wanted = HashSet::new();
    let mut send = Vec::new();
    for l in from {
        let to = format!("{dp}{}", l.key.strip_prefix(&sp).unwrap_or(&l.key));
        let unchanged = there.get(&to).is_some_and(|t| t.size == l.size && t.modified >= l.modified);
        wanted.insert(to.clone());
        if unchanged {
            s.skipped += 1;
        } else {
            send.push((l, to));
        }
    }
    let t1 = Instant::now();
    if o.dry_run {
        s.copied = send.len() as u64;
        s.bytes_transferred = send.iter().map(|(l, _)| l.size).sum();
    } else {
        progress.phase("copy", send.len() as u64);
        each(
            &client,
            o.in_flight,
            send,
            |(l, to)| {
                let store = client.store.clone();
                let tag = to.clone();
                let fut = async move {
                    let parse = |k: &str| object_store::path::Path::parse(k).map_err(|e| why(&e));
                    store.copy(&parse(&l.key)?, &parse(&to)?).await.map_err(|e| why(&e))?;
                    Ok(l.size)
                };
                (tag, fut)
            },
            |to, r| {
                match r {
                    Ok(bytes) => {
                        s.copied += 1;
                        s.bytes_transferred += bytes;
                    }
                    Err(e) => s.fail(format!("{to}: {e}")),
                }
                progress.set(s.copied + s.failed);
            },
        );
    }
    s.transfer_s = t1.elapsed().as_secs_f64();
    let extra: Vec<String> = there.into_keys().filter(|k| !wanted.contains(k)).collect();
    let t2 = Instant::now();
    super::delete_extra_keys(o, &client, extra, &mut s, &progress);
    s.delete_s = t2.elapsed().as_secs_f64();
    progress.finish();
    super::finish(&mut s, &client, t0, cpu0);
    Ok(s)
}
