//! SQLite backend: rusqlite on dedicated threads. One writer thread owns the write
//! connection and its batch transaction; a few reader threads own read connections.
//! WAL mode (readers never block the writer), a busy timeout for other processes'
//! locks. Results go back to async callers through tokio oneshot channels. Gets run
//! on the asking thread's own connection instead when they can ([`inline`]); writes
//! answered after their commit are group-committed by the writer thread.

mod inline;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{Connection, ErrorCode, OpenFlags, ToSql};
use tokio::sync::oneshot;

use super::{deadline_passed, queue_timeout_error, Backend, BackendStats, BoxFuture, Job, Lane, Router, Stats};
use crate::batch::{Batch, TICK};
use crate::config::{BackendConfig, Options, PluginRows, Record, Synchronous};
use crate::error::BackendError;
use crate::ops::{plan, unix_now, CasClock, Existing, Op, OpResult, Write};
use crate::sql::Dialect;
use crate::validate::{sqlite_kind, ColKind, ColumnInfo, IndexInfo, Mapping, TableInfo};

/// Bytes of each database file read through a memory map (address space, not memory:
/// the pages are the OS page cache's).
const MMAP_SIZE: u64 = 1 << 30;

/// Most writes one group commit takes from the writer's queue.
const MAX_GROUP: usize = 128;

#[derive(Clone, Debug)]
struct OpenSpec {
    path: PathBuf,
    attach: BTreeMap<String, PathBuf>,
    busy: Duration,
    synchronous: Synchronous,
}

pub(crate) struct SqliteBackend {
    router: Router,
    stats: Arc<Stats>,
    spec: OpenSpec,
    /// Gets on the caller's thread (`inline_reads`, default on).
    inline: Option<inline::Inline>,
}

fn q(ident: &str) -> String {
    Dialect::Sqlite.quote(ident)
}

fn open(spec: &OpenSpec, writer: bool) -> Result<Connection, String> {
    let ctx = |e: rusqlite::Error| format!("SQLite {}: {e}", spec.path.display());
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&spec.path, flags).map_err(ctx)?;
    conn.busy_timeout(spec.busy).map_err(ctx)?;
    conn.set_prepared_statement_cache_capacity(64);
    for (name, path) in &spec.attach {
        conn.execute(&format!("ATTACH DATABASE ?1 AS {}", q(name)), [path.to_string_lossy()])
            .map_err(|e| format!("SQLite: attaching {} as '{name}': {e}", path.display()))?;
    }
    if writer {
        let sync = match spec.synchronous {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        };
        for schema in std::iter::once("main").chain(spec.attach.keys().map(String::as_str)) {
            let _mode: String =
                conn.query_row(&format!("PRAGMA {}.journal_mode = WAL", q(schema)), [], |r| r.get(0)).map_err(ctx)?;
            conn.execute_batch(&format!("PRAGMA {}.synchronous = {sync}", q(schema))).map_err(ctx)?;
        }
    } else {
        conn.execute_batch("PRAGMA query_only = 1").map_err(ctx)?;
    }
    // Reads through a memory map of the file (the OS page cache, shared by every
    // connection) instead of a pread() per page into each connection's own 2 MiB cache.
    for schema in std::iter::once("main").chain(spec.attach.keys().map(String::as_str)) {
        conn.execute_batch(&format!("PRAGMA {}.mmap_size = {MMAP_SIZE}", q(schema))).map_err(ctx)?;
    }
    Ok(conn)
}

pub(crate) fn map_err(e: rusqlite::Error) -> BackendError {
    if let rusqlite::Error::SqliteFailure(f, _) = &e {
        match f.code {
            ErrorCode::DatabaseBusy
            | ErrorCode::DatabaseLocked
            | ErrorCode::CannotOpen
            | ErrorCode::SystemIoFailure
            | ErrorCode::DiskFull
            | ErrorCode::ReadOnly
            | ErrorCode::DatabaseCorrupt
            | ErrorCode::NotADatabase
            | ErrorCode::OutOfMemory
            | ErrorCode::FileLockingProtocolFailed => return BackendError::Unavailable(format!("SQLite: {e}")),
            _ => {}
        }
    }
    BackendError::Sql(format!("SQLite: {e}"))
}

