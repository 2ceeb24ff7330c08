//! SQL tables as memcached containers, the way MySQL's InnoDB memcached plugin maps them
//! (`innodb_memcache.containers`), on SQLite (embedded), MariaDB/MySQL and PostgreSQL.
//!
//! This crate is the library under the server: it loads and validates the containers,
//! and runs memcached operations on their tables. The server does the protocol part
//! (`@@name.key` routing, `bind`, per-connection binding, replies) and the in-memory copy
//! for the `caching` policy (the crate only reports each container's [`Policy`] and
//! `cache_ttl`; it never looks at policies itself).
//!
//! # API
//!
//! ```no_run
//! # async fn demo() -> Result<(), String> {
//! use sql_containers::{Containers, SqlConfig, StoreMode, StoreOutcome};
//! let cfg = SqlConfig::from_file("sqlcached-sql.toml".as_ref())?;
//! let containers = Containers::load(&cfg).await?;        // reads + validates, starts backend
//! let c = containers.default_container().clone();         // or containers.get("name")
//! let out = c.store(StoreMode::Set, b"k", b"a|b", 0, 0, 0).await.map_err(|e| e.to_string())?;
//! assert!(matches!(out, StoreOutcome::Stored(_)));
//! let row = c.get(b"k").await.map_err(|e| e.to_string())?;   // Option<Row>
//! containers.commit_all().await.map_err(|e| e.to_string())?;  // at shutdown (w_batch_size > 1)
//! # Ok(()) }
//! ```
//!
//! * [`Containers::load`]: TOML-derived [`SqlConfig`] + the plugin's tables from the
//!   backend, validated ([`validate`]); a bad container is an error naming it and the
//!   column. [`Containers::get`], [`Containers::default_container`]
//!   (`options.default_container`, else the one named `default`, else the first),
//!   [`Containers::options`]
//!   (separator, delimiter, batch sizes), [`Containers::split_mapped_key`] (the
//!   `@@name.key` syntax), [`Containers::stats`], [`Containers::commit_all`].
//! * [`Container`] (cheap to clone; hold one per client connection for `bind`):
//!   `get`, `get_many`, `store` (set/add/replace/append/prepend/cas), `delete`, `arith`
//!   (incr/decr), `touch` (returns the row, for gat), `flush` (empties the table: call it
//!   only when the flush policy allows).
//! * Outcomes are memcached's ([`StoreOutcome`], [`DeleteOutcome`], [`ArithOutcome`],
//!   `Option<Row>`); failures are [`BackendError`] (`Unavailable`, `Lost`, `Sql`,
//!   `Invalid`).
//! * `exptime` arguments are memcached's wire value (0 never, ≤ 30 days relative, else
//!   absolute unix time, negative = expired); [`Row::exptime`] is absolute (0 = never).
//!
//! # Semantics (decisions)
//!
//! * Value columns are joined with the separator on read and split on write; a single
//!   value column is never split (any bytes, separator included). An empty part
//!   (`Frankfurt|`) or a missing one is NULL, as the InnoDB memcached plugin stores it; in
//!   a NOT NULL column it is the empty string (character and binary columns) or
//!   `BackendError::Invalid` (integer columns: no number to store). More parts:
//!   `BackendError::Invalid`.
//! * append/prepend work on the joined value like memcached on one value, and the result
//!   is split again: with one value column it is plain concatenation; with several, data
//!   without separators lands in the last (append) / first (prepend) column. Flags and
//!   expiry are kept.
//! * incr/decr: the joined value must be decimal digits (blanks around allowed) fitting
//!   64 bits, else `NonNumeric`; incr wraps, decr stops at 0; the result is stored as
//!   digits. With several value columns the joined value always holds a separator, so
//!   incr/decr answer `NonNumeric`.
//! * CAS needs a cas column. Without one, rows read with cas 0, and every comparison
//!   (`cas`, or a cas value given to set/replace/append/prepend/delete) answers `Exists`
//!   when the row is there (`NotFound` when not): a write is never made on an unchecked
//!   cas. [`Container::has_cas`] lets the server answer differently if it prefers.
//! * New cas values come from a process-wide clock seeded with the start time in
//!   microseconds, always above the row's previous value.
//! * Without a flags column flags read as 0 (and are not stored); without an expire
//!   column exptime is ignored (the plugin's behaviour) and touch only checks existence.
//! * A row whose expire column is non-zero and ≤ now is absent for every operation; a
//!   read that meets one removes it afterwards (conditional delete, no reply awaited).
//! * Batching: see [`batch`] for exactly what `w_batch_size` > 1 risks.

