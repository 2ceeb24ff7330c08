//! The PostgreSQL front (`--pg-listen`): a wire-protocol proxy in front of a PostgreSQL
//! server (`--pg-backend`); applications change only the port (docs/pgproxy.md).
//!
//! Each client connection lives on one worker runtime with its own backend connection
//! ([`conn`]). The startup is relayed ([`handshake`]): TLS toward the client is the
//! proxy's own ([`tls`]), toward the server per `--pg-backend-sslmode`; the
//! authentication exchange (SCRAM-SHA-256, md5, cleartext, trust) passes through, so the
//! server decides who logs in and the proxy never reads a password; each session gets a
//! cancel key of the proxy's ([`cancel`]). The session ([`relay`]) relays both directions
//! at once, message-exact: simple and extended queries, pipelines, COPY both ways,
//! notices and notifications, function calls. What the proxy itself refuses gets a
//! PostgreSQL ErrorResponse with a SQLSTATE ([`errors`]). Its figures are [`counters`].
//!
//! The query cache plugs in at [`relay`]'s unit queue, as the MySQL proxy's cache.rs plugs
//! into its conn.rs (docs/pgproxy.md, "Where the cache plugs in"); [`session`] is what it
//! keys on.

#![warn(missing_docs)]

pub mod cache;
pub mod cancel;
pub mod check;
pub mod conn;
pub mod counters;
pub mod errors;
pub mod handshake;
pub mod link;
pub mod relay;
pub mod session;
pub mod stream;
pub mod tls;

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Logins that may run at once (startup, backend connect, authentication); more clients
/// wait for a slot, within their `--pg-login-timeout`.
pub const LOGIN_SLOTS: usize = 128;

/// State shared by every client connection of the front.
pub struct Proxy {
    /// `--pg-backend` as given (`host:port`).
    pub backend: String,
    /// Its host.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// The front's counters.
    pub counters: counters::Counters,
    /// TLS toward clients and toward the backend.
    pub tls: tls::ProxyTls,
    /// The live sessions' cancel keys.
    pub keys: Arc<cancel::Keys>,
    /// `--pg-login-timeout`.
    pub login_timeout: Duration,
    /// `--pg-backend-connect-timeout`.
    pub backend_connect_timeout: Duration,
    /// `--pg-max-connections`.
    pub max_connections: usize,
    /// Logins in progress (see [`LOGIN_SLOTS`]).
    login_slots: tokio::sync::Semaphore,
    /// Whether the last login reached the backend (logged when it changes).
    backend_up: AtomicBool,
    /// Set at shutdown: sessions close at their next idle moment.
    stopping: tokio::sync::watch::Sender<bool>,
    /// The query cache and the database whose WAL it follows (None: off, said at start).
    pub cache: Option<(Arc<cache::PgCache>, String)>,
}

impl Proxy {
    /// The front for these settings (certificates loaded; a bad file is an error here, so
    /// the start stops before anything listens). Units are timed for the latency
    /// histograms when `timing` (`--metrics-listen`).
    pub fn new(
        cfg: &config::postgres::PostgresConfig,
        feeds: &sql_source::feeds::Feeds,
        timing: bool,
    ) -> Result<Proxy, String> {
        let tls = tls::ProxyTls::new(cfg)?;
        let backend = cfg.backend.clone().ok_or("--pg-listen needs --pg-backend")?;
        let (host, port) = cfg.backend_host_port().ok_or_else(|| format!("--pg-backend {backend}: want HOST:PORT"))?;
        Ok(Proxy {
            backend,
            host,
            port,
            counters: counters::Counters::new(timing),
            tls,
            keys: Arc::default(),
            login_timeout: cfg.login_timeout,
            backend_connect_timeout: cfg.backend_connect_timeout,
            max_connections: cfg.max_connections,
            login_slots: tokio::sync::Semaphore::new(LOGIN_SLOTS),
            backend_up: AtomicBool::new(true),
            stopping: tokio::sync::watch::Sender::new(false),
            cache: cache::start::start(cfg, feeds)?,
        })
    }

    /// Start stopping: new clients are closed at accept; each session closes once no reply
    /// is in flight (idle ones at once), its client told FATAL 57P01.
    pub fn stop(&self) {
        self.stopping.send_replace(true);
    }

    /// Whether [`Proxy::stop`] was called.
    pub fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// What a session watches to learn of the stop.
    pub fn stop_signal(&self) -> tokio::sync::watch::Receiver<bool> {
        self.stopping.subscribe()
    }

    /// After [`Proxy::stop`]: waits until every client connection is gone or `limit` has
    /// passed; returns how many were still open.
    pub fn drain(&self, limit: Duration) -> u64 {
        let deadline = std::time::Instant::now() + limit;
        loop {
            let open = self.counters.connections.load(Ordering::SeqCst);
            if open == 0 || std::time::Instant::now() >= deadline {
                return open;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Writes the front's figures (`stats`, `/metrics`).
    pub fn write_stats(&self, sink: &mut dyn engine::stats::StatSink) {
        self.counters.write(sink);
        if let Some((c, _)) = &self.cache {
            c.write_stats(sink);
        }
    }

    /// The query cache's digest table, top `n` statements by executions, as `stats
    /// pg_queries` lines (`pg_query:<i>:<field>`).
    pub fn write_digests(&self, n: usize, sink: &mut dyn engine::stats::StatSink) {
        let Some((cache, _)) = &self.cache else { return };
        for (i, d) in cache.digests(n).iter().enumerate() {
            sql_source::digests::write_row("pg_query", i + 1, d, sink);
        }
    }

    /// Notes whether a login could reach the backend; logs each change once (not once per
    /// client while the backend is down).
    pub fn backend_reached(&self, up: bool, why: &str) {
        if self.backend_up.swap(up, Ordering::Relaxed) != up {
            if up {
                log::info!("postgres proxy: backend {} reachable again", self.backend);
            } else {
                log::warn!(
                    "postgres proxy: backend {} unreachable ({why}); clients get FATAL 08001 until it is back",
                    self.backend
                );
            }
        }
    }
}

/// A connection's task, handed to a worker runtime to run (`tokio::spawn` works there).
pub type Task = Box<dyn FnOnce() + Send>;

/// Accepts PostgreSQL clients forever on this thread, handing each to a worker with
/// `dispatch`.
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
                log::debug!("postgres accept(): {e}");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}
