//! Batching, as InnoDB's memcached plugin does it (MySQL 5.6, "New Enhancements for
//! InnoDB Memcached"):
//!
//! * Every backend connection ("lane") runs its operations one after another. Writes are
//!   grouped into one open transaction per writer connection until `w_batch_size`
//!   operations have run, then committed; reads likewise with `r_batch_size` on reader
//!   connections (a batch size of 1 means no explicit read transaction at all).
//! * Every lane wakes at least once a second; a transaction that has been idle (no
//!   operation) for `bk_commit_interval` seconds is committed then. Dropping the
//!   [`crate::Containers`] (or [`crate::Containers::commit_all`]) commits as well.
//! * With `w_batch_size = 1` (the default) each write commits *before* it is
//!   acknowledged: an acknowledged write is in the backend (as durable as the backend
//!   makes a commit: SQLite `synchronous = full` fsyncs it; MySQL per
//!   `innodb_flush_log_at_trx_commit`).
//! * With `w_batch_size = N > 1` a write is acknowledged while its transaction is still
//!   open. Until that transaction commits (after N writes, or `bk_commit_interval` idle
//!   seconds) **the acknowledged writes exist only in the open transaction**: if the
//!   backend dies, the connection breaks, the transaction is rolled back (e.g. a MySQL
//!   deadlock) or the process is killed, up to N-1 acknowledged writes (plus the one in
//!   flight) are lost. The loss is reported to the operation that discovered it as
//!   [`crate::BackendError::Lost`] and counted in [`crate::BackendStats`]; the lost writes
//!   are never replayed (a replay could apply an incr twice). Other SQL sessions do not
//!   see those writes before the commit, and their rows stay locked until then (MySQL).
//!   Reads through sqlcached do see them: while a writer connection has uncommitted
//!   writes, reads of the keys it owns are sent to that same connection.
//! * With `r_batch_size > 1` on SQLite, a read transaction keeps its snapshot until it
//!   commits, so reads may miss commits made by *other* processes for up to
//!   `r_batch_size` reads or `bk_commit_interval` seconds. sqlcached's own writes are
//!   always seen: a reader whose transaction began before the writer's latest commit
//!   starts a new one before reading. MySQL connections use READ COMMITTED, where every
//!   statement sees the latest commits.

use std::time::{Duration, Instant};

/// The state of one connection's batch transaction.
#[derive(Debug)]
pub(crate) struct Batch {
    limit: u32,
    interval: Duration,
    open: bool,
    /// Operations run (and acknowledged) in the open transaction.
    ops: u64,
    last: Instant,
}

impl Batch {
    pub fn new(limit: u32, interval: Duration) -> Batch {
        Batch { limit: limit.max(1), interval, open: false, ops: 0, last: Instant::now() }
    }

    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Acknowledged operations in the open transaction (what a loss would lose).
    pub fn pending(&self) -> u64 {
        self.ops
    }

    pub fn begun(&mut self) {
        self.open = true;
        self.ops = 0;
        self.last = Instant::now();
    }

    /// One more operation ran in the transaction; true if the batch is now full and
    /// must be committed before the operation is acknowledged.
    pub fn ran(&mut self) -> bool {
        self.ops += 1;
        self.last = Instant::now();
        self.ops >= self.limit as u64
    }

    /// The background rule: open and idle for `bk_commit_interval`.
    pub fn idle_due(&self) -> bool {
        self.open && self.last.elapsed() >= self.interval
    }

    /// The transaction ended (committed or lost); returns the operations it held.
    pub fn closed(&mut self) -> u64 {
        self.open = false;
        std::mem::take(&mut self.ops)
    }
}

/// How often a lane wakes to check its batch when no operation arrives.
pub(crate) const TICK: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_fills_and_idles() {
        let mut b = Batch::new(3, Duration::from_millis(30));
        assert!(!b.is_open() && !b.idle_due());
        b.begun();
        assert!(!b.ran());
        assert!(!b.ran());
        assert!(b.ran());
        assert_eq!(b.closed(), 3);
        b.begun();
        b.ran();
        assert!(!b.idle_due());
        std::thread::sleep(Duration::from_millis(40));
        assert!(b.idle_due());
        assert_eq!(b.pending(), 1);
        assert_eq!(b.closed(), 1);
        assert!(!b.idle_due());
    }

    #[test]
    fn batch_size_one_commits_every_op() {
        let mut b = Batch::new(1, Duration::from_secs(5));
        b.begun();
        assert!(b.ran());
    }
}
