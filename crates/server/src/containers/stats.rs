//! Per-container counters for `stats` (with `--containers`): what each container was
//! asked and answered, plus the SQL backend's own counters.
//!
//! Line names (`STAT <name> <value>`), `<c>` being the container's name:
//! `container_<c>_get_keys`, `container_<c>_get_hits`, `container_<c>_get_misses`,
//! `container_<c>_writes` (set family, incr/decr, touch, gat), `container_<c>_deletes`,
//! `container_<c>_flushes`, `container_<c>_errors` (SERVER_ERROR / CLIENT_ERROR answers),
//! then `containers_backend_commits`, `containers_backend_connects`,
//! `containers_backend_errors`, `containers_backend_lost_batches`,
//! `containers_backend_lost_writes`.

use std::sync::atomic::{AtomicU64, Ordering};

use tier_sql::BackendStats;

/// Counters of one container (relaxed atomics: bumped by every worker).
#[derive(Debug, Default)]
pub struct ContainerStats {
    get_keys: AtomicU64,
    get_hits: AtomicU64,
    writes: AtomicU64,
    deletes: AtomicU64,
    flushes: AtomicU64,
    errors: AtomicU64,
}

/// What one container operation was, for counting.
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
