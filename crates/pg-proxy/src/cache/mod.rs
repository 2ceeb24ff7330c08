//! The PostgreSQL query cache: results of cacheable reads kept in memory, answered to the
//! same session state again, and dropped when the WAL (or a write through the proxy) shows
//! that a table they read changed — row by row for point reads on a single-column primary
//! key, the whole table otherwise.
//!
//! - [`analyze`]: what a statement is (sqlparser, PostgreSQL dialect);
//! - [`catalog`]: what a name means and whether its reads may be cached;
//! - this module: the entries (in an `engine::Engine`, bounded by `--pg-query-cache-size`),
//!   their tags per table, fills that are refused if their tables changed meanwhile, and
//!   what a change drops.
//!
//! A result is stored only when the statement ran outside a transaction (ReadyForQuery
//! says idle before and after): its snapshot was the latest, and no REPEATABLE READ or
//! SERIALIZABLE snapshot can fill the cache with rows older than a commit. Every result is
//! keyed by the database, the role, the reported settings that change how values are
//! rendered, every `SET` the session ran, and the exact text.

pub mod analyze;
pub mod batch;
pub mod catalog;
pub mod digest;
mod index;
pub mod session;
pub mod start;

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use engine::{Engine, EngineConfig, Item, Receipt};
use parking_lot::{Mutex, RwLock};
use sql_source::{Change, RowsKind};

use analyze::{Statementish, Why};
use catalog::{Catalog, KeyKind};
pub use index::TableId;
use index::{Index, Scope};

/// Largest key kept in the engine (the statement text is part of it).
const MAX_KEY: usize = 16 * 1024;

/// A result's key: its bytes (session state and text) and their 128-bit hash.
#[derive(Clone, Debug)]
pub struct Key {
    bytes: Vec<u8>,
    hash: [u8; 16],
}

/// What one dependency of a result is.
#[derive(Clone, Debug)]
pub struct Tag {
    table: TableId,
    scope: Scope,
}

/// What the proxy does with a simple Query.
#[derive(Debug)]
pub enum Plan {
    /// Look it up; on a miss forward it and fill with the reply.
    Cached(Key, Vec<Tag>),
    /// Forward; not cached (why, for stats).
    Forward(&'static str),
    /// Forward; at its ReadyForQuery (before the client sees it) drop these tables'
    /// results (None: every result).
    Write(Option<Vec<TableId>>),
}

/// The session state a result depends on.
pub struct View<'a> {
    /// The database.
    pub database: &'a str,
    /// The role (`session_authorization`, or the login user), and any `SET ROLE` is in `settings`.
    pub role: &'a str,
    /// The reported settings that render values, and every SET the session ran.
    pub settings: &'a [u8],
    /// `search_path`, resolved.
    pub search_path: &'a [String],
}

/// What an extended-protocol batch adds to a statement: its parameters (text; binary
/// integers decoded) and the bytes of its Parse/Bind/Describe/Execute messages (the key:
/// the same bytes get the same reply).
#[derive(Default)]
pub struct Extended {
    /// Parameter values as text (None: NULL or not decodable).
    pub params: Vec<Option<String>>,
    /// The batch's messages but Sync (empty for a simple Query).
    pub tail: Vec<u8>,
}

/// The cache's counters.
#[derive(Default)]
pub struct Counters {
    /// Reads answered from memory.
    pub hits: AtomicU64,
    /// Cacheable reads not found.
    pub misses: AtomicU64,
    /// Results stored.
    pub inserts: AtomicU64,
    /// Fills refused (a table changed while the read ran, or the reply could not be kept).
    pub fills_refused: AtomicU64,
    /// Results dropped by changes.
    pub invalidated: AtomicU64,
    /// Reads forwarded because the WAL feed was behind or down.
    pub lag_bypasses: AtomicU64,
    /// Reads never cached, by reason ([`REASONS`]).
    pub not_cacheable: [AtomicU64; 9],
    /// Writes through the proxy that dropped results.
    pub proxy_invalidations: AtomicU64,
    /// Changes read from the WAL that dropped results.
    pub wal_invalidations: AtomicU64,
}

/// Reasons of [`Counters::not_cacheable`], in order.
pub const REASONS: [&str; 9] =
    ["shape", "locking", "volatile", "source", "unparsed", "transaction", "table", "session", "extended"];

/// Counts a read that is not cached.
pub fn reason_index(label: &str) -> usize {
    REASONS.iter().position(|r| *r == label).unwrap_or(0)
}

