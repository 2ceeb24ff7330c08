//! The adaptive bypass: statements whose cached results do not pay back stop being cached
//! for a while.
//!
//! A fill costs more than forwarding the read (the reply is copied, stored and indexed,
//! and dropped again later); it pays back when the result is read from the cache before
//! it goes. A statement whose results are invalidated before anyone reads them (a row read
//! right before its own update: seed 001's game) only pays. So every stored result
//! remembers its statement (the digest key) and whether it was read; when an invalidation
//! drops it, [`Bypass::ended`] counts it as reused or not. Once [`MIN_SAMPLE`] results of
//! a statement ended and at least [`WASTED_SHARE`] of them were never read, its misses go
//! straight to the backend without a fill ([`Bypass::fills`] says no) for a second,
//! doubling at each consecutive verdict up to about two minutes (`engine::backoff`); then
//! fills are tried again. A statement that pays back halves its next bypass. Results that
//! are evicted or still cached give no verdict.
//!
//! Cost: nothing on a hit (hits never look here: a stored result is served, bypass or
//! not); one uncontended slot lock on a miss and on an invalidated result. State: a fixed
//! table of [`SLOTS`] slots indexed by the digest key; two statements meeting in a slot
//! share it only while neither is bypassed (a slot in bypass ignores other statements,
//! which are then never bypassed: collisions only ever cache more).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use engine::backoff::Backoff;
use parking_lot::Mutex;

/// Statements tracked at once (slots of the table).
pub const SLOTS: usize = 1024;
/// Results of a statement that must end before a verdict.
pub const MIN_SAMPLE: u32 = 16;
/// The share of them never read that makes the verdict "does not pay back" (7/8).
pub const WASTED_SHARE: (u32, u32) = (7, 8);

/// One statement's record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Slot {
    /// The digest key (0: free).
    digest: u64,
    /// Results ended unread since the last verdict.
    wasted: u32,
    /// Results ended after at least one read since the last verdict.
    reused: u32,
    /// The bypass (ms since the table's start).
    pause: Backoff,
}

/// Counters of the bypass (see `docs/querycache.md`, "Adaptive bypass").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BypassStats {
    /// Misses sent to the backend without a fill because their statement was bypassed.
    pub bypassed: u64,
    /// Times a statement started a bypass.
    pub starts: u64,
    /// Statements bypassed now.
    pub active: u64,
    /// Cached results invalidated before any read.
    pub unused: u64,
    /// Cached results invalidated after at least one read.
    pub reused: u64,
}

/// The table (see the module doc).
pub struct Bypass {
    slots: Box<[Mutex<Slot>]>,
    start: Instant,
    bypassed: AtomicU64,
    starts: AtomicU64,
    unused: AtomicU64,
    reused: AtomicU64,
}

impl Default for Bypass {
    fn default() -> Self {
        Bypass {
            slots: (0..SLOTS).map(|_| Mutex::new(Slot::default())).collect(),
            start: Instant::now(),
            bypassed: AtomicU64::new(0),
            starts: AtomicU64::new(0),
            unused: AtomicU64::new(0),
            reused: AtomicU64::new(0),
        }
    }
}

impl Bypass {
    /// Milliseconds since the table was made (the clock [`Bypass::fills`] and
    /// [`Bypass::ended`] take).
    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn slot(&self, digest: u64) -> &Mutex<Slot> {
        // The digest key is a hash already; its low bits pick the slot.
        &self.slots[(digest as usize) % SLOTS]
    }

    /// May a miss of statement `digest` be stored at `now` (ms)? False while it is
    /// bypassed (counted).
    pub fn fills(&self, digest: u64, now: u64) -> bool {
        let s = self.slot(digest).lock();
        let bypassed = s.digest == digest && digest != 0 && s.pause.paused(now);
        drop(s);
        if bypassed {
            self.bypassed.fetch_add(1, Ordering::Relaxed);
        }
        !bypassed
    }

    /// A stored result of statement `digest` was invalidated at `now` (ms), after at least
    /// one read (`reused`) or none.
    pub fn ended(&self, digest: u64, reused: bool, now: u64) {
        if digest == 0 {
            return;
        }
        let c = if reused { &self.reused } else { &self.unused };
        c.fetch_add(1, Ordering::Relaxed);
        let mut s = self.slot(digest).lock();
        if s.digest != digest {
            if s.pause.paused(now) {
                return; // another statement is bypassed here: this one goes untracked
            }
            *s = Slot { digest, ..Slot::default() };
        }
        if s.pause.paused(now) {
            return; // results stored before the bypass: no new verdict during it
        }
        if reused {
            s.reused += 1;
        } else {
            s.wasted += 1;
        }
        let n = s.wasted + s.reused;
        if n < MIN_SAMPLE {
            return;
        }
        let pays = s.wasted * WASTED_SHARE.1 < n * WASTED_SHARE.0;
        if s.pause.verdict(pays, now) {
            self.starts.fetch_add(1, Ordering::Relaxed);
        }
        s.wasted = 0;
        s.reused = 0;
    }

    /// Is statement `digest` bypassed at `now` (ms)? (Not counted: for reports.)
    pub fn is_bypassed(&self, digest: u64, now: u64) -> bool {
        let s = self.slot(digest).lock();
        s.digest == digest && digest != 0 && s.pause.paused(now)
    }

    /// The counters, and how many statements are bypassed at `now` (ms).
    pub fn stats(&self, now: u64) -> BypassStats {
        let active = self.slots.iter().filter(|s| s.lock().pause.paused(now)).count() as u64;
        BypassStats {
            bypassed: self.bypassed.load(Ordering::Relaxed),
            starts: self.starts.load(Ordering::Relaxed),
            active,
            unused: self.unused.load(Ordering::Relaxed),
            reused: self.reused.load(Ordering::Relaxed),
        }
    }

