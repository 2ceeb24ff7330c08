//! One follower per server, shared by everything that follows it.
//!
//! The query caches (`--mysql-listen`, `--pg-listen`), the `caching` containers and the
//! invalidation rules (`--invalidate`) each want every change of their server's log. A
//! server process opens one follower per server address for all of them (a binlog replica
//! connection, a logical replication slot): the first subscriber starts the follower,
//! later ones add their sink to it. A sink that joins while the stream already
//! flows is told `Change::Connected` first, so it sees the same stream states as one that
//! was there from the start. Sinks run on the follower's thread, in binlog order: keep them
//! quick.
//!
//! **Rechecks.** MariaDB (like MySQL) wakes its binlog dump threads once a transaction is in
//! the binlog, before the storage engine's commit makes it visible to other sessions
//! (PostgreSQL's walsender can likewise send a commit before its snapshot is visible). A
//! cache that refills right after the invalidation can read the row as it was and keep it
//! (the cluster tests caught the query cache and containers doing so under busy reads). So
//! every row change (and whole-table change: statement-format writes, DDL) is delivered a
//! second time, [`RECHECK`] later, to the sinks that ask for
//! it ([`Pass::Recheck`]): a copy filled in between is dropped, and a stale copy lasts at most
//! that long. The `--invalidate` rules do not need it: their hold refuses such fills.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::{Change, FeedStats, Follow};
use engine::stats::{Kind, StatSink};
use parking_lot::{Mutex, RwLock};

/// How long after a row change it is delivered again to the sinks that recheck.
pub const RECHECK: Duration = Duration::from_millis(50);
/// Row changes waiting for their recheck, at most (beyond, rechecks are dropped and counted).
const RECHECK_QUEUE: usize = 65_536;
/// Row images of one table in one transaction past which the follower reports the rest as
/// one `Change::ManyRows`, unless a subscriber needs every row (see [`Feeds::subscribe`]).
pub const BULK_ROWS: usize = 10_000;

/// Which delivery of a change a sink is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// As the follower read it.
    First,
    /// A row (or whole-table) change again, [`RECHECK`] later.
    Recheck,
}

/// Something that receives every change of a feed.
pub type Sink = Box<dyn Fn(&Change, Pass) + Send + Sync>;

/// One server's follower and its sinks.
pub struct Feed {
    /// The server as given (`host:port`, a URL without its password).
    pub backend: String,
    /// What the log is called in log lines (`binlog`, `WAL`).
    pub log: &'static str,
    follower: OnceLock<Box<dyn Follow>>,
    /// Each sink, and whether it wants rechecks.
    sinks: RwLock<Vec<(Sink, bool)>>,
    connected: AtomicBool,
    /// A subscriber needs every row image (no `ManyRows`).
    every_row: AtomicBool,
    /// The recheck queue (started with the first sink that wants rechecks; a channel that
    /// grows on demand, bounded by `waiting`).
    recheck: Mutex<Option<Sender<(Instant, Change)>>>,
    /// Row changes waiting for their recheck.
    waiting: AtomicUsize,
    /// Row changes delivered a second time.
    pub rechecks: AtomicU64,
    /// Rechecks dropped because too many waited.
    pub rechecks_dropped: AtomicU64,
}

impl Feed {
    /// How far behind the server's head the follower is, in ms ([`Follow::lag_ms`]).
    pub fn lag_ms(&self) -> u64 {
        self.follower.get().map_or(u64::MAX, |f| f.lag_ms())
    }

    /// Its follower (set when the feed is created).
    pub(crate) fn follower(&self) -> Option<&dyn Follow> {
        self.follower.get().map(|f| &**f)
    }

    /// The follower's counters.
    pub fn stats(&self) -> FeedStats {
        self.follower.get().map(|f| f.stats()).unwrap_or_default()
    }

