//! What a follower reports: changed rows, changed tables, and the state of the stream.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// One column value of a row image, as a follower decoded it (a binlog ROWS event, a
/// pgoutput tuple).
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// SQL NULL (also used for a column absent from a partial row image).
    Null,
    /// A signed integer column (TINYINT..BIGINT, YEAR).
    Int(i64),
    /// An unsigned integer column (TINYINT..BIGINT UNSIGNED).
    UInt(u64),
    /// String, binary, DECIMAL (as its text), ENUM/SET/BIT (as stored) columns.
    Bytes(Vec<u8>),
    /// Anything else (floats, dates, times, JSON) in a readable text form.
    Other(String),
}

impl Value {
    /// The bytes a memcached key or a container's get sees for the value: integers in
    /// decimal, strings and DECIMALs as their bytes, other types in the decoder's text form;
    /// None for NULL.
    pub fn text_bytes(&self) -> Option<Cow<'_, [u8]>> {
        match self {
            Value::Null => None,
            Value::Int(v) => Some(Cow::Owned(v.to_string().into_bytes())),
            Value::UInt(v) => Some(Cow::Owned(v.to_string().into_bytes())),
            Value::Bytes(b) => Some(Cow::Borrowed(b.as_slice())),
            Value::Other(s) => Some(Cow::Borrowed(s.as_bytes())),
        }
    }

    /// The value as an i64 if it is an integer that fits (what integer key tags use).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int(v) => Some(v),
            Value::UInt(v) => i64::try_from(v).ok(),
            _ => None,
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(v) => write!(f, "{v}"),
            Value::UInt(v) => write!(f, "{v}u"),
            Value::Bytes(b) => write!(f, "{:?}", String::from_utf8_lossy(b)),
            Value::Other(s) => write!(f, "<{s}>"),
        }
    }
}

/// Column names and primary key of a table, as the log described it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSchema {
    /// Column names in table order (every row image has one value per column).
    pub columns: Vec<String>,
    /// Positions (into `columns`) of the primary key columns, in key order; empty: no primary key.
    pub primary_key: Vec<usize>,
}

/// What a rows event did (see [`Change::Rows`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowsKind {
    /// Rows inserted: one image each.
    Insert,
    /// Rows updated: before and after images. The columns (indexes into the schema's
    /// columns) whose value differs in some pair of images, or that an image left out.
    Update(Vec<usize>),
    /// Rows deleted: one image each.
    Delete,
}

/// One change seen in a server's log (or in the state of the stream), in log order.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// Rows written, updated or deleted in one table: every row image (an update gives its
    /// before image, then its after image), each with one value per column of `schema`.
    Rows {
        /// Database of the table.
        db: String,
        /// Table name.
        table: String,
        /// Column names and primary key (shared by every event of this table definition).
        schema: Arc<TableSchema>,
        /// The row images.
        rows: Vec<Vec<Value>>,
        /// What the event did.
        kind: RowsKind,
    },
    /// Rows of this table changed, too many in one transaction to list (more than the
    /// follower's bulk limit, see `Follower::set_bulk_rows`): any row may have changed, its
    /// definition did not. The transaction's later row events of the table are not decoded.
    ManyRows {
        /// Database of the table.
        db: String,
        /// Table name.
        table: String,
    },
    /// Any row of this table may have changed (TRUNCATE, DDL, statement-format DML, rows the
    /// follower could not decode, foreign-key cascades).
    Table {
        /// Database of the table.
        db: String,
        /// Table name.
        table: String,
    },
    /// The keys or indexes of this table changed (CREATE/DROP INDEX, an ALTER TABLE that only
    /// adds, drops or renames indexes, keys or constraints): no row did. A cache tagged by
    /// the table's keys must drop what it tagged; a cache of rows keeps them.
    Keys {
        /// Database of the table.
        db: String,
        /// Table name.
        table: String,
    },
    /// Anything in this database may have changed (a statement the follower cannot attribute to tables).
    Database {
        /// The database.
        db: String,
    },
    /// Accounts or privileges may have lost something (REVOKE, DROP/RENAME USER or ROLE,
    /// SET DEFAULT ROLE, CREATE OR REPLACE USER, FLUSH PRIVILEGES after a direct write to the
    /// grant tables): no table data changed. A cache whose results are per user (the query
    /// cache) drops them; a cache of rows keeps them.
    Privileges {
        /// What was run, for logs.
        reason: String,
    },
    /// Stored programs were defined, changed or dropped (triggers, functions, procedures,
    /// events, packages): no table data changed, but later writes may change other tables
    /// than before (a cache that follows triggers reads them again).
    Routines {
        /// What was run, for logs.
        reason: String,
    },
    /// Anything may have changed (a gap in the stream, a statement it cannot interpret).
    All {
        /// Why, for logs.
        reason: String,
    },
    /// The stream broke: changes may be missed until `Connected` (the follower retries).
    Disconnected {
        /// Why, for logs.
        reason: String,
    },
    /// Events flow (first connection, or again after `Disconnected`).
    Connected,
}
