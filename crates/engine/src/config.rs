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
