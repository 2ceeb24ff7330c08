//! Engine settings, taken from the server's memcached-style flags.

/// Everything the engine needs to know about its limits.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Bytes of item memory (`-m`, in megabytes on the command line).
    pub memory_limit: usize,
    /// Largest item accepted, header included (`-I`).
    pub item_size_max: usize,
    /// Evict old items when memory is full; `false` answers out-of-memory instead (`-M`).
    pub evict: bool,
    /// Hand out CAS uniques; `false` reports 0 everywhere (`-C`).
    pub use_cas: bool,
    /// Number of independently locked shards (a power of two).
    pub shards: usize,
}

impl EngineConfig {
    /// The `-I` limit as items are measured under these settings.
    pub fn item_limit(&self) -> ItemLimit {
        ItemLimit { max: self.item_size_max, use_cas: self.use_cas }
    }
}

/// memcached's item size limit (`-I`), measured as memcached measures an item (header,
/// key, value, CAS and flags), shared by every tier that stores memcached items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemLimit {
    /// Largest item accepted, header included.
    pub max: usize,
    /// Whether items carry a CAS (8 bytes more each).
    pub use_cas: bool,
}

impl ItemLimit {
    /// No limit (a library user that has no `-I`).
    pub const NONE: ItemLimit = ItemLimit { max: usize::MAX, use_cas: true };

    /// Would an item with this key length, value length and client flags exceed the limit?
    pub fn too_large(&self, key_len: usize, value_len: usize, flags: u32) -> bool {
        crate::item::memcached_item_size(key_len, value_len, flags, self.use_cas) > self.max
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            memory_limit: 64 * 1024 * 1024,
            item_size_max: 1024 * 1024,
            evict: true,
            use_cas: true,
            shards: 128,
        }
    }
}
