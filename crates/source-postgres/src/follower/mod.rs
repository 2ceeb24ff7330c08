//! PostgreSQL's change feed as a `sql_source::Follow`: a logical replication slot read on a
//! thread of its own, every committed change reported in the SQL-source vocabulary.
//!
//! At every (re)connection the follower makes sure of its publication (created `FOR TABLE`
//! the followed tables, or those tables added to it: never `FOR ALL TABLES`, which would
//! make PostgreSQL refuse UPDATE and DELETE on every table without a replica identity) and
//! of its slot (created at first start; recreated when it was dropped under us or lost its
//! WAL, which is reported as `Change::All` since the changes in between are unknown), then
//! streams from the slot's confirmed position. Each commit is confirmed once its changes
//! were delivered and [`FollowConfig::confirm_delay`] has passed (with a data directory,
//! the time the disk tier takes to make the invalidations durable), so a restart of
//! sqlcached or of PostgreSQL resumes without a gap. A broken stream is
//! `Change::Disconnected`, then retried (backoff up to 1 s); `Change::Connected` when it
//! flows again.
//!
//! Lag: how long before its delivery the last commit was made (0 once the stream is idle;
//! while a transaction streams in, the time since its commit);
//! while disconnected, the time since the stream broke. A second, ordinary connection
//! reads the slot's `wal_status` and the WAL it holds every [`MONITOR`] (`wal_status`,
//! `wal_retained_bytes`).

mod check;
pub mod ddl;
mod decode;
mod session;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use engine::stats::Kind;
use sql_source::{Change, FeedStats, Follow, Lag};
use tokio::sync::watch;

pub use decode::Decoder;

use crate::Config;

/// How often the slot's health is read.
pub const MONITOR: Duration = Duration::from_secs(5);

/// What to follow and how.
#[derive(Clone, Debug)]
pub struct FollowConfig {
    /// The connection (its role needs REPLICATION, or superuser).
    pub conn: Config,
    /// The server as named in logs and stats (`host:port/db`, no password).
    pub backend: String,
    /// The replication slot's name.
    pub slot: String,
    /// The publication's name.
    pub publication: String,
    /// The tables followed (`schema`, `table`): the publication is made to include them.
    pub tables: Vec<(String, String)>,
    /// How long after its delivery a commit is confirmed to the server.
    pub confirm_delay: Duration,
    /// Install the DDL event triggers ([`ddl`]) at every connection (needs a superuser).
    pub ddl_trigger: bool,
}

/// State shared by the follower's thread and its handle.
#[derive(Default)]
pub(crate) struct Shared {
    pub(crate) connected: AtomicBool,
    pub(crate) events: AtomicU64,
    pub(crate) reconnects: AtomicU64,
    pub(crate) bulk_rows: AtomicUsize,
    /// When the stream broke (unix ms; 0: not broken).
    pub(crate) broken_at_ms: AtomicU64,
    /// How old the last commit was when it was delivered (ms).
    pub(crate) commit_delay_ms: AtomicU64,
    /// When the last message was delivered (unix ms).
    pub(crate) last_message_ms: AtomicU64,
    /// The commit time (unix ms) of the transaction being delivered (0: none): while a
    /// large transaction streams in, the lag grows from its commit.
    pub(crate) open_commit_ms: AtomicU64,
    /// The end of the last commit delivered, and of the last confirmed.
    pub(crate) received: AtomicU64,
    pub(crate) confirmed: AtomicU64,
    /// The slot's `wal_status` (empty: not read yet) and the WAL it holds.
    pub(crate) wal_status: Mutex<String>,
    pub(crate) retained_bytes: AtomicU64,
    /// Health reads that failed.
    pub(crate) monitor_failures: AtomicU64,
    /// Slots (re)created after the first start.
    pub(crate) slot_recreated: AtomicU64,
}

/// Now, in ms since the unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

