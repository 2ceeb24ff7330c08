//! The schema registry: which tables are base tables, their primary and unique keys and
//! other indexes (with each key column's type and collation, which decide how its values
//! are tagged: see `crate::keys`), and the columns an UPDATE changes without naming them.
//!
//! The proxy's metadata task fills it from `information_schema`; until a table is known,
//! statements on it are not cached, and the table is queued in [`SchemaRegistry::wanted`].
//! It also holds the side-effect graph ([`Effects`]: triggers, cascades, stored
//! functions), reloaded by the metadata task after DDL ([`SchemaRegistry::effects_changed`]);
//! nothing is cached before it is first loaded.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::effects::Effects;
use crate::keys::{Fold, KeyDef};

use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;

use crate::types::TableName;

/// One column of a key (primary or unique).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PkColumn {
    /// Column name.
    pub name: String,
    /// Whether its type is an integer type (TINYINT .. BIGINT, signed or not).
    pub integer: bool,
    /// For a CHAR, VARCHAR or VARBINARY column, `information_schema.COLUMNS.DATA_TYPE`
    /// and `COLLATION_NAME` (e.g. `("varchar", "utf8mb4_general_ci")`): string keys are
    /// tagged only with a collation whose equality `crate::keys` can reproduce.
    pub string: Option<(String, String)>,
}

impl PkColumn {
    /// An integer key column.
    pub fn int(name: &str) -> PkColumn {
        PkColumn { name: name.into(), integer: true, string: None }
    }

    /// A column as `information_schema.COLUMNS` describes it (DATA_TYPE, COLLATION_NAME).
    pub fn new(name: &str, data_type: &str, collation: Option<&str>) -> PkColumn {
        let integer = crate::keys::Fold::of(data_type, None) == Some(crate::keys::Fold::Int);
        let ty = data_type.to_ascii_lowercase();
        // information_schema gives binary strings (VARBINARY) no collation: it is `binary`.
        let string = match collation {
            Some(c) => Some((ty, c.to_string())),
            None if ty == "varbinary" => Some((ty, "binary".to_string())),
            None => None,
        };
        PkColumn { name: name.into(), integer, string }
    }

    /// How its values compare (None: not taggable).
    fn fold(&self) -> Option<Fold> {
        if self.integer {
            return Some(Fold::Int);
        }
        let (ty, coll) = self.string.as_ref()?;
        Fold::of(ty, Some(coll))
    }
}

/// What the registry knows about one table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableInfo {
    /// A base table (`false`: a view, a sequence, or a table that does not exist).
    pub base_table: bool,
    /// Primary-key columns in key order (empty: none).
    pub primary_key: Vec<PkColumn>,
    /// Unique secondary keys, each its columns in key order.
    pub unique_keys: Vec<Vec<PkColumn>>,
    /// Non-unique indexes, each its columns in index order (tagged by value like keys, and
    /// so are their leading columns: `WHERE user_id = 5` reads only rows with that value,
    /// unique or not).
    pub indexes: Vec<Vec<PkColumn>>,
    /// Columns an UPDATE may change without naming them: `ON UPDATE CURRENT_TIMESTAMP`
    /// and generated columns.
    pub implicit: Vec<String>,
}

impl TableInfo {
    /// A base table with the given primary key.
    pub fn base(primary_key: Vec<PkColumn>) -> TableInfo {
        TableInfo { base_table: true, primary_key, unique_keys: Vec::new(), indexes: Vec::new(), implicit: Vec::new() }
    }

    /// This table with one more unique secondary key.
    pub fn with_unique(mut self, columns: Vec<PkColumn>) -> TableInfo {
        self.unique_keys.push(columns);
        self
    }

    /// This table with one more non-unique index.
    pub fn with_index(mut self, columns: Vec<PkColumn>) -> TableInfo {
        self.indexes.push(columns);
        self
    }

    /// This table with one more column an UPDATE may change without naming it.
    pub fn with_implicit(mut self, column: &str) -> TableInfo {
        self.implicit.push(column.to_string());
        self
    }

    /// A view, or a table that does not exist: never cached.
    pub fn not_base() -> TableInfo {
        TableInfo { base_table: false, ..TableInfo::base(Vec::new()) }
    }