#![warn(missing_docs)]

pub mod backend;
pub mod batch;
mod column;
pub mod config;
pub mod error;
pub mod ops;
mod plugin;
pub mod request;
pub mod sql;
pub mod validate;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use backend::mysql::MysqlBackend;
use backend::postgres::PostgresBackend;
use backend::sqlite::SqliteBackend;
use backend::Backend;
pub use backend::BackendStats;
use config::{resolve_options, OptionsConfig, PluginTables};
pub use config::{BackendKind, CachePolicy, ContainerDef, MysqlLogin, Options, PlainKeys, Policy, SqlConfig};
pub use error::{BackendError, LoadError};
use ops::{absolute_exptime, unix_now, CasClock, Op, OpResult};
pub use ops::{ArithOutcome, DeleteOutcome, Row, StoreMode, StoreOutcome};
use plugin::from_plugin_rows;
pub use request::{Reply, Request};
use validate::Mapping;

/// The loaded, validated set of containers and the backend running them.
pub struct Containers {
    backend: Arc<dyn Backend>,
    list: Vec<Container>,
    by_name: HashMap<String, usize>,
    default: usize,
    options: Options,
}

/// One container: a validated table mapping plus a handle on the backend.
#[derive(Clone)]
pub struct Container {
    m: Arc<Mapping>,
    backend: Arc<dyn Backend>,
}

impl std::fmt::Debug for Container {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Container({} -> {}.{})", self.m.name, self.m.schema, self.m.table)
    }
}

impl Containers {
    /// Starts the backend, reads the plugin's tables (per `backend.plugin_tables`),
    /// merges them with the file's containers (file first; a name defined twice is an
    /// error) and validates every container against its table. A backend that cannot be
    /// reached is [`LoadError::Unreachable`] (worth retrying), anything else
    /// [`LoadError::Invalid`].
    pub async fn load(cfg: &SqlConfig) -> Result<Containers, LoadError> {
        cfg.check()?;
        let clock = Arc::new(CasClock::new());
        let file_opts = resolve_options(&cfg.options, &OptionsConfig::default());
        let backend: Arc<dyn Backend> = match cfg.backend.kind {
            BackendKind::Sqlite => Arc::new(SqliteBackend::start(&cfg.backend, &file_opts, clock).await?),
            BackendKind::Mysql => Arc::new(MysqlBackend::start(&cfg.backend, &file_opts, clock).await?),
            BackendKind::Postgres => Arc::new(PostgresBackend::start(&cfg.backend, &file_opts, clock).await?),
        };
        backend.reachable().await.map_err(|e| LoadError::Unreachable(e.to_string()))?;
        let mut plugin_defs = Vec::new();
        let mut plugin_opts = OptionsConfig::default();
        if cfg.backend.plugin_tables != PluginTables::Off {
            match backend.plugin_rows().await.map_err(|e| format!("reading the innodb_memcache tables: {e}"))? {
                Some(rows) => (plugin_defs, plugin_opts) = from_plugin_rows(&rows)?,
                None if cfg.backend.plugin_tables == PluginTables::Required => {
                    return Err(
                        "backend.plugin_tables = \"required\" but the backend has no innodb_memcache tables".into()
                    )
                }
                None => {}
            }
        }
        let options = resolve_options(&cfg.options, &plugin_opts);
        let mut defs = cfg.container_defs();
        defs.extend(plugin_defs);
        for (i, d) in defs.iter().enumerate() {
            if let Some(prev) = defs[..i].iter().find(|p| p.name == d.name) {
                return Err(
                    format!("container '{}' is defined twice ({} and {})", d.name, prev.origin, d.origin).into()
                );
            }
        }
        if defs.is_empty() {
            return Err("no containers: add [[container]] entries or the innodb_memcache tables".into());
        }
        let mut described = HashMap::new();
        let mut list = Vec::with_capacity(defs.len());
        let mut by_name = HashMap::new();
        for d in &defs {
            let schema = d.schema.clone().or_else(|| backend.default_schema()).ok_or_else(|| {
                format!("container '{}' ({}): no schema given and the URL names no database", d.name, d.origin)
            })?;
            let k = (schema.clone(), d.table.clone());
            if !described.contains_key(&k) {
                let info = backend
                    .describe(&schema, &d.table)
                    .await
                    .map_err(|e| format!("container '{}' ({}): {e}", d.name, d.origin))?;
                described.insert(k.clone(), info);
            }
            let mut m = validate::validate(
                d,
                &schema,
                described[&k].as_ref(),
                backend.dialect(),
                &options.separator,
                options.cache_ttl,
            )?;
            m.item_limit = options.item_limit;
            by_name.insert(d.name.clone(), list.len());
            list.push(Container { m: Arc::new(m), backend: backend.clone() });
        }
        let default = match &cfg.options.default_container {
            Some(n) => *by_name.get(n).ok_or_else(|| format!("options.default_container: no container '{n}'"))?,
            None => by_name.get("default").copied().unwrap_or(0),
        };
        Ok(Containers { backend, list, by_name, default, options })
    }

