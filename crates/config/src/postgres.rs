//! The PostgreSQL front's command-line flags (`--pg-*`, docs/pgproxy.md).

use crate::usage::{Opt, Section};
use std::time::Duration;

/// libpq's `sslmode` for the proxy's connections to the backend (`--pg-backend-sslmode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SslMode {
    /// Plain TCP only.
    Disable,
    /// TLS if the server offers it, plain otherwise; the certificate is not checked
    /// (libpq's default, and ours).
    #[default]
    Prefer,
    /// TLS or fail; the certificate is checked against `--pg-backend-sslrootcert` if given.
    Require,
    /// TLS, and the certificate must chain to `--pg-backend-sslrootcert`'s CA.
    VerifyCa,
    /// As `VerifyCa`, and the certificate must name `--pg-backend`'s host.
    VerifyFull,
}

impl SslMode {
    /// From libpq's spelling (`allow` reads as `prefer`, as the proxy never falls back the
    /// other way).
    pub fn parse(s: &str) -> Option<SslMode> {
        Some(match s.to_ascii_lowercase().as_str() {
            "disable" => SslMode::Disable,
            "allow" | "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    /// libpq's spelling.
    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// Settings of the PostgreSQL front.
#[derive(Clone, Debug)]
pub struct PostgresConfig {
    /// `--pg-listen ADDR`: where PostgreSQL clients connect; none disables the front.
    pub listen: Option<String>,
    /// `--pg-backend HOST:PORT`: the PostgreSQL server behind it.
    pub backend: Option<String>,
    /// `--pg-user USER`: the proxy's own account on the backend (`--check-config`'s login,
    /// the WAL feed of the query cache).
    pub user: Option<String>,
    /// `--pg-password-file FILE` (else env `SQLCACHED_PG_PASSWORD`).
    pub password_file: Option<String>,
    /// `--pg-database DB`: the database `--pg-user` logs in to (default `postgres`).
    pub database: String,
    /// `--pg-backend-sslmode`: TLS toward the backend.
    pub backend_sslmode: SslMode,
    /// `--pg-backend-sslrootcert FILE`: CA certificates the backend's must chain to.
    pub backend_sslrootcert: Option<String>,
    /// `--pg-tls-cert FILE`: PEM chain the proxy offers TLS to clients with.
    pub tls_cert: Option<String>,
    /// `--pg-tls-key FILE`: its private key (PEM).
    pub tls_key: Option<String>,
    /// `--pg-login-timeout SECS`: a client's startup and authentication must be done within
    /// it (PostgreSQL's `authentication_timeout`, default 60 s).
    pub login_timeout: Duration,
    /// `--pg-backend-connect-timeout SECS`: connecting to the backend (TCP, TLS) may take
    /// this long (default 10 s).
    pub backend_connect_timeout: Duration,
    /// `--pg-max-connections N`: client connections at once; more are refused with
    /// SQLSTATE 53300 (default 1024).
    pub max_connections: usize,
    /// `--pg-slot NAME`: the logical replication slot the WAL is followed through (default
    /// `sqlcached`; one per sqlcached process).
    pub slot: String,
    /// `--pg-publication NAME`: the publication naming the followed tables (default `sqlcached`).
    pub publication: String,
    /// `--pg-drop-slot`: drop the slot and the publication on `--pg-backend`, then exit.
    pub drop_slot: bool,
    /// `--pg-ddl-trigger`: install event triggers that put DDL into the WAL (superuser).
    pub ddl_trigger: bool,
    /// `--pg-query-cache on|off`: answer cacheable reads from memory (default on).
    pub cache: bool,
    /// `--pg-query-cache-size BYTES`: memory for results and their tags (default 64 MiB).
    pub cache_size: usize,
    /// `--pg-query-cache-limit BYTES`: larger results are not kept (default 1 MiB).
    pub cache_limit: usize,
    /// `--pg-query-cache-max-lag MS`: answer from memory only while the WAL follower is at
    /// most this far behind (default 100; 0: no bound).
    pub cache_max_lag_ms: u64,
    /// `--pg-query-cache-in-transactions never|read-only|until-write`: which reads inside
    /// transactions are answered from memory (default read-only, as the MySQL cache's).
    pub cache_in_transactions: crate::querycache::InTransactions,
    /// Whether a `--pg-query-cache-*` flag was given (refused without the cache to apply to).
    pub cache_flags_given: bool,
}

impl Default for PostgresConfig {
    fn default() -> Self {
        PostgresConfig {
            listen: None,
            backend: None,
            user: None,
            password_file: None,
            database: "postgres".into(),
            backend_sslmode: SslMode::Prefer,
            backend_sslrootcert: None,
            tls_cert: None,
            tls_key: None,
            login_timeout: Duration::from_secs(60),
            backend_connect_timeout: Duration::from_secs(10),
            max_connections: 1024,
            slot: "sqlcached".into(),
            publication: "sqlcached".into(),
            drop_slot: false,
            ddl_trigger: false,
            cache: true,
            cache_size: 64 << 20,
            cache_limit: 1 << 20,
            cache_max_lag_ms: 100,
            cache_in_transactions: crate::querycache::InTransactions::ReadOnly,
            cache_flags_given: false,
        }
    }
}

/// The long flags this module parses (each takes a value).
pub const FLAGS: &[&str] = &[
    "pg-listen",
    "pg-backend",
    "pg-user",
    "pg-password-file",
    "pg-database",
    "pg-backend-sslmode",
    "pg-backend-sslrootcert",
    "pg-tls-cert",
    "pg-tls-key",
    "pg-login-timeout",
    "pg-backend-connect-timeout",
    "pg-max-connections",
    "pg-slot",
    "pg-publication",
    "pg-query-cache",
    "pg-query-cache-size",
    "pg-query-cache-limit",
    "pg-query-cache-max-lag",
    "pg-query-cache-in-transactions",
];

/// The switch flags this module parses (no value).
pub const SWITCHES: &[&str] = &["pg-drop-slot", "pg-ddl-trigger"];

/// The environment variable holding `--pg-user`'s password.
pub const PASSWORD_ENV: &str = "SQLCACHED_PG_PASSWORD";

impl PostgresConfig {
    /// Applies one flag of [`FLAGS`] with its value.
    pub fn set(&mut self, flag: &str, v: &str) -> Result<(), String> {
        let bad = || format!("Invalid value for --{flag}: '{v}'");
        self.cache_flags_given |= flag.starts_with("pg-query-cache-");
        match flag {
            "pg-listen" => self.listen = Some(v.to_string()),
            "pg-backend" => {
                split_host_port(v).ok_or_else(|| format!("--pg-backend {v}: want HOST:PORT"))?;
                self.backend = Some(v.to_string())
            }
            "pg-user" => self.user = Some(v.to_string()),
            "pg-password-file" => self.password_file = Some(v.to_string()),
            "pg-database" => self.database = v.to_string(),
            "pg-backend-sslmode" => {
                self.backend_sslmode = SslMode::parse(v).ok_or_else(|| {
                    format!(
                        "--pg-backend-sslmode must be disable, prefer, require, verify-ca or verify-full, not '{v}'"
                    )
                })?
            }
            "pg-backend-sslrootcert" => self.backend_sslrootcert = Some(v.to_string()),
            "pg-tls-cert" => self.tls_cert = Some(v.to_string()),
            "pg-tls-key" => self.tls_key = Some(v.to_string()),
            "pg-login-timeout" | "pg-backend-connect-timeout" => {
                let secs: u64 = v.trim().parse().map_err(|_| bad())?;
                if !(1..=31_536_000).contains(&secs) {
                    return Err(format!("--{flag} must be between 1 and 31536000 seconds"));
                }
                let d = Duration::from_secs(secs);
                match flag {
                    "pg-login-timeout" => self.login_timeout = d,
                    _ => self.backend_connect_timeout = d,
                }
            }
            "pg-slot" | "pg-publication" => {
                let ok = !v.is_empty()
                    && v.len() <= 63
                    && v.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
                if !ok {
                    return Err(format!(
                        "--{flag} '{v}': lower-case letters, digits and _ only, at most 63 (PostgreSQL's slot names)"
                    ));
                }
                match flag {
                    "pg-slot" => self.slot = v.to_string(),
                    _ => self.publication = v.to_string(),
                }
            }
            "pg-drop-slot" => self.drop_slot = true,
            "pg-ddl-trigger" => self.ddl_trigger = true,
            "pg-query-cache" => {
                self.cache = match v {
                    "on" => true,
                    "off" => false,
                    _ => return Err(format!("--pg-query-cache must be on or off, not '{v}'")),
                }
            }
            "pg-query-cache-size" | "pg-query-cache-limit" => {
                let n = crate::parse_size(v).ok_or_else(bad)?;
                if n < 1024 {
                    return Err(format!("--{flag} must be at least 1k"));
                }
                match flag {
                    "pg-query-cache-size" => self.cache_size = n,
                    _ => self.cache_limit = n,
                }
            }
            "pg-query-cache-max-lag" => self.cache_max_lag_ms = v.trim().parse().map_err(|_| bad())?,
            "pg-query-cache-in-transactions" => {
                self.cache_in_transactions = crate::querycache::InTransactions::parse(v).ok_or_else(|| {
                    format!("--pg-query-cache-in-transactions must be never, read-only or until-write, not '{v}'")
                })?
            }
            "pg-max-connections" => {
                let n: usize = v.trim().parse().map_err(|_| bad())?;
                if n == 0 {
                    return Err("--pg-max-connections must be at least 1".into());
                }
                self.max_connections = n;
            }
            _ => return Err(format!("unknown flag --{flag}")),
        }
        Ok(())
    }

    /// Checks the combination after every flag was read (`wal_rules`: `--invalidate` rules
    /// follow `--pg-backend`'s WAL without the front).
    pub fn validate(&self, wal_rules: bool) -> Result<(), String> {
        let given = self.backend.is_some()
            || self.user.is_some()
            || self.tls_cert.is_some()
            || self.tls_key.is_some()
            || self.backend_sslrootcert.is_some();
        if self.drop_slot && (self.backend.is_none() || self.user.is_none()) {
            return Err("--pg-drop-slot needs --pg-backend HOST:PORT and --pg-user USER (the role that may drop the \
                        slot) to reach the server"
                .into());
        }
        if self.cache_flags_given && self.listen.is_none() {
            return Err("--pg-query-cache-* settings apply to the PostgreSQL front's query cache: give --pg-listen \
                        too"
            .into());
        }
        if self.cache_flags_given && !self.cache {
            return Err("--pg-query-cache-* settings are given but --pg-query-cache is off: nothing would use them \
                        (drop them, or turn the cache on)"
                .into());
        }
        if self.cache_limit > self.cache_size {
            return Err("--pg-query-cache-limit cannot be larger than --pg-query-cache-size".into());
        }
        if self.listen.is_none() && !wal_rules && !self.drop_slot {
            if given {
                return Err("--pg-backend, --pg-user, --pg-tls-* and --pg-backend-sslrootcert apply to the \
                            PostgreSQL front and to --invalidate=postgres:... rules: give --pg-listen or such a rule \
                            too"
                .into());
            }
            return Ok(());
        }
        if self.listen.is_none() && self.tls_cert.is_some() {
            return Err("--pg-tls-cert and --pg-tls-key apply to the PostgreSQL front: give --pg-listen too".into());
        }
        if self.backend.is_none() {
            return Err("--pg-listen needs --pg-backend HOST:PORT (the PostgreSQL server to proxy)".into());
        }
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err("--pg-tls-cert and --pg-tls-key go together (the proxy's certificate and its key)".into());
        }
        if matches!(self.backend_sslmode, SslMode::VerifyCa | SslMode::VerifyFull) && self.backend_sslrootcert.is_none()
        {
            return Err(format!(
                "--pg-backend-sslmode {} needs --pg-backend-sslrootcert FILE (the CA the server's certificate is \
                 checked against)",
                self.backend_sslmode.name()
            ));
        }
        if self.backend_sslmode == SslMode::Disable && self.backend_sslrootcert.is_some() {
            return Err("--pg-backend-sslrootcert is set but --pg-backend-sslmode is disable: no TLS to check".into());
        }
        Ok(())
    }

    /// The password of `--pg-user`: the first line of `--pg-password-file`, else
    /// `SQLCACHED_PG_PASSWORD`, else none.
    pub fn password(&self) -> std::io::Result<Option<String>> {
        if let Some(path) = &self.password_file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| std::io::Error::new(e.kind(), format!("--pg-password-file {path}: {e}")))?;
            return Ok(Some(text.lines().next().unwrap_or("").to_string()));
        }
        Ok(std::env::var(PASSWORD_ENV).ok())
    }

    /// `--pg-backend` split into host and port.
    pub fn backend_host_port(&self) -> Option<(String, u16)> {
        self.backend.as_deref().and_then(split_host_port)
    }
}

/// Splits `host:port` (`[v6]:port` too).
pub fn split_host_port(addr: &str) -> Option<(String, u16)> {
    let (host, port) = addr.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return None;
    }
    Some((host.to_string(), port.parse().ok()?))
}