impl Lag for Shared {
    fn lag_ms(&self) -> u64 {
        let now = now_ms();
        let broken = self.broken_at_ms.load(Relaxed);
        if !self.connected.load(Relaxed) {
            return if broken == 0 { 0 } else { now.saturating_sub(broken) };
        }
        let open = self.open_commit_ms.load(Relaxed);
        if open != 0 {
            return now.saturating_sub(open);
        }
        // Idle for a second: nothing waits in the stream.
        if now.saturating_sub(self.last_message_ms.load(Relaxed)) > 1000 {
            return 0;
        }
        self.commit_delay_ms.load(Relaxed)
    }
}

/// A running follower of one slot; dropping it stops the stream and joins its thread.
pub struct Follower {
    shared: Arc<Shared>,
    slot: String,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl Follower {
    /// Starts following on a thread of its own; `sink` receives every change in commit
    /// order, on that thread (keep it quick).
    pub fn spawn(cfg: FollowConfig, sink: impl Fn(Change) + Send + 'static) -> Follower {
        let shared = Arc::new(Shared::default());
        // Never connected yet: as far behind as can be (a cache bound by the lag reads the
        // table until the stream flows, from the very start).
        shared.broken_at_ms.store(1, Relaxed);
        let (stop, stopped) = watch::channel(false);
        let sh = shared.clone();
        let slot = cfg.slot.clone();
        let thread = std::thread::Builder::new()
            .name("sqlcached-wal".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
                match rt {
                    Ok(rt) => rt.block_on(session::run(cfg, &sink, sh, stopped)),
                    Err(e) => sink(Change::Disconnected { reason: format!("WAL follower runtime: {e}") }),
                }
            })
            .expect("spawn the WAL follower thread");
        Follower { shared, slot, stop, thread: Some(thread) }
    }
}

impl Follow for Follower {
    fn lag_ms(&self) -> u64 {
        self.shared.lag_ms()
    }

    fn stats(&self) -> FeedStats {
        let sh = &self.shared;
        let received = sh.received.load(Relaxed);
        let status = sh.wal_status.lock().unwrap_or_else(|e| e.into_inner()).clone();
        FeedStats {
            connected: sh.connected.load(Relaxed),
            events: sh.events.load(Relaxed),
            reconnects: sh.reconnects.load(Relaxed),
            lag_ms: sh.lag_ms(),
            head_probes: 0,
            head_probe_failures: sh.monitor_failures.load(Relaxed),
            position: (received != 0).then(|| crate::Lsn(received).to_string()),
            resume: None,
            extra: vec![
                ("slot", Kind::Info, self.slot.clone()),
                ("status", Kind::Info, if status.is_empty() { "-".into() } else { status.clone() }),
                // 1 while the slot keeps every WAL segment it needs (reserved or extended).
                ("status_ok", Kind::Gauge, u8::from(matches!(status.as_str(), "reserved" | "extended")).to_string()),
                ("retained_bytes", Kind::Gauge, sh.retained_bytes.load(Relaxed).to_string()),
                ("confirmed", Kind::Info, crate::Lsn(sh.confirmed.load(Relaxed)).to_string()),
                ("slot_recreated", Kind::Counter, sh.slot_recreated.load(Relaxed).to_string()),
            ],
        }
    }

    fn set_bulk_rows(&self, rows: usize) {
        self.shared.bulk_rows.store(rows, Relaxed);
    }

    fn lag(&self) -> Arc<dyn Lag> {
        self.shared.clone()
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

/// Adds `sink` to the follower of `cfg.backend` among `feeds` (see
/// `sql_source::feeds::Feeds::subscribe`), starting one if there is none yet.
pub fn subscribe(
    feeds: &sql_source::feeds::Feeds,
    cfg: FollowConfig,
    who: &str,
    recheck: bool,
    every_row: bool,
    sink: sql_source::feeds::Sink,
) -> Arc<sql_source::feeds::Feed> {
    let backend = cfg.backend.clone();
    let start: sql_source::feeds::Start<'_> = Box::new(move |deliver| Box::new(Follower::spawn(cfg, deliver)));
    feeds.subscribe(&backend, who, recheck, every_row, sink, start)
}