    /// The container named `name` (case-sensitive), if loaded.
    pub fn get(&self, name: &str) -> Option<&Container> {
        self.by_name.get(name).map(|&i| &self.list[i])
    }

    /// `options.default_container` if set, else the one named `default`, else the first
    /// (file containers come before the plugin table's, which are ordered by name like
    /// InnoDB's clustered index).
    pub fn default_container(&self) -> &Container {
        &self.list[self.default]
    }

    /// Every loaded container: the file's first, then the plugin table's.
    pub fn iter(&self) -> impl Iterator<Item = &Container> {
        self.list.iter()
    }

    /// The resolved global options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The plugin's `@@name.key` / `@@name` syntax: `Some((name, Some(key)))`,
    /// `Some((name, None))`, or None if the key does not start with `@@`. The name ends
    /// at the first `table_map_delimiter`. Whether the name exists is [`Containers::get`].
    pub fn split_mapped_key<'a>(&self, key: &'a [u8]) -> Option<(&'a [u8], Option<&'a [u8]>)> {
        let rest = key.strip_prefix(b"@@")?;
        let d = self.options.table_map_delimiter.as_bytes();
        match (0..rest.len().saturating_sub(d.len() - 1)).find(|&i| rest[i..].starts_with(d)) {
            Some(i) => Some((&rest[..i], Some(&rest[i + d.len()..]))),
            None => Some((rest, None)),
        }
    }

    /// The backend's counters: commits, connects, errors, lost batches and writes.
    pub fn stats(&self) -> BackendStats {
        self.backend.stats()
    }

    /// Commits every open batch transaction now (call at shutdown with batch sizes >
    /// 1; dropping the last handle also commits, without waiting).
    pub async fn commit_all(&self) -> Result<(), BackendError> {
        self.backend.commit_all().await
    }
}

fn unexpected(r: OpResult) -> BackendError {
    BackendError::Unavailable(format!("internal: unexpected backend answer {r:?}"))
}

impl Container {
    /// The container's name.
    pub fn name(&self) -> &str {
        &self.m.name
    }

    /// The policy per operation family (the crate reports it; the server applies it).
    pub fn policy(&self) -> &Policy {
        &self.m.policy
    }

