//! The metadata task: fills the query cache's schema registry (base table or view, the
//! columns of its primary key, unique keys and other indexes with their types and
//! collations, the columns an UPDATE changes by itself) from the backend's `information_schema`,
//! for the tables statements asked about, with the `--mysql-user` account; and loads the
//! side-effect graph (triggers, cascading foreign keys, stored functions) and the global
//! `sql_mode` at start and after every DDL.

use std::sync::Arc;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, Value};
use querycache::schema::{PkColumn, TableInfo};
use querycache::types::TableName;

use querycache::QueryCache;

/// Tables looked up per round trip.
const BATCH: usize = 64;

/// Starts the task on its own thread (with a current-thread runtime, as mysql_async needs).
pub fn spawn(cache: Arc<QueryCache>, opts: Opts) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    std::thread::Builder::new().name("mysql-metadata".into()).spawn(move || rt.block_on(run(cache, opts)))?;
    Ok(())
}

async fn run(cache: Arc<QueryCache>, opts: Opts) {
    let registry = cache.schema();
    let mut conn: Option<Conn> = None;
    let mut pending: Vec<TableName> = Vec::new();
    // The last failure logged at the default level (each outage once).
    let mut failing: Option<String> = None;
    loop {
        if pending.is_empty() && !registry.effects_stale() {
            registry.wanted_notify().notified().await;
        }
        pending.extend(registry.wanted());
        pending.sort();
        pending.dedup();
        if pending.is_empty() && !registry.effects_stale() {
            continue;
        }
        if conn.is_none() {
            match Conn::new(opts.clone()).await {
                Ok(c) => {
                    if failing.take().is_some() {
                        log::info!("mysql metadata: connected to the backend again");
                    }
                    conn = Some(c)
                }
                Err(e) => {
                    let msg = engine::errors::cause(&e);
                    if failing.as_deref() != Some(msg.as_str()) {
                        log::warn!("mysql metadata: cannot connect to the backend: {msg}; tables not yet known are not cached meanwhile");
                        failing = Some(msg);
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        if registry.take_effects_stale() {
            match load_effects(c).await {
                Ok((fx, sql_mode)) => {
                    cache.set_global_sql_mode(&sql_mode);
                    registry.set_effects(fx);
                }
                Err(e) => {
                    log::warn!("mysql metadata: cannot read triggers, foreign keys and functions: {e}");
                    registry.effects_changed();
                    conn = None;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            }
        }
        if pending.is_empty() {
            continue;
        }
        let batch: Vec<TableName> = pending.drain(..pending.len().min(BATCH)).collect();
        match fetch(c, &batch).await {
            Ok(infos) => {
                for (t, info) in batch.iter().zip(infos) {
                    registry.set_table(&t.db, &t.table, info);
                }
            }
            Err(e) => {
                log::warn!("mysql metadata: {e}");
                pending.extend(batch);
                conn = None;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// The side-effect graph (`binlog::load_effects`, the reading the binlog follower uses
/// too) and `@@GLOBAL.sql_mode`.
async fn load_effects(c: &mut Conn) -> mysql_async::Result<(querycache::Effects, String)> {
    let fx = binlog::load_effects(c).await?;
    let mode: Option<String> = c.query_first("SELECT @@GLOBAL.sql_mode").await?;
    Ok((fx, mode.unwrap_or_default()))
}

/// What `information_schema` says about each table of `tables` (in order); a table that
/// does not exist is "not a base table" until DDL makes the registry forget it.
async fn fetch(c: &mut Conn, tables: &[TableName]) -> mysql_async::Result<Vec<TableInfo>> {
    let pairs = vec!["(?, ?)"; tables.len()].join(", ");
    let params: Vec<Value> = tables.iter().flat_map(|t| [Value::from(&*t.db), Value::from(&*t.table)]).collect();
    let types: Vec<(String, String, String)> = c
        .exec(
            format!(
                "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES \
                 WHERE (TABLE_SCHEMA, TABLE_NAME) IN ({pairs})"
            ),
            params.clone(),
        )
        .await?;
    // Every column of every index (PRIMARY included), with its type and collation.
    type KeyRow = (String, String, String, u8, String, String, Option<String>);
    let keys: Vec<KeyRow> = c
        .exec(
            format!(
                "SELECT s.TABLE_SCHEMA, s.TABLE_NAME, s.INDEX_NAME, s.NON_UNIQUE, s.COLUMN_NAME, c.DATA_TYPE, \
                 c.COLLATION_NAME FROM information_schema.STATISTICS s JOIN information_schema.COLUMNS c \
                 ON c.TABLE_SCHEMA = s.TABLE_SCHEMA AND c.TABLE_NAME = s.TABLE_NAME AND c.COLUMN_NAME = s.COLUMN_NAME \
                 WHERE (s.TABLE_SCHEMA, s.TABLE_NAME) IN ({pairs}) \
                 ORDER BY s.TABLE_SCHEMA, s.TABLE_NAME, s.INDEX_NAME, s.SEQ_IN_INDEX"
            ),
            params.clone(),
        )
        .await?;
    // Columns an UPDATE may change without naming them (ON UPDATE, generated columns).
    let implicit: Vec<(String, String, String)> = c
        .exec(
            format!(
                "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS \
                 WHERE (TABLE_SCHEMA, TABLE_NAME) IN ({pairs}) \
                 AND (EXTRA LIKE '%on update%' OR EXTRA LIKE '%generated%')"
            ),
            params,
        )
        .await?;
    Ok(tables
        .iter()
        .map(|t| {
            let base = types.iter().any(|(db, name, ty)| {
                *db == *t.db && *name == *t.table && (ty == "BASE TABLE" || ty == "SYSTEM VERSIONED")
            });
            if !base {
                return TableInfo::not_base();
            }
            let mut indexes: Vec<(&str, bool, Vec<PkColumn>)> = Vec::new();
            for (_, _, index, non_unique, col, ty, coll) in keys.iter().filter(|k| *k.0 == *t.db && *k.1 == *t.table) {
                let c = PkColumn::new(col, ty, coll.as_deref());
                match indexes.last_mut() {
                    Some((i, _, cols)) if *i == index.as_str() => cols.push(c),
                    _ => indexes.push((index, *non_unique == 0, vec![c])),
                }
            }
            let pk = indexes.iter().position(|(i, ..)| *i == "PRIMARY").map(|p| indexes.remove(p).2);
            let info = indexes.into_iter().fold(TableInfo::base(pk.unwrap_or_default()), |info, (_, unique, cols)| {
                if unique {
                    info.with_unique(cols)
                } else {
                    info.with_index(cols)
                }
            });
            implicit
                .iter()
                .filter(|(db, name, _)| *db == *t.db && *name == *t.table)
                .fold(info, |info, (_, _, col)| info.with_implicit(col))
        })
        .collect())
}
