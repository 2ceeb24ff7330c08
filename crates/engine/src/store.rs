//! The [`Engine`]: shards behind their own locks, a global memory bound, CAS, flush.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use crate::clock::Clock;
use crate::config::EngineConfig;
use crate::item::{Item, FETCHED, ITEM_UPDATE_INTERVAL, KEY_BINARY, STALE, WON};
use crate::shard::{KeyHasher, Shard};
use crate::stats::{EngineStats, ShardStats};
use crate::tier::{Receipt, Tier, TierItem};

/// Pads a shard lock to its own cache line so shards do not false-share.
#[repr(align(64))]
struct Padded(Mutex<Shard>);

/// The in-memory store: many shards, one memory budget.
pub struct Engine {
    shards: Box<[Padded]>,
    mask: usize,
    hasher: KeyHasher,
    cfg: EngineConfig,
    clock: Clock,
    mem_used: AtomicUsize,
    /// Bytes of dead records (deleted, overwritten) inside `mem_used`, over every shard.
    dead: AtomicUsize,
    mem_limit: AtomicUsize,
    /// Room the memory budget leaves items now (`crate::budget`); the bound in force is the
    /// lower of this and `mem_limit`.
    room: AtomicUsize,
    cas: AtomicU64,
    /// Delayed `flush_all`: items last accessed before this relative time die once it passes.
    flush_at: AtomicU32,
    /// The same deadline as a unix time, for items read back from the tier (their store
    /// time may predate this process).
    flush_at_unix: AtomicI64,
    cmd_flush: AtomicU64,
    tier: Option<Arc<dyn Tier>>,
}

/// Why a lookup found nothing usable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Miss {
    /// The key is not there.
    Absent,
    /// The key was there but its TTL had run out.
    Expired,
    /// The key was there but `flush_all` invalidated it.
    Flushed,
}

/// Storing failed for lack of memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfMemory;

impl Engine {
    /// An engine with its own clock thread.
    pub fn new(cfg: EngineConfig) -> Engine {
        Engine::with_clock(cfg, Clock::start())
    }

    /// An engine driven by the given clock.
    pub fn with_clock(cfg: EngineConfig, clock: Clock) -> Engine {
        let n = cfg.shards.max(1).next_power_of_two();
        let limit = cfg.memory_limit;
        let hasher = KeyHasher::default();
        let seg_size = segment_size(limit, n);
        let shards = (0..n).map(|_| Padded(Mutex::new(Shard::new(hasher.clone(), seg_size)))).collect();
        Engine {
            shards,
            mask: n - 1,
            hasher,
            cfg,
            clock,
            mem_used: AtomicUsize::new(0),
            dead: AtomicUsize::new(0),
            mem_limit: AtomicUsize::new(limit),
            room: AtomicUsize::new(usize::MAX),
            cas: AtomicU64::new(0),
            flush_at: AtomicU32::new(0),
            flush_at_unix: AtomicI64::new(0),
            cmd_flush: AtomicU64::new(0),
            tier: None,
        }
    }

    /// Put a storage tier below memory.
    pub fn set_tier(&mut self, tier: Arc<dyn Tier>) {
        self.tier = Some(tier);
    }

    /// The storage tier below memory, if any.
    pub fn tier(&self) -> Option<&Arc<dyn Tier>> {
        self.tier.as_ref()
    }

    /// Hand out CAS uniques above `floor` from now on (a restarted persistent cache must
    /// never reuse a unique a client may still hold).
    pub fn set_cas_floor(&self, floor: u64) {
        self.cas.fetch_max(floor, Ordering::Relaxed);
    }

    /// The highest CAS unique handed out so far.
    pub fn cas_high_water(&self) -> u64 {
        self.cas.load(Ordering::Relaxed)
    }

    /// Restore a pending delayed `flush_all` (a unix time) after a restart.
    pub fn restore_flush_deadline(&self, at_unix: i64) {
        if at_unix > 0 {
            self.flush_at_unix.store(at_unix, Ordering::Relaxed);
            // Only a deadline still ahead concerns items stored by this process.
            if at_unix > self.clock.unix_now() {
                self.flush_at.store(self.clock.realtime(at_unix), Ordering::Relaxed);
            }
        }
    }

