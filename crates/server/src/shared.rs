//! State shared by every worker: settings, the engine, counters and the connection list.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use engine::Engine;
use parking_lot::Mutex;

use crate::detail::Detail;
use config::Config;
use tier_disk::DiskTier;

/// Counters one worker thread updates (so workers never share a cache line).
#[derive(Default)]
pub struct WorkerStats {
    /// Bytes read from clients.
    pub bytes_read: AtomicU64,
    /// Bytes written to clients.
    pub bytes_written: AtomicU64,
    /// Meta commands processed.
    pub cmd_meta: AtomicU64,
    /// Times a connection yielded after `-R` requests.
    pub conn_yields: AtomicU64,
    /// Command latencies by protocol and class (with `--metrics-listen`).
    pub latency: crate::timing::FrontLatency,
}

/// What `stats conns` shows about one connection.
pub struct ConnInfo {
    /// Peer address, as memcached prints it (`tcp:1.2.3.4:5`, `unix:/path`, `udp:...`).
    pub addr: Peer,
    /// Local address (one text shared by the listener's connections).
    pub listen_addr: Arc<str>,
    /// Relative time of the last command.
    pub last_cmd: AtomicU32,
    /// The socket's descriptor while it is open, -1 after (changed under the `conns`
    /// lock, so a stop never shuts down a descriptor that was closed and reused).
    pub fd: std::sync::atomic::AtomicI32,
}

/// A connection's peer as `stats conns` prints it: a TCP address, formatted only when asked
/// (an idle connection does not carry its text: issue 44, memory per connection), or a name
/// shared by a listener's connections (`unix:/path`, `udp:...`).
#[derive(Clone, Debug)]
pub enum Peer {
    /// `tcp:<address>`.
    Tcp(std::net::SocketAddr),
    /// Printed as it is.
    Named(Arc<str>),
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Tcp(a) => write!(f, "tcp:{a}"),
            Peer::Named(n) => f.write_str(n),
        }
    }
}

/// The server's shared state.
pub struct Shared {
    /// Startup settings.
    pub cfg: Config,
    /// The item store.
    pub engine: Arc<Engine>,
    /// `-m` as one budget: items, the disk tier's caches, the query cache, containers
    /// (`engine::budget`; kept by `crate::memory`).
    pub budget: Arc<engine::budget::Budget>,
    /// Current verbosity (the `verbosity` command changes it).
    pub verbose: AtomicU32,
    /// Whether commands are timed for the latency histograms (`--metrics-listen`).
    pub timing: bool,
    /// Per-worker counters.
    pub workers: Vec<Arc<WorkerStats>>,
    /// Open connections.
    pub curr_connections: AtomicUsize,
    /// Connections ever accepted.
    pub total_connections: AtomicU64,
    /// Connections refused by `-c`.
    pub rejected_connections: AtomicU64,
    /// Connection table for `stats conns`, by connection id.
    pub conns: Mutex<BTreeMap<u64, Arc<ConnInfo>>>,
    /// Next connection id.
    pub next_conn: AtomicU64,
    /// The memcached listening sockets: a stop waits until their backlog is accepted.
    pub listeners: Mutex<Vec<std::os::fd::RawFd>>,
    /// The stop's drain is over: a connection accepted now is closed unanswered.
    pub drained: AtomicBool,
    /// Set when a shutdown was requested.
    pub shutting_down: AtomicBool,
    /// Wakes the main thread for shutdown.
    pub shutdown: Mutex<Option<std::sync::mpsc::Sender<()>>>,

    /// Per-prefix counters (`stats detail`).
    pub detail: Detail,
    /// The persistent tier, with `--data-dir`.
    pub disk: Option<Arc<DiskTier>>,
    /// SQL containers, with `--containers`.
    pub sql: Option<Arc<crate::containers::Slot>>,
    /// The binlog followers (query cache, `caching` containers, invalidation rules).
    pub feeds: Arc<crate::feeds::SourceFeeds>,
    /// `--invalidate` rules: plain keys dropped when the binlog shows their rows changed.
    pub invalidate: Option<Arc<crate::invalidate::Rules>>,
    /// The MySQL query-cache proxy, with `--mysql-listen`.
    pub mysql: Option<Arc<mysql_proxy::Proxy>>,
    /// The PostgreSQL front, with `--pg-listen`.
    pub postgres: Option<Arc<pg_proxy::Proxy>>,
    /// memcached's ASCII authentication, with `-Y FILE`.
    pub auth: Option<Arc<crate::auth::AuthFile>>,
    /// memcached's binary SASL authentication, with `-S`.
    pub sasl: Option<Arc<crate::sasl::Sasl>>,
    /// TLS on the TCP listeners, with `-Z`.
    pub tls: Option<Arc<crate::tls::Tls>>,
    /// Memcached connections (TCP in clear, Unix) run on io_uring (`--io-uring`), not epoll.
    pub io_uring: AtomicBool,
}

