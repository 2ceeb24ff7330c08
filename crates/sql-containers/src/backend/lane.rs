//! The batching lane of a networked backend, written once for any database behind the
//! [`LaneDb`] trait (MySQL's `MyDb` in `mysql.rs`, PostgreSQL's `PgDb` in `pgconn.rs`):
//! a task that runs its queue of jobs in order on one connection, keeps writes in one
//! open transaction until `w_batch_size` of them ran (or `bk_commit_interval` idle
//! seconds passed), answers reads of a dirty writer inside that transaction
//! (read-your-writes), and reports a transaction lost with acknowledged writes in it as
//! [`BackendError::Lost`], never replaying them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::{deadline_passed, queue_timeout_error, BoxFuture, Job, Stats};
use crate::batch::{Batch, TICK};
use crate::error::BackendError;
use crate::ops::{Op, OpResult};
use crate::validate::Mapping;

/// How a statement inside a transaction failed, as far as the lane cares.
#[derive(Debug)]
pub(super) enum StmtErr {
    /// The transaction is gone (connection dead or timed out, deadlock, aborted): it is
    /// dropped, and its acknowledged writes are lost.
    TxnGone(BackendError),
    /// The statement was refused and undone alone (or nothing was at stake): the
    /// transaction and its earlier writes are intact.
    Refused(BackendError),
}

impl StmtErr {
    fn into_backend(self) -> BackendError {
        match self {
            StmtErr::TxnGone(e) | StmtErr::Refused(e) => e,
        }
    }
}

/// One lane's connection to a database: what the lane driver asks of it.
pub(super) trait LaneDb: Send + 'static {
    /// An open transaction's handle (whatever the connection needs to go on in it).
    type Tx: Send;
    /// Starts a transaction (`readonly` for a reader lane's read batch); a connection
    /// found dead at once is replaced (nothing is at stake yet).
    fn begin(&mut self, readonly: bool) -> BoxFuture<'_, Result<Self::Tx, BackendError>>;
    /// Commits it.
    fn commit(&mut self, tx: Self::Tx) -> BoxFuture<'_, Result<(), BackendError>>;
    /// Rolls it back (errors ignored: a dead connection rolls back by itself).
    fn rollback(&mut self, tx: Self::Tx) -> BoxFuture<'_, ()>;
    /// Reads `keys` inside the transaction; `protect`: acknowledged writes are in it, so
    /// a refused statement must not abort it.
    fn read_in<'a>(
        &'a mut self,
        tx: &'a mut Self::Tx,
        m: &'a Mapping,
        keys: &'a [Vec<u8>],
        protect: bool,
    ) -> BoxFuture<'a, Result<OpResult, StmtErr>>;
    /// Reads `keys` outside any transaction (a dead connection is replaced once: reads are
    /// idempotent).
    fn read_alone<'a>(
        &'a mut self,
        m: &'a Mapping,
        keys: &'a [Vec<u8>],
    ) -> BoxFuture<'a, Result<OpResult, BackendError>>;
    /// Runs one write inside the transaction (`protect` as for [`LaneDb::read_in`]).
    fn write_in<'a>(
        &'a mut self,
        tx: &'a mut Self::Tx,
        m: &'a Mapping,
        op: &'a Op,
        protect: bool,
    ) -> BoxFuture<'a, Result<OpResult, StmtErr>>;
    /// Empties the container's table, committed at once.
    fn flush<'a>(&'a mut self, m: &'a Mapping) -> BoxFuture<'a, Result<(), BackendError>>;
    /// Whether the lane groups queued jobs (with `w_batch_size` / `r_batch_size` 1): plain
    /// sets written by one autocommitted statement ([`LaneDb::sets_alone`]), gets of one
    /// container read by one. PostgreSQL's lanes do; MySQL groups on its own per-thread
    /// lanes (`local.rs`), so its lanes run each job alone.
    fn groups(&self) -> bool {
        false
    }
    /// Writes plain sets ([`Op::is_blind_set`], one container) as one autocommitted
    /// statement without reading the rows; each set's answer, or the statement's error.
    fn sets_alone<'a>(
        &'a mut self,
        m: &'a Mapping,
        ops: &'a [&'a Op],
    ) -> BoxFuture<'a, Result<Vec<Result<OpResult, BackendError>>, BackendError>> {
        let _ = (m, ops);
        Box::pin(async { Err(BackendError::Unavailable("plain sets in one statement: not on this database".into())) })
    }
    /// The backend's counters.
    fn stats(&self) -> &Stats;
}