    /// The single integer primary-key column, lower-cased, if the key is exactly that.
    fn int_pk(&self) -> Option<Arc<str>> {
        match self.primary_key.as_slice() {
            [c] if c.integer => Some(c.name.to_ascii_lowercase().into()),
            _ => None,
        }
    }

    /// The keys tagged by value: the primary key unless it is the integer one, then the
    /// unique keys, then the other indexes; each once, and only those whose every column
    /// is taggable.
    fn value_keys(&self) -> Vec<KeyDef> {
        let pk = (self.int_pk().is_none()).then_some(&self.primary_key);
        let mut out: Vec<KeyDef> = Vec::new();
        // An index also serves reads by its leading columns (`WHERE user_id = ?` on an
        // index of (user_id, created_at)): its prefixes come after every full key.
        let prefixes: Vec<Vec<PkColumn>> =
            self.indexes.iter().flat_map(|ix| (1..ix.len()).rev().map(|n| ix[..n].to_vec())).collect();
        for cols in pk.into_iter().chain(&self.unique_keys).chain(&self.indexes).chain(&prefixes) {
            let named: Vec<(String, Option<Fold>)> = cols.iter().map(|c| (c.name.clone(), c.fold())).collect();
            match KeyDef::new(&named) {
                Some(k) if !out.iter().any(|o| o.id == k.id) && self.int_pk().as_deref() != Some(&*k.id) => out.push(k),
                _ => {}
            }
        }
        out
    }
}

/// A known table, as the hot path needs it.
#[derive(Clone, Debug)]
pub(crate) struct Known {
    pub base_table: bool,
    /// Lower-cased name of the single integer primary-key column.
    pub int_pk: Option<Arc<str>>,
    /// Keys tagged by value (see [`TableInfo::value_keys`]).
    pub keys: Arc<[KeyDef]>,
    /// Lower-cased columns an UPDATE may change without naming them.
    pub implicit: Arc<[Arc<str>]>,
    /// The lower-cased columns of each unique key and index (the primary key aside).
    pub indexes: Arc<[Box<[Arc<str>]>]>,
}

impl Known {
    /// Whether `column` (lower-cased) is known to be an integer column: the integer
    /// primary key or an integer column of a tagged key.
    pub(crate) fn int_column(&self, column: &str) -> bool {
        self.int_pk.as_deref() == Some(column)
            || self.keys.iter().any(|k| k.columns.iter().any(|(c, f)| &**c == column && *f == Fold::Int))
    }

    /// `named` and the columns of every index that has one of them: a read whose order is
    /// not total comes in the order of an index it may scan, which has one of the columns it
    /// names (or is the primary key, which an UPDATE assigning it invalidates whole).
    pub(crate) fn scanned_with(&self, named: &Arc<[Arc<str>]>) -> Arc<[Arc<str>]> {
        let mut out: Option<Vec<Arc<str>>> = None;
        for ix in self.indexes.iter().filter(|ix| ix.iter().any(|c| named.contains(c))) {
            for c in ix.iter() {
                if !named.contains(c) && !out.as_ref().is_some_and(|o| o.contains(c)) {
                    out.get_or_insert_with(|| named.to_vec()).push(c.clone());
                }
            }
        }
        out.map_or_else(|| named.clone(), Arc::from)
    }
}

const SHARDS: usize = 16;

/// One shard of the registry: known tables, each shared (a lookup on the hot path is one
/// reference count, not one per field).
type Shard = RwLock<HashMap<TableName, Arc<Known>>>;
/// Most tables queued for the metadata task at once.
const MAX_WANTED: usize = 4096;

/// (db, table) → [`TableInfo`], sharded for concurrent readers.
pub struct SchemaRegistry {
    shards: Box<[Shard]>,
    wanted: Mutex<HashSet<TableName>>,
    notify: Notify,
    effects: RwLock<Option<Arc<Effects>>>,
    effects_stale: AtomicBool,
    /// Set once a graph was loaded (the hit path checks this, not the lock).
    effects_loaded: AtomicBool,
}

impl Default for SchemaRegistry {
    fn default() -> Self {
        SchemaRegistry {
            shards: (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect(),
            wanted: Mutex::new(HashSet::new()),
            notify: Notify::new(),
            effects: RwLock::new(None),
            effects_stale: AtomicBool::new(true),
            effects_loaded: AtomicBool::new(false),
        }
    }
}

impl SchemaRegistry {
    fn shard(&self, t: &TableName) -> &Shard {
        let h = crate::hash::hash64(t.db.as_bytes()) ^ crate::hash::hash64(t.table.as_bytes()).rotate_left(17);
        &self.shards[(h as usize) % SHARDS]
    }

