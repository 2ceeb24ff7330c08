//! Per-container counters for `stats` (with `--containers`): what each container was
//! asked and answered, plus the SQL backend's own counters.
//!
//! Line names (`STAT <name> <value>`), `<c>` being the container's name:
//! `container_<c>_get_keys`, `container_<c>_get_hits`, `container_<c>_get_misses`,
//! `container_<c>_writes` (set family, incr/decr, touch, gat), `container_<c>_deletes`,
//! `container_<c>_flushes`, `container_<c>_errors` (SERVER_ERROR / CLIENT_ERROR answers),
//! `container_<c>_invalidations` (memory copies dropped because the binlog showed the row
//! change, `caching` containers on MariaDB/MySQL), `container_<c>_lag_bypasses` (gets that
//! skipped the memory copy because the binlog follower was further behind than `max_lag_ms`),
//! `container_<c>_written_through` (rows the binlog confirmed a write through sqlcached stored,
//! put in the memory copy), `container_<c>_read_bypasses` (keys read from the table alone
//! because reads kept missing the memory copy), `container_<c>_read_bypass_starts` (times
//! that began), `container_<c>_fills_raced` (rows read from the table that were not kept in
//! memory because the row changed while they were read), then `containers_backend_commits`, `containers_backend_connects`,
//! `containers_backend_errors`, `containers_backend_lost_batches`,
//! `containers_backend_lost_writes`, `containers_backend_reads_inline` (SQLite gets read on
//! the worker's own connection).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use engine::latency::Histogram;
use engine::stats::{Series, Value};
use sql_containers::BackendStats;

/// Counters of one container (relaxed atomics: bumped by every worker).
#[derive(Debug, Default)]
pub struct ContainerStats {
    get_keys: AtomicU64,
    get_hits: AtomicU64,
    writes: AtomicU64,
    deletes: AtomicU64,
    flushes: AtomicU64,
    errors: AtomicU64,
    invalidations: AtomicU64,
    /// Gets that skipped the memory copy because the binlog follower was too far behind.
    lag_bypasses: AtomicU64,
    /// Rows put in the memory copy because the binlog confirmed a write through sqlcached.
    written_through: AtomicU64,
    /// Keys read from the table alone because reads kept missing the memory copy.
    read_bypasses: AtomicU64,
    /// Times reads began to skip the memory copy.
    read_bypass_starts: AtomicU64,
    /// Rows read for a fill that were not kept: the row changed while they were read.
    fills_raced: AtomicU64,
    /// Operation latencies by [`OPS`] (with `--metrics-listen`).
    latency: [Histogram; 4],
}

/// The `op` label of the latency histograms: what [`Counted`] calls a get, a write, a
/// delete and a flush.
pub const OPS: [&str; 4] = ["get", "write", "delete", "flush"];

/// What one container operation was, for counting.
#[derive(Clone, Copy, Debug)]
pub enum Counted {
    /// A get/gets of this many keys, this many found.
    Get { keys: u64, hits: u64 },
    /// A write (set family, incr/decr, touch, gat).
    Write,
    /// A delete.
    Delete,
    /// A flush_all of the container.
    Flush,
    /// An operation that answered an error.
    Error,
}

impl Counted {
    /// The latency histogram it is timed in (an index into [`OPS`]; an error as a write).
    pub fn op_index(&self) -> usize {
        match self {
            Counted::Get { .. } => 0,
            Counted::Write | Counted::Error => 1,
            Counted::Delete => 2,
            Counted::Flush => 3,
        }
    }
}

fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

impl ContainerStats {
    /// Count one operation.
    pub fn count(&self, what: Counted) {
        match what {
            Counted::Get { keys, hits } => {
                bump(&self.get_keys, keys);
                bump(&self.get_hits, hits);
            }
            Counted::Write => bump(&self.writes, 1),
            Counted::Delete => bump(&self.deletes, 1),
            Counted::Flush => bump(&self.flushes, 1),
            Counted::Error => bump(&self.errors, 1),
        }
    }

    /// Count memory copies dropped for binlog changes (`n` keys, or 1 for a flush).
    pub fn invalidated(&self, n: u64) {
        bump(&self.invalidations, n);
    }

    /// Count a get that skipped the memory copy (`max_lag_ms`).
    pub fn lag_bypassed(&self) {
        bump(&self.lag_bypasses, 1);
    }

    /// Count a row a confirmed write put in the memory copy.
    pub fn written_through(&self) {
        bump(&self.written_through, 1);
    }

    /// Count `n` keys read from the table alone (the copy did not pay back).
    pub fn read_bypassed(&self, n: u64) {
        bump(&self.read_bypasses, n);
    }

