//! The backends behind one async trait, and what they share: connections as *lanes*
//! (one connection each, running its queue of jobs in order, with its own batch
//! transaction) and the router that picks a lane for each operation.
//!
//! * Writes go to the writer lane chosen by hashing (table, key): one key's writes are
//!   always serialized on one connection (no row-lock conflicts between our own
//!   connections, per-key order kept). SQLite has exactly one writer lane.
//! * Reads go to the least busy reader lane, except keys whose writer lane holds
//!   uncommitted writes (`w_batch_size` > 1): those are read on that writer connection,
//!   which sees its own uncommitted rows (read-your-writes).
//! * Rows found expired by a read are removed afterwards by a conditional delete on
//!   their writer lane (no reply awaited).
//! * Flush first makes every lane commit, then empties the table on writer lane 0.

mod group;
mod lane;
mod local;
mod myconn;
pub(crate) mod mysql;
mod pgconn;
pub(crate) mod postgres;
pub(crate) mod sqlite;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::config::PluginRows;
use crate::error::BackendError;
use crate::ops::{Op, OpResult, Row};
use crate::sql::Dialect;
use crate::validate::{Mapping, TableInfo};

pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub(crate) type Reply = oneshot::Sender<Result<OpResult, BackendError>>;

/// What a lane receives.
pub(crate) enum Job {
    Op {
        mapping: Arc<Mapping>,
        op: Op,
        /// None: fire and forget (lazy deletes).
        reply: Option<Reply>,
        /// Not started by then: answered `Unavailable` without running.
        deadline: Instant,
    },
    /// Commit the open batch transaction now (barrier for flush and `commit_all`).
    Commit { reply: oneshot::Sender<Result<(), BackendError>> },
}

/// The sending side of a lane's queue (a std channel for SQLite threads, a tokio one
/// for MySQL and PostgreSQL tasks).
pub(crate) trait LaneTx: Send + Sync {
    fn send_job(&self, job: Job) -> bool;
}

impl LaneTx for std::sync::mpsc::Sender<Job> {
    fn send_job(&self, job: Job) -> bool {
        self.send(job).is_ok()
    }
}

impl LaneTx for tokio::sync::mpsc::UnboundedSender<Job> {
    fn send_job(&self, job: Job) -> bool {
        self.send(job).is_ok()
    }
}

pub(crate) struct Lane {
    pub tx: Box<dyn LaneTx>,
    /// Set while the lane's transaction holds acknowledged, uncommitted writes.
    pub dirty: Arc<AtomicBool>,
    /// Jobs submitted and not yet answered (for picking the least busy reader).
    load: Arc<AtomicUsize>,
}

impl Lane {
    pub fn new(tx: Box<dyn LaneTx>, dirty: Arc<AtomicBool>) -> Lane {
        Lane { tx, dirty, load: Arc::new(AtomicUsize::new(0)) }
    }
}

struct LoadGuard(Arc<AtomicUsize>);
impl Drop for LoadGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

pub(crate) fn stopped() -> BackendError {
    BackendError::Unavailable("the SQL backend has stopped".into())
}

pub(crate) struct Router {
    pub writers: Vec<Lane>,
    pub readers: Vec<Lane>,
    /// How long a job may wait in a lane's queue before it is refused.
    pub queue_timeout: Duration,
    next: AtomicUsize,
}

impl Router {
    pub fn new(writers: Vec<Lane>, readers: Vec<Lane>, queue_timeout: Duration) -> Router {
        assert!(!writers.is_empty() && !readers.is_empty());
        Router { writers, readers, queue_timeout, next: AtomicUsize::new(0) }
    }

    /// Does any writer connection hold acknowledged, uncommitted writes (`w_batch_size` > 1)?
    pub fn any_dirty(&self) -> bool {
        self.writers.iter().any(|l| l.dirty.load(Ordering::Acquire))
    }

    fn writer_for(&self, m: &Mapping, key: &[u8]) -> usize {
        if self.writers.len() == 1 {
            return 0;
        }
        let mut h = m.table_hash;
        for &b in key {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
        }
        (h % self.writers.len() as u64) as usize
    }

    fn reader(&self) -> &Lane {
        let n = self.readers.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let mut best = start % n;
        let mut best_load = usize::MAX;
        for i in 0..n {
            let j = (start + i) % n;
            let l = self.readers[j].load.load(Ordering::Relaxed);
            if l < best_load {
                best = j;
                best_load = l;
                if l == 0 {
                    break;
                }
            }
        }
        &self.readers[best]
    }

