//! Start and stop a whole server in this process: what `main` runs, and what in-process
//! tests run.
//!
//! [`Server::start`] opens the data dir, loads the authentication, TLS and container
//! files, starts the workers and binds every listener; it returns a [`Handle`] once the
//! server accepts connections. [`Handle::wait`] blocks until a stop is asked for (a
//! signal through [`Handle::stopper`], or memcached's `shutdown` command);
//! [`Handle::stop`] then drains connections, closes the disk tier and commits open
//! container batches. Process chores (daemon, signals, `-u`, pid file) stay in `main`.

use std::net::SocketAddr;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::{Engine, EngineConfig};
use tier_disk::DiskTier;

use crate::shared::Shared;
use crate::workers::Workers;
use crate::{admin, auth, containers, invalidate, listen, memory, persistence, rotate, sasl, tls, udp, uring};
use config::Config;

/// memcached's exit code for bad usage (`EX_USAGE`).
const EX_USAGE: i32 = 64;
/// Exit code for a bad `--containers` file (`EX_CONFIG`).
const EX_CONFIG: i32 = 78;
/// Exit code for any other failure to start (`EX_OSERR`).
const EX_OSERR: i32 = 71;
/// How long a stop waits for connections to finish the requests they have read.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// Why a server did not start: the message (memcached's wording where it has one) and the
/// exit status the binary uses for it.
#[derive(Debug)]
pub struct StartError {
    /// What to print.
    pub message: String,
    /// The process exit status.
    pub code: i32,
}

impl StartError {
    fn new(code: i32, message: impl Into<String>) -> StartError {
        StartError { message: message.into(), code }
    }
}

