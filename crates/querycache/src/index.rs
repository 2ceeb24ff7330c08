//! The tag index: for every table, which cached entries depend on which of its rows,
//! plus the per-table version counters that make fills race-free.
//!
//! An entry is named by its 16-byte key hash ([`Hk`]). Entries the engine evicted stay
//! referenced here until an invalidation or a garbage pass finds them gone; the number
//! of references is bounded (over the bound, a table's references are collected, and if
//! that is not enough the table's entries are dropped: fail safe).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::{Mutex, MutexGuard};

use crate::types::{Scope, TableName};

/// An entry's name in the engine: the hash of its full key.
pub(crate) type Hk = [u8; 16];

/// Ranges wider than this are kept in a list scanned on every invalidation.
const NARROW: u64 = 1 << 20;

/// One table's version and references.
#[derive(Default)]
pub(crate) struct TableState {
    pub version: u64,
    /// The index's invalidation sequence at this table's last invalidation, or at the
    /// state's creation (an invalidation may have come just before, while it had no state).
    pub seq: u64,
    table_level: HashSet<Hk>,
    points: HashMap<i64, Vec<Hk>>,
    /// Narrow ranges by (lo, entry) → hi.
    ranges: BTreeMap<(i64, Hk), i64>,
    max_width: u64,
    wide: HashMap<Hk, (i64, i64)>,
    refs: usize,
}

impl TableState {
    fn add(&mut self, scope: &Scope, hk: Hk) -> usize {
        let before = self.refs;
        match scope {
            Scope::Table => {
                if self.table_level.insert(hk) {
                    self.refs += 1;
                }
            }
            Scope::Points(ps) => {
                for p in ps {
                    let v = self.points.entry(*p).or_default();
                    if !v.contains(&hk) {
                        v.push(hk);
                        self.refs += 1;
                    }
                }
            }
            Scope::Range(lo, hi) => {
                let width = (*hi as i128 - *lo as i128).max(0) as u128;
                if width > NARROW as u128 {
                    if self.wide.insert(hk, (*lo, *hi)).is_none() {
                        self.refs += 1;
                    }
                } else {
                    self.max_width = self.max_width.max(width as u64);
                    if self.ranges.insert((*lo, hk), *hi).is_none() {
                        self.refs += 1;
                    }
                }
            }
        }
        self.refs - before
    }

    /// Drop every reference; returns the entries and the number of references freed.
    fn drain_all(&mut self, out: &mut Vec<Hk>) -> usize {
        out.extend(self.table_level.drain());
        out.extend(self.points.drain().flat_map(|(_, v)| v));
        out.extend(self.ranges.keys().map(|(_, h)| *h));
        self.ranges.clear();
        out.extend(self.wide.drain().map(|(h, _)| h));
        self.max_width = 0;
        std::mem::take(&mut self.refs)
    }

    /// Entries depending on rows with these keys (and every table-level entry).
    fn drain_keys(&mut self, keys: &[i64], out: &mut Vec<Hk>) -> usize {
        let before = self.refs;
        self.refs -= self.table_level.len();
        out.extend(self.table_level.drain());
        for k in keys {
            if let Some(v) = self.points.remove(k) {
                self.refs -= v.len();
                out.extend(v);
            }
            let from = k.saturating_sub(self.max_width.min(i64::MAX as u64) as i64);
            let hit: Vec<(i64, Hk)> = self
                .ranges
                .range((from, [0u8; 16])..=(*k, [0xffu8; 16]))
                .filter(|(_, hi)| **hi >= *k)
                .map(|(key, _)| *key)
                .collect();
            for key in hit {
                self.ranges.remove(&key);
                self.refs -= 1;
                out.push(key.1);
            }
            let wide: Vec<Hk> = self.wide.iter().filter(|(_, (lo, hi))| lo <= k && k <= hi).map(|(h, _)| *h).collect();
            for h in wide {
                self.wide.remove(&h);
                self.refs -= 1;
                out.push(h);
            }
        }
        before - self.refs
    }

    /// Forget references to entries that no longer exist.
    fn collect(&mut self, alive: &dyn Fn(&Hk) -> bool) -> usize {
        let before = self.refs;
        self.table_level.retain(|h| alive(h));
        self.points.retain(|_, v| {
            v.retain(|h| alive(h));
            !v.is_empty()
        });
        self.ranges.retain(|(_, h), _| alive(h));
        self.wide.retain(|h, _| alive(h));
        self.refs = self.table_level.len()
            + self.points.values().map(Vec::len).sum::<usize>()
            + self.ranges.len()
            + self.wide.len();
        before - self.refs
    }
}

const SHARDS: usize = 64;

type Shard = Mutex<HashMap<TableName, TableState>>;

/// All tables' states, sharded by table.
pub(crate) struct Index {
    shards: Box<[Shard]>,
    refs: AtomicUsize,
    max_refs: usize,
    /// Goes up with every invalidation (for fills inside transactions: see `TableState::seq`).
    seq: std::sync::atomic::AtomicU64,
}