/// The cache.
pub struct PgCache {
    engine: Engine,
    index: Mutex<Index>,
    /// Bumped by every change that drops everything (fills that began before are refused).
    epoch: AtomicU64,
    catalog: RwLock<Arc<Catalog>>,
    /// The catalog was read at least once.
    catalog_ready: AtomicBool,
    online: AtomicBool,
    fresh: OnceLock<Box<dyn Fn() -> bool + Send + Sync>>,
    /// Results larger than this are not kept.
    limit: usize,
    /// `--pg-query-cache-size`: what results and their tags may take.
    size: usize,
    /// `--pg-query-cache-in-transactions`: which reads inside transactions are answered.
    pub in_transactions: config::querycache::InTransactions,
    /// The counters.
    pub counters: Counters,
    /// The statement digest table (one type with the MySQL cache's): how each normalized
    /// statement was answered.
    pub digests: sql_source::digests::Digests,
    hasher: std::hash::RandomState,
    /// Analyses by digest (literals out), so a statement is parsed once per shape.
    memo: RwLock<std::collections::HashMap<String, Arc<Vec<Statementish>>>>,
}

/// Analyses kept at most (the memo is emptied when full).
const MEMO: usize = 16_384;

/// A fill's right to store one result.
pub struct Fill {
    key: Key,
    tags: Vec<Tag>,
    versions: Vec<u64>,
    epoch: u64,
}

impl PgCache {
    /// An empty cache of `size` bytes (results up to `limit` bytes each), offline until
    /// the WAL flows.
    pub fn new(size: usize, limit: usize) -> PgCache {
        let size = size.max(1 << 20);
        PgCache {
            engine: Engine::new(EngineConfig {
                memory_limit: size - size / 4,
                item_size_max: limit + MAX_KEY + 64,
                evict: true,
                use_cas: false,
                shards: 64,
            }),
            index: Mutex::new(Index::new((size / 4 / 64).max(1024))),
            epoch: AtomicU64::new(0),
            catalog: RwLock::new(Arc::new(Catalog::default())),
            catalog_ready: AtomicBool::new(false),
            online: AtomicBool::new(false),
            fresh: OnceLock::new(),
            limit,
            size,
            in_transactions: config::querycache::InTransactions::ReadOnly,
            counters: Counters::default(),
            digests: Default::default(),
            hasher: std::hash::RandomState::new(),
            memo: RwLock::new(std::collections::HashMap::new()),
        }
    }

    /// The freshness rule (set once): lookups are answered only while it says so.
    pub fn set_freshness(&self, fresh: Box<dyn Fn() -> bool + Send + Sync>) {
        let _ = self.fresh.set(fresh);
    }

    /// Whether results are answered and stored (the WAL flows).
    pub fn is_online(&self) -> bool {
        self.online.load(Relaxed)
    }

    /// The WAL flows (true) or broke (false: every result is dropped, none is stored).
    pub fn set_online(&self, on: bool) {
        if !on {
            self.drop_all();
        }
        self.online.store(on, Relaxed);
    }

    /// Whether the catalog was read at least once.
    pub fn catalog_ready(&self) -> bool {
        self.catalog_ready.load(Relaxed)
    }

