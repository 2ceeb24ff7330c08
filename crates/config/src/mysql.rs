//! The MySQL proxy's command-line flags (`--mysql-*`, `--query-cache-*`).

use crate::parse_size;
pub use crate::querycache::{CacheType, InTransactions};
use crate::usage::{Opt, Section};

/// `--mysql-backend-tls`: whether and how the proxy's backend connections use TLS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendTls {
    /// Plain TCP (the default).
    Off,
    /// TLS; the certificate must chain to `--mysql-backend-tls-ca`, any host name.
    VerifyCa,
    /// TLS; chain to the CA and name the backend's host (as `--mysql-backend` gives it).
    VerifyFull,
}

/// Settings of the MySQL query-cache proxy.
#[derive(Clone, Debug)]
pub struct MysqlConfig {
    /// `--mysql-listen ADDR`: where MySQL clients connect; none disables the proxy.
    pub listen: Option<String>,
    /// `--mysql-backend ADDR`: the MariaDB/MySQL server behind the proxy.
    pub backend: Option<String>,
    /// `--mysql-user USER`: account of the binlog follower and the metadata queries.
    pub user: Option<String>,
    /// `--mysql-password-file FILE` (else env `SQLCACHED_MYSQL_PASSWORD`).
    pub password_file: Option<String>,
    /// `--mysql-server-id N`: replica server id of the binlog connections (None: a random
    /// one per start, see [`MysqlConfig::server_id`]).
    pub server_id: Option<u32>,
    /// `--query-cache-size BYTES`: memory for cached results.
    pub cache_size: usize,
    /// `--query-cache-limit BYTES`: largest cacheable result.
    pub cache_limit: usize,
    /// `--query-cache-type ON|DEMAND|OFF`.
    pub cache_type: CacheType,
    /// `--query-cache-in-transactions never|read-only|until-write`.
    pub in_transactions: InTransactions,
    /// `--query-cache-max-lag MS`: answer from the cache only while the binlog follower is
    /// at most this far behind the backend's binlog head (0: no bound).
    pub max_lag_ms: u64,
    /// A `--query-cache-*` flag was given (they need `--mysql-listen`).
    pub cache_flags_given: bool,
    /// `--mysql-connect-timeout SECS`: the whole login must be done within it (MariaDB's
    /// `connect_timeout`).
    pub connect_timeout: std::time::Duration,
    /// `--mysql-backend-connect-timeout SECS`: how long the proxy waits for the backend to
    /// accept a connection and greet it, per client login (a client connected straight to
    /// the server would wait as long for the server's greeting).
    pub backend_connect_timeout: std::time::Duration,
    /// `--mysql-net-read-timeout SECS`: a client that started sending a command must make
    /// progress within it (MariaDB's `net_read_timeout`).
    pub net_read_timeout: std::time::Duration,
    /// `--mysql-tls-cert FILE`: PEM chain the proxy offers TLS to clients with.
    pub tls_cert: Option<String>,
    /// `--mysql-tls-key FILE`: its private key (PEM).
    pub tls_key: Option<String>,
    /// `--mysql-backend-tls`: TLS to the backend.
    pub backend_tls: BackendTls,
    /// `--mysql-backend-tls-ca FILE`: CA certificates the backend's must chain to.
    pub backend_tls_ca: Option<String>,
}

impl Default for MysqlConfig {
    fn default() -> Self {
        MysqlConfig {
            listen: None,
            backend: None,
            user: None,
            password_file: None,
            server_id: None,
            cache_size: 64 * 1024 * 1024,
            cache_limit: 1024 * 1024,
            cache_type: CacheType::On,
            in_transactions: InTransactions::ReadOnly,
            max_lag_ms: 100,
            cache_flags_given: false,
            connect_timeout: std::time::Duration::from_secs(10),
            backend_connect_timeout: std::time::Duration::from_secs(10),
            net_read_timeout: std::time::Duration::from_secs(30),
            tls_cert: None,
            tls_key: None,
            backend_tls: BackendTls::Off,
            backend_tls_ca: None,
        }
    }
}

