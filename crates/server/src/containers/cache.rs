//! The `caching` policy: a container's private engine in front of its table (`cache_only`
//! runs memcached's semantics on that engine: `crate::exec`).
//!
//! * Reads look in memory first; a miss reads the table and keeps the row in memory for
//!   at most `cache_ttl` (never past the row's own expiry).
//! * Writes go to the table. With the table's binlog followed, a set/add/replace/cas that
//!   stores leaves its row in memory once the binlog shows it (`through.rs`); any other
//!   write drops the memory copy, and the next read refills it.
//! * Reads that keep missing and whose fills do not stay (a copy far smaller than what is
//!   read, rows changed before they are read again) pause the copy: gets read the table
//!   alone for a while, longer each time it still does not pay (`engine::backoff`). A
//!   copy warming up (misses whose fills stay) is not paused.
//! * flush empties both.
//! * A fill never outlives a change it did not see: every change to a key (a binlog or WAL
//!   event, its recheck, a write through sqlcached) bumps the generation of the key's bucket
//!   before it touches the copy, and a read's fill is kept only if the generation it read
//!   before going to the table is still the one after the fill (else the fill is removed: a
//!   miss, never an old row kept for `cache_ttl`). A read slower than an event's recheck can
//!   no longer leave the row it read before the change.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use engine::backoff::Backoff;
use engine::clock::absolute_unix_exptime;
use engine::ops::{self as eops, GetOptions, StoreMode, StoreOutcome};
use engine::Engine;
use parking_lot::Mutex;
use sql_containers::{Container, Reply, Request, Row};

use super::stats::ContainerStats;
use super::through::Expect;
use crate::pending::Fail;
use ::sql_source::fresh::Freshness;

/// Bytes of the header the `caching` policy keeps in front of a cached value: the row's
/// backend cas, its absolute exptime (so a hit answers what the table would), and whether
/// the binlog confirmed the row (a write-through copy: `through.rs`).
const CACHE_HEADER: usize = 17;
/// Gets (keys) judged at once for the read bypass.
const WINDOW: u32 = 256;
/// The copy pays back if at least one key in this many is a hit.
const HIT_SHARE: u32 = 32;
/// Buckets of keys whose changes are counted apart (a change to one bucket spoils only the
/// fills of its keys that are in flight).
const GEN_BUCKETS: usize = 1024;

/// A `caching` container's memory copy and what keeps it worth its cost.
pub struct Copy {
    /// The container's private engine.
    pub engine: Arc<Engine>,
    /// Writes waiting for their binlog event (None: the binlog is not followed, writes
    /// drop the copy).
    pub expect: Option<Arc<Expect>>,
    /// Keys read and found since the last verdict of the read bypass.
    gets: AtomicU32,
    hits: AtomicU32,
    /// Rows in the copy when the window began: fills that stay (a copy warming up) pay
    /// back later, however many reads missed meanwhile.
    items_at: AtomicU64,
    /// Reads skip the copy until this time (ms since `start`).
    paused_until: AtomicU64,
    pause: Mutex<Backoff>,
    start: Instant,
    /// Changes seen per bucket of keys, then (last) changes to the whole copy.
    gens: Box<[AtomicU64]>,
}

/// What a read saw of the changes to its key before it went to the table ([`Copy::stamp`]):
/// the key's bucket, and the whole copy's and that bucket's generations.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Stamp {
    bucket: usize,
    gens: (u64, u64),
}

