//! `--check-config`: validate the settings and what they point at, without serving.
//! Prints one line per check; the exit code says whether all passed.

use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use engine::{Engine, EngineConfig};

use config::invalidate::RuleSource;
use config::mysql::CacheType;
use config::Config;

/// How long a backend gets to accept a TCP connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Run every check; true when all passed.
pub fn run(cfg: &Config) -> bool {
    let mut ok = true;
    let mut say = |passed: bool, what: String| {
        println!("{} {what}", if passed { "ok:  " } else { "FAIL:" });
        ok &= passed;
    };
    say(
        true,
        format!("settings parse{}", cfg.config_file.as_ref().map(|f| format!(" (--config {f})")).unwrap_or_default()),
    );
    match (cfg.io_uring, crate::uring::probe()) {
        (config::IoUring::Off, _) => say(true, "--io-uring off: memcached connections on epoll".into()),
        (mode, Ok(())) => {
            say(true, format!("--io-uring {mode}: io_uring available: memcached connections on io_uring"))
        }
        (config::IoUring::On, Err(why)) => say(false, format!("--io-uring on: io_uring is not available here: {why}")),
        (_, Err(why)) => say(true, format!("--io-uring auto: io_uring is not available ({why}): epoll")),
    }
    if let Some(dir) = &cfg.persistence.data_dir {
        let p = std::path::Path::new(dir);
        let parent = p.parent().filter(|q| !q.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        let (passed, how) = if p.exists() && !p.is_dir() {
            (false, "is not a directory (a file of that name is in the way)")
        } else if p.is_dir() {
            let w = dir_writable(p);
            (w, if w { "exists and is writable" } else { "exists but is not writable" })
        } else if parent.is_dir() && dir_writable(parent) {
            (true, "will be created at start")
        } else {
            (false, "does not exist and cannot be created (its parent is missing or not writable)")
        };
        say(passed, format!("--data-dir {dir}: {how}"));
    }
    if let Some(path) = &cfg.containers {
        let engine = Engine::new(EngineConfig {
            memory_limit: cfg.memory_limit,
            item_size_max: cfg.item_size_max,
            evict: true,
            use_cas: !cfg.disable_cas,
            shards: 64,
        });
        let feeds = crate::feeds::SourceFeeds::new(cfg.mysql.server_id());
        match crate::containers::load(path, &crate::containers::Budget::of(&engine), false, &feeds) {
            Ok(sql) => {
                say(true, format!("--containers {path}: every container's table and columns checked"));
                // The caching containers follow the binlog with the backend's account.
                if let Some(verdict) = sql.health.as_ref().and_then(|h| h.verdict()) {
                    for (passed, line) in account_lines(&verdict, "--containers (caching)") {
                        say_or_warn(&mut say, passed, line);
                    }
                }
            }
            Err(e) => say(false, format!("--containers {path}: {e}")),
        }
    }
    if cfg.tls.enabled {
        match crate::tls::Tls::new(&cfg.tls, 0) {
            Ok(_) => say(true, "-Z: certificate, key and CA files load and match".into()),
            Err(e) => say(false, format!("-Z: {e}")),
        }
    }
    if cfg.sasl {
        match crate::sasl::Sasl::from_env() {
            Ok(s) => say(true, format!("-S: password file {} is readable", s.path)),
            Err(e) => say(false, e),
        }
    }
    if cfg.mysql.listen.is_some() && (cfg.mysql.tls_cert.is_some() || cfg.mysql.backend_tls_ca.is_some()) {
        match mysql_proxy::tls::ProxyTls::new(&cfg.mysql) {
            Ok(_) => say(true, "MySQL proxy TLS: certificate, key and CA files load and match".into()),
            Err(e) => say(false, format!("MySQL proxy TLS: {e}")),
        }
    }
    if cfg.postgres.listen.is_some() {
        for (passed, line) in pg_proxy::check::run(&cfg.postgres) {
            say(passed, line);
        }
    }
    if !cfg.invalidate.rules.is_empty() {
        let engine = std::sync::Arc::new(Engine::new(EngineConfig::default()));
        let rules = crate::invalidate::Rules::new(&cfg.invalidate, engine);
        for source in [RuleSource::Mysql, RuleSource::Postgres] {
            let mine = rules.of(source);
            if mine.is_empty() {
                continue;
            }
            match crate::invalidate::sources::Source::of(cfg, source) {
                Ok(src) => {
                    for (passed, what) in crate::invalidate::check::for_check_config(&*src.check(), &mine) {
                        say_or_warn(&mut say, passed, what);
                    }
                }
                Err(e) => say(false, format!("--invalidate: {e}")),
            }
        }
    }
    if let Some(backend) = &cfg.mysql.backend {
        let caching = cfg.mysql.listen.is_some() && cfg.mysql.cache_type != CacheType::Off;
        match (&cfg.mysql.user, caching) {
            // The same check as at start: log in, replication rights, the binlog's settings.
            (Some(user), true) => match cfg.mysql.password() {
                Ok(password) => {
                    let account = binlog::Config {
                        backend: backend.clone(),
                        user: user.clone(),
                        password,
                        server_id: 0,
                        start: None,
                    };
                    let verdict = binlog::account::check(&account, CONNECT_TIMEOUT);
                    for (passed, line) in account_lines(&verdict, "--mysql-listen") {
                        say_or_warn(&mut say, passed, line);
                    }
                }
                Err(e) => say(false, format!("--mysql-password-file: {e}")),
            },
            _ => match reachable(backend) {
                Ok(()) => say(true, format!("--mysql-backend {backend}: accepts connections")),
                Err(e) => say(false, format!("--mysql-backend {backend}: {e}")),
            },
        }
        if cfg.mysql.listen.is_some() && cfg.mysql.user.is_none() {
            say(false, "--mysql-listen without --mysql-user: the proxy would cache nothing".into());
        }
    }
    ok
}

/// A check's line: passed (`ok:`), failed (`FAIL:`), or a warning (`warn:`, not a failure).
fn say_or_warn(say: &mut impl FnMut(bool, String), passed: Option<bool>, line: String) {
    match passed {
        Some(p) => say(p, line),
        None => println!("warn: {line}"),
    }
}

/// The lines of an account check (`binlog::account`) for `what`: Some(passed), or None for
/// a warning (the binlog can be followed, more coarsely).
fn account_lines(verdict: &binlog::account::Verdict, what: &str) -> Vec<(Option<bool>, String)> {
    use binlog::account::Verdict;
    match verdict {
        Verdict::Unreachable(why) => vec![(Some(false), format!("{what}: the backend does not answer: {why}"))],
        Verdict::Checked { version, problems } => {
            let mut out = Vec::new();
            if !problems.iter().any(|p| p.check == "login") {
                out.push((Some(true), format!("{what}: the account logs in ({version})")));
            }
            for p in problems {
                out.push((if p.blocking { Some(false) } else { None }, format!("{what}: {}", p.message)));
            }
            if !problems.iter().any(|p| p.blocking) {
                out.push((
                    Some(true),
                    format!("{what}: replication rights and the binlog checked: its changes can be followed"),
                ));
            }
            out
        }
    }
}

fn dir_writable(dir: &std::path::Path) -> bool {
    let probe = dir.join(format!(".sqlcached-check-{}", std::process::id()));
    let w = std::fs::write(&probe, b"").is_ok();
    let _ = std::fs::remove_file(&probe);
    w
}

fn reachable(addr: &str) -> Result<(), String> {
    let addrs: Vec<_> = addr.to_socket_addrs().map_err(|e| format!("cannot resolve: {e}"))?.collect();
    let mut last = String::from("no address");
    for a in addrs {
        match TcpStream::connect_timeout(&a, CONNECT_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(e) => last = format!("{a}: {e}"),
        }
    }
    Err(last)
}

/// `--pg-drop-slot`: drops `--pg-slot` and `--pg-publication` on `--pg-backend` (what a
/// retired sqlcached leaves behind: an abandoned slot holds WAL on the server for ever).
/// Prints what it did; true if both are gone.
pub fn drop_pg_slot(cfg: &Config) -> bool {
    use source_postgres::replication::ReplicationClient;
    let pg = &cfg.postgres;
    let conn = match pg.password().map_err(|e| e.to_string()).and_then(|p| pg_proxy::tls::source_config(pg, p)) {
        Ok(c) => c,
        Err(e) => {
            println!("FAIL: --pg-drop-slot: {e}");
            return false;
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            println!("FAIL: --pg-drop-slot: {e}");
            return false;
        }
    };
    let backend = pg.backend.clone().unwrap_or_default();
    rt.block_on(async {
        let mut client = match ReplicationClient::connect(&conn).await {
            Ok(c) => c,
            Err(e) => {
                println!("FAIL: --pg-drop-slot: {backend}: {e}");
                return false;
            }
        };
        let mut ok = true;
        match client.drop_slot(&pg.slot, false).await {
            Ok(()) => println!("ok: dropped replication slot {} on {backend}", pg.slot),
            Err(source_postgres::Error::SlotMissing(_)) => {
                println!("ok: replication slot {} does not exist on {backend}", pg.slot)
            }
            Err(e @ source_postgres::Error::SlotInUse(_)) => {
                ok = false;
                println!("FAIL: {e} (a running sqlcached follows it: stop it first)");
            }
            Err(e) => {
                ok = false;
                println!("FAIL: dropping replication slot {}: {e}", pg.slot);
            }
        }
        match client.connection().simple_query(source_postgres::follower::ddl::UNINSTALL).await {
            Ok(_) => println!("ok: the DDL event triggers (if any) are gone"),
            Err(e) => println!("warn: the DDL event triggers could not be dropped: {e}"),
        }
        match client.drop_publication(&pg.publication).await {
            Ok(()) => println!("ok: publication {} is gone from {backend} (database {})", pg.publication, pg.database),
            Err(e) => {
                ok = false;
                println!("FAIL: dropping publication {}: {e}", pg.publication);
            }
        }
        client.close().await;
        ok
    })
}