impl From<std::io::Error> for StartError {
    fn from(e: std::io::Error) -> StartError {
        let text = e.to_string();
        // `failed to listen on ...` says what failed already.
        let text = if text.starts_with("failed to ") { text } else { format!("failed to start: {text}") };
        StartError::new(EX_OSERR, text)
    }
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A server to start.
pub struct Server;

/// A running server.
pub struct Handle {
    shared: Arc<Shared>,
    disk: Option<Arc<DiskTier>>,
    stop_tx: Sender<()>,
    stop_rx: Receiver<()>,
    tcp: Vec<SocketAddr>,
    mysql: Option<SocketAddr>,
    postgres: Option<SocketAddr>,
    /// The worker runtimes, alive as long as the server.
    _workers: Arc<Workers>,
}

impl Server {
    /// Start a server for `cfg`; returns once every listener is bound.
    pub fn start(cfg: Config) -> Result<Handle, StartError> {
        let mut engine = Engine::new(EngineConfig {
            memory_limit: cfg.memory_limit,
            item_size_max: cfg.item_size_max,
            evict: !cfg.disable_evictions,
            use_cas: !cfg.disable_cas,
            shards: (cfg.threads * 32).max(64),
        });
        let disk = persistence::open(&cfg, &mut engine).map_err(std::io::Error::other)?;
        let mut shared = Shared::new(cfg.clone(), engine, disk.clone());
        if let Some(path) = &cfg.auth_file {
            // memcached's message and exit status.
            shared.auth = Some(Arc::new(auth::AuthFile::load(path).map_err(|e| StartError::new(1, e))?));
        }
        warn_inert_settings(&cfg);
        if cfg.sasl {
            shared.sasl = Some(Arc::new(sasl::Sasl::from_env().map_err(|e| StartError::new(EX_USAGE, e))?));
        }
        if cfg.tls.enabled {
            let t = tls::Tls::new(&cfg.tls, shared.engine.clock().now()).map_err(|e| StartError::new(EX_USAGE, e))?;
            shared.tls = Some(Arc::new(t));
            tls::explain(&cfg.tls);
        }
        // One binlog feed per backend (`feeds`): the rules and the query cache subscribe
        // first, so their account and server id open it; containers join it.
        if !cfg.invalidate.rules.is_empty() {
            let rules = invalidate::start(&cfg, shared.engine.clone(), &shared.feeds)
                .map_err(|e| StartError::new(EX_CONFIG, e))?;
            shared.invalidate = Some(rules);
        }
        if cfg.mysql.listen.is_some() {
            let proxy = mysql_proxy::Proxy::new(&cfg.mysql, &shared.feeds.binlog, cfg.metrics_listen.is_some())?;
            shared.mysql = Some(Arc::new(proxy));
        }
        if cfg.postgres.listen.is_some() {
            let proxy = pg_proxy::Proxy::new(&cfg.postgres, &shared.feeds.wal, cfg.metrics_listen.is_some())
                .map_err(|e| StartError::new(EX_CONFIG, e))?;
            shared.postgres = Some(Arc::new(proxy));
            check_pg_login(&cfg.postgres);
        }
        if let Some(path) = &cfg.containers {
            shared.sql = Some(start_containers(path, &shared.engine, cfg.metrics_listen.is_some(), &shared.feeds)?);
        }
        let ring = uring::choose(cfg.io_uring).map_err(|e| StartError::new(EX_OSERR, e))?;
        let shared = Arc::new(shared);
        let (stop_tx, stop_rx) = std::sync::mpsc::channel();
        *shared.shutdown.lock() = Some(stop_tx.clone());
        memory::start(&shared)?;
        let mut workers = Workers::start(&shared)?;
        if ring {
            match workers.start_rings(&shared) {
                Ok(()) => shared.io_uring.store(true, std::sync::atomic::Ordering::Relaxed),
                Err(e) if cfg.io_uring == config::IoUring::On => {
                    return Err(StartError::new(EX_OSERR, format!("--io-uring on: starting the ring workers: {e}")))
                }
                Err(e) => log::warn!("io_uring: starting the ring workers: {e}: memcached connections on epoll"),
            }
        }
        let workers = Arc::new(workers);
        rotate::start(cfg.threads);
        let (tcp, mysql, postgres) = bind_listeners(&cfg, &shared, &workers)?;
        if let Some(addr) = &cfg.metrics_listen {
            admin::start(addr, shared.clone())?;
        }
        Ok(Handle { shared, disk, stop_tx, stop_rx, tcp, mysql, postgres, _workers: workers })
    }
}

/// Load `--containers`: ready, or waiting for an unreachable backend (retried every second).
fn start_containers(
    path: &str,
    engine: &Engine,
    timing: bool,
    feeds: &Arc<crate::feeds::SourceFeeds>,
) -> Result<Arc<containers::Slot>, StartError> {
    let budget = containers::Budget::of(engine);
    let slot = containers::start(path, &budget, timing, feeds).map_err(|e| {
        // The library's errors about the file name it already.
        let e = e.strip_prefix(&format!("{path}: ")).unwrap_or(&e);
        StartError::new(EX_CONFIG, format!("--containers {path}: {e}"))
    })?;
    let slot = Arc::new(slot);
    if let Some(sql) = slot.get() {
        log::info!("--containers {path}: {}", containers::describe::summary(sql));
    } else {
        log::warn!(
            "--containers {path}: {}; starting without them: container commands answer \
             SERVER_ERROR until the backend is reachable (tried again every second)",
            slot.unavailable().text()
        );
        slot.retry(path.to_string(), budget, timing, feeds.clone());
    }
    Ok(slot)
}

/// Settings that would do nothing as given are said at start, not ignored.
fn warn_inert_settings(cfg: &Config) {
    let tls_options_given = cfg.tls != config::tls::TlsConfig { enabled: cfg.tls.enabled, ..Default::default() };
    if !cfg.tls.enabled && tls_options_given {
        log::warn!("-o ssl_* options are set but -Z is not: TLS is off on every listener");
    }
    if !cfg.sasl && std::env::var_os(sasl::PWDB_ENV).is_some() {
        log::warn!("{} is set but -S is not: SASL authentication is off", sasl::PWDB_ENV);
    }
}

/// `--pg-user`'s login checked in the background at start: a failure is said at once, with
/// its fix, while the front already relays clients (it needs no login of its own).
fn check_pg_login(cfg: &config::postgres::PostgresConfig) {
    if cfg.user.is_none() {
        return;
    }
    let cfg = cfg.clone();
    let _ = std::thread::Builder::new().name("pg-login-check".into()).spawn(move || {
        for (passed, line) in pg_proxy::check::run(&cfg) {
            if passed {
                log::info!("postgres proxy: {line}");
            } else {
                log::warn!("postgres proxy: {line}");
            }
        }
    });
}

/// Listeners bound: memcached TCP, MySQL, PostgreSQL.
type Bound = (Vec<SocketAddr>, Option<SocketAddr>, Option<SocketAddr>);

/// Bind the memcached (unix, TCP, UDP), MySQL and PostgreSQL listeners and start their
/// threads; returns the TCP, MySQL and PostgreSQL addresses bound.
fn bind_listeners(cfg: &Config, shared: &Arc<Shared>, workers: &Arc<Workers>) -> Result<Bound, StartError> {
    let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| std::thread::Builder::new().name(name.into()).spawn(f);
    let mut tcp = Vec::new();
    if let Some(path) = &cfg.unix_socket {
        let l = listen::bind_unix(path, cfg.unix_mask)?;
        log::info!("listening on unix socket {path}");
        let (s, w, p) = (shared.clone(), workers.clone(), path.clone());
        spawn("accept-unix", Box::new(move || listen::accept_unix(l, p, s, w)))?;
    } else {
        if cfg.port != 0 {
            for (addr, tls) in listen::addresses(&cfg.listen, cfg.port, cfg.tls.enabled)? {
                let l = listen::bind_tcp(addr, cfg.backlog)
                    .map_err(|e| std::io::Error::new(e.kind(), format!("failed to listen on TCP {addr}: {e}")))?;
                tcp.push(l.local_addr()?);
                let over = if tls { "over TLS" } else { "in clear" };
                log::info!("listening on TCP {addr} (memcached text, meta and binary protocols, {over})");
                let client_certs = tls && shared.tls.as_ref().is_some_and(|t| t.requires_client_certs());
                if shared.auth.is_none() && shared.sasl.is_none() && !client_certs {
                    warn_if_open(addr, "TCP");
                }
                let (s, w) = (shared.clone(), workers.clone());
                spawn("accept", Box::new(move || listen::accept_tcp(l, tls, s, w)))?;
            }
        }
        if cfg.udp_port != 0 {
            for (addr, _) in listen::addresses(&cfg.listen, cfg.udp_port, cfg.tls.enabled)? {
                let sock = std::net::UdpSocket::bind(addr)
                    .map_err(|e| std::io::Error::new(e.kind(), format!("failed to listen on UDP {addr}: {e}")))?;
                log::info!("listening on UDP {addr}");
                warn_if_open(addr, "UDP");
                let (s, w) = (shared.clone(), shared.workers[0].clone());
                spawn("udp", Box::new(move || udp::serve(sock, s, w)))?;
            }
        }
    }
    let mut mysql_addr = None;
    if let Some(addr) = &cfg.mysql.listen {
        let l = listen::bind_addr(addr, cfg.backlog)
            .map_err(|e| std::io::Error::new(e.kind(), format!("failed to listen on MySQL {addr}: {e}")))?;
        mysql_addr = Some(l.local_addr()?);
        log::info!("listening on MySQL {addr} (proxy to {})", cfg.mysql.backend.as_deref().unwrap_or("?"));
        let (p, w) = (shared.mysql.clone().expect("set with --mysql-listen"), workers.clone());
        spawn("accept-mysql", Box::new(move || mysql_proxy::accept(l, p, |task| w.dispatch_task(task))))?;
    }
    let mut pg_addr = None;
    if let Some(addr) = &cfg.postgres.listen {
        let l = listen::bind_addr(addr, cfg.backlog)
            .map_err(|e| std::io::Error::new(e.kind(), format!("failed to listen on PostgreSQL {addr}: {e}")))?;
        pg_addr = Some(l.local_addr()?);
        let p = shared.postgres.clone().expect("set with --pg-listen");
        let tls = if p.tls.acceptor.is_some() { "TLS offered" } else { "no TLS offered" };
        log::info!(
            "listening on PostgreSQL {addr} (proxy to {}, {tls}, backend sslmode {})",
            p.backend,
            cfg.postgres.backend_sslmode.name()
        );
        let w = workers.clone();
        spawn("accept-postgres", Box::new(move || pg_proxy::accept(l, p, |task| w.dispatch_task(task))))?;
    }
    Ok((tcp, mysql_addr, pg_addr))
}

/// Safe defaults: without `-Y` the memcached protocols have no authentication, so a
/// listener reachable from other hosts is said at start, at the default level.
fn warn_if_open(addr: SocketAddr, proto: &str) {
    if !addr.ip().is_loopback() {
        log::warn!(
            "{proto} {addr} is reachable from other hosts and has no authentication: anyone who can \
             connect can read, change and flush every item. Listen on loopback (-l 127.0.0.1) or \
             firewall the port"
        );
    }
}

impl Handle {
    /// The memcached TCP addresses bound.
    pub fn tcp_addrs(&self) -> &[SocketAddr] {
        &self.tcp
    }

