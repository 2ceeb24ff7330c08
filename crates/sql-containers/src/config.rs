//! Containers configuration: the TOML file and the plugin's own `innodb_memcache` tables,
//! both mapped onto [`ContainerDef`]s and [`Options`]. Schema: `README.md` of this crate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// Everything the SQL tier needs, as read from the TOML file (or built in code).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqlConfig {
    /// `[backend]`: which database holds the tables and how to reach it.
    pub backend: BackendConfig,
    /// `[options]`: global options; each may be left out.
    #[serde(default)]
    pub options: OptionsConfig,
    /// `[[container]]` entries, in order (the first one is the default container unless
    /// one is named `default` or `options.default_container` says otherwise).
    #[serde(default, rename = "container")]
    pub containers: Vec<ContainerConfig>,
}

/// `backend.kind`: which database engine holds the containers' tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// SQLite, embedded: the database file at `backend.path`.
    Sqlite,
    /// MariaDB or MySQL at `backend.url` (`kind = "mariadb"` is accepted too).
    #[serde(alias = "mariadb")]
    Mysql,
    /// PostgreSQL at `backend.url` (`postgres://`; `kind = "postgresql"` is accepted too).
    #[serde(alias = "postgresql")]
    Postgres,
}

/// Whether to read the plugin's `innodb_memcache` tables from the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PluginTables {
    /// Read them when they exist; their absence is fine.
    #[default]
    Auto,
    /// Never read them.
    Off,
    /// They must exist (the set-up is the plugin's).
    Required,
}

/// SQLite `PRAGMA synchronous` for the writer connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    /// fsync at every commit: an acknowledged write survives power loss.
    #[default]
    Full,
    /// WAL without fsync per commit: survives a process crash, not power loss.
    Normal,
}

/// `[backend]`: the database that holds the containers' tables and how to connect to it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendConfig {
    /// `kind`: `sqlite`, `mysql` (alias `mariadb`) or `postgres` (alias `postgresql`); required.
    pub kind: BackendKind,
    /// SQLite: the database file (created if missing; `:memory:` is refused).
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// MySQL/MariaDB: `mysql://user:password@host:port/database` (`?socket=/path` for a
    /// unix socket). PostgreSQL: `postgres://user:password@host:port/database?sslmode=...`
    /// (`sslrootcert=/path/ca.crt`; a host starting with `/` is a unix socket directory).
    #[serde(default)]
    pub url: Option<String>,
    /// Connections in all. SQLite: 1 writer + (pool_size - 1) readers (at least 1).
    /// MySQL, PostgreSQL: `writers` writer connections + the rest readers (at least 1).
    #[serde(default = "default_pool_size")]
    pub pool_size: usize,
    /// MySQL, PostgreSQL: writer connections (keys are spread over them by hash, so one key always
    /// goes through the same one). Default: half the pool. SQLite always has 1.
    #[serde(default)]
    pub writers: Option<usize>,
    /// MySQL (not PostgreSQL) with `r_batch_size = 1`: reader connections of each thread that runs
    /// operations (a server worker): concurrent gets queued on that thread while they are
    /// busy are merged into one `IN (...)` query. 0: reads go through the shared reader
    /// connections instead (one backend thread). Default 2.
    #[serde(default = "default_thread_conns")]
    pub thread_readers: usize,
    /// MySQL (not PostgreSQL) with `w_batch_size = 1`: writer connections of each such thread; the writes
    /// queued meanwhile are group-committed (one transaction, committed before any of
    /// them is acknowledged). 0: writes go through the shared writer connections. Default 4.
    #[serde(default = "default_thread_writers")]
    pub thread_writers: usize,
    /// MySQL, PostgreSQL: bound in ms on opening a connection (default 2000).
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// Bound on one statement (MySQL, PostgreSQL) / lock wait (SQLite busy timeout) and on the time an
    /// operation may wait in its connection's queue.
    #[serde(default = "default_query_timeout_ms")]
    pub query_timeout_ms: u64,
    /// Whether to read the plugin's `innodb_memcache` tables: `auto` (default), `off` or `required`.
    #[serde(default)]
    pub plugin_tables: PluginTables,
    /// SQLite only.
    #[serde(default)]
    pub synchronous: Synchronous,
    /// SQLite only: gets read on the asking worker thread's own connection, without a hop
    /// to a reader thread (default true; see `backend/sqlite/inline.rs` for the trade).
    #[serde(default)]
    pub inline_reads: Option<bool>,
    /// SQLite only: schema name -> database file, attached on every connection, so that
    /// containers (and plugin rows) can name `schema = "test"`; `innodb_memcache` here
    /// holds the plugin's tables.
    #[serde(default)]
    pub attach: BTreeMap<String, PathBuf>,
}

