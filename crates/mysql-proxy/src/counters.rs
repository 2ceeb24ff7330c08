//! The proxy's counters and its lines in `stats` on the memcached port, plus its latency
//! histograms for the metrics endpoint.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use engine::latency::Histogram;
use engine::stats::{Kind, Series, StatSink, Value};

/// How a query (COM_QUERY, COM_STMT_EXECUTE) was answered, for the latency histograms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    /// From the cache (including misses that waited for an identical in-flight one).
    Hit = 0,
    /// A cacheable read the backend answered.
    Miss = 1,
    /// Forwarded untouched: writes, uncacheable reads, the cache offline.
    Passthrough = 2,
}

const SERVED: [&str; 3] = ["hit", "miss", "passthrough"];

/// Counters of the proxy itself (the cache and binlog keep their own).
#[derive(Default)]
pub struct Counters {
    /// Current client connections.
    pub connections: AtomicU64,
    /// Backend connections that failed or broke.
    pub backend_errors: AtomicU64,
    /// Logins not completed: the client left, stalled past the connect timeout or sent a bad
    /// or oversized login (MariaDB's `Aborted_connects`).
    pub aborted_connects: AtomicU64,
    /// Logged-in clients closed for stalling mid-command (MariaDB's `Aborted_clients`).
    pub aborted_clients: AtomicU64,
    /// TLS handshakes clients started with the proxy (MariaDB's `Ssl_accepts`).
    pub ssl_accepts: AtomicU64,
    /// ... and completed (`Ssl_finished_accepts`).
    pub ssl_finished_accepts: AtomicU64,
    /// Backend connections whose TLS handshake failed (certificate refused, no TLS offered).
    pub backend_ssl_errors: AtomicU64,
    /// `BEGIN`s the proxy answered itself, sent to the backend only with the transaction's
    /// first command that needs it (see `cache/txn.rs`).
    pub begins_deferred: AtomicU64,
    /// `COMMIT`s and `ROLLBACK`s the proxy answered itself: the backend had no transaction
    /// open, or the transaction only read (then sent on at once, its reply read later).
    pub ends_local: AtomicU64,
    /// Whether queries are timed (`--metrics-listen`).
    pub timing: bool,
    /// Query latencies by [`Served`].
    latency: [Histogram; 3],
}

impl Counters {
    /// Counters; queries are timed when `timing`.
    pub fn new(timing: bool) -> Counters {
        Counters { timing, ..Counters::default() }
    }

    /// The start time of a command, if queries are being timed.
    #[inline]
    pub fn start(&self) -> Option<Instant> {
        self.timing.then(Instant::now)
    }

    /// Count a query that started at `t` (from [`Counters::start`]): from its first byte
    /// read to the last byte of its reply written to the client.
    #[inline]
    pub fn served(&self, t: Option<Instant>, how: Served) {
        if let Some(t) = t {
            self.latency[how as usize].record_since(t);
        }
    }

    /// Zero the histograms (`stats reset`).
    pub fn reset(&self) {
        self.latency.iter().for_each(Histogram::reset);
    }

    /// Writes the proxy's own figures.
    pub fn write(&self, sink: &mut dyn StatSink) {
        sink.stat("mysql_connections", Kind::Gauge, &self.connections.load(Ordering::Relaxed));
        sink.stat("mysql_backend_errors", Kind::Counter, &self.backend_errors.load(Ordering::Relaxed));
        sink.stat("mysql_aborted_connects", Kind::Counter, &self.aborted_connects.load(Ordering::Relaxed));
        sink.stat("mysql_aborted_clients", Kind::Counter, &self.aborted_clients.load(Ordering::Relaxed));
        sink.stat("mysql_ssl_accepts", Kind::Counter, &self.ssl_accepts.load(Ordering::Relaxed));
        sink.stat("mysql_ssl_finished_accepts", Kind::Counter, &self.ssl_finished_accepts.load(Ordering::Relaxed));
        sink.stat("mysql_backend_ssl_errors", Kind::Counter, &self.backend_ssl_errors.load(Ordering::Relaxed));
        sink.stat("mysql_begins_deferred", Kind::Counter, &self.begins_deferred.load(Ordering::Relaxed));
        sink.stat("mysql_commits_local", Kind::Counter, &self.ends_local.load(Ordering::Relaxed));
        let series: Vec<Series> = SERVED
            .iter()
            .zip(&self.latency)
            .map(|(how, h)| Series::new(vec![("outcome", how.to_string())], Value::Histogram(h.snapshot())))
            .filter(|s| matches!(&s.value, Value::Histogram(h) if h.count() > 0))
            .collect();
        sink.family(
            "mysql_query_duration",
            "MySQL proxy: time from a query's first byte to the end of its reply, by how it was answered",
            &series,
        );
    }
}

/// Writes the query cache's figures (the binlog's are `sql_source::feeds::Feeds::write_stats`).
pub fn write_cache(qc: &querycache::QueryCache, sink: &mut dyn StatSink) {
    let s = qc.stats();
    sink.stat("Qcache_hits", Kind::Counter, &s.hits);
    sink.stat("Qcache_inserts", Kind::Counter, &s.inserts);
    sink.stat("Qcache_not_cached", Kind::Counter, &s.not_cached);
    sink.stat("Qcache_lowmem_prunes", Kind::Counter, &s.lowmem_prunes);
    sink.stat("Qcache_queries_in_cache", Kind::Gauge, &s.queries_in_cache);
    sink.stat("Qcache_invalidations_proxy", Kind::Counter, &s.invalidations_proxy);
    sink.stat("Qcache_invalidations_binlog_rows", Kind::Counter, &s.invalidations_binlog_rows);
    sink.stat("Qcache_invalidations_table", Kind::Counter, &s.invalidations_table);
    sink.stat("Qcache_invalidations_all", Kind::Counter, &s.invalidations_all);
    sink.stat("Qcache_fills_refused", Kind::Counter, &s.fills_refused);
    sink.stat("Qcache_shared_misses", Kind::Counter, &s.shared_misses);
    sink.stat("Qcache_lag_bypasses", Kind::Counter, &s.lag_bypasses);
    // The adaptive bypass (docs/querycache.md, "Adaptive bypass").
    sink.stat("Qcache_bypassed", Kind::Counter, &s.bypass.bypassed);
    sink.stat("Qcache_bypass_starts", Kind::Counter, &s.bypass.starts);
    sink.stat("Qcache_bypassed_statements", Kind::Gauge, &s.bypass.active);
    sink.stat("Qcache_results_unused", Kind::Counter, &s.bypass.unused);
    sink.stat("Qcache_results_reused", Kind::Counter, &s.bypass.reused);
    sink.stat("Qcache_online", Kind::Gauge, &u64::from(s.online));
    sink.stat("Qcache_bytes", Kind::Gauge, &s.bytes);
}
