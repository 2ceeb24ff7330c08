//! MariaDB/MySQL backend: `mysql_async` with its Pool, prepared statements (cached per
//! connection), on a runtime thread of its own (so it works whatever runtime, or
//! runtimes, the callers use).
//!
//! Lanes are tasks; a lane takes a connection from the pool for a batch transaction (or
//! for one read) and gives it back when the transaction ends. Sessions run at READ
//! COMMITTED: locking reads take no gap locks, and every read sees the latest commits.
//!
//! Failure handling: connecting is bounded by `connect_timeout_ms`, every statement by
//! `query_timeout_ms`; after a failed connect, operations fail at once for a second
//! (then the next one tries again, and the pool reconnects). A dead connection found
//! when a transaction *starts* (nothing at stake yet) is replaced once; a connection
//! that dies inside a transaction loses that transaction, which is reported, never
//! replayed. A dropped transaction is rolled back before its connection is reused.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Params, Pool, PoolConstraints, PoolOpts, Transaction, Value};
use tokio::sync::{mpsc, oneshot};

use super::lane::{AsyncLane, LaneDb, StmtErr};
use super::local::Local;
use super::myconn::{read_rows, run_write, val_int, val_string, MyErr, Shared, ER_LOCK_DEADLOCK};
use super::{Backend, BackendStats, BoxFuture, Job, Lane, Router, Stats};
use crate::config::{BackendConfig, Options, PluginRows, Record};
use crate::error::BackendError;
use crate::ops::{CasClock, Op, OpResult};
use crate::sql::Dialect;
use crate::validate::{mysql_kind, ColKind, ColumnInfo, IndexInfo, Mapping, TableInfo};

/// One MySQL lane's database side for the generic lane driver ([`AsyncLane`]): pooled
/// connections, a transaction holding its connection.
struct MyDb {
    sh: Arc<Shared>,
}

/// A statement error inside a transaction, as the lane sees it: a dead connection or a
/// deadlock (InnoDB rolled the whole transaction back) loses it; anything else undoes the
/// statement alone (MySQL keeps the transaction).
fn in_txn(e: MyErr) -> StmtErr {
    match e {
        e @ (MyErr::Fatal(_) | MyErr::Server { code: ER_LOCK_DEADLOCK, .. }) => StmtErr::TxnGone(e.into_backend()),
        e => StmtErr::Refused(e.into_backend()),
    }
}

impl LaneDb for MyDb {
    type Tx = Transaction<'static>;

    fn begin(&mut self, readonly: bool) -> BoxFuture<'_, Result<Self::Tx, BackendError>> {
        Box::pin(self.sh.begin(readonly))
    }

    fn commit(&mut self, tx: Self::Tx) -> BoxFuture<'_, Result<(), BackendError>> {
        Box::pin(async move { self.sh.timed(tx.commit()).await.map_err(MyErr::into_backend) })
    }

    fn rollback(&mut self, tx: Self::Tx) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let _ = self.sh.timed(tx.rollback()).await;
        })
    }

    fn read_in<'a>(
        &'a mut self,
        tx: &'a mut Self::Tx,
        m: &'a Mapping,
        keys: &'a [Vec<u8>],
        _protect: bool,
    ) -> BoxFuture<'a, Result<OpResult, StmtErr>> {
        Box::pin(async move { read_rows(&self.sh, tx, m, keys).await.map_err(in_txn) })
    }

    fn read_alone<'a>(
        &'a mut self,
        m: &'a Mapping,
        keys: &'a [Vec<u8>],
    ) -> BoxFuture<'a, Result<OpResult, BackendError>> {
        Box::pin(async move {
            // Autocommit; a dead pooled connection is replaced once (reads are idempotent).
            let sh = &self.sh;
            let mut conn = sh.get_conn().await?;
            match read_rows(sh, &mut conn, m, keys).await {
                Err(MyErr::Fatal(_)) => {
                    drop(conn);
                    let mut conn = sh.get_conn().await?;
                    read_rows(sh, &mut conn, m, keys).await.map_err(MyErr::into_backend)
                }
                r => r.map_err(MyErr::into_backend),
            }
        })
    }

    fn write_in<'a>(
        &'a mut self,
        tx: &'a mut Self::Tx,
        m: &'a Mapping,
        op: &'a Op,
        _protect: bool,
    ) -> BoxFuture<'a, Result<OpResult, StmtErr>> {
        Box::pin(async move {
            match run_write(&self.sh, tx, m, op).await {
                Ok(r) => Ok(r),
                Err(MyErr::Request(e)) => Err(StmtErr::Refused(e)),
                Err(e) => Err(in_txn(e)),
            }
        })
    }

    fn flush<'a>(&'a mut self, m: &'a Mapping) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            let sh = &self.sh;
            let mut conn = sh.get_conn().await?;
            // TRUNCATE commits by itself.
            sh.timed(conn.query_drop(m.sql.flush.as_str())).await.map_err(MyErr::into_backend)
        })
    }

    fn stats(&self) -> &Stats {
        &self.sh.stats
    }
}