fn default_pool_size() -> usize {
    4
}
/// Where and as whom to reach a MySQL backend (for a binlog follower).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MysqlLogin {
    /// `host:port`.
    pub address: String,
    /// Account name from the URL (empty if it names none).
    pub user: String,
    /// Password from the URL (empty if it gives none).
    pub password: String,
}

impl BackendConfig {
    /// The PostgreSQL backend's `host:port/database` from `url` (None for other kinds or a
    /// URL that does not parse), for logs.
    pub fn postgres_address(&self) -> Option<String> {
        if self.kind != BackendKind::Postgres {
            return None;
        }
        let c = source_postgres::Config::from_url(self.url.as_deref()?).ok()?;
        Some(format!("{}:{}/{}", c.host, c.port, c.dbname))
    }

    /// The MySQL backend's TCP address and account from `url` (None for SQLite or a URL
    /// that does not parse).
    pub fn mysql_login(&self) -> Option<MysqlLogin> {
        if self.kind != BackendKind::Mysql {
            return None;
        }
        let o = mysql_async::Opts::from_url(self.url.as_deref()?).ok()?;
        Some(MysqlLogin {
            address: format!("{}:{}", o.ip_or_hostname(), o.tcp_port()),
            user: o.user().unwrap_or_default().to_string(),
            password: o.pass().unwrap_or_default().to_string(),
        })
    }
}

fn default_thread_conns() -> usize {
    2
}
fn default_thread_writers() -> usize {
    4
}
/// The longest `connect_timeout_ms` / `query_timeout_ms` (SQLite's busy timeout is an
/// `int` of milliseconds).
const MAX_TIMEOUT_MS: u64 = i32::MAX as u64;

fn default_connect_timeout_ms() -> u64 {
    2000
}
fn default_query_timeout_ms() -> u64 {
    5000
}

/// `[options]`: each one left out comes from the plugin's `config_options` table (for
/// `separator`, `table_map_delimiter`) or its default.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptionsConfig {
    /// Joins value columns on read and splits the value on write; else the plugin's, else `|`.
    pub separator: Option<String>,
    /// Between `@@name` and the key; else the plugin's, else `.`.
    pub table_map_delimiter: Option<String>,
    /// Reads per read transaction; at least 1, default 1.
    pub r_batch_size: Option<u32>,
    /// Writes per write transaction (1: each committed before its reply); at least 1, default 1.
    pub w_batch_size: Option<u32>,
    /// Seconds an open batch transaction may stay idle before it is committed; default 5.
    pub bk_commit_interval: Option<u64>,
    /// Default `cache_ttl` (seconds) for containers that set none; default 60.
    pub cache_ttl: Option<u64>,
    /// `caching` containers on MariaDB/MySQL answer from memory only while the binlog
    /// follower is at most this many ms behind the binlog head (0: no bound). Default 100.
    pub max_lag_ms: Option<u64>,
    /// Name of the default container; else the one named `default`, else the first.
    pub default_container: Option<String>,
    /// Where keys without `@@name` go on a connection that has not bound a container
    /// (server option; the library only carries it). Default `memory`.
    pub plain_keys: Option<PlainKeys>,
    /// memcached's `-I`, set by the server (never read from a file). Default: no limit.
    #[serde(skip)]
    pub item_limit: Option<engine::ItemLimit>,
}

/// `options.plain_keys`: where a connection's plain keys go before any `bind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlainKeys {
    /// The in-memory engine, as plain memcached (drop-in; the default).
    #[default]
    Memory,
    /// The default container: a fresh connection starts bound to it (the plugin's way).
    DefaultContainer,
}

