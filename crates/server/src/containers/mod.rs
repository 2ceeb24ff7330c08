//! SQL containers (`--containers FILE`, crate `sql-containers`): the InnoDB memcached plugin's
//! `@@name.key` routing, `bind`, and the cache policies, on top of the protocol front
//! ends. See `docs/containers.md`.
//!
//! Which keys go here is decided by `crate::route`; `crate::exec` runs operations on them
//! under each container's policy (`cache_only` on the private engine [`Sql::memory`], now;
//! `caching` and `innodb_only` through [`Sql::run`], later: the front end's reply is then a
//! pending job `conn.rs` awaits in request order, so worker threads never block on SQL).

use std::sync::Arc;

use sql_containers::{BackendError, LoadError, PlainKeys, SqlConfig};

pub use crate::pending::Fail;

pub mod binlog;
mod cache;
pub mod describe;
pub mod slot;
mod sql;
pub mod stats;
mod through;
mod wal;
pub use self::slot::Slot;
pub use self::sql::{load, Budget, Sql, Target};
use crate::feeds::SourceFeeds as Feeds;

impl From<BackendError> for Fail {
    fn from(e: BackendError) -> Fail {
        match e {
            BackendError::Invalid(_) => Fail::Client(e.to_string()),
            _ => Fail::Server(e.to_string()),
        }
    }
}

/// Load `--containers FILE` and say what to do if it fails: a slot that is ready, or one
/// that waits for an unreachable backend (retried by [`Slot::retry`]); `Err` for a wrong
/// configuration.
pub fn start(path: &str, budget: &Budget, timing: bool, feeds: &Arc<Feeds>) -> Result<Slot, String> {
    match load(path, budget, timing, feeds) {
        Ok(sql) => Ok(Slot::ready(sql)),
        Err(LoadError::Unreachable(why)) => {
            let cfg = SqlConfig::from_file(path.as_ref())?;
            Ok(Slot::waiting(why, cfg.file_plain_keys() == PlainKeys::DefaultContainer))
        }
        Err(LoadError::Invalid(e)) => Err(e),
    }
}