    /// Hands one change to every sink (on the follower's thread), then queues a row change
    /// for its recheck.
    fn deliver(&self, change: Change) {
        let sinks = self.sinks.read();
        match change {
            Change::Connected => self.connected.store(true, Ordering::Relaxed),
            Change::Disconnected { .. } => self.connected.store(false, Ordering::Relaxed),
            _ => {}
        }
        for (s, _) in sinks.iter() {
            s(&change, Pass::First);
        }
        // Whole-table changes too: a statement-format write (and the tables its triggers and
        // cascades wrote) has the same window between binlog and visibility as rows.
        let data = matches!(change, Change::Rows { .. } | Change::ManyRows { .. } | Change::Table { .. });
        if data && sinks.iter().any(|(_, r)| *r) {
            if self.waiting.load(Ordering::Relaxed) >= RECHECK_QUEUE {
                if self.rechecks_dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                    log::warn!(
                        "{} of {}: more than {RECHECK_QUEUE} row changes waiting for their recheck: \
                         dropping rechecks ({}_rechecks_dropped)",
                        self.log,
                        self.backend,
                        self.log.to_ascii_lowercase()
                    );
                }
            } else if let Some(tx) = self.recheck.lock().as_ref() {
                if tx.send((Instant::now() + RECHECK, change)).is_ok() {
                    self.waiting.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Starts the recheck thread, once.
    fn start_rechecks(self: &Arc<Self>) {
        let mut slot = self.recheck.lock();
        if slot.is_some() {
            return;
        }
        let (tx, rx) = channel();
        let weak = Arc::downgrade(self);
        match std::thread::Builder::new().name("sqlcached-recheck".into()).spawn(move || Feed::rechecker(weak, rx)) {
            Ok(_) => *slot = Some(tx),
            Err(e) => {
                log::error!("{} of {}: no recheck thread ({e}): row changes are delivered once", self.log, self.backend)
            }
        }
    }

    /// The recheck thread: delivers each queued row change again once it is due.
    fn rechecker(feed: Weak<Feed>, rx: Receiver<(Instant, Change)>) {
        while let Ok((due, change)) = rx.recv() {
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let Some(feed) = feed.upgrade() else { return };
            for (s, _) in feed.sinks.read().iter().filter(|(_, r)| *r) {
                s(&change, Pass::Recheck);
            }
            feed.waiting.fetch_sub(1, Ordering::Relaxed);
            feed.rechecks.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Starts a follower that reports each change to the callback it is given.
pub type Start<'a> = Box<dyn FnOnce(Box<dyn Fn(Change) + Send>) -> Box<dyn Follow> + 'a>;

/// A server process's followers of one kind of log, by server address.
pub struct Feeds {
    feeds: Mutex<HashMap<String, Arc<Feed>>>,
    /// What the log is called in log lines (`binlog`, `WAL`); lower-cased, the prefix of
    /// the figures (`binlog_lag_ms`, `wal_lag_ms`).
    pub log: &'static str,
}

impl Feeds {
    /// No follower yet; `log` names the log (`binlog`, `WAL`).
    pub fn new(log: &'static str) -> Feeds {
        Feeds { feeds: Mutex::default(), log }
    }

    /// Adds `sink` to the follower of `backend`, starting one with `start` if there is none
    /// yet (`who` names the subscriber in the log line that says the connection is shared);
    /// with `recheck`, row changes come a second time (see the module documentation). With
    /// `every_row` the follower reports every row image, however many one transaction
    /// changes; without (on every subscriber), past [`BULK_ROWS`] of one table it reports
    /// `Change::ManyRows` and skips the rest, which keeps it close to the head.
    pub fn subscribe(
        &self,
        backend: &str,
        who: &str,
        recheck: bool,
        every_row: bool,
        sink: Sink,
        start: Start<'_>,
    ) -> Arc<Feed> {
        let key = backend.to_ascii_lowercase();
        let mut feeds = self.feeds.lock();
        if let Some(feed) = feeds.get(&key) {
            log::info!("{} of {}: {who} shares the connection already open", self.log, feed.backend);
            if every_row && !feed.every_row.swap(true, Ordering::Relaxed) {
                if let Some(f) = feed.follower.get() {
                    f.set_bulk_rows(0);
                }
            }
            if recheck {
                feed.start_rechecks();
            }
            let mut sinks = feed.sinks.write();
            if feed.connected.load(Ordering::Relaxed) {
                sink(&Change::Connected, Pass::First);
            }
            sinks.push((sink, recheck));
            return feed.clone();
        }
        let feed = Arc::new(Feed {
            backend: backend.to_string(),
            log: self.log,
            follower: OnceLock::new(),
            sinks: RwLock::new(vec![(sink, recheck)]),
            connected: AtomicBool::new(false),
            every_row: AtomicBool::new(every_row),
            recheck: Mutex::new(None),
            waiting: AtomicUsize::new(0),
            rechecks: AtomicU64::new(0),
            rechecks_dropped: AtomicU64::new(0),
        });
        if recheck {
            feed.start_rechecks();
        }
        let weak: Weak<Feed> = Arc::downgrade(&feed);
        let follower = start(Box::new(move |change| {
            if let Some(feed) = weak.upgrade() {
                feed.deliver(change);
            }
        }));
        follower.set_bulk_rows(if every_row { 0 } else { BULK_ROWS });
        let _ = feed.follower.set(follower);
        feeds.insert(key, feed.clone());
        feed
    }

    /// The feeds' figures, named after the log (`binlog_*`, `wal_*`): `_feeds` (followers
    /// open), then, over them, `_connected` (1 when every stream flows), `_lag_ms` (the
    /// largest distance to the head), `_events`, `_reconnects`, `_head_probes`,
    /// `_head_probe_failures`, `_rechecks`, `_rechecks_waiting` and `_rechecks_dropped`
    /// (sums), `_position` (per server, comma-separated: for the binlog `file:offset` before
    /// which every change has been applied once, `SHOW SLAVE STATUS`'s
    /// `Relay_Master_Log_File`/`Exec_Master_Log_Pos`; for the WAL the last LSN received), and
    /// each source's own figures (comma-separated per server). Nothing without a follower.
    pub fn write_stats(&self, sink: &mut dyn StatSink) {
        let feeds: Vec<Arc<Feed>> = self.feeds.lock().values().cloned().collect();
        if feeds.is_empty() {
            return;
        }
        let p = self.log.to_ascii_lowercase();
        let name = |n: &str| format!("{p}_{n}");
        let stats: Vec<FeedStats> = feeds.iter().map(|f| f.stats()).collect();
        let sum = |f: fn(&Feed) -> &AtomicU64| feeds.iter().map(|x| f(x).load(Ordering::Relaxed)).sum::<u64>();
        sink.stat(&name("feeds"), Kind::Gauge, &stats.len());
        sink.stat(&name("connected"), Kind::Gauge, &u64::from(stats.iter().all(|s| s.connected)));
        sink.stat(&name("lag_ms"), Kind::Gauge, &stats.iter().map(|s| s.lag_ms).max().unwrap_or(0));
        sink.stat(&name("events"), Kind::Counter, &stats.iter().map(|s| s.events).sum::<u64>());
        sink.stat(&name("reconnects"), Kind::Counter, &stats.iter().map(|s| s.reconnects).sum::<u64>());
        sink.stat(&name("head_probes"), Kind::Counter, &stats.iter().map(|s| s.head_probes).sum::<u64>());
        let failures = stats.iter().map(|s| s.head_probe_failures).sum::<u64>();
        sink.stat(&name("head_probe_failures"), Kind::Counter, &failures);
        sink.stat(&name("rechecks"), Kind::Counter, &sum(|f| &f.rechecks));
        let waiting: usize = feeds.iter().map(|f| f.waiting.load(Ordering::Relaxed)).sum();
        sink.stat(&name("rechecks_waiting"), Kind::Gauge, &waiting);
        sink.stat(&name("rechecks_dropped"), Kind::Counter, &sum(|f| &f.rechecks_dropped));
        let at = |s: &FeedStats| s.position.clone().unwrap_or_else(|| "-".to_string());
        sink.stat(&name("position"), Kind::Info, &stats.iter().map(at).collect::<Vec<_>>().join(","));
        let mut extra: Vec<(&'static str, Kind)> = Vec::new();
        for (k, kind, _) in stats.iter().flat_map(|s| s.extra.iter()) {
            if !extra.iter().any(|(n, _)| n == k) {
                extra.push((k, *kind));
            }
        }
        for (k, kind) in extra {
            let values = stats.iter().map(|s| s.extra.iter().find(|(n, _, _)| *n == k).map(|(_, _, v)| v.as_str()));
            if kind == Kind::Info {
                let listed: Vec<&str> = values.map(|v| v.unwrap_or("-")).collect();
                sink.stat(&name(k), kind, &listed.join(","));
            } else {
                let sum: u64 = values.map(|v| v.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)).sum();
                sink.stat(&name(k), kind, &sum);
            }
        }
    }
}
