//! The tag index: for every table, which cached entries depend on which of its rows,
//! plus the per-table version counters that make fills race-free.
//!
//! An entry is named by its 16-byte key hash ([`Hk`]). Entries the engine evicted stay
//! referenced here until an invalidation or a garbage pass finds them gone; the number
//! of references is bounded (over the bound, a table's references are collected, and if
//! that is not enough the table's entries are dropped: fail safe).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use crate::hash::Hk;
use crate::ranges::Ranges;
use crate::types::{KeyValues, RowChange, Scope, TableName, Tag};

/// What a row-level invalidation knows: the integer primary-key values, the values of
/// the keys in `values` (every other key's results go unless their rows are known and
/// untouched: see `change`), and how the rows changed.
pub(crate) struct RowKeys<'a> {
    pub ints: &'a [i64],
    pub values: &'a [KeyValues],
    pub change: &'a RowChange,
}

/// A set of lower-cased columns (None: any column).
pub(crate) type Deps = Option<Arc<[Arc<str>]>>;

/// What a tagged entry read: every column it names (None: not known), and when it is
/// row-tagged, the columns its rows depend on.
struct Reads {
    columns: Deps,
    rows: Option<Deps>,
}

/// One key's entries by encoded value.
type ByValue = HashMap<Box<[u8]>, Vec<Hk>>;

/// Most row-level invalidations a table remembers for transactions' fills ([`Recent`]).
const RECENT_ENTRIES: usize = 32;
/// Most key values they hold together (an invalidation naming more is table-level here).
const RECENT_KEYS: usize = 128;

/// One row-level invalidation a table remembers ([`Recent`]).
struct Noted {
    seq: u64,
    /// The integer primary keys and key values of the rows it changed.
    ints: Vec<i64>,
    values: Vec<KeyValues>,
    /// For an UPDATE, the columns it may have changed (None: any, rows came or went).
    assigned: Option<Vec<Arc<str>>>,
}

/// A table's recent row-level invalidations, for fills inside transactions: a read whose
/// snapshot may predate a change is stored only if no change since the transaction began
/// touched its rows. What is not remembered (a table-level change, one that fell off the
/// bounded log, anything before the state existed) is below `floor`: a transaction that
/// began before `floor` fills nothing from this table.
#[derive(Default)]
struct Recent {
    /// Each row-level invalidation, oldest first.
    log: std::collections::VecDeque<Noted>,
    /// Key values held in `log`.
    keys: usize,
    /// Everything up to this sequence is unknown.
    floor: u64,
}

impl Recent {
    /// Remember an invalidation (`None`: the whole table).
    fn note(&mut self, seq: u64, keys: Option<&RowKeys<'_>>) {
        let n = keys.map_or(usize::MAX, |k| k.ints.len() + k.values.iter().map(|v| v.values.len()).sum::<usize>());
        // Inserted rows of unknown primary keys may be in any point or range.
        let keys = keys.filter(|k| *k.change != RowChange::InsertUnknownKeys);
        match keys {
            Some(k) if n <= RECENT_KEYS => {
                let assigned = match k.change {
                    RowChange::Update(cols) => Some(cols.clone()),
                    _ => None,
                };
                self.log.push_back(Noted { seq, ints: k.ints.to_vec(), values: k.values.to_vec(), assigned });
                self.keys += n;
            }
            _ => {
                self.log.clear();
                self.keys = 0;
                self.floor = seq;
            }
        }
        while self.log.len() > RECENT_ENTRIES || self.keys > RECENT_KEYS {
            let Some(old) = self.log.pop_front() else { break };
            self.keys -= old.ints.len() + old.values.iter().map(|v| v.values.len()).sum::<usize>();
            self.floor = self.floor.max(old.seq);
        }
    }

