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

/// Query cache settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Bytes of memory for cached results (entries with their keys).
    pub size: usize,
    /// Largest reply stored, in bytes (MariaDB's `query_cache_limit`, default 1 MB).
    pub limit: usize,
    /// Which reads are cached.
    pub mode: Mode,
}

impl Default for Config {
    fn default() -> Self {
        Config { size: 64 << 20, limit: 1 << 20, mode: Mode::On }
    }
}
