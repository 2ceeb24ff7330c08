//! MariaDB/MySQL statements on one connection, shared by the backend's lanes
//! (`mysql.rs`), the local group commit (`local.rs`) and its grouped writes (`group.rs`):
//! errors and their classes, the shared settings (`Shared`: timeouts, stats, CAS clock),
//! row decoding and parameters, reads and single writes. It imports none of them, so the
//! three import it in one direction.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Params, Pool, Transaction, TxOpts, Value};

use super::Stats;
use crate::error::BackendError;
use crate::ops::{plan, unix_now, CasClock, Existing, NewRow, Op, OpResult, Write};
use crate::sql::in_chunks;
use crate::validate::Mapping;

pub(super) const ER_DUP_ENTRY: u16 = 1062;
pub(super) const ER_LOCK_DEADLOCK: u16 = 1213;
/// How long operations fail fast after a failed connect.
const DOWN_HOLD: Duration = Duration::from_secs(1);

/// A failed statement.
#[derive(Debug)]
pub(super) enum MyErr {
    /// The connection is unusable (I/O error, timeout, protocol): drop it.
    Fatal(String),
    /// The server refused the statement; the connection is fine.
    Server { code: u16, msg: String },
    /// Not the backend's: the request itself (too many value parts).
    Request(BackendError),
}

/// How a statement timeout's message starts.
const NO_ANSWER: &str = "no answer within";

impl MyErr {
    /// A connection found dead at once (not a statement that ran out of time): worth
    /// one more try on a new connection when nothing was at stake.
    pub(super) fn dead_at_once(&self) -> bool {
        matches!(self, MyErr::Fatal(s) if !s.starts_with(NO_ANSWER))
    }

    pub(super) fn into_backend(self) -> BackendError {
        match self {
            MyErr::Fatal(s) => BackendError::Unavailable(format!("MySQL: {s}")),
            MyErr::Server { msg, .. } => BackendError::Sql(format!("MySQL: {msg}")),
            MyErr::Request(e) => e,
        }
    }
}

pub(super) fn classify(e: mysql_async::Error) -> MyErr {
    match &e {
        mysql_async::Error::Server(s) => MyErr::Server { code: s.code, msg: e.to_string() },
        _ => MyErr::Fatal(e.to_string()),
    }
}

/// What all lanes share.
pub(super) struct Shared {
    pub(super) pool: Pool,
    pub(super) stats: Arc<Stats>,
    pub(super) clock: Arc<CasClock>,
    pub(super) connect_timeout: Duration,
    pub(super) query_timeout: Duration,
    /// Set after a failed connect: until then, fail at once with this message.
    pub(super) down: Mutex<Option<(Instant, String)>>,
}

impl Shared {
    pub(super) async fn timed<T>(&self, fut: impl Future<Output = mysql_async::Result<T>>) -> Result<T, MyErr> {
        match tokio::time::timeout(self.query_timeout, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(classify(e)),
            Err(_) => Err(MyErr::Fatal(format!("{NO_ANSWER} {} ms", self.query_timeout.as_millis()))),
        }
    }

    pub(super) fn check_down(&self) -> Result<(), BackendError> {
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

    pub(super) fn mark_down(&self, msg: &str) -> BackendError {
        let msg = format!("MySQL: cannot connect: {msg}");
        *self.down.lock().unwrap() = Some((Instant::now() + DOWN_HOLD, msg.clone()));
        BackendError::Unavailable(msg)
    }

    /// Runs `connect` (a pool checkout) bounded by the connect timeout; a failure holds
    /// further attempts off for a second.
    pub(super) async fn connect<T>(
        &self,
        connect: impl Future<Output = mysql_async::Result<T>>,
    ) -> Result<T, BackendError> {
        self.check_down()?;
        match tokio::time::timeout(self.connect_timeout, connect).await {
            Ok(Ok(c)) => Ok(c),
            Ok(Err(e)) => Err(self.mark_down(&engine::errors::cause(&e))),
            Err(_) => Err(self.mark_down(&format!("no connection within {} ms", self.connect_timeout.as_millis()))),
        }
    }

    pub(super) async fn get_conn(&self) -> Result<Conn, BackendError> {
        self.connect(self.pool.get_conn()).await
    }

    /// Starts a transaction; a connection found dead right away (nothing at stake) is
    /// replaced once.
    pub(super) async fn begin(&self, readonly: bool) -> Result<Transaction<'static>, BackendError> {
        let mut opts = TxOpts::default();
        if readonly {
            opts.with_readonly(true);
        }
        match self.connect(self.pool.start_transaction(opts.clone())).await {
            Ok(t) => Ok(t),
            Err(_) if self.down.lock().unwrap().take().is_some() => {
                self.connect(self.pool.start_transaction(opts)).await
            }
            Err(e) => Err(e),
        }
    }
}

fn val_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::NULL => None,
        Value::Bytes(b) => Some(b.clone()),
        Value::Int(i) => Some(i.to_string().into_bytes()),
        Value::UInt(u) => Some(u.to_string().into_bytes()),
        Value::Float(f) => Some(f.to_string().into_bytes()),
        Value::Double(f) => Some(f.to_string().into_bytes()),
        other => Some(other.as_sql(true).trim_matches('\'').as_bytes().to_vec()),
    }
}

