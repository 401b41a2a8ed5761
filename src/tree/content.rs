//! File contents: a pure function of (spec, file index, byte offset), so the bytes do not
//! depend on the write block size, the thread that writes them or the machine.
//!
//! Bytes come from a pool made once from the seed: file i reads the pool from a start
//! offset hashed from (seed, i), wrapping around. Writing is then a write(2) straight
//! from the pool, with no per-file generation or copying in the timed path (generating
//! random bytes per file would cost about as much as writing them to the page cache).
//! Every file is incompressible (random) or compresses about RATIO:1 (compressible) on
//! its own; files differ because their start offsets differ.

use super::rng::{WyRand, hash3, mix};
use super::spec::{Content, STREAM_CONTENT};

/// Pool size: the largest single write. Starts are 64-byte aligned (65,536 distinct
/// starts), or 4 KiB aligned for O_DIRECT.
pub const POOL: usize = 4 << 20;
/// Compressible content: in every 4 KiB page of the pool, the first 4096/ratio bytes
/// are random and the rest zeros (the scheme fio's buffer_compress_percentage uses).
pub const PAGE: usize = 4096;
const START_ALIGN: u64 = 64;

pub struct ContentSource {
    /// 2 × POOL bytes (the pool twice), so any window of up to POOL bytes is contiguous;
    /// 4 KiB aligned in memory for O_DIRECT.
    raw: Vec<u8>,
    off: usize,
    seed: u64,
    align: u64,
}

impl ContentSource {
    /// Build the pool for `content` and `seed`. `direct_align` makes file starts 4 KiB
    /// aligned (needed by O_DIRECT), which changes the bytes: it is recorded in results.
    pub fn new(content: &Content, seed: u64, direct_align: bool) -> ContentSource {
        let mut raw = vec![0u8; 2 * POOL + PAGE];
        let off = raw.as_ptr().align_offset(PAGE);
        let random_per_page = match content {
            Content::Zeros => 0,
            Content::Random => PAGE,
            Content::Compressible { ratio } => ((PAGE as f64 / ratio).ceil() as usize).clamp(1, PAGE),
        };
        if random_per_page > 0 {
            let pool = &mut raw[off..off + POOL];
            let key = hash3(seed, 0, STREAM_CONTENT);
            for (p, page) in pool.chunks_exact_mut(PAGE).enumerate() {
                WyRand(key ^ mix(p as u64)).fill(&mut page[..random_per_page]);
            }
            raw.copy_within(off..off + POOL, off + POOL);
        }
        ContentSource { raw, off, seed, align: if direct_align { PAGE as u64 } else { START_ALIGN } }
    }

    /// Bytes `offset .. offset + len` of file `index` (len ≤ POOL).
    #[inline]
    pub fn bytes(&self, index: u64, offset: u64, len: usize) -> &[u8] {
        debug_assert!(len <= POOL);
        let slots = POOL as u64 / self.align;
        let start = (hash3(self.seed, index, STREAM_CONTENT) % slots) * self.align;
        let pos = ((start + offset) % POOL as u64) as usize;
        &self.raw[self.off + pos..self.off + pos + len]
    }

    /// Copy bytes `offset ..` of file `index` into `buf` (any length).
    pub fn fill(&self, index: u64, offset: u64, buf: &mut [u8]) {
        let mut done = 0;
        while done < buf.len() {
            let n = (buf.len() - done).min(POOL);
            buf[done..done + n].copy_from_slice(self.bytes(index, offset + done as u64, n));
            done += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(src: &ContentSource, len: usize, block: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut off = 0;
        while off < len {
            let n = block.min(len - off);
            out.extend_from_slice(src.bytes(3, off as u64, n));
            off += n;
        }
        out
    }

    #[test]
    fn independent_of_block_size_and_deterministic() {
        for c in [Content::Random, Content::Compressible { ratio: 3.0 }, Content::Zeros] {
            let s = ContentSource::new(&c, 7, false);
            let a = whole(&s, 9 << 20, POOL);
            assert_eq!(a, whole(&s, 9 << 20, 4096));
            assert_eq!(a, whole(&s, 9 << 20, 1000));
            let mut f = vec![0u8; 9 << 20];
            s.fill(3, 0, &mut f);
            assert_eq!(a, f);
            assert_eq!(a, whole(&ContentSource::new(&c, 7, false), 9 << 20, 65536));
        }
    }

    #[test]
    fn compressible_has_the_right_share_of_zeros() {
        let s = ContentSource::new(&Content::Compressible { ratio: 4.0 }, 1, false);
        let a = s.bytes(5, 0, 1 << 20);
        let zeros = a.iter().filter(|&&b| b == 0).count() as f64 / a.len() as f64;
        // 3/4 of each page is zeros, plus the ~1/256 of random bytes that happen to be 0
        assert!((zeros - 0.75).abs() < 0.01, "{zeros}");
        let r = ContentSource::new(&Content::Random, 1, false);
        let zr = r.bytes(5, 0, 1 << 20).iter().filter(|&&b| b == 0).count() as f64 / (1 << 20) as f64;
        assert!(zr < 0.01, "{zr}");
    }

    #[test]
    fn files_and_seeds_differ() {
        let s = ContentSource::new(&Content::Random, 1, false);
        assert_ne!(s.bytes(1, 0, 1024), s.bytes(2, 0, 1024));
        let t = ContentSource::new(&Content::Random, 2, false);
        assert_ne!(s.bytes(1, 0, 1024), t.bytes(1, 0, 1024));
    }

    #[test]
    fn direct_starts_are_page_aligned_in_memory() {
        let s = ContentSource::new(&Content::Random, 1, true);
        for i in 0..100 {
            assert_eq!(s.bytes(i, 0, 4096).as_ptr() as usize % PAGE, 0);
        }
    }
}
