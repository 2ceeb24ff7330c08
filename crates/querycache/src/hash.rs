//! Fixed-seed hashing for digests and cache keys (stable within the process).

use std::hash::{BuildHasher, Hasher};

use foldhash::fast::FixedState;

const SEED_A: u64 = 0x9e37_79b9_7f4a_7c15;
const SEED_B: u64 = 0xc2b2_ae3d_27d4_eb4f;

/// 64-bit hash of bytes.
#[inline]
pub(crate) fn hash64(b: &[u8]) -> u64 {
    let mut h = FixedState::with_seed(SEED_A).build_hasher();
    h.write(b);
    h.finish()
}

/// 128-bit hash of bytes (two independent 64-bit hashes).
#[inline]
pub(crate) fn hash128(b: &[u8]) -> [u8; 16] {
    let mut h2 = FixedState::with_seed(SEED_B).build_hasher();
    h2.write(b);
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&hash64(b).to_le_bytes());
    out[8..].copy_from_slice(&h2.finish().to_le_bytes());
    out
}

/// An entry's name in the engine: the hash of its full key.
pub(crate) type Hk = [u8; 16];