/// Locked shards, in index order.
pub(crate) struct Locked<'a> {
    guards: Vec<(usize, MutexGuard<'a, HashMap<TableName, TableState>>)>,
}

impl<'a> Locked<'a> {
    /// The state of `t` (created at version 0 if new).
    pub fn state(&mut self, ix: &Index, t: &TableName) -> &mut TableState {
        let s = ix.shard_of(t);
        let g = self.guards.iter_mut().find(|(i, _)| *i == s).expect("shard locked");
        g.1.entry(t.clone()).or_insert_with(|| TableState { seq: ix.seq(), ..Default::default() })
    }

    /// The state of `t`, if it has one.
    pub fn existing(&mut self, ix: &Index, t: &TableName) -> Option<&mut TableState> {
        let s = ix.shard_of(t);
        let g = self.guards.iter_mut().find(|(i, _)| *i == s).expect("shard locked");
        g.1.get_mut(t)
    }

    /// Every locked shard's map.
    pub fn maps(&mut self) -> Vec<&mut HashMap<TableName, TableState>> {
        self.guards.iter_mut().map(|(_, g)| &mut **g).collect()
    }
}

impl Index {
    pub fn new(max_refs: usize) -> Index {
        Index {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            refs: AtomicUsize::new(0),
            max_refs,
            seq: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn shard_of(&self, t: &TableName) -> usize {
        let h = crate::hash::hash64(t.table.as_bytes()) ^ crate::hash::hash64(t.db.as_bytes()).rotate_left(29);
        (h as usize) % SHARDS
    }

    /// Lock the shards of these tables (in order, so lockers never deadlock).
    pub fn lock<'t>(&self, tables: impl Iterator<Item = &'t TableName>) -> Locked<'_> {
        let mut idx: Vec<usize> = tables.map(|t| self.shard_of(t)).collect();
        idx.sort_unstable();
        idx.dedup();
        Locked { guards: idx.into_iter().map(|i| (i, self.shards[i].lock())).collect() }
    }

    /// Lock every shard.
    pub fn lock_all(&self) -> Locked<'_> {
        Locked { guards: (0..SHARDS).map(|i| (i, self.shards[i].lock())).collect() }
    }

    /// Record that entry `hk` depends on `scope` of `t`. Returns false if the index is
    /// over its bound even after collecting dead references: then the caller drops the
    /// table's entries.
    pub fn add(&self, l: &mut Locked<'_>, t: &TableName, scope: &Scope, hk: Hk, alive: &dyn Fn(&Hk) -> bool) -> bool {
        let st = l.state(self, t);
        let added = st.add(scope, hk);
        let total = self.refs.fetch_add(added, Ordering::Relaxed) + added;
        if total <= self.max_refs {
            return true;
        }
        let freed = st.collect(alive);
        self.refs.fetch_sub(freed, Ordering::Relaxed);
        freed * 4 >= st.refs.max(1) || self.refs.load(Ordering::Relaxed) <= self.max_refs * 3 / 4
    }

    /// Invalidate `keys` of `t` (or the whole table when `keys` is None): bumps its
    /// version and returns the entries to drop.
    /// A table without state has no entries and no fill in flight: nothing to do (so
    /// writes to arbitrary table names do not grow the index).
    pub fn invalidate(&self, l: &mut Locked<'_>, t: &TableName, keys: Option<&[i64]>, out: &mut Vec<Hk>) {
        let seq = self.next_seq();
        let Some(st) = l.existing(self, t) else { return };
        st.version += 1;
        st.seq = seq;
        let freed = match keys {
            Some(k) => st.drain_keys(k, out),
            None => st.drain_all(out),
        };
        self.refs.fetch_sub(freed, Ordering::Relaxed);
    }

    /// Invalidate every table of `db` (all shards must be locked).
    pub fn invalidate_db(&self, l: &mut Locked<'_>, db: &str, out: &mut Vec<Hk>) {
        let mut freed = 0;
        let seq = self.next_seq();
        for m in l.maps() {
            for (t, st) in m.iter_mut() {
                if &*t.db == db {
                    st.version += 1;
                    st.seq = seq;
                    freed += st.drain_all(out);
                }
            }
        }
        self.refs.fetch_sub(freed, Ordering::Relaxed);
    }

    /// Drop every reference (all shards must be locked); versions go up.
    pub fn clear(&self, l: &mut Locked<'_>) {
        let mut sink = Vec::new();
        let seq = self.next_seq();
        for m in l.maps() {
            for st in m.values_mut() {
                st.version += 1;
                st.seq = seq;
                st.drain_all(&mut sink);
                sink.clear();
            }
        }
        self.refs.store(0, Ordering::Relaxed);
    }

    /// The invalidation sequence now.
    pub fn seq(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// References held (for tests and stats).
    pub fn refs(&self) -> usize {
        self.refs.load(Ordering::Relaxed)
    }
}