/// A bound parameter: keys and values are always bound, never spliced into SQL.
enum P<'a> {
    Null,
    Text(&'a [u8]),
    Blob(&'a [u8]),
    Int(i64),
}

impl ToSql for P<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            P::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            P::Text(b) => ToSqlOutput::Borrowed(ValueRef::Text(b)),
            P::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
            P::Int(i) => ToSqlOutput::Owned(Value::Integer(*i)),
        })
    }
}

/// Bytes for a column: BLOB columns get a blob; text and integer columns get text
/// (integer affinity turns decimal text into an integer, as the column expects).
fn bytes(kind: ColKind, v: &[u8]) -> P<'_> {
    match kind {
        ColKind::Blob => P::Blob(v),
        _ => P::Text(v),
    }
}

fn value_bytes(v: ValueRef<'_>) -> Option<Vec<u8>> {
    match v {
        ValueRef::Null => None,
        ValueRef::Integer(i) => Some(i.to_string().into_bytes()),
        ValueRef::Real(f) => Some(f.to_string().into_bytes()),
        ValueRef::Text(b) | ValueRef::Blob(b) => Some(b.to_vec()),
    }
}

fn value_int(v: ValueRef<'_>) -> Option<i64> {
    match v {
        ValueRef::Null => None,
        ValueRef::Integer(i) => Some(i),
        ValueRef::Real(f) => Some(f as i64),
        ValueRef::Text(b) | ValueRef::Blob(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
    }
}

/// Decodes a SELECT row (layout of `Statements`): the key as bytes, and the row.
fn decode(m: &Mapping, r: &rusqlite::Row<'_>) -> rusqlite::Result<(Vec<u8>, Existing)> {
    let l = &m.sql.layout;
    let key = value_bytes(r.get_ref(0)?).unwrap_or_default();
    let mut parts = Vec::with_capacity(l.n_values);
    for i in 0..l.n_values {
        parts.push(value_bytes(r.get_ref(1 + i)?));
    }
    let int = |p: Option<usize>| -> rusqlite::Result<Option<i64>> {
        match p {
            Some(i) => Ok(value_int(r.get_ref(i)?)),
            None => Ok(None),
        }
    };
    let flags = int(l.flags)?.unwrap_or(0) as u32;
    let cas = int(l.cas)?.unwrap_or(0) as u64;
    let exp = int(l.expire)?;
    Ok((key, Existing { parts, flags, cas, exp }))
}

fn select_one(conn: &Connection, m: &Mapping, sql: &str, key: &[u8]) -> Result<Option<Existing>, BackendError> {
    let mut st = conn.prepare_cached(sql).map_err(map_err)?;
    let mut rows = st.query([bytes(m.key.kind, key)]).map_err(map_err)?;
    match rows.next().map_err(map_err)? {
        Some(r) => Ok(Some(decode(m, r).map_err(map_err)?.1)),
        None => Ok(None),
    }
}

/// Reads keys one by one with the cached single-key statement (in-process, so as cheap
/// as an IN-list, and every key is matched exactly as the table compares it: integer
/// keys, NOCASE collations).
fn read_rows(conn: &Connection, m: &Mapping, keys: &[Vec<u8>]) -> Result<OpResult, BackendError> {
    let now = unix_now();
    let mut found: HashMap<Vec<u8>, Existing> = HashMap::new();
    for k in keys {
        if !found.contains_key(k) {
            if let Some(e) = select_one(conn, m, &m.sql.select, k)? {
                found.insert(k.clone(), e);
            }
        }
    }
    Ok(crate::ops::read_result(keys, &found, now, &m.separator))
}

fn new_row_params<'a>(m: &'a Mapping, row: &'a crate::ops::NewRow, out: &mut Vec<P<'a>>) {
    for (p, c) in row.parts.iter().zip(&m.values) {
        out.push(match p {
            Some(v) => bytes(c.kind, v),
            None => P::Null,
        });
    }
    if m.flags.is_some() {
        out.push(P::Int(row.flags as i64));
    }
    if m.cas.is_some() {
        out.push(P::Int(row.cas as i64));
    }
    if m.expire.is_some() {
        out.push(row.exp.map_or(P::Null, P::Int));
    }
}

