//! PostgreSQL backend: tokio-postgres, one connection per lane ([`super::lane`]), on a
//! runtime thread of its own (like the MySQL backend, so it works whatever runtime the
//! callers use). TLS per the URL's `sslmode` through rustls (source-postgres's client
//! configuration: `verify-ca` / `verify-full` check the certificate against
//! `sslrootcert`).
//!
//! * Containers that name no schema use `public` (in the URL's database); the plugin's
//!   tables are read from the schema `innodb_memcache` of that database, as on MySQL.
//! * Values travel as text both ways (`$1::text::numeric`, `col::text`; `bytea` as
//!   bytes), so any column type with a text form can be mapped ([`postgres_kind`]).
//! * Sessions run at READ COMMITTED (PostgreSQL's default) with `lock_timeout` set to
//!   `query_timeout_ms`; every statement is also bounded by `query_timeout_ms` on the
//!   client, and a connection that misses it is dropped (its transaction is lost, and
//!   reported so when it held acknowledged writes).
//! * Every operation runs on a lane (`thread_readers` / `thread_writers`, the MySQL
//!   backend's per-thread group commit, are not used here). With `w_batch_size` 1, plain
//!   `set`s queued on a writer lane are written together by one autocommitted upsert
//!   (group commit, `AsyncLane::set_group`): no BEGIN, no locking read, one statement;
//!   with `r_batch_size` 1, gets queued on a reader lane are read by one statement
//!   (`AsyncLane::read_group`).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use source_postgres::SslMode;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::SimpleQueryMessage;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::lane::AsyncLane;
use super::pgconn::{PgConn, PgDb, PgShared, Raw};
use super::{Backend, BackendStats, BoxFuture, Job, Lane, Router, Stats};
use crate::config::{BackendConfig, Options, PluginRows, Record};
use crate::error::BackendError;
use crate::ops::CasClock;
use crate::sql::Dialect;
use crate::validate::{postgres_kind, ColKind, ColumnInfo, IndexInfo, TableInfo};

/// The schema of containers that name none.
const DEFAULT_SCHEMA: &str = "public";
/// The schema holding the plugin's tables.
const PLUGIN_SCHEMA: &str = "innodb_memcache";

/// The tokio-postgres configuration and TLS connector for a `postgres://` URL.
fn client_config(
    url: &str,
    cfg: &BackendConfig,
) -> Result<(tokio_postgres::Config, Option<MakeRustlsConnect>), String> {
    let src = source_postgres::Config::from_url(url).map_err(|e| format!("backend.url: {e}"))?;
    let tls = source_postgres::tls::client_config(&src).map_err(|e| format!("backend.url: {e}"))?;
    let mut pc = tokio_postgres::Config::new();
    pc.host(&src.host).port(src.port).user(&src.user).dbname(&src.dbname);
    if let Some(p) = &src.password {
        pc.password(p);
    }
    pc.application_name("sqlcached-containers");
    pc.connect_timeout(Duration::from_millis(cfg.connect_timeout_ms));
    pc.keepalives(true);
    let mut options = format!("-c lock_timeout={}", cfg.query_timeout_ms);
    if let Some(o) = &src.options {
        options = format!("{o} {options}");
    }
    pc.options(&options);
    // tokio-postgres knows disable/prefer/require only; rustls's verifier (from
    // source-postgres) does verify-ca and verify-full.
    let (mode, tls) = match (src.sslmode, tls) {
        (_, None) => (tokio_postgres::config::SslMode::Disable, None),
        (SslMode::Prefer, Some((c, _))) => (tokio_postgres::config::SslMode::Prefer, Some(c)),
        (_, Some((c, _))) => (tokio_postgres::config::SslMode::Require, Some(c)),
    };
    pc.ssl_mode(mode);
    Ok((pc, tls.map(|c| MakeRustlsConnect::new((*c).clone()))))
}

/// The PostgreSQL backend: lanes on a runtime thread of its own.
pub(crate) struct PostgresBackend {
    router: Router,
    sh: Arc<PgShared>,
    rt: tokio::runtime::Handle,
}