pub(crate) struct MysqlBackend {
    router: Router,
    sh: Arc<Shared>,
    /// The per-thread path (reads with `r_batch_size` 1, writes with `w_batch_size` 1).
    local: Arc<Local>,
    local_reads: bool,
    local_writes: bool,
    rt: tokio::runtime::Handle,
    default_db: Option<String>,
}

impl MysqlBackend {
    pub async fn start(cfg: &BackendConfig, opts: &Options, clock: Arc<CasClock>) -> Result<MysqlBackend, String> {
        let url = cfg.url.as_deref().ok_or("backend.url is required for MySQL")?;
        let base = Opts::from_url(url).map_err(|e| format!("backend.url: {e}"))?;
        let default_db = base.db_name().map(str::to_string);
        let writers = cfg.writers.unwrap_or(cfg.pool_size / 2).clamp(1, cfg.pool_size.max(2) - 1);
        let readers = cfg.pool_size.saturating_sub(writers).max(1);
        let lock_wait = cfg.query_timeout_ms.div_ceil(1000).max(1);
        let constraints = PoolConstraints::new(0, writers + readers + 2).expect("valid pool constraints");
        let session = vec![
            "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED".to_string(),
            format!("SET SESSION innodb_lock_wait_timeout = {lock_wait}"),
            format!("SET SESSION lock_wait_timeout = {lock_wait}"),
        ];
        let conn_opts: Opts = OptsBuilder::from_opts(base.clone()).stmt_cache_size(256).init(session.clone()).into();
        let opts_b = OptsBuilder::from_opts(base)
            // A non-zero inactive TTL makes the pool keep up to `max` idle connections
            // (with 0, mysql_async closes every connection above `min` as it comes back,
            // so each request would connect, set up and prepare anew).
            .pool_opts(
                PoolOpts::default()
                    .with_constraints(constraints)
                    .with_reset_connection(false)
                    .with_inactive_connection_ttl(Duration::from_secs(300)),
            )
            .stmt_cache_size(256)
            .init(session);
        let connect_timeout = Duration::from_millis(cfg.connect_timeout_ms);
        let query_timeout = Duration::from_millis(cfg.query_timeout_ms);
        let (w_batch, r_batch, interval) = (opts.w_batch_size, opts.r_batch_size, opts.bk_commit_interval);

        // The runtime thread: owns the pool and the lane tasks; ends when every lane
        // has drained (its queue closed, i.e. the backend was dropped).
        let (ready_tx, ready_rx) = oneshot::channel();
        std::thread::Builder::new()
            .name("sqlcached-mysql".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("MySQL runtime: {e}")));
                        return;
                    }
                };
                rt.block_on(async move {
                    let pool = Pool::new(opts_b);
                    let stats = Arc::new(Stats::default());
                    let sh = Arc::new(Shared {
                        pool: pool.clone(),
                        stats,
                        clock,
                        connect_timeout,
                        query_timeout,
                        down: Mutex::new(None),
                    });
                    let mut tasks = Vec::new();
                    let mut mk = |writer: bool| {
                        let (tx, rx) = mpsc::unbounded_channel::<Job>();
                        let dirty = Arc::new(AtomicBool::new(false));
                        let limit = if writer { w_batch } else { r_batch };
                        let lane = AsyncLane::new(MyDb { sh: sh.clone() }, writer, limit, interval, dirty.clone());
                        tasks.push(tokio::spawn(lane.run(rx)));
                        Lane::new(Box::new(tx), dirty)
                    };
                    let w: Vec<Lane> = (0..writers).map(|_| mk(true)).collect();
                    let r: Vec<Lane> = (0..readers).map(|_| mk(false)).collect();
                    let handle = tokio::runtime::Handle::current();
                    if ready_tx.send(Ok((w, r, sh.clone(), handle))).is_err() {
                        return;
                    }
                    for t in tasks {
                        let _ = t.await;
                    }
                    drop(sh);
                    let _ = tokio::time::timeout(Duration::from_secs(2), pool.disconnect()).await;
                });
            })
            .map_err(|e| format!("cannot start the MySQL thread: {e}"))?;
        let (w, r, sh, rt) = ready_rx.await.map_err(|_| "MySQL thread died at start".to_string())??;
        let router = Router::new(w, r, query_timeout);
        let local = Arc::new(Local::new(sh.clone(), conn_opts, cfg.thread_readers, cfg.thread_writers));
        let local_reads = r_batch == 1 && cfg.thread_readers > 0;
        let local_writes = w_batch == 1 && cfg.thread_writers > 0;
        Ok(MysqlBackend { router, sh, local, local_reads, local_writes, rt, default_db })
    }

    /// Runs start-up work on the backend's runtime with a pooled connection.
    async fn with_conn<T: Send + 'static>(
        &self,
        f: impl for<'c> FnOnce(&'c Shared, &'c mut Conn) -> BoxFuture<'c, Result<T, String>> + Send + 'static,
    ) -> Result<T, String> {
        let sh = self.sh.clone();
        let (tx, rx) = oneshot::channel();
        self.rt.spawn(async move {
            let r = match sh.get_conn().await {
                Ok(mut c) => f(&sh, &mut c).await,
                Err(e) => Err(e.to_string()),
            };
            let _ = tx.send(r);
        });
        rx.await.map_err(|_| "MySQL runtime stopped".to_string())?
    }
}

