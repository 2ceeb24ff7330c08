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

impl Position {
    /// `file:offset`, the position as the SQL-source vocabulary carries it.
    pub fn token(&self) -> String {
        format!("{}:{}", self.file, self.pos)
    }

    /// A [`Position::token`] read back (None if it is not one).
    pub fn parse(token: &str) -> Option<Position> {
        let (file, pos) = token.rsplit_once(':')?;
        let pos = pos.parse().ok()?;
        (!file.is_empty()).then(|| Position { file: file.to_string(), pos })
    }
}

/// Now, in ms since the unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
