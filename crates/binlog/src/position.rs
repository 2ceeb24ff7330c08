//! A place in the binlog, and the wall clock the follower's lag is measured with.

use std::time::{SystemTime, UNIX_EPOCH};

/// A place in the binlog: file name and byte offset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// Binlog file name, e.g. `binlog.000003`.
    pub file: String,
    /// Offset in that file, after the last event read.
    pub pos: u64,
}

/// Now, in ms since the unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