/// Most plain sets one autocommitted statement writes ([`AsyncLane::set_group`]).
const SET_GROUP: usize = 32;

/// Most keys one merged read asks for ([`AsyncLane::read_group`]).
const READ_GROUP: usize = 128;

/// The keys of a get job (none for any other).
fn get_keys(job: &Job) -> &[Vec<u8>] {
    match job {
        Job::Op { op: Op::Get { keys }, .. } => keys,
        _ => &[],
    }
}

/// `first` and the jobs queued behind it that `joins` and that are for the same container,
/// until their `size` adds up to `most`; with the first queued job that does not join (it
/// runs next, so the queue's order is kept).
fn gather(
    first: Job,
    rx: &mut mpsc::UnboundedReceiver<Job>,
    joins: impl Fn(&Job) -> bool,
    size: impl Fn(&Job) -> usize,
    most: usize,
) -> (Vec<Job>, Option<Job>) {
    let mut n = size(&first);
    let mut jobs = vec![first];
    while n < most {
        match rx.try_recv() {
            Ok(j) if joins(&j) && same_container(&j, &jobs[0]) => {
                n += size(&j);
                jobs.push(j);
            }
            Ok(j) => return (jobs, Some(j)),
            Err(_) => break,
        }
    }
    (jobs, None)
}

/// Whether two jobs are for the same container.
fn same_container(a: &Job, b: &Job) -> bool {
    match (a, b) {
        (Job::Op { mapping: x, .. }, Job::Op { mapping: y, .. }) => Arc::ptr_eq(x, y),
        _ => false,
    }
}

/// A lane task: its database connection and batch state.
pub(super) struct AsyncLane<D: LaneDb> {
    db: D,
    writer: bool,
    limit: u32,
    batch: Batch,
    tx: Option<D::Tx>,
    dirty: Arc<AtomicBool>,
}

impl<D: LaneDb> AsyncLane<D> {
    /// A writer (`w_batch_size` = `limit`) or reader (`r_batch_size`) lane; `dirty` is
    /// the router's view of its uncommitted writes.
    pub fn new(db: D, writer: bool, limit: u32, interval: Duration, dirty: Arc<AtomicBool>) -> AsyncLane<D> {
        AsyncLane { db, writer, limit, batch: Batch::new(limit, interval), tx: None, dirty }
    }

