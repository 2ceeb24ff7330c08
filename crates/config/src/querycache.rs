//! The query cache's policy settings (`--query-cache-type`, `--query-cache-in-transactions`),
//! owned here and used by the `querycache` crate as they are: one type per setting.

/// `--query-cache-type`: which SELECTs the proxy caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheType {
    /// Every cacheable SELECT (unless `SQL_NO_CACHE`).
    On,
    /// Only `SELECT SQL_CACHE ...`.
    Demand,
    /// Nothing is cached: the MySQL front starts no cache and passes every statement
    /// through (a cache built with it still analyses statements, so writes invalidate).
    Off,
}

impl CacheType {
    /// Parse `ON`, `DEMAND` or `OFF` (also MariaDB's `1`, `2`, `0`), any case.
    pub fn parse(s: &str) -> Option<CacheType> {
        match s.to_ascii_uppercase().as_str() {
            "ON" | "1" => Some(CacheType::On),
            "DEMAND" | "2" => Some(CacheType::Demand),
            "OFF" | "0" => Some(CacheType::Off),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_mariadb_spells_them() {
        assert_eq!(CacheType::parse("demand"), Some(CacheType::Demand));
        assert_eq!(CacheType::parse("1"), Some(CacheType::On));
        assert_eq!(CacheType::parse("maybe"), None);
        assert_eq!(InTransactions::parse("Until-Write"), Some(InTransactions::UntilWrite));
        assert_eq!(InTransactions::parse("always"), None);
    }
}