    /// Bound on the staleness of a row cached under the `caching` policy.
    pub fn cache_ttl(&self) -> Duration {
        Duration::from_secs(self.m.cache_ttl)
    }

    /// `schema.table` as validated.
    pub fn table(&self) -> String {
        format!("{}.{}", self.m.schema, self.m.table)
    }

    /// The schema (MySQL: database) of the table, as validated.
    pub fn schema_name(&self) -> &str {
        &self.m.schema
    }

    /// The table's name, as validated.
    pub fn table_name(&self) -> &str {
        &self.m.table
    }

    /// The key column's name, as validated.
    pub fn key_column(&self) -> &str {
        &self.m.key.name
    }

    /// Whether a cas column is mapped (without one, cas comparisons answer `Exists` or `NotFound`).
    pub fn has_cas(&self) -> bool {
        self.m.cas.is_some()
    }

    /// Whether a flags column is mapped (without one, flags read as 0).
    pub fn has_flags(&self) -> bool {
        self.m.flags.is_some()
    }

    /// Whether an expire column is mapped (without one, exptime is ignored).
    pub fn has_expire(&self) -> bool {
        self.m.expire.is_some()
    }

    /// Number of value columns.
    pub fn value_columns(&self) -> usize {
        self.m.values.len()
    }

    /// The row a get would read from a table row given column by column: `col(name)` is
    /// None if the row does not carry that column (a partial binlog image), `Some(None)`
    /// for NULL, else the value's bytes (integers as decimal digits, as the backends read
    /// them). None if a mapped column is missing or the row has expired at `now` (unix
    /// seconds). (The server's `caching` containers compare binlog row images with their
    /// memory copies this way.)
    pub fn row_of_columns(&self, now: i64, col: impl Fn(&str) -> Option<Option<Vec<u8>>>) -> Option<Row> {
        let m = &self.m;
        let parts = m.values.iter().map(|c| col(&c.name)).collect::<Option<Vec<_>>>()?;
        let int = |c: &Option<column::Column>| -> Option<Option<i64>> {
            let Some(c) = c else { return Some(None) };
            Some(col(&c.name)?.and_then(|b| std::str::from_utf8(&b).ok()?.trim().parse().ok()))
        };
        let e = ops::Existing {
            parts,
            flags: int(&m.flags)?.unwrap_or(0) as u32,
            cas: int(&m.cas)?.unwrap_or(0) as u64,
            exp: int(&m.expire)?,
        };
        e.live(now).then(|| e.to_row(&m.separator))
    }

    async fn run(&self, op: Op) -> Result<OpResult, BackendError> {
        self.backend.execute(self.m.clone(), op).await
    }

    /// An integer key column only holds decimal keys: anything else is absent (reads)
    /// or refused (writes), the same on every backend (MySQL would compare 'abc' as 0).
    fn key_fits(&self, key: &[u8]) -> bool {
        self.m.key.kind != validate::ColKind::Int
            || std::str::from_utf8(key).ok().and_then(|s| s.trim().parse::<i64>().ok()).is_some()
    }

    fn check_key(&self, key: &[u8]) -> Result<(), BackendError> {
        if self.key_fits(key) {
            Ok(())
        } else {
            Err(BackendError::Invalid(format!(
                "container '{}' has an integer key column: the key must be a decimal number",
                self.m.name
            )))
        }
    }

    /// The row of `key` (None: absent or expired).
    pub async fn get(&self, key: &[u8]) -> Result<Option<Row>, BackendError> {
        Ok(self.get_many(&[key]).await?.pop().flatten())
    }

    /// One answer per key, in order (None: absent or expired).
    pub async fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Row>>, BackendError> {
        let ask: Vec<Vec<u8>> = keys.iter().filter(|k| self.key_fits(k)).map(|k| k.to_vec()).collect();
        if ask.is_empty() {
            return Ok(vec![None; keys.len()]);
        }
        let n = ask.len();
        let mut rows = match self.run(Op::Get { keys: ask }).await? {
            OpResult::Rows(r) if r.len() == n => r.into_iter(),
            r => return Err(unexpected(r)),
        };
        Ok(keys.iter().map(|k| if self.key_fits(k) { rows.next().flatten() } else { None }).collect())
    }

