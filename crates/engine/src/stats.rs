//! Item and command counters, named as in memcached's `stats` output.

use std::ops::AddAssign;

/// What a statistic measures. memcached's `stats` replies ignore it; outputs that type
/// their figures (Prometheus: counter, gauge) need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (until `stats reset`): requests, hits, bytes moved.
    Counter,
    /// Goes up and down: items, connections, bytes held.
    Gauge,
    /// A setting or a label, not a measurement (`version`, `stats settings`).
    Info,
}

/// Where statistics go. Every producer (engine, tiers, the MySQL proxy, containers) writes
/// each figure once through a sink; memcached's text and binary `stats` replies (and a
/// metrics endpoint) are sinks, so no output parses another.
pub trait StatSink {
    /// One figure, under memcached's name for it.
    fn stat(&mut self, name: &str, kind: Kind, value: &dyn std::fmt::Display);

    /// A family of labeled series (`name{label="..."}`), such as latency histograms per
    /// protocol or counters per container. Metrics only: memcached's `stats` has no labels
    /// (its replies carry the same counts under flat names, or not at all), so by default a
    /// sink ignores families.
    fn family(&mut self, _name: &str, _help: &str, _series: &[Series]) {}

    /// Whether [`StatSink::family`] is used: producers skip building costly families
    /// (sorted top-N tables) for sinks that would drop them.
    fn wants_families(&self) -> bool {
        false
    }
}

/// The value of one labeled series.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Only goes up.
    Counter(u64),
    /// Only goes up, not a whole number (seconds spent, for instance).
    CounterFloat(f64),
    /// Goes up and down.
    Gauge(i64),
    /// Latencies, in seconds.
    Histogram(crate::latency::Snapshot),
}

/// One series of a family: its labels and its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Label names and values, e.g. `[("protocol", "text".into())]`.
    pub labels: Vec<(&'static str, String)>,
    /// The figure.
    pub value: Value,
}

impl Series {
    /// A series with these labels.
    pub fn new(labels: Vec<(&'static str, String)>, value: Value) -> Series {
        Series { labels, value }
    }
}

/// Counters kept per shard, under the shard lock (so they cost no atomics).
#[derive(Default, Clone, Debug)]
pub struct ShardStats {
    /// Keys looked up by retrieval commands (`cmd_get`).
    pub cmd_get: u64,
    /// Storage commands processed (`cmd_set`).
    pub cmd_set: u64,
    /// Touch commands processed (`cmd_touch`).
    pub cmd_touch: u64,
    /// Lookups that found the key (`get_hits`).
    pub get_hits: u64,
    /// Lookups that did not (`get_misses`).
    pub get_misses: u64,
    /// Lookups that found an expired item (`get_expired`).
    pub get_expired: u64,
    /// Lookups that found an item invalidated by `flush_all` (`get_flushed`).
    pub get_flushed: u64,
    /// `delete` of a missing key (`delete_misses`).
    pub delete_misses: u64,
    /// `delete` of a present key (`delete_hits`).
    pub delete_hits: u64,
    /// `incr` of a missing key.
    pub incr_misses: u64,
    /// `incr` of a present key.
    pub incr_hits: u64,
    /// `decr` of a missing key.
    pub decr_misses: u64,
    /// `decr` of a present key.
    pub decr_hits: u64,
    /// `cas` of a missing key.
    pub cas_misses: u64,
    /// `cas` that stored.
    pub cas_hits: u64,
    /// `cas` with a stale unique.
    pub cas_badval: u64,
    /// `touch` of a present key.
    pub touch_hits: u64,
    /// `touch` of a missing key.
    pub touch_misses: u64,
    /// Stores refused because the item exceeded the item size limit.
    pub store_too_large: u64,
    /// Stores refused for lack of memory.
    pub store_no_memory: u64,
    /// Items currently held.
    pub curr_items: u64,
    /// Items ever stored.
    pub total_items: u64,
    /// Live items evicted to make room.
    pub evictions: u64,
    /// Expired items whose memory was reused.
    pub reclaimed: u64,
    /// Expired items that were never read.
    pub expired_unfetched: u64,
    /// Evicted items that were never read.
    pub evicted_unfetched: u64,
    /// Hits served from the storage tier below memory.
    pub tier_hits: u64,
    /// Invalidations ([`crate::Access::invalidate`]).
    pub invalidations: u64,
    /// `set`/`add` answered as stored but not kept: the key was held by an invalidation.
    pub held_stores: u64,
}

impl AddAssign<&ShardStats> for ShardStats {
    fn add_assign(&mut self, o: &ShardStats) {
        self.cmd_get += o.cmd_get;
        self.cmd_set += o.cmd_set;
        self.cmd_touch += o.cmd_touch;
        self.get_hits += o.get_hits;
        self.get_misses += o.get_misses;
        self.get_expired += o.get_expired;
        self.get_flushed += o.get_flushed;
        self.delete_misses += o.delete_misses;
        self.delete_hits += o.delete_hits;
        self.incr_misses += o.incr_misses;
        self.incr_hits += o.incr_hits;
        self.decr_misses += o.decr_misses;
        self.decr_hits += o.decr_hits;
        self.cas_misses += o.cas_misses;
        self.cas_hits += o.cas_hits;
        self.cas_badval += o.cas_badval;
        self.touch_hits += o.touch_hits;
        self.touch_misses += o.touch_misses;
        self.store_too_large += o.store_too_large;
        self.store_no_memory += o.store_no_memory;
        self.curr_items += o.curr_items;
        self.total_items += o.total_items;
        self.evictions += o.evictions;
        self.reclaimed += o.reclaimed;
        self.expired_unfetched += o.expired_unfetched;
        self.evicted_unfetched += o.evicted_unfetched;
        self.tier_hits += o.tier_hits;
        self.invalidations += o.invalidations;
        self.held_stores += o.held_stores;
    }
}

impl ShardStats {
    /// Zero the counters that `stats reset` clears (gauges such as `curr_items` stay).
    pub fn reset(&mut self) {
        let curr = self.curr_items;
        *self = ShardStats::default();
        self.curr_items = curr;
    }
}

/// A snapshot of the whole engine's counters.
#[derive(Default, Clone, Debug)]
pub struct EngineStats {
    /// Counters summed over shards.
    pub items: ShardStats,
    /// Bytes of item memory in use (`bytes`).
    pub bytes: usize,
    /// The `-m` limit in bytes (`limit_maxbytes`).
    pub limit_maxbytes: usize,
    /// `flush_all` commands (`cmd_flush`).
    pub cmd_flush: u64,
}