    /// Did anything after `since` change rows that `scope` reads, in a column it names
    /// (`columns`: [`crate::Tag::columns`])? (What [`TableState::drain_keys`] would have
    /// dropped had the result been stored then: an UPDATE assigning none of the columns a
    /// read names cannot change its result.)
    fn changed_since(&self, since: u64, scope: &Scope, columns: Option<&[Arc<str>]>) -> bool {
        if self.floor > since {
            return true;
        }
        self.log.iter().filter(|n| n.seq > since).any(|n| {
            let named = match (&n.assigned, columns) {
                (Some(assigned), Some(named)) => !disjoint(assigned, named),
                _ => true,
            };
            named
                && match scope {
                    Scope::Table => true,
                    Scope::Points(ps) => n.ints.iter().any(|k| ps.contains(k)),
                    Scope::Range(lo, hi) => n.ints.iter().any(|k| (lo..=hi).contains(&k)),
                    Scope::Values(kv) => match n.values.iter().find(|v| v.key == kv.key) {
                        Some(v) => v.values.iter().any(|x| kv.values.contains(x)),
                        None => true,
                    },
                }
        })
    }
}

/// Whether an UPDATE assigning `assigned` leaves every column of `set` alone.
fn disjoint(assigned: &[Arc<str>], set: &[Arc<str>]) -> bool {
    !assigned.iter().any(|c| set.contains(c))
}

/// Whether entry `hk` names none of the columns an UPDATE assigns: then no change of any
/// row can alter it.
fn untouched(tagged: &HashMap<Hk, Reads>, hk: &Hk, change: &RowChange) -> bool {
    match (change, tagged.get(hk)) {
        (RowChange::Update(cols), Some(Reads { columns: Some(named), .. })) => disjoint(cols, named),
        _ => false,
    }
}

/// Move the entries of `hs` that `keep` refuses to `out`; whether any are left.
fn take_unless(hs: &mut Vec<Hk>, keep: impl Fn(&Hk) -> bool, out: &mut Vec<Hk>) -> bool {
    hs.retain(|h| {
        keep(h) || {
            out.push(*h);
            false
        }
    });
    !hs.is_empty()
}

/// One table's version and references.
#[derive(Default)]
pub(crate) struct TableState {
    pub version: u64,
    /// The index's invalidation sequence at this table's last invalidation, or at the
    /// state's creation (an invalidation may have come just before, while it had no state).
    pub seq: u64,
    /// Its recent invalidations, for transactions' fills.
    recent: Recent,
    table_level: HashSet<Hk>,
    /// Integer primary-key points.
    points: HashMap<i64, Vec<Hk>>,
    /// Integer primary-key ranges.
    ranges: Ranges,
    /// Key name → encoded value → entries (`Scope::Values`).
    values: HashMap<Arc<str>, ByValue>,
    /// Row tags: integer primary key → entries that returned that row.
    rows: HashMap<i64, Vec<Hk>>,
    /// What row- or column-tagged entries read.
    tagged: HashMap<Hk, Reads>,
    refs: usize,
}

/// Append `hk` to `v` unless there; returns 1 if added.
fn push_new(v: &mut Vec<Hk>, hk: Hk) -> usize {
    if v.contains(&hk) {
        return 0;
    }
    v.push(hk);
    1
}

impl TableState {
    /// A state created at sequence `seq`: what came before is unknown.
    fn new(seq: u64) -> TableState {
        TableState { seq, recent: Recent { floor: seq, ..Default::default() }, ..Default::default() }
    }

    /// May a read tagged `tag` whose snapshot may be as old as sequence `since` be stored?
    /// Not if a change since then touched its rows in a column it names.
    pub fn unchanged_since(&self, since: u64, tag: &Tag) -> bool {
        self.seq <= since || !self.recent.changed_since(since, &tag.scope, tag.columns.as_deref())
    }

    /// Record an invalidation at `seq` (`keys` None: the whole table).
    fn invalidated(&mut self, seq: u64, keys: Option<&RowKeys<'_>>) {
        self.version += 1;
        self.seq = seq;
        self.recent.note(seq, keys);
    }

