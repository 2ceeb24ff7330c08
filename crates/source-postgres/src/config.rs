//! Connection settings, read from a `postgres://` URL as libpq reads one.
//!
//! `postgres://user:password@host:port/dbname?sslmode=verify-full&sslrootcert=/etc/ca.pem`
//! (`postgresql://` too). Parts are percent-decoded. A host that starts with `/` is a unix
//! socket directory (`?host=/var/run/postgresql` or `%2Fvar%2Frun%2Fpostgresql`), as in
//! libpq; TLS never runs over a socket. Query parameters: `sslmode`, `sslrootcert`,
//! `application_name`, `connect_timeout` (seconds), `options` (command-line options for the
//! session, e.g. `-c wal_sender_timeout=10s`), and `host`, `port`, `user`, `password`,
//! `dbname` overriding the URL's parts. Unknown parameters are refused, not ignored.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::Error;

/// libpq's `sslmode`: whether to use TLS and how much to check the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SslMode {
    /// Plain TCP only.
    Disable,
    /// TLS if the server offers it, plain otherwise; the certificate is not checked
    /// (libpq's default).
    #[default]
    Prefer,
    /// TLS or fail; the certificate is checked against `sslrootcert` if one is given (as
    /// libpq does), not otherwise.
    Require,
    /// TLS, and the certificate chain must lead to `sslrootcert`'s CA.
    VerifyCa,
    /// As `VerifyCa`, and the certificate must name the host connected to.
    VerifyFull,
}

impl SslMode {
    /// From libpq's spelling.
    pub fn parse(s: &str) -> Result<SslMode, Error> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "prefer" | "allow" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => {
                return Err(Error::Config(format!(
                    "sslmode must be disable, prefer, require, verify-ca or verify-full, not '{s}'"
                )))
            }
        })
    }
}

/// Where and how to connect.
#[derive(Clone, PartialEq, Eq)]
pub struct Config {
    /// Host name or address, or a unix socket directory (starts with `/`).
    pub host: String,
    /// TCP port (also names the unix socket file, `.s.PGSQL.<port>`).
    pub port: u16,
    /// The role to log in as.
    pub user: String,
    /// Its password, when the server asks for one.
    pub password: Option<String>,
    /// The database (defaults to the user name, as in PostgreSQL).
    pub dbname: String,
    /// TLS policy.
    pub sslmode: SslMode,
    /// PEM file of the CA(s) the server's certificate must lead to.
    pub sslrootcert: Option<PathBuf>,
    /// Shown in `pg_stat_activity` and `pg_stat_replication`.
    pub application_name: String,
    /// Bound on TCP connect + TLS + authentication.
    pub connect_timeout: Duration,
    /// Session options sent in the startup packet (`-c name=value ...`).
    pub options: Option<String>,
}

impl Config {
    /// Parses a `postgres://` URL.
    pub fn from_url(url: &str) -> Result<Config, Error> {
        let bad = |why: &str| Error::Config(format!("{why} in the URL {}", redact(url)));
        let rest = url
            .strip_prefix("postgres://")
            .or_else(|| url.strip_prefix("postgresql://"))
            .ok_or_else(|| bad("expected postgres:// or postgresql://"))?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let mut cfg = Config {
            host: "localhost".into(),
            port: 5432,
            user: String::new(),
            password: None,
            dbname: String::new(),
            sslmode: SslMode::default(),
            sslrootcert: None,
            application_name: "sqlcached".into(),
            connect_timeout: Duration::from_secs(10),
            options: None,
        };
        if let Some(u) = userinfo {
            let (user, password) = match u.split_once(':') {
                Some((u, p)) => (u, Some(p)),
                None => (u, None),
            };
            cfg.user = decode(user).map_err(|_| bad("bad percent-encoding of the user"))?;
            cfg.password = password.map(decode).transpose().map_err(|_| bad("bad percent-encoding of the password"))?;
        }
        let (host, port) = split_host_port(hostport).ok_or_else(|| bad("bad host:port"))?;
        if !host.is_empty() {
            cfg.host = decode(host).map_err(|_| bad("bad percent-encoding of the host"))?;
        }
        if let Some(p) = port {
            cfg.port = p.parse().map_err(|_| bad("bad port"))?;
        }
        cfg.dbname = decode(path).map_err(|_| bad("bad percent-encoding of the database"))?;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').ok_or_else(|| bad("a query parameter without '='"))?;
            let v = decode(v).map_err(|_| bad("bad percent-encoding of a parameter"))?;
            match k {
                "sslmode" => cfg.sslmode = SslMode::parse(&v)?,
                "sslrootcert" => cfg.sslrootcert = Some(PathBuf::from(v)),
                "application_name" => cfg.application_name = v,
                "connect_timeout" => {
                    let secs: u64 = v.parse().map_err(|_| bad("connect_timeout must be whole seconds"))?;
                    cfg.connect_timeout = Duration::from_secs(secs.max(1));
                }
                "options" => cfg.options = Some(v),
                "host" => cfg.host = v,
                "port" => cfg.port = v.parse().map_err(|_| bad("bad port"))?,
                "user" => cfg.user = v,
                "password" => cfg.password = Some(v),
                "dbname" => cfg.dbname = v,
                _ => return Err(bad(&format!("unknown parameter '{k}'"))),
            }
        }
        if cfg.user.is_empty() {
            return Err(bad("no user"));
        }
        if cfg.dbname.is_empty() {
            cfg.dbname = cfg.user.clone();
        }
        if matches!(cfg.sslmode, SslMode::VerifyCa | SslMode::VerifyFull) && cfg.sslrootcert.is_none() {
            return Err(Error::Config(format!(
                "sslmode={} needs sslrootcert=FILE (the CA certificate to check the server against)",
                if cfg.sslmode == SslMode::VerifyCa { "verify-ca" } else { "verify-full" }
            )));
        }
        Ok(cfg)
    }

    /// Whether `host` names a unix socket directory.
    pub fn is_unix_socket(&self) -> bool {
        self.host.starts_with('/')
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("dbname", &self.dbname)
            .field("sslmode", &self.sslmode)
            .field("sslrootcert", &self.sslrootcert)
            .finish_non_exhaustive()
    }
}

