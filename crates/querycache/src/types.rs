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
    /// Rows of one table changed (inserted, updated or deleted) and these are their key
    /// values (before and after images for updates). Drops every table-level result of the
    /// table, results tagged with these integer primary-key points or ranges holding them,
    /// results tagged with these values of a key listed in `values`, and every result
    /// tagged by value on a key *not* listed in `values` (its values are unknown).
    Keys {
        /// Database.
        db: String,
        /// Table.
        table: String,
        /// Values of the single-column integer primary key (empty if the table has none).
        keys: Vec<i64>,
        /// Values of the other keys the write knows (see [`Scope::Values`]).
        values: Vec<KeyValues>,
        /// How the rows changed: decides which row-tagged results survive ([`RowChange`]).
        change: RowChange,
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

/// How the rows of an [`Invalidation::Keys`] changed. A result tagged with the primary
/// keys of the rows it returned ([`RowTag`]) whose membership and order depend only on
/// columns a change leaves alone is dropped only if it returned one of the changed rows:
/// an UPDATE that assigns none of those columns cannot move a row into or out of it, and
/// a DELETE can only take out a row it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowChange {
    /// Rows inserted, or a change not told apart: results go by their scope alone (a new
    /// row may join any result).
    Any,
    /// Rows inserted whose integer primary-key values are not known (auto-increment): as
    /// `Any`, and every result tagged with primary-key points or ranges goes too.
    InsertUnknownKeys,
    /// Existing rows updated; these columns (lower-cased) are all that may have changed.
    Update(Vec<Arc<str>>),
    /// Existing rows deleted.
    Delete,
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
    /// Only rows with these values of the single-column integer primary key.
    Points(Vec<i64>),
    /// Only rows whose single-column integer primary key lies in `lo..=hi`.
    Range(i64, i64),
    /// Only rows whose key `values.key` (a string or composite primary key, a unique
    /// secondary key, an index or its leading columns) has one of `values.values`.
    Values(KeyValues),
}

/// Values of one key of a table: what a [`Scope::Values`] result depends on, or what a
/// write changed ([`Invalidation::Keys`]).
///
/// A key is named by its lower-cased columns in key order, joined by commas (`"email"`,
/// `"a,b"`), so readers and writers name it alike whatever the index is called. Values
/// are encoded by `crate::keys`: one byte string per row, each column normalized so that
/// values MariaDB compares as equal under the column's collation encode alike (`'abc'`,
/// `'ABC'` and `'abc '` under a `_ci` collation).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KeyValues {
    /// The key's name: its lower-cased columns joined by commas.
    pub key: Arc<str>,
    /// Encoded values, sorted and without duplicates.
    pub values: Vec<Box<[u8]>>,
}

/// One dependency of a cached result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tag {
    /// The table read.
    pub table: TableName,
    /// Which of its rows.
    pub scope: Scope,
    /// Set when the result's rows can be told by their primary key ([`RowTag`]).
    pub rows: Option<RowTag>,
    /// Every column of the table the read names, when known (a single-table read without
    /// `*`): an UPDATE that assigns none of them cannot change the result, whichever rows
    /// it changes.
    pub columns: Option<Arc<[Arc<str>]>>,
}

/// How a read's result is tagged with the rows of one table it returned: the integer
/// primary key's values, read from the reply's column `pk`, and the columns that decide
/// which rows it holds and in what order (WHERE, a join's ON conditions, ORDER BY).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowTag {
    /// The table's integer primary-key column (lower-cased).
    pub pk: Arc<str>,
    /// Lower-cased columns the result's membership and order depend on; None: any column.
    pub deps: Option<Arc<[Arc<str>]>>,
    /// The reply is in the binary protocol (a prepared statement's execution).
    pub binary: bool,
    /// In a join, the name the reply's column definitions give the table (its alias, else
    /// its name): `pk` is read from that table's column only, and a NULL there (a LEFT
    /// JOIN row without a match) is no row of it.
    pub alias: Option<Arc<str>>,
}

/// Every dependency of a cached result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tags(pub Vec<Tag>);

/// A decoded value as far as key tags care: a parameter of `COM_STMT_EXECUTE`, or a
/// column of a binlog row image ([`crate::QueryCache::rows_changed`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Param {
    /// SQL NULL (from a binlog image also a column the image left out).
    Null,
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A character or binary string (a parameter of a string type, a string column's bytes).
    Str(Box<[u8]>),
    /// Anything else (decimals, floats, dates, blobs).
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