    /// What is known about a table; an unknown table is queued for the metadata task.
    pub(crate) fn lookup(&self, t: &TableName) -> Option<Arc<Known>> {
        if let Some(k) = self.shard(t).read().get(t) {
            return Some(k.clone());
        }
        let mut w = self.wanted.lock();
        // Bounded: without a metadata task draining it, names must not pile up.
        if w.len() < MAX_WANTED && w.insert(t.clone()) {
            self.notify.notify_one();
        }
        None
    }

    /// Record what the metadata task learned about a table.
    pub fn set_table(&self, db: &str, table: &str, info: TableInfo) {
        let t = TableName::new(db, table);
        let implicit = info.implicit.iter().map(|c| Arc::from(c.to_ascii_lowercase())).collect();
        let lower = |cols: &Vec<PkColumn>| cols.iter().map(|c| Arc::from(c.name.to_ascii_lowercase())).collect();
        let indexes = info.unique_keys.iter().chain(&info.indexes).map(lower).collect();
        let known = Known {
            base_table: info.base_table,
            int_pk: info.int_pk(),
            keys: info.value_keys().into(),
            implicit,
            indexes,
        };
        self.wanted.lock().remove(&t);
        self.shard(&t).write().insert(t, Arc::new(known));
    }

    /// Forget a table (after DDL on it); the next statement on it asks for it again.
    pub fn forget(&self, db: &str, table: &str) {
        let t = TableName::new(db, table);
        self.shard(&t).write().remove(&t);
    }

    /// Forget every table of a database.
    pub fn forget_database(&self, db: &str) {
        for s in self.shards.iter() {
            s.write().retain(|t, _| &*t.db != db);
        }
    }

    /// Forget everything.
    pub fn clear(&self) {
        for s in self.shards.iter() {
            s.write().clear();
        }
    }

    /// Take the tables statements asked for that the registry does not know yet.
    pub fn wanted(&self) -> Vec<TableName> {
        let mut w = self.wanted.lock();
        let v: Vec<TableName> = w.iter().cloned().collect();
        w.clear();
        v
    }

    /// The side-effect graph, once loaded.
    pub fn effects(&self) -> Option<Arc<Effects>> {
        self.effects.read().clone()
    }

    /// Install a freshly loaded side-effect graph.
    pub fn set_effects(&self, e: Effects) {
        *self.effects.write() = Some(Arc::new(e));
        self.effects_loaded.store(true, Ordering::Release);
    }

    /// Whether a side-effect graph was ever loaded (nothing is cached before).
    pub fn effects_loaded(&self) -> bool {
        self.effects_loaded.load(Ordering::Acquire)
    }

    /// DDL may have changed triggers, foreign keys or functions: the metadata task
    /// reloads the graph (the old one stays in use until then).
    pub fn effects_changed(&self) {
        self.effects_stale.store(true, Ordering::Release);
        self.notify.notify_one();
    }

    /// Whether the graph needs a reload (clears the flag: the caller reloads it, and calls
    /// [`SchemaRegistry::effects_changed`] again if that fails).
    pub fn take_effects_stale(&self) -> bool {
        self.effects_stale.swap(false, Ordering::AcqRel)
    }

    /// Whether the graph needs a reload (without clearing the flag).
    pub fn effects_stale(&self) -> bool {
        self.effects_stale.load(Ordering::Acquire)
    }

    /// Wakes the metadata task when [`SchemaRegistry::wanted`] has something
    /// (`registry.wanted_notify().notified().await`).
    pub fn wanted_notify(&self) -> &Notify {
        &self.notify
    }

    /// What the registry knows about a table, without queueing it.
    pub(crate) fn peek(&self, t: &TableName) -> Option<Arc<Known>> {
        self.shard(t).read().get(t).cloned()
    }

    /// What the registry knows about a table (without queueing it).
    pub fn get(&self, db: &str, table: &str) -> Option<(bool, Option<String>)> {
        let t = TableName::new(db, table);
        self.shard(&t).read().get(&t).map(|k| (k.base_table, k.int_pk.as_deref().map(str::to_string)))
    }
}
