//! One shard of the key space: a hash table of item slots and its eviction queues.
//! Every method runs under the shard's lock (see [`crate::store`]).

use std::hash::BuildHasher;

use hashbrown::HashTable;

use crate::eviction::{S3Fifo, FREE};
use crate::hold::Holds;
use crate::item::Item;
use crate::stats::ShardStats;

/// Hasher shared by all shards (seeded once per process).
pub type KeyHasher = foldhash::fast::RandomState;

/// A shard: items live in `slots`, the table maps a key's hash to its slot index.
pub struct Shard {
    table: HashTable<u32>,
    slots: Vec<Item>,
    free: Vec<u32>,
    policy: S3Fifo,
    hasher: KeyHasher,
    /// Memory cost of the items held here.
    pub bytes: usize,
    /// Counters for this shard, summed by [`crate::Engine::stats`].
    pub stats: ShardStats,
    /// Keys an invalidation holds (fills refused for a while).
    pub holds: Holds,
}

impl Shard {
    /// An empty shard.
    pub fn new(hasher: KeyHasher) -> Shard {
        Shard {
            table: HashTable::new(),
            slots: Vec::new(),
            free: Vec::new(),
            policy: S3Fifo::new(),
            hasher,
            bytes: 0,
            stats: ShardStats::default(),
            holds: Holds::default(),
        }
    }

    /// Slot index of `key`, if present (live or not).
    #[inline]
    pub fn find(&self, hash: u64, key: &[u8]) -> Option<u32> {
        let slots = &self.slots;
        self.table.find(hash, |&i| slots[i as usize].key() == key).copied()
    }

    /// The item in slot `idx`.
    #[inline]
    pub fn get(&self, idx: u32) -> &Item {
        &self.slots[idx as usize]
    }

    /// The item in slot `idx`, mutably.
    #[inline]
    pub fn get_mut(&mut self, idx: u32) -> &mut Item {
        &mut self.slots[idx as usize]
    }

    /// Record a read of slot `idx` for the eviction policy.
    #[inline]
    pub fn touch(&mut self, idx: u32) {
        S3Fifo::touch(&mut self.slots, idx);
    }

    /// Insert an item whose key is not present; returns its slot.
    pub fn insert(&mut self, hash: u64, item: Item) -> u32 {
        let cost = item.cost();
        let idx = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = item;
                i
            }
            None => {
                self.slots.push(item);
                (self.slots.len() - 1) as u32
            }
        };
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.table.insert_unique(hash, idx, |&i| hasher.hash_one(slots[i as usize].key()));
        self.policy.insert(&mut self.slots, idx, hash);
        self.bytes += cost;
        self.stats.curr_items += 1;
        self.stats.total_items += 1;
        idx
    }

    /// Remove the item in slot `idx`; returns the bytes freed.
    pub fn remove(&mut self, hash: u64, idx: u32) -> usize {
        self.policy.remove(&mut self.slots, idx);
        if let Ok(e) = self.table.find_entry(hash, |&i| i == idx) {
            e.remove();
        }
        let slot = &mut self.slots[idx as usize];
        let cost = slot.cost();
        let vacant = Item::new(&[], &[], 0, 0, 0);
        let old = std::mem::replace(slot, vacant);
        drop(old);
        self.slots[idx as usize].queue = FREE;
        self.free.push(idx);
        self.bytes -= cost;
        self.stats.curr_items -= 1;
        cost
    }

    /// Swap the item in slot `idx` for `item` with the same key, keeping its place in
    /// the eviction queues; returns (old cost, new cost).
    pub fn replace(&mut self, hash: u64, idx: u32, item: Item) -> (usize, usize) {
        // Simplest correct form: unlink and relink; the policy sees a fresh write.
        let old = self.remove(hash, idx);
        let new_cost = item.cost();
        let new_idx = self.insert(hash, item);
        self.stats.total_items -= 1;
        debug_assert_eq!(new_idx, idx);
        (old, new_cost)
    }

    /// Evict one item chosen by the policy; returns the bytes freed, or `None` if empty.
    pub fn evict_one(&mut self, now: u32) -> Option<usize> {
        let (idx, from_small) = self.policy.victim(&mut self.slots, self.bytes)?;
        let it = &self.slots[idx as usize];
        let hash = self.hasher.hash_one(it.key());
        if it.is_expired(now) {
            self.stats.reclaimed += 1;
            if !it.has(crate::item::FETCHED) {
                self.stats.expired_unfetched += 1;
            }
        } else {
            self.stats.evictions += 1;
            if !it.has(crate::item::FETCHED) {
                self.stats.evicted_unfetched += 1;
            }
        }
        if from_small {
            self.policy.remember(hash);
        }
        Some(self.remove(hash, idx))
    }

    /// Drop every item; returns the bytes freed.
    pub fn clear(&mut self) -> usize {
        let freed = self.bytes;
        self.table.clear();
        self.slots.clear();
        self.free.clear();
        self.policy.clear();
        self.bytes = 0;
        self.stats.curr_items = 0;
        freed
    }

    /// Visit every item held.
    pub fn for_each(&self, mut f: impl FnMut(&Item)) {
        for it in &self.slots {
            if it.queue != FREE {
                f(it);
            }
        }
    }

    /// Number of items held (live or not yet reclaimed).
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether the shard holds nothing.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}
