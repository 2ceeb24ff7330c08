//! The transparent MySQL query cache: a wire-protocol proxy (`--mysql-listen`) in front of
//! a MariaDB/MySQL server (`--mysql-backend`), docs/querycache.md.
//!
//! Each client connection lives on one worker runtime with its own backend connection
//! ([`conn`]); the login is relayed ([`handshake`]); replies are forwarded packet-exact
//! ([`relay`], [`reply`]); cacheable reads are answered from the shared query cache
//! ([`cache`]), kept fresh by invalidations from writes through the proxy and from the
//! backend's binlog ([`feed`]), with table metadata from [`metadata`].

#![warn(missing_docs)]

pub mod cache;
pub mod conn;
pub mod counters;
mod digest_metrics;
pub mod errors;
pub mod feed;
pub mod handshake;
pub mod metadata;
pub mod relay;
pub mod start;
pub mod stream;
pub mod tls;
pub mod wire;

use std::net::TcpListener;
use std::sync::Arc;

use querycache::QueryCache;

/// State shared by every proxy connection.
pub struct Proxy {
    /// `host:port` of the backend.
    pub backend: String,
    /// The proxy's own counters.
    pub counters: counters::Counters,
    /// The query cache and its feeds (none with `--query-cache-type OFF`).
    pub cache: Option<Arc<QueryCache>>,
    /// The check of `--mysql-user` that keeps the cache fresh: degraded or not (none with
    /// `--query-cache-type OFF`).
    pub health: Option<Arc<binlog::health::Health>>,
    /// Whether the last client connection reached the backend (logged when it changes).
    backend_up: std::sync::atomic::AtomicBool,
    /// Set at shutdown: connections close at their next command boundary.
    stopping: tokio::sync::watch::Sender<bool>,
    /// `--mysql-connect-timeout`: the longest a login may take.
    pub connect_timeout: std::time::Duration,
    /// `--mysql-backend-connect-timeout`: the longest the backend may take to accept a
    /// client's backend connection and greet it.
    pub backend_connect_timeout: std::time::Duration,
    /// `--mysql-net-read-timeout`: the longest a half-sent command may stall.
    pub net_read_timeout: std::time::Duration,
    /// TLS toward clients and toward the backend, as configured.
    pub tls: tls::ProxyTls,
}

impl Proxy {
    /// The proxy for these settings, with its query cache and the cache's feeds started.
    /// Queries are timed for the latency histograms when `timing` (`--metrics-listen`).
    pub fn new(
        cfg: &config::mysql::MysqlConfig,
        feeds: &sql_source::feeds::Feeds,
        timing: bool,
    ) -> std::io::Result<Proxy> {
        // Certificates first: a bad file stops the start before anything connects.
        let tls = tls::ProxyTls::new(cfg).map_err(std::io::Error::other)?;
        let (cache, health) = start::start(cfg, feeds)?;
        Ok(Proxy {
            tls,
            backend: cfg.backend.clone().unwrap_or_default(),
            counters: counters::Counters::new(timing),
            cache,
            health,
            backend_up: std::sync::atomic::AtomicBool::new(true),
            stopping: tokio::sync::watch::Sender::new(false),
            connect_timeout: cfg.connect_timeout,
            backend_connect_timeout: cfg.backend_connect_timeout,
            net_read_timeout: cfg.net_read_timeout,
        })
    }

    /// Start stopping: new clients are closed at accept, and each connection closes once
    /// the command it is running is answered (idle ones at once).
    pub fn stop(&self) {
        self.stopping.send_replace(true);
    }

    /// Whether [`Proxy::stop`] was called.
    pub fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// What a connection watches to learn of the stop.
    pub fn stop_signal(&self) -> tokio::sync::watch::Receiver<bool> {
        self.stopping.subscribe()
    }

    /// After [`Proxy::stop`]: wait until every client connection is gone or `limit` has
    /// passed; returns how many were still open.
    pub fn drain(&self, limit: std::time::Duration) -> u64 {
        use std::sync::atomic::Ordering;
        let deadline = std::time::Instant::now() + limit;
        loop {
            let open = self.counters.connections.load(Ordering::SeqCst);
            if open == 0 || std::time::Instant::now() >= deadline {
                return open;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// Writes the proxy's figures (its lines in `stats`, and for the metrics the top
    /// statements of the digest table and the tables invalidated most).
    pub fn write_stats(&self, sink: &mut dyn engine::stats::StatSink) {
        if let Some(cache) = &self.cache {
            counters::write_cache(cache, sink);
        }
        if let Some(health) = &self.health {
            health.write_stats(sink);
        }
        self.counters.write(sink);
        if let Some(cache) = self.cache.as_ref().filter(|_| sink.wants_families()) {
            digest_metrics::write(cache, sink);
        }
    }

    /// Writes the `n` tables invalidated most (`stats tables`): `table:<db.table>:invalidations`.
    pub fn write_tables(&self, n: usize, sink: &mut dyn engine::stats::StatSink) {
        let Some(cache) = &self.cache else { return };
        for (table, count) in cache.table_invalidations(n) {
            sink.stat(&format!("table:{table}:invalidations"), engine::stats::Kind::Counter, &count);
        }
    }

    /// Writes the query digest table (`stats queries`): the `n` statements run most often,
    /// `query:<rank>:<field>` lines.
    pub fn write_digests(&self, n: usize, sink: &mut dyn engine::stats::StatSink) {
        use engine::stats::Kind;
        let Some(cache) = &self.cache else { return };
        for (i, d) in cache.digests(n).iter().enumerate() {
            querycache::digests::write_row("query", i + 1, d, sink);
            sink.stat(&format!("query:{}:bypassed_now", i + 1), Kind::Gauge, &u64::from(cache.bypassed(d.id)));
        }
    }

    /// Notes whether a client connection could reach the backend; logs each change once
    /// (not once per client while the backend is down).
    pub fn backend_reached(&self, up: bool) {
        if self.backend_up.swap(up, std::sync::atomic::Ordering::Relaxed) != up {
            if up {
                log::info!("mysql proxy: backend {} reachable again", self.backend);
            } else {
                log::warn!(
                    "mysql proxy: backend {} unreachable; clients get ERROR 1429 until it is back",
                    self.backend
                );
            }
        }
    }
}

/// A connection's task, handed to a worker runtime to run (`tokio::spawn` works there).
pub type Task = Box<dyn FnOnce() + Send>;

/// Accepts MySQL clients forever on this thread, handing each to a worker with `dispatch`.
pub fn accept(l: TcpListener, proxy: Arc<Proxy>, dispatch: impl Fn(Task)) {
    loop {
        match l.accept() {
            Ok((s, _)) => {
                if proxy.is_stopping() {
                    continue; // stopping: closed unanswered
                }
                let proxy = proxy.clone();
                dispatch(Box::new(move || {
                    if s.set_nonblocking(true).is_ok() {
                        if let Ok(s) = tokio::net::TcpStream::from_std(s) {
                            tokio::spawn(conn::serve(s, proxy));
                        }
                    }
                }))
            }
            Err(e) => {
                log::debug!("mysql accept(): {e}");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}
