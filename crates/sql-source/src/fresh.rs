//! The freshness bound (`--query-cache-max-lag`, a `caching` container's `max_lag_ms`):
//! a cache fed by a follower answers from memory only while that follower is at most the
//! bound behind the server's head (each source says how it measures it); beyond, its
//! reads go to the backend until the follower has caught up. Each consumer holds its own
//! [`Freshness`]: its bound, and a log line when it starts and stops bypassing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use crate::feeds::Feed;
use crate::Lag;

/// One cache's rule "answer from memory only while the follower is close to the head".
pub struct Freshness {
    /// The follower's state (not the feed: no reference count taken per read, and no
    /// cycle through the feed's sinks, which hold the caches); None: no follower.
    follower: Option<Arc<dyn Lag>>,
    /// The backend, for log lines.
    backend: String,
    /// The log's name, for log lines.
    log: &'static str,
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
            follower: feed.follower().map(|f| f.lag()),
            backend: feed.backend.clone(),
            log: feed.log,
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
                    "{} of {}: the follower caught up with the {} head; {} answers from memory again \
                     ({n} reads went to the backend meanwhile)",
                    self.log,
                    self.backend,
                    self.log,
                    self.who
                );
            } else {
                log::warn!(
                    "{} of {}: the follower is {lag} ms behind the {} head (bound {} ms): {} sends reads \
                     to the backend until it catches up",
                    self.log,
                    self.backend,
                    self.log,
                    self.max_ms,
                    self.who
                );
            }
        }
        fresh
    }
}
