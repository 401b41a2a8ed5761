//! Which objects below a run's own prefix the run wrote ([`Owner`]), so that `cleanup`
//! after a kill -9 deletes those and nothing else.
//!
//! A run that writes to a store of the user's (`ladder`/`ops --target s3://…`,
//! `predict --on s3://…`, `pack --dst-target s3://…`; `azblob://…` the same) draws a
//! random 128-bit nonce, keeps it in its registry record (no credential: it opens
//! nothing), and sends every PUT with the user metadata [`OWNER_KEY`]` =
//! HMAC-SHA256(nonce, key)` (the first 128 bits, hex). `cleanup` lists the keys below
//! the prefix, HEADs each and deletes a key only when its metadata carries that value
//! ([`sweep_owned`]): an object someone else put there has none, and one copied there
//! from a run's own key (a copy keeps the metadata) carries another key's value. The
//! name is letters only, which S3 (`x-amz-meta-…`) and Azure Blob (`x-ms-meta-…`, a C#
//! identifier) both take. Left as it is: an object the run wrote and someone else then
//! overwrote at the same key between the HEAD and the DELETE (no conditional delete in
//! the client), as the live run's own deletion by key would.

use super::object_client::{ObjectClient, Store};
use crate::error::{Error, Result};
use futures_util::StreamExt;
use object_store::{Attribute, Attributes, GetOptions, ObjectStore};
use std::sync::Arc;

/// The user metadata naming the run that wrote an object.
pub const OWNER_KEY: &str = "manyfilesrun";

/// HEADs in flight at once while sweeping.
const IN_FLIGHT: usize = 32;

/// A run's nonce: what marks its objects as its own.
#[derive(Clone, PartialEq, Eq)]
pub struct Owner([u8; 16]);

impl std::fmt::Debug for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Owner(…)")
    }
}

impl Owner {
    /// A fresh nonce from /dev/urandom.
    pub fn new() -> Result<Owner> {
        let mut b = [0u8; 16];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
            .map_err(|e| Error::failed(format!("cannot draw a run's nonce from /dev/urandom: {e}")))?;
        Ok(Owner(b))
    }

    /// As a record keeps it: 32 hex digits.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// From a record (None: not 32 hex digits).
    pub fn from_hex(s: &str) -> Option<Owner> {
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let mut b = [0u8; 16];
        for (i, out) in b.iter_mut().enumerate() {
            *out = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Owner(b))
    }

    /// The mark of `key` (the object's whole key): 32 hex digits.
    pub fn mark(&self, key: &str) -> String {
        use hmac::{KeyInit, Mac};
        let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        m.update(key.as_bytes());
        hex(&m.finalize().into_bytes()[..16])
    }

    /// The attributes a PUT of `key` carries.
    pub fn attributes(&self, key: &str) -> Attributes {
        let mut a = Attributes::new();
        a.insert(Attribute::Metadata(OWNER_KEY.into()), self.mark(key).into());
        a
    }