impl Shared {
    /// New shared state for `threads` workers.
    pub fn new(cfg: Config, engine: Engine, disk: Option<Arc<DiskTier>>) -> Shared {
        let cfg_delimiter = cfg.prefix_delimiter as u8;
        let cfg_detail = cfg.prefix_delimiter_set;
        let cfg_server_id = cfg.mysql.server_id();
        let workers = (0..cfg.threads).map(|_| Arc::new(WorkerStats::default())).collect();
        Shared {
            verbose: AtomicU32::new(cfg.verbose),
            timing: cfg.metrics_listen.is_some(),
            budget: Arc::new(engine::budget::Budget::new(cfg.memory_limit)),
            cfg,
            engine: Arc::new(engine),
            workers,
            curr_connections: AtomicUsize::new(0),
            total_connections: AtomicU64::new(0),
            rejected_connections: AtomicU64::new(0),
            conns: Mutex::new(BTreeMap::new()),
            next_conn: AtomicU64::new(1),
            listeners: Mutex::new(Vec::new()),
            drained: AtomicBool::new(false),
            shutting_down: AtomicBool::new(false),
            shutdown: Mutex::new(None),
            detail: Detail::new(cfg_delimiter, cfg_detail),
            disk,
            feeds: Arc::new(crate::feeds::SourceFeeds::new(cfg_server_id)),
            invalidate: None,
            sql: None,
            mysql: None,
            postgres: None,
            auth: None,
            tls: None,
            sasl: None,
            io_uring: AtomicBool::new(false),
        }
    }

    /// Current verbosity.
    #[inline]
    pub fn verbose(&self) -> u32 {
        self.verbose.load(Ordering::Relaxed)
    }

    /// Ask the main thread to stop the server.
    pub fn request_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        if let Some(tx) = self.shutdown.lock().as_ref() {
            let _ = tx.send(());
        }
    }

    /// Stop serving: each open connection (and one accepted meanwhile) closes once the
    /// requests that reached its socket before are answered (and acknowledged by the disk
    /// tier; noreply writes included): its socket's reading side is shut down, so a read
    /// after what is buffered sees the end of the stream, and a connection stops at the
    /// first request boundary where nothing more is waiting (once it returns, a connection
    /// accepted is closed unanswered: [`Shared::drained`]). Waits until every
    /// connection is gone or `limit` has passed; returns how many were still open.
    pub fn drain(&self, limit: std::time::Duration) -> usize {
        self.shutting_down.store(true, Ordering::SeqCst);
        for c in self.conns.lock().values() {
            let fd = c.fd.load(Ordering::SeqCst);
            if fd >= 0 {
                // SAFETY: fd is open: it is set to -1 under this lock before it is closed.
                unsafe { libc::shutdown(fd, libc::SHUT_RD) };
            }
        }
        let deadline = std::time::Instant::now() + limit;
        // Quiet twice in a row, 2 ms apart: an accept thread between its accept and its
        // count is not missed.
        let mut quiet = 0;
        loop {
            let open = self.curr_connections.load(Ordering::SeqCst);
            quiet = if open == 0 && !self.backlog() { quiet + 1 } else { 0 };
            if quiet == 2 || std::time::Instant::now() >= deadline {
                self.drained.store(true, Ordering::SeqCst);
                return open;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// Whether a listening socket has connections the kernel accepted and we did not yet
    /// (a client may have sent its requests on one before the stop).
    fn backlog(&self) -> bool {
        let mut fds: Vec<libc::pollfd> =
            self.listeners.lock().iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
        // SAFETY: `fds` is a valid array of its length; listening sockets stay open until exit.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        n > 0 && fds.iter().any(|p| p.revents & libc::POLLIN != 0)
    }

    /// A connection is about to close its socket: forget its descriptor first.
    pub fn closing(&self, info: &ConnInfo) {
        let _conns = self.conns.lock();
        info.fd.store(-1, Ordering::SeqCst);
    }

    /// A connection is gone (its socket closed): out of `stats conns` and the `-c` count.
    pub fn conn_gone(&self, id: u64) {
        self.conns.lock().remove(&id);
        self.curr_connections.fetch_sub(1, Ordering::Relaxed);
    }

    /// `stats reset`: zero the server-level counters.
    pub fn reset_stats(&self) {
        self.total_connections.store(0, Ordering::Relaxed);
        self.rejected_connections.store(0, Ordering::Relaxed);
        for w in &self.workers {
            for c in [&w.bytes_read, &w.bytes_written, &w.cmd_meta, &w.conn_yields] {
                c.store(0, Ordering::Relaxed);
            }
            w.latency.reset();
        }
    }

    /// Sum a worker counter.
    pub fn sum(&self, f: impl Fn(&WorkerStats) -> &AtomicU64) -> u64 {
        self.workers.iter().map(|w| f(w).load(Ordering::Relaxed)).sum()
    }
}