    /// Forget every verdict (`stats reset` keeps them: this is for a cache flush).
    pub fn clear(&self) {
        for s in self.slots.iter() {
            *s.lock() = Slot::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::backoff::{BASE_MS, MAX_LEVEL};

    /// `n` results of `d` ended at `t`, `reused` of them read.
    fn end(b: &Bypass, d: u64, n: u32, reused: u32, t: u64) {
        for i in 0..n {
            b.ended(d, i < reused, t);
        }
    }

    #[test]
    fn results_never_read_start_a_bypass_that_backs_off() {
        let b = Bypass::default();
        let d = 0xdead_beef;
        end(&b, d, MIN_SAMPLE - 1, 0, 0);
        assert!(b.fills(d, 0), "no verdict before MIN_SAMPLE results ended");
        end(&b, d, 1, 0, 0);
        assert!(!b.fills(d, 0) && !b.fills(d, BASE_MS - 1));
        assert!(b.fills(d, BASE_MS), "tried again after the first bypass");
        // Wasted again: twice as long, then four times, ... up to the cap.
        let mut t = BASE_MS;
        for level in 1..=MAX_LEVEL + 2 {
            end(&b, d, MIN_SAMPLE, 0, t);
            let len = BASE_MS << level.min(MAX_LEVEL);
            assert!(!b.fills(d, t + len - 1), "level {level}");
            assert!(b.fills(d, t + len), "level {level}");
            t += len;
        }
        let s = b.stats(t);
        assert_eq!(s.starts, MAX_LEVEL as u64 + 3);
        assert_eq!(s.active, 0);
        assert!(s.bypassed >= MAX_LEVEL as u64 + 3);
    }

    #[test]
    fn results_that_are_read_keep_being_cached() {
        let b = Bypass::default();
        let d = 42;
        for round in 0..100 {
            // One in four read before it goes: that pays back.
            end(&b, d, MIN_SAMPLE, MIN_SAMPLE / 4, round);
            assert!(b.fills(d, round));
        }
        assert_eq!(b.stats(100).starts, 0);
    }

    #[test]
    fn paying_back_shortens_the_next_bypass() {
        let b = Bypass::default();
        let d = 7;
        end(&b, d, MIN_SAMPLE, 0, 0); // level 0 -> bypass 1 s, level 1
        end(&b, d, MIN_SAMPLE, 0, BASE_MS); // 2 s, level 2
        let t = 3 * BASE_MS;
        end(&b, d, MIN_SAMPLE, MIN_SAMPLE, t); // pays back: level 1
        end(&b, d, MIN_SAMPLE, 0, t);
        assert!(!b.fills(d, t + 2 * BASE_MS - 1) && b.fills(d, t + 2 * BASE_MS), "2 s again, not 4 s");
    }

    #[test]
    fn results_ending_during_a_bypass_give_no_verdict() {
        let b = Bypass::default();
        let d = 9;
        end(&b, d, MIN_SAMPLE, 0, 0);
        end(&b, d, 10 * MIN_SAMPLE, 0, 10); // stored before the bypass, invalidated during it
        assert!(b.fills(d, BASE_MS), "not extended by old results");
        assert_eq!(b.stats(0).starts, 1);
    }

    #[test]
    fn state_is_bounded_and_collisions_only_cache_more() {
        let b = Bypass::default();
        // Two statements in one slot: the bypassed one keeps it; the other is not tracked.
        let (x, y) = (5, 5 + SLOTS as u64);
        end(&b, x, MIN_SAMPLE, 0, 0);
        end(&b, y, 3 * MIN_SAMPLE, 0, 0);
        assert!(!b.fills(x, 1) && b.fills(y, 1));
        // Many statements: never more than SLOTS records.
        for d in 1..=50 * SLOTS as u64 {
            b.ended(d, false, 2 * BASE_MS);
        }
        assert_eq!(b.slots.len(), SLOTS);
    }

    /// A property over random sequences: a statement is bypassed only after a verdict that
    /// at least 7/8 of `MIN_SAMPLE` results ended unread, never for longer than the cap,
    /// and a statement whose results are always read is never bypassed.
    #[test]
    fn random_histories_respect_the_rules() {
        let mut seed = 0x5eed_u64;
        let mut rnd = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..200 {
            let b = Bypass::default();
            let (d, good) = (1 + rnd(1 << 40), 2 + (1 << 41) + rnd(1 << 40));
            let read_share = rnd(9); // eighths of d's results that are read
            let (mut t, mut wasted, mut seen) = (0u64, 0u32, 0u32);
            for _ in 0..2000 {
                t += rnd(50);
                b.ended(good, true, t);
                assert!(b.fills(good, t));
                if b.is_bypassed(d, t) {
                    continue;
                }
                let read = rnd(8) < read_share;
                b.ended(d, read, t);
                seen += 1;
                wasted += u32::from(!read);
                if b.is_bypassed(d, t) {
                    assert!(seen >= MIN_SAMPLE && wasted * 8 >= seen * 7, "bypassed without a verdict");
                    assert!(b.fills(d, t + (BASE_MS << MAX_LEVEL)), "bypass longer than the cap");
                }
                if seen >= MIN_SAMPLE {
                    (seen, wasted) = (0, 0);
                }
            }
            if read_share == 8 {
                assert_eq!(b.stats(t).starts, 0);
            }
        }
    }
}
