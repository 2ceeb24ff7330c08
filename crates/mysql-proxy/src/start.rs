//! Starting the query cache and its feeds (metadata task, binlog follower).

use std::sync::Arc;

use querycache::config::Config;
use querycache::QueryCache;

use binlog::account::Problem;
use config::mysql::{CacheType, MysqlConfig};
use sql_source::feeds::Feeds;

use binlog::health::{Health, Who};

/// The query cache, as its account check speaks of it.
pub const WHO: Who =
    Who { name: "mysql proxy", degraded: "not caching, every query goes to the backend", stats: "mysql_proxy" };

/// The query cache and the check of the account that keeps it fresh (none with
/// `--query-cache-type OFF`; no cache without `--mysql-user`, which the health says).
pub type Started = (Option<Arc<QueryCache>>, Option<Arc<Health>>);

/// Checks `--mysql-user` against the backend ([`Health`]), creates the cache (offline until
/// the binlog flows) and starts its feeds; no cache with `--query-cache-type OFF` or without
/// `--mysql-user` (then the proxy caches nothing).
pub fn start(cfg: &MysqlConfig, feeds: &Feeds) -> std::io::Result<Started> {
    let mode = cfg.cache_type;
    if mode == CacheType::Off {
        return Ok((None, None));
    }
    let Some(user) = cfg.user.clone() else {
        let health = Health::misconfigured(
            WHO,
            Problem {
                check: "no_user",
                blocking: true,
                message: "no --mysql-user: without following the backend's binlog, cached results could be changed \
                      behind the proxy's back; fix: give --mysql-user (REPLICATION SLAVE, BINLOG MONITOR and SELECT \
                      on the cached databases) and its password"
                    .into(),
            },
        );
        return Ok((None, Some(health)));
    };
    let password = cfg.password()?;
    if password.is_empty() {
        log::warn!(
            "mysql proxy: --mysql-user {user} has no password (no --mysql-password-file, no \
             SQLCACHED_MYSQL_PASSWORD): logging in without one"
        );
    }
    let backend = cfg.backend.clone().unwrap_or_default();
    let account = binlog::Config {
        backend: backend.clone(),
        user: user.clone(),
        password: password.clone(),
        server_id: cfg.server_id(),
        start: None,
    };
    let health = Health::start(WHO, account.clone());
    let qc = QueryCache::new(Config {
        size: cfg.cache_size,
        limit: cfg.cache_limit,
        mode,
        in_transactions: cfg.in_transactions,
    });
    qc.set_online(false);
    let cache = Arc::new(qc);
    let (host, port) = split_host_port(&backend)?;
    let opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname(host)
        .tcp_port(port)
        .user(Some(user))
        .pass(Some(password))
        .prefer_socket(false);
    crate::metadata::spawn(cache.clone(), opts.into())?;
    let sink = crate::feed::sink(cache.clone(), backend.clone());
    let feed = binlog::subscribe(feeds, account, "the query cache", true, false, sink);
    if cfg.max_lag_ms == 0 {
        log::warn!(
            "mysql proxy: --query-cache-max-lag 0: cached results are served however far the binlog follower is behind"
        );
    }
    let fresh = sql_source::fresh::Freshness::new(&feed, cfg.max_lag_ms, "the query cache");
    cache.set_freshness(Box::new(move || fresh.fresh()));
    Ok((Some(cache), Some(health)))
}

/// Splits `host:port` (`[v6]:port` too).
fn split_host_port(addr: &str) -> std::io::Result<(String, u16)> {
    let bad =
        || std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("--mysql-backend {addr}: want host:port"));
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok((host.to_string(), port.parse().map_err(|_| bad())?))
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_port() {
        assert_eq!(super::split_host_port("db:3306").unwrap(), ("db".to_string(), 3306));
        assert_eq!(super::split_host_port("[::1]:3307").unwrap(), ("::1".to_string(), 3307));
        assert!(super::split_host_port("db").is_err());
    }
}