fn apply(conn: &Connection, m: &Mapping, key: &[u8], w: &Write, now: i64) -> Result<(), BackendError> {
    let k = bytes(m.key.kind, key);
    let (sql, params): (&str, Vec<P<'_>>) = match w {
        Write::None => return Ok(()),
        Write::Insert(row) => {
            let mut p = vec![k];
            new_row_params(m, row, &mut p);
            (&m.sql.insert, p)
        }
        Write::Update(row) => {
            let mut p = Vec::new();
            new_row_params(m, row, &mut p);
            p.push(k);
            (&m.sql.update, p)
        }
        Write::Touch(exp) => match &m.sql.touch {
            Some(s) => (s, vec![P::Int(*exp), k]),
            None => return Ok(()),
        },
        Write::Delete => (&m.sql.delete, vec![k]),
        Write::DeleteExpired => match &m.sql.delete_expired {
            Some(s) => (s, vec![k, P::Int(now)]),
            None => return Ok(()),
        },
    };
    let mut st = conn.prepare_cached(sql).map_err(map_err)?;
    st.execute(rusqlite::params_from_iter(params.iter())).map_err(map_err)?;
    Ok(())
}

/// One write operation inside the writer's open transaction: read the row, decide,
/// run at most one statement.
fn run_write(conn: &Connection, m: &Mapping, op: &Op, clock: &CasClock) -> Result<OpResult, BackendError> {
    let now = unix_now();
    let key = op.key().expect("write op has a key");
    let existing = select_one(conn, m, &m.sql.select_for_write, key)?;
    let (w, res) = plan(m, op, existing.as_ref(), now, clock)?;
    apply(conn, m, key, &w, now)?;
    Ok(res)
}

/// One connection and its thread.
struct SqliteLane {
    conn: Connection,
    writer: bool,
    batch: Batch,
    batch_limit_value: u32,
    dirty: Arc<AtomicBool>,
    /// Bumped by the writer at every commit; a reader whose batch transaction began
    /// before the latest commit starts a new one, so that sqlcached's own acknowledged
    /// writes are always seen.
    write_gen: Arc<AtomicU64>,
    seen_gen: u64,
    stats: Arc<Stats>,
    clock: Arc<CasClock>,
}

