//! The disk tier's options and the state its handle (`tier.rs`) and its committer thread
//! (`committer.rs`) share.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::pending::Pending;
use crate::store::{Meta, Store};
use crate::wal::Wal;

/// When a write counts as done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Acknowledged only once fsynced (group commit shares one fsync among writers).
    Sync,
    /// Acknowledged at once; fsynced at least every flush interval.
    Async,
}

/// How to run the tier.
#[derive(Clone, Debug)]
pub struct Options {
    /// The data directory.
    pub dir: PathBuf,
    /// Sync or async.
    pub durability: Durability,
    /// Async mode: longest time between fsyncs.
    pub flush_interval: Duration,
    /// Bound on the logical bytes on disk (0: unbounded); oldest-written items go first.
    pub disk_limit: u64,
    /// fjall block cache.
    pub cache_bytes: u64,
    /// Most bytes of changes queued in memory before writers wait for the disk.
    pub max_pending_bytes: usize,
    /// Bytes of staged states at which they are ingested into fjall; staged and frozen
    /// states together are held to twice this (writers wait beyond: backpressure).
    pub stage_bytes: usize,
}

/// What the tier may hold of the memory budget (`-m`, `engine::budget`), by share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shares {
    /// fjall's block cache capacity ([`Options::cache_bytes`]).
    pub cache: u64,
    /// The ingestion threshold ([`Options::stage_bytes`]); staged and frozen states hold
    /// at most twice this.
    pub stage: usize,
    /// The write queue's bound ([`Options::max_pending_bytes`]); its changes are staged
    /// states too, so it adds only its own list (about 40 bytes a change).
    pub queue: usize,
}

/// Largest ingestion threshold (32 MiB: fjall's tables stay large, few compactions).
pub const STAGE_MAX: usize = 32 << 20;

impl Shares {
    /// The shares of a budget of `budget` bytes: the block cache 1/8 of it (1 MiB to
    /// 256 MiB), or `cache` if given (at most half of it); the ingestion threshold 1/8 of
    /// it (1 MiB to 32 MiB, so staged and frozen states hold at most 1/4); the queue 1/16
    /// (1 MiB to 64 MiB). Together at most 7/16 of the budget: items always keep the rest.
    pub fn of(budget: usize, cache: Option<u64>) -> Shares {
        let eighth = (budget / 8) as u64;
        let cache = match cache {
            Some(c) => c.min((budget / 2) as u64).max(1 << 20),
            None => eighth.clamp(1 << 20, 256 << 20),
        };
        Shares { cache, stage: (budget / 8).clamp(1 << 20, STAGE_MAX), queue: (budget / 16).clamp(1 << 20, 64 << 20) }
    }
}

/// Counters for `stats`.
#[derive(Default)]
pub(crate) struct Counters {
    pub writes: AtomicU64,
    pub batches: AtomicU64,
    pub fsyncs: AtomicU64,
    pub evictions: AtomicU64,
    pub damaged: AtomicU64,
    pub read_errors: AtomicU64,
    /// Unix second of the last logged read error (read errors are logged at most every
    /// [`READ_ERROR_LOG_SECS`]: a failing disk must not flood the log, one line per `get`).
    pub read_error_logged: AtomicU64,
    /// Write or fsync failures (each degrades the tier).
    pub failures: AtomicU64,
    /// Recoveries from a degraded state.
    pub recoveries: AtomicU64,
    pub bytes: AtomicU64,
    /// Ingestions of staged changes into fjall.
    pub ingestions: AtomicU64,
    /// Times the committer waited for an ingestion (staged changes at twice the limit).
    pub ingest_waits: AtomicU64,
    /// Time to append one batch to the write-ahead log (the OS has it after this).
    pub write_latency: engine::latency::Histogram,
    /// Time of one fsync (the batches before it survive power loss after this).
    pub fsync_latency: engine::latency::Histogram,
}

/// At most one log line per this many seconds for disk read errors.
const READ_ERROR_LOG_SECS: u64 = 10;

impl Counters {
    /// Count a failed read (the key is answered as a miss) and log it, rate-limited.
    pub(crate) fn read_error(&self, e: &str) {
        let n = self.read_errors.fetch_add(1, Ordering::Relaxed) + 1;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let last = self.read_error_logged.load(Ordering::Relaxed);
        let due = last == 0 || now >= last + READ_ERROR_LOG_SECS;
        if due && self.read_error_logged.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            log::error!(
                "disk read failed, the key is answered as a miss ({n} read errors so far; \
                 logged at most every {READ_ERROR_LOG_SECS} s): {e}"
            );
        }
    }
}

/// The tier's state, shared by its handle ([`crate::DiskTier`]) and its committer thread.
pub(crate) struct Shared {
    pub opts: Options,
    pub store: Store,
    pub pending: Mutex<Pending>,
    /// Wakes the committer.
    pub work: Condvar,
    /// Wakes writers waiting for queue space.
    pub space: Condvar,
    /// Highest sequence number written to the log (in the OS: survives a crash of sqlcached).
    pub committed: crate::ack::AckPoint,
    /// Highest sequence number fsynced (survives power loss).
    pub durable: crate::ack::AckPoint,
    /// Set while the disk fails: nothing more is acknowledged, writes are refused.
    pub failed: AtomicBool,
    /// Why the tier is degraded (the last error), while it is.
    pub reason: Mutex<Option<String>>,
    pub stopping: AtomicBool,
    pub counters: Counters,
    pub meta: Mutex<Meta>,
    /// When `DIR/CHECKPOINT` was last rewritten.
    pub last_checkpoint: Mutex<std::time::Instant>,
    /// The write-ahead log (the committer appends; the ingest thread deletes old files).
    pub wal: Mutex<Wal>,
    /// The ingestion handed to the ingest thread, until it is done.
    pub job: Mutex<Option<Job>>,
    /// Wakes the ingest thread (a new job, or stopping).
    pub ingest_work: Condvar,
    /// Wakes the committer waiting for an ingestion to end.
    pub ingest_done: Condvar,
    /// Held by whoever takes a batch from the queue and logs it (the committer, or a
    /// connection committing inline), so batches reach the log in order.
    pub commit_lock: Mutex<()>,
    /// Held by whoever changes fjall (an ingestion, a flush, a reopen): one at a time.
    pub store_lock: Mutex<()>,
    /// fjall's compaction threads' priority, by how far compaction is behind.
    pub pacer: crate::pace::Pacer,
}

/// One ingestion: the frozen states (`Pending::frozen`) hold every change up to `upto`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Job {
    /// Highest sequence number the frozen states cover.
    pub upto: u64,
    /// The accounting as of `upto` (what fjall's `meta` must say once they are in).
    pub meta: Meta,
    /// The ingestion failed: the committer's recovery redoes it.
    pub failed: bool,
}
