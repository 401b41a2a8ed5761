//! Object → object in one bucket: server-side copies (CopyObject: the bytes never leave
//! the store, the metadata — the `mtime` — goes with them). `sync` sends what is new,
//! of another size, or last modified at DST before the source object was; `--delete`
//! removes what the source prefix has not, 1,000 keys a request. Filter rules select
//! the source's keys and protect DST's ([`super::select`]); `--verify` GETs both sides of
//! every selected key and compares them ([`super::verify`]).

use super::select::{Keys, Side};
use super::verify::{Item, Way};
use super::{ObjectUrl, Options, Summary, connect, each, list_all, why};
use crate::error::{Error, Result};
use crate::measure::progress::Progress;
use object_store::ObjectStoreExt;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// Copy or sync `src` to `dst` (the same bucket).
pub fn run(o: &Options, src: &ObjectUrl, dst: &ObjectUrl) -> Result<Summary> {
    if src.bucket != dst.bucket {
        return Err(Error::bad(
            "DST",
            format!("object to object copies within one {} only (a server-side copy)", dst.bucket_word()),
        ));
    }
    let (sp, dp) = (src.dir_prefix(), dst.dir_prefix());
    if sp.starts_with(&dp) || dp.starts_with(&sp) {
        return Err(Error::bad("DST", format!("{dst} and {src} overlap: one lies within the other")));
    }
    let t0 = Instant::now();
    let cpu0 = crate::measure::cpu_times();
    let (client, any) = connect(&o.reach, dst, crate::storage::object_client::Retries::Backoff)?;
    if !o.sync && any {
        return Err(Error::bad("DST", format!("{dst} holds objects: copy writes only under an empty prefix")));
    }
    let mut s = Summary::new(o, &client);
    let progress = Progress::new(o.quiet);
    progress.phase("list", 0);
    let listed = list_all(&client, &sp, &progress)?;
    // A prefix with nothing under it is refused as a missing local SRC is (a misspelled
    // one with --delete would empty DST), before anything is written.
    if listed.is_empty() {
        return Err(Error::bad("SRC", format!("{src}: no object under this prefix")));
    }
    let mut select = Keys::new(o.filter.as_deref(), Side::Sender);
    let from: Vec<super::Listed> = listed.into_iter().filter(|l| !select.out(rel(&l.key, &sp))).collect();
    s.excluded = select.excluded;
    let there: HashMap<String, super::Listed> = if o.sync {
        list_all(&client, &dp, &progress)?.into_iter().map(|l| (l.key.clone(), l)).collect()
    } else {
        HashMap::new()
    };
    s.list_s = t0.elapsed().as_secs_f64();
    s.src_files = from.len() as u64;
    s.src_bytes = from.iter().map(|l| l.size).sum();
    s.dst_entries = there.len() as u64;
    let present = super::select::dirs_of(from.iter().map(|l| rel(&l.key, &sp)));
    let check: Vec<Item> = match o.verify {
        true => from
            .iter()
            .map(|l| Item {
                rel: rel(&l.key, &sp).into(),
                key: l.key.clone(),
                dst_key: Some(format!("{dp}{}", rel(&l.key, &sp))),
            })
            .collect(),
        false => Vec::new(),
    };
    let mut wanted = HashSet::new();
    let mut send = Vec::new();
    for l in from {
        let to = format!("{dp}{}", rel(&l.key, &sp));
        let at = there.get(&to);
        let unchanged = at.is_some_and(|t| t.size == l.size && t.modified >= l.modified);
        wanted.insert(to.clone());
        if unchanged {
            s.skipped += 1;
        } else {
            s.change(super::changes::sent(rel(&l.key, &sp), at.map(|t| (t.size != l.size, t.modified < l.modified))));
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
    super::delete_extra_keys(o, &client, (&dp, present), extra, &mut s, &progress);
    s.delete_s = t2.elapsed().as_secs_f64();
    if o.verify && crate::signals::pending() == 0 {
        s.verify = Some(super::verify::run(&client, o.in_flight, Way::Between, check, &progress));
    }
    progress.finish();
    super::finish(&mut s, &client, t0, cpu0);
    Ok(s)
}

/// A key's path below `prefix` (`P/`).
fn rel<'k>(key: &'k str, prefix: &str) -> &'k str {
    key.strip_prefix(prefix).unwrap_or(key)
}