impl PostgresBackend {
    /// Starts the runtime thread and the lanes (connections open when first needed).
    pub async fn start(cfg: &BackendConfig, opts: &Options, clock: Arc<CasClock>) -> Result<PostgresBackend, String> {
        let url = cfg.url.as_deref().ok_or("backend.url is required for PostgreSQL")?;
        let (pc, tls) = client_config(url, cfg)?;
        let writers = cfg.writers.unwrap_or(cfg.pool_size / 2).clamp(1, cfg.pool_size.max(2) - 1);
        let readers = cfg.pool_size.saturating_sub(writers).max(1);
        let query_timeout = Duration::from_millis(cfg.query_timeout_ms);
        let sh = Arc::new(PgShared {
            cfg: pc,
            tls,
            stats: Arc::new(Stats::default()),
            clock,
            connect_timeout: Duration::from_millis(cfg.connect_timeout_ms),
            query_timeout,
            down: Mutex::new(None),
        });
        let (w_batch, r_batch, interval) = (opts.w_batch_size, opts.r_batch_size, opts.bk_commit_interval);
        let (ready_tx, ready_rx) = oneshot::channel();
        let shared = sh.clone();
        std::thread::Builder::new()
            .name("sqlcached-postgres".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("PostgreSQL runtime: {e}")));
                        return;
                    }
                };
                rt.block_on(async move {
                    let mut tasks = Vec::new();
                    let mut mk = |writer: bool| {
                        let (tx, rx) = mpsc::unbounded_channel::<Job>();
                        let dirty = Arc::new(AtomicBool::new(false));
                        let limit = if writer { w_batch } else { r_batch };
                        let db = PgDb { sh: shared.clone(), conn: None };
                        let lane = AsyncLane::new(db, writer, limit, interval, dirty.clone());
                        tasks.push(tokio::spawn(lane.run(rx)));
                        Lane::new(Box::new(tx), dirty)
                    };
                    let w: Vec<Lane> = (0..writers).map(|_| mk(true)).collect();
                    let r: Vec<Lane> = (0..readers).map(|_| mk(false)).collect();
                    if ready_tx.send(Ok((w, r, tokio::runtime::Handle::current()))).is_err() {
                        return;
                    }
                    for t in tasks {
                        let _ = t.await;
                    }
                });
            })
            .map_err(|e| format!("cannot start the PostgreSQL thread: {e}"))?;
        let (w, r, rt) = ready_rx.await.map_err(|_| "PostgreSQL thread died at start".to_string())??;
        Ok(PostgresBackend { router: Router::new(w, r, query_timeout), sh, rt })
    }

    /// Runs start-up work on the backend's runtime with a new connection.
    async fn with_conn<T: Send + 'static>(
        &self,
        f: impl for<'c> FnOnce(&'c PgShared, &'c mut PgConn) -> BoxFuture<'c, Result<T, String>> + Send + 'static,
    ) -> Result<T, String> {
        let sh = self.sh.clone();
        let (tx, rx) = oneshot::channel();
        self.rt.spawn(async move {
            let r = match sh.connect().await {
                Ok(mut c) => f(&sh, &mut c).await,
                Err(e) => Err(e.to_string()),
            };
            let _ = tx.send(r);
        });
        rx.await.map_err(|_| "PostgreSQL runtime stopped".to_string())?
    }
}

/// A catalog query's rows, every value as text (None: NULL).
async fn rows_of(
    sh: &PgShared,
    c: &mut PgConn,
    sql: &str,
    params: &[&str],
) -> Result<Vec<Vec<Option<String>>>, String> {
    let params: Vec<Raw> = params.iter().map(|p| Raw(Some(p.as_bytes().to_vec()))).collect();
    let rows = c.query(sh, sql, &params).await.map_err(|e| e.into_backend().to_string())?;
    Ok(rows
        .iter()
        .map(|r| {
            (0..r.len())
                .map(|i| {
                    r.try_get::<_, Raw>(i).ok().and_then(|v| v.0).map(|b| String::from_utf8_lossy(&b).into_owned())
                })
                .collect()
        })
        .collect())
}

fn cell(r: &[Option<String>], i: usize) -> String {
    r.get(i).cloned().flatten().unwrap_or_default()
}