impl SqliteLane {
    fn run(mut self, rx: mpsc::Receiver<Job>) {
        loop {
            match rx.recv_timeout(TICK) {
                Ok(job) if self.groups(&job) => {
                    // Group commit: the writes queued behind this one share its
                    // transaction and its fsync; none is answered before the COMMIT.
                    let mut group = vec![job];
                    let mut next = None;
                    while group.len() < MAX_GROUP {
                        match rx.try_recv() {
                            Ok(j) if self.groups(&j) => group.push(j),
                            Ok(j) => {
                                next = Some(j);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    if group.len() == 1 {
                        self.handle(group.pop().expect("one job"));
                    } else {
                        self.write_group(group);
                    }
                    if let Some(j) = next {
                        self.handle(j);
                    }
                }
                Ok(job) => self.handle(job),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    if let Err((n, e)) = self.commit() {
                        self.stats.lost(n, e);
                    }
                    return;
                }
            }
            if self.batch.idle_due() {
                if let Err((n, e)) = self.commit() {
                    self.stats.lost(n, e);
                }
            }
        }
    }

    fn handle(&mut self, job: Job) {
        match job {
            Job::Commit { reply } => {
                let r = self.commit().map_err(|(n, e)| self.stats.lost(n, e));
                let _ = reply.send(r);
            }
            Job::Op { mapping, op, reply, deadline } => {
                let res = if deadline_passed(deadline) {
                    Err(queue_timeout_error(Duration::ZERO))
                } else {
                    match &op {
                        Op::Get { keys } => self.read(&mapping, keys),
                        Op::Flush => self.flush(&mapping),
                        _ => self.write(&mapping, &op),
                    }
                };
                if res.is_err() {
                    Stats::bump(&self.stats.errors, 1);
                }
                if let Some(reply) = reply {
                    let _ = reply.send(res);
                }
            }
        }
    }

    /// Commits the open transaction, if any. On failure: the operations it held.
    fn commit(&mut self) -> Result<(), (u64, BackendError)> {
        if !self.batch.is_open() {
            return Ok(());
        }
        let r = self.conn.execute_batch("COMMIT");
        if r.is_err() && !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        let n = self.batch.closed();
        self.dirty.store(false, Ordering::Release);
        match r {
            Ok(()) => {
                Stats::bump(&self.stats.commits, 1);
                if self.writer {
                    self.write_gen.fetch_add(1, Ordering::AcqRel);
                }
                Ok(())
            }
            Err(e) => Err((n, map_err(e))),
        }
    }

    fn read(&mut self, m: &Mapping, keys: &[Vec<u8>]) -> Result<OpResult, BackendError> {
        // On the writer (read-your-writes) the read joins whatever transaction is open.
        let batched = !self.writer && self.batch_limit() > 1;
        if batched {
            let gen = self.write_gen.load(Ordering::Acquire);
            if self.batch.is_open() && gen != self.seen_gen {
                self.commit().map_err(|(_, e)| e)?;
            }
            if !self.batch.is_open() {
                self.conn.execute_batch("BEGIN").map_err(map_err)?;
                self.batch.begun();
                self.seen_gen = gen;
            }
        }
        let res = read_rows(&self.conn, m, keys);
        if batched {
            if self.conn.is_autocommit() {
                self.batch.closed();
            } else if self.batch.ran() {
                self.commit().map_err(|(_, e)| e)?;
            }
        }
        res
    }

    /// Does `job` join a group commit? Writes answered after their commit
    /// (`w_batch_size` = 1) on the writer lane; reads, flushes, commits and lazy deletes
    /// (no one waits for them) run on their own.
    fn groups(&self, job: &Job) -> bool {
        self.writer
            && self.batch_limit() == 1
            && matches!(job, Job::Op { op, reply: Some(_), .. } if !matches!(op, Op::Get { .. } | Op::Flush))
    }

    /// Runs writes in one transaction and answers them after its COMMIT. A failed
    /// statement fails alone (SQLite undoes just that statement); a failure that rolls
    /// the transaction back, or a failed COMMIT, fails every write of the group (none
    /// was acknowledged, so none is lost).
    fn write_group(&mut self, jobs: Vec<Job>) {
        let mut answers: Vec<Result<OpResult, BackendError>> = Vec::with_capacity(jobs.len());
        let begin = self.conn.execute_batch("BEGIN IMMEDIATE").map_err(map_err);
        let mut fatal = begin.err();
        for job in &jobs {
            let Job::Op { mapping, op, deadline, .. } = job else { unreachable!("groups() takes writes only") };
            let res = match &fatal {
                Some(e) => Err(e.clone()),
                None if deadline_passed(*deadline) => Err(queue_timeout_error(Duration::ZERO)),
                None => run_write(&self.conn, mapping, op, &self.clock),
            };
            if let Err(e) = &res {
                if fatal.is_none() && self.conn.is_autocommit() {
                    // The whole transaction was rolled back (I/O error, disk full...).
                    fatal = Some(e.clone());
                }
            }
            answers.push(res);
        }
        if fatal.is_none() {
            if let Err(e) = self.conn.execute_batch("COMMIT") {
                if !self.conn.is_autocommit() {
                    let _ = self.conn.execute_batch("ROLLBACK");
                }
                fatal = Some(map_err(e));
            } else {
                Stats::bump(&self.stats.commits, 1);
                self.write_gen.fetch_add(1, Ordering::AcqRel);
            }
        } else if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        for (job, mut res) in jobs.into_iter().zip(answers) {
            if let (Some(e), Ok(_)) = (&fatal, &res) {
                res = Err(e.clone());
            }
            if res.is_err() {
                Stats::bump(&self.stats.errors, 1);
            }
            if let Job::Op { reply: Some(reply), .. } = job {
                let _ = reply.send(res);
            }
        }
    }

    fn batch_limit(&self) -> u32 {
        self.batch_limit_value
    }

    fn write(&mut self, m: &Mapping, op: &Op) -> Result<OpResult, BackendError> {
        if !self.batch.is_open() {
            self.conn.execute_batch("BEGIN IMMEDIATE").map_err(map_err)?;
            self.batch.begun();
        }
        match run_write(&self.conn, m, op, &self.clock) {
            Ok(res) => {
                if self.batch.ran() {
                    // The batch is full: commit before acknowledging. If that fails, the
                    // earlier (acknowledged) operations of the batch are lost with it.
                    self.commit().map_err(|(n, e)| self.stats.lost(n.saturating_sub(1), e))?;
                } else {
                    self.dirty.store(true, Ordering::Release);
                }
                Ok(res)
            }
            Err(e) => {
                if self.conn.is_autocommit() {
                    // SQLite rolled the whole transaction back (I/O error, disk full...).
                    let n = self.batch.closed();
                    self.dirty.store(false, Ordering::Release);
                    Err(self.stats.lost(n, e))
                } else {
                    if self.batch.pending() == 0 {
                        // Nothing else in the transaction: end it.
                        let _ = self.conn.execute_batch("ROLLBACK");
                        self.batch.closed();
                    }
                    // Otherwise only the failed statement was undone; the batch goes on.
                    Err(e)
                }
            }
        }
    }

    fn flush(&mut self, m: &Mapping) -> Result<OpResult, BackendError> {
        self.commit().map_err(|(n, e)| self.stats.lost(n, e))?;
        self.conn.execute_batch(&m.sql.flush).map_err(map_err)?;
        Stats::bump(&self.stats.commits, 1);
        self.write_gen.fetch_add(1, Ordering::AcqRel);
        Ok(OpResult::Done)
    }
}

/// What every lane of one backend shares.
#[derive(Clone)]
struct LaneCtx {
    spec: OpenSpec,
    interval: Duration,
    stats: Arc<Stats>,
    clock: Arc<CasClock>,
    write_gen: Arc<AtomicU64>,
}

/// Starts a lane thread; waits until its connection is open.
async fn spawn_lane(name: String, ctx: LaneCtx, writer: bool, batch: u32) -> Result<Lane, String> {
    let (tx, rx) = mpsc::channel::<Job>();
    let dirty = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = oneshot::channel::<Result<(), String>>();
    let d = dirty.clone();
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let conn = match open(&ctx.spec, writer) {
                Ok(c) => c,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            Stats::bump(&ctx.stats.connects, 1);
            let _ = ready_tx.send(Ok(()));
            let lane = SqliteLane {
                conn,
                writer,
                batch: Batch::new(batch, ctx.interval),
                batch_limit_value: batch,
                dirty: d,
                write_gen: ctx.write_gen,
                seen_gen: 0,
                stats: ctx.stats,
                clock: ctx.clock,
            };
            lane.run(rx)
        })
        .map_err(|e| format!("cannot start an SQLite thread: {e}"))?;
    ready_rx.await.map_err(|_| "SQLite thread died while opening".to_string())??;
    Ok(Lane::new(Box::new(tx), dirty))
}

impl SqliteBackend {
    pub async fn start(cfg: &BackendConfig, opts: &Options, clock: Arc<CasClock>) -> Result<SqliteBackend, String> {
        let spec = OpenSpec {
            path: cfg.path.clone().ok_or("backend.path is required for SQLite")?,
            attach: cfg.attach.clone(),
            busy: Duration::from_millis(cfg.query_timeout_ms),
            synchronous: cfg.synchronous,
        };
        let stats = Arc::new(Stats::default());
        let ctx = LaneCtx {
            spec: spec.clone(),
            interval: opts.bk_commit_interval,
            stats: stats.clone(),
            clock,
            write_gen: Arc::new(AtomicU64::new(0)),
        };
        // The writer first: it creates the file and switches it to WAL.
        let writer = spawn_lane("sqlcached-sqlite-w".into(), ctx.clone(), true, opts.w_batch_size).await?;
        let n_readers = cfg.pool_size.saturating_sub(1).max(1);
        let mut readers = Vec::with_capacity(n_readers);
        for i in 0..n_readers {
            readers.push(spawn_lane(format!("sqlcached-sqlite-r{i}"), ctx.clone(), false, opts.r_batch_size).await?);
        }
        let router = Router::new(vec![writer], readers, Duration::from_millis(cfg.query_timeout_ms));
        let inline = cfg.inline_reads.unwrap_or(true).then(|| inline::Inline::new(spec.clone()));
        Ok(SqliteBackend { router, stats, spec, inline })
    }

