//! The proxy's counters and its lines in `stats` on the memcached port.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of the proxy itself (the cache and binlog keep their own).
#[derive(Default)]
pub struct Counters {
    /// Current client connections.
    pub connections: AtomicU64,
    /// Backend connections that failed or broke.
    pub backend_errors: AtomicU64,
}

impl Counters {
    /// Appends `STAT name value` lines.
    pub fn write(&self, stat: &mut dyn FnMut(&str, u64)) {
        stat("mysql_connections", self.connections.load(Ordering::Relaxed));
        stat("mysql_backend_errors", self.backend_errors.load(Ordering::Relaxed));
    }
}