/// The long flags this module parses (each takes a value).
pub const FLAGS: &[&str] = &[
    "mysql-listen",
    "mysql-backend",
    "mysql-user",
    "mysql-password-file",
    "mysql-server-id",
    "query-cache-size",
    "query-cache-limit",
    "query-cache-type",
    "query-cache-in-transactions",
    "query-cache-max-lag",
    "mysql-connect-timeout",
    "mysql-backend-connect-timeout",
    "mysql-net-read-timeout",
    "mysql-tls-cert",
    "mysql-tls-key",
    "mysql-backend-tls",
    "mysql-backend-tls-ca",
];

impl MysqlConfig {
    /// Applies one flag of [`FLAGS`] with its value.
    pub fn set(&mut self, flag: &str, v: &str) -> Result<(), String> {
        let size = |v: &str| parse_size(v).ok_or(format!("Invalid value for --{flag}: '{v}'"));
        self.cache_flags_given |= flag.starts_with("query-cache-");
        match flag {
            "mysql-listen" => self.listen = Some(v.to_string()),
            "mysql-backend" => self.backend = Some(v.to_string()),
            "mysql-user" => self.user = Some(v.to_string()),
            "mysql-password-file" => self.password_file = Some(v.to_string()),
            "mysql-tls-cert" => self.tls_cert = Some(v.to_string()),
            "mysql-tls-key" => self.tls_key = Some(v.to_string()),
            "mysql-backend-tls-ca" => self.backend_tls_ca = Some(v.to_string()),
            "mysql-backend-tls" => {
                self.backend_tls = match v.to_ascii_lowercase().as_str() {
                    "off" => BackendTls::Off,
                    "verify-ca" => BackendTls::VerifyCa,
                    "verify-full" => BackendTls::VerifyFull,
                    _ => return Err(format!("--mysql-backend-tls must be off, verify-ca or verify-full, not '{v}'")),
                }
            }
            "mysql-server-id" => {
                let id: u32 = v.trim().parse().map_err(|_| format!("Invalid value for --{flag}: '{v}'"))?;
                if id == 0 {
                    return Err("--mysql-server-id must be at least 1".into());
                }
                self.server_id = Some(id);
            }
            "mysql-connect-timeout" | "mysql-backend-connect-timeout" | "mysql-net-read-timeout" => {
                let secs: u64 = v.trim().parse().map_err(|_| format!("Invalid value for --{flag}: '{v}'"))?;
                if !(1..=31_536_000).contains(&secs) {
                    return Err(format!("--{flag} must be between 1 and 31536000 seconds"));
                }
                let d = std::time::Duration::from_secs(secs);
                match flag {
                    "mysql-connect-timeout" => self.connect_timeout = d,
                    "mysql-backend-connect-timeout" => self.backend_connect_timeout = d,
                    _ => self.net_read_timeout = d,
                }
            }
            "query-cache-in-transactions" => {
                self.in_transactions = InTransactions::parse(v).ok_or_else(|| {
                    format!("--query-cache-in-transactions must be never, read-only or until-write, not '{v}'")
                })?
            }
            "query-cache-max-lag" => {
                self.max_lag_ms = v
                    .parse()
                    .ok()
                    .filter(|ms| *ms <= 3_600_000)
                    .ok_or(format!("--query-cache-max-lag must be between 0 and 3600000 ms, not '{v}'"))?
            }
            "query-cache-size" => self.cache_size = size(v)?,
            "query-cache-limit" => self.cache_limit = size(v)?,
            "query-cache-type" => {
                self.cache_type = CacheType::parse(v)
                    .ok_or_else(|| format!("--query-cache-type must be ON, DEMAND or OFF, not '{v}'"))?
            }
            _ => return Err(format!("unknown flag --{flag}")),
        }
        Ok(())
    }

