//! One binlog follower per backend, shared by everything that follows it.
//!
//! The query cache (`--mysql-listen`), the `caching` containers (`--containers` on
//! MariaDB/MySQL) and the invalidation rules (`--invalidate`) each want every change of
//! the backend's binlog. A server opens one replica connection per backend address for all
//! of them: the first subscriber's account and server id start the follower, later ones
//! add their sink to it. A sink that joins while the stream already flows is told
//! `Change::Connected` first, so it sees the same stream states as one that was there
//! from the start. Sinks run on the follower's thread, in binlog order: keep them quick.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use binlog::{Change, Follower};
use engine::stats::{Kind, StatSink};
use parking_lot::{Mutex, RwLock};

/// Something that receives every binlog change.
pub type Sink = Box<dyn Fn(&Change) + Send + Sync>;

/// One backend's follower and its sinks.
pub struct Feed {
    /// `host:port` as given.
    pub backend: String,
    follower: OnceLock<Follower>,
    sinks: RwLock<Vec<Sink>>,
    connected: AtomicBool,
}

impl Feed {
    /// The follower's counters.
    pub fn stats(&self) -> binlog::Stats {
        self.follower.get().map(Follower::stats).unwrap_or_default()
    }

    /// Hands one change to every sink (on the follower's thread).
    fn deliver(&self, change: &Change) {
        let sinks = self.sinks.read();
        match change {
            Change::Connected => self.connected.store(true, Ordering::Relaxed),
            Change::Disconnected { .. } => self.connected.store(false, Ordering::Relaxed),
            _ => {}
        }
        for s in sinks.iter() {
            s(change);
        }
    }
}

/// The server's binlog followers, by backend address.
#[derive(Default)]
pub struct Feeds {
    feeds: Mutex<HashMap<String, Arc<Feed>>>,
}

impl Feeds {
    /// Adds `sink` to the follower of `config.backend`, starting one if there is none yet
    /// (`who` names the subscriber in the log line that says the connection is shared).
    pub fn subscribe(&self, config: binlog::Config, who: &str, sink: Sink) -> Arc<Feed> {
        let key = config.backend.to_ascii_lowercase();
        let mut feeds = self.feeds.lock();
        if let Some(feed) = feeds.get(&key) {
            log::info!("binlog of {}: {who} shares the replica connection already open", feed.backend);
            let mut sinks = feed.sinks.write();
            if feed.connected.load(Ordering::Relaxed) {
                sink(&Change::Connected);
            }
            sinks.push(sink);
            return feed.clone();
        }
        let feed = Arc::new(Feed {
            backend: config.backend.clone(),
            follower: OnceLock::new(),
            sinks: RwLock::new(vec![sink]),
            connected: AtomicBool::new(false),
        });
        let weak: Weak<Feed> = Arc::downgrade(&feed);
        let follower = Follower::spawn(config, move |change| {
            if let Some(feed) = weak.upgrade() {
                feed.deliver(&change);
            }
        });
        let _ = feed.follower.set(follower);
        feeds.insert(key, feed.clone());
        feed
    }

    /// The `binlog_*` figures: `binlog_feeds` (replica connections open), then, over them,
    /// `binlog_connected` (1 when every stream flows), `binlog_lag_ms` (the largest),
    /// `binlog_events` and `binlog_reconnects` (sums). Nothing without a follower.
    pub fn write_stats(&self, sink: &mut dyn StatSink) {
        let stats: Vec<binlog::Stats> = self.feeds.lock().values().map(|f| f.stats()).collect();
        if stats.is_empty() {
            return;
        }
        sink.stat("binlog_feeds", Kind::Gauge, &stats.len());
        sink.stat("binlog_connected", Kind::Gauge, &u64::from(stats.iter().all(|s| s.connected)));
        sink.stat("binlog_lag_ms", Kind::Gauge, &stats.iter().map(|s| s.lag_ms).max().unwrap_or(0));
        sink.stat("binlog_events", Kind::Counter, &stats.iter().map(|s| s.events).sum::<u64>());
        sink.stat("binlog_reconnects", Kind::Counter, &stats.iter().map(|s| s.reconnects).sum::<u64>());
    }
}