    /// The MySQL proxy's address, with `--mysql-listen`.
    pub fn mysql_addr(&self) -> Option<SocketAddr> {
        self.mysql
    }

    /// The PostgreSQL front's address, with `--pg-listen`.
    pub fn postgres_addr(&self) -> Option<SocketAddr> {
        self.postgres
    }

    /// Something another thread (a signal handler thread) sends `()` on to ask for a stop.
    pub fn stopper(&self) -> Sender<()> {
        self.stop_tx.clone()
    }

    /// SIGHUP: reload what can be reloaded (the `-Y` authentication file).
    pub fn reloader(&self) -> impl Fn() + Send + 'static {
        let auth = self.shared.auth.clone();
        move || {
            if let Some(auth) = &auth {
                auth.reload();
            }
        }
    }

    /// Block until a stop is asked for ([`Handle::stopper`], or memcached's `shutdown`).
    pub fn wait(&self) {
        let _ = self.stop_rx.recv();
    }

    /// Stop: no new connections; open ones close once their requests are answered (at
    /// most 5 s); then the disk tier is closed and open container batches committed.
    /// Returns how long each step took (`main` says it in its `stopped` line).
    pub fn stop(self) -> StopTimes {
        log::info!("shutting down: no new connections; open ones close once their requests are answered");
        let mut times = StopTimes::new();
        let shared = &self.shared;
        let draining = Instant::now();
        if let Some(proxy) = &shared.mysql {
            proxy.stop();
        }
        if let Some(proxy) = &shared.postgres {
            proxy.stop();
        }
        let open = shared.drain(DRAIN_LIMIT);
        if open > 0 {
            log::warn!(
                "{open} connections still busy after {DRAIN_LIMIT:?} (a client not reading its replies?): closing them"
            );
        }
        times.step("connections");
        if let Some(proxy) = &shared.mysql {
            let open = proxy.drain(DRAIN_LIMIT.saturating_sub(draining.elapsed()));
            if open > 0 {
                log::warn!("{open} MySQL connections still running a command after {DRAIN_LIMIT:?}: closing them");
            }
            times.step("MySQL connections");
        }
        if let Some(proxy) = &shared.postgres {
            let open = proxy.drain(DRAIN_LIMIT.saturating_sub(draining.elapsed()));
            if open > 0 {
                log::warn!("{open} PostgreSQL connections still awaiting a reply after {DRAIN_LIMIT:?}: closing them");
            }
        }
        if let Some(disk) = &self.disk {
            disk.close();
            times.step("disk tier");
        }
        if let Some(rules) = &shared.invalidate {
            rules.stop();
            times.step("binlog position");
        }
        if let Some(sql) = shared.sql.as_ref().and_then(|s| s.get()) {
            // Open batch transactions (w_batch_size > 1) are committed before exit.
            if let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() {
                if let Err(e) = rt.block_on(sql.set.commit_all()) {
                    log::error!("containers: committing at shutdown: {e}");
                }
            }
            times.step("containers");
        }
        if let Some(path) = &shared.cfg.unix_socket {
            let _ = std::fs::remove_file(path);
        }
        times
    }
}

/// How long a stop took, step by step: `12 ms (connections 3 ms, disk tier 9 ms)`.
pub struct StopTimes {
    started: Instant,
    last: Instant,
    steps: Vec<(&'static str, Duration)>,
}

impl StopTimes {
    fn new() -> StopTimes {
        let now = Instant::now();
        StopTimes { started: now, last: now, steps: Vec::new() }
    }

    /// The step `name` ended now.
    fn step(&mut self, name: &'static str) {
        let now = Instant::now();
        self.steps.push((name, now - self.last));
        self.last = now;
    }

    /// The whole stop.
    pub fn total(&self) -> Duration {
        self.last - self.started
    }
}

impl std::fmt::Display for StopTimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        write!(f, "{:.0} ms (", ms(self.total()))?;
        for (i, (name, d)) in self.steps.iter().enumerate() {
            write!(f, "{}{name} {:.0} ms", if i > 0 { ", " } else { "" }, ms(*d))?;
        }
        f.write_str(")")
    }
}
