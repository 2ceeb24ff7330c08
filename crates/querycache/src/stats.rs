//! Counters, named as MariaDB's query cache status variables.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Most tables whose invalidations are counted one by one (later ones are not).
pub const MAX_TABLES: usize = 10_000;

/// A snapshot of the query cache counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Results served from the cache (`Qcache_hits`).
    pub hits: u64,
    /// Results stored (`Qcache_inserts`).
    pub inserts: u64,
    /// Reads that could not be cached (`Qcache_not_cached`).
    pub not_cached: u64,
    /// Results evicted for lack of memory (`Qcache_lowmem_prunes`).
    pub lowmem_prunes: u64,
    /// Results held now (`Qcache_queries_in_cache`).
    pub queries_in_cache: u64,
    /// Invalidations caused by writes through the proxy.
    pub invalidations_proxy: u64,
    /// Key-level invalidations from binlog row events.
    pub invalidations_binlog_rows: u64,
    /// Table-level invalidations (any source).
    pub invalidations_table: u64,
    /// Drop-everything invalidations (any source, including going offline).
    pub invalidations_all: u64,
    /// Fills refused because an invalidation raced with them.
    pub fills_refused: u64,
    /// Misses that waited for an identical in-flight miss instead of querying.
    pub shared_misses: u64,
    /// Lookups sent to the backend because the binlog follower was further behind the
    /// backend than `--query-cache-max-lag`.
    pub lag_bypasses: u64,
    /// The adaptive bypass: statements whose results do not pay back (`crate::bypass`).
    pub bypass: crate::bypass::BypassStats,
    /// Whether lookups and fills are enabled (binlog connected).
    pub online: bool,
    /// Bytes of memory used by results.
    pub bytes: u64,
}

/// Live counters (relaxed atomics; each is independent).
#[derive(Default)]
pub(crate) struct Counters {
    pub hits: AtomicU64,
    pub inserts: AtomicU64,
    pub not_cached: AtomicU64,
    pub invalidations_proxy: AtomicU64,
    pub invalidations_binlog_rows: AtomicU64,
    pub invalidations_table: AtomicU64,
    pub invalidations_all: AtomicU64,
    pub fills_refused: AtomicU64,
    pub shared_misses: AtomicU64,
    pub lag_bypasses: AtomicU64,
    /// Invalidations per table.
    pub tables: TableCounts,
}

/// How often each table's cached results were invalidated (by rows or as a whole), keyed
/// `db.table`; bounded by [`MAX_TABLES`].
#[derive(Default)]
pub(crate) struct TableCounts(Mutex<HashMap<String, u64>>);

impl TableCounts {
    /// Count one invalidation of `db.table`.
    pub fn bump(&self, db: &str, table: &str) {
        let mut m = self.0.lock();
        let name = format!("{db}.{table}");
        if let Some(n) = m.get_mut(&name) {
            *n += 1;
        } else if m.len() < MAX_TABLES {
            m.insert(name, 1);
        }
    }

    /// The `n` tables invalidated most, most first.
    pub fn top(&self, n: usize) -> Vec<(String, u64)> {
        let mut all: Vec<(String, u64)> = self.0.lock().iter().map(|(k, v)| (k.clone(), *v)).collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        all.truncate(n);
        all
    }

    /// Forget them (`stats reset`).
    pub fn clear(&self) {
        self.0.lock().clear();
    }
}

/// Add one to a counter.
#[inline]
pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// Read a counter.
#[inline]
pub(crate) fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}