async fn rows_of(sh: &Shared, c: &mut Conn, sql: &str, params: Vec<Value>) -> Result<Vec<mysql_async::Row>, String> {
    sh.timed(c.exec(sql, Params::Positional(params))).await.map_err(|e| e.into_backend().to_string())
}

async fn describe(sh: &Shared, c: &mut Conn, schema: String, table: String) -> Result<Option<TableInfo>, String> {
    let p = || vec![Value::from(schema.as_str()), Value::from(table.as_str())];
    let dbs = rows_of(
        sh,
        c,
        "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
        vec![Value::from(schema.as_str())],
    )
    .await?;
    if dbs.is_empty() {
        return Err(format!("database '{schema}' does not exist (or the user cannot see it)"));
    }
    let t = rows_of(
        sh,
        c,
        "SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
        p(),
    )
    .await?;
    let Some(t) = t.first() else {
        return Ok(None);
    };
    if val_string(t.as_ref(0)).is_some_and(|s| s.to_ascii_uppercase().contains("VIEW")) {
        return Err(format!("{schema}.{table} is a view; a container needs a table"));
    }
    let mut info = TableInfo::default();
    let cols = rows_of(
        sh,
        c,
        "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, COLLATION_NAME FROM information_schema.COLUMNS \
         WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
        p(),
    )
    .await?;
    for r in &cols {
        let name = val_string(r.as_ref(0)).unwrap_or_default();
        let data_type = val_string(r.as_ref(1)).unwrap_or_default();
        let decl = val_string(r.as_ref(2)).unwrap_or_else(|| data_type.clone());
        let nullable = val_string(r.as_ref(3)).is_some_and(|s| s.eq_ignore_ascii_case("YES"));
        let kind = mysql_kind(&data_type);
        let collation = val_string(r.as_ref(4)).unwrap_or_default().to_ascii_lowercase();
        let exact =
            kind == ColKind::Blob || (kind == ColKind::Text && (collation.ends_with("_bin") || collation == "binary"));
        info.columns.push(ColumnInfo { name, kind, decl, nullable, exact, cast: None });
    }
    let idx = rows_of(
        sh,
        c,
        "SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME, SUB_PART FROM information_schema.STATISTICS \
         WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX",
        p(),
    )
    .await?;
    for r in &idx {
        let name = val_string(r.as_ref(0)).unwrap_or_default();
        let unique = r.as_ref(1).and_then(val_int) == Some(0);
        let col = val_string(r.as_ref(2));
        let prefix = r.as_ref(3).is_some_and(|v| *v != Value::NULL);
        let pos = match info.indexes.iter().position(|i| i.name == name) {
            Some(p) => p,
            None => {
                info.indexes.push(IndexInfo {
                    primary: name == "PRIMARY",
                    name,
                    unique,
                    columns: Vec::new(),
                    complete: true,
                });
                info.indexes.len() - 1
            }
        };
        let ix = &mut info.indexes[pos];
        ix.complete &= col.is_some() && !prefix;
        ix.columns.push(col.unwrap_or_else(|| "<expression>".into()));
    }
    Ok(Some(info))
}

