//! [`QueryCache`]: entries in an `engine::Engine`, the tag index, versioned fills,
//! singleflight, invalidation, online/offline and counters.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use engine::item::FETCHED;
use engine::{Engine, EngineConfig, Item, Receipt};
use parking_lot::Mutex;

use crate::bypass::Bypass;
use crate::config::Config;
use crate::effects::Follow;
use crate::flight::{Flight, Waiter};
use crate::hash::hash128;
use crate::hash::Hk;
use crate::index::{Index, Locked, RowKeys};
use crate::lexer::Dialect;
use crate::memo::Memo;
use crate::reply::{pk_values, MAX_ROW_TAGS};
use crate::schema::SchemaRegistry;
use crate::stats::{bump, get, Counters, Stats};
use crate::types::{Invalidation, Key, Source, TableName, Tags};

/// Longest key (statement text and parameters included) that is cached.
pub(crate) const MAX_KEY: usize = 64 << 10;
const FLIGHT_SHARDS: usize = 32;

/// In-flight misses by key hash.
type FlightShard = Mutex<HashMap<Hk, Arc<Flight>>>;

/// The query cache. `Send + Sync`: share one behind an `Arc` between all workers.
pub struct QueryCache {
    pub(crate) cfg: Config,
    pub(crate) engine: Engine,
    pub(crate) index: Index,
    pub(crate) memo: Memo,
    pub(crate) schema: SchemaRegistry,
    pub(crate) counters: Counters,
    online: AtomicBool,
    /// Bumped by every drop-everything; fills started before are refused.
    epoch: AtomicU64,
    flights: Box<[FlightShard]>,
    /// The backend's lexical rules and global sql_mode flags (see [`QueryCache::dialect`]).
    dialect: parking_lot::RwLock<Dialect>,
    /// Per-statement figures (`stats queries`).
    pub(crate) digests: crate::digests::Digests,
    /// Statements whose results do not pay back: their misses are not filled for a while.
    bypass: Bypass,
    /// Whether the feed that keeps the cache fresh is close enough to the backend to
    /// answer from memory (see [`QueryCache::set_freshness`]); unset: always.
    fresh: OnceLock<Freshness>,
}

/// "May a read be answered from memory now?" (the binlog follower's distance to the head
/// against `--query-cache-max-lag`).
pub type Freshness = Box<dyn Fn() -> bool + Send + Sync>;

/// What `begin_fill` decided.
pub enum FillStart {
    /// Run the query, then call [`QueryCache::finish_fill`] (dropping the `Fill`
    /// unfinished wakes the followers to query themselves).
    Leader(Fill),
    /// An identical miss is in flight: await [`Waiter::wait`].
    Follower(Waiter),
    /// Inside a transaction whose snapshot may predate a change to these tables: query the
    /// backend and store nothing.
    Bypass,
    /// The statement's results do not pay back (adaptive bypass, `crate::bypass`): query
    /// the backend and store nothing.
    Skip,
}

/// A leader's right to store one result.
pub struct Fill {
    hk: Hk,
    key: Vec<u8>,
    tags: Tags,
    tables: Vec<TableName>,
    versions: Vec<u64>,
    /// The invalidation sequence the fill's result may predate (its start, or its
    /// transaction's if earlier): stored only if no change since touched its tags.
    since: u64,
    deprecate_eof: bool,
    flight: Option<Arc<Flight>>,
    shard: usize,
    digest: u64,
}

impl Drop for Fill {
    /// An unfinished fill (the leader failed or went away) sends its followers to the
    /// backend; its finished flight entry is replaced by the next miss.
    fn drop(&mut self) {
        if let Some(f) = self.flight.take() {
            f.tx.send_replace(Some(None));
        }
    }
}

