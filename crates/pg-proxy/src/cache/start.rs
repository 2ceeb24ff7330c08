//! Starting the query cache: its WAL feed (the server's shared follower of `--pg-backend`'s
//! `--pg-database`, through `--pg-slot`), its freshness bound, and its catalog reader, which
//! every 250 ms reads what names mean and adds the tables that may be cached to the
//! publication (a table enters the cache only once it is published, so that every change
//! to it reaches the WAL feed).

use std::sync::Arc;
use std::time::Duration;

use config::postgres::PostgresConfig;
use source_postgres::follower::FollowConfig;
use source_postgres::Connection;
use sql_source::check::{Check, Verdict};
use sql_source::feeds::{Feeds, Pass, Sink};

use super::catalog::{self, Catalog};
use super::PgCache;

/// How often the catalog is read (a table created since is cached from its next read on).
pub const CATALOG_EVERY: Duration = Duration::from_millis(250);

/// The running cache of the front, or None (said at start, at the default level, why).
pub fn start(cfg: &PostgresConfig, feeds: &Feeds) -> Result<Option<(Arc<PgCache>, String)>, String> {
    if !cfg.cache {
        log::info!("postgres proxy: query cache off (--pg-query-cache off): every statement goes to the server");
        return Ok(None);
    }
    let Some(user) = &cfg.user else {
        log::warn!(
            "postgres proxy: query cache OFF: it follows the WAL as the proxy's own account: give --pg-user (a role \
             with REPLICATION) and its password in {}; every statement goes to the server meanwhile",
            config::postgres::PASSWORD_ENV
        );
        return Ok(None);
    };
    let password = cfg.password().map_err(|e| e.to_string())?;
    let conn = crate::tls::source_config(cfg, password)?;
    let backend = format!("{}/{}", cfg.backend.clone().unwrap_or_default(), cfg.database);
    let follow = FollowConfig {
        conn: conn.clone(),
        backend: backend.clone(),
        slot: cfg.slot.clone(),
        publication: cfg.publication.clone(),
        tables: Vec::new(),
        confirm_delay: Duration::ZERO,
        ddl_trigger: cfg.ddl_trigger,
    };
    match follow.check(&[], Duration::from_secs(5)) {
        Verdict::Good { .. } => log::info!(
            "postgres proxy: query cache of {} MiB following the WAL of {backend} as {user} (slot {}, publication {})",
            cfg.cache_size >> 20,
            cfg.slot,
            cfg.publication
        ),
        Verdict::Wrong(problems) => log::warn!(
            "postgres proxy: query cache DEGRADED (every statement goes to the server until this is fixed): {}",
            problems.join("; ")
        ),
        Verdict::Unreachable(why) => log::warn!(
            "postgres proxy: query cache offline until {backend} answers ({why}): every statement goes to the server"
        ),
    }
    if !cfg.ddl_trigger {
        log::info!(
            "postgres proxy: DDL, GRANT/REVOKE and policy changes made on the server directly are seen by the catalog \
             reader within {} ms (--pg-ddl-trigger: event triggers put them in the WAL, seen at once; needs a superuser)",
            CATALOG_EVERY.as_millis()
        );
    }
    let mut cache = PgCache::new(cfg.cache_size, cfg.cache_limit);
    cache.in_transactions = cfg.cache_in_transactions;
    let cache = Arc::new(cache);
    let c = cache.clone();
    let sink: Sink = Box::new(move |change, pass| {
        // A recheck drops what a fill may have read before the commit was visible.
        if pass == Pass::Recheck || !matches!(change, sql_source::Change::Connected) || c.catalog_ready() {
            c.apply(change);
        }
    });
    let feed = source_postgres::follower::subscribe(feeds, follow, "the PostgreSQL query cache", true, false, sink);
    let fresh = sql_source::fresh::Freshness::new(&feed, cfg.cache_max_lag_ms, "the PostgreSQL query cache");
    cache.set_freshness(Box::new(move || fresh.fresh()));
    let (c, publication) = (cache.clone(), cfg.publication.clone());
    std::thread::Builder::new()
        .name("sqlcached-pg-catalog".into())
        .spawn(move || catalog_loop(c, conn, publication, feed))
        .map_err(|e| format!("postgres proxy: cannot start the catalog reader: {e}"))?;
    Ok(Some((cache, cfg.database.clone())))
}

