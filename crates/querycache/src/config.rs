//! Query cache settings (`--query-cache-size`, `--query-cache-limit`, `--query-cache-type`).

pub use ::config::querycache::{CacheType, InTransactions};

/// Query cache settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Bytes of memory for cached results (entries with their keys).
    pub size: usize,
    /// Largest reply stored, in bytes (MariaDB's `query_cache_limit`, default 1 MB).
    pub limit: usize,
    /// Which reads are cached.
    pub mode: CacheType,
    /// Which reads inside transactions are.
    pub in_transactions: InTransactions,
}

impl Default for Config {
    fn default() -> Self {
        Config { size: 64 << 20, limit: 1 << 20, mode: CacheType::On, in_transactions: InTransactions::ReadOnly }
    }
}