    /// Record what entry `hk` read: every column it names (`columns`, if known) and the
    /// rows it returned (`rows`: their primary keys, and the columns that decide them; see
    /// [`crate::RowTag`]); with neither, forget any earlier record (the entry is stored
    /// again without one).
    fn set_reads(&mut self, hk: Hk, columns: Deps, rows: Option<(&[i64], Deps)>) {
        if columns.is_none() && rows.is_none() {
            if self.tagged.remove(&hk).is_some() {
                self.refs -= 1;
            }
            return;
        }
        let reads = Reads { columns, rows: rows.as_ref().map(|(_, d)| d.clone()) };
        if self.tagged.insert(hk, reads).is_none() {
            self.refs += 1;
        }
        for r in rows.map_or(&[][..], |(r, _)| r) {
            self.refs += push_new(self.rows.entry(*r).or_default(), hk);
        }
    }

    /// Whether entry `hk` is untouched by a change of rows it did not return (or of any
    /// rows: see [`untouched`]).
    fn survives(&self, hk: &Hk, change: &RowChange) -> bool {
        if untouched(&self.tagged, hk, change) {
            return true;
        }
        match (change, self.tagged.get(hk).and_then(|r| r.rows.as_ref())) {
            (RowChange::Delete, Some(_)) => true,
            (RowChange::Update(cols), Some(Some(deps))) => disjoint(cols, deps),
            _ => false,
        }
    }

    fn add(&mut self, scope: &Scope, hk: Hk) {
        match scope {
            Scope::Table => {
                if self.table_level.insert(hk) {
                    self.refs += 1;
                }
            }
            Scope::Points(ps) => {
                for p in ps {
                    self.refs += push_new(self.points.entry(*p).or_default(), hk);
                }
            }
            Scope::Range(lo, hi) => match self.ranges.insert(*lo, *hi, hk) {
                Some(new) => self.refs += usize::from(new),
                // The planner tags ranges too wide for the index table-level; one that got
                // here anyway is kept table-level too (fail safe).
                None => self.refs += usize::from(self.table_level.insert(hk)),
            },
            Scope::Values(kv) => {
                let m = self.values.entry(kv.key.clone()).or_default();
                for v in &kv.values {
                    self.refs += push_new(m.entry(v.clone()).or_default(), hk);
                }
            }
        }
    }

    /// Drop every reference; returns the entries and the number of references freed.
    fn drain_all(&mut self, out: &mut Vec<Hk>) -> usize {
        out.extend(self.table_level.drain());
        out.extend(self.points.drain().flat_map(|(_, v)| v));
        self.ranges.drain_all(out);
        out.extend(self.values.drain().flat_map(|(_, m)| m.into_values().flatten()));
        out.extend(self.rows.drain().flat_map(|(_, v)| v));
        self.tagged.clear();
        std::mem::take(&mut self.refs)
    }

    /// Entries depending on rows with these keys: the points and ranges of `k.ints` (all
    /// of them for inserted rows of unknown keys), the entries that returned one of the
    /// rows `k.ints`, and every table-level entry, every entry tagged with the values of
    /// the keys `k.values` lists and every entry tagged on a key it does not list, except
    /// row-tagged ones the change cannot touch ([`TableState::survives`]).
    fn drain_keys(&mut self, k: &RowKeys<'_>, out: &mut Vec<Hk>) -> usize {
        let before = out.len();
        let gone: Vec<Hk> = self.table_level.iter().filter(|h| !self.survives(h, k.change)).copied().collect();
        for h in &gone {
            self.table_level.remove(h);
        }
        out.extend(gone);
        if *k.change == RowChange::InsertUnknownKeys {
            out.extend(self.points.drain().flat_map(|(_, v)| v));
            self.ranges.drain_all(out);
        }
        // Entries that hold or may hold these rows, unless they name no column it assigns.
        for key in k.ints {
            for map in [&mut self.points, &mut self.rows] {
                let Some(mut hs) = map.remove(key) else { continue };
                if take_unless(&mut hs, |h| untouched(&self.tagged, h, k.change), out) {
                    map.insert(*key, hs);
                }
            }
            let tagged = &self.tagged;
            self.ranges.drain_key_unless(*key, &|h| untouched(tagged, h, k.change), out);
        }
        let mut values = std::mem::take(&mut self.values);
        let mut drain = |hs: &mut Vec<Hk>| take_unless(hs, |h| self.survives(h, k.change), out);
        values.retain(|name, m| {
            match k.values.iter().find(|kv| kv.key == *name) {
                Some(kv) => {
                    for v in &kv.values {
                        if let Some(hs) = m.get_mut(v) {
                            if !drain(hs) {
                                m.remove(v);
                            }
                        }
                    }
                }
                None => m.retain(|_, hs| drain(hs)),
            }
            !m.is_empty()
        });
        self.values = values;
        // One entry pushed per reference freed.
        let freed = out.len() - before;
        self.refs -= freed;
        freed
    }