pub(super) fn val_int(v: &Value) -> Option<i64> {
    match v {
        Value::NULL => None,
        Value::Int(i) => Some(*i),
        Value::UInt(u) => Some(*u as i64),
        Value::Float(f) => Some(*f as i64),
        Value::Double(f) => Some(*f as i64),
        Value::Bytes(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
        _ => None,
    }
}

pub(super) fn val_string(v: Option<&Value>) -> Option<String> {
    v.and_then(val_bytes).map(|b| String::from_utf8_lossy(&b).into_owned())
}

pub(super) fn decode(m: &Mapping, r: &mysql_async::Row) -> (Vec<u8>, Existing) {
    let l = &m.sql.layout;
    let get = |i: usize| r.as_ref(i).unwrap_or(&Value::NULL);
    let key = val_bytes(get(0)).unwrap_or_default();
    let parts = (0..l.n_values).map(|i| val_bytes(get(1 + i))).collect();
    let int = |p: Option<usize>| p.and_then(|i| val_int(get(i)));
    let existing = Existing {
        parts,
        flags: int(l.flags).unwrap_or(0) as u32,
        cas: int(l.cas).unwrap_or(0) as u64,
        exp: int(l.expire),
    };
    (key, existing)
}

pub(super) fn key_param(key: &[u8]) -> Value {
    Value::Bytes(key.to_vec())
}

pub(super) fn row_params(m: &Mapping, row: &NewRow, out: &mut Vec<Value>) {
    for p in &row.parts {
        out.push(match p {
            Some(v) => Value::Bytes(v.clone()),
            None => Value::NULL,
        });
    }
    if m.flags.is_some() {
        out.push(Value::UInt(row.flags as u64));
    }
    if m.cas.is_some() {
        out.push(Value::UInt(row.cas));
    }
    if m.expire.is_some() {
        out.push(row.exp.map_or(Value::NULL, Value::Int));
    }
}

pub(super) async fn select_one<Q: Queryable>(
    sh: &Shared,
    q: &mut Q,
    m: &Mapping,
    sql: &str,
    key: &[u8],
) -> Result<Option<Existing>, MyErr> {
    let rows: Vec<mysql_async::Row> = sh.timed(q.exec(sql, Params::Positional(vec![key_param(key)]))).await?;
    Ok(rows.first().map(|r| decode(m, r).1))
}

pub(super) async fn read_rows<Q: Queryable>(
    sh: &Shared,
    q: &mut Q,
    m: &Mapping,
    keys: &[Vec<u8>],
) -> Result<OpResult, MyErr> {
    let now = unix_now();
    let mut found: HashMap<Vec<u8>, Existing> = HashMap::new();
    if keys.len() == 1 {
        if let Some(e) = select_one(sh, q, m, &m.sql.select, &keys[0]).await? {
            found.insert(keys[0].clone(), e);
        }
    } else {
        let wanted: HashSet<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let mut stray = false;
        for (start, len, size) in in_chunks(keys.len()) {
            let params: Vec<Value> = (0..size).map(|i| key_param(&keys[start + i.min(len - 1)])).collect();
            let rows: Vec<mysql_async::Row> =
                sh.timed(q.exec(m.sql.select_in(size), Params::Positional(params))).await?;
            for r in &rows {
                let (k, e) = decode(m, r);
                if wanted.contains(&k[..]) {
                    found.insert(k, e);
                } else {
                    stray = true;
                }
            }
        }
        if stray || !m.key.exact {
            // Integer keys or a case-insensitive collation: match the rest one by one,
            // exactly as a single get would.
            for k in keys {
                if !found.contains_key(k) {
                    if let Some(e) = select_one(sh, q, m, &m.sql.select, k).await? {
                        found.insert(k.clone(), e);
                    }
                }
            }
        }
    }
    Ok(crate::ops::read_result(keys, &found, now, &m.separator))
}

async fn apply<Q: Queryable>(
    sh: &Shared,
    q: &mut Q,
    m: &Mapping,
    key: &[u8],
    w: &Write,
    now: i64,
) -> Result<(), MyErr> {
    let (sql, params): (&str, Vec<Value>) = match w {
        Write::None => return Ok(()),
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
            Some(s) => (s, vec![Value::Int(*exp), key_param(key)]),
            None => return Ok(()),
        },
        Write::Delete => (&m.sql.delete, vec![key_param(key)]),
        Write::DeleteExpired => match &m.sql.delete_expired {
            Some(s) => (s, vec![key_param(key), Value::Int(now)]),
            None => return Ok(()),
        },
    };
    sh.timed(q.exec_drop(sql, Params::Positional(params))).await
}

/// One write inside the lane's open transaction: lock-read the row, decide, run at most
/// one statement. An INSERT that meets a row another client inserted meanwhile (READ
/// COMMITTED takes no gap lock) is decided again once.
pub(super) async fn run_write<Q: Queryable>(sh: &Shared, q: &mut Q, m: &Mapping, op: &Op) -> Result<OpResult, MyErr> {
    let key = op.key().expect("write op has a key");
    let mut retried = false;
    loop {
        let now = unix_now();
        let existing = select_one(sh, q, m, &m.sql.select_for_write, key).await?;
        let (w, res) = plan(m, op, existing.as_ref(), now, &sh.clock).map_err(MyErr::Request)?;
        match apply(sh, q, m, key, &w, now).await {
            Err(MyErr::Server { code: ER_DUP_ENTRY, .. }) if !retried && matches!(w, Write::Insert(_)) => {
                retried = true
            }
            Err(e) => return Err(e),
            Ok(()) => return Ok(res),
        }
    }
}