    /// The engine's settings.
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// The engine's clock.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Lock the shard that owns `key` and work on that key; what reaches the tier is
    /// noted on `receipt`.
    #[inline]
    pub fn access<'a>(&'a self, key: &'a [u8], receipt: &'a Receipt) -> Access<'a> {
        let hash = self.hasher.hash_one(key);
        let shard = self.shards[(hash >> 32) as usize & self.mask].0.lock();
        Access { engine: self, shard, hash, key, now: self.clock.now(), slot: None, receipt }
    }

    /// A fresh CAS unique.
    #[inline]
    fn next_cas(&self) -> u64 {
        if !self.cfg.use_cas {
            return 0;
        }
        self.cas.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// `flush_all`: with no delay drop everything now; with a delay (a client exptime),
    /// invalidate everything stored before that time once it arrives.
    pub fn flush_all(&self, delay: i64, receipt: &Receipt) {
        self.cmd_flush.fetch_add(1, Ordering::Relaxed);
        if delay > 0 {
            let at = self.clock.realtime(delay);
            self.flush_at.store(at, Ordering::Relaxed);
            self.flush_at_unix.store(self.clock.to_unix(at), Ordering::Relaxed);
            if let Some(t) = &self.tier {
                receipt.note(t.flush(self.clock.to_unix(at), receipt.waited()));
            }
            return;
        }
        self.flush_at.store(0, Ordering::Relaxed);
        self.flush_at_unix.store(0, Ordering::Relaxed);
        // Hold every shard while the tier records the flush and memory empties, so that a
        // store racing with flush_all is either flushed in both tiers or kept in both.
        let mut guards: Vec<_> = self.shards.iter().map(|s| s.0.lock()).collect();
        if let Some(t) = &self.tier {
            receipt.note(t.flush(0, receipt.waited()));
        }
        for s in guards.iter_mut() {
            let before = s.usage();
            s.clear();
            self.settle(before, s.usage());
        }
    }

    /// Holds of invalidated keys: (kept now, dropped early for lack of room) over every shard.
    pub fn hold_stats(&self) -> (usize, u64) {
        self.shards.iter().map(|s| s.0.lock()).fold((0, 0), |(n, d), s| (n + s.holds.len(), d + s.holds.dropped))
    }

    /// Sum the counters of every shard.
    pub fn stats(&self) -> EngineStats {
        let mut items = ShardStats::default();
        for s in self.shards.iter() {
            items += &s.0.lock().stats;
        }
        EngineStats {
            items,
            bytes: self.mem_used.load(Ordering::Relaxed),
            limit_maxbytes: self.memory_limit(),
            cmd_flush: self.cmd_flush.load(Ordering::Relaxed),
        }
    }

    /// `stats reset`: zero the counters.
    pub fn reset_stats(&self) {
        for s in self.shards.iter() {
            s.0.lock().stats.reset();
        }
        self.cmd_flush.store(0, Ordering::Relaxed);
    }

    /// The memory bound in bytes.
    pub fn memory_limit(&self) -> usize {
        self.mem_limit.load(Ordering::Relaxed)
    }

    /// Change the memory bound (`cache_memlimit`); a lower bound is reached by evicting
    /// on the next stores.
    pub fn set_memory_limit(&self, bytes: usize) {
        self.mem_limit.store(bytes, Ordering::Relaxed);
    }

    /// Room the memory budget leaves items now ([`crate::budget::Budget::room`]): stores
    /// evict down to the lower of this and the memory limit. The limit (`-m`,
    /// `limit_maxbytes`) is unchanged.
    pub fn set_room(&self, bytes: usize) {
        self.room.store(bytes, Ordering::Relaxed);
    }

    /// The bound stores evict down to now: the memory limit, or less while the memory
    /// budget's other shares hold part of it.
    pub fn bound(&self) -> usize {
        self.memory_limit().min(self.room.load(Ordering::Relaxed))
    }

    /// Evict (off the request path: the memory budget's thread) until items are within
    /// [`Engine::bound`] again, at most `most` bytes this call, never waiting for a shard
    /// lock a request holds; returns the bytes freed. A bound lowered while nothing is
    /// stored would otherwise be reached only by the next stores, in one go.
    pub fn evict_to_bound(&self, most: usize) -> usize {
        if !self.cfg.evict {
            return 0;
        }
        let now = self.clock.now();
        let mut freed = 0;
        let mut idle_rounds = 0;
        let mut i = 0;
        while freed < most && self.mem_used.load(Ordering::Relaxed) > self.bound() && idle_rounds < self.shards.len() {
            i = (i + 1) & self.mask;
            let Some(mut s) = self.shards[i].0.try_lock() else {
                idle_rounds += 1;
                continue;
            };
            let before = s.usage();
            if s.has_segments() && s.reclaim(now, true) {
                let after = s.usage();
                self.settle(before, after);
                freed += before.0.saturating_sub(after.0);
                idle_rounds = 0;
            } else {
                idle_rounds += 1;
            }
        }
        freed
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Visit every live item, one shard lock at a time (for statistics).
    pub fn for_each_item(&self, mut f: impl FnMut(&Item)) {
        let now = self.clock.now();
        for s in self.shards.iter() {
            s.0.lock().for_each(|it| {
                if !it.is_expired(now) {
                    f(it)
                }
            });
        }
    }

    /// Bytes of item memory in use.
    pub fn mem_used(&self) -> usize {
        self.mem_used.load(Ordering::Relaxed)
    }

    /// Move `mem_used` and the dead bytes by a shard's change from `before` to `after`
    /// (see [`Shard::usage`]).
    #[inline]
    fn settle(&self, before: (usize, usize), after: (usize, usize)) {
        for (total, b, a) in [(&self.mem_used, before.0, after.0), (&self.dead, before.1, after.1)] {
            if a >= b {
                total.fetch_add(a - b, Ordering::Relaxed);
            } else {
                total.fetch_sub(b - a, Ordering::Relaxed);
            }
        }
    }

    /// Compact one segment of another shard than `own` (never blocks on their locks), when
    /// dead records take more than their share of memory overall; returns whether it did.
    /// Dead bytes gather unevenly over the shards, and a store should not evict live items
    /// from its own while others hold room that compaction would give back.
    fn compact_elsewhere(&self, own: usize, now: u32) -> bool {
        let (dead, used) = (self.dead.load(Ordering::Relaxed), self.mem_used.load(Ordering::Relaxed));
        if !crate::eviction::dead_share_high(dead, used) {
            return false;
        }
        for step in 1..self.shards.len() {
            let i = (own + step) & self.mask;
            if let Some(mut s) = self.shards[i].0.try_lock() {
                if s.usage().1 == 0 {
                    continue;
                }
                let before = s.usage();
                if s.reclaim(now, false) {
                    self.settle(before, s.usage());
                    return true;
                }
            }
        }
        false
    }

    /// Try to free `need` bytes from shards other than `own` (never blocks on their locks).
    fn evict_elsewhere(&self, own: usize, need: usize, now: u32) -> bool {
        let n = self.shards.len();
        let mut freed = 0;
        for step in 1..n {
            let i = (own + step) & self.mask;
            if let Some(mut s) = self.shards[i].0.try_lock() {
                // Each reclaim either frees a segment or lowers some item's frequency, so
                // a bounded number of rounds frees what there is to free.
                let mut rounds = 0;
                while freed < need && rounds < 64 {
                    let before = s.usage();
                    if !s.reclaim(now, self.cfg.evict) {
                        break;
                    }
                    let after = s.usage();
                    self.settle(before, after);
                    freed += before.0.saturating_sub(after.0);
                    rounds += 1;
                }
            }
            if freed >= need {
                return true;
            }
        }
        false
    }
}

/// Exclusive access to one key while its shard is locked.
///
/// Every operation in [`crate::ops`] is built from these few primitives, so memory
/// accounting, expiry and flush rules live in one place.
pub struct Access<'a> {
    engine: &'a Engine,
    shard: MutexGuard<'a, Shard>,
    hash: u64,
    key: &'a [u8],
    now: u32,
    slot: Option<u32>,
    /// Where the tier's numbers for this access's writes go.
    receipt: &'a Receipt,
}

