//! Query cache settings (`--query-cache-size`, `--query-cache-limit`, `--query-cache-type`).

/// `--query-cache-type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Cache every cacheable read unless it says `SQL_NO_CACHE`.
    On,
    /// Cache only `SELECT SQL_CACHE ...`.
    Demand,
    /// Cache nothing (statements are still analysed so writes invalidate).
    Off,
}

impl Mode {
    /// Parse `ON`, `DEMAND` or `OFF` (also MariaDB's `1`, `2`, `0`), any case.
    pub fn parse(s: &str) -> Option<Mode> {
        match s.to_ascii_uppercase().as_str() {
            "ON" | "1" => Some(Mode::On),
            "DEMAND" | "2" => Some(Mode::Demand),
            "OFF" | "0" => Some(Mode::Off),
            _ => None,
        }
    }
}

/// `--query-cache-in-transactions`: which reads inside a transaction the cache answers.
///
/// A cached result is the latest committed state (as of the binlog's delay), so a read
/// answered from the cache inside a transaction has READ COMMITTED semantics for that
/// statement, whatever the transaction's isolation level. Reads after the transaction's
/// first write always go to the backend (they must see that write), and a transaction's
/// own writes are never visible to other sessions through the cache before COMMIT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InTransactions {
    /// Every read inside a transaction goes to the backend.
    Never,
    /// Reads of transactions started `START TRANSACTION READ ONLY` (MaxScale's default).
    ReadOnly,
    /// Reads before the transaction's first write (ReadySet's and MaxScale's opt-in policy;
    /// what ORMs that wrap every request in a transaction need).
    UntilWrite,
}

impl InTransactions {
    /// Parse `never`, `read-only` or `until-write`.
    pub fn parse(s: &str) -> Option<InTransactions> {
        match s.to_ascii_lowercase().as_str() {
            "never" => Some(InTransactions::Never),
            "read-only" => Some(InTransactions::ReadOnly),
            "until-write" => Some(InTransactions::UntilWrite),
            _ => None,
        }
    }
}

/// Query cache settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Bytes of memory for cached results (entries with their keys).
    pub size: usize,
    /// Largest reply stored, in bytes (MariaDB's `query_cache_limit`, default 1 MB).
    pub limit: usize,
    /// Which reads are cached.
    pub mode: Mode,
    /// Which reads inside transactions are.
    pub in_transactions: InTransactions,
}

impl Default for Config {
    fn default() -> Self {
        Config { size: 64 << 20, limit: 1 << 20, mode: Mode::On, in_transactions: InTransactions::ReadOnly }
    }
}
