//! Tar shards for an object store: a tree's files packed, in the order given, into tar
//! archives of at most a chosen size (a file is never split: one larger than the shard
//! size gets a shard of its own), with one index beside them that says where every file's
//! bytes are, so a reader fetches one file with a range GET into its shard.
//!
//! A shard is a plain tar archive (the `tar` crate's GNU headers: mode 0644, owner 0,
//! mtime 0, files only — the directories are implied by the names, as `tar -x` makes
//! them; a name of 100 bytes or more gets GNU's long-name entry), so `tar -xf` unpacks
//! it. The index is one JSON document ([`Index`]):
//!
//! ```json
//! {"format":"manyfiles-shards 1","shard_size":1048576,
//!  "shards":[{"key":"shard-000000.tar","bytes":1049600}],
//!  "files":[["dir/name",0,512,4096]]}
//! ```
//!
//! `files` holds `[name, shard, offset, length]`: the file's bytes are
//! `shards[shard]`'s bytes `offset .. offset + length` (a range GET of exactly them).

use serde::{Deserialize, Serialize};

/// The index's `format` value.
pub const FORMAT: &str = "manyfiles-shards 1";

/// A tar block; every header and every file's padded data are whole blocks.
const BLOCK: u64 = 512;
/// A name this long or longer may not fit the GNU header's name field (100 bytes).
const LONG_NAME: usize = 100;

/// One shard as the index lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardEntry {
    /// Its key, relative to the shards' prefix.
    pub key: String,
    pub bytes: u64,
}

/// Where every file is (see the module's doc).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    pub format: String,
    pub shard_size: u64,
    pub shards: Vec<ShardEntry>,
    /// `(name, shard, offset, length)`.
    pub files: Vec<(String, u32, u64, u64)>,
}

impl Index {
    /// The index read back, its format and every file's place checked against its shards.
    pub fn parse(bytes: &[u8]) -> Result<Index, String> {
        let i: Index = serde_json::from_slice(bytes).map_err(|e| format!("shard index: {e}"))?;
        if i.format != FORMAT {
            return Err(format!("shard index: format '{}', expected '{FORMAT}'", i.format));
        }
        for (name, shard, offset, len) in &i.files {
            let Some(s) = i.shards.get(*shard as usize) else {
                return Err(format!("shard index: {name} in shard {shard}, of {}", i.shards.len()));
            };
            if offset.checked_add(*len).is_none_or(|end| end > s.bytes) {
                return Err(format!("shard index: {name} ends past its shard {}", s.key));
            }
        }
        Ok(i)
    }

    /// The place of `name`: (shard's key, offset, length).
    pub fn find(&self, name: &str) -> Option<(&str, u64, u64)> {
        let (_, shard, offset, len) = self.files.iter().find(|f| f.0 == name)?;
        Some((self.shards[*shard as usize].key.as_str(), *offset, *len))
    }

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("an index serializes")
    }
}

/// The key of shard `i` below the shards' prefix.
pub fn shard_key(i: u32) -> String {
    format!("shard-{i:06}.tar")
}

/// The index's key below the shards' prefix.
pub const INDEX_KEY: &str = "index.json";

/// Bytes a file of `size` with a name of `name_len` bytes takes in a tar archive: its
/// header (and a long-name entry), its data padded to a block.
pub fn entry_len(name_len: usize, size: u64) -> u64 {
    let long = if name_len >= LONG_NAME { BLOCK + (name_len as u64 + 1).div_ceil(BLOCK) * BLOCK } else { 0 };
    long + BLOCK + size.div_ceil(BLOCK) * BLOCK
}

/// The end-of-archive marker: two zero blocks.
const END: u64 = 2 * BLOCK;

/// How many shards files of these `(name length, size)` make at `shard_size` (the rule
/// [`ShardBuilder`] packs by).
pub fn count_shards(files: impl IntoIterator<Item = (usize, u64)>, shard_size: u64) -> u64 {
    let (mut shards, mut fill) = (0u64, 0u64);
    for (name_len, size) in files {
        let e = entry_len(name_len, size);
        if fill == 0 || fill + e + END > shard_size {
            shards += 1;
            fill = 0;
        }
        fill += e;
    }
    shards
}

/// A sealed shard: its number and its bytes.
pub type Sealed = (u32, Vec<u8>);

/// Packs files into shards one after another: [`add`](Self::add) hands back a shard
/// when the file would not fit the one being filled, [`finish`](Self::finish) the last
/// one and the index.
pub struct ShardBuilder {
    shard_size: u64,
    current: Option<::tar::Builder<Vec<u8>>>,
    index: Index,
}

impl ShardBuilder {
    pub fn new(shard_size: u64) -> ShardBuilder {
        let index = Index { format: FORMAT.into(), shard_size, shards: Vec::new(), files: Vec::new() };
        ShardBuilder { shard_size, current: None, index }
    }

    /// The shard being filled, sealed: (its index, its bytes).
    fn seal(&mut self) -> Result<Option<Sealed>, String> {
        let Some(b) = self.current.take() else { return Ok(None) };
        let bytes = b.into_inner().map_err(|e| format!("tar: {e}"))?;
        let i = self.index.shards.len() as u32;
        self.index.shards.push(ShardEntry { key: shard_key(i), bytes: bytes.len() as u64 });
        Ok(Some((i, bytes)))
    }

