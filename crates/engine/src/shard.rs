//! One shard of the key space: a hash table of record locations over the shard's
//! segments, and the S3-FIFO policy that reclaims them.
//! Every method runs under the shard's lock (see [`crate::store`]).

use std::hash::BuildHasher;

use hashbrown::HashTable;

use crate::eviction::{self, Ghost, MAX_FREQ};
use crate::hold::Holds;
use crate::item::{Item, DEAD, FETCHED, FREQ_MASK};
use crate::segments::{Queue, Segments};
use crate::stats::ShardStats;

/// Hasher shared by all shards (seeded once per process).
pub type KeyHasher = foldhash::fast::RandomState;

/// A shard: items live in `log`, the table maps a key's hash to its record's location.
pub struct Shard {
    table: HashTable<u32>,
    log: Segments,
    ghost: Ghost,
    hasher: KeyHasher,
    /// Counters for this shard, summed by [`crate::Engine::stats`].
    pub stats: ShardStats,
    /// Keys an invalidation holds (fills refused for a while).
    pub holds: Holds,
}

/// The shard has no segment numbers left for another item (a shard holds at most 2^17
/// segments).
#[derive(Debug)]
pub struct Full;

impl Shard {
    /// An empty shard whose segments are `seg_size` bytes.
    pub fn new(hasher: KeyHasher, seg_size: usize) -> Shard {
        Shard {
            table: HashTable::new(),
            log: Segments::new(seg_size),
            ghost: Ghost::default(),
            hasher,
            stats: ShardStats::default(),
            holds: Holds::default(),
        }
    }

    /// Bytes of memory the shard's items hold: its segments and out-of-line values.
    #[inline]
    pub fn bytes(&self) -> usize {
        self.log.bytes
    }

    /// Bytes held and bytes of dead records in them, to settle the engine's totals.
    #[inline]
    pub fn usage(&self) -> (usize, usize) {
        (self.log.bytes, self.log.dead_total())
    }

    /// Whether reclaiming here would evict (dead records are few enough not to compact).
    pub fn would_evict(&self) -> bool {
        !eviction::dead_share_high(self.log.dead_total(), self.log.segment_bytes())
    }

    /// Location of `key`'s record, if present (live or not).
    #[inline]
    pub fn find(&self, hash: u64, key: &[u8]) -> Option<u32> {
        let log = &self.log;
        self.table.find(hash, |&l| log.get(l).key() == key).copied()
    }

    /// The item at `loc`.
    #[inline]
    pub fn get(&self, loc: u32) -> &Item {
        self.log.get(loc)
    }

    /// The item at `loc`, mutably.
    #[inline]
    pub fn get_mut(&mut self, loc: u32) -> &mut Item {
        self.log.get_mut(loc)
    }

    /// Record a read of the item at `loc` for the eviction policy.
    #[inline]
    pub fn touch(&mut self, loc: u32) {
        let it = self.log.get_mut(loc);
        let freq = it.state & FREQ_MASK;
        if freq < MAX_FREQ {
            it.state += 1;
        }
    }

    fn queue_for(&self, hash: u64) -> Queue {
        if self.ghost.contains(hash) {
            Queue::Main
        } else {
            Queue::Small
        }
    }

    /// Bytes that inserting `item` (under `hash`) would add to [`Shard::bytes`].
    pub fn insert_cost(&self, hash: u64, item: &Item) -> usize {
        self.log.append_cost(item, self.queue_for(hash))
    }

    /// Insert an item whose key is not present; returns its location, or the item back
    /// when the shard is [`Full`].
    pub fn insert(&mut self, hash: u64, mut item: Box<Item>) -> Result<u32, (Full, Box<Item>)> {
        let q = self.queue_for(hash);
        item.state &= !(FREQ_MASK | DEAD);
        let loc = self.log.insert(item, q).map_err(|it| (Full, it))?;
        if q == Queue::Main {
            self.ghost.take(hash);
        }
        let (log, hasher) = (&self.log, &self.hasher);
        self.table.insert_unique(hash, loc, |&l| hasher.hash_one(log.get(l).key()));
        self.stats.curr_items += 1;
        self.stats.total_items += 1;
        Ok(loc)
    }

    /// Remove the item at `loc`.
    pub fn remove(&mut self, hash: u64, loc: u32) {
        if let Ok(e) = self.table.find_entry(hash, |&l| l == loc) {
            e.remove();
        }
        self.log.kill(loc);
        self.stats.curr_items -= 1;
    }

