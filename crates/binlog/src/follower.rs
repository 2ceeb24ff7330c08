//! The follower's handle: its thread, its runtime, its counters.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

use crate::change::Change;

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

/// A place in the binlog: file name and byte offset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// Binlog file name, e.g. `binlog.000003`.
    pub file: String,
    /// Offset in that file, after the last event read.
    pub pos: u64,
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
    /// See [`Follower::lag_ms`]: the distance to the head, or the time since the stream broke.
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

/// Now, in ms since the unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// A running binlog follower; dropping it stops the stream and joins its thread.
pub struct Follower {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl Follower {
    /// Starts following `config.backend`'s binlog from its current end on a thread of its own;
    /// `sink` receives every change in binlog order, on that thread (keep it quick).
    pub fn spawn(config: Config, sink: impl Fn(Change) + Send + 'static) -> Follower {
        let shared = Arc::new(Shared::default());
        shared.broken_at_ms.store(now_ms(), Relaxed);
        let (stop, stopped) = watch::channel(false);
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("sqlcached-binlog".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
                let rt = match rt {
                    Ok(rt) => rt,
                    Err(e) => return sink(Change::Disconnected { reason: format!("binlog runtime: {e}") }),
                };
                rt.block_on(crate::session::run(config, sink, sh, stopped));
            })
            .expect("spawn the binlog follower thread");
        Follower { shared, stop, thread: Some(thread) }
    }

    /// How far behind the server's binlog head the follower is now, in ms (cheap: two
    /// atomic loads and the clock; what `--query-cache-max-lag` compares).
    pub fn lag_ms(&self) -> u64 {
        self.shared.lag_ms()
    }

    /// The follower's shared state (for `fresh.rs`, which reads the lag on hot paths
    /// without going through the feed).
    pub(crate) fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// From now on, a transaction's row events of one table past `rows` row images are
    /// reported as one `Change::ManyRows` instead of decoded (0: every row is reported).
    pub fn set_bulk_rows(&self, rows: usize) {
        self.shared.bulk_rows.store(rows, Relaxed);
    }

    /// The follower's counters now.
    pub fn stats(&self) -> Stats {
        let sh = &self.shared;
        let connected = sh.connected.load(Relaxed);
        let lag_ms = self.lag_ms();
        Stats {
            connected,
            events: sh.events.load(Relaxed),
            reconnects: sh.reconnects.load(Relaxed),
            lag_ms,
            head_probes: sh.head.probes.load(Relaxed),
            head_probe_failures: sh.head.probe_failures.load(Relaxed),
            position: sh.position.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            resume: sh.resume.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