/// One `[[container]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContainerConfig {
    /// The container's name, as clients write it in `@@name.key` and `bind name`.
    pub name: String,
    /// SQLite: `main` (default) or an attached database; MySQL: the database (default:
    /// the URL's); PostgreSQL: the schema in the URL's database (default `public`).
    #[serde(default)]
    pub schema: Option<String>,
    /// The table holding the container's rows (in `schema`).
    pub table: String,
    /// The column holding the memcached key; it needs a unique index on exactly that column.
    pub key_column: String,
    /// One or more columns: a list, or one string separated by `,;| ` like the plugin's.
    pub value_columns: ColumnList,
    /// Integer column for memcached flags (optional: without it flags read as 0 and are not stored).
    #[serde(default)]
    pub flags_column: Option<String>,
    /// Integer column for CAS values (optional: without it rows read with cas 0 and cas checks fail).
    #[serde(default)]
    pub cas_column: Option<String>,
    /// Integer column for the absolute expiry time, 0 = never (optional: without it exptime is ignored).
    #[serde(default)]
    pub expire_column: Option<String>,
    /// Name of the unique index on the key column (`PRIMARY` for the primary key). Any
    /// unique index on exactly the key column is accepted too.
    #[serde(default)]
    pub unique_index: Option<String>,
    /// Seconds a row cached under the `caching` policy may be served without re-reading.
    #[serde(default)]
    pub cache_ttl: Option<u64>,
    /// One policy name for all four operations, or a table `{ get, set, delete, flush }`
    /// (missing ones: `innodb_only`). Default: `innodb_only` for all.
    #[serde(default)]
    pub policy: Option<PolicyConfig>,
}

/// `value_columns`: one string of names separated by `,;| `, or a list of names.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ColumnList {
    /// One string, split on `,;| ` and tabs like the plugin's column lists.
    One(String),
    /// A list of column names.
    Many(Vec<String>),
}

impl ColumnList {
    /// The column names, trimmed, empty ones dropped.
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            ColumnList::One(s) => split_column_list(s),
            ColumnList::Many(v) => v.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(),
        }
    }
}

/// `policy`: one policy for all four operation families, or one per family.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum PolicyConfig {
    /// One policy name for get, set, delete and flush.
    All(CachePolicy),
    /// A table `{ get, set, delete, flush }`; missing entries are `innodb_only`.
    Each(PolicyEach),
}

/// `policy = { get, set, delete, flush }`: one policy per operation family.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyEach {
    /// Policy for get (default `innodb_only`).
    #[serde(default)]
    pub get: CachePolicy,
    /// Policy for writes: set, add, replace, cas, append, prepend, incr, decr, touch (default `innodb_only`).
    #[serde(default)]
    pub set: CachePolicy,
    /// Policy for delete (default `innodb_only`).
    #[serde(default)]
    pub delete: CachePolicy,
    /// Policy for `flush_all` on a connection bound to the container (default `innodb_only`).
    #[serde(default)]
    pub flush: CachePolicy,
}

/// The plugin's four policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CachePolicy {
    /// The backend table only (no memory copy).
    #[default]
    InnodbOnly,
    /// Memory only: the table is not touched.
    CacheOnly,
    /// Memory in front of the table: reads served from memory (bounded by `cache_ttl`),
    /// misses and writes go to the table.
    Caching,
    /// The operation is refused.
    Disabled,
}

impl CachePolicy {
    /// Case-insensitive, as stored in `cache_policies` (MySQL ENUM values).
    pub fn parse(s: &str) -> Option<CachePolicy> {
        match s.trim().to_ascii_lowercase().as_str() {
            "innodb_only" => Some(CachePolicy::InnodbOnly),
            "cache_only" => Some(CachePolicy::CacheOnly),
            "caching" => Some(CachePolicy::Caching),
            "disabled" => Some(CachePolicy::Disabled),
            _ => None,
        }
    }

    /// The policy's name as the file and `cache_policies` spell it (`innodb_only`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            CachePolicy::InnodbOnly => "innodb_only",
            CachePolicy::CacheOnly => "cache_only",
            CachePolicy::Caching => "caching",
            CachePolicy::Disabled => "disabled",
        }
    }
}

/// Per-container policy for each operation family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policy {
    /// Policy for get.
    pub get: CachePolicy,
    /// set, add, replace, cas, append, prepend, incr, decr, touch.
    pub set: CachePolicy,
    /// Policy for delete.
    pub delete: CachePolicy,
    /// Policy for `flush_all` on a connection bound to the container.
    pub flush: CachePolicy,
}

impl Policy {
    /// The same policy for all four operation families.
    pub fn all(p: CachePolicy) -> Policy {
        Policy { get: p, set: p, delete: p, flush: p }
    }
}