    /// Reclaim one segment as the policy says (see [`crate::eviction`]): evict its items,
    /// or with `evict` off only drop its dead bytes. Returns `false` when there is nothing
    /// to reclaim. Relocated items may fill new segments, so the bytes held can stay the same
    /// for a call or two; every call brings the shard closer to freeing a segment.
    pub fn reclaim(&mut self, now: u32, evict: bool) -> bool {
        let Some((from, at, how)) = eviction::choose(&self.log, evict) else { return false };
        let (id, mut seg) = self.log.take(from, at).expect("chosen segment");
        let mut recs = seg.records();
        while let Some((off, it)) = recs.next_record() {
            if it.state & DEAD != 0 {
                continue;
            }
            let loc = Segments::location(id, off);
            let hash = self.hasher.hash_one(it.key());
            let expired = it.is_expired(now);
            let fate = if expired { None } else { eviction::fate(from, it.state & FREQ_MASK, how) };
            if let Some((to, freq)) = fate {
                it.state = (it.state & !FREQ_MASK) | freq;
                if let Some(new) = self.log.append(it, to) {
                    if let Some(l) = self.table.find_mut(hash, |&l| l == loc) {
                        *l = new;
                    }
                    continue;
                }
            }
            let fetched = it.bits & FETCHED != 0;
            if expired {
                self.stats.reclaimed += 1;
                self.stats.expired_unfetched += !fetched as u64;
            } else {
                self.stats.evictions += 1;
                self.stats.evicted_unfetched += !fetched as u64;
                if from == Queue::Small {
                    let cap = self.log.main_items().max(64);
                    self.ghost.add(hash, cap);
                }
            }
            self.log.bytes -= it.kill();
            if let Ok(e) = self.table.find_entry(hash, |&l| l == loc) {
                e.remove();
            }
            self.stats.curr_items -= 1;
        }
        drop(seg);
        self.log.release(id);
        true
    }

    /// Drop every item.
    pub fn clear(&mut self) {
        self.table.clear();
        self.log.clear();
        self.ghost = Ghost::default();
        self.stats.curr_items = 0;
    }

    /// Visit every item held.
    pub fn for_each(&self, f: impl FnMut(&Item)) {
        self.log.for_each(f);
    }

    /// Number of items held (live or not yet reclaimed).
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether the shard holds nothing.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Whether the shard has any segment to reclaim.
    pub fn has_segments(&self) -> bool {
        self.log.len(Queue::Small) + self.log.len(Queue::Main) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small enough for Miri: reclaiming moves small and out-of-line records between queues,
    /// evicts, compacts, and every value read back is the one stored under its key.
    #[test]
    fn reclaiming_moves_evicts_and_compacts_without_mixing_values() {
        let hasher = KeyHasher::default();
        let mut sh = Shard::new(hasher.clone(), crate::segments::MIN_SEGMENT);
        let value = |i: usize| vec![i as u8; if i.is_multiple_of(4) { 400 } else { 40 }];
        let mut live = std::collections::HashMap::new();
        for i in 0..60usize {
            let key = format!("k{}", i % 25);
            let hash = hasher.hash_one(key.as_bytes());
            if let Some(l) = sh.find(hash, key.as_bytes()) {
                sh.remove(hash, l);
            }
            sh.insert(hash, Item::new(key.as_bytes(), &[&value(i)], 0, 0, 0)).expect("room");
            live.insert(key, value(i));
            if i % 3 == 0 {
                let k = format!("k{}", i % 7);
                if let Some(l) = sh.find(hasher.hash_one(k.as_bytes()), k.as_bytes()) {
                    sh.touch(l);
                }
            }
            if i % 10 == 9 {
                sh.reclaim(0, i % 20 == 9);
            }
        }
        while sh.reclaim(0, false) {}
        assert_eq!(sh.log.dead_total(), 0);
        sh.reclaim(0, true);
        let mut seen = 0;
        for (key, v) in &live {
            if let Some(l) = sh.find(hasher.hash_one(key.as_bytes()), key.as_bytes()) {
                assert_eq!(sh.get(l).value(), &v[..], "{key}");
                seen += 1;
            }
        }
        assert_eq!(seen, sh.len());
        assert!(sh.stats.evictions > 0 && seen > 0, "{} evicted, {seen} held", sh.stats.evictions);
        assert_eq!(sh.stats.curr_items as usize, seen);
        sh.clear();
        assert_eq!(sh.bytes(), 0);
    }
}
