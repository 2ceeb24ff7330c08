//! `sqlcached`: a drop-in memcached server.
//!
//! Data flows one way: socket ([`listen`], [`workers`], [`conn`]) → protocol front end
//! ([`text`], [`meta`], [`binary`]) → engine operations (`engine::ops`) → the sharded
//! in-memory store (and, below it, a storage tier).

mod admin;
mod auth;
mod binary;
mod check;
mod config;
mod conn;
mod containers;
mod ctx;
mod detail;
mod durable;
mod listen;
mod logging;
mod meta;
mod modes;
mod mysql;
mod persistence;
mod sasl;
mod shared;
mod slab;
mod sqlfront;
mod stats;
mod text;
mod timing;
mod tls;
mod udp;
mod workers;

use std::sync::Arc;

use engine::{Engine, EngineConfig};

use crate::config::{Action, Config};
use crate::shared::Shared;
use crate::workers::Workers;

/// memcached's exit code for bad usage (`EX_USAGE`).
const EX_USAGE: i32 = 64;
/// How long a stop waits for connections to finish the requests they have read.
const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);
/// Exit code for a bad `--containers` file (`EX_CONFIG`).
const EX_CONFIG: i32 = 78;

fn main() {
    let cfg = match Config::from_args(std::env::args().skip(1)) {
        Ok(Action::Run(c)) => *c,
        Ok(Action::Print(text)) => {
            print!("{text}");
            return;
        }
        Ok(Action::Check(c)) => std::process::exit(if check::run(&c) { 0 } else { EX_CONFIG }),
        Err((e, status)) => {
            eprintln!("{e}");
            std::process::exit(status);
        }
    };
    if let Err(e) = run(cfg) {
        eprintln!("failed to start: {e}");
        std::process::exit(71);
    }
}

