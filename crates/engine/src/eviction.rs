//! S3-FIFO eviction (Yang et al., SOSP '23): scan-resistant and lock-friendly, here over
//! whole segments (see [`crate::segments`]).
//!
//! New items enter a *small* FIFO queue holding about 10% of a shard's segments. When room
//! is needed and the small queue is over its share, its oldest segment is reclaimed: each
//! item in it that was read while there moves to the *main* queue, the others are evicted
//! and remembered in a *ghost* list of hashes; a key that comes back while still a ghost goes
//! straight to main. Main is a CLOCK-like FIFO: an item read since it last reached the head
//! is copied to the tail with its frequency decremented, the others are evicted.
//!
//! This is why a sequential pass over more keys than fit (seed 001's failure mode) does
//! not flush the hot set: the one-time keys churn through the small queue only.
//!
//! Compaction comes first: while dead records (deleted, overwritten, expired) take more than
//! an eighth of a shard's segments, reclaiming picks the segment with the most of them and
//! copies its live items on, evicting nothing. With evictions off (`-M`) that is the only
//! kind of reclaiming.

use std::collections::VecDeque;

use hashbrown::HashTable;

use crate::segments::{Queue, Segments};

/// Highest frequency an item can reach.
pub(crate) const MAX_FREQ: u8 = 3;

/// How a reclaimed segment is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reclaim {
    /// The policy's pass: read items copied on, the others evicted.
    Evict,
    /// Compaction: every live item copied on as it is; only dead bytes come back.
    Compact,
}

/// Dead bytes above this share of a shard's segments are compacted away before anything live
/// is evicted (memcached frees an overwritten or deleted item at once; we are never more
/// than an eighth behind it).
const DEAD_SHARE: usize = 8;

/// Whether `dead` bytes out of `total` are more than compaction lets pile up.
pub(crate) fn dead_share_high(dead: usize, total: usize) -> bool {
    dead * DEAD_SHARE > total
}

/// Which segment to reclaim, as (queue, position in it) and how. With `evict`: while dead
/// records take more than an eighth of the shard's segments, compact the segment with the
/// most of them; otherwise the oldest of the small queue while it holds at least a tenth of
/// the segments (or main is empty), else the oldest of main. With `evict` off (`-M`), compact
/// the segment with the most dead bytes, if any has some.
pub(crate) fn choose(log: &Segments, evict: bool) -> Option<(Queue, usize, Reclaim)> {
    let (small, main) = (log.len(Queue::Small), log.len(Queue::Main));
    if evict && !dead_share_high(log.dead_total(), log.segment_bytes()) {
        return match (small, main) {
            (0, 0) => None,
            (s, m) if s > 0 && (s * 10 >= s + m || m == 0) => Some((Queue::Small, 0, Reclaim::Evict)),
            _ => Some((Queue::Main, 0, Reclaim::Evict)),
        };
    }
    let mut best = None;
    let mut most = 0;
    for q in [Queue::Small, Queue::Main] {
        for (i, dead) in log.dead_bytes(q).enumerate() {
            if dead > most {
                (best, most) = (Some((q, i, Reclaim::Compact)), dead);
            }
        }
    }
    best
}

/// What becomes of a live item found in a reclaimed segment of `from` whose read frequency
/// is `freq`: the queue it is copied to with its new frequency, or `None` to evict it.
pub(crate) fn fate(from: Queue, freq: u8, how: Reclaim) -> Option<(Queue, u8)> {
    match (how, from, freq) {
        (Reclaim::Compact, q, f) => Some((q, f)),
        (Reclaim::Evict, _, 0) => None,
        (Reclaim::Evict, Queue::Small, _) => Some((Queue::Main, 0)),
        (Reclaim::Evict, Queue::Main, f) => Some((Queue::Main, f - 1)),
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

/// The ghost list of one shard.
#[derive(Default)]
pub(crate) struct Ghost {
    order: VecDeque<u32>,
    live: HashTable<(u32, u32)>,
}

impl Ghost {
    /// Remember an evicted key's hash, keeping at most `cap`.
    pub(crate) fn add(&mut self, hash: u64, cap: usize) {
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

    /// Whether `hash` is a ghost.
    pub(crate) fn contains(&self, hash: u64) -> bool {
        let fp = hash as u32;
        self.live.find(spread(fp), |e| e.0 == fp).is_some()
    }

    /// Whether `hash` is a ghost; forgets it if so.
    pub(crate) fn take(&mut self, hash: u64) -> bool {
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