    /// Does `attributes` (an object's at `key`) carry this run's mark?
    pub fn marked(&self, key: &str, attributes: &Attributes) -> bool {
        attributes.get(&Attribute::Metadata(OWNER_KEY.into())).is_some_and(|v| v.as_ref() == self.mark(key))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// What a sweep found below a prefix.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// The run's own objects, deleted.
    pub deleted: u64,
    /// Objects without the run's mark, left as they are.
    pub left: u64,
}

/// Every key below `prefix` (paged LIST; only keys that start with it).
async fn keys_below(store: &Arc<dyn Store>, prefix: &str) -> std::result::Result<Vec<String>, String> {
    use object_store::list::PaginatedListOptions;
    let (mut keys, mut token) = (Vec::new(), None);
    loop {
        let opts = PaginatedListOptions { page_token: token.take(), ..Default::default() };
        let page = store.list_paginated(Some(prefix), opts).await.map_err(|e| e.to_string())?;
        let below = page.result.objects.into_iter().map(|m| m.location.as_ref().to_string());
        keys.extend(below.filter(|k| k.starts_with(prefix)));
        token = page.page_token;
        if token.is_none() {
            return Ok(keys);
        }
    }
}

/// Is the object at `key` marked as `owner`'s? (HEAD; None: it is gone.)
async fn owned(store: Arc<dyn Store>, key: String, owner: &Owner) -> std::result::Result<Option<String>, String> {
    let location = object_store::path::Path::from(key.as_str());
    match store.get_opts(&location, GetOptions { head: true, ..Default::default() }).await {
        Ok(r) => Ok(owner.marked(&key, &r.attributes).then_some(key)),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(format!("{key}: {e}")),
    }
}

/// Delete the objects below `prefix` that carry `owner`'s mark (a HEAD each, then a
/// batched DELETE of those); count the others, which stay. No owner (a record of a build
/// that marked nothing): every object is counted and left. An error: a LIST, HEAD or
/// DELETE that failed (what was found marked before it is deleted nonetheless).
pub fn sweep_owned(client: &ObjectClient, prefix: &str, owner: Option<&Owner>) -> std::result::Result<Swept, String> {
    let (store, prefix, owner) = (client.store.clone(), prefix.to_string(), owner.cloned());
    let task = client.handle().spawn(async move {
        let keys = keys_below(&store, &prefix).await?;
        let Some(owner) = owner else { return Ok(Swept { deleted: 0, left: keys.len() as u64 }) };
        let heads = keys.into_iter().map(|k| owned(store.clone(), k, &owner));
        let answers: Vec<_> = futures_util::stream::iter(heads).buffer_unordered(IN_FLIGHT).collect().await;
        let (mut mine, mut left, mut failed) = (Vec::new(), 0u64, None);
        for a in answers {
            match a {
                Ok(Some(k)) => mine.push(k),
                Ok(None) => left += 1,
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        let deleted = mine.len() as u64;
        let paths = mine.into_iter().map(|k| Ok(object_store::path::Path::from(k))).collect::<Vec<_>>();
        let answers: Vec<_> = store.delete_stream(futures_util::stream::iter(paths).boxed()).collect().await;
        let lost = answers.into_iter().filter_map(|r| r.err());
        let failed = failed.or_else(|| {
            lost.filter(|e| !matches!(e, object_store::Error::NotFound { .. })).map(|e| e.to_string()).next()
        });
        match failed {
            Some(e) => Err(e),
            None => Ok(Swept { deleted, left }),
        }
    });
    client.block_on(task).map_err(|e| e.to_string())?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_names_the_run_and_the_key() {
        let (a, b) = (Owner::new().unwrap(), Owner::new().unwrap());
        assert_ne!(a, b);
        assert_eq!(Owner::from_hex(&a.to_hex()), Some(a.clone()));
        assert_eq!(a.mark("p/k").len(), 32);
        assert_eq!(a.mark("p/k"), a.mark("p/k"));
        assert_ne!(a.mark("p/k"), a.mark("p/k2"), "a copy to another key keeps no valid mark");
        assert_ne!(a.mark("p/k"), b.mark("p/k"));
        assert!(a.marked("p/k", &a.attributes("p/k")));
        assert!(!a.marked("p/k2", &a.attributes("p/k")));
        assert!(!a.marked("p/k", &b.attributes("p/k")));
        assert!(!a.marked("p/k", &Attributes::new()));
        for bad in ["", "00", &"g".repeat(32), &"0".repeat(33)] {
            assert_eq!(Owner::from_hex(bad), None, "{bad}");
        }
        assert_eq!(format!("{a:?}"), "Owner(…)");
        // HMAC-SHA256 as any other implementation computes it (Python's hmac): a mark
        // written by one build is found by the next.
        let zero = Owner([0; 16]);
        assert_eq!(zero.mark("p/manyfiles-ladder-1-00000000/x"), "84e245151e04977e37ecb852ac166a7f");
    }
}