    /// Checks the combination after every flag was read (`binlog_rules`: `--invalidate`
    /// rules use `--mysql-backend` and `--mysql-user` without the proxy).
    pub fn validate(&self, binlog_rules: bool) -> Result<(), String> {
        if self.listen.is_some() && self.backend.is_none() {
            return Err("--mysql-listen needs --mysql-backend HOST:PORT (the MariaDB/MySQL server to proxy)".into());
        }
        if self.listen.is_none() && !binlog_rules && (self.backend.is_some() || self.user.is_some()) {
            return Err("--mysql-backend and --mysql-user apply to the MySQL proxy and the --invalidate rules: \
                        give --mysql-listen or --invalidate too"
                .into());
        }
        if self.listen.is_none() && self.cache_flags_given {
            return Err("--query-cache-* settings apply to the MySQL proxy: give --mysql-listen too".into());
        }
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err("--mysql-tls-cert and --mysql-tls-key go together (the proxy's certificate and its key)".into());
        }
        if (self.backend_tls != BackendTls::Off) != self.backend_tls_ca.is_some() {
            return Err("--mysql-backend-tls verify-ca|verify-full and --mysql-backend-tls-ca FILE go together \
                        (the CA the backend's certificate is checked against)"
                .into());
        }
        if self.listen.is_none() && (self.tls_cert.is_some() || self.backend_tls != BackendTls::Off) {
            return Err(
                "--mysql-tls-* and --mysql-backend-tls apply to the MySQL proxy: give --mysql-listen too".into()
            );
        }
        if self.cache_limit > self.cache_size {
            return Err("--query-cache-limit cannot be larger than --query-cache-size".into());
        }
        Ok(())
    }

    /// The replica server id of this process's binlog connections: `--mysql-server-id`, else
    /// one drawn at random once per process (2^30 and up, away from the small ids servers
    /// use), so several sqlcached nodes on one backend never share an id: MariaDB keeps one
    /// connection per id and drops the other (nodes that all run as PID 1 in containers
    /// would collide on a PID-derived id).
    pub fn server_id(&self) -> u32 {
        static RANDOM: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
        self.server_id.unwrap_or_else(|| {
            *RANDOM.get_or_init(|| {
                use std::hash::{BuildHasher, Hasher};
                let mut h = std::collections::hash_map::RandomState::new().build_hasher();
                h.write_u32(std::process::id());
                h.write_u128(
                    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()),
                );
                0x4000_0000 | (h.finish() as u32 & 0x3FFF_FFFF)
            })
        })
    }

    /// The password of `--mysql-user`: the first line of `--mysql-password-file`, else
    /// `SQLCACHED_MYSQL_PASSWORD`, else empty.
    pub fn password(&self) -> std::io::Result<String> {
        if let Some(path) = &self.password_file {
            let text = std::fs::read_to_string(path)?;
            return Ok(text.lines().next().unwrap_or("").to_string());
        }
        Ok(std::env::var("SQLCACHED_MYSQL_PASSWORD").unwrap_or_default())
    }
}