async fn describe(sh: &PgShared, c: &mut PgConn, schema: String, table: String) -> Result<Option<TableInfo>, String> {
    let ns = rows_of(sh, c, "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1::text", &[&schema]).await?;
    if ns.is_empty() {
        return Err(format!("schema '{schema}' does not exist (or the user cannot see it)"));
    }
    let t = rows_of(
        sh,
        c,
        "SELECT c.oid::text, c.relkind::text FROM pg_catalog.pg_class c \
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = $1::text AND c.relname = $2::text AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
        &[&schema, &table],
    )
    .await?;
    let Some(t) = t.first() else {
        return Ok(None);
    };
    let oid = cell(t, 0);
    if matches!(cell(t, 1).as_str(), "v" | "m") {
        return Err(format!("{schema}.{table} is a view; a container needs a table"));
    }
    let mut info = TableInfo::default();
    // The base type of a domain decides the kind; values are cast to the column's own
    // type (a domain's checks apply).
    let cols = rows_of(
        sh,
        c,
        "SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod), \
                CASE WHEN t.typtype = 'd' THEN bt.typname::text ELSE t.typname::text END, \
                CASE WHEN t.typtype = 'd' THEN bt.typtype::text ELSE t.typtype::text END, \
                a.attnotnull::text, pg_catalog.format_type(a.atttypid, NULL) \
         FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
         LEFT JOIN pg_catalog.pg_type bt ON bt.oid = t.typbasetype \
         WHERE a.attrelid = $1::text::oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        &[&oid],
    )
    .await?;
    for r in &cols {
        let (kind, exact) = match cell(r, 3).as_str() {
            "e" => (ColKind::Text, true),
            _ => postgres_kind(&cell(r, 2)),
        };
        info.columns.push(ColumnInfo {
            name: cell(r, 0),
            decl: cell(r, 1),
            kind,
            nullable: cell(r, 4) != "true",
            exact,
            cast: Some(cell(r, 5)),
        });
    }
    let idx = rows_of(
        sh,
        c,
        "SELECT ic.relname::text, i.indisunique::text, i.indisprimary::text, \
                (i.indpred IS NULL AND i.indimmediate)::text, a.attname::text \
         FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid \
         CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord) \
         LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum \
         WHERE i.indrelid = $1::text::oid AND k.ord <= i.indnkeyatts ORDER BY ic.relname, k.ord",
        &[&oid],
    )
    .await?;
    for r in &idx {
        let name = cell(r, 0);
        let pos = match info.indexes.iter().position(|i| i.name == name) {
            Some(p) => p,
            None => {
                info.indexes.push(IndexInfo {
                    name,
                    unique: cell(r, 1) == "true",
                    primary: cell(r, 2) == "true",
                    columns: Vec::new(),
                    complete: cell(r, 3) == "true",
                });
                info.indexes.len() - 1
            }
        };
        let ix = &mut info.indexes[pos];
        match r.get(4).cloned().flatten() {
            Some(col) => ix.columns.push(col),
            None => {
                // An expression: it does not make the plain column unique.
                ix.complete = false;
                ix.columns.push("<expression>".into());
            }
        }
    }
    Ok(Some(info))
}

async fn records(c: &mut PgConn, sh: &PgShared, sql: &str) -> Result<Vec<Record>, String> {
    let fut = c.client.simple_query(sql);
    let msgs = match tokio::time::timeout(sh.query_timeout, fut).await {
        Ok(r) => r.map_err(|e| format!("reading {sql}: {}", engine::errors::cause(&e)))?,
        Err(_) => return Err(format!("reading {sql}: no answer within {} ms", sh.query_timeout.as_millis())),
    };
    let mut out = Vec::new();
    for m in msgs {
        if let SimpleQueryMessage::Row(r) = m {
            let mut rec = Record::new();
            for (i, col) in r.columns().iter().enumerate() {
                rec.insert(col.name().to_ascii_lowercase(), r.get(i).map(str::to_string));
            }
            out.push(rec);
        }
    }
    Ok(out)
}

async fn plugin_rows(sh: &PgShared, c: &mut PgConn) -> Result<Option<PluginRows>, String> {
    let present: Vec<String> = rows_of(
        sh,
        c,
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1::text",
        &[PLUGIN_SCHEMA],
    )
    .await?
    .iter()
    .map(|r| cell(r, 0))
    .collect();
    let Some(reads) = crate::plugin::reads(Dialect::Postgres, &present) else { return Ok(None) };
    let mut rows = PluginRows::default();
    for (table, sql) in reads {
        rows.set(table, records(c, sh, &sql).await?);
    }
    Ok(Some(rows))
}

impl Backend for PostgresBackend {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn default_schema(&self) -> Option<String> {
        Some(DEFAULT_SCHEMA.to_string())
    }

    fn describe<'a>(&'a self, schema: &'a str, table: &'a str) -> BoxFuture<'a, Result<Option<TableInfo>, String>> {
        let (s, t) = (schema.to_string(), table.to_string());
        Box::pin(self.with_conn(move |sh, c| Box::pin(describe(sh, c, s, t))))
    }

    fn plugin_rows(&self) -> BoxFuture<'_, Result<Option<PluginRows>, String>> {
        Box::pin(self.with_conn(|sh, c| Box::pin(plugin_rows(sh, c))))
    }

    fn reachable(&self) -> BoxFuture<'_, Result<(), BackendError>> {
        let sh = self.sh.clone();
        let (tx, rx) = oneshot::channel();
        self.rt.spawn(async move {
            let _ = tx.send(sh.connect().await.map(drop));
        });
        Box::pin(async move {
            rx.await.unwrap_or_else(|_| Err(BackendError::Unavailable("PostgreSQL runtime stopped".into())))
        })
    }

    fn router(&self) -> &Router {
        &self.router
    }

    fn stats(&self) -> BackendStats {
        self.sh.stats.snapshot()
    }
}
