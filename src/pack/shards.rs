//! Shards for an object store: a tree's files packed, in the order given, into archives
//! of at most a chosen size (a file is never split: one larger than the shard size gets a
//! shard of its own), with one index beside them that says where every file is, so a
//! reader fetches one file with a range GET into its shard. Two formats ([`Format`]):
//!
//! - `tar`: a plain tar archive (the `tar` crate's GNU headers: mode 0644, owner 0,
//!   mtime 0, files only — the directories are implied by the names, as `tar -x` makes
//!   them; a name of 100 bytes or more gets GNU's long-name entry), so `tar -xf` unpacks
//!   it. A file's place is its data's bytes: the range GET returns the file.
//! - `tar.zst`: the same archive, each member (its header, long name and padded data)
//!   compressed into a zstd frame of its own and the end-of-archive blocks into a last
//!   one. Concatenated frames are one zstd stream, so `zstd -dc SHARD | tar -x` (or
//!   `tar --zstd -xf`) unpacks it as any .tar.zst; a file's place is its member's frame:
//!   the range GET returns that frame, which the reader decompresses ([`member`]).
//!   Small files compress worse alone than in one stream: that is the price of reading
//!   one file without the shard (zstd's seekable format makes the same trade).
//!
//! The index is one JSON document ([`Index`]):
//!
//! ```json
//! {"format":"manyfiles-shards 1","shard_size":1048576,
//!  "shards":[{"key":"shard-000000.tar","bytes":1049600}],
//!  "files":[["dir/name",0,512,4096]]}
//! ```
//!
//! `files` holds `[name, shard, offset, length]`: `shards[shard]`'s bytes `offset ..
//! offset + length` (a range GET of exactly them) are the file's data, or with
//! `"compression":"zstd-frames"` its member's frame.

use serde::{Deserialize, Serialize};

/// The index's `format` value.
pub const FORMAT: &str = "manyfiles-shards 1";
/// The index's `compression` of tar.zst shards: a zstd frame a member.
pub const ZSTD_FRAMES: &str = "zstd-frames";
/// zstd's level: its default, as the `zstd` tool's and `tar --zstd`'s.
const ZSTD_LEVEL: i32 = 3;

/// How a shard holds its files (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Format {
    Tar,
    TarZst,
}

impl Format {
    pub const ALL: [Format; 2] = [Format::Tar, Format::TarZst];

    /// `tar`, `tar.zst`: as `--containers` and route names say it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Tar => "tar",
            Format::TarZst => "tar.zst",
        }
    }

    pub fn parse(text: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == text)
    }
}

/// One way to shard: a format and the most bytes a shard holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sharding {
    pub format: Format,
    pub size: u64,
}

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
    /// [`ZSTD_FRAMES`] for tar.zst shards; absent for tar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<String>,
}

