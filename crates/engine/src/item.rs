//! The stored item and what it costs in memory.

/// The item was returned by a read at least once (memcached's `ITEM_FETCHED`).
pub const FETCHED: u8 = 1;
/// A meta "win" token was handed out for this item: one client recaches it.
pub const WON: u8 = 2;
/// The item was invalidated by a meta delete/set with `I`: it is served as stale.
pub const STALE: u8 = 4;
/// The key was sent base64-encoded (meta `b` flag); meta replies re-encode it.
pub const KEY_BINARY: u8 = 8;

/// memcached only refreshes an item's access time when it is older than this.
pub const ITEM_UPDATE_INTERVAL: u32 = 60;

/// One key with its value and metadata. Key and value share one allocation.
#[derive(Debug)]
pub struct Item {
    /// Key bytes followed by value bytes.
    data: Box<[u8]>,
    key_len: u8,
    /// Opaque client flags.
    pub flags: u32,
    /// Relative expiry time; 0 never expires.
    pub exptime: u32,
    /// Relative time of the last access.
    pub atime: u32,
    /// Relative time the item was stored (for delayed `flush_all`).
    pub stored: u32,
    /// Internal version, unique per write; the CAS unique clients see when CAS is on.
    pub cas: u64,
    /// [`FETCHED`], [`WON`], [`STALE`].
    pub bits: u8,
    // Eviction bookkeeping, owned by the shard.
    pub(crate) prev: u32,
    pub(crate) next: u32,
    pub(crate) queue: u8,
    pub(crate) freq: u8,
}

impl Item {
    /// A new item (not yet linked into any queue).
    pub fn new(key: &[u8], value_parts: &[&[u8]], flags: u32, exptime: u32, now: u32) -> Item {
        debug_assert!(key.len() <= 255);
        let len = key.len() + value_parts.iter().map(|p| p.len()).sum::<usize>();
        let mut data = Vec::with_capacity(len);
        data.extend_from_slice(key);
        for p in value_parts {
            data.extend_from_slice(p);
        }
        Item {
            data: data.into_boxed_slice(),
            key_len: key.len() as u8,
            flags,
            exptime,
            atime: now,
            stored: now,
            cas: 0,
            bits: 0,
            prev: u32::MAX,
            next: u32::MAX,
            queue: 0,
            freq: 0,
        }
    }

    /// The key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        &self.data[..self.key_len as usize]
    }

    /// The value.
    #[inline]
    pub fn value(&self) -> &[u8] {
        &self.data[self.key_len as usize..]
    }

    /// Replace the value bytes (used by in-place incr/decr of equal length).
    pub fn value_mut(&mut self) -> &mut [u8] {
        &mut self.data[self.key_len as usize..]
    }

    /// Whether the item's TTL has run out at relative time `now`.
    #[inline]
    pub fn is_expired(&self, now: u32) -> bool {
        self.exptime != 0 && self.exptime <= now
    }

    /// Whether a flag bit is set.
    #[inline]
    pub fn has(&self, bit: u8) -> bool {
        self.bits & bit != 0
    }

    /// Bytes this item holds in memory: its allocation (with malloc's header and rounding),
    /// its slot and its hash-table entry.
    pub fn cost(&self) -> usize {
        cost_of(self.data.len())
    }
}

/// Memory cost of an item whose key plus value are `data_len` bytes.
pub fn cost_of(data_len: usize) -> usize {
    let alloc = ((data_len + 8 + 15) & !15).max(32);
    alloc + std::mem::size_of::<Item>() + 8
}

/// memcached's size of an item for the `-I` limit: header, key, value, CRLF, CAS and flags.
pub fn memcached_item_size(key_len: usize, value_len: usize, flags: u32, use_cas: bool) -> usize {
    48 + key_len + 1 + value_len + 2 + if use_cas { 8 } else { 0 } + if flags != 0 { 4 } else { 0 }
}