impl From<&PolicyConfig> for Policy {
    fn from(p: &PolicyConfig) -> Policy {
        match p {
            PolicyConfig::All(p) => Policy::all(*p),
            PolicyConfig::Each(e) => Policy { get: e.get, set: e.set, delete: e.delete, flush: e.flush },
        }
    }
}

/// Resolved global options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Joins value columns on read, splits the value on write (default `|`).
    pub separator: String,
    /// Between `@@name` and the key (default `.`).
    pub table_map_delimiter: String,
    /// Reads per read transaction (default 1: no batching).
    pub r_batch_size: u32,
    /// Writes per write transaction (default 1: each committed before its reply).
    pub w_batch_size: u32,
    /// Idle time after which the background commit closes an open batch transaction.
    pub bk_commit_interval: Duration,
    /// Default `cache_ttl` (seconds) for containers that do not set one.
    pub cache_ttl: u64,
    /// `caching` containers answer from memory only while the binlog follower is at most
    /// this many ms behind the backend's binlog head (0: no bound).
    pub max_lag_ms: u64,
    /// Where plain keys of an unbound connection go.
    pub plain_keys: PlainKeys,
    /// memcached's `-I` as the server measures items (not in the file: the server sets it).
    pub item_limit: engine::ItemLimit,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            separator: "|".into(),
            table_map_delimiter: ".".into(),
            r_batch_size: 1,
            w_batch_size: 1,
            bk_commit_interval: Duration::from_secs(5),
            cache_ttl: 60,
            max_lag_ms: 100,
            plain_keys: PlainKeys::Memory,
            item_limit: engine::ItemLimit::NONE,
        }
    }
}

/// A container before validation, from either source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerDef {
    /// The container's name.
    pub name: String,
    /// SQLite: `main` or an attached name; MySQL: the database; PostgreSQL: the schema.
    /// None: the backend's default.
    pub schema: Option<String>,
    /// The table's name.
    pub table: String,
    /// The key column's name.
    pub key_column: String,
    /// The value columns' names, in order.
    pub value_columns: Vec<String>,
    /// The flags column's name, if any.
    pub flags_column: Option<String>,
    /// The cas column's name, if any.
    pub cas_column: Option<String>,
    /// The expire column's name, if any.
    pub expire_column: Option<String>,
    /// The unique index on the key column, if named (`PRIMARY` for the primary key).
    pub unique_index: Option<String>,
    /// Policy per operation family.
    pub policy: Policy,
    /// None: the global default.
    pub cache_ttl: Option<u64>,
    /// "config file" or "innodb_memcache.containers": for error messages.
    pub origin: &'static str,
}

/// Rows of one plugin table: column name (lower case) -> value (NULL = None).
pub type Record = BTreeMap<String, Option<String>>;

/// The plugin's three tables as read from a backend.
#[derive(Debug, Clone, Default)]
pub struct PluginRows {
    /// Rows of `innodb_memcache.containers`: one container per row.
    pub containers: Vec<Record>,
    /// Rows of `innodb_memcache.cache_policies`: named get/set/delete/flush policies.
    pub cache_policies: Vec<Record>,
    /// Rows of `innodb_memcache.config_options`: `name`/`value` pairs (`separator`, `table_map_delimiter`).
    pub config_options: Vec<Record>,
}

impl SqlConfig {
    /// Parses a TOML text and runs [`SqlConfig::check`] on it.
    pub fn from_toml_str(s: &str) -> Result<SqlConfig, String> {
        let cfg: SqlConfig = toml::from_str(s).map_err(|e| format!("SQL containers config: {e}"))?;
        cfg.check()?;
        Ok(cfg)
    }

