//! [`Backoff`]: pausing something that does not pay, for longer each time it still does not.
//!
//! A cache that keeps filling entries nobody reads costs more than no cache. Its callers
//! (the query cache's statements, a `caching` container's memory copy) judge now and then
//! whether it paid back over a sample and tell [`Backoff::verdict`]: a "no" pauses it for
//! [`BASE_MS`], doubled at each consecutive "no" up to [`MAX_LEVEL`] doublings; a "yes"
//! halves the next pause. While [`Backoff::paused`] the caller skips the cache (reads go
//! straight to the source); once the pause ends it tries again and judges anew. Times are
//! milliseconds on the caller's clock.

/// The first pause, milliseconds.
pub const BASE_MS: u64 = 1000;
/// Most doublings of a pause (at most `BASE_MS << MAX_LEVEL`: about 2 minutes).
pub const MAX_LEVEL: u32 = 7;

/// One thing's pause state (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backoff {
    /// Doublings of the next pause.
    level: u32,
    /// Paused until this time (ms).
    until: u64,
}

impl Backoff {
    /// Is it paused at `now`?
    pub fn paused(&self, now: u64) -> bool {
        self.until > now
    }

    /// When the current (or last) pause ends.
    pub fn until(&self) -> u64 {
        self.until
    }

    /// The judgement of a sample at `now`: it paid back (`pays`) or not. Returns true if a
    /// pause starts.
    pub fn verdict(&mut self, pays: bool, now: u64) -> bool {
        if pays {
            self.level = self.level.saturating_sub(1);
            return false;
        }
        self.until = now + (BASE_MS << self.level);
        self.level = (self.level + 1).min(MAX_LEVEL);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_the_cap_and_paying_halves_them() {
        let mut b = Backoff::default();
        let mut t = 0;
        for level in 0..=MAX_LEVEL + 2 {
            assert!(!b.paused(t));
            assert!(b.verdict(false, t));
            let len = BASE_MS << level.min(MAX_LEVEL);
            assert!(b.paused(t + len - 1) && !b.paused(t + len), "level {level}");
            t += len;
        }
        assert!(!b.verdict(true, t) && !b.paused(t));
        b.verdict(false, t);
        assert!(!b.paused(t + (BASE_MS << (MAX_LEVEL - 1))), "one doubling less after paying back");
    }
}
