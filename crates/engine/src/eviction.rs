//! S3-FIFO eviction (Yang et al., SOSP '23): scan-resistant and lock-friendly.
//!
//! New items enter a *small* FIFO queue holding about 10% of a shard's bytes. When the
//! small queue is over its share, its oldest item is evicted unless it was read while
//! there, in which case it moves to the *main* FIFO. Evicted small-queue keys are
//! remembered in a *ghost* list of hashes; a key that comes back while still a ghost goes
//! straight to main. Main is a CLOCK-like FIFO: an item read since it last reached the
//! head gets reinserted at the tail with its frequency decremented.
//!
//! This is why a sequential pass over more keys than fit (seed 001's failure mode) does
//! not flush the hot set: the one-time keys churn through the small queue only.

use std::collections::VecDeque;

use hashbrown::HashTable;

use crate::item::Item;

/// Slot is vacant.
pub(crate) const FREE: u8 = 0;
/// Item is in the small (probation) queue.
pub(crate) const SMALL: u8 = 1;
/// Item is in the main queue.
pub(crate) const MAIN: u8 = 2;

/// Sentinel for "no slot".
pub(crate) const NIL: u32 = u32::MAX;

/// Highest frequency an item can reach.
const MAX_FREQ: u8 = 3;

/// An intrusive doubly linked FIFO over slot indices.
#[derive(Default, Debug)]
pub(crate) struct List {
    head: u32,
    tail: u32,
    /// Bytes (item cost) held by the queue.
    pub bytes: usize,
    /// Items in the queue.
    pub len: usize,
}

impl List {
    fn new() -> List {
        List { head: NIL, tail: NIL, bytes: 0, len: 0 }
    }
}

/// The policy's state for one shard.
pub(crate) struct S3Fifo {
    small: List,
    main: List,
    ghost: Ghost,
}

impl S3Fifo {
    /// Empty queues.
    pub fn new() -> S3Fifo {
        S3Fifo { small: List::new(), main: List::new(), ghost: Ghost::default() }
    }

    /// Link a freshly inserted item at slot `idx`.
    pub fn insert(&mut self, slots: &mut [Item], idx: u32, hash: u64) {
        let to_main = self.ghost.take(hash);
        let q = if to_main { MAIN } else { SMALL };
        slots[idx as usize].freq = 0;
        self.push_tail(slots, idx, q);
    }

    /// Record a read of the item at `idx`.
    #[inline]
    pub fn touch(slots: &mut [Item], idx: u32) {
        let it = &mut slots[idx as usize];
        if it.freq < MAX_FREQ {
            it.freq += 1;
        }
    }

    /// Unlink the item at `idx` (it is being removed).
    pub fn remove(&mut self, slots: &mut [Item], idx: u32) {
        self.unlink(slots, idx);
    }

    /// Choose the next victim, moving items between queues as the policy says.
    /// Returns the slot to evict, and whether it came from the small queue
    /// (the caller then remembers its hash as a ghost via [`S3Fifo::remember`]).
    pub fn victim(&mut self, slots: &mut [Item], total_bytes: usize) -> Option<(u32, bool)> {
        loop {
            let use_small = self.small.len > 0 && (self.small.bytes * 10 >= total_bytes || self.main.len == 0);
            if use_small {
                let idx = self.small.head;
                if slots[idx as usize].freq > 0 {
                    self.unlink(slots, idx);
                    slots[idx as usize].freq = 0;
                    self.push_tail(slots, idx, MAIN);
                    continue;
                }
                return Some((idx, true));
            }
            if self.main.len == 0 {
                return None;
            }
            let idx = self.main.head;
            let it = &mut slots[idx as usize];
            if it.freq > 0 {
                it.freq -= 1;
                self.unlink(slots, idx);
                self.push_tail(slots, idx, MAIN);
                continue;
            }
            return Some((idx, false));
        }
    }

    /// Remember an evicted small-queue key; the ghost holds as many keys as the main queue.
    pub fn remember(&mut self, hash: u64) {
        let cap = self.main.len.max(64);
        self.ghost.add(hash, cap);
    }

    /// Forget everything (flush).
    pub fn clear(&mut self) {
        *self = S3Fifo::new();
    }

    fn list(&mut self, q: u8) -> &mut List {
        if q == SMALL {
            &mut self.small
        } else {
            &mut self.main
        }
    }

    fn push_tail(&mut self, slots: &mut [Item], idx: u32, q: u8) {
        let cost = slots[idx as usize].cost();
        let list = self.list(q);
        let old_tail = list.tail;
        list.tail = idx;
        if old_tail == NIL {
            list.head = idx;
        }
        list.bytes += cost;
        list.len += 1;
        if old_tail != NIL {
            slots[old_tail as usize].next = idx;
        }
        let it = &mut slots[idx as usize];
        it.prev = old_tail;
        it.next = NIL;
        it.queue = q;
    }

    fn unlink(&mut self, slots: &mut [Item], idx: u32) {
        let (prev, next, q, cost) = {
            let it = &slots[idx as usize];
            (it.prev, it.next, it.queue, it.cost())
        };
        debug_assert!(q == SMALL || q == MAIN);
        if prev != NIL {
            slots[prev as usize].next = next;
        }
        if next != NIL {
            slots[next as usize].prev = prev;
        }
        let list = self.list(q);
        if list.head == idx {
            list.head = next;
        }
        if list.tail == idx {
            list.tail = prev;
        }
        list.bytes -= cost;
        list.len -= 1;
        let it = &mut slots[idx as usize];
        it.prev = NIL;
        it.next = NIL;
    }
}

/// Fingerprints of keys recently evicted from the small queue: a FIFO ring of 32-bit
/// fingerprints plus a counting table (about 16 bytes per remembered key). A fingerprint
/// collision only sends a new key to the main queue early, which is harmless.
/// Table hash of a fingerprint: spread over 64 bits (SwissTable uses the top bits too).
#[inline]
fn spread(fp: u32) -> u64 {
    (fp as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[derive(Default)]
struct Ghost {
    order: VecDeque<u32>,
    live: HashTable<(u32, u32)>,
}

impl Ghost {
    fn add(&mut self, hash: u64, cap: usize) {
        let fp = hash as u32;
        match self.live.find_mut(spread(fp), |e| e.0 == fp) {
            Some(e) => e.1 += 1,
            None => {
                self.live.insert_unique(spread(fp), (fp, 1), |e| spread(e.0));
            }
        }
        self.order.push_back(fp);
        while self.order.len() > cap {
            let old = self.order.pop_front().expect("non-empty");
            self.forget(old);
        }
    }

    fn forget(&mut self, fp: u32) {
        if let Ok(mut e) = self.live.find_entry(spread(fp), |e| e.0 == fp) {
            if e.get().1 > 1 {
                e.get_mut().1 -= 1;
            } else {
                e.remove();
            }
        }
    }

    fn take(&mut self, hash: u64) -> bool {
        let fp = hash as u32;
        match self.live.find_entry(spread(fp), |e| e.0 == fp) {
            Ok(e) => {
                e.remove();
                true
            }
            Err(_) => false,
        }
    }
}