impl QueryCache {
    /// A cache with the given settings (empty, online).
    pub fn new(cfg: Config) -> QueryCache {
        // Three quarters of the size hold results, a quarter the tag index (~64 bytes a
        // reference), so that both together stay within --query-cache-size.
        let size = cfg.size.max(1 << 20);
        let engine = Engine::new(EngineConfig {
            memory_limit: size - size / 4,
            item_size_max: cfg.limit + MAX_KEY + 64,
            evict: true,
            use_cas: false,
            shards: 64,
        });
        let max_refs = (size / 4 / 64).max(1024);
        QueryCache {
            engine,
            index: Index::new(max_refs),
            memo: Memo::new(16384),
            schema: SchemaRegistry::default(),
            counters: Counters::default(),
            online: AtomicBool::new(true),
            epoch: AtomicU64::new(0),
            flights: (0..FLIGHT_SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            dialect: parking_lot::RwLock::new(Dialect::default()),
            digests: crate::digests::Digests::default(),
            bypass: Bypass::default(),
            fresh: OnceLock::new(),
            cfg,
        }
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Whether reads inside a transaction (started `READ ONLY` if `read_only`) may be
    /// answered from the cache under `--query-cache-in-transactions`.
    pub fn caches_in_transaction(&self, read_only: bool) -> bool {
        match self.cfg.in_transactions {
            crate::InTransactions::Never => false,
            crate::InTransactions::ReadOnly => read_only,
            crate::InTransactions::UntilWrite => true,
        }
    }

    /// The schema registry (filled by the proxy's metadata task).
    pub fn schema(&self) -> &SchemaRegistry {
        &self.schema
    }

    /// Whether lookups and fills are enabled.
    pub fn is_online(&self) -> bool {
        self.online.load(Ordering::Acquire)
    }

    /// The `n` statements run most often, with how they were answered.
    pub fn digests(&self, n: usize) -> Vec<crate::digests::DigestStats> {
        self.digests.top(n)
    }

    /// Forget the per-statement and per-table figures.
    pub fn reset_digests(&self) {
        self.digests.clear();
        self.counters.tables.clear();
    }

    /// The `n` tables whose cached results were invalidated most (`db.table`, count).
    pub fn table_invalidations(&self, n: usize) -> Vec<(String, u64)> {
        self.counters.tables.top(n)
    }

    /// The last statement planned as a cacheable read on `s` was answered: a hit
    /// (`Outcome::Hit`) or by the backend (`Outcome::Miss`, with its time).
    pub fn answered(&self, s: &crate::Session, outcome: crate::digests::Outcome, backend_us: u64, bytes: u64) {
        self.digests.answered(s.last_digest, outcome, backend_us, bytes);
    }

    /// The backend's rules for executable comments, with its global `sql_mode`'s lexical
    /// flags (what a new session starts with).
    pub(crate) fn dialect(&self) -> Dialect {
        *self.dialect.read()
    }

    /// The version string of the backend's greeting (each login reports it: a backend
    /// upgraded behind the proxy is followed).
    pub fn set_backend_version(&self, version: &str) {
        let v = Dialect::from_server_version(version);
        let mut d = self.dialect.write();
        if (d.version, d.mariadb) != (v.version, v.mariadb) {
            *d = Dialect { version: v.version, mariadb: v.mariadb, ..*d };
        }
    }

    /// The backend's `@@GLOBAL.sql_mode` (new sessions start with it).
    pub fn set_global_sql_mode(&self, mode: &str) {
        let mut d = self.dialect.write();
        *d = d.with_sql_mode(mode.as_bytes());
    }

    /// Enable or disable lookups and fills; every call drops everything (the server
    /// goes offline when the binlog stream breaks and online once it flows again).
    pub fn set_online(&self, on: bool) {
        let mut l = self.index.lock_all();
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.online.store(on, Ordering::Release);
        self.index.clear(&mut l);
        self.engine.flush_all(0, Receipt::none());
    }

    /// A stored reply (a hit, or the leader's reply replayed to a follower) made right for
    /// session `s`: the transaction bits of its final status are the session's.
    pub fn serve_as(&self, s: &crate::Session, reply: &mut [u8]) {
        crate::reply::set_txn_status(reply, s.deprecate_eof(), s.in_txn, s.txn_read_only, s.autocommit);
    }

    /// Lookups answer from memory only while `fresh()` says so; otherwise they miss (and
    /// are counted in `lag_bypasses`), so the read goes to the backend. Fills go on: what
    /// they store is newer than the follower, and the follower's older changes only drop it.
    /// Set once (later calls are ignored).
    pub fn set_freshness(&self, fresh: Freshness) {
        let _ = self.fresh.set(fresh);
    }

    /// The stored reply for `key` (exact bytes, sequence ids from 1), counting a hit.
    pub fn lookup(&self, key: &Key) -> Option<Vec<u8>> {
        if !self.is_online() {
            return None;
        }
        if self.fresh.get().is_some_and(|f| !f()) {
            bump(&self.counters.lag_bypasses);
            return None;
        }
        let kb = &key.bytes;
        let out = engine::ops::get(&self.engine, &key.hash, Default::default(), Receipt::none(), |it| {
            // [digest: 8][key length: 4][key][reply], as `store` writes it.
            let v = it?.value().get(8..)?;
            let n = u32::from_le_bytes(v.get(..4)?.try_into().ok()?) as usize;
            (v.get(4..4 + n)? == kb.as_slice()).then(|| v[4 + n..].to_vec())
        });
        if out.is_some() {
            bump(&self.counters.hits);
        }
        out
    }

    /// The epoch and the tables' versions a fill starts from, and the invalidation
    /// sequence its result may predate (now, or `since` if given: a read inside a
    /// transaction that began then); None if a change after `since` touched rows the read
    /// depends on (checked under the same locks, per tag: a change to other keys of the
    /// same table does not stop the fill).
    fn versions(&self, tables: &[TableName], tags: &Tags, since: Option<u64>) -> Option<(Vec<u64>, u64)> {
        let mut l = self.index.lock(tables.iter());
        let mut v = Vec::with_capacity(tables.len() + 1);
        v.push(self.epoch.load(Ordering::Acquire));
        for t in tables {
            let st = l.state(&self.index, t);
            if let Some(s) = since {
                if tags.0.iter().filter(|g| g.table == *t).any(|g| !st.unchanged_since(s, g)) {
                    return None;
                }
            }
            v.push(st.version);
        }
        // Read under the tables' locks, after any state was created: no change of these
        // tables falls between it and the fill.
        let now = self.index.seq();
        Some((v, since.map_or(now, |s| s.min(now))))
    }

    /// The invalidation sequence now (a transaction's reads fill only from tables not
    /// invalidated since the sequence at its start).
    pub(crate) fn seq(&self) -> u64 {
        self.index.seq()
    }

    /// Start filling `key` after a miss: the first miss leads (queries the backend),
    /// identical misses that arrive while no invalidation happened follow it. A statement
    /// whose results do not pay back is not filled for a while (`crate::bypass`): its
    /// miss goes to the backend alone ([`FillStart::Skip`]).
    pub fn begin_fill(&self, key: &Key, tags: &Tags) -> FillStart {
        if !self.bypass.fills(key.digest, self.bypass.now_ms()) {
            return FillStart::Skip;
        }
        let mut tables: Vec<TableName> = tags.0.iter().map(|t| t.table.clone()).collect();
        tables.sort();
        tables.dedup();
        let Some((versions, since)) = self.versions(&tables, tags, key.fill_since) else {
            bump(&self.counters.fills_refused);
            return FillStart::Bypass;
        };
        let shard = u64::from_le_bytes(key.hash[8..].try_into().expect("8 bytes")) as usize % FLIGHT_SHARDS;
        let mut fl = self.flights[shard].lock();
        if let Some(f) = fl.get(&key.hash) {
            if *f.key == *key.bytes && f.versions == versions && f.tx.borrow().is_none() {
                bump(&self.counters.shared_misses);
                return FillStart::Follower(Waiter { rx: f.tx.subscribe() });
            }
        }
        let flight = Arc::new(Flight::new(&key.bytes, versions.clone()));
        fl.insert(key.hash, flight.clone());
        FillStart::Leader(Fill {
            hk: key.hash,
            key: key.bytes.clone(),
            tags: tags.clone(),
            tables,
            versions,
            since,
            deprecate_eof: key.bytes.last() == Some(&1),
            flight: Some(flight),
            shard,
            digest: key.digest,
        })
    }

    /// Finish a fill with the backend's reply (None: not cacheable, e.g. the query
    /// failed). Stores it unless an invalidation raced with it; wakes the followers.
    pub fn finish_fill(&self, mut fill: Fill, reply: Option<&[u8]>) {
        let reply = reply.filter(|r| r.len() <= self.cfg.limit && crate::reply::storable(r, fill.deprecate_eof));
        let Some(reply) = reply else {
            bump(&self.counters.not_cached);
            self.end_flight(&mut fill, None);
            return;
        };
        // Stored as if outside a transaction with autocommit; each session served gets its
        // own transaction bits (`serve_as`).
        let mut canonical = reply.to_vec();
        crate::reply::set_txn_status(&mut canonical, fill.deprecate_eof, false, false, true);
        let shared: Arc<[u8]> = canonical.into();
        self.store(&fill, &shared);
        self.end_flight(&mut fill, Some(shared));
    }

    fn store(&self, fill: &Fill, reply: &[u8]) {
        // The rows each row-tagged dependency returned (read before any lock is taken).
        let rows: Vec<_> = fill
            .tags
            .0
            .iter()
            .map(|tag| {
                let r = tag.rows.as_ref()?;
                let pks = pk_values(reply, fill.deprecate_eof, r, &tag.table.table, MAX_ROW_TAGS)?;
                Some((pks, r.deps.clone()))
            })
            .collect();
        let mut l = self.index.lock(fill.tables.iter());
        // Refused if everything was dropped since (flush, offline), or if a change since the
        // fill began touched rows it depends on (what it read may predate that change); a
        // change to other keys of its tables does not matter (a write rate that keeps some
        // key of every table changing would otherwise refuse most fills under load).
        let touched = fill.tags.0.iter().any(|g| !l.state(&self.index, &g.table).unchanged_since(fill.since, g));
        if self.epoch.load(Ordering::Acquire) != fill.versions[0] || touched || !self.is_online() {
            bump(&self.counters.fills_refused);
            return;
        }
        let mut a = self.engine.access(&fill.hk, Receipt::none());
        let len = (fill.key.len() as u32).to_le_bytes();
        let digest = fill.digest.to_le_bytes();
        if a.store(Item::new(&fill.hk, &[&digest, &len, &fill.key, reply], 0, 0, a.now())).is_err() {
            return;
        }
        drop(a);
        bump(&self.counters.inserts);
        let alive = |h: &Hk| self.engine.access(h, Receipt::none()).lookup().is_ok();
        for (tag, rows) in fill.tags.0.iter().zip(&rows) {
            let rows = rows.as_ref().map(|(p, d)| (&p[..], d.clone()));
            if !self.index.add(&mut l, &tag.table, &tag.scope, tag.columns.clone(), rows, fill.hk, &alive) {
                // The index is over its bound: drop this table's entries (fail safe; a
                // matter of room, like an eviction: no verdict for the adaptive bypass).
                let mut out = Vec::new();
                self.index.invalidate(&mut l, &tag.table, None, &mut out);
                self.remove(&out, false);
            }
        }
    }

    fn end_flight(&self, fill: &mut Fill, outcome: Option<Arc<[u8]>>) {
        let Some(f) = fill.flight.take() else { return };
        let mut fl = self.flights[fill.shard].lock();
        if fl.get(&fill.hk).is_some_and(|x| Arc::ptr_eq(x, &f)) {
            fl.remove(&fill.hk);
        }
        drop(fl);
        f.tx.send_replace(Some(outcome));
    }

    /// Drop entries of `t` (keys, or all) with the shard of `t` locked.
    fn drop_tables(&self, l: &mut Locked<'_>, t: &TableName, keys: Option<&RowKeys<'_>>) {
        let mut out = Vec::new();
        self.index.invalidate(l, t, keys, &mut out);
        self.remove(&out, true);
    }

    /// Drop these results, counting each in its statement's digest row and, when what they
    /// read `changed` (not a matter of room), read or not, in its statement's verdict of the
    /// adaptive bypass.
    fn remove(&self, hks: &[Hk], changed: bool) {
        let now = self.bypass.now_ms();
        for h in hks {
            let mut a = self.engine.access(h, Receipt::none());
            let found = a.lookup().ok().and_then(|it| {
                let d = u64::from_le_bytes(it.value().get(..8)?.try_into().ok()?);
                Some((d, it.has(FETCHED)))
            });
            if a.remove() {
                if let Some((d, read)) = found {
                    self.digests.invalidated(d);
                    if changed {
                        self.bypass.ended(d, read, now);
                    }
                }
            }
        }
    }

    /// Is the statement with this digest key bypassed now (adaptive bypass)?
    pub fn bypassed(&self, digest: u64) -> bool {
        self.bypass.is_bypassed(digest, self.bypass.now_ms())
    }

    /// Drop every result that may depend on what changed. Results read before this call
    /// are never stored after it. From the binlog, anything coarser than rows (DDL,
    /// TRUNCATE, undecodable events, reconnects) also makes the schema registry forget
    /// the tables concerned, so primary keys are read again.
    pub fn invalidate(&self, inv: &Invalidation, source: Source) {
        self.invalidate_one(inv, source);
        // What triggers and cascading foreign keys changed along with a proxied write (the
        // binlog shows trigger rows itself, and the follower adds the cascades it omits).
        if source != Source::Proxy {
            return;
        }
        let Some(fx) = self.schema.effects() else { return };
        let mut follow: Vec<&Follow> = Vec::new();
        match inv {
            Invalidation::Keys { db, table, .. } | Invalidation::Table { db, table } => {
                follow.extend(fx.follows(&TableName::new(db, table)))
            }
            Invalidation::Database { db } => follow.extend(fx.follows_in(db)),
            Invalidation::All => {}
        }
        for f in follow {
            match f {
                Follow::All => return self.invalidate_one(&Invalidation::All, Source::Proxy),
                Follow::Tables(ts) => {
                    for t in ts {
                        let inv = Invalidation::Table { db: t.db.to_string(), table: t.table.to_string() };
                        self.invalidate_one(&inv, Source::Proxy);
                    }
                }
            }
        }
    }

    fn invalidate_one(&self, inv: &Invalidation, source: Source) {
        let c = &self.counters;
        // The schema registry is not touched here: DDL arrives as its own binlog change and
        // the proxy forgets what it names then. Forgetting a table on every table-level row
        // change (a keyless table, a table not known yet) kept a table under a steady
        // writer unknown, so most reads of it were never cached.
        if source == Source::Proxy {
            bump(&c.invalidations_proxy);
        }
        let counted = source != Source::Recheck;
        match inv {
            Invalidation::Keys { db, table, keys, values, change } => {
                if source == Source::Binlog {
                    bump(&c.invalidations_binlog_rows);
                }
                if counted {
                    c.tables.bump(db, table);
                }
                let t = TableName::new(db, table);
                let mut l = self.index.lock(std::iter::once(&t));
                self.drop_tables(&mut l, &t, Some(&RowKeys { ints: keys, values, change }));
            }
            Invalidation::Table { db, table } => {
                if counted {
                    bump(&c.invalidations_table);
                    c.tables.bump(db, table);
                }
                let t = TableName::new(db, table);
                let mut l = self.index.lock(std::iter::once(&t));
                self.drop_tables(&mut l, &t, None);
            }
            Invalidation::Database { db } => {
                bump(&c.invalidations_table);
                let mut l = self.index.lock_all();
                let mut out = Vec::new();
                self.index.invalidate_db(&mut l, db, &mut out);
                self.remove(&out, true);
            }
            Invalidation::All => {
                bump(&c.invalidations_all);
                let mut l = self.index.lock_all();
                self.epoch.fetch_add(1, Ordering::AcqRel);
                self.index.clear(&mut l);
                self.engine.flush_all(0, Receipt::none());
            }
        }
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let c = &self.counters;
        let e = self.engine.stats();
        Stats {
            hits: get(&c.hits),
            inserts: get(&c.inserts),
            not_cached: get(&c.not_cached),
            lowmem_prunes: e.items.evictions,
            queries_in_cache: e.items.curr_items,
            invalidations_proxy: get(&c.invalidations_proxy),
            invalidations_binlog_rows: get(&c.invalidations_binlog_rows),
            invalidations_table: get(&c.invalidations_table),
            invalidations_all: get(&c.invalidations_all),
            fills_refused: get(&c.fills_refused),
            shared_misses: get(&c.shared_misses),
            lag_bypasses: get(&c.lag_bypasses),
            bypass: self.bypass.stats(self.bypass.now_ms()),
            online: self.is_online(),
            bytes: e.bytes as u64,
        }
    }

    /// References held by the tag index (bounded).
    pub fn index_refs(&self) -> usize {
        self.index.refs()
    }
}

/// Build a key: session prefix, protocol, statement, parameters, then the reply format.
pub(crate) fn make_key(
    prefix: &[u8],
    binary: bool,
    db: Option<&[u8]>,
    text: &[u8],
    params: &[u8],
    deprecate_eof: bool,
) -> Key {
    let db = db.unwrap_or(&[]);
    let mut b = Vec::with_capacity(prefix.len() + db.len() + text.len() + params.len() + 20);
    b.extend_from_slice(prefix);
    b.push(binary as u8);
    b.extend_from_slice(&(db.len() as u32).to_le_bytes());
    b.extend_from_slice(db);
    b.extend_from_slice(&(text.len() as u32).to_le_bytes());
    b.extend_from_slice(text);
    b.extend_from_slice(&(params.len() as u32).to_le_bytes());
    b.extend_from_slice(params);
    b.push(deprecate_eof as u8);
    let hash = hash128(&b);
    Key { bytes: b, hash, digest: 0, fill_since: None }
}