    /// The catalog now.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().clone()
    }

    /// A new catalog; tables whose signature changed (or that went) lose their results.
    pub fn set_catalog(&self, new: Catalog) {
        let old = std::mem::replace(&mut *self.catalog.write(), Arc::new(new));
        self.catalog_ready.store(true, Relaxed);
        let new = self.catalog();
        for t in old.all() {
            let same = new.all().find(|n| n.schema == t.schema && n.name == t.name);
            if same.is_none_or(|n| n.signature != t.signature || n.not_cached != t.not_cached || n.key != t.key) {
                self.drop_table(&TableId::new(&t.schema, &t.name));
            }
        }
    }

    /// What the statements of `sql` are: parsed once per shape (its digest), the literals
    /// of this text put back in the equalities.
    pub fn analyze(&self, sql: &str) -> Vec<Statementish> {
        self.analyze_digest(sql).0
    }

    /// [`PgCache::analyze`], with the statement's digest key (its text with literals out; the
    /// text itself if it has no digest) after counting one execution of it in the digest
    /// table (`text` kept for a new row).
    pub fn analyze_counted(&self, sql: &str) -> (Vec<Statementish>, u64) {
        let (stmts, text) = self.analyze_digest(sql);
        let text = text.as_deref().unwrap_or(sql);
        let key = sql_source::digests::Digests::key(text.as_bytes());
        let shown = || digest::display(text).into_bytes();
        self.digests.record_with(key, shown, sql_source::digests::Outcome::Other, 0, 0);
        (stmts, key)
    }

    /// The analysis and the digest text (None: the statement has none).
    fn analyze_digest(&self, sql: &str) -> (Vec<Statementish>, Option<String>) {
        let Some((text, literals)) = digest::digest(sql) else { return (analyze::analyze(sql), None) };
        let known = self.memo.read().get(&text).cloned();
        let shape = match known {
            Some(s) => s,
            None => {
                let s = Arc::new(analyze::analyze(&text));
                let mut m = self.memo.write();
                if m.len() >= MEMO {
                    m.clear();
                }
                m.insert(text.clone(), s.clone());
                s
            }
        };
        let stmts = shape
            .iter()
            .map(|st| match st {
                Statementish::Read { tables, equals } => Statementish::Read {
                    tables: tables.clone(),
                    equals: equals
                        .iter()
                        .filter_map(|(c, v)| {
                            let (neg, s) = v.strip_prefix('-').map_or((false, v.as_str()), |r| (true, r));
                            match digest::slot_of(s) {
                                Some(i) => {
                                    let lit = literals.get(i)?;
                                    Some((c.clone(), if neg { format!("-{lit}") } else { lit.clone() }))
                                }
                                // `$1`: a parameter, resolved against the Bind.
                                None => Some((c.clone(), v.clone())),
                            }
                        })
                        .collect(),
                },
                other => other.clone(),
            })
            .collect();
        (stmts, Some(text))
    }

    /// The `n` statements run most often, with how they were answered.
    pub fn digests(&self, n: usize) -> Vec<sql_source::digests::DigestStats> {
        self.digests.top(n)
    }

    /// What to do with one simple Query's text in this session.
    pub fn plan(&self, view: &View<'_>, sql: &str) -> Plan {
        let stmts = self.analyze(sql);
        self.plan_statements(view, sql, &stmts, &Extended::default())
    }

    /// What to do with a statement whose analysis is `stmts`, run by a simple Query
    /// (`ext` empty) or an extended-protocol batch (`ext`: its parameters and the bytes of
    /// its messages, part of the key).
    pub fn plan_statements(&self, view: &View<'_>, sql: &str, stmts: &[Statementish], ext: &Extended) -> Plan {
        let catalog = self.catalog();
        if let [Statementish::Read { tables, equals }] = stmts {
            let mut tags = Vec::with_capacity(tables.len());
            for n in tables {
                let Some(t) = catalog.resolve(n, view.search_path) else { return Plan::Forward("table") };
                if t.not_cached.is_some() {
                    return Plan::Forward("table");
                }
                let point = match (&t.key, tables.len()) {
                    (Some((col, kind)), 1) => equals.iter().find(|(c, _)| c == col).and_then(|(_, v)| {
                        match v.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
                            Some(n) => point(ext.params.get(n.checked_sub(1)?)?.as_deref()?, *kind),
                            None => point(v, *kind),
                        }
                    }),
                    _ => None,
                };
                let scope = point.map_or(Scope::Table, Scope::Point);
                tags.push(Tag { table: TableId::new(&t.schema, &t.name), scope });
            }
            return Plan::Cached(self.key(view, sql, &ext.tail), tags);
        }
        let mut written: Vec<TableId> = Vec::new();
        let mut read_why = None;
        for s in stmts {
            match s {
                Statementish::Write(names) => {
                    for n in names {
                        match catalog.resolve(n, view.search_path) {
                            Some(t) if !t.spreads => written.push(TableId::new(&t.schema, &t.name)),
                            // A write that may reach other tables, or to a name not known
                            // yet (created since the last catalog read): everything.
                            _ => return Plan::Write(None),
                        }
                    }
                }
                Statementish::Other => return Plan::Write(None),
                Statementish::Uncacheable(w) => read_why = Some(w.label()),
                Statementish::Read { .. } => read_why = Some(Why::Shape.label()),
                Statementish::Setting | Statementish::Neutral => {}
            }
        }
        if !written.is_empty() {
            return Plan::Write(Some(written));
        }
        Plan::Forward(read_why.unwrap_or("session"))
    }

    /// What running `sql` may change (for statements that are not cached: extended
    /// protocol, sessions the cache does not serve).
    pub fn plan_effect(&self, sql: &str, search_path: &[String]) -> session::Effect {
        let view = View { database: "", role: "", settings: b"", search_path };
        match self.plan_statements(&view, sql, &self.analyze(sql), &Extended::default()) {
            Plan::Write(Some(t)) => session::Effect::Tables(t),
            Plan::Write(None) => session::Effect::All,
            Plan::Cached(..) | Plan::Forward(_) => session::Effect::None,
        }
    }

    fn key(&self, view: &View<'_>, sql: &str, tail: &[u8]) -> Key {
        let mut bytes = Vec::with_capacity(sql.len() + view.settings.len() + tail.len() + 64);
        for part in [view.database.as_bytes(), view.role.as_bytes(), view.settings, tail] {
            bytes.extend_from_slice(&(part.len() as u32).to_le_bytes());
            bytes.extend_from_slice(part);
        }
        bytes.extend_from_slice(sql.as_bytes());
        let mut h1 = self.hasher.build_hasher();
        h1.write(&bytes);
        let mut h2 = self.hasher.build_hasher();
        h2.write_u8(0x5c);
        h2.write(&bytes);
        let mut hash = [0u8; 16];
        hash[..8].copy_from_slice(&h1.finish().to_le_bytes());
        hash[8..].copy_from_slice(&h2.finish().to_le_bytes());
        Key { bytes, hash }
    }

    /// The stored reply for `key` (RowDescription .. ReadyForQuery), counting a hit.
    pub fn lookup(&self, key: &Key) -> Option<Vec<u8>> {
        self.lookup_if(key, |_| true)
    }

    /// The stored reply for `key` if `usable` says it may answer here (a hit), else None (a
    /// miss).
    pub fn lookup_if(&self, key: &Key, usable: impl Fn(&[u8]) -> bool) -> Option<Vec<u8>> {
        if !self.is_online() || key.bytes.len() > MAX_KEY {
            return None;
        }
        if self.fresh.get().is_some_and(|f| !f()) {
            self.counters.lag_bypasses.fetch_add(1, Relaxed);
            return None;
        }
        let kb = &key.bytes;
        let out = engine::ops::get(&self.engine, &key.hash, Default::default(), Receipt::none(), |it| {
            let v = it?.value();
            let n = u32::from_le_bytes(v.get(..4)?.try_into().ok()?) as usize;
            (v.get(4..4 + n)? == kb.as_slice() && usable(&v[4 + n..])).then(|| v[4 + n..].to_vec())
        });
        match out.is_some() {
            true => self.counters.hits.fetch_add(1, Relaxed),
            false => self.counters.misses.fetch_add(1, Relaxed),
        };
        out
    }

    /// Starts a fill after a miss (None: the cache is offline or the key too long).
    pub fn begin_fill(&self, key: Key, tags: Vec<Tag>) -> Option<Fill> {
        if !self.is_online() || key.bytes.len() > MAX_KEY {
            return None;
        }
        let ix = self.index.lock();
        let versions = tags.iter().map(|t| ix.version(&t.table)).collect();
        Some(Fill { key, tags, versions, epoch: self.epoch.load(Relaxed) })
    }

    /// Stores a fill's reply unless a change to its tables came in between.
    pub fn finish_fill(&self, fill: Fill, reply: &[u8]) {
        if reply.len() > self.limit || !self.is_online() {
            self.counters.fills_refused.fetch_add(1, Relaxed);
            return;
        }
        let mut ix = self.index.lock();
        let changed = self.epoch.load(Relaxed) != fill.epoch
            || fill.tags.iter().zip(&fill.versions).any(|(t, v)| ix.version(&t.table) != *v);
        if changed {
            self.counters.fills_refused.fetch_add(1, Relaxed);
            return;
        }
        let mut a = self.engine.access(&fill.key.hash, Receipt::none());
        let len = (fill.key.bytes.len() as u32).to_le_bytes();
        if a.store(Item::new(&fill.key.hash, &[&len, &fill.key.bytes, reply], 0, 0, a.now())).is_err() {
            self.counters.fills_refused.fetch_add(1, Relaxed);
            return;
        }
        drop(a);
        self.counters.inserts.fetch_add(1, Relaxed);
        for t in &fill.tags {
            if let Some(overflow) = ix.add(&t.table, &t.scope, fill.key.hash) {
                self.remove(&overflow);
            }
        }
    }

    /// Drops the results of these tables (a write through the proxy).
    pub fn written(&self, tables: Option<&[TableId]>) {
        self.counters.proxy_invalidations.fetch_add(1, Relaxed);
        match tables {
            Some(ts) => ts.iter().for_each(|t| self.drop_table(t)),
            None => self.drop_all(),
        }
    }

    /// Applies one change read from the WAL.
    pub fn apply(&self, change: &Change) {
        match change {
            Change::Rows { db, table, schema, rows, kind } => {
                self.counters.wal_invalidations.fetch_add(1, Relaxed);
                let id = TableId::new(db, table);
                let key =
                    self.catalog().all().find(|t| t.schema == *db && t.name == *table).and_then(|t| t.key.clone());
                let col = key.as_ref().and_then(|(c, _)| schema.columns.iter().position(|x| x == c));
                match (col, kind) {
                    (Some(i), RowsKind::Insert | RowsKind::Delete | RowsKind::Update(_)) => {
                        let mut points: Vec<String> = rows
                            .iter()
                            .filter_map(|r| r.get(i)?.text_bytes())
                            .map(|b| String::from_utf8_lossy(&b).into_owned())
                            .collect();
                        points.dedup();
                        let mut ix = self.index.lock();
                        let hks = ix.invalidate(&id, Some(&points));
                        drop(ix);
                        self.remove(&hks);
                    }
                    _ => self.drop_table(&id),
                }
            }
            Change::ManyRows { db, table } | Change::Table { db, table } => {
                self.counters.wal_invalidations.fetch_add(1, Relaxed);
                self.drop_table(&TableId::new(db, table));
            }
            Change::Keys { .. } | Change::Routines { .. } => {}
            Change::Database { .. } | Change::All { .. } | Change::Privileges { .. } => self.drop_all(),
            Change::Disconnected { .. } => self.set_online(false),
            Change::Connected => self.set_online(true),
        }
    }

    fn drop_table(&self, t: &TableId) {
        let hks = self.index.lock().invalidate(t, None);
        self.remove(&hks);
    }

    /// Drops every result; fills in flight are refused.
    pub fn drop_all(&self) {
        self.epoch.fetch_add(1, Relaxed);
        let hks = self.index.lock().clear();
        self.remove(&hks);
    }

    fn remove(&self, hks: &[[u8; 16]]) {
        for h in hks {
            if self.engine.access(h, Receipt::none()).remove() {
                self.counters.invalidated.fetch_add(1, Relaxed);
            }
        }
    }

    /// The `pg_query_cache_*` figures.
    pub fn write_stats(&self, sink: &mut dyn engine::stats::StatSink) {
        use engine::stats::Kind;
        let n = |a: &AtomicU64| a.load(Relaxed);
        let c = &self.counters;
        sink.stat("pg_query_cache_online", Kind::Gauge, &u8::from(self.is_online()));
        for (name, v) in [
            ("pg_query_cache_hits", &c.hits),
            ("pg_query_cache_misses", &c.misses),
            ("pg_query_cache_inserts", &c.inserts),
            ("pg_query_cache_fills_refused", &c.fills_refused),
            ("pg_query_cache_invalidated", &c.invalidated),
            ("pg_query_cache_lag_bypasses", &c.lag_bypasses),
            ("pg_query_cache_proxy_invalidations", &c.proxy_invalidations),
            ("pg_query_cache_wal_invalidations", &c.wal_invalidations),
        ] {
            sink.stat(name, Kind::Counter, &n(v));
        }
        for (r, v) in REASONS.iter().zip(&c.not_cacheable) {
            sink.stat(&format!("pg_query_cache_not_cacheable_{r}"), Kind::Counter, &n(v));
        }
        let (items, bytes) = self.size();
        sink.stat("pg_query_cache_entries", Kind::Gauge, &items);
        sink.stat("pg_query_cache_bytes", Kind::Gauge, &bytes);
        let cat = self.catalog();
        sink.stat("pg_query_cache_tables", Kind::Gauge, &cat.all().filter(|t| t.not_cached.is_none()).count());
    }

    /// Its share of the memory budget: (bytes its results take now, its bound).
    pub fn memory(&self) -> (usize, usize) {
        (self.engine.mem_used(), self.size)
    }

    /// Results stored now, and the bytes they take.
    pub fn size(&self) -> (u64, u64) {
        let s = self.engine.stats();
        (s.items.curr_items, s.bytes as u64)
    }
}

/// A point value as the WAL renders it (integers normalized), or None if the literal
/// cannot be compared as the key's text.
fn point(literal: &str, kind: KeyKind) -> Option<String> {
    match kind {
        KeyKind::Int => literal.trim().parse::<i64>().ok().map(|v| v.to_string()),
        KeyKind::Text => Some(literal.to_string()),
    }
}

/// A stored result's shape check: complete, one statement, one result set, idle at its end.
pub fn storable(reply: &protocol_postgres::Reply) -> bool {
    reply.storable() && reply.status == Some(protocol_postgres::TransactionStatus::Idle)
}

#[cfg(test)]
mod tests;