    /// set/add/replace/append/prepend/cas. `cas` != 0 makes set/replace/append/prepend
    /// compare too (binary and meta protocols); add ignores it; cas mode always compares.
    pub async fn store(
        &self,
        mode: StoreMode,
        key: &[u8],
        value: &[u8],
        flags: u32,
        exptime: i64,
        cas: u64,
    ) -> Result<StoreOutcome, BackendError> {
        self.check_key(key)?;
        let exp = absolute_exptime(exptime, unix_now());
        let op = Op::Store { mode, key: key.to_vec(), value: value.to_vec(), flags, exp, cas };
        match self.run(op).await? {
            OpResult::Store(o) => Ok(o),
            r => Err(unexpected(r)),
        }
    }

    /// `cas` != 0: delete only if it matches (the binary protocol's header CAS).
    pub async fn delete(&self, key: &[u8], cas: u64) -> Result<DeleteOutcome, BackendError> {
        self.delete_if(key, (cas != 0).then_some(cas)).await
    }

    /// `Some(cas)`: delete only if the row's CAS is this, 0 included (meta `md ... C0`
    /// compares, as memcached does).
    pub async fn delete_if(&self, key: &[u8], cas: Option<u64>) -> Result<DeleteOutcome, BackendError> {
        if !self.key_fits(key) {
            return Ok(DeleteOutcome::NotFound);
        }
        match self.run(Op::Delete { key: key.to_vec(), cas }).await? {
            OpResult::Delete(o) => Ok(o),
            r => Err(unexpected(r)),
        }
    }

    /// incr (`incr` true) / decr. `initial`: create a missing key with this value and
    /// exptime instead of answering NotFound (binary protocol, meta `N`).
    pub async fn arith(
        &self,
        key: &[u8],
        incr: bool,
        delta: u64,
        initial: Option<(u64, i64)>,
    ) -> Result<ArithOutcome, BackendError> {
        self.arith_with(key, incr, delta, initial, 0, None).await
    }

    /// [`Container::arith`] with memcached's other arithmetic options: `cas` != 0 compares
    /// with the row's CAS first (`Exists` on a mismatch), `touch` sets a new client exptime
    /// on success (meta `T`).
    pub async fn arith_with(
        &self,
        key: &[u8],
        incr: bool,
        delta: u64,
        initial: Option<(u64, i64)>,
        cas: u64,
        touch: Option<i64>,
    ) -> Result<ArithOutcome, BackendError> {
        self.check_key(key)?;
        let now = unix_now();
        let init = initial.map(|(v, e)| (v, absolute_exptime(e, now)));
        let touch = touch.map(|e| absolute_exptime(e, now));
        match self.run(Op::Arith { key: key.to_vec(), incr, delta, init, cas, touch }).await? {
            OpResult::Arith(o) => Ok(o),
            r => Err(unexpected(r)),
        }
    }

    /// Sets the expiry of a live row; returns it as found (with its old exptime, as
    /// memcached's gat shows the item before the touch) or None.
    pub async fn touch(&self, key: &[u8], exptime: i64) -> Result<Option<Row>, BackendError> {
        if !self.key_fits(key) {
            return Ok(None);
        }
        let exp = absolute_exptime(exptime, unix_now());
        match self.run(Op::Touch { key: key.to_vec(), exp }).await? {
            OpResult::Touch(o) => Ok(o),
            r => Err(unexpected(r)),
        }
    }

    /// Empties the table (every lane commits first). Only when the flush policy allows.
    pub async fn flush(&self) -> Result<(), BackendError> {
        match self.run(Op::Flush).await? {
            OpResult::Done => Ok(()),
            r => Err(unexpected(r)),
        }
    }
}
