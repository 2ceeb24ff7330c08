//! Starting the query cache and its feeds (metadata task, binlog follower).

use std::sync::Arc;

use binlog::Change;
use querycache::config::{Config, Mode};
use querycache::types::{Invalidation, Source};
use querycache::QueryCache;

use super::binlog::Action;
use crate::config::mysql::{CacheType, MysqlConfig};
use crate::feeds::Feeds;

/// The query cache, kept fresh by the backend's binlog feed (`crate::feeds`).
pub struct SharedCache {
    /// The cache.
    pub qc: QueryCache,
}

/// Creates the cache (offline until the binlog flows) and starts its feeds; none with
/// `--query-cache-type OFF` or without `--mysql-user` (then the proxy caches nothing).
pub fn start(cfg: &MysqlConfig, feeds: &Feeds) -> std::io::Result<Option<Arc<SharedCache>>> {
    let mode = match cfg.cache_type {
        CacheType::On => Mode::On,
        CacheType::Demand => Mode::Demand,
        CacheType::Off => return Ok(None),
    };
    let Some(user) = cfg.user.clone() else {
        log::warn!(
            "mysql proxy: no --mysql-user: caching nothing (without following the backend's binlog, cached \
             results could be changed behind the proxy's back)"
        );
        return Ok(None);
    };
    let password = cfg.password()?;
    if password.is_empty() {
        log::warn!(
            "mysql proxy: --mysql-user {user} has no password (no --mysql-password-file, no \
             SQLCACHED_MYSQL_PASSWORD): logging in without one"
        );
    }
    let backend = cfg.backend.clone().unwrap_or_default();
    let qc = QueryCache::new(Config {
        size: cfg.cache_size,
        limit: cfg.cache_limit,
        mode,
        in_transactions: cfg.in_transactions,
    });
    qc.set_online(false);
    let cache = Arc::new(SharedCache { qc });
    let (host, port) = split_host_port(&backend)?;
    let opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname(host)
        .tcp_port(port)
        .user(Some(user.clone()))
        .pass(Some(password.clone()))
        .prefer_socket(false);
    super::metadata::spawn(cache.clone(), opts.into())?;
    let sink = super::binlog::sink(cache.clone(), backend.clone());
    let config = binlog::Config { backend, user, password, server_id: cfg.server_id(), start: None };
    feeds.subscribe(config, "the query cache", true, sink);
    Ok(Some(cache))
}

impl SharedCache {
    /// Applies one binlog change (see [`super::binlog::action`]).
    pub fn apply_binlog(&self, change: &Change, action: Action) {
        match action {
            Action::Online(on) => {
                self.qc.schema().clear();
                self.qc.schema().effects_changed();
                self.qc.set_online(on);
            }
            Action::Invalidate(inv) => {
                if !matches!(change, Change::Rows { .. }) {
                    // DDL (or a statement the binlog does not detail): triggers, foreign
                    // keys or functions may have changed.
                    self.qc.schema().effects_changed();
                }
                match &inv {
                    Invalidation::Table { db, table } if matches!(change, Change::Table { .. }) => {
                        self.qc.schema().forget(db, table)
                    }
                    Invalidation::Database { db } => self.qc.schema().forget_database(db),
                    Invalidation::All => self.qc.schema().clear(),
                    _ => {}
                }
                self.qc.invalidate(&inv, Source::Binlog);
            }
        }
    }

    /// Writes the cache's figures (the binlog's are [`Feeds::write_stats`]).
    pub fn write_stats(&self, sink: &mut dyn engine::stats::StatSink) {
        use engine::stats::Kind;
        let s = self.qc.stats();
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
        sink.stat("Qcache_online", Kind::Gauge, &u64::from(s.online));
        sink.stat("Qcache_bytes", Kind::Gauge, &s.bytes);
    }
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
