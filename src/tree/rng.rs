//! Counter-based pseudo-random numbers.
//!
//! Written by hand (not the `rand` crate) because the generator must give file *i* its
//! size, name and bytes without walking files 0..i: any thread, any machine, any MPI
//! rank derives them from (seed, i) alone. SplitMix64 mixing is a bijective, well-tested
//! finaliser, and wyrand fills buffers at several GB/s.

/// SplitMix64 finaliser: a good 64-bit hash of one word.
#[inline]
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Hash of (seed, index, stream): independent streams per use (size, name, content).
#[inline]
pub fn hash3(seed: u64, index: u64, stream: u64) -> u64 {
    mix(mix(seed ^ stream.wrapping_mul(0xD6E8_FEB8_6659_FD93)) ^ index)
}

/// Uniform in [0, 1) from a hash word (53 bits of precision).
#[inline]
pub fn unit_f64(h: u64) -> f64 {
    (h >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// wyrand: a small, fast sequential generator for filling buffers.
pub struct WyRand(pub u64);

impl WyRand {
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xA076_1D64_78BD_642F);
        let t = (self.0 as u128).wrapping_mul((self.0 ^ 0xE703_7ED1_A0B4_28DB) as u128);
        ((t >> 64) ^ t) as u64
    }

    /// Fill `buf` with pseudo-random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let w = self.next_u64().to_le_bytes();
            rest.copy_from_slice(&w[..rest.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_spread() {
        assert_eq!(hash3(1, 2, 3), hash3(1, 2, 3));
        assert_ne!(hash3(1, 2, 3), hash3(1, 3, 3));
        assert_ne!(hash3(1, 2, 3), hash3(2, 2, 3));
        // mean of many uniforms is close to 0.5
        let m: f64 = (0..10_000).map(|i| unit_f64(hash3(7, i, 0))).sum::<f64>() / 10_000.0;
        assert!((m - 0.5).abs() < 0.01, "{m}");
        let mut a = [0u8; 13];
        let mut b = [0u8; 13];
        WyRand(5).fill(&mut a);
        WyRand(5).fill(&mut b);
        assert_eq!(a, b);
        assert!(a.iter().any(|&x| x != 0));
    }
}