    /// Reads and parses a TOML file; errors name the path.
    pub fn from_file(path: &Path) -> Result<SqlConfig, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        SqlConfig::from_toml_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Where plain keys go according to the file alone (`options.plain_keys`, else the
    /// default), for when the backend and its plugin tables cannot be read yet.
    pub fn file_plain_keys(&self) -> PlainKeys {
        resolve_options(&self.options, &OptionsConfig::default()).plain_keys
    }

    /// Checks that do not need the backend.
    pub fn check(&self) -> Result<(), String> {
        let b = &self.backend;
        match b.kind {
            BackendKind::Sqlite => match &b.path {
                None => return Err("backend.path is required for kind = \"sqlite\"".into()),
                Some(p) if p.as_os_str() == ":memory:" || p.as_os_str().is_empty() => {
                    return Err(
                        "backend.path: an SQLite file is needed (\":memory:\" cannot be shared by connections)".into()
                    )
                }
                _ => {}
            },
            BackendKind::Mysql | BackendKind::Postgres => {
                if b.url.is_none() {
                    let kind = if b.kind == BackendKind::Mysql { "mysql" } else { "postgres" };
                    return Err(format!("backend.url is required for kind = \"{kind}\""));
                }
                if !b.attach.is_empty() {
                    return Err("backend.attach is for SQLite only".into());
                }
                if b.inline_reads.is_some() {
                    return Err("backend.inline_reads is for SQLite only (MySQL: thread_readers)".into());
                }
            }
        }
        if b.pool_size == 0 {
            return Err("backend.pool_size must be at least 1".into());
        }
        // 0 would fail every statement at once; SQLite's busy timeout is an i32 of ms.
        for (name, ms) in [("connect_timeout_ms", b.connect_timeout_ms), ("query_timeout_ms", b.query_timeout_ms)] {
            if !(1..=MAX_TIMEOUT_MS).contains(&ms) {
                return Err(format!("backend.{name} must be 1..={MAX_TIMEOUT_MS} (about 24 days), not {ms}"));
            }
        }
        let o = &self.options;
        if o.separator.as_deref() == Some("") {
            return Err("options.separator must not be empty".into());
        }
        if o.table_map_delimiter.as_deref() == Some("") {
            return Err("options.table_map_delimiter must not be empty".into());
        }
        if o.r_batch_size == Some(0) || o.w_batch_size == Some(0) {
            return Err("options.r_batch_size / w_batch_size must be at least 1".into());
        }
        if let Some(i) = o.bk_commit_interval {
            if !(1..=1_073_741_824).contains(&i) {
                return Err("options.bk_commit_interval must be 1..=1073741824 seconds".into());
            }
        }
        for c in &self.containers {
            if c.name.is_empty() {
                return Err("a [[container]] has an empty name".into());
            }
            if c.value_columns.to_vec().is_empty() {
                return Err(format!("container '{}': value_columns is empty", c.name));
            }
        }
        Ok(())
    }

    pub(crate) fn container_defs(&self) -> Vec<ContainerDef> {
        self.containers
            .iter()
            .map(|c| ContainerDef {
                name: c.name.clone(),
                schema: nonempty(c.schema.as_deref()),
                table: c.table.clone(),
                key_column: c.key_column.trim().to_string(),
                value_columns: c.value_columns.to_vec(),
                flags_column: nonempty(c.flags_column.as_deref()),
                cas_column: nonempty(c.cas_column.as_deref()),
                expire_column: nonempty(c.expire_column.as_deref()),
                unique_index: nonempty(c.unique_index.as_deref()),
                policy: c.policy.as_ref().map(Policy::from).unwrap_or_default(),
                cache_ttl: c.cache_ttl,
                origin: "config file",
            })
            .collect()
    }
}

fn nonempty(s: Option<&str>) -> Option<String> {
    s.map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

/// The plugin's column list syntax: names separated by any of `,;| ` (and tabs).
pub fn split_column_list(s: &str) -> Vec<String> {
    s.split([',', ';', '|', ' ', '\t']).filter(|p| !p.is_empty()).map(str::to_string).collect()
}

/// Options: the file's value, else the plugin table's, else the default.
pub(crate) fn resolve_options(file: &OptionsConfig, plugin: &OptionsConfig) -> Options {
    let d = Options::default();
    Options {
        separator: file.separator.clone().or_else(|| plugin.separator.clone()).unwrap_or(d.separator),
        table_map_delimiter: file
            .table_map_delimiter
            .clone()
            .or_else(|| plugin.table_map_delimiter.clone())
            .unwrap_or(d.table_map_delimiter),
        r_batch_size: file.r_batch_size.unwrap_or(d.r_batch_size).max(1),
        w_batch_size: file.w_batch_size.unwrap_or(d.w_batch_size).max(1),
        bk_commit_interval: file.bk_commit_interval.map(Duration::from_secs).unwrap_or(d.bk_commit_interval),
        cache_ttl: file.cache_ttl.unwrap_or(d.cache_ttl),
        max_lag_ms: file.max_lag_ms.unwrap_or(d.max_lag_ms),
        plain_keys: file.plain_keys.unwrap_or(d.plain_keys),
        item_limit: file.item_limit.unwrap_or(d.item_limit),
    }
}

#[cfg(test)]
mod tests;
