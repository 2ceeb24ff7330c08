//! The freshness bound (`--query-cache-max-lag`, a `caching` container's `max_lag_ms`):
//! a cache fed by a follower answers from memory only while that follower is at most the
//! bound behind the server's binlog head (`head.rs` says how that is measured); beyond, its
//! reads go to the backend until the follower has caught up. Each consumer holds its own
//! [`Freshness`]: its bound, and a log line when it starts and stops bypassing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use crate::feeds::Feed;
use crate::state::Shared;

/// One cache's rule "answer from memory only while the follower is close to the head".
pub struct Freshness {
    /// The follower's state (not the feed: no reference count taken per read, and no
    /// cycle through the feed's sinks, which hold the caches); None: no follower.
    follower: Option<Arc<Shared>>,
    /// The backend, for log lines.
    backend: String,
    max_ms: u64,
    who: &'static str,
    /// Bypassing now (for the log lines).
    lagging: AtomicBool,
    /// Reads sent to the backend in the current episode.
    episode: AtomicU64,
}

impl Freshness {
    /// The rule for `who` (a name for log lines) on `feed`'s follower; `max_ms` 0: no bound.
    pub fn new(feed: &Feed, max_ms: u64, who: &'static str) -> Freshness {
        Freshness {
            follower: feed.follower().map(|f| f.shared()),
            backend: feed.backend.clone(),
            max_ms,
            who,
            lagging: AtomicBool::new(false),
            episode: AtomicU64::new(0),
        }
    }

    /// The bound in ms (0: none).
    pub fn max_ms(&self) -> u64 {
        self.max_ms
    }

    /// Whether a read may be answered from memory now (false: send it to the backend).
    pub fn fresh(&self) -> bool {
        if self.max_ms == 0 {
            return true;
        }
        let Some(follower) = &self.follower else { return false };
        let lag = follower.lag_ms();
        let fresh = lag <= self.max_ms;
        if !fresh {
            self.episode.fetch_add(1, Relaxed);
        }
        if fresh == self.lagging.load(Relaxed) && self.lagging.compare_exchange(!fresh, fresh, Relaxed, Relaxed).is_ok()
        {
            if fresh {
                let n = self.episode.swap(0, Relaxed);
                log::info!(
                    "binlog of {}: the follower caught up with the binlog head; {} answers from memory again \
                     ({n} reads went to the backend meanwhile)",
                    self.backend,
                    self.who
                );
            } else {
                log::warn!(
                    "binlog of {}: the follower is {lag} ms behind the binlog head (bound {} ms): {} sends reads \
                     to the backend until it catches up",
                    self.backend,
                    self.max_ms,
                    self.who
                );
            }
        }
        fresh
    }
}