fn run(cfg: Config) -> std::io::Result<()> {
    // Before any thread exists: fork and wait in the parent.
    let daemon = if cfg.daemonize { Some(unix::daemonize()?) } else { None };
    logging::init(cfg.verbose, cfg.log_format);
    block_signals();
    unix::apply_process_options(&cfg)?;
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
        match auth::AuthFile::load(path) {
            Ok(a) => shared.auth = Some(Arc::new(a)),
            Err(e) => {
                // memcached's message and exit status.
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
    }
    // Settings that would do nothing as given are said at start, not ignored.
    let tls_options_given = cfg.tls != config::tls::TlsConfig { enabled: cfg.tls.enabled, ..Default::default() };
    if !cfg.tls.enabled && tls_options_given {
        log::warn!("-o ssl_* options are set but -Z is not: TLS is off on every listener");
    }
    if !cfg.sasl && std::env::var_os(sasl::PWDB_ENV).is_some() {
        log::warn!("{} is set but -S is not: SASL authentication is off", sasl::PWDB_ENV);
    }
    if cfg.sasl {
        match sasl::Sasl::from_env() {
            Ok(s) => shared.sasl = Some(Arc::new(s)),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(EX_USAGE);
            }
        }
    }
    if cfg.tls.enabled {
        match tls::Tls::new(&cfg.tls, shared.engine.clock().now()) {
            Ok(t) => shared.tls = Some(Arc::new(t)),
            Err(e) => {
                // memcached's message and exit status (EX_USAGE).
                eprintln!("{e}");
                std::process::exit(EX_USAGE);
            }
        }
        tls::explain(&cfg.tls);
    }
    if let Some(path) = &cfg.containers {
        match containers::start(path, &containers::Budget::of(&shared.engine), cfg.metrics_listen.is_some()) {
            Ok(slot) => {
                let slot = Arc::new(slot);
                if slot.get().is_none() {
                    log::warn!(
                        "--containers {path}: {}; starting without them: container commands answer \
                         SERVER_ERROR until the backend is reachable (tried again every second)",
                        slot.unavailable().text()
                    );
                    slot.retry(path.clone(), containers::Budget::of(&shared.engine), cfg.metrics_listen.is_some());
                }
                shared.sql = Some(slot);
            }
            Err(e) => {
                eprintln!("--containers {path}: {e}");
                std::process::exit(EX_CONFIG);
            }
        }
    }
    if cfg.mysql.listen.is_some() {
        shared.mysql = Some(Arc::new(mysql::Proxy::new(&cfg.mysql, cfg.metrics_listen.is_some())?));
    }
    let shared = Arc::new(shared);
    let (tx, rx) = std::sync::mpsc::channel();
    *shared.shutdown.lock() = Some(tx.clone());
    let workers = Arc::new(Workers::start(&shared)?);

    // Bind everything before dropping privileges.
    let mut threads = Vec::new();
    if let Some(path) = &cfg.unix_socket {
        let l = listen::bind_unix(path, cfg.unix_mask)?;
        log::info!("listening on unix socket {path}");
        let (s, w, p) = (shared.clone(), workers.clone(), path.clone());
        threads.push(
            std::thread::Builder::new().name("accept-unix".into()).spawn(move || listen::accept_unix(l, p, s, w))?,
        );
    } else {
        if cfg.port != 0 {
            for (addr, tls) in listen::addresses(&cfg.listen, cfg.port, cfg.tls.enabled)? {
                let l = listen::bind_tcp(addr, cfg.backlog)
                    .map_err(|e| std::io::Error::new(e.kind(), format!("failed to listen on TCP {addr}: {e}")))?;
                let over = if tls { "over TLS" } else { "in clear" };
                log::info!("listening on TCP {addr} (memcached text, meta and binary protocols, {over})");
                let client_certs = tls && shared.tls.as_ref().is_some_and(|t| t.requires_client_certs());
                if shared.auth.is_none() && shared.sasl.is_none() && !client_certs {
                    warn_if_open(addr, "TCP");
                }
                let (s, w) = (shared.clone(), workers.clone());
                threads.push(
                    std::thread::Builder::new()
                        .name("accept".into())
                        .spawn(move || listen::accept_tcp(l, tls, s, w))?,
                );
            }
        }
        if cfg.udp_port != 0 {
            for (addr, _) in listen::addresses(&cfg.listen, cfg.udp_port, cfg.tls.enabled)? {
                let sock = std::net::UdpSocket::bind(addr)
                    .map_err(|e| std::io::Error::new(e.kind(), format!("failed to listen on UDP {addr}: {e}")))?;
                log::info!("listening on UDP {addr}");
                warn_if_open(addr, "UDP");
                let (s, w) = (shared.clone(), shared.workers[0].clone());
                threads.push(std::thread::Builder::new().name("udp".into()).spawn(move || udp::serve(sock, s, w))?);
            }
        }
    }
    if let Some(addr) = &cfg.mysql.listen {
        let l = mysql::bind(addr, cfg.backlog)
            .map_err(|e| std::io::Error::new(e.kind(), format!("failed to listen on MySQL {addr}: {e}")))?;
        log::info!("listening on MySQL {addr} (proxy to {})", cfg.mysql.backend.as_deref().unwrap_or("?"));
        let (p, w) = (shared.mysql.clone().expect("set with --mysql-listen"), workers.clone());
        threads.push(std::thread::Builder::new().name("accept-mysql".into()).spawn(move || mysql::accept(l, p, w))?);
    }
    if let Some(addr) = &cfg.metrics_listen {
        admin::start(addr, shared.clone())?;
    }
    unix::drop_privileges(&cfg)?;
    if let Some(pidfile) = &cfg.pidfile {
        std::fs::write(pidfile, format!("{}\n", std::process::id()))?;
    }
    let auth = shared.auth.clone();
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        unix::wait_for_signal(|| {
            if let Some(auth) = &auth {
                auth.reload();
            }
        });
        let _ = tx.send(());
    })?;
    log::info!(
        "ready: {} worker threads, {} MiB for items, up to {} connections",
        cfg.threads,
        cfg.memory_limit >> 20,
        cfg.max_connections
    );
    if let Some(d) = daemon {
        d.ready(cfg.verbose > 0);
    }
    let _ = rx.recv();
    log::info!("shutting down: no new connections; open ones close once their requests are answered");
    let draining = std::time::Instant::now();
    if let Some(proxy) = &shared.mysql {
        proxy.stop();
    }
    let open = shared.drain(DRAIN_LIMIT);
    if open > 0 {
        log::warn!(
            "{open} connections still busy after {DRAIN_LIMIT:?} (a client not reading its replies?): closing them"
        );
    }
    if let Some(proxy) = &shared.mysql {
        let open = proxy.drain(DRAIN_LIMIT.saturating_sub(draining.elapsed()));
        if open > 0 {
            log::warn!("{open} MySQL connections still running a command after {DRAIN_LIMIT:?}: closing them");
        }
    }
    if let Some(disk) = &disk {
        disk.close();
    }
    if let Some(sql) = shared.sql.as_ref().and_then(|s| s.get()) {
        // Open batch transactions (w_batch_size > 1) are committed before exit.
        if let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() {
            if let Err(e) = rt.block_on(sql.set.commit_all()) {
                log::error!("containers: committing at shutdown: {e}");
            }
        }
    }
    if let Some(pidfile) = &cfg.pidfile {
        let _ = std::fs::remove_file(pidfile);
    }
    if let Some(path) = &cfg.unix_socket {
        let _ = std::fs::remove_file(path);
    }
    log::info!("stopped");
    std::process::exit(0);
}

/// Safe defaults: without `-Y` the memcached protocols have no authentication, so a
/// listener reachable from other hosts is said at start, at the default level.
fn warn_if_open(addr: std::net::SocketAddr, proto: &str) {
    if !addr.ip().is_loopback() {
        log::warn!(
            "{proto} {addr} is reachable from other hosts and has no authentication: anyone who can \
             connect can read, change and flush every item. Listen on loopback (-l 127.0.0.1) or \
             firewall the port"
        );
    }
}

/// Block SIGINT/SIGTERM/SIGHUP in every thread so that one thread can wait for them.
fn block_signals() {
    let set = unix::handled_signals();
    // SAFETY: a valid signal set; the old mask is not asked for.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

mod unix;
