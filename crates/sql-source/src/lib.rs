//! sqlcached's SQL-source vocabulary: what the caches need from a database's change feed,
//! whatever the database.
//!
//! - [`Change`] (with [`Value`], [`TableSchema`], [`RowsKind`]): one change as a follower
//!   reports it: row images before and after, a whole table, keys, privileges, the
//!   stream's state;
//! - [`Follow`]: a running follower of one server (the MariaDB/MySQL binlog in the
//!   `binlog` crate, PostgreSQL's logical replication in `source-postgres`), with its
//!   [`FeedStats`] and its [`Lag`];
//! - [`feeds`]: one follower per server, shared by every cache that follows it, with
//!   rechecks for the window between the log and visibility;
//! - [`check`]: whether a source can follow the tables a cache names (its [`check::Verdict`]);
//! - [`fresh`]: the freshness bound (answer from memory only while the follower is close
//!   to the head);
//! - [`digests`]: a query cache's statement digest table (how each statement was answered).
//!
//! Sources depend on this crate; the caches (server, proxies) speak only its words, and
//! name a source only where they start its follower.

#![warn(missing_docs)]

mod change;
pub mod check;
pub mod digests;
pub mod feeds;
mod follow;
pub mod fresh;

pub use change::{Change, RowsKind, TableSchema, Value};
pub use follow::{FeedStats, Follow, Lag};
