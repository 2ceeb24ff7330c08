//! What every source's follower offers the feeds: its distance to the head, its counters,
//! and how many row images one transaction may list before it reports the table instead.

use std::sync::Arc;

/// A snapshot of one follower's counters, whatever the source.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeedStats {
    /// Changes flow from the server (between `Connected` and `Disconnected`).
    pub connected: bool,
    /// Events read from the stream (keepalives and heartbeats excluded) since the start.
    pub events: u64,
    /// Times the stream came back after a break.
    pub reconnects: u64,
    /// How far behind the server's head the follower is, in ms (0 when caught up).
    pub lag_ms: u64,
    /// Times the server was asked where its log ends.
    pub head_probes: u64,
    /// Head probes that failed (no answer, no rights).
    pub head_probe_failures: u64,
    /// Where the follower is, in the source's own notation (`file:offset`, an LSN); None
    /// until the first connection.
    pub position: Option<String>,
    /// Where a restarted follower goes on without missing a transaction (the source's own
    /// notation, parsed back by the source); None when the server keeps it (a slot).
    pub resume: Option<String>,
    /// Figures only this source has (the slot's name and `wal_status`, the WAL it holds...):
    /// name, kind (`Info` values are listed per server, the others summed), value.
    pub extra: Vec<(&'static str, engine::stats::Kind, String)>,
}

/// The lag of a follower, read on hot paths (no reference taken on the feed).
pub trait Lag: Send + Sync {
    /// How far behind the server's head the follower is now, in ms.
    fn lag_ms(&self) -> u64;
}

/// A running follower of one server's change feed (a binlog replica, a logical
/// replication slot): it reports every [`crate::Change`] to the callback it was started
/// with, on a thread of its own, and stops when dropped.
pub trait Follow: Send + Sync {
    /// How far behind the server's head the follower is now, in ms.
    fn lag_ms(&self) -> u64;
    /// The follower's counters now.
    fn stats(&self) -> FeedStats;
    /// From now on, one transaction's row images of one table past `rows` are reported as
    /// one `Change::ManyRows` (0: every row is reported).
    fn set_bulk_rows(&self, rows: usize);
    /// The follower's lag, as a handle that outlives no one (for [`crate::fresh`]).
    fn lag(&self) -> Arc<dyn Lag>;
}