    /// Forget references to entries that no longer exist.
    fn collect(&mut self, alive: &dyn Fn(&Hk) -> bool) -> usize {
        let before = self.refs;
        self.table_level.retain(|h| alive(h));
        self.points.retain(|_, v| {
            v.retain(|h| alive(h));
            !v.is_empty()
        });
        let ranges = self.ranges.retain(alive);
        let mut values = 0;
        self.values.retain(|_, m| {
            m.retain(|_, v| {
                v.retain(|h| alive(h));
                values += v.len();
                !v.is_empty()
            });
            !m.is_empty()
        });
        self.rows.retain(|_, v| {
            v.retain(|h| alive(h));
            !v.is_empty()
        });
        self.tagged.retain(|h, _| alive(h));
        let rows = self.rows.values().map(Vec::len).sum::<usize>() + self.tagged.len();
        self.refs = self.table_level.len() + self.points.values().map(Vec::len).sum::<usize>() + ranges + values + rows;
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
        g.1.entry(t.clone()).or_insert_with(|| TableState::new(ix.seq()))
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
    /// `columns`: every column it names, if known (see [`crate::Tag::columns`]); `rows`:
    /// the primary keys of the rows it returned and what they depend on (see
    /// [`crate::RowTag`]), if known.
    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &self,
        l: &mut Locked<'_>,
        t: &TableName,
        scope: &Scope,
        columns: Deps,
        rows: Option<(&[i64], Deps)>,
        hk: Hk,
        alive: &dyn Fn(&Hk) -> bool,
    ) -> bool {
        let st = l.state(self, t);
        let before = st.refs;
        st.add(scope, hk);
        st.set_reads(hk, columns, rows);
        let total = if st.refs >= before {
            let added = st.refs - before;
            self.refs.fetch_add(added, Ordering::Relaxed) + added
        } else {
            let gone = before - st.refs;
            self.refs.fetch_sub(gone, Ordering::Relaxed) - gone
        };
        if total <= self.max_refs {
            return true;
        }
        let freed = st.collect(alive);
        self.refs.fetch_sub(freed, Ordering::Relaxed);
        freed * 4 >= st.refs.max(1) || self.refs.load(Ordering::Relaxed) <= self.max_refs * 3 / 4
    }

    /// Invalidate rows of `t` with `keys` (or the whole table when `keys` is None): bumps
    /// its version and returns the entries to drop.
    /// A table without state has no entries and no fill in flight: nothing to do (so
    /// writes to arbitrary table names do not grow the index).
    pub fn invalidate(&self, l: &mut Locked<'_>, t: &TableName, keys: Option<&RowKeys<'_>>, out: &mut Vec<Hk>) {
        let seq = self.next_seq();
        let Some(st) = l.existing(self, t) else { return };
        st.invalidated(seq, keys);
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
                    st.invalidated(seq, None);
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
                st.invalidated(seq, None);
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