/// The `--help` section of these flags.
pub const HELP: Section = Section {
    title: "MySQL query cache (docs/querycache.md)",
    options: &[
        Opt("--mysql-listen=<addr>", "accept MySQL clients on host:port (enables the proxy)"),
        Opt("--mysql-backend=<addr>", "the MariaDB/MySQL server behind the proxy, host:port"),
        Opt(
            "--mysql-user=<user>",
            "account for the binlog follower and metadata queries (without it the proxy caches \
             nothing); password from --mysql-password-file or the environment variable \
             SQLCACHED_MYSQL_PASSWORD",
        ),
        Opt("--mysql-password-file=<f>", "file whose first line is --mysql-user's password"),
        Opt(
            "--mysql-server-id=<n>",
            "replica server id of the binlog connections (default: a random id per start, 2^30 and \
             up; unique among the backend's replicas)",
        ),
        Opt(
            "--mysql-connect-timeout=<s>",
            "a client's login must be complete within s seconds, else it is closed with ERROR 1043 Bad \
             handshake (default: 10, as MariaDB's connect_timeout)",
        ),
        Opt(
            "--mysql-backend-connect-timeout=<s>",
            "how long a new client's backend connection may take to be accepted and greeted by the \
             backend (an overloaded server greets late), else ERROR 1429 (default: 10)",
        ),
        Opt(
            "--mysql-net-read-timeout=<s>",
            "a client that began sending a command must go on within s seconds, else it is closed \
             (default: 30, as net_read_timeout)",
        ),
        Opt(
            "--mysql-tls-cert=<file>",
            "PEM certificate chain: with --mysql-tls-key the proxy offers TLS to clients (and \
             terminates it, so it still caches); without them a client that requires TLS is refused \
             with ERROR 1235",
        ),
        Opt("--mysql-tls-key=<file>", "the private key of --mysql-tls-cert, PEM"),
        Opt(
            "--mysql-backend-tls=<m>",
            "off (default), verify-ca or verify-full: TLS to the backend, its certificate checked \
             against --mysql-backend-tls-ca (verify-full: and its name against --mysql-backend's host)",
        ),
        Opt("--mysql-backend-tls-ca=<f>", "PEM file of the CA the backend's certificate must chain to"),
        Opt("--query-cache-size=<num>", "memory for cached results (k/m/g suffix, default: 64m)"),
        Opt("--query-cache-limit=<num>", "largest cacheable result (default: 1m)"),
        Opt("--query-cache-type=<t>", "ON (default), DEMAND (only SELECT SQL_CACHE) or OFF"),
        Opt(
            "--query-cache-in-transactions=<p>",
            "reads inside transactions: never, read-only (default: transactions started START \
             TRANSACTION READ ONLY) or until-write (reads before the transaction's first write); a \
             cached answer is the latest committed state (READ COMMITTED for that statement)",
        ),
        Opt(
            "--query-cache-max-lag=<ms>",
            "answer from the cache only while the binlog follower is at most ms behind the backend's \
             binlog head, else from the backend until it catches up (default: 100; 0: no bound)",
        ),
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_validation() {
        let mut c = MysqlConfig::default();
        c.set("mysql-listen", "127.0.0.1:3307").unwrap();
        assert!(c.validate(false).unwrap_err().contains("--mysql-backend"));
        c.set("mysql-backend", "127.0.0.1:3306").unwrap();
        c.set("query-cache-size", "16m").unwrap();
        c.set("query-cache-limit", "64k").unwrap();
        c.set("query-cache-type", "demand").unwrap();
        assert_eq!((c.cache_size, c.cache_limit, c.cache_type), (16 << 20, 64 << 10, CacheType::Demand));
        c.validate(false).unwrap();
        assert!(c.set("query-cache-type", "maybe").is_err());
        assert!(c.set("mysql-server-id", "0").is_err());
        let mut lone = MysqlConfig::default();
        lone.set("query-cache-in-transactions", "until-write").unwrap();
        assert!(lone.validate(false).unwrap_err().contains("--mysql-listen"), "a cache setting without the proxy");
        c.set("query-cache-limit", "32m").unwrap();
        assert!(c.validate(false).is_err());
        assert_eq!(MysqlConfig::default().max_lag_ms, 100);
        c.set("query-cache-max-lag", "250").unwrap();
        assert_eq!(c.max_lag_ms, 250);
        assert!(c.set("query-cache-max-lag", "-1").unwrap_err().contains("between 0 and"));
        assert!(c.set("query-cache-max-lag", "1s").is_err());
        assert_eq!(MysqlConfig::default().backend_connect_timeout.as_secs(), 10, "MariaDB's connect_timeout");
        c.set("mysql-backend-connect-timeout", "30").unwrap();
        assert_eq!(c.backend_connect_timeout.as_secs(), 30);
        assert!(c.set("mysql-backend-connect-timeout", "0").is_err());
    }
}