/// The `--help` section of these flags.
pub const HELP: Section = Section {
    title: "PostgreSQL front (docs/pgproxy.md)",
    options: &[
        Opt(
            "--pg-listen=<addr>",
            "accept PostgreSQL clients on host:port (enables the front); applications change only the port",
        ),
        Opt("--pg-backend=<addr>", "the PostgreSQL server behind it, host:port"),
        Opt(
            "--pg-user=<user>",
            "the proxy's own account on the backend (--check-config logs in with it); password from \
             --pg-password-file or the environment variable SQLCACHED_PG_PASSWORD",
        ),
        Opt("--pg-password-file=<f>", "file whose first line is --pg-user's password"),
        Opt("--pg-database=<db>", "the database --pg-user logs in to (default: postgres)"),
        Opt(
            "--pg-backend-sslmode=<m>",
            "disable, prefer (default), require, verify-ca or verify-full: TLS to the backend, as libpq's sslmode",
        ),
        Opt(
            "--pg-backend-sslrootcert=<f>",
            "CA certificate(s) the backend's certificate is checked against (verify-ca, verify-full: and the \
             name of --pg-backend's host)",
        ),
        Opt(
            "--pg-tls-cert=<file>",
            "PEM certificate chain: with --pg-tls-key the proxy answers clients' SSLRequest with 'S' and \
             terminates TLS (without them: 'N')",
        ),
        Opt("--pg-tls-key=<file>", "the private key of --pg-tls-cert, PEM"),
        Opt(
            "--pg-login-timeout=<s>",
            "a client's startup and authentication must be done within s seconds (default: 60, PostgreSQL's \
             authentication_timeout)",
        ),
        Opt("--pg-backend-connect-timeout=<s>", "connecting to the backend may take s seconds (default: 10)"),
        Opt(
            "--pg-query-cache=<on|off>",
            "answer cacheable reads from memory, kept fresh by the WAL of --pg-database (default: on; needs \
             --pg-user with REPLICATION)",
        ),
        Opt("--pg-query-cache-size=<n>", "memory for cached results (default: 64m)"),
        Opt("--pg-query-cache-limit=<n>", "larger results are not cached (default: 1m)"),
        Opt(
            "--pg-query-cache-max-lag=<ms>",
            "answer from memory only while the WAL follower is at most ms behind (default: 100; 0: no bound)",
        ),
        Opt(
            "--pg-query-cache-in-transactions=<p>",
            "reads inside transactions: never, read-only (default: transactions begun BEGIN READ ONLY, or \
             with default_transaction_read_only on) or until-write (reads before the transaction's first write)",
        ),
        Opt(
            "--pg-slot=<name>",
            "the logical replication slot --invalidate=postgres:... rules follow the WAL through (default: \
             sqlcached; one per sqlcached; it holds WAL on the server until dropped)",
        ),
        Opt("--pg-publication=<name>", "the publication of the followed tables (default: sqlcached)"),
        Opt(
            "--pg-ddl-trigger",
            "install event triggers (schema sqlcached, needs a superuser) that put DDL, GRANT and REVOKE into \
             the WAL, so the caches see them at once (without: at the table's next row change, or within 1 s)",
        ),
        Opt(
            "--pg-drop-slot",
            "drop --pg-slot and --pg-publication on --pg-backend, then exit (when retiring a sqlcached: an \
             abandoned slot holds WAL for ever)",
        ),
        Opt(
            "--pg-max-connections=<n>",
            "client connections at once; more are refused with SQLSTATE 53300 (default: 1024)",
        ),
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_validation() {
        let mut c = PostgresConfig::default();
        c.validate(false).unwrap();
        c.set("pg-listen", "127.0.0.1:6432").unwrap();
        assert!(c.validate(false).unwrap_err().contains("--pg-backend"));
        c.set("pg-backend", "127.0.0.1:5432").unwrap();
        c.validate(false).unwrap();
        assert_eq!(c.backend_host_port(), Some(("127.0.0.1".into(), 5432)));
        assert!(c.set("pg-backend", "db").is_err());
        c.set("pg-backend-sslmode", "verify-full").unwrap();
        assert!(c.validate(false).unwrap_err().contains("--pg-backend-sslrootcert"));
        c.set("pg-backend-sslrootcert", "/etc/ca.pem").unwrap();
        c.validate(false).unwrap();
        assert!(c.set("pg-backend-sslmode", "maybe").is_err());
        c.set("pg-tls-cert", "a.pem").unwrap();
        assert!(c.validate(false).unwrap_err().contains("go together"));
        assert!(c.set("pg-login-timeout", "0").is_err());
        assert!(c.set("pg-max-connections", "0").is_err());
        c.set("pg-login-timeout", "5").unwrap();
        assert_eq!(c.login_timeout, Duration::from_secs(5));
        c.set("pg-query-cache-size", "1m").unwrap();
        c.set("pg-tls-key", "a.key").unwrap();
        c.validate(false).unwrap();
        c.set("pg-query-cache-limit", "2m").unwrap();
        assert!(c.validate(false).unwrap_err().contains("cannot be larger"));
        c.set("pg-query-cache-limit", "1k").unwrap();
        c.set("pg-query-cache", "off").unwrap();
        assert!(c.validate(false).unwrap_err().contains("--pg-query-cache is off"));
        let mut unused = PostgresConfig::default();
        unused.set("pg-query-cache-max-lag", "10").unwrap();
        assert!(unused.validate(false).unwrap_err().contains("give --pg-listen"));
        let mut lone = PostgresConfig::default();
        lone.set("pg-user", "app").unwrap();
        assert!(lone.validate(false).unwrap_err().contains("--pg-listen"));
        lone.set("pg-backend", "127.0.0.1:5432").unwrap();
        lone.validate(true).unwrap();
        assert!(lone.set("pg-slot", "Bad-Name").is_err());
        lone.set("pg-slot", "cache_2").unwrap();
        assert_eq!(lone.slot, "cache_2");
        assert_eq!(split_host_port("[::1]:5432"), Some(("::1".into(), 5432)));
    }
}