/// The URL with its password replaced by `***` (for messages and logs).
pub fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else { return url.to_string() };
    let authority_end = url[scheme_end..].find(['/', '?']).map_or(url.len(), |i| scheme_end + i);
    match url[scheme_end..authority_end].rfind('@') {
        Some(at) => match url[scheme_end..scheme_end + at].find(':') {
            Some(colon) => format!("{}***{}", &url[..scheme_end + colon + 1], &url[scheme_end + at..]),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

fn split_host_port(s: &str) -> Option<(&str, Option<&str>)> {
    if let Some(v6) = s.strip_prefix('[') {
        let (host, rest) = v6.split_once(']')?;
        return match rest {
            "" => Some((host, None)),
            r => Some((host, Some(r.strip_prefix(':')?))),
        };
    }
    Some(match s.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    })
}

/// Percent-decoding (`%2F` → `/`); the result must be UTF-8.
fn decode(s: &str) -> Result<String, ()> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3).ok_or(())?;
            let hex = std::str::from_utf8(hex).map_err(|_| ())?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| ())?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let c =
            Config::from_url("postgres://app:p%40ss@db.internal:6432/shop?sslmode=require&application_name=x").unwrap();
        assert_eq!((c.host.as_str(), c.port, c.user.as_str()), ("db.internal", 6432, "app"));
        assert_eq!((c.password.as_deref(), c.dbname.as_str()), (Some("p@ss"), "shop"));
        assert_eq!((c.sslmode, c.application_name.as_str()), (SslMode::Require, "x"));
        let c = Config::from_url("postgresql://me@%2Ftmp%2Fpg/").unwrap();
        assert!(c.is_unix_socket() && c.dbname == "me" && c.password.is_none());
        let c = Config::from_url("postgres://me@[::1]:5433/d?options=-c%20wal_sender_timeout%3D2s").unwrap();
        assert_eq!((c.host.as_str(), c.port, c.options.as_deref()), ("::1", 5433, Some("-c wal_sender_timeout=2s")));
        for bad in [
            "mysql://a@b/c",
            "postgres://host/db",
            "postgres://a@b:x/c",
            "postgres://a@b/c?sslmode=sometimes",
            "postgres://a@b/c?sslmode=verify-full",
            "postgres://a@b/c?colour=blue",
            "postgres://a:%zz@b/c",
        ] {
            assert!(matches!(Config::from_url(bad), Err(Error::Config(_))), "{bad}");
        }
    }

    #[test]
    fn redacts_passwords() {
        assert_eq!(redact("postgres://u:secret@h:1/d"), "postgres://u:***@h:1/d");
        assert_eq!(redact("postgres://u@h/d"), "postgres://u@h/d");
        assert!(!format!("{:?}", Config::from_url("postgres://u:secret@h/d").unwrap()).contains("secret"));
        let e = Config::from_url("postgres://u:secret@h:x/d").unwrap_err().to_string();
        assert!(!e.contains("secret"), "{e}");
    }
}