    /// Queues a job; the receiver yields its answer.
    fn submit(
        &self,
        lane: &Lane,
        mapping: Arc<Mapping>,
        op: Op,
    ) -> (LoadGuard, Option<oneshot::Receiver<Result<OpResult, BackendError>>>) {
        let (tx, rx) = oneshot::channel();
        lane.load.fetch_add(1, Ordering::Relaxed);
        let guard = LoadGuard(lane.load.clone());
        let job = Job::Op { mapping, op, reply: Some(tx), deadline: Instant::now() + self.queue_timeout };
        let rx = lane.tx.send_job(job).then_some(rx);
        (guard, rx)
    }

    async fn call(&self, lane: &Lane, mapping: Arc<Mapping>, op: Op) -> Result<OpResult, BackendError> {
        let (_guard, rx) = self.submit(lane, mapping, op);
        match rx {
            Some(rx) => rx.await.unwrap_or_else(|_| Err(stopped())),
            None => Err(stopped()),
        }
    }

    pub async fn execute(&self, mapping: Arc<Mapping>, op: Op) -> Result<OpResult, BackendError> {
        match op {
            Op::Get { keys } => self.get(mapping, keys).await,
            Op::Flush => {
                self.commit_all().await?;
                self.call(&self.writers[0], mapping, Op::Flush).await
            }
            op => {
                let w = self.writer_for(&mapping, op.key().expect("write op has a key"));
                self.call(&self.writers[w], mapping, op).await
            }
        }
    }

    async fn get(&self, mapping: Arc<Mapping>, keys: Vec<Vec<u8>>) -> Result<OpResult, BackendError> {
        // Group the keys by the lane that must read them.
        let mut groups: Vec<(Option<usize>, Vec<usize>)> = Vec::new(); // None: a reader
        for (i, k) in keys.iter().enumerate() {
            let w = self.writer_for(&mapping, k);
            let lane = self.writers[w].dirty.load(Ordering::Acquire).then_some(w);
            match groups.iter_mut().find(|(l, _)| *l == lane) {
                Some((_, idx)) => idx.push(i),
                None => groups.push((lane, vec![i])),
            }
        }
        let mut pending = Vec::with_capacity(groups.len());
        for (lane, idx) in groups {
            let lane = match lane {
                Some(w) => &self.writers[w],
                None => self.reader(),
            };
            let ks: Vec<Vec<u8>> = idx.iter().map(|&i| keys[i].clone()).collect();
            pending.push((idx, self.submit(lane, mapping.clone(), Op::Get { keys: ks })));
        }
        let mut out: Vec<Option<Row>> = vec![None; keys.len()];
        let mut first_err = None;
        for (idx, (_guard, rx)) in pending {
            let res = match rx {
                Some(rx) => rx.await.unwrap_or_else(|_| Err(stopped())),
                None => Err(stopped()),
            };
            match res {
                Ok(OpResult::Read { rows, expired }) => {
                    for (j, row) in rows.into_iter().enumerate() {
                        out[idx[j]] = row;
                    }
                    for k in expired {
                        self.delete_expired(&mapping, k);
                    }
                }
                Ok(_) => unreachable!("a read answers rows"),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(OpResult::Rows(out)),
        }
    }

    /// A read's rows as the caller wants them (`Rows`); the expired rows it met are
    /// removed afterwards.
    pub fn read_done(
        &self,
        mapping: &Arc<Mapping>,
        res: Result<OpResult, BackendError>,
    ) -> Result<OpResult, BackendError> {
        match res? {
            OpResult::Read { rows, expired } => {
                for k in expired {
                    self.delete_expired(mapping, k);
                }
                Ok(OpResult::Rows(rows))
            }
            other => Ok(other),
        }
    }

    fn delete_expired(&self, mapping: &Arc<Mapping>, key: Vec<u8>) {
        if mapping.expire.is_none() {
            return;
        }
        let lane = &self.writers[self.writer_for(mapping, &key)];
        let _ = lane.tx.send_job(Job::Op {
            mapping: mapping.clone(),
            op: Op::DeleteExpired { key },
            reply: None,
            deadline: Instant::now() + self.queue_timeout,
        });
    }

    /// Every lane commits its open transaction; the first failure is returned.
    pub async fn commit_all(&self) -> Result<(), BackendError> {
        let mut rxs = Vec::new();
        for lane in self.writers.iter().chain(&self.readers) {
            let (tx, rx) = oneshot::channel();
            if lane.tx.send_job(Job::Commit { reply: tx }) {
                rxs.push(rx);
            } else {
                return Err(stopped());
            }
        }
        let mut res = Ok(());
        for rx in rxs {
            let r = rx.await.unwrap_or_else(|_| Err(stopped()));
            if res.is_ok() {
                res = r;
            }
        }
        res
    }
}

/// Counters of one backend (all since start).
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub commits: AtomicU64,
    pub lost_batches: AtomicU64,
    pub lost_writes: AtomicU64,
    pub connects: AtomicU64,
    pub errors: AtomicU64,
    pub reads_inline: AtomicU64,
}

