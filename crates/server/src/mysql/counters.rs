//! The proxy's counters and its lines in `stats` on the memcached port.

use std::sync::atomic::{AtomicU64, Ordering};

use engine::stats::{Kind, StatSink};

/// Counters of the proxy itself (the cache and binlog keep their own).
#[derive(Default)]
pub struct Counters {
    /// Current client connections.
    pub connections: AtomicU64,
    /// Backend connections that failed or broke.
    pub backend_errors: AtomicU64,
}

impl Counters {
    /// Writes the proxy's own figures.
    pub fn write(&self, sink: &mut dyn StatSink) {
        sink.stat("mysql_connections", Kind::Gauge, &self.connections.load(Ordering::Relaxed));
        sink.stat("mysql_backend_errors", Kind::Counter, &self.backend_errors.load(Ordering::Relaxed));
    }
}