    /// Runs `f` on a fresh read connection on its own thread (start-up work).
    async fn with_conn<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, String> + Send + 'static,
    ) -> Result<T, String> {
        let spec = self.spec.clone();
        let (tx, rx) = oneshot::channel();
        std::thread::spawn(move || {
            let r = open(&spec, false).and_then(|c| f(&c));
            let _ = tx.send(r);
        });
        rx.await.map_err(|_| "SQLite start-up thread died".to_string())?
    }
}

fn describe(conn: &Connection, schema: &str, table: &str) -> Result<Option<TableInfo>, String> {
    let e = |e: rusqlite::Error| format!("SQLite: describing {schema}.{table}: {e}");
    let dbs: Vec<String> = conn
        .prepare("SELECT name FROM pragma_database_list")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(e)?;
    let Some(schema) = dbs.iter().find(|d| d.eq_ignore_ascii_case(schema)) else {
        return Err(format!(
            "schema '{schema}' is not a database of the SQLite backend (use 'main', or attach it under [backend.attach])"
        ));
    };
    let kind: Option<String> = conn
        .query_row(
            &format!(
                "SELECT type FROM {}.sqlite_master WHERE name = ?1 COLLATE NOCASE AND type IN ('table', 'view')",
                q(schema)
            ),
            [table],
            |r| r.get(0),
        )
        .map(Some)
        .or_else(|e| if matches!(e, rusqlite::Error::QueryReturnedNoRows) { Ok(None) } else { Err(e) })
        .map_err(e)?;
    match kind.as_deref() {
        None => return Ok(None),
        Some("view") => return Err(format!("{schema}.{table} is a view; a container needs a table")),
        _ => {}
    }
    let mut info = TableInfo::default();
    let mut pk: Vec<(String, String)> = Vec::new();
    {
        let mut st = conn.prepare("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1, ?2)").map_err(e)?;
        let mut rows = st.query([table, schema]).map_err(e)?;
        while let Some(r) = rows.next().map_err(e)? {
            let name: String = r.get(0).map_err(e)?;
            let decl: String = r.get::<_, Option<String>>(1).map_err(e)?.unwrap_or_default();
            let notnull: i64 = r.get(2).map_err(e)?;
            let pkpos: i64 = r.get(3).map_err(e)?;
            if pkpos > 0 {
                pk.push((name.clone(), decl.clone()));
            }
            // Not used for SQLite reads (always one key per statement).
            let kind = sqlite_kind(&decl);
            info.columns.push(ColumnInfo {
                name,
                exact: kind == ColKind::Blob,
                kind,
                decl,
                nullable: notnull == 0,
                cast: None,
            });
        }
    }
    // INTEGER PRIMARY KEY is the rowid itself: unique, with no index of its own.
    if pk.len() == 1 && pk[0].1.eq_ignore_ascii_case("INTEGER") {
        info.indexes.push(IndexInfo {
            name: "PRIMARY".into(),
            unique: true,
            primary: true,
            columns: vec![pk[0].0.clone()],
            complete: true,
        });
    }
    let list: Vec<(String, bool, String, bool)> = conn
        .prepare("SELECT name, \"unique\", origin, partial FROM pragma_index_list(?1, ?2)")
        .and_then(|mut s| {
            s.query_map([table, schema], |r| {
                Ok((r.get(0)?, r.get::<_, i64>(1)? != 0, r.get(2)?, r.get::<_, i64>(3)? != 0))
            })?
            .collect()
        })
        .map_err(e)?;
    for (name, unique, origin, partial) in list {
        let cols: Vec<Option<String>> = conn
            .prepare("SELECT name FROM pragma_index_info(?1, ?2) ORDER BY seqno")
            .and_then(|mut s| s.query_map([&name, schema], |r| r.get(0))?.collect())
            .map_err(e)?;
        let complete = !partial && cols.iter().all(Option::is_some);
        info.indexes.push(IndexInfo {
            name,
            unique,
            primary: origin == "pk",
            columns: cols.into_iter().map(|c| c.unwrap_or_else(|| "<expression>".into())).collect(),
            complete,
        });
    }
    Ok(Some(info))
}

