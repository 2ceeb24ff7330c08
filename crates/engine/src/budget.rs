//! `-m` as one memory budget: everything that grows with data or load takes a share of it.
//!
//! memcached's `-m` bounds its slab pages, and an operator sizes a node (and its container's
//! memory limit) by it. sqlcached holds more than items: with `--data-dir`, fjall's block
//! cache and the disk tier's staged changes; with `--mysql-listen`, the query cache's
//! results; with `--containers`, the containers' memory copies. Each is a [`Share`] of one
//! [`Budget`] of `-m` bytes:
//!
//! - every share but [`Share::Items`] is bounded by what owns it (the disk tier's block
//!   cache by its capacity, the staged changes by the ingestion threshold with
//!   backpressure on writes, the query cache and the containers by their own engines'
//!   limits), and reports what it holds now ([`Budget::set_used`]);
//! - items get the rest: [`Budget::room`] is the total less what the other shares hold
//!   now, and the engine evicts down to it ([`crate::Engine::set_room`]). So a write burst
//!   takes staging room from items and gives it back once ingested; reads from disk fill
//!   the block cache up to its capacity at the items' expense, and items take the room
//!   back as soon as the cache holds less.
//!
//! What is not in a share (the hash tables that locate items, thread stacks, the binary,
//! the allocator's own overhead) is the fixed overhead `docs/memory.md` measures.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::stats::{Kind, StatSink};

/// A part of the budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Share {
    /// Items in memory (segments and out-of-line values): gets what the others leave.
    Items,
    /// The disk tier's block cache (blocks read back from disk).
    DiskCache,
    /// The disk tier's changes not yet in fjall: staged and frozen states, the write queue.
    DiskWrites,
    /// The MySQL query cache's results.
    QueryCache,
    /// The PostgreSQL query cache's results.
    PgQueryCache,
    /// The SQL containers' memory copies (cache_only / caching).
    Containers,
}

impl Share {
    /// Every share, in the order `stats` shows them.
    pub const ALL: [Share; 6] =
        [Share::Items, Share::DiskCache, Share::DiskWrites, Share::QueryCache, Share::PgQueryCache, Share::Containers];

    /// The share's name in `stats` (`memory_<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Share::Items => "items",
            Share::DiskCache => "disk_cache",
            Share::DiskWrites => "disk_writes",
            Share::QueryCache => "query_cache",
            Share::PgQueryCache => "pg_query_cache",
            Share::Containers => "containers",
        }
    }
}

/// The smallest room items keep, however much the other shares hold (a store must always
/// be able to evict its way in): 1/16 of the budget.
const ITEMS_FLOOR_DIV: usize = 16;

/// `-m` bytes, shared out (see the module documentation).
#[derive(Debug)]
pub struct Budget {
    total: AtomicUsize,
    used: [AtomicUsize; 6],
    /// The most each share may hold (what its owner bounds it by; 0 for items: the rest).
    caps: [AtomicUsize; 6],
}

impl Budget {
    /// A budget of `total` bytes (`-m`).
    pub fn new(total: usize) -> Budget {
        Budget { total: AtomicUsize::new(total), used: Default::default(), caps: Default::default() }
    }

    /// The budget (`-m` in bytes).
    pub fn total(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    /// A new budget (`cache_memlimit`); the shares' caps sized at start stay.
    pub fn set_total(&self, bytes: usize) {
        self.total.store(bytes, Ordering::Relaxed);
    }

    /// What `share` holds now.
    pub fn used(&self, share: Share) -> usize {
        self.used[share as usize].load(Ordering::Relaxed)
    }

    /// `share` holds `bytes` now (its owner reports it).
    pub fn set_used(&self, share: Share, bytes: usize) {
        self.used[share as usize].store(bytes, Ordering::Relaxed);
    }

    /// The most `share` may hold (what its owner bounds it by; for items, the bound the
    /// engine evicts down to now).
    pub fn cap(&self, share: Share) -> usize {
        self.caps[share as usize].load(Ordering::Relaxed)
    }

    /// Record the most `share` may hold.
    pub fn set_cap(&self, share: Share, bytes: usize) {
        self.caps[share as usize].store(bytes, Ordering::Relaxed);
    }

    /// What every share holds now.
    pub fn used_total(&self) -> usize {
        Share::ALL.iter().map(|&s| self.used(s)).sum()
    }

    /// The sum of every share's cap but the items' (what the others may take at most).
    pub fn reserved(&self) -> usize {
        Share::ALL.iter().filter(|&&s| s != Share::Items).map(|&s| self.cap(s)).sum()
    }

    /// Room for items now: the budget less what the other shares hold, but never under
    /// 1/16 of it.
    pub fn room(&self) -> usize {
        let others: usize = Share::ALL.iter().filter(|&&s| s != Share::Items).map(|&s| self.used(s)).sum();
        let total = self.total();
        total.saturating_sub(others).max(total / ITEMS_FLOOR_DIV)
    }

    /// Write `memory_budget`, each share's `memory_<share>` (held now) and
    /// `memory_<share>_max` (its cap), `memory_used` (their sum) and `memory_rss` (the
    /// process's resident memory: the budget's shares plus the fixed overhead).
    pub fn stats(&self, sink: &mut dyn StatSink) {
        sink.stat("memory_budget", Kind::Gauge, &self.total());
        for s in Share::ALL {
            sink.stat(&format!("memory_{}", s.name()), Kind::Gauge, &self.used(s));
            // Items: the bound in force (the room, or less to keep RSS bounded), once set.
            let cap = if s == Share::Items && self.cap(s) == 0 { self.room() } else { self.cap(s) };
            sink.stat(&format!("memory_{}_max", s.name()), Kind::Gauge, &cap);
        }
        sink.stat("memory_used", Kind::Gauge, &self.used_total());
        sink.stat("memory_rss", Kind::Gauge, &process_rss());
    }
}

/// The process's resident memory in bytes (Linux `/proc/self/statm`; 0 elsewhere).
pub fn process_rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * usize::try_from(page).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Items get what the other shares leave, down to a floor.
    #[test]
    fn items_get_the_rest() {
        let b = Budget::new(64 << 20);
        assert_eq!(b.room(), 64 << 20);
        b.set_used(Share::DiskCache, 8 << 20);
        b.set_used(Share::DiskWrites, 16 << 20);
        assert_eq!(b.room(), 40 << 20, "a write burst and the block cache take room from items");
        b.set_used(Share::DiskWrites, 0);
        assert_eq!(b.room(), 56 << 20, "and give it back");
        b.set_used(Share::QueryCache, 100 << 20);
        assert_eq!(b.room(), 4 << 20, "items keep 1/16");
        b.set_used(Share::Items, 4 << 20);
        assert_eq!(b.used_total(), 112 << 20);
    }
}
