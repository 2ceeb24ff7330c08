//! PostgreSQL statements on one connection (tokio-postgres), for the backend's lanes
//! (`postgres.rs`): connecting (TLS per `sslmode`, connect timeout, a second of failing
//! fast after a failed connect), errors and their classes, values as raw bytes of their
//! text form (binary columns as bytes), reads and single writes, and [`PgDb`], the
//! [`LaneDb`] of one lane's connection.
//!
//! A statement refused inside a transaction aborts the whole transaction on PostgreSQL
//! (MySQL only undoes the statement). So when the transaction already holds
//! acknowledged writes, each operation runs after a `SAVEPOINT` and a refused one is
//! rolled back to it alone; and a plain INSERT that meets a row inserted meanwhile by
//! another client is `ON CONFLICT DO NOTHING` (then decided again), not a unique violation.

use std::collections::{HashMap, HashSet};
use std::error::Error as StdError;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};
use tokio_postgres::{Client, NoTls, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::lane::{LaneDb, StmtErr};
use super::{BoxFuture, Stats};
use crate::error::BackendError;
use crate::ops::{blind_rows, plan, read_result, unix_now, CasClock, Existing, NewRow, Op, OpResult, Write};
use crate::sql::in_chunks;
use crate::validate::Mapping;

/// How long operations fail fast after a failed connect.
const DOWN_HOLD: Duration = Duration::from_secs(1);
/// How a statement timeout's message starts.
const NO_ANSWER: &str = "no answer within";

/// A parameter or result value: the raw bytes of its wire form, which for a `::text`
/// parameter or column is its text and for `bytea` its bytes (None: NULL).
#[derive(Debug, Clone)]
pub(super) struct Raw(pub Option<Vec<u8>>);

impl ToSql for Raw {
    fn to_sql(&self, _: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        match &self.0 {
            Some(b) => {
                out.extend_from_slice(b);
                Ok(IsNull::No)
            }
            None => Ok(IsNull::Yes),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for Raw {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Raw, Box<dyn StdError + Sync + Send>> {
        Ok(Raw(Some(raw.to_vec())))
    }

    fn from_sql_null(_: &Type) -> Result<Raw, Box<dyn StdError + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// A failed statement.
#[derive(Debug)]
pub(super) enum PgErr {
    /// The connection is unusable (I/O error, timeout, server shutting down): drop it.
    Fatal(String),
    /// The server refused the statement (SQLSTATE `code`); the connection is fine, the
    /// transaction (if any) is aborted.
    Server { code: String, msg: String },
    /// Not the backend's: the request itself (too many value parts).
    Request(BackendError),
}

impl PgErr {
    /// The whole transaction is gone even with a savepoint: connection lost, deadlock,
    /// serialization failure.
    fn txn_gone(&self) -> bool {
        match self {
            PgErr::Fatal(_) => true,
            PgErr::Server { code, .. } => matches!(code.as_str(), "40P01" | "40001" | "25P02"),
            PgErr::Request(_) => false,
        }
    }

    /// The error as operations report it.
    pub(super) fn into_backend(self) -> BackendError {
        match self {
            PgErr::Fatal(s) => BackendError::Unavailable(format!("PostgreSQL: {s}")),
            PgErr::Server { msg, .. } => BackendError::Sql(format!("PostgreSQL: {msg}")),
            PgErr::Request(e) => e,
        }
    }
}

fn classify(e: tokio_postgres::Error, client: &Client) -> PgErr {
    // Operator intervention (57P: terminated, shutting down) and connection exceptions
    // (08) end the session: the connection is as good as closed.
    let ends_session = |code: &str| code.starts_with("57P") || code.starts_with("08");
    match e.as_db_error() {
        Some(db) if !client.is_closed() && !ends_session(db.code().code()) => {
            let mut msg = format!("{}: {}", db.severity(), db.message());
            if let Some(d) = db.detail() {
                msg.push_str(&format!(" ({d})"));
            }
            PgErr::Server { code: db.code().code().to_string(), msg }
        }
        Some(db) => PgErr::Fatal(format!("connection closed: {}", db.message())),
        None => PgErr::Fatal(engine::errors::cause(&e)),
    }
}

/// What all lanes share: how to connect, timeouts, counters, the CAS clock.
pub(super) struct PgShared {
    /// Host, port, login, database, session options (`lock_timeout`), TLS mode.
    pub(super) cfg: tokio_postgres::Config,
    /// None: plain TCP or a unix socket (`sslmode=disable`).
    pub(super) tls: Option<MakeRustlsConnect>,
    /// The backend's counters.
    pub(super) stats: Arc<Stats>,
    /// Where new cas values come from.
    pub(super) clock: Arc<CasClock>,
    /// Bound on connecting (TCP, TLS, authentication).
    pub(super) connect_timeout: Duration,
    /// Bound on one statement; a connection that misses it is dropped.
    pub(super) query_timeout: Duration,
    /// Set after a failed connect: until then, fail at once with this message.
    pub(super) down: Mutex<Option<(Instant, String)>>,
}

/// One open connection and the statements prepared on it.
pub(super) struct PgConn {
    /// The session (its I/O task runs on the backend's runtime).
    pub(super) client: Client,
    stmts: HashMap<String, Statement>,
}

impl PgShared {
    fn check_down(&self) -> Result<(), BackendError> {
        let mut d = self.down.lock().unwrap();
        match &*d {
            Some((until, msg)) if Instant::now() < *until => Err(BackendError::Unavailable(msg.clone())),
            Some(_) => {
                *d = None;
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn mark_down(&self, msg: &str) -> BackendError {
        let msg = format!("PostgreSQL: cannot connect: {msg}");
        *self.down.lock().unwrap() = Some((Instant::now() + DOWN_HOLD, msg.clone()));
        BackendError::Unavailable(msg)
    }

    /// Opens a connection (its I/O task spawned on the current runtime), bounded by the
    /// connect timeout; a failure holds further attempts off for a second.
    pub(super) async fn connect(&self) -> Result<PgConn, BackendError> {
        self.check_down()?;
        let fut = async {
            match &self.tls {
                Some(tls) => {
                    let (client, conn) = self.cfg.connect(tls.clone()).await?;
                    tokio::spawn(async move {
                        let _ = conn.await;
                    });
                    Ok::<Client, tokio_postgres::Error>(client)
                }
                None => {
                    let (client, conn) = self.cfg.connect(NoTls).await?;
                    tokio::spawn(async move {
                        let _ = conn.await;
                    });
                    Ok(client)
                }
            }
        };
        match tokio::time::timeout(self.connect_timeout, fut).await {
            Ok(Ok(client)) => {
                Stats::bump(&self.stats.connects, 1);
                Ok(PgConn { client, stmts: HashMap::new() })
            }
            Ok(Err(e)) => Err(self.mark_down(&engine::errors::cause(&e))),
            Err(_) => Err(self.mark_down(&format!("no connection within {} ms", self.connect_timeout.as_millis()))),
        }
    }

    async fn timed<T>(
        &self,
        c: &Client,
        fut: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, PgErr> {
        match tokio::time::timeout(self.query_timeout, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(classify(e, c)),
            Err(_) => Err(PgErr::Fatal(format!("{NO_ANSWER} {} ms", self.query_timeout.as_millis()))),
        }
    }
}

impl PgConn {
    async fn prepared(&mut self, sh: &PgShared, sql: &str) -> Result<Statement, PgErr> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        let s = sh.timed(&self.client, self.client.prepare(sql)).await?;
        if self.stmts.len() >= 256 {
            self.stmts.clear();
        }
        self.stmts.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    /// Runs a prepared query; its rows.
    pub(super) async fn query(
        &mut self,
        sh: &PgShared,
        sql: &str,
        params: &[Raw],
    ) -> Result<Vec<tokio_postgres::Row>, PgErr> {
        let st = self.prepared(sh, sql).await?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        let r = sh.timed(&self.client, self.client.query(&st, &refs)).await;
        self.forget_stale(&r);
        r
    }

    /// Runs a prepared statement; the rows it changed.
    async fn execute(&mut self, sh: &PgShared, sql: &str, params: &[Raw]) -> Result<u64, PgErr> {
        let st = self.prepared(sh, sql).await?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        let r = sh.timed(&self.client, self.client.execute(&st, &refs)).await;
        self.forget_stale(&r);
        r
    }

    /// A table altered under a prepared statement ("cached plan must not change result
    /// type", 0A000) or a statement gone (26000): prepare anew next time.
    fn forget_stale<T>(&mut self, r: &Result<T, PgErr>) {
        if let Err(PgErr::Server { code, .. }) = r {
            if code == "0A000" || code == "26000" {
                self.stmts.clear();
            }
        }
    }

    /// Runs statements without parameters (BEGIN, COMMIT, SAVEPOINT, TRUNCATE).
    pub(super) async fn batch(&mut self, sh: &PgShared, sql: &str) -> Result<(), PgErr> {
        sh.timed(&self.client, self.client.batch_execute(sql)).await
    }
}

fn text(s: String) -> Raw {
    Raw(Some(s.into_bytes()))
}

fn key_param(key: &[u8]) -> Raw {
    Raw(Some(key.to_vec()))
}

fn int_of(r: &Raw) -> Option<i64> {
    std::str::from_utf8(r.0.as_deref()?).ok()?.trim().parse().ok()
}

fn decode(m: &Mapping, r: &tokio_postgres::Row) -> (Vec<u8>, Existing) {
    let l = &m.sql.layout;
    let get = |i: usize| r.try_get::<_, Raw>(i).unwrap_or(Raw(None));
    let key = get(0).0.unwrap_or_default();
    let parts = (0..l.n_values).map(|i| get(1 + i).0).collect();
    let int = |p: Option<usize>| p.and_then(|i| int_of(&get(i)));
    let existing = Existing {
        parts,
        flags: int(l.flags).unwrap_or(0) as u32,
        cas: int(l.cas).unwrap_or(0) as u64,
        exp: int(l.expire),
    };
    (key, existing)
}

fn row_params(m: &Mapping, row: &NewRow, out: &mut Vec<Raw>) {
    for p in &row.parts {
        out.push(Raw(p.clone()));
    }
    if m.flags.is_some() {
        out.push(text(row.flags.to_string()));
    }
    if m.cas.is_some() {
        out.push(text(row.cas.to_string()));
    }
    if m.expire.is_some() {
        out.push(Raw(row.exp.map(|e| e.to_string().into_bytes())));
    }
}

async fn select_one(
    sh: &PgShared,
    c: &mut PgConn,
    m: &Mapping,
    sql: &str,
    key: &[u8],
) -> Result<Option<Existing>, PgErr> {
    let rows = c.query(sh, sql, &[key_param(key)]).await?;
    Ok(rows.first().map(|r| decode(m, r).1))
}

/// Reads `keys` (a single SELECT, or IN-lists of a few sizes; keys whose column compares
/// inexactly, e.g. integers or uuids, are matched one by one when the IN-list misses).
pub(super) async fn read_rows(sh: &PgShared, c: &mut PgConn, m: &Mapping, keys: &[Vec<u8>]) -> Result<OpResult, PgErr> {
    let now = unix_now();
    let mut found: HashMap<Vec<u8>, Existing> = HashMap::new();
    if keys.len() == 1 {
        if let Some(e) = select_one(sh, c, m, &m.sql.select, &keys[0]).await? {
            found.insert(keys[0].clone(), e);
        }
    } else {
        let wanted: HashSet<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let mut stray = false;
        for (start, len, size) in in_chunks(keys.len()) {
            let params: Vec<Raw> = (0..size).map(|i| key_param(&keys[start + i.min(len - 1)])).collect();
            for r in &c.query(sh, &m.sql.select_in(size), &params).await? {
                let (k, e) = decode(m, r);
                if wanted.contains(&k[..]) {
                    found.insert(k, e);
                } else {
                    stray = true;
                }
            }
        }
        if stray || !m.key.exact {
            for k in keys {
                if !found.contains_key(k) {
                    if let Some(e) = select_one(sh, c, m, &m.sql.select, k).await? {
                        found.insert(k.clone(), e);
                    }
                }
            }
        }
    }
    Ok(read_result(keys, &found, now, &m.separator))
}

/// Runs the statement of one decided write; the rows it changed (None: nothing to run).
async fn apply(
    sh: &PgShared,
    c: &mut PgConn,
    m: &Mapping,
    key: &[u8],
    w: &Write,
    now: i64,
) -> Result<Option<u64>, PgErr> {
    let (sql, params): (&str, Vec<Raw>) = match w {
        Write::None => return Ok(None),
        Write::Insert(row) => {
            let mut p = vec![key_param(key)];
            row_params(m, row, &mut p);
            (&m.sql.insert, p)
        }
        Write::Update(row) => {
            let mut p = Vec::new();
            row_params(m, row, &mut p);
            p.push(key_param(key));
            (&m.sql.update, p)
        }
        Write::Touch(exp) => match &m.sql.touch {
            Some(s) => (s, vec![text(exp.to_string()), key_param(key)]),
            None => return Ok(None),
        },
        Write::Delete => (&m.sql.delete, vec![key_param(key)]),
        Write::DeleteExpired => match &m.sql.delete_expired {
            Some(s) => (s, vec![key_param(key), text(now.to_string())]),
            None => return Ok(None),
        },
    };
    c.execute(sh, sql, &params).await.map(Some)
}

/// One write inside the open transaction: lock-read the row, decide, run at most one
/// statement. An INSERT that inserted nothing (a row another client inserted meanwhile,
/// committed by the time `ON CONFLICT` looked) is decided again once.
pub(super) async fn run_write(sh: &PgShared, c: &mut PgConn, m: &Mapping, op: &Op) -> Result<OpResult, PgErr> {
    let key = op.key().expect("write op has a key");
    let mut retried = false;
    loop {
        let now = unix_now();
        let existing = select_one(sh, c, m, &m.sql.select_for_write, key).await?;
        let (w, res) = plan(m, op, existing.as_ref(), now, &sh.clock).map_err(PgErr::Request)?;
        match apply(sh, c, m, key, &w, now).await? {
            Some(0) if matches!(w, Write::Insert(_)) => {
                if retried {
                    return Err(PgErr::Request(BackendError::Unavailable(
                        "PostgreSQL: the write kept conflicting with concurrent inserts".into(),
                    )));
                }
                retried = true;
            }
            _ => return Ok(res),
        }
    }
}

/// One plain set, autocommitted (after a group's statement was refused).
async fn set_one(sh: &PgShared, c: &mut PgConn, m: &Mapping, op: &Op) -> Result<OpResult, PgErr> {
    let (rows, mut answers) = blind_rows(m, &[op], &sh.clock);
    let answer = answers.pop().expect("one answer per set");
    if let Some((key, row)) = rows.first() {
        let mut params = vec![key_param(key)];
        row_params(m, row, &mut params);
        c.execute(sh, &m.sql.set_rows(1), &params).await?;
    }
    answer.map_err(PgErr::Request)
}

/// What runs inside a guarded transaction step.
enum Work<'a> {
    Read(&'a [Vec<u8>]),
    Write(&'a Op),
}

/// An open transaction on a lane's connection.
pub(super) struct PgTx {
    /// Whether the savepoint exists (made by the first protected operation).
    savepoint: bool,
}

/// One lane's connection, opened when first needed and again after it died.
pub(super) struct PgDb {
    /// What every lane shares.
    pub(super) sh: Arc<PgShared>,
    /// The lane's connection; None until first needed and after it died.
    pub(super) conn: Option<PgConn>,
}

impl PgDb {
    async fn conn(&mut self) -> Result<(&mut PgConn, bool), BackendError> {
        let reused = self.conn.is_some();
        if self.conn.is_none() {
            self.conn = Some(self.sh.connect().await?);
        }
        Ok((self.conn.as_mut().expect("just connected"), reused))
    }

    async fn begin_once(&mut self, readonly: bool) -> Result<(), (PgErr, bool)> {
        let sh = self.sh.clone();
        let (c, reused) = self.conn().await.map_err(|e| (PgErr::Request(e), false))?;
        let sql = if readonly { "BEGIN READ ONLY" } else { "BEGIN" };
        c.batch(&sh, sql).await.map_err(|e| (e, reused))
    }

    /// Runs `f` inside the transaction, behind a savepoint when `protect`; classifies
    /// the failure for the lane (a transaction aborted by a refused statement without a
    /// savepoint is rolled back here, so the connection is clean for the next one).
    async fn guarded(
        &mut self,
        tx: &mut PgTx,
        protect: bool,
        m: &Mapping,
        work: Work<'_>,
    ) -> Result<OpResult, StmtErr> {
        let sh = self.sh.clone();
        let Some(c) = self.conn.as_mut() else {
            return Err(StmtErr::TxnGone(BackendError::Unavailable("PostgreSQL: connection lost".into())));
        };
        if protect {
            let sp =
                if tx.savepoint { "RELEASE SAVEPOINT sqlcached; SAVEPOINT sqlcached" } else { "SAVEPOINT sqlcached" };
            if let Err(e) = c.batch(&sh, sp).await {
                return Err(self.gone(e).await);
            }
            tx.savepoint = true;
        }
        let c = self.conn.as_mut().expect("checked");
        let r = match work {
            Work::Read(keys) => read_rows(&sh, c, m, keys).await,
            Work::Write(op) => run_write(&sh, c, m, op).await,
        };
        match r {
            Ok(v) => Ok(v),
            Err(PgErr::Request(e)) => Err(StmtErr::Refused(e)),
            Err(e) if e.txn_gone() => Err(self.gone(e).await),
            Err(e) if protect => {
                let c = self.conn.as_mut().expect("checked");
                match c.batch(&sh, "ROLLBACK TO SAVEPOINT sqlcached").await {
                    Ok(()) => Err(StmtErr::Refused(e.into_backend())),
                    Err(e2) => Err(self.gone(e2).await.with_cause(e)),
                }
            }
            // Nothing acknowledged in the transaction: the lane rolls it back.
            Err(e) => Err(StmtErr::Refused(e.into_backend())),
        }
    }

    /// The transaction is gone: a dead connection is dropped, a live one rolled back.
    async fn gone(&mut self, e: PgErr) -> StmtErr {
        if matches!(e, PgErr::Fatal(_)) {
            self.conn = None;
        } else if let Some(c) = self.conn.as_mut() {
            if c.batch(&self.sh, "ROLLBACK").await.is_err() {
                self.conn = None;
            }
        }
        StmtErr::TxnGone(e.into_backend())
    }
}

impl StmtErr {
    /// Keeps the first error's text when undoing it failed too.
    fn with_cause(self, first: PgErr) -> StmtErr {
        match self {
            StmtErr::TxnGone(e) => {
                StmtErr::TxnGone(BackendError::Unavailable(format!("{} (after: {})", e, first.into_backend())))
            }
            other => other,
        }
    }
}

impl LaneDb for PgDb {
    type Tx = PgTx;

    fn begin(&mut self, readonly: bool) -> BoxFuture<'_, Result<PgTx, BackendError>> {
        Box::pin(async move {
            match self.begin_once(readonly).await {
                Ok(()) => Ok(PgTx { savepoint: false }),
                Err((PgErr::Request(e), _)) => Err(e),
                Err((e, reused)) => {
                    self.conn = None;
                    // A connection that died while idle (backend restart): once more on a new one.
                    let at_once = matches!(&e, PgErr::Fatal(s) if !s.starts_with(NO_ANSWER));
                    if reused && at_once {
                        self.begin_once(readonly).await.map_err(|(e, _)| {
                            self.conn = None;
                            e.into_backend()
                        })?;
                        return Ok(PgTx { savepoint: false });
                    }
                    Err(e.into_backend())
                }
            }
        })
    }

    fn commit(&mut self, _tx: PgTx) -> BoxFuture<'_, Result<(), BackendError>> {
        Box::pin(async move {
            let sh = self.sh.clone();
            let Some(c) = self.conn.as_mut() else {
                return Err(BackendError::Unavailable("PostgreSQL: connection lost".into()));
            };
            match c.batch(&sh, "COMMIT").await {
                Ok(()) => Ok(()),
                Err(e) => {
                    if matches!(e, PgErr::Fatal(_)) {
                        self.conn = None;
                    }
                    Err(e.into_backend())
                }
            }
        })
    }

    fn rollback(&mut self, _tx: PgTx) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let sh = self.sh.clone();
            if let Some(c) = self.conn.as_mut() {
                if c.batch(&sh, "ROLLBACK").await.is_err() {
                    self.conn = None;
                }
            }
        })
    }

    fn read_in<'a>(
        &'a mut self,
        tx: &'a mut PgTx,
        m: &'a Mapping,
        keys: &'a [Vec<u8>],
        protect: bool,
    ) -> BoxFuture<'a, Result<OpResult, StmtErr>> {
        Box::pin(self.guarded(tx, protect, m, Work::Read(keys)))
    }

    fn read_alone<'a>(
        &'a mut self,
        m: &'a Mapping,
        keys: &'a [Vec<u8>],
    ) -> BoxFuture<'a, Result<OpResult, BackendError>> {
        Box::pin(async move {
            let sh = self.sh.clone();
            let (c, reused) = self.conn().await?;
            match read_rows(&sh, c, m, keys).await {
                Err(e @ PgErr::Fatal(_)) => {
                    self.conn = None;
                    if !reused || e_timed_out(&e) {
                        return Err(e.into_backend());
                    }
                    let (c, _) = self.conn().await?;
                    let r = read_rows(&sh, c, m, keys).await;
                    if matches!(r, Err(PgErr::Fatal(_))) {
                        self.conn = None;
                    }
                    r.map_err(PgErr::into_backend)
                }
                r => r.map_err(PgErr::into_backend),
            }
        })
    }

    fn write_in<'a>(
        &'a mut self,
        tx: &'a mut PgTx,
        m: &'a Mapping,
        op: &'a Op,
        protect: bool,
    ) -> BoxFuture<'a, Result<OpResult, StmtErr>> {
        Box::pin(self.guarded(tx, protect, m, Work::Write(op)))
    }

    fn flush<'a>(&'a mut self, m: &'a Mapping) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            let sh = self.sh.clone();
            let (c, _) = self.conn().await?;
            match c.batch(&sh, &m.sql.flush).await {
                Ok(()) => Ok(()),
                Err(e) => {
                    if matches!(e, PgErr::Fatal(_)) {
                        self.conn = None;
                    }
                    Err(e.into_backend())
                }
            }
        })
    }

    fn groups(&self) -> bool {
        true
    }

    fn sets_alone<'a>(
        &'a mut self,
        m: &'a Mapping,
        ops: &'a [&'a Op],
    ) -> BoxFuture<'a, Result<Vec<Result<OpResult, BackendError>>, BackendError>> {
        Box::pin(async move {
            let sh = self.sh.clone();
            let (rows, results) = blind_rows(m, ops, &sh.clock);
            if rows.is_empty() {
                return Ok(results);
            }
            let mut params = Vec::new();
            for (key, row) in &rows {
                params.push(key_param(key));
                row_params(m, row, &mut params);
            }
            let sql = m.sql.set_rows(rows.len());
            let (c, reused) = self.conn().await?;
            match c.execute(&sh, &sql, &params).await {
                Ok(_) => Ok(results),
                Err(e @ PgErr::Fatal(_)) => {
                    self.conn = None;
                    if !reused || e_timed_out(&e) {
                        return Err(e.into_backend());
                    }
                    // A connection that died while idle: once more on a new one (sets are
                    // idempotent; each keeps the cas it was given).
                    let (c, _) = self.conn().await?;
                    let r = c.execute(&sh, &sql, &params).await;
                    if matches!(r, Err(PgErr::Fatal(_))) {
                        self.conn = None;
                    }
                    r.map(|_| results).map_err(PgErr::into_backend)
                }
                Err(PgErr::Server { .. }) if ops.len() > 1 => {
                    // One bad set (a value too long for its column) fails alone.
                    let mut out = Vec::with_capacity(ops.len());
                    for op in ops {
                        let answer = match self.conn().await {
                            Ok((c, _)) => set_one(&sh, c, m, op).await,
                            Err(e) => Err(PgErr::Request(e)),
                        };
                        if matches!(answer, Err(PgErr::Fatal(_))) {
                            self.conn = None;
                        }
                        out.push(answer.map_err(PgErr::into_backend));
                    }
                    Ok(out)
                }
                Err(e) => Err(e.into_backend()),
            }
        })
    }

    fn stats(&self) -> &Stats {
        &self.sh.stats
    }
}

fn e_timed_out(e: &PgErr) -> bool {
    matches!(e, PgErr::Fatal(s) if s.starts_with(NO_ANSWER))
}
