//! `stats detail`: per-key-prefix counters (memcached's `stats_prefix.c`), kept only while
//! enabled (`stats detail on`, or `-D`). The prefix is the key up to the first delimiter;
//! keys without one are not counted. `stats reset` forgets them.
//!
//! `stats detail dump` lists prefixes in memcached's order, so the output is byte for byte
//! the same: by bucket of memcached's 256-bucket table (MurmurHash3 of the prefix), and in a
//! bucket the newest prefix first.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

/// memcached's `PREFIX_HASH_SIZE`.
const BUCKETS: u32 = 256;

/// Counters of one prefix.
#[derive(Default, Clone, Copy)]
struct Prefix {
    get: u64,
    hit: u64,
    set: u64,
    del: u64,
    /// When the prefix was first seen (newer ones come first in their bucket).
    born: u64,
}

/// The per-prefix table.
pub struct Detail {
    enabled: AtomicBool,
    delimiter: u8,
    prefixes: Mutex<(HashMap<Vec<u8>, Prefix>, u64)>,
}

/// memcached's `MurmurHash3_x86_32` with seed 0 (its default `hash_algorithm`).
fn murmur3_32(key: &[u8]) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mut h: u32 = 0;
    let mut chunks = key.chunks_exact(4);
    for c in &mut chunks {
        let k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        h ^= k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let k = tail.iter().enumerate().fold(0u32, |k, (i, &b)| k ^ (u32::from(b) << (8 * i)));
        h ^= k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    }
    h ^= key.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

impl Detail {
    /// A table for prefixes ending at `delimiter`; `enabled` as with `-D`.
    pub fn new(delimiter: u8, enabled: bool) -> Detail {
        Detail { enabled: AtomicBool::new(enabled), delimiter, prefixes: Mutex::new((HashMap::new(), 0)) }
    }

    /// `stats detail on|off`.
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// Whether prefixes are being counted (`detail_enabled` in `stats settings`).
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Forget every prefix (`stats reset`).
    pub fn clear(&self) {
        self.prefixes.lock().0.clear();
    }

    #[inline]
    fn record(&self, key: &[u8], f: impl FnOnce(&mut Prefix)) {
        if !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        let Some(end) = key.iter().position(|&b| b == self.delimiter) else { return };
        let mut t = self.prefixes.lock();
        let (map, next) = &mut *t;
        let p = map.entry(key[..end].to_vec()).or_insert_with(|| {
            *next += 1;
            Prefix { born: *next, ..Prefix::default() }
        });
        f(p);
    }

    /// A retrieval of `key`.
    #[inline]
    pub fn get(&self, key: &[u8], hit: bool) {
        self.record(key, |p| {
            p.get += 1;
            p.hit += hit as u64;
        });
    }

    /// A store of `key`.
    #[inline]
    pub fn set(&self, key: &[u8]) {
        self.record(key, |p| p.set += 1);
    }

    /// A delete of `key`.
    #[inline]
    pub fn delete(&self, key: &[u8]) {
        self.record(key, |p| p.del += 1);
    }

    /// `stats detail dump`: one `PREFIX` line per prefix, then `END`.
    pub fn dump(&self, out: &mut Vec<u8>) {
        let t = self.prefixes.lock();
        let mut all: Vec<(&Vec<u8>, &Prefix)> = t.0.iter().collect();
        all.sort_by_key(|(name, p)| (murmur3_32(name) % BUCKETS, std::cmp::Reverse(p.born)));
        for (name, p) in all {
            out.extend_from_slice(b"PREFIX ");
            out.extend_from_slice(name);
            out.extend_from_slice(format!(" get {} hit {} set {} del {}\r\n", p.get, p.hit, p.set, p.del).as_bytes());
        }
        out.extend_from_slice(b"END\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur3_matches_the_reference() {
        // MurmurHash3_x86_32 test vectors (seed 0).
        assert_eq!(murmur3_32(b""), 0);
        assert_eq!(murmur3_32(b"hello"), 0x248b_fa47);
        assert_eq!(murmur3_32(b"Hello, world!"), 0xc036_3e43);
    }

    #[test]
    fn dump_in_memcached_order() {
        let d = Detail::new(b':', true);
        d.set(b"a:1");
        d.get(b"b:1", false);
        d.delete(b"a:1");
        let mut out = Vec::new();
        d.dump(&mut out);
        // bucket("b") = 3 < bucket("a") = 178, as memcached 1.6.18 prints them.
        assert_eq!(out, b"PREFIX b get 1 hit 0 set 0 del 0\r\nPREFIX a get 0 hit 0 set 1 del 1\r\nEND\r\n");
        d.clear();
        out.clear();
        d.dump(&mut out);
        assert_eq!(out, b"END\r\n");
    }
}