    /// Runs jobs until the queue closes (then commits what is open).
    pub async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Job>) {
        let mut next: Option<Job> = None;
        loop {
            let got = match next.take() {
                Some(job) => Ok(Some(job)),
                None => tokio::time::timeout(TICK, rx.recv()).await,
            };
            match got {
                Ok(Some(job)) if self.blind(&job) => next = self.set_group(job, &mut rx).await,
                Ok(Some(job)) if self.mergeable(&job) => next = self.read_group(job, &mut rx).await,
                Ok(Some(job)) => self.handle(job).await,
                Ok(None) => {
                    if let Err((n, e)) = self.commit().await {
                        self.db.stats().lost(n, e);
                    }
                    return;
                }
                Err(_) => {}
            }
            if self.batch.idle_due() {
                if let Err((n, e)) = self.commit().await {
                    self.db.stats().lost(n, e);
                }
            }
        }
    }

    /// Whether `job` is a plain set this lane writes alone: commit before each reply
    /// (`w_batch_size` 1), no transaction open, a database that can.
    fn blind(&self, job: &Job) -> bool {
        let set = matches!(job, Job::Op { op, reply: Some(_), deadline, .. } if op.is_blind_set() && !deadline_passed(*deadline));
        set && self.writer && self.limit <= 1 && self.tx.is_none() && self.db.groups()
    }

    /// Whether `job` is a get this reader lane reads together with the gets queued
    /// behind it (no read batch transaction: `r_batch_size` 1).
    fn mergeable(&self, job: &Job) -> bool {
        let get =
            matches!(job, Job::Op { op: Op::Get { .. }, reply: Some(_), deadline, .. } if !deadline_passed(*deadline));
        get && !self.writer && self.limit <= 1 && self.tx.is_none() && self.db.groups()
    }

    /// Merged reads: `first` and the gets of the same container queued behind it (up to
    /// [`READ_GROUP`] keys) are read by one statement, and each is answered its rows.
    /// Returns the first queued job that is not one of them, to run next.
    async fn read_group(&mut self, first: Job, rx: &mut mpsc::UnboundedReceiver<Job>) -> Option<Job> {
        let (mut jobs, rest) = gather(first, rx, |j| self.mergeable(j), |j| get_keys(j).len(), READ_GROUP);
        if jobs.len() == 1 {
            self.handle(jobs.pop().expect("one job")).await;
            return rest;
        }
        let keys: Vec<Vec<u8>> = jobs.iter().flat_map(|j| get_keys(j).iter().cloned()).collect();
        let m = match &jobs[0] {
            Job::Op { mapping, .. } => mapping.clone(),
            Job::Commit { .. } => unreachable!("gets only"),
        };
        let res = self.db.read_alone(&m, &keys).await;
        let stats = self.db.stats();
        let mut rows_left = match res {
            Ok(OpResult::Read { rows, expired }) => Ok((rows.into_iter(), expired)),
            Ok(other) => Err(BackendError::Unavailable(format!("merged read answered {other:?}"))),
            Err(e) => Err(e),
        };
        for job in jobs {
            let Job::Op { op: Op::Get { keys }, reply: Some(reply), .. } = job else { continue };
            let answer = match &mut rows_left {
                Ok((rows, expired)) => {
                    let mine: Vec<_> = rows.by_ref().take(keys.len()).collect();
                    let exp = expired.iter().filter(|k| keys.contains(k)).cloned().collect();
                    Ok(OpResult::Read { rows: mine, expired: exp })
                }
                Err(e) => {
                    Stats::bump(&stats.errors, 1);
                    Err(e.clone())
                }
            };
            let _ = reply.send(answer);
        }
        rest
    }

    /// Group commit for plain sets: `first` and the plain sets of the same container
    /// queued behind it (up to [`SET_GROUP`]) are written by one autocommitted statement,
    /// then each is answered (so each reply still follows its commit). Returns the first
    /// queued job that is not one of them, to run next (the queue's order is kept).
    async fn set_group(&mut self, first: Job, rx: &mut mpsc::UnboundedReceiver<Job>) -> Option<Job> {
        let (jobs, rest) = gather(first, rx, |j| self.blind(j), |_| 1, SET_GROUP);
        let parts: Vec<(&Arc<Mapping>, &Op)> = jobs
            .iter()
            .filter_map(|j| match j {
                Job::Op { mapping, op, .. } => Some((mapping, op)),
                Job::Commit { .. } => None,
            })
            .collect();
        let ops: Vec<&Op> = parts.iter().map(|p| p.1).collect();
        let m = parts[0].0.clone();
        let res = self.db.sets_alone(&m, &ops).await;
        let stats = self.db.stats();
        let mut answers: Vec<Result<OpResult, BackendError>> = match res {
            Ok(r) => {
                Stats::bump(&stats.commits, 1);
                r
            }
            Err(e) => ops.iter().map(|_| Err(e.clone())).collect(),
        };
        for (job, answer) in jobs.into_iter().zip(answers.drain(..)) {
            if answer.is_err() {
                Stats::bump(&stats.errors, 1);
            }
            if let Job::Op { reply: Some(reply), .. } = job {
                let _ = reply.send(answer);
            }
        }
        rest
    }

    async fn handle(&mut self, job: Job) {
        match job {
            Job::Commit { reply } => {
                let r = self.commit().await.map_err(|(n, e)| self.db.stats().lost(n, e));
                let _ = reply.send(r);
            }
            Job::Op { mapping, op, reply, deadline } => {
                let res = if deadline_passed(deadline) {
                    Err(queue_timeout_error(Duration::ZERO))
                } else {
                    match &op {
                        Op::Get { keys } => self.read(&mapping, keys).await,
                        Op::Flush => self.flush(&mapping).await,
                        _ => self.write(&mapping, &op).await,
                    }
                };
                if res.is_err() {
                    Stats::bump(&self.db.stats().errors, 1);
                }
                if let Some(reply) = reply {
                    let _ = reply.send(res);
                }
            }
        }
    }

    /// Forgets the open transaction; returns the operations it held.
    fn abandon(&mut self) -> u64 {
        self.tx = None;
        self.dirty.store(false, Ordering::Release);
        self.batch.closed()
    }

    async fn commit(&mut self) -> Result<(), (u64, BackendError)> {
        let Some(tx) = self.tx.take() else {
            return Ok(());
        };
        let r = self.db.commit(tx).await;
        let n = self.abandon();
        match r {
            Ok(()) => {
                Stats::bump(&self.db.stats().commits, 1);
                Ok(())
            }
            Err(e) => Err((n, e)),
        }
    }

    async fn read(&mut self, m: &Mapping, keys: &[Vec<u8>]) -> Result<OpResult, BackendError> {
        if self.writer {
            // Read-your-writes: inside this lane's open transaction, if any.
            if let Some(tx) = self.tx.as_mut() {
                return match self.db.read_in(tx, m, keys, true).await {
                    Ok(r) => Ok(r),
                    Err(StmtErr::TxnGone(e)) => {
                        let n = self.abandon();
                        Err(self.db.stats().lost(n, e))
                    }
                    Err(StmtErr::Refused(e)) => Err(e),
                };
            }
        } else if self.limit > 1 {
            if self.tx.is_none() {
                self.tx = Some(self.db.begin(true).await?);
                self.batch.begun();
            }
            let tx = self.tx.as_mut().expect("just begun");
            let r = self.db.read_in(tx, m, keys, false).await;
            match &r {
                Err(StmtErr::TxnGone(_)) => {
                    self.abandon();
                }
                Err(StmtErr::Refused(_)) => {
                    // Nothing acknowledged is at stake in a read batch: end it.
                    if let Some(tx) = self.tx.take() {
                        self.db.rollback(tx).await;
                    }
                    self.abandon();
                }
                Ok(_) if self.batch.ran() => self.commit().await.map_err(|(_, e)| e)?,
                Ok(_) => {}
            }
            return r.map_err(StmtErr::into_backend);
        }
        self.db.read_alone(m, keys).await
    }

    async fn write(&mut self, m: &Mapping, op: &Op) -> Result<OpResult, BackendError> {
        if self.tx.is_none() {
            self.tx = Some(self.db.begin(false).await?);
            self.batch.begun();
        }
        let protect = self.batch.pending() > 0;
        let tx = self.tx.as_mut().expect("just begun");
        match self.db.write_in(tx, m, op, protect).await {
            Ok(res) => {
                if self.batch.ran() {
                    // Full: commit before acknowledging; a failure loses the earlier
                    // (acknowledged) operations of the batch too.
                    if let Err((n, e)) = self.commit().await {
                        return Err(self.db.stats().lost(n.saturating_sub(1), e));
                    }
                } else {
                    self.dirty.store(true, Ordering::Release);
                }
                Ok(res)
            }
            Err(StmtErr::TxnGone(e)) => {
                let n = self.abandon();
                Err(self.db.stats().lost(n, e))
            }
            Err(StmtErr::Refused(e)) => {
                if self.batch.pending() == 0 {
                    // Nothing else in the transaction: end it (rolled back).
                    if let Some(tx) = self.tx.take() {
                        self.db.rollback(tx).await;
                    }
                    self.abandon();
                }
                Err(e)
            }
        }
    }

    async fn flush(&mut self, m: &Mapping) -> Result<OpResult, BackendError> {
        self.commit().await.map_err(|(n, e)| self.db.stats().lost(n, e))?;
        self.db.flush(m).await?;
        Stats::bump(&self.db.stats().commits, 1);
        Ok(OpResult::Done)
    }
}