    /// Count a row read for a fill and not kept (its key changed meanwhile).
    pub fn fill_raced(&self) {
        bump(&self.fills_raced, 1);
    }

    /// Count a pause of the memory copy for reads.
    pub fn read_bypass_started(&self) {
        bump(&self.read_bypass_starts, 1);
    }

    /// Count the time of an operation of kind `op` (an index into [`OPS`]) begun at `t`.
    pub fn timed(&self, op: usize, t: Option<Instant>) {
        if let Some(t) = t {
            self.latency[op].record_since(t);
        }
    }

    /// Zero the counters (`stats reset`).
    pub fn reset(&self) {
        for c in [&self.get_keys, &self.get_hits, &self.writes, &self.deletes, &self.flushes, &self.errors] {
            c.store(0, Ordering::Relaxed);
        }
        self.invalidations.store(0, Ordering::Relaxed);
        for c in [
            &self.lag_bypasses,
            &self.written_through,
            &self.read_bypasses,
            &self.read_bypass_starts,
            &self.fills_raced,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        self.latency.iter().for_each(Histogram::reset);
    }

    /// This container's labeled series for the metrics families: (keys by outcome,
    /// operations by kind, latency histograms by kind).
    pub fn series(&self, name: &str, keys: &mut Vec<Series>, ops: &mut Vec<Series>, latency: &mut Vec<Series>) {
        let v = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let l = |k: &'static str, val: &str| vec![("container", name.to_string()), (k, val.to_string())];
        let (k, hits) = (v(&self.get_keys), v(&self.get_hits));
        keys.push(Series::new(l("outcome", "hit"), Value::Counter(hits)));
        keys.push(Series::new(l("outcome", "miss"), Value::Counter(k.saturating_sub(hits))));
        for (op, c) in [
            ("write", &self.writes),
            ("delete", &self.deletes),
            ("flush", &self.flushes),
            ("error", &self.errors),
            ("invalidation", &self.invalidations),
            ("lag_bypass", &self.lag_bypasses),
            ("written_through", &self.written_through),
            ("read_bypass", &self.read_bypasses),
            ("read_bypass_start", &self.read_bypass_starts),
            ("fill_raced", &self.fills_raced),
        ] {
            ops.push(Series::new(l("op", op), Value::Counter(v(c))));
        }
        for (op, h) in OPS.iter().zip(&self.latency) {
            let snap = h.snapshot();
            if snap.count() > 0 {
                latency.push(Series::new(l("op", op), Value::Histogram(snap)));
            }
        }
    }

    /// This container's `stats` lines, appended to `out` as (name, value).
    pub fn lines(&self, name: &str, out: &mut Vec<(String, u64)>) {
        let v = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let (keys, hits) = (v(&self.get_keys), v(&self.get_hits));
        for (what, n) in [
            ("get_keys", keys),
            ("get_hits", hits),
            ("get_misses", keys.saturating_sub(hits)),
            ("writes", v(&self.writes)),
            ("deletes", v(&self.deletes)),
            ("flushes", v(&self.flushes)),
            ("errors", v(&self.errors)),
            ("invalidations", v(&self.invalidations)),
            ("lag_bypasses", v(&self.lag_bypasses)),
            ("written_through", v(&self.written_through)),
            ("read_bypasses", v(&self.read_bypasses)),
            ("read_bypass_starts", v(&self.read_bypass_starts)),
            ("fills_raced", v(&self.fills_raced)),
        ] {
            out.push((format!("container_{name}_{what}"), n));
        }
    }
}

/// The backend's counters as `stats` lines.
pub fn backend_lines(b: &BackendStats, out: &mut Vec<(String, u64)>) {
    for (what, n) in [
        ("commits", b.commits),
        ("connects", b.connects),
        ("errors", b.errors),
        ("lost_batches", b.lost_batches),
        ("lost_writes", b.lost_writes),
        ("reads_inline", b.reads_inline),
    ] {
        out.push((format!("containers_backend_{what}"), n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_container_and_counter() {
        let s = ContainerStats::default();
        s.count(Counted::Get { keys: 3, hits: 2 });
        s.count(Counted::Write);
        s.count(Counted::Error);
        let mut out = Vec::new();
        s.lines("demo", &mut out);
        assert!(out.contains(&("container_demo_get_keys".into(), 3)));
        assert!(out.contains(&("container_demo_get_misses".into(), 1)));
        assert!(out.contains(&("container_demo_writes".into(), 1)));
        assert!(out.contains(&("container_demo_errors".into(), 1)));
        backend_lines(&BackendStats { commits: 5, ..Default::default() }, &mut out);
        assert!(out.contains(&("containers_backend_commits".into(), 5)));
    }
}
