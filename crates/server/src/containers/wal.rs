//! WAL invalidation for the `caching` policy on PostgreSQL: the same rules as the binlog's
//! (`binlog.rs`'s [`apply`]: a row changed by anyone drops that key's memory copy, a
//! whole-table change or a broken stream empties the copy), fed by the server's WAL
//! follower of the containers' database (logical replication through the slot
//! `sqlcached_containers` and the publication of the same name, made at first start; or the
//! follower `--pg-slot` already opened for the same `host:port/db`).
//!
//! What the account needs (REPLICATION, the right to create the publication or a
//! publication listing the tables, the replica identity) is checked at start and said at
//! the default level (`containers: DEGRADED: ...`); while the follower is not flowing or
//! further behind than `max_lag_ms`, gets read the table.

use std::sync::Arc;
use std::time::Duration;

use source_postgres::follower::FollowConfig;
use sql_source::check::{Check, Verdict, Wanted};
use sql_source::feeds::Pass;
use sql_source::fresh::Freshness;

use super::binlog::{apply, Watched};
use crate::feeds::SourceFeeds;

/// The slot and publication the containers' follower makes when it is the first.
pub const SLOT: &str = "sqlcached_containers";

/// Follows the WAL of the containers' PostgreSQL (`url`, the `[backend]` URL) for `watched`.
pub fn start(url: &str, watched: Vec<Watched>, feeds: &SourceFeeds, max_lag_ms: u64) -> Option<Arc<Freshness>> {
    if watched.is_empty() {
        return None;
    }
    let conn = match source_postgres::Config::from_url(url) {
        Ok(c) => c,
        Err(e) => {
            log::warn!("containers: DEGRADED: caching containers cannot follow the WAL ({e}): gets read the table");
            return None;
        }
    };
    let backend = format!("{}:{}/{}", conn.host, conn.port, conn.dbname);
    let mut tables: Vec<(String, String)> = Vec::new();
    for w in &watched {
        let t = (w.db.clone(), w.table.clone());
        if !tables.contains(&t) {
            tables.push(t);
        }
    }
    let cfg = FollowConfig {
        conn,
        backend: backend.clone(),
        slot: SLOT.into(),
        publication: SLOT.into(),
        tables,
        confirm_delay: Duration::ZERO,
        ddl_trigger: false,
    };
    let wanted: Vec<Wanted> = watched
        .iter()
        .map(|w| Wanted { db: w.db.clone(), table: w.table.clone(), columns: vec![w.key_column.clone()] })
        .collect();
    match cfg.check(&wanted, Duration::from_secs(5)) {
        Verdict::Good { notes } => {
            for n in notes.iter().filter_map(|n| n.strip_prefix("WARNING: ")) {
                log::warn!("containers: {n}");
            }
            log::info!("containers: caching containers follow the WAL of {backend}");
        }
        Verdict::Wrong(p) => log::warn!(
            "containers: DEGRADED: the caching containers cannot follow the WAL of {backend}, their gets read the \
             table until this is fixed: {}",
            p.join("; ")
        ),
        Verdict::Unreachable(why) => {
            log::warn!("containers: the WAL of {backend} cannot be followed yet ({why}): gets read the table meanwhile")
        }
    }
    let sink: sql_source::feeds::Sink = Box::new(move |change, pass| apply(&watched, change, pass == Pass::First));
    let feed = source_postgres::follower::subscribe(&feeds.wal, cfg, "the caching containers", true, false, sink);
    if max_lag_ms == 0 {
        log::warn!(
            "containers: max_lag_ms = 0: caching containers serve memory copies however far the WAL follower is behind"
        );
    }
    Some(Arc::new(Freshness::new(&feed, max_lag_ms, "the caching containers")))
}