impl<'a> Access<'a> {
    /// The key being accessed.
    pub fn key(&self) -> &'a [u8] {
        self.key
    }

    /// Relative time of this access.
    pub fn now(&self) -> u32 {
        self.now
    }

    /// The engine.
    pub fn engine(&self) -> &'a Engine {
        self.engine
    }

    /// This shard's counters.
    pub fn stats(&mut self) -> &mut ShardStats {
        &mut self.shard.stats
    }

    /// Find the live item, dropping it first if it has expired or was flushed.
    pub fn lookup(&mut self) -> Result<&mut Item, Miss> {
        let idx = match self.slot {
            Some(i) => i,
            None => match self.shard.find(self.hash, self.key) {
                Some(i) => i,
                None => return self.miss_from_tier(),
            },
        };
        let it = self.shard.get(idx);
        let flush_at = self.engine.flush_at.load(Ordering::Relaxed);
        let dead = if flush_at != 0 && flush_at <= self.now && it.atime < flush_at {
            Some(Miss::Flushed)
        } else if it.is_expired(self.now) {
            Some(Miss::Expired)
        } else {
            None
        };
        if let Some(why) = dead {
            self.remove_at(idx);
            self.slot = None;
            if let Some(t) = &self.engine.tier {
                self.receipt.note(t.delete(self.key, self.receipt.waited()));
            }
            return Err(why);
        }
        self.slot = Some(idx);
        Ok(self.shard.get_mut(idx))
    }

    /// On a memory miss, ask the tier below and bring a hit back into memory.
    fn miss_from_tier(&mut self) -> Result<&mut Item, Miss> {
        let Some(tier) = self.engine.tier.clone() else {
            return Err(Miss::Absent);
        };
        let Some(ti) = tier.get(self.key) else {
            return Err(Miss::Absent);
        };
        let clock = &self.engine.clock;
        let exptime = if ti.exptime_unix == 0 { 0 } else { clock.realtime(ti.exptime_unix) };
        let mut item = Item::new(self.key, &[&ti.value], ti.flags, exptime, self.now);
        if item.is_expired(self.now) {
            self.receipt.note(tier.delete(self.key, self.receipt.waited()));
            return Err(Miss::Expired);
        }
        let flush_at = self.engine.flush_at_unix.load(Ordering::Relaxed);
        if flush_at != 0 && flush_at <= clock.unix_now() && ti.stored_unix < flush_at {
            self.receipt.note(tier.delete(self.key, self.receipt.waited()));
            return Err(Miss::Flushed);
        }
        item.cas = ti.cas;
        item.bits = ti.bits & (STALE | WON | KEY_BINARY);
        let idx = self.link(item, false).map_err(|_| Miss::Absent)?;
        self.shard.stats.tier_hits += 1;
        Ok(self.shard.get_mut(idx))
    }

    /// Mark the live item as read: feeds the eviction policy, sets `FETCHED`, and
    /// refreshes the access time as memcached's `do_item_bump` (at most once a minute).
    pub fn bump(&mut self) {
        self.update();
        if let Some(idx) = self.slot {
            self.shard.get_mut(idx).bits |= FETCHED;
        }
    }

    /// Mark the live item as used without fetching it (memcached's `do_item_update`, as
    /// after a failed `add` or an in-place `incr`): no `FETCHED` bit.
    pub fn update(&mut self) {
        if let Some(idx) = self.slot {
            self.shard.touch(idx);
            let now = self.now;
            let it = self.shard.get_mut(idx);
            if it.atime < now.saturating_sub(ITEM_UPDATE_INTERVAL) {
                it.atime = now;
            }
        }
    }

    /// Remove the item (live or not); returns whether there was one.
    pub fn remove(&mut self) -> bool {
        let idx = match self.slot.take() {
            Some(i) => Some(i),
            None => self.shard.find(self.hash, self.key),
        };
        let Some(idx) = idx else { return false };
        self.remove_at(idx);
        if let Some(t) = &self.engine.tier {
            self.receipt.note(t.delete(self.key, self.receipt.waited()));
        }
        true
    }

    /// An invalidation (the row this key was built from changed): drop the item from memory
    /// and from the tier below, and, with `hold`, refuse fills of the key until then (see
    /// [`crate::hold`]). Returns whether there was an item. Counts no `delete_*` statistic.
    pub fn invalidate(&mut self, hold: Option<std::time::Instant>) -> bool {
        self.shard.stats.invalidations += 1;
        if let Some(until) = hold {
            self.shard.holds.hold(self.hash, until);
        }
        if self.remove() {
            return true;
        }
        match &self.engine.tier {
            Some(t) if t.get(self.key).is_some() => {
                self.receipt.note(t.delete(self.key, self.receipt.waited()));
                true
            }
            _ => false,
        }
    }

    /// Whether a fill of this key is refused now (an invalidation's hold).
    #[inline]
    pub fn held(&mut self) -> bool {
        !self.shard.holds.is_empty() && self.shard.holds.is_held(self.hash, std::time::Instant::now())
    }

    /// Store `item` under this key, replacing any previous one, with a fresh CAS unique.
    /// Returns the new CAS unique.
    pub fn store(&mut self, mut item: Box<Item>) -> Result<u64, OutOfMemory> {
        debug_assert_eq!(item.key(), self.key);
        item.cas = self.engine.next_cas();
        let cas = item.cas;
        let replaced = self.slot.is_some() || self.shard.find(self.hash, self.key).is_some();
        let idx = self.link(item, true)?;
        if let Some(t) = &self.engine.tier {
            let it = self.shard.get(idx);
            self.receipt.note(t.put(self.key, tier_item(self.engine, it), replaced, self.receipt.waited()));
        }
        Ok(cas)
    }

    /// Persist an in-place change to the live item (TTL, value) to the tier below.
    pub fn changed(&mut self) {
        if let (Some(t), Some(idx)) = (&self.engine.tier, self.slot) {
            let it = self.shard.get(idx);
            self.receipt.note(t.put(self.key, tier_item(self.engine, it), true, self.receipt.waited()));
        }
    }

    /// Hand out a fresh CAS unique for an in-place change of the live item.
    pub fn new_cas(&mut self) -> u64 {
        let cas = self.engine.next_cas();
        if let Some(idx) = self.slot {
            self.shard.get_mut(idx).cas = cas;
        }
        cas
    }

    /// Remove the record at `loc` from the shard, settling the memory it held.
    fn remove_at(&mut self, loc: u32) {
        let before = self.shard.usage();
        self.shard.remove(self.hash, loc);
        self.engine.settle(before, self.shard.usage());
    }

    /// Link `item` into the shard, making room first; replaces any existing item.
    fn link(&mut self, item: Box<Item>, count_fail: bool) -> Result<u32, OutOfMemory> {
        let engine = self.engine;
        let limit = engine.bound();
        let own = (self.hash >> 32) as usize & engine.mask;
        self.slot = None;
        // Make room: this shard first, then others; with evictions off (-M) only dead
        // bytes are reclaimed.
        loop {
            let need = self.shard.insert_cost(self.hash, &item);
            let old = self.shard.find(self.hash, self.key).map_or(0, |l| self.shard.get(l).heap_cost());
            let used = engine.mem_used.load(Ordering::Relaxed);
            if need == 0 || (need <= limit && used + need <= limit + old) {
                break;
            }
            if engine.cfg.evict && self.shard.would_evict() && engine.compact_elsewhere(own, self.now) {
                continue;
            }
            let made_room = need <= limit
                && if self.shard.has_segments() {
                    let before = self.shard.usage();
                    let reclaimed = self.shard.reclaim(self.now, engine.cfg.evict);
                    engine.settle(before, self.shard.usage());
                    reclaimed || (engine.cfg.evict && engine.evict_elsewhere(own, need, self.now))
                } else {
                    engine.cfg.evict && engine.evict_elsewhere(own, need, self.now)
                };
            if !made_room {
                if count_fail {
                    self.shard.stats.store_no_memory += 1;
                }
                return Err(OutOfMemory);
            }
        }
        let replaced = match self.shard.find(self.hash, self.key) {
            Some(l) => {
                self.remove_at(l);
                true
            }
            None => false,
        };
        let before = self.shard.usage();
        let mut inserted = self.shard.insert(self.hash, item);
        // Out of segment numbers (a limit raised far past the one segments were sized for):
        // reclaim here until one comes free.
        for _ in 0..64 {
            match inserted {
                Err((_, it)) if self.shard.reclaim(self.now, engine.cfg.evict) => {
                    inserted = self.shard.insert(self.hash, it);
                }
                _ => break,
            }
        }
        engine.settle(before, self.shard.usage());
        let Ok(loc) = inserted else {
            if count_fail {
                self.shard.stats.store_no_memory += 1;
            }
            return Err(OutOfMemory);
        };
        if replaced {
            self.shard.stats.total_items -= 1;
        }
        self.slot = Some(loc);
        Ok(loc)
    }
}

/// Bytes of each shard's segments for a memory limit over `shards` shards: about 1/64 of a
/// shard's share (so the small queue's tenth is several segments), a power of two within
/// the segment bounds.
fn segment_size(limit: usize, shards: usize) -> usize {
    let share = (limit / shards.max(1) / 64).max(1);
    let pow2 = 1usize << (usize::BITS - 1 - share.leading_zeros());
    pow2.clamp(crate::segments::MIN_SEGMENT, crate::segments::MAX_SEGMENT)
}

/// The tier's view of an item.
fn tier_item<'a>(engine: &Engine, it: &'a Item) -> TierItem<&'a [u8]> {
    TierItem {
        value: it.value(),
        flags: it.flags,
        exptime_unix: engine.clock.to_unix(it.exptime),
        cas: it.cas,
        stored_unix: engine.clock.process_started() + it.atime as i64,
        bits: it.bits & (STALE | WON | KEY_BINARY),
    }
}
