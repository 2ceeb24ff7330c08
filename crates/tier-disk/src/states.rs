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
}