impl Copy {
    /// The copy in `engine`, written through when `expect` is given.
    pub fn new(engine: Arc<Engine>, expect: Option<Arc<Expect>>) -> Copy {
        Copy {
            engine,
            expect,
            gets: AtomicU32::new(0),
            hits: AtomicU32::new(0),
            items_at: AtomicU64::new(0),
            paused_until: AtomicU64::new(0),
            pause: Mutex::new(Backoff::default()),
            start: Instant::now(),
            gens: (0..=GEN_BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn bucket(key: &[u8]) -> usize {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        BuildHasherDefault::<DefaultHasher>::default().hash_one(key) as usize % GEN_BUCKETS
    }

    /// The changes to `key` seen so far: taken before reading the table for a fill.
    pub fn stamp(&self, key: &[u8]) -> Stamp {
        self.stamp_of(Self::bucket(key))
    }

    fn stamp_of(&self, bucket: usize) -> Stamp {
        let gens = (self.gens[GEN_BUCKETS].load(Ordering::SeqCst), self.gens[bucket].load(Ordering::SeqCst));
        Stamp { bucket, gens }
    }

    /// `key`'s row changed (or may have): called before its copy is dropped or replaced.
    pub fn changed(&self, key: &[u8]) {
        self.gens[Self::bucket(key)].fetch_add(1, Ordering::SeqCst);
    }

    /// `key`'s row changed (or may have): its copy goes, and the fills in flight with it.
    pub fn drop_changed(&self, key: &[u8]) {
        self.changed(key);
        self.engine.access(key, engine::Receipt::none()).remove();
    }

    /// Every row may have changed: called before the whole copy is dropped.
    pub fn changed_all(&self) {
        self.gens[GEN_BUCKETS].fetch_add(1, Ordering::SeqCst);
    }

    /// Keeps `row`, read from the table after `stamp` was taken, unless `key` changed since:
    /// checked after the fill too, so a change that came between the check and the fill
    /// takes the fill away (the change's own drop may have run first).
    pub(crate) fn fill_read(&self, c: &Container, key: &[u8], row: &Row, stamp: Stamp) -> bool {
        if self.stamp_of(stamp.bucket) != stamp {
            return false;
        }
        fill(c, &self.engine, key, row, false);
        if self.stamp_of(stamp.bucket) != stamp {
            self.engine.access(key, engine::Receipt::none()).remove();
            return false;
        }
        true
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// `keys` read, `hits` of them from memory: judge the copy once a window is full.
    fn sample(&self, keys: u32, hits: u32, stats: &ContainerStats) {
        self.hits.fetch_add(hits, Ordering::Relaxed);
        if self.gets.fetch_add(keys, Ordering::Relaxed) + keys < WINDOW {
            return;
        }
        let mut pause = self.pause.lock();
        let (gets, hits) = (self.gets.swap(0, Ordering::Relaxed), self.hits.swap(0, Ordering::Relaxed));
        if gets < WINDOW {
            return; // another thread judged this window
        }
        let items = self.engine.stats().items.curr_items;
        let grew = items.saturating_sub(self.items_at.swap(items, Ordering::Relaxed));
        // Paying back: enough hits, or the misses' fills stay (at least half of them are
        // still there: a cold copy warming up, not one whose rows change before reuse).
        let pays = hits.saturating_mul(HIT_SHARE) >= gets || grew.saturating_mul(2) >= u64::from(gets - hits.min(gets));
        let now = self.now_ms();
        if pause.verdict(pays, now) {
            stats.read_bypass_started();
            self.paused_until.store(pause.until(), Ordering::Relaxed);
        }
    }

    /// Do reads skip the copy now (it did not pay back)?
    fn paused(&self) -> bool {
        self.paused_until.load(Ordering::Relaxed) > self.now_ms()
    }
}

/// A cached copy of a row, if present, and whether the binlog confirmed it.
pub(crate) fn cached(e: &Engine, key: &[u8]) -> Option<(Row, bool)> {
    eops::get(e, key, GetOptions { touch: None }, engine::Receipt::none(), |it| {
        let it = it?;
        let v = it.value();
        (v.len() >= CACHE_HEADER).then(|| {
            let row = Row {
                cas: u64::from_be_bytes(v[..8].try_into().unwrap_or_default()),
                exptime: i64::from_be_bytes(v[8..16].try_into().unwrap_or_default()),
                flags: it.flags,
                value: v[CACHE_HEADER..].to_vec(),
            };
            (row, v[16] == 1)
        })
    })
}

/// A cached copy of a row as [`cached`] reads it, without counting or bumping it (the
/// binlog follower compares it with a row image).
pub(crate) fn peek(e: &Engine, key: &[u8]) -> Option<(Row, bool)> {
    let mut a = e.access(key, engine::Receipt::none());
    let it = a.lookup().ok()?;
    let v = it.value();
    (v.len() >= CACHE_HEADER).then(|| {
        let row = Row {
            cas: u64::from_be_bytes(v[..8].try_into().unwrap_or_default()),
            exptime: i64::from_be_bytes(v[8..16].try_into().unwrap_or_default()),
            flags: it.flags,
            value: v[CACHE_HEADER..].to_vec(),
        };
        (row, v[16] == 1)
    })
}

/// Keep a row in memory for at most `cache_ttl` (and not past the row's own expiry);
/// `confirmed`: the binlog showed it (a write's row).
pub(crate) fn fill(c: &Container, e: &Engine, key: &[u8], row: &Row, confirmed: bool) {
    let mut ttl = c.cache_ttl().as_secs() as i64;
    if row.exptime > 0 {
        ttl = ttl.min(row.exptime - e.clock().unix_now());
    }
    if ttl <= 0 {
        return;
    }
    let mut v = Vec::with_capacity(CACHE_HEADER + row.value.len());
    v.extend_from_slice(&row.cas.to_be_bytes());
    v.extend_from_slice(&row.exptime.to_be_bytes());
    v.push(u8::from(confirmed));
    v.extend_from_slice(&row.value);
    let req = eops::StoreRequest::new(StoreMode::Set, key, &v, row.flags, ttl, 0);
    let _ = eops::store(e, &req, engine::Receipt::none());
}

/// `caching` (see the module doc). While the binlog follower is too far behind (`fresh`
/// says so), gets skip memory and read the table; what they read is newer than the
/// follower, so it still fills memory (the follower's older changes can only drop it).
pub(crate) async fn caching_op(
    c: &Container,
    copy: &Copy,
    op: Request,
    fresh: Option<&Freshness>,
    stats: &ContainerStats,
) -> Result<Reply, Fail> {
    let e = &*copy.engine;
    match op {
        Request::Get { keys, touch: None } => {
            if copy.paused() {
                stats.read_bypassed(keys.len() as u64);
                let ks: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
                return Ok(Reply::Rows(c.get_many(&ks).await?));
            }
            let mut rows: Vec<Option<Row>> = if fresh.is_none_or(Freshness::fresh) {
                keys.iter().map(|k| cached(e, k).map(|(row, _)| row)).collect()
            } else {
                stats.lag_bypassed();
                vec![None; keys.len()]
            };
            let miss: Vec<usize> = (0..keys.len()).filter(|&j| rows[j].is_none()).collect();
            let hits = (keys.len() - miss.len()) as u32;
            if !miss.is_empty() {
                let ks: Vec<&[u8]> = miss.iter().map(|&j| &keys[j][..]).collect();
                let stamps: Vec<Stamp> = ks.iter().map(|k| copy.stamp(k)).collect();
                let got = c.get_many(&ks).await?;
                for ((j, r), stamp) in miss.into_iter().zip(got).zip(stamps) {
                    if let Some(r) = &r {
                        if !copy.fill_read(c, &keys[j], r, stamp) {
                            stats.fill_raced();
                        }
                    }
                    rows[j] = r;
                }
            }
            // After the fills: a window judged now counts them as in the copy.
            copy.sample(keys.len() as u32, hits, stats);
            Ok(Reply::Rows(rows))
        }
        Request::Flush => {
            let r = c.execute(Request::Flush).await.map_err(Fail::from);
            copy.changed_all();
            e.flush_all(0, engine::Receipt::none());
            r
        }
        Request::Store { mode: StoreMode::Set | StoreMode::Add | StoreMode::Replace | StoreMode::Cas, .. }
            if copy.expect.is_some() =>
        {
            written_through(c, copy, op).await
        }
        op => {
            let keys = op.keys();
            let r = c.execute(op).await.map_err(Fail::from);
            // Dropped whatever the outcome: a failed write may still have happened.
            for k in &keys {
                copy.drop_changed(k);
            }
            r
        }
    }
}

/// A store whose row the binlog will put in memory (`through.rs`): the old copy goes
/// before the write is sent, the expectation is registered; a write that did not store
/// settles it.
async fn written_through(c: &Container, copy: &Copy, op: Request) -> Result<Reply, Fail> {
    let (e, expect) = (&*copy.engine, copy.expect.as_deref());
    let Request::Store { key, value, flags, exptime, .. } = &op else {
        unreachable!("a store");
    };
    let key = key.clone();
    copy.drop_changed(&key);
    let exptime = if c.has_expire() { absolute_unix_exptime(*exptime, e.clock().unix_now()).max(0) } else { 0 };
    let flags = if c.has_flags() { *flags } else { 0 };
    let expected = expect.is_some_and(|x| x.register(&key, value, flags, exptime));
    let r = c.execute(op).await.map_err(Fail::from);
    match &r {
        Ok(Reply::Store(StoreOutcome::Stored(_))) if expected => {}
        Ok(_) => {
            if let Some(x) = expect {
                x.forget(&key);
            }
            copy.drop_changed(&key);
        }
        // The outcome is unknown: the row may have been written (then its event fills).
        Err(_) => {
            copy.drop_changed(&key);
        }
    }
    r
}