/// Reads the catalog every [`CATALOG_EVERY`], adds publishable tables to the publication.
fn catalog_loop(
    cache: Arc<PgCache>,
    conn: source_postgres::Config,
    publication: String,
    feed: Arc<sql_source::feeds::Feed>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return log::error!("postgres proxy: catalog reader: {e}"),
    };
    rt.block_on(async {
        let mut c: Option<Connection> = None;
        let mut refused: Vec<String> = Vec::new();
        let mut failing = false;
        // Tables added to the publication, by the snapshot xmax at that moment: a transaction
        // that began before the ALTER is not in the WAL feed for them (pgoutput decides with
        // the transaction's catalog snapshot), so they are cached only once every such
        // transaction (prepared ones included) has ended.
        let mut joining: std::collections::HashMap<(String, String), u64> = std::collections::HashMap::new();
        loop {
            if c.is_none() {
                c = Connection::connect(&conn, false).await.ok();
            }
            let read = match c.as_mut() {
                Some(c) => c.simple_query(&catalog::query(&publication)).await.map_err(|e| e.to_string()),
                None => Err("cannot connect".to_string()),
            };
            match read {
                Ok(results) => {
                    failing = false;
                    let mut tables = catalog::tables(results.first().map_or(&[][..], |r| &r.rows));
                    let missing: Vec<(String, String, String)> = tables
                        .iter()
                        .filter(|t| t.publishable && !t.published)
                        .map(|t| (t.schema.clone(), t.name.clone(), format!("{}.{}", quote(&t.schema), quote(&t.name))))
                        .filter(|(_, _, n)| !refused.contains(n))
                        .collect();
                    if !joining.is_empty() {
                        let xmin = match c.as_mut() {
                            Some(c) => snapshot(c, "pg_snapshot_xmin").await,
                            None => None,
                        };
                        joining.retain(|_, xmax| xmin.is_none_or(|x| x < *xmax));
                        for t in tables.iter_mut() {
                            if joining.contains_key(&(t.schema.clone(), t.name.clone())) {
                                t.not_cached = Some("joined the publication: waiting for older transactions");
                            }
                        }
                    }
                    cache.set_catalog(Catalog::new(tables));
                    let mut added = !missing.is_empty();
                    if let (Some(conn), true) = (c.as_mut(), added) {
                        for (schema, table, name) in missing {
                            let sql = format!("ALTER PUBLICATION {} ADD TABLE {name}", quote(&publication));
                            match conn.simple_query(&sql).await {
                                Ok(_) => {
                                    let xmax = snapshot(conn, "pg_snapshot_xmax").await.unwrap_or(u64::MAX);
                                    joining.insert((schema, table), xmax);
                                }
                                // The follower has not made it yet: next round.
                                Err(source_postgres::Error::PublicationMissing(_)) => {
                                    added = false;
                                    break;
                                }
                                Err(e) => {
                                    log::warn!(
                                    "postgres proxy: {name} cannot be added to publication {publication} ({e}): its \
                                     reads are not cached (add it as its owner: {sql})"
                                );
                                    refused.push(name);
                                }
                            }
                        }
                    }
                    // The cache answers only once it knows the catalog and the WAL flows.
                    if feed.stats().connected && !cache.is_online() {
                        cache.set_online(true);
                    }
                    if added {
                        continue; // read again at once: the tables just published become cacheable
                    }
                }
                Err(e) => {
                    c = None;
                    if !failing {
                        log::warn!(
                            "postgres proxy: the catalog cannot be read ({e}); the cache knows the tables it knew"
                        );
                    }
                    failing = true;
                }
            }
            tokio::time::sleep(super::start::CATALOG_EVERY).await;
        }
    });
}

/// `pg_snapshot_xmin` or `pg_snapshot_xmax` of the current snapshot (None: not read).
async fn snapshot(c: &mut Connection, which: &str) -> Option<u64> {
    let r = c.simple_query(&format!("SELECT {which}(pg_current_snapshot())::text")).await.ok()?;
    r.first()?.rows.first()?.first()?.as_deref()?.parse().ok()
}

fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}