async fn records(sh: &Shared, c: &mut Conn, sql: &str) -> Result<Vec<Record>, String> {
    let rows: Vec<mysql_async::Row> =
        sh.timed(c.query(sql)).await.map_err(|e| format!("reading {sql}: {}", e.into_backend()))?;
    let mut out = Vec::new();
    for r in &rows {
        let mut rec = Record::new();
        for (i, col) in r.columns_ref().iter().enumerate() {
            rec.insert(col.name_str().to_ascii_lowercase(), val_string(r.as_ref(i)));
        }
        out.push(rec);
    }
    Ok(out)
}

async fn plugin_rows(sh: &Shared, c: &mut Conn) -> Result<Option<PluginRows>, String> {
    let present = rows_of(
        sh,
        c,
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'innodb_memcache'",
        Vec::new(),
    )
    .await?
    .iter()
    .filter_map(|r| val_string(r.as_ref(0)))
    .collect::<Vec<String>>();
    let Some(reads) = crate::plugin::reads(Dialect::Mysql, &present) else { return Ok(None) };
    let mut rows = PluginRows::default();
    for (table, sql) in reads {
        rows.set(table, records(sh, c, &sql).await?);
    }
    Ok(Some(rows))
}

impl Backend for MysqlBackend {
    fn dialect(&self) -> Dialect {
        Dialect::Mysql
    }

    fn default_schema(&self) -> Option<String> {
        self.default_db.clone()
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
            let _ = tx.send(sh.get_conn().await.map(drop));
        });
        Box::pin(
            async move { rx.await.unwrap_or_else(|_| Err(BackendError::Unavailable("MySQL runtime stopped".into()))) },
        )
    }

    fn router(&self) -> &Router {
        &self.router
    }

    fn stats(&self) -> BackendStats {
        self.sh.stats.snapshot()
    }

    /// Reads and writes with batch size 1 run on the caller's thread ([`Local`]); batched
    /// ones, reads of keys with uncommitted batched writes, and flush go to the lanes.
    fn execute(&self, mapping: Arc<Mapping>, op: Op) -> BoxFuture<'_, Result<OpResult, BackendError>> {
        match &op {
            Op::Get { .. } if self.local_reads && !self.router.any_dirty() => {
                Box::pin(self.local.clone().read(mapping, op))
            }
            Op::Get { .. } | Op::Flush => Box::pin(self.router.execute(mapping, op)),
            _ if self.local_writes => Box::pin(self.local.clone().write(mapping, op)),
            _ => Box::pin(self.router.execute(mapping, op)),
        }
    }
}
