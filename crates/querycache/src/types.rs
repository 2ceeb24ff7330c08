//! Public value types shared by the proxy, the binlog feed and the cache.

use std::sync::Arc;

/// A table named by its database and its name (case-sensitive, as MariaDB on Linux).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableName {
    /// Database (schema) name.
    pub db: Arc<str>,
    /// Table name.
    pub table: Arc<str>,
}

impl TableName {
    /// A table name from its two parts.
    pub fn new(db: &str, table: &str) -> TableName {
        TableName { db: db.into(), table: table.into() }
    }
}

/// What changed, so that the cache drops the results that may depend on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invalidation {
    /// Rows with these integer primary-key values of one table changed (inserted,
    /// updated or deleted): drops results tagged with these points, ranges holding
    /// them, and every table-level result of the table.
    Keys {
        /// Database.
        db: String,
        /// Table.
        table: String,
        /// Primary-key values (before and after images for updates).
        keys: Vec<i64>,
    },
    /// Anything in one table may have changed.
    Table {
        /// Database.
        db: String,
        /// Table.
        table: String,
    },
    /// Anything in one database may have changed.
    Database {
        /// Database.
        db: String,
    },
    /// Anything may have changed: drop every result.
    All,
}

/// Who reported an invalidation (for the counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A write through the proxy.
    Proxy,
    /// A change read from the backend's binlog.
    Binlog,
    /// The same row change again, a moment later (the binlog can announce a transaction
    /// before other sessions see it committed; see the server's `feeds.rs`): drops what a
    /// fill may have read in between; counted nowhere.
    Recheck,
}

/// Which rows of a table a cached result depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Any row of the table.
    Table,
    /// Only rows with these primary-key values.
    Points(Vec<i64>),
    /// Only rows whose primary key lies in `lo..=hi`.
    Range(i64, i64),
}

/// One dependency of a cached result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tag {
    /// The table read.
    pub table: TableName,
    /// Which of its rows.
    pub scope: Scope,
}

/// Every dependency of a cached result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tags(pub Vec<Tag>);

/// A decoded parameter of `COM_STMT_EXECUTE` (only integers matter, for key tags).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Param {
    /// SQL NULL.
    Null,
    /// A signed integer parameter.
    Int(i64),
    /// An unsigned integer parameter.
    UInt(u64),
    /// Anything else (strings, decimals, floats, dates, blobs).
    Other,
}

/// The full cache key of one statement execution, and its 128-bit hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    pub(crate) bytes: Vec<u8>,
    pub(crate) hash: [u8; 16],
    /// The statement's row in the digest table (0: none), stored with the result so an
    /// invalidation can say whose results it dropped.
    pub(crate) digest: u64,
    /// A read inside a transaction: fill only if none of its tables was invalidated since
    /// this index sequence (the transaction's start; its snapshot may predate later commits).
    pub(crate) fill_since: Option<u64>,
}

impl Key {
    /// The key's bytes (user, db, charset, capabilities, session variables, protocol,
    /// statement, parameters).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The 16-byte hash naming the entry in the engine.
    pub fn hash(&self) -> &[u8; 16] {
        &self.hash
    }
}

/// What the proxy does with a statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// A cacheable read: `lookup(key)`, and on a miss `begin_fill(key, tags)`.
    Cached {
        /// The entry's key.
        key: Key,
        /// What it depends on.
        tags: Tags,
    },
    /// Forward to the backend, cache nothing. `not_cached` is true for reads that could
    /// not be cached (already counted in `Qcache_not_cached`), informational only.
    Forward {
        /// A read that was not cacheable.
        not_cached: bool,
    },
    /// A write: forward it; [`crate::QueryCache::on_reply`] applies these invalidations
    /// when the backend's reply (OK or ERR) arrives, before the client may see it.
    Write(Vec<Invalidation>),
}
