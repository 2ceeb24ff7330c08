//! The newest state of each key held in memory, with the sequence number that set it
//! (see `pending.rs`): a hash table of [`Entry`]s found by their own key, so a key is
//! stored once. Hashed with foldhash seeded per process (as the engine hashes keys):
//! fast, and clients cannot craft collisions without the seed.

use std::hash::BuildHasher;

use hashbrown::hash_table::{Entry as Slot, HashTable};

use crate::entry::Entry;

/// Newest state of each key, and the bytes they hold.
#[derive(Default)]
pub struct States {
    table: HashTable<(u64, Entry)>,
    hasher: foldhash::fast::RandomState,
    bytes: usize,
}

impl States {
    /// Record `entry` (set by change `seq`) as its key's newest state; replaces any
    /// older state of that key.
    pub fn insert(&mut self, seq: u64, entry: Entry) {
        let hasher = &self.hasher;
        let hash = hasher.hash_one(entry.key());
        self.bytes += entry.size();
        let slot = self.table.entry(hash, |(_, e)| e.key() == entry.key(), |(_, e)| hasher.hash_one(e.key()));
        match slot {
            Slot::Occupied(mut o) => {
                self.bytes = self.bytes.saturating_sub(o.get().1.size());
                *o.get_mut() = (seq, entry);
            }
            Slot::Vacant(v) => {
                v.insert((seq, entry));
            }
        }
    }

    /// The newest state of `key` and its sequence number, if held.
    pub fn get(&self, key: &[u8]) -> Option<&(u64, Entry)> {
        self.table.find(self.hasher.hash_one(key), |(_, e)| e.key() == key)
    }

    /// Whether a state of `key` is held.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Every state, in no order.
    pub fn iter(&self) -> impl Iterator<Item = &(u64, Entry)> {
        self.table.iter()
    }

    /// Every state in key order (as fjall's ingestion takes them). Sorted by each key's
    /// first 16 bytes (big-endian, zero-padded: the same order) held beside it, then by
    /// the whole key on a tie: most comparisons then touch no entry, whose memory is
    /// scattered over the heap (this sort was most of an ingestion's CPU).
    pub fn sorted(&self) -> Vec<&(u64, Entry)> {
        let prefix = |k: &[u8]| {
            let mut p = [0u8; 16];
            let n = k.len().min(16);
            p[..n].copy_from_slice(&k[..n]);
            u128::from_be_bytes(p)
        };
        let mut keys: Vec<_> = self.table.iter().map(|s| (prefix(s.1.key()), s)).collect();
        keys.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1 .1.key().cmp(b.1 .1.key())));
        keys.into_iter().map(|(_, s)| s).collect()
    }

    /// Number of keys held.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether no state is held.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Bytes held (entries and their slots).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Forget every state.
    pub fn clear(&mut self) {
        self.table.clear();
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_state_per_key_and_bytes() {
        let mut s = States::default();
        s.insert(1, Entry::delete(b"a"));
        let one = s.bytes();
        s.insert(2, Entry::delete(b"a"));
        assert_eq!((s.len(), s.bytes()), (1, one), "a replaced state gives its bytes back");
        s.insert(3, Entry::delete(b"b"));
        assert_eq!(s.get(b"a").map(|(seq, _)| *seq), Some(2));
        assert!(s.contains(b"b") && !s.contains(b"c"));
        assert_eq!(s.iter().count(), 2);
        s.clear();
        assert!(s.is_empty() && s.bytes() == 0);
    }

    /// Key order, whatever the keys share: long common prefixes, a key that is a
    /// prefix of another, zero bytes (which the padding of short keys also uses).
    #[test]
    fn sorted_is_byte_order() {
        let mut keys: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"a".to_vec(),
            b"a\0".to_vec(),
            b"a\0\0b".to_vec(),
            b"ab".to_vec(),
            b"\xff".to_vec(),
            b"0123456789abcdef".to_vec(),
            b"0123456789abcdef0".to_vec(),
            b"0123456789abcdef\0".to_vec(),
            b"0123456789abcdeg".to_vec(),
            b"0123456789abcde".to_vec(),
        ];
        let mut x: u64 = 7;
        for _ in 0..500 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = (x >> 59) as usize % 24;
            keys.push((0..len).map(|i| [0u8, b'k', 0xff][((x >> (i % 60)) % 3) as usize]).collect());
        }
        let mut s = States::default();
        for (i, k) in keys.iter().enumerate() {
            s.insert(i as u64, Entry::delete(k));
        }
        keys.sort();
        keys.dedup();
        let got: Vec<&[u8]> = s.sorted().iter().map(|(_, e)| e.key()).collect();
        assert_eq!(got, keys.iter().map(Vec::as_slice).collect::<Vec<_>>());
    }
}
