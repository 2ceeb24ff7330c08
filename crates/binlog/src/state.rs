//! What a follower is told (its [`Config`]), what it reports ([`Stats`]), and the state
//! its stream, its head prober and its handle share ([`Shared`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use crate::position::{now_ms, Position};

/// How to reach the server and who to be.
#[derive(Clone, Debug)]
pub struct Config {
    /// `host:port` of the MariaDB/MySQL server.
    pub backend: String,
    /// Account with REPLICATION SLAVE, BINLOG MONITOR (MariaDB) / REPLICATION CLIENT (MySQL)
    /// and SELECT on information_schema.
    pub user: String,
    /// Its password.
    pub password: String,
    /// Server id this replica registers with (must differ from every other replica's).
    pub server_id: u32,
    /// Where to start: None, the binlog's current end; Some, right after that transaction
    /// boundary (a [`Stats::resume`] saved earlier). If the server no longer has it, the
    /// follower reports `Change::All` and starts at the end.
    pub start: Option<Position>,
}

/// A snapshot of the follower's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Events flow from the server (between `Connected` and `Disconnected`).
    pub connected: bool,
    /// Binlog events read (heartbeats excluded) since the start.
    pub events: u64,
    /// Times the stream came back after a break.
    pub reconnects: u64,
    /// How far behind the server's binlog head the follower is, in ms (0 when caught up;
    /// measured against the head as the server reports it, see `head.rs`; grows while
    /// disconnected or while the head cannot be asked).
    pub lag_ms: u64,
    /// Times the server told where its binlog ends.
    pub head_probes: u64,
    /// Head probes that failed (no answer, no rights).
    pub head_probe_failures: u64,
    /// Position after the last event read (None until the first connection).
    pub position: Option<Position>,
    /// Position after the last complete transaction reported: where a follower started
    /// with [`Config::start`] set to it goes on without missing or repeating a transaction.
    pub resume: Option<Position>,
}

/// State shared by the follower thread and its handle.
#[derive(Default)]
pub(crate) struct Shared {
    pub(crate) connected: AtomicBool,
    pub(crate) events: AtomicU64,
    pub(crate) reconnects: AtomicU64,
    /// The follower's distance to the server's binlog head.
    pub(crate) head: crate::head::Head,
    /// Row images of one table in one transaction past which the rest become one
    /// `Change::ManyRows` (0: never).
    pub(crate) bulk_rows: AtomicUsize,
    /// When the stream broke (unix ms; 0: not broken).
    pub(crate) broken_at_ms: AtomicU64,
    pub(crate) position: Mutex<Option<Position>>,
    /// After the last complete transaction reported.
    pub(crate) resume: Mutex<Option<Position>>,
}

impl Shared {
    /// See [`crate::Follower::lag_ms`]: the distance to the head, or the time since the stream broke.
    pub(crate) fn lag_ms(&self) -> u64 {
        let now = now_ms();
        let mut lag = self.head.lag_ms(now);
        let broken = self.broken_at_ms.load(Relaxed);
        if !self.connected.load(Relaxed) && broken != 0 {
            lag = lag.max(now.saturating_sub(broken));
        }
        lag
    }
}
