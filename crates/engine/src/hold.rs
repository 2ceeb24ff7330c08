//! Holds: after an invalidation, a key refuses to be filled for a short while.
//!
//! Cache-aside has a race no delete can close: a reader misses, reads the old row from the
//! database, the row changes, the change's invalidation deletes the key, and only then the
//! reader `set`s the old row it read: the stale copy stays until its TTL. An invalidation
//! therefore leaves a hold on the key (like memcached's old `delete KEY TIME`, which made
//! `add` fail for that time): while it lasts, a `set` or `add` of the key is answered as
//! stored but not kept (as if it had been evicted at once), so the next read misses and
//! reads the new row. A hold is keyed by the key's 64-bit hash, kept per shard, and bounded
//! ([`CAP`] per shard; past that, expired holds go first, then the oldest, in constant time).

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

/// Most holds one shard keeps (an engine has at least 64 shards).
pub const CAP: usize = 1024;

/// The holds of one shard, by key hash.
#[derive(Default)]
pub struct Holds {
    until: HashMap<u64, Instant>,
    /// Holds in the order they were made (every hold lasts as long, so this is also the
    /// order they end in): expired and, past [`CAP`], the oldest go from the front in
    /// constant time. An entry whose key was held again later is stale and skipped.
    order: VecDeque<(u64, Instant)>,
    /// Holds dropped early because the shard had [`CAP`] live ones.
    pub dropped: u64,
}

impl Holds {
    /// Whether there is no hold at all (the fast path: one length check).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.until.is_empty()
    }

    /// Hold the key with this hash until `until` (a later hold of the same key extends it).
    pub fn hold(&mut self, hash: u64, until: Instant) {
        if self.order.len() > 4 * CAP {
            // Many stale entries (keys held again and again): rebuild from the live holds.
            let mut live: Vec<(u64, Instant)> = self.until.iter().map(|(&h, &t)| (h, t)).collect();
            live.sort_unstable_by_key(|&(_, t)| t);
            self.order = live.into();
        }
        let now = Instant::now();
        while let Some(&(h, t)) = self.order.front() {
            if self.until.get(&h) != Some(&t) {
                self.order.pop_front(); // stale: held again later, or already forgotten
            } else if t <= now {
                self.order.pop_front();
                self.until.remove(&h);
            } else if self.until.len() >= CAP && !self.until.contains_key(&hash) {
                self.order.pop_front();
                self.until.remove(&h);
                self.dropped += 1;
            } else {
                break;
            }
        }
        let t = self.until.entry(hash).or_insert(until);
        *t = (*t).max(until);
        self.order.push_back((hash, *t));
    }

    /// Whether the key with this hash is held at `now` (an expired hold is forgotten).
    pub fn is_held(&mut self, hash: u64, now: Instant) -> bool {
        match self.until.get(&hash) {
            Some(&t) if t > now => true,
            Some(_) => {
                self.until.remove(&hash);
                false
            }
            None => false,
        }
    }

    /// Number of live holds kept (expired ones not yet forgotten included).
    pub fn len(&self) -> usize {
        self.until.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn holds_expire_and_extend() {
        let mut h = Holds::default();
        let now = Instant::now();
        h.hold(1, now + Duration::from_millis(50));
        assert!(h.is_held(1, now));
        assert!(!h.is_held(2, now));
        h.hold(1, now + Duration::from_millis(10));
        assert!(h.is_held(1, now + Duration::from_millis(20)), "a shorter hold does not cut a longer one");
        assert!(!h.is_held(1, now + Duration::from_millis(60)));
        assert!(h.is_empty(), "expired holds are forgotten when asked");
    }

    #[test]
    fn bounded() {
        let mut h = Holds::default();
        let now = Instant::now();
        for i in 0..(CAP as u64 * 3) {
            h.hold(i, now + Duration::from_secs(3600) + Duration::from_millis(i));
            // none expires mid-test, even under miri
        }
        assert!(h.len() <= CAP, "{}", h.len());
        assert_eq!(h.dropped, CAP as u64 * 2);
        assert!(h.is_held(CAP as u64 * 3 - 1, now), "the newest holds are kept");
        assert!(!h.is_held(0, now), "the oldest went first");
        assert!(h.order.len() <= 4 * CAP + 1);
    }
}
