//! The storage tier below the in-memory engine.
//!
//! Memory is the first tier. A `Tier` is what sits under it (the persistent disk tier,
//! or a SQL container): the engine writes every change through to it, in the order the
//! changes happen to each key (calls are made under the key's shard lock), and reads from
//! it on a memory miss. With no tier configured the engine is plain memcached.

/// A tier's number for one change it accepted (0: nothing to wait for). A change is
/// durable once the tier says so for its number; numbers grow, so the highest number a
/// connection got covers every change it made before.
pub type WriteNo = u64;

/// What one caller's writes reached the tier as: the highest [`WriteNo`] of the changes
/// made through it. Every [`crate::Access`] is opened with one, so no write can escape it;
/// a connection keeps one, takes it after each command and waits for that number before
/// it acknowledges (`--data-dir`). Callers that acknowledge nothing pass a fresh one.
#[derive(Debug, Default)]
pub struct Receipt(std::sync::atomic::AtomicU64);

impl Receipt {
    /// The receipt of callers that acknowledge nothing: an engine without a tier (the
    /// query cache, `caching` containers) or a change nobody waits for (binlog rules).
    pub fn none() -> &'static Receipt {
        static NONE: Receipt = Receipt(std::sync::atomic::AtomicU64::new(0));
        &NONE
    }

    /// Records a change the tier numbered `no` (0: none).
    #[inline]
    pub fn note(&self, no: WriteNo) {
        if no > 0 {
            self.0.fetch_max(no, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Whether a caller waits for the changes noted here (every receipt but
    /// [`Receipt::none`]): the tier may then leave committing them to that wait.
    #[inline]
    pub fn waited(&self) -> bool {
        !std::ptr::eq(self, Receipt::none())
    }

    /// The highest number noted since the last call (0 if none), and starts again.
    #[inline]
    pub fn take(&self) -> WriteNo {
        self.0.swap(0, std::sync::atomic::Ordering::Relaxed)
    }
}

/// An item as the storage tier sees it: owning its value as a read returns it
/// (`TierItem`), or borrowing it from memory as a write hands it down
/// (`TierItem<&[u8]>`, so that the tier copies the value once, into its own record).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TierItem<V = Vec<u8>> {
    /// The value bytes.
    pub value: V,
    /// Client flags.
    pub flags: u32,
    /// Absolute unix expiry time, 0 for never.
    pub exptime_unix: i64,
    /// The CAS unique the item had.
    pub cas: u64,
    /// Unix time of the item's last access when written (set, touch, ...): a delayed
    /// `flush_all` drops items last used before its deadline, as memcached does.
    pub stored_unix: i64,
    /// Item state that survives a restart: `STALE`, `WON`, `KEY_BINARY` (see `item`).
    pub bits: u8,
}

/// A storage tier under memory.
pub trait Tier: Send + Sync {
    /// Read a key that missed in memory.
    fn get(&self, key: &[u8]) -> Option<TierItem>;
    /// Persist a stored item; `replaced` says whether the key already had an item (the
    /// engine always looks a key up, in memory or below, before storing it).
    /// Returns the change's number (durable once the tier says so). `waited`: a caller
    /// will wait for that number ([`Receipt::waited`]).
    fn put(&self, key: &[u8], item: TierItem<&[u8]>, replaced: bool, waited: bool) -> WriteNo;
    /// Persist a removal; returns its number.
    fn delete(&self, key: &[u8], waited: bool) -> WriteNo;
    /// Persist `flush_all`: `at_unix` 0 drops everything now; otherwise items stored
    /// before that unix time are dropped once it passes. Returns its number.
    fn flush(&self, at_unix: i64, waited: bool) -> WriteNo;
    /// Writes the tier's own figures (`stats` lines) into `sink`.
    fn stats(&self, sink: &mut dyn crate::stats::StatSink) {
        let _ = sink;
    }
}