fn records(conn: &Connection, sql: &str) -> Result<Vec<Record>, String> {
    let e = |e: rusqlite::Error| format!("SQLite: reading plugin tables ({sql}): {e}");
    let mut st = conn.prepare(sql).map_err(e)?;
    let names: Vec<String> = st.column_names().map(|n| n.to_ascii_lowercase()).collect();
    let mut rows = st.query([]).map_err(e)?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(e)? {
        let mut rec = Record::new();
        for (i, n) in names.iter().enumerate() {
            let v = value_bytes(r.get_ref(i).map_err(e)?).map(|b| String::from_utf8_lossy(&b).into_owned());
            rec.insert(n.clone(), v);
        }
        out.push(rec);
    }
    Ok(out)
}

fn table_exists(conn: &Connection, schema: &str, table: &str) -> Result<bool, String> {
    conn.query_row(
        &format!("SELECT count(*) FROM {}.sqlite_master WHERE type = 'table' AND name = ?1 COLLATE NOCASE", q(schema)),
        [table],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(|e| format!("SQLite: {e}"))
}

/// The plugin's tables: in an attached database named `innodb_memcache`
/// (`innodb_memcache.containers`, ...), else in the main database as
/// `innodb_memcache_containers`, `innodb_memcache_cache_policies`,
/// `innodb_memcache_config_options`.
fn plugin_rows(conn: &Connection) -> Result<Option<PluginRows>, String> {
    let attached: bool = conn
        .query_row("SELECT count(*) FROM pragma_database_list WHERE name = 'innodb_memcache'", [], |r| {
            r.get::<_, i64>(0)
        })
        .map_err(|e| format!("SQLite: {e}"))?
        > 0;
    let tables: [(String, String); 3] = if attached && table_exists(conn, "innodb_memcache", "containers")? {
        ["containers", "cache_policies", "config_options"].map(|t| ("innodb_memcache".to_string(), t.to_string()))
    } else if table_exists(conn, "main", "innodb_memcache_containers")? {
        ["containers", "cache_policies", "config_options"].map(|t| ("main".to_string(), format!("innodb_memcache_{t}")))
    } else {
        return Ok(None);
    };
    // Ordered like InnoDB's clustered index (primary key `name` / `policy_name`), so
    // "the first row" means the same as with the plugin.
    let read = |i: usize, order: &str| -> Result<Vec<Record>, String> {
        let (s, t) = &tables[i];
        if !table_exists(conn, s, t)? {
            return Ok(Vec::new());
        }
        records(conn, &format!("SELECT * FROM {}.{}{order}", q(s), q(t)))
    };
    Ok(Some(PluginRows {
        containers: read(0, " ORDER BY name")?,
        cache_policies: read(1, " ORDER BY policy_name")?,
        config_options: read(2, "")?,
    }))
}

impl Backend for SqliteBackend {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn default_schema(&self) -> Option<String> {
        Some("main".into())
    }

    fn describe<'a>(&'a self, schema: &'a str, table: &'a str) -> BoxFuture<'a, Result<Option<TableInfo>, String>> {
        let (s, t) = (schema.to_string(), table.to_string());
        Box::pin(self.with_conn(move |c| describe(c, &s, &t)))
    }

    fn plugin_rows(&self) -> BoxFuture<'_, Result<Option<PluginRows>, String>> {
        Box::pin(self.with_conn(plugin_rows))
    }

    fn router(&self) -> &Router {
        &self.router
    }

    fn stats(&self) -> BackendStats {
        self.stats.snapshot()
    }

    fn execute(&self, mapping: Arc<Mapping>, op: Op) -> BoxFuture<'_, Result<OpResult, BackendError>> {
        if let (Some(inline), Op::Get { keys }) = (&self.inline, &op) {
            if !self.router.any_dirty() {
                if let Some(res) = inline.read(&mapping, keys) {
                    Stats::bump(&self.stats.reads_inline, 1);
                    return Box::pin(std::future::ready(self.router.read_done(&mapping, res)));
                }
            }
        }
        Box::pin(self.router.execute(mapping, op))
    }
}