/// A snapshot of the backend's counters, for `stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackendStats {
    /// Transactions committed (batches, single writes, flushes, read batches).
    pub commits: u64,
    /// Batch transactions lost with acknowledged writes in them.
    pub lost_batches: u64,
    /// Acknowledged writes lost that way (never replayed).
    pub lost_writes: u64,
    /// Connections opened (MySQL, PostgreSQL; SQLite counts its connections at start).
    pub connects: u64,
    /// Operations answered with an error.
    pub errors: u64,
    /// Gets read on the asking thread's own connection (SQLite `inline_reads`).
    pub reads_inline: u64,
}

impl Stats {
    pub fn snapshot(&self) -> BackendStats {
        BackendStats {
            commits: self.commits.load(Ordering::Relaxed),
            lost_batches: self.lost_batches.load(Ordering::Relaxed),
            lost_writes: self.lost_writes.load(Ordering::Relaxed),
            connects: self.connects.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            reads_inline: self.reads_inline.load(Ordering::Relaxed),
        }
    }

    pub fn bump(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// A batch transaction was lost with `ops` acknowledged writes; returns the error to
    /// give the operation that found out (`current` is its own error).
    pub fn lost(&self, ops: u64, current: BackendError) -> BackendError {
        if ops == 0 {
            return current;
        }
        Stats::bump(&self.lost_batches, 1);
        Stats::bump(&self.lost_writes, ops);
        let cause = match current {
            BackendError::Unavailable(s) | BackendError::Sql(s) | BackendError::Invalid(s) => s,
            BackendError::Lost { cause, .. } => cause,
        };
        log::error!("SQL backend: {ops} acknowledged write(s) of an uncommitted batch were lost: {cause}");
        BackendError::Lost { ops, cause }
    }
}

/// What `Containers` needs from a backend. Operations are run by the lanes behind
/// [`Backend::router`]; describing tables and reading the plugin tables happen once at
/// start.
pub(crate) trait Backend: Send + Sync {
    fn dialect(&self) -> Dialect;
    /// The schema of containers that name none (SQLite `main`, MySQL the URL's
    /// database, PostgreSQL `public`).
    fn default_schema(&self) -> Option<String>;
    /// Columns and indexes of a table; `Ok(None)` if there is no such table; `Err` with
    /// a message if the schema itself is unknown or the backend failed.
    fn describe<'a>(&'a self, schema: &'a str, table: &'a str) -> BoxFuture<'a, Result<Option<TableInfo>, String>>;
    /// Whether a connection can be made now (`Err(Unavailable)`: refused, unresolvable,
    /// timed out). Checked once before the tables are read, so that an unreachable backend
    /// is told apart from a wrong configuration.
    fn reachable(&self) -> BoxFuture<'_, Result<(), BackendError>> {
        Box::pin(async { Ok(()) })
    }
    /// The plugin's `innodb_memcache` tables, `Ok(None)` if absent.
    fn plugin_rows(&self) -> BoxFuture<'_, Result<Option<PluginRows>, String>>;
    fn router(&self) -> &Router;
    fn stats(&self) -> BackendStats;

    fn execute(&self, mapping: Arc<Mapping>, op: Op) -> BoxFuture<'_, Result<OpResult, BackendError>> {
        Box::pin(self.router().execute(mapping, op))
    }

    fn commit_all(&self) -> BoxFuture<'_, Result<(), BackendError>> {
        Box::pin(self.router().commit_all())
    }
}

/// Where an expired row's (possibly NULL) exptime says the row is gone.
pub(crate) fn deadline_passed(deadline: Instant) -> bool {
    Instant::now() > deadline
}

pub(crate) fn queue_timeout_error(waited: Duration) -> BackendError {
    BackendError::Unavailable(format!(
        "operation waited {} ms for a backend connection; backend too slow",
        waited.as_millis()
    ))
}