    /// Add file `name` with `data`; returns the shard sealed to make room, if one was.
    pub fn add(&mut self, name: &str, data: &[u8]) -> Result<Option<Sealed>, String> {
        let e = entry_len(name.len(), data.len() as u64);
        let fill = self.current.as_ref().map(|b| b.get_ref().len() as u64);
        let sealed = match fill {
            Some(f) if f + e + END > self.shard_size => self.seal()?,
            _ => None,
        };
        let b = self.current.get_or_insert_with(|| ::tar::Builder::new(Vec::with_capacity(e as usize)));
        let mut h = ::tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_entry_type(::tar::EntryType::Regular);
        b.append_data(&mut h, name, data).map_err(|err| format!("tar: {name}: {err}"))?;
        let end = b.get_ref().len() as u64;
        let offset = end - (data.len() as u64).div_ceil(BLOCK) * BLOCK;
        let shard = self.index.shards.len() as u32;
        self.index.files.push((name.to_string(), shard, offset, data.len() as u64));
        Ok(sealed)
    }

    /// The last shard (None when no file was added) and the index.
    pub fn finish(mut self) -> Result<(Option<Sealed>, Index), String> {
        let last = self.seal()?;
        Ok((last, self.index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(files: &[(&str, Vec<u8>)], shard_size: u64) -> (Vec<Vec<u8>>, Index) {
        let mut b = ShardBuilder::new(shard_size);
        let mut shards = Vec::new();
        for (n, d) in files {
            if let Some((i, s)) = b.add(n, d).unwrap() {
                assert_eq!(i as usize, shards.len());
                shards.push(s);
            }
        }
        let (last, index) = b.finish().unwrap();
        shards.extend(last.map(|(_, s)| s));
        (shards, index)
    }

    fn content(i: usize, len: usize) -> Vec<u8> {
        (0..len).map(|j| (i * 31 + j * 7) as u8).collect()
    }

    #[test]
    fn every_file_is_where_the_index_says_and_shards_keep_their_size() {
        let long = format!("d/{}", "n".repeat(150));
        let mut files: Vec<(String, Vec<u8>)> =
            (0..40).map(|i| (format!("d{}/f{i:03}", i % 3), content(i, 100 + i * 97))).collect();
        files.push((long.clone(), content(99, 5000)));
        files.push(("big".into(), content(7, 20_000)));
        let refs: Vec<(&str, Vec<u8>)> = files.iter().map(|(n, d)| (n.as_str(), d.clone())).collect();
        let size = 8192;
        let (shards, index) = build(&refs, size);
        let parsed = Index::parse(&index.to_json()).unwrap();
        assert_eq!(parsed, index);
        assert_eq!(shards.len(), index.shards.len());
        let expected = count_shards(files.iter().map(|(n, d)| (n.len(), d.len() as u64)), size);
        assert_eq!(shards.len() as u64, expected);
        for (n, d) in &files {
            let (key, off, len) = index.find(n).unwrap();
            let s = &shards[index.shards.iter().position(|e| e.key == key).unwrap()];
            assert_eq!(&s[off as usize..(off + len) as usize], &d[..], "{n}");
        }
        for (s, e) in shards.iter().zip(&index.shards) {
            assert_eq!(s.len() as u64, e.bytes);
            // Only a shard holding one file larger than the size may pass it.
            let held = index.files.iter().filter(|f| index.shards[f.1 as usize].key == e.key).count();
            assert!(s.len() as u64 <= size || held == 1, "{} holds {held} files in {} bytes", e.key, s.len());
        }
        // Each shard is a tar archive the tar crate reads back: names and bytes.
        let mut seen = Vec::new();
        for s in &shards {
            let mut a = ::tar::Archive::new(&s[..]);
            for e in a.entries().unwrap() {
                let mut e = e.unwrap();
                let name = e.path().unwrap().to_string_lossy().into_owned();
                let mut got = Vec::new();
                std::io::Read::read_to_end(&mut e, &mut got).unwrap();
                assert_eq!(&got, &files.iter().find(|f| f.0 == name).unwrap().1);
                seen.push(name);
            }
        }
        assert_eq!(seen, files.iter().map(|f| f.0.clone()).collect::<Vec<_>>());
    }

    #[test]
    fn shard_counts_follow_the_rule() {
        // 100 files of 4 KiB: 4,608 bytes each in the archive.
        let files = || (0..100).map(|_| (8usize, 4096u64));
        assert_eq!(entry_len(8, 4096), 4608);
        assert_eq!(count_shards(files(), 1 << 30), 1);
        // 64 KiB: (65,536 − 1,024) / 4,608 = 14 files a shard → 8 shards.
        assert_eq!(count_shards(files(), 64 << 10), 8);
        // Smaller than one file: a shard each.
        assert_eq!(count_shards(files(), 1000), 100);
        assert_eq!(count_shards(std::iter::empty(), 1000), 0);
        // An empty file takes its header only.
        assert_eq!(entry_len(8, 0), 512);
        // A long name: its GNU entry (a header, the name padded), then header and data.
        assert_eq!(entry_len(120, 1), 512 + 512 + 512 + 512);
    }

    #[test]
    fn a_bad_index_is_refused() {
        let (_, mut index) = build(&[("a", content(1, 10))], 4096);
        index.files[0].3 = 1 << 20;
        assert!(Index::parse(&index.to_json()).unwrap_err().contains("ends past its shard"));
        index.format = "other".into();
        assert!(Index::parse(&index.to_json()).unwrap_err().contains("format"));
        assert!(Index::parse(b"{").is_err());
    }
}
