//! The storage tier below the in-memory engine.
//!
//! Memory is the first tier. A `Tier` is what sits under it (the persistent disk tier,
//! or a SQL container): the engine writes every change through to it, and reads from it
//! on a memory miss. With no tier configured the engine is plain memcached.

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
}

/// A storage tier under memory.
pub trait Tier: Send + Sync {
    /// Read a key that missed in memory.
    fn get(&self, key: &[u8]) -> Option<TierItem>;
    /// Persist a stored item.
    fn put(&self, key: &[u8], item: &TierItem);
    /// Persist a removal.
    fn delete(&self, key: &[u8]);
    /// Persist `flush_all`.
    fn flush(&self);
}
