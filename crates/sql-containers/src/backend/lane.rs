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
    /// The backend's counters.
    fn stats(&self) -> &Stats;
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
        loop {
            match tokio::time::timeout(TICK, rx.recv()).await {
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
