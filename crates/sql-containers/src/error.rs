//! The one error type every operation returns.

use std::fmt;

/// Why an operation did not produce an outcome.
///
/// Outcomes that memcached itself has (not stored, exists, not found, non-numeric) are
/// *not* errors: they are the `Ok` side of each operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendError {
    /// The backend cannot be reached or did not answer in time: connection refused,
    /// connection lost before anything uncommitted was at stake, connect/query timeout,
    /// backend shut down. Nothing this operation did was committed, except when the text
    /// says "outcome unknown" (the connection died while its own COMMIT was in flight).
    /// Suggested reply: `SERVER_ERROR <text>`.
    Unavailable(String),
    /// The open batch transaction on this connection was lost (connection died, deadlock
    /// rolled it back, COMMIT failed): `ops` writes that had already been acknowledged
    /// (only possible with `w_batch_size` > 1) were *not* committed. They are not
    /// replayed. The operation that discovered it failed too.
    Lost {
        /// Acknowledged writes that were not committed.
        ops: u64,
        /// Why the transaction was lost (connection died, deadlock, COMMIT failed).
        cause: String,
    },
    /// The backend rejected the statement (its error text): wrong type for the column,
    /// value too long, constraint violation, ...
    Sql(String),
    /// The request cannot be mapped onto the container: more value parts than value
    /// columns. Suggested reply: `CLIENT_ERROR <text>`.
    Invalid(String),
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::Unavailable(s) => write!(f, "backend unavailable: {s}"),
            BackendError::Lost { ops, cause } => {
                write!(f, "backend transaction lost with {ops} acknowledged uncommitted write(s): {cause}")
            }
            BackendError::Sql(s) => write!(f, "backend error: {s}"),
            BackendError::Invalid(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for BackendError {}

/// Why [`crate::Containers::load`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// The backend could not be reached (connection refused, name not resolved, no answer
    /// within `connect_timeout_ms`): the same configuration may load once it is back.
    Unreachable(String),
    /// The configuration or the tables are wrong: loading again will fail again.
    Invalid(String),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Unreachable(s) | LoadError::Invalid(s) => f.write_str(s),
        }
    }
}

impl From<String> for LoadError {
    fn from(s: String) -> LoadError {
        LoadError::Invalid(s)
    }
}

impl From<&str> for LoadError {
    fn from(s: &str) -> LoadError {
        LoadError::Invalid(s.to_string())
    }
}

impl From<LoadError> for String {
    fn from(e: LoadError) -> String {
        e.to_string()
    }
}

impl std::error::Error for LoadError {}
