//! The storage tier below the in-memory engine.
//!
//! Memory is the first tier. A `Tier` is what sits under it (the persistent disk tier,
//! or a SQL container): the engine writes every change through to it, in the order the
//! changes happen to each key (calls are made under the key's shard lock), and reads from
//! it on a memory miss. With no tier configured the engine is plain memcached.

/// An item as the storage tier sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TierItem {
    /// The value bytes.
    pub value: Vec<u8>,
    /// Client flags.
    pub flags: u32,
    /// Absolute unix expiry time, 0 for never.
    pub exptime_unix: i64,
    /// The CAS unique the item had.
    pub cas: u64,
    /// Unix time the item was stored (a delayed `flush_all` drops items stored before it).
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
    fn put(&self, key: &[u8], item: TierItem, replaced: bool);
    /// Persist a removal.
    fn delete(&self, key: &[u8]);
    /// Persist `flush_all`: `at_unix` 0 drops everything now; otherwise items stored
    /// before that unix time are dropped once it passes.
    fn flush(&self, at_unix: i64);
    /// Writes the tier's own figures (`stats` lines) into `sink`.
    fn stats(&self, sink: &mut dyn crate::stats::StatSink) {
        let _ = sink;
    }
}