impl Index {
    /// The index read back, its format and every file's place checked against its shards.
    pub fn parse(bytes: &[u8]) -> Result<Index, String> {
        let i: Index = serde_json::from_slice(bytes).map_err(|e| format!("shard index: {e}"))?;
        if i.format != FORMAT {
            return Err(format!("shard index: format '{}', expected '{FORMAT}'", i.format));
        }
        if let Some(c) = i.compression.as_deref().filter(|c| *c != ZSTD_FRAMES) {
            return Err(format!("shard index: compression '{c}', expected '{ZSTD_FRAMES}' or none"));
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

    /// The shards' format.
    pub fn shard_format(&self) -> Format {
        match self.compression {
            Some(_) => Format::TarZst,
            None => Format::Tar,
        }
    }
}

/// The key of shard `i` of `format` below the shards' prefix.
pub fn shard_key(i: u32, format: Format) -> String {
    format!("shard-{i:06}.{}", format.name())
}

/// A file's bytes from what the range GET of its place returned: tar's are the file's
/// data; tar.zst's its member's frame, decompressed and its header checked to name `name`.
pub fn member(format: Format, got: &[u8], name: &str) -> Result<Vec<u8>, String> {
    if format == Format::Tar {
        return Ok(got.to_vec());
    }
    let raw = zstd::stream::decode_all(got).map_err(|e| format!("{name}: its zstd frame: {e}"))?;
    let mut archive = ::tar::Archive::new(&raw[..]);
    let mut entries = archive.entries().map_err(|e| format!("{name}: its tar member: {e}"))?;
    let mut e = match entries.next() {
        Some(e) => e.map_err(|e| format!("{name}: its tar member: {e}"))?,
        None => return Err(format!("{name}: its frame holds no tar member")),
    };
    let path = e.path().map_err(|e| format!("{name}: its tar member's name: {e}"))?.to_string_lossy().into_owned();
    if path != name {
        return Err(format!("{name}: its frame holds {path}"));
    }
    let mut data = Vec::new();
    std::io::Read::read_to_end(&mut e, &mut data).map_err(|e| format!("{name}: reading its member: {e}"))?;
    Ok(data)
}

/// The archive's bytes of a whole shard (tar.zst's decompressed): its length.
pub fn unpacked_len(format: Format, shard: &[u8]) -> Result<u64, String> {
    match format {
        Format::Tar => Ok(shard.len() as u64),
        Format::TarZst => {
            let mut n = 0u64;
            let mut d = zstd::stream::Decoder::new(shard).map_err(|e| format!("zstd: {e}"))?;
            let mut buf = vec![0u8; 1 << 16];
            loop {
                match std::io::Read::read(&mut d, &mut buf) {
                    Ok(0) => return Ok(n),
                    Ok(k) => n += k as u64,
                    Err(e) => return Err(format!("zstd: {e}")),
                }
            }
        }
    }
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

/// One tar member: `name`'s header (and long-name entry) and its data padded to a block;
/// the data's offset in it.
fn tar_member(name: &str, data: &[u8]) -> Result<(Vec<u8>, u64), String> {
    let mut b = ::tar::Builder::new(Vec::with_capacity(entry_len(name.len(), data.len() as u64) as usize));
    let mut h = ::tar::Header::new_gnu();
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_mtime(0);
    h.set_entry_type(::tar::EntryType::Regular);
    b.append_data(&mut h, name, data).map_err(|err| format!("tar: {name}: {err}"))?;
    // Taken before the builder's drop writes its end-of-archive into the emptied Vec.
    let bytes = std::mem::take(b.get_mut());
    let offset = bytes.len() as u64 - (data.len() as u64).div_ceil(BLOCK) * BLOCK;
    Ok((bytes, offset))
}

fn zstd_frame(bytes: &[u8]) -> Result<Vec<u8>, String> {
    zstd::bulk::compress(bytes, ZSTD_LEVEL).map_err(|e| format!("zstd: {e}"))
}

/// Packs files into shards one after another: [`add`](Self::add) hands back a shard
/// when the file would not fit the one being filled, [`finish`](Self::finish) the last
/// one and the index. A shard's size counts its stored bytes (tar.zst's compressed).
pub struct ShardBuilder {
    sharding: Sharding,
    /// The shard being filled.
    current: Option<Vec<u8>>,
    /// What ends a shard: tar's two zero blocks, for tar.zst in a frame.
    end: Vec<u8>,
    index: Index,
}

impl ShardBuilder {
    pub fn new(sharding: Sharding) -> Result<ShardBuilder, String> {
        let zeros = vec![0u8; END as usize];
        let (end, compression) = match sharding.format {
            Format::Tar => (zeros, None),
            Format::TarZst => (zstd_frame(&zeros)?, Some(ZSTD_FRAMES.to_string())),
        };
        let index = Index {
            format: FORMAT.into(),
            shard_size: sharding.size,
            shards: Vec::new(),
            files: Vec::new(),
            compression,
        };
        Ok(ShardBuilder { sharding, current: None, end, index })
    }

    /// The shard being filled, sealed: (its index, its bytes).
    fn seal(&mut self) -> Option<Sealed> {
        let mut bytes = self.current.take()?;
        bytes.extend_from_slice(&self.end);
        let i = self.index.shards.len() as u32;
        let key = shard_key(i, self.sharding.format);
        self.index.shards.push(ShardEntry { key, bytes: bytes.len() as u64 });
        Some((i, bytes))
    }

    /// Add file `name` with `data`; returns the shard sealed to make room, if one was.
    pub fn add(&mut self, name: &str, data: &[u8]) -> Result<Option<Sealed>, String> {
        let (member, data_at) = tar_member(name, data)?;
        let (piece, place) = match self.sharding.format {
            Format::Tar => (member, Some(data_at)),
            Format::TarZst => (zstd_frame(&member)?, None),
        };
        let fill = self.current.as_ref().map(|b| b.len() as u64);
        let sealed = match fill {
            Some(f) if f + (piece.len() + self.end.len()) as u64 > self.sharding.size => self.seal(),
            _ => None,
        };
        let b = self.current.get_or_insert_with(|| Vec::with_capacity(piece.len() + self.end.len()));
        let start = b.len() as u64;
        b.extend_from_slice(&piece);
        let shard = self.index.shards.len() as u32;
        let (offset, len) = match place {
            Some(at) => (start + at, data.len() as u64),
            None => (start, piece.len() as u64),
        };
        self.index.files.push((name.to_string(), shard, offset, len));
        Ok(sealed)
    }

    /// The last shard (None when no file was added) and the index.
    pub fn finish(mut self) -> (Option<Sealed>, Index) {
        let last = self.seal();
        (last, self.index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(files: &[(&str, Vec<u8>)], shard_size: u64) -> (Vec<Vec<u8>>, Index) {
        build_as(files, Sharding { format: Format::Tar, size: shard_size })
    }

    fn build_as(files: &[(&str, Vec<u8>)], sharding: Sharding) -> (Vec<Vec<u8>>, Index) {
        let mut b = ShardBuilder::new(sharding).unwrap();
        let mut shards = Vec::new();
        for (n, d) in files {
            if let Some((i, s)) = b.add(n, d).unwrap() {
                assert_eq!(i as usize, shards.len());
                shards.push(s);
            }
        }
        let (last, index) = b.finish();
        shards.extend(last.map(|(_, s)| s));
        (shards, index)
    }

    /// Every member of these tar archives, in order: (name, bytes), as the tar crate reads them.
    fn members(archives: &[&[u8]]) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for s in archives {
            for e in ::tar::Archive::new(*s).entries().unwrap() {
                let mut e = e.unwrap();
                let name = e.path().unwrap().to_string_lossy().into_owned();
                let mut got = Vec::new();
                std::io::Read::read_to_end(&mut e, &mut got).unwrap();
                out.push((name, got));
            }
        }
        out
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
        let archives: Vec<&[u8]> = shards.iter().map(|s| &s[..]).collect();
        assert_eq!(members(&archives), files);
    }

    #[test]
    fn tar_zst_shards_hold_a_frame_a_file_and_unpack_as_one_stream() {
        let long = format!("d/{}", "z".repeat(130));
        // Compressible files (text-like) and one that is not (a pseudo-random run).
        let mut files: Vec<(String, Vec<u8>)> = (0..30)
            .map(|i| (format!("d{}/f{i:02}.txt", i % 4), format!("line {i}\n").repeat(200).into_bytes()))
            .collect();
        let mut x = 88172645463325252u64;
        let noise: Vec<u8> = (0..9000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        files.push((long.clone(), noise));
        files.push(("empty".into(), Vec::new()));
        let refs: Vec<(&str, Vec<u8>)> = files.iter().map(|(n, d)| (n.as_str(), d.clone())).collect();
        let sharding = Sharding { format: Format::TarZst, size: 8192 };
        let (shards, index) = build_as(&refs, sharding);
        let parsed = Index::parse(&index.to_json()).unwrap();
        assert_eq!(parsed, index);
        assert_eq!(parsed.shard_format(), Format::TarZst);
        assert!(index.shards.iter().all(|s| s.key.ends_with(".tar.zst")), "{:?}", index.shards);
        // Text compresses: fewer shards than tar's, and each within its size unless it
        // holds one file.
        let plain = count_shards(files.iter().map(|(n, d)| (n.len(), d.len() as u64)), 8192);
        assert!((shards.len() as u64) < plain, "{} shards against tar's {plain}", shards.len());
        for (s, e) in shards.iter().zip(&index.shards) {
            assert_eq!(s.len() as u64, e.bytes);
            let held = index.files.iter().filter(|f| index.shards[f.1 as usize].key == e.key).count();
            assert!(s.len() <= 8192 || held == 1, "{} holds {held} files in {} bytes", e.key, s.len());
        }
        // Every file from its frame alone (what a range GET returns).
        for (n, d) in &files {
            let (key, off, len) = index.find(n).unwrap();
            let s = &shards[index.shards.iter().position(|e| e.key == key).unwrap()];
            let frame = &s[off as usize..(off + len) as usize];
            assert_eq!(&member(Format::TarZst, frame, n).unwrap(), d, "{n}");
            // The wrong name is refused, not returned.
            assert!(member(Format::TarZst, frame, "other").unwrap_err().contains("holds"), "{n}");
        }
        // A whole shard is one zstd stream of a tar archive: names and bytes in order.
        let raws: Vec<Vec<u8>> = shards.iter().map(|s| zstd::stream::decode_all(&s[..]).unwrap()).collect();
        for (s, raw) in shards.iter().zip(&raws) {
            assert_eq!(unpacked_len(Format::TarZst, s).unwrap(), raw.len() as u64);
            assert_eq!(&raw[raw.len() - 1024..], &[0u8; 1024][..], "the end-of-archive blocks");
        }
        assert_eq!(members(&raws.iter().map(|r| &r[..]).collect::<Vec<_>>()), files);
        assert!(member(Format::TarZst, b"not zstd", "x").is_err());
    }

    /// GNU tar (with the zstd tool) unpacks a tar.zst shard as any .tar.zst.
    #[test]
    fn gnu_tar_unpacks_a_tar_zst_shard() {
        let have = |t: &str| std::process::Command::new(t).arg("--version").output().is_ok_and(|o| o.status.success());
        if !(have("tar") && have("zstd")) {
            assert!(std::env::var_os("CI").is_none(), "CI installs tar and zstd (.ci/run)");
            eprintln!("skipped: tar or zstd missing (apt-get install tar zstd)");
            return;
        }
        let files: Vec<(String, Vec<u8>)> =
            (0..12).map(|i| (format!("d{}/{}", i % 2, "n".repeat(90 + i)), content(i, 300 + 700 * i))).collect();
        let refs: Vec<(&str, Vec<u8>)> = files.iter().map(|(n, d)| (n.as_str(), d.clone())).collect();
        let (shards, _) = build_as(&refs, Sharding { format: Format::TarZst, size: 1 << 20 });
        assert_eq!(shards.len(), 1);
        let dir = tempfile::tempdir().unwrap();
        let shard = dir.path().join("shard.tar.zst");
        std::fs::write(&shard, &shards[0]).unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let st =
            std::process::Command::new("tar").args(["--zstd", "-xf"]).arg(&shard).arg("-C").arg(&out).status().unwrap();
        assert!(st.success(), "tar --zstd -xf");
        for (n, d) in &files {
            assert_eq!(&std::fs::read(out.join(n)).unwrap(), d, "{n}");
        }
    }

    #[test]
    fn formats_are_named_as_containers_are() {
        for f in Format::ALL {
            assert_eq!(Format::parse(f.name()), Some(f));
        }
        assert_eq!(Format::parse("tar.gz"), None);
        assert_eq!(shard_key(3, Format::Tar), "shard-000003.tar");
        assert_eq!(shard_key(3, Format::TarZst), "shard-000003.tar.zst");
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
        let (_, mut index) = build(&[("a", content(1, 10))], 4096);
        index.compression = Some("gzip".into());
        assert!(Index::parse(&index.to_json()).unwrap_err().contains("compression"));
    }
}
