//! Whether a source can follow the tables a cache names: its account, its log's settings,
//! and every table with every column the cache reads. Each source implements [`Check`];
//! the caches print the [`Verdict`] at start and in `--check-config`.

use std::time::Duration;

/// A table a cache follows, and the columns it reads from its row images.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wanted {
    /// Database (MariaDB/MySQL) or schema (PostgreSQL).
    pub db: String,
    /// The table.
    pub table: String,
    /// The columns named (templates, mappings).
    pub columns: Vec<String>,
}

/// What a source said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Everything checked.
    Good {
        /// What was checked, and anything worth a warning (one line each).
        notes: Vec<String>,
    },
    /// What is wrong (one line each, with its fix).
    Wrong(Vec<String>),
    /// The server did not answer (why).
    Unreachable(String),
}

/// A source's check of what following `wanted` needs.
pub trait Check: Send + Sync {
    /// The server, for log lines (`host:port`, no password).
    fn backend(&self) -> String;
    /// Logs in and checks, each step within `timeout`.
    fn check(&self, wanted: &[Wanted], timeout: Duration) -> Verdict;
}
