//! Binlog invalidation for the `caching` policy on MariaDB/MySQL (crate `binlog`): a
//! change made to a container's table by anyone (SQL clients included) drops the memory
//! copies of the changed keys as soon as the follower reads it, instead of leaving them
//! stale for up to `cache_ttl`.
//!
//! * Row events (`binlog_format = ROW`): every row image's key column value (before and
//!   after images) is removed from that container's memory copy.
//! * A change to the whole table (TRUNCATE, DDL, statement-format DML with what its
//!   triggers and cascades wrote), the database, or anything (a gap in the stream) empties
//!   the memory copy of every container concerned; so does a broken stream (changes may be
//!   missed until the follower is back). What changes no row (privileges, stored programs,
//!   a table's indexes, FLUSH, ANALYZE, OPTIMIZE) keeps them (docs/invalidation.md).
//! * Keys are matched byte for byte as the binlog gives them (integers as decimal
//!   digits): with a case-insensitive key collation a copy cached under another spelling
//!   of the key still waits for `cache_ttl`.
//! * While the follower is further behind the binlog head than `max_lag_ms` (default
//!   100), gets skip the memory copy and read the table (`container_<c>_lag_bypasses`).
//! * Needs an account with replication rights (REPLICATION SLAVE, BINLOG MONITOR). It is
//!   checked at start ([`::binlog::health`], the check the MySQL proxy uses): without them
//!   the start says `containers: DEGRADED: ...` with the GRANT to run, `stats` shows
//!   `containers_binlog_degraded 1`, gets read the table (the follower never catches up,
//!   so `max_lag_ms` sends them there) until the account passes, checked every 10 s.

use std::sync::Arc;

use ::binlog::{Change, Value};
use engine::Engine;
use sql_containers::MysqlLogin;

use ::binlog::feeds::{Feeds, Pass};
use ::binlog::fresh::Freshness;
use ::binlog::health::{Health, Who};

/// One `caching` container's table and its memory copy.
pub struct Watched {
    /// Database of the table.
    pub db: String,
    /// Table name.
    pub table: String,
    /// Key column name.
    pub key_column: String,
    /// The container's memory copy.
    pub cache: Arc<Engine>,
    /// The container's counters (`invalidations`).
    pub stats: Arc<super::stats::ContainerStats>,
}

/// The bytes a memcached key has for a key column value (None: NULL).
fn key_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::Null => None,
        Value::Int(i) => Some(i.to_string().into_bytes()),
        Value::UInt(u) => Some(u.to_string().into_bytes()),
        Value::Bytes(b) => Some(b.clone()),
        Value::Other(s) => Some(s.clone().into_bytes()),
    }
}

/// Applies one change to the memory copies (`counted`: the first delivery, not a recheck,
/// which drops the same keys again uncounted).
pub fn apply(watched: &[Watched], change: &Change, counted: bool) {
    let same =
        |w: &Watched, db: &str, table: &str| w.db.eq_ignore_ascii_case(db) && w.table.eq_ignore_ascii_case(table);
    match change {
        Change::Rows { db, table, schema, rows, .. } => {
            for w in watched.iter().filter(|w| same(w, db, table)) {
                match schema.columns.iter().position(|c| c.eq_ignore_ascii_case(&w.key_column)) {
                    Some(i) => {
                        for k in rows.iter().filter_map(|r| r.get(i).and_then(key_bytes)) {
                            w.cache.access(&k, engine::Receipt::none()).remove();
                            if counted {
                                w.stats.invalidated(1);
                            }
                        }
                    }
                    None => flush(w, counted),
                }
            }
        }
        Change::Table { db, table } | Change::ManyRows { db, table } => {
            watched.iter().filter(|w| same(w, db, table)).for_each(|w| flush(w, counted))
        }
        Change::Database { db } => {
            watched.iter().filter(|w| w.db.eq_ignore_ascii_case(db)).for_each(|w| flush(w, counted))
        }
        Change::All { .. } | Change::Disconnected { .. } => watched.iter().for_each(|w| flush(w, counted)),
        // No row changed: privileges, stored programs, a table's keys (docs/containers.md).
        Change::Privileges { .. } | Change::Routines { .. } | Change::Keys { .. } | Change::Connected => {}
    }
}

/// Drops a container's whole memory copy (counted as one invalidation unless a recheck).
fn flush(w: &Watched, counted: bool) {
    w.cache.flush_all(0, engine::Receipt::none());
    if counted {
        w.stats.invalidated(1);
    }
}

/// The caching containers, as their account check speaks of them.
const WHO: Who = Who {
    name: "containers",
    degraded: "the caching containers cannot follow the binlog, their gets read the table",
    stats: "containers_binlog",
};

/// Checks the backend account (logging what it finds) and follows the backend's binlog
/// for `watched` (nothing to do if it is empty), on the server's feed of that backend
/// (shared with the query cache and the invalidation rules): the freshness rule of
/// `max_lag_ms` on that feed, and the account's health.
pub fn start(
    login: MysqlLogin,
    watched: Vec<Watched>,
    feeds: &Feeds,
    max_lag_ms: u64,
) -> (Option<Arc<Freshness>>, Option<Arc<Health>>) {
    if watched.is_empty() {
        return (None, None);
    }
    let cfg = ::binlog::Config {
        backend: login.address,
        user: login.user,
        password: login.password,
        server_id: feeds.server_id,
        start: None,
    };
    let health = Health::start(WHO, cfg.clone());
    let sink: ::binlog::feeds::Sink = Box::new(move |change, pass| apply(&watched, change, pass == Pass::First));
    let feed = feeds.subscribe(cfg, "the caching containers", true, false, sink);
    if max_lag_ms == 0 {
        log::warn!("containers: max_lag_ms = 0: caching containers serve memory copies however far the binlog follower is behind");
    }
    (Some(Arc::new(Freshness::new(&feed, max_lag_ms, "the caching containers"))), Some(health))
}
