//! What following a backend's binlog needs, checked with the account that will follow it:
//! the login itself, the rights to register as a replica (REPLICATION SLAVE) and to ask
//! where the binlog ends (BINLOG MONITOR on MariaDB 10.5.2 and later, REPLICATION CLIENT on
//! MySQL and older MariaDB), a binlog at all (`log_bin`), its format (`binlog_format = ROW`,
//! `binlog_row_image = FULL`), and what `information_schema` shows the account (tables,
//! triggers). Each failure comes with its fix: the GRANT to run, the setting to change.
//!
//! One function for every consumer of the feed: the MySQL proxy at start (and while it runs
//! degraded), `--invalidate` rules, `caching` containers, and `--check-config` for all of
//! them. Replication rights are tried for real: the check registers as a replica (under an
//! id of its own, [`CHECK_SERVER_ID_BASE`] and up, so no follower is displaced) and asks for
//! a binlog file that does not exist, which the server refuses only after the privilege
//! check.

use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{BinlogStreamRequest, Conn, OptsBuilder};

use futures_util::StreamExt;

use crate::state::Config;

/// Replica server ids the check registers with: 2^29 + a random 24-bit number, away from
/// the followers' (2^30 and up when drawn, small when configured).
pub const CHECK_SERVER_ID_BASE: u32 = 0x2000_0000;

/// `ER_ACCESS_DENIED_ERROR`: wrong password or unknown user.
const ACCESS_DENIED: u16 = 1045;
/// `ER_HOST_NOT_PRIVILEGED`: no account for this client host.
const HOST_NOT_PRIVILEGED: u16 = 1130;
/// `ER_SPECIFIC_ACCESS_DENIED_ERROR`: a privilege is missing.
const SPECIFIC_ACCESS_DENIED: u16 = 1227;
/// `ER_PARSE_ERROR`: a statement the server does not know (MySQL 8.4's renames).
const PARSE_ERROR: u16 = 1064;
/// `ER_MASTER_FATAL_ERROR_READING_BINLOG`: here, the file asked for does not exist (the
/// rights were granted).
const FATAL_READING_BINLOG: u16 = 1236;

/// One thing the account or the server lacks, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The check, as a short name (a metrics label): `login`, `replication_slave`,
    /// `binlog_monitor`, `log_bin`, `binlog_format`, `binlog_row_image`, `metadata`,
    /// `triggers`.
    pub check: &'static str,
    /// Following the binlog cannot work without it (login, rights, no binlog); otherwise it
    /// works, with coarser invalidations or fewer tables cached.
    pub blocking: bool,
    /// What is wrong, then the fix.
    pub message: String,
}

/// What the backend said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Logged in and checked: the server's version, and what is missing (empty: nothing).
    Checked {
        /// `SELECT VERSION()`.
        version: String,
        /// Every problem found, blocking ones first.
        problems: Vec<Problem>,
    },
    /// The backend did not answer (refused, unresolvable, no answer in time): not a
    /// configuration error, checked again later.
    Unreachable(String),
}

impl Verdict {
    /// The blocking problems (none when unreachable).
    pub fn blocking(&self) -> Vec<&Problem> {
        match self {
            Verdict::Checked { problems, .. } => problems.iter().filter(|p| p.blocking).collect(),
            Verdict::Unreachable(_) => Vec::new(),
        }
    }
}

/// Checks `cfg`'s account against its backend (blocking: on a runtime of its own), each
/// step within `timeout`.
pub fn check(cfg: &Config, timeout: Duration) -> Verdict {
    match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt.block_on(check_async(cfg, timeout)),
        Err(e) => Verdict::Unreachable(format!("no runtime for the check: {e}")),
    }
}

/// [`check`] on the caller's runtime.
pub async fn check_async(cfg: &Config, timeout: Duration) -> Verdict {
    let Some((host, port)) = cfg.backend.rsplit_once(':').and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?))) else {
        return Verdict::Unreachable(format!("{}: want host:port", cfg.backend));
    };
    let opts = OptsBuilder::default()
        .ip_or_hostname(host.trim_start_matches('[').trim_end_matches(']'))
        .tcp_port(port)
        .user(Some(cfg.user.clone()))
        .pass(Some(cfg.password.clone()))
        .prefer_socket(false)
        .stmt_cache_size(0);
    let within = |what: &str| format!("no answer within {} s ({what})", timeout.as_secs());
    let mut conn = match tokio::time::timeout(timeout, Conn::new(opts.clone())).await {
        Ok(Ok(c)) => c,
        Ok(Err(mysql_async::Error::Server(e))) if e.code == ACCESS_DENIED || e.code == HOST_NOT_PRIVILEGED => {
            let message = format!(
                "--mysql-user {} cannot log in to {}: {}; fix: give the account's password in \
                 --mysql-password-file or SQLCACHED_MYSQL_PASSWORD{}, or create the account on the backend \
                 (CREATE USER '{}'@'%' IDENTIFIED BY '...')",
                cfg.user,
                cfg.backend,
                e.message,
                if cfg.password.is_empty() { " (none was given)" } else { "" },
                cfg.user
            );
            return Verdict::Checked { version: String::new(), problems: vec![blocking("login", message)] };
        }
        Ok(Err(e)) => return Verdict::Unreachable(engine::errors::cause(&e)),
        Err(_) => return Verdict::Unreachable(within("login")),
    };
    let found = tokio::time::timeout(timeout, server_problems(&mut conn, cfg)).await;
    let _ = tokio::time::timeout(timeout, conn.disconnect()).await;
    let (version, me, mut problems) = match found {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => return Verdict::Unreachable(engine::errors::cause(&e)),
        Err(_) => return Verdict::Unreachable(within("settings and rights")),
    };
    match tokio::time::timeout(timeout, replication_slave(opts)).await {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => problems.push(blocking(
            "replication_slave",
            format!(
                "--mysql-user {} may not read the binlog (no REPLICATION SLAVE privilege); fix: GRANT REPLICATION \
                 SLAVE ON *.* TO {me}",
                cfg.user
            ),
        )),
        Ok(Err(e)) => return Verdict::Unreachable(engine::errors::cause(&e)),
        Err(_) => return Verdict::Unreachable(within("replica registration")),
    }
    problems.sort_by_key(|p| !p.blocking);
    Verdict::Checked { version, problems }
}

fn blocking(check: &'static str, message: String) -> Problem {
    Problem { check, blocking: true, message }
}

fn coarser(check: &'static str, message: String) -> Problem {
    Problem { check, blocking: false, message }
}

/// `user@host` as CURRENT_USER() gives it, quoted for a GRANT: `'user'@'host'`.
fn grantee(current_user: &str) -> String {
    let (user, host) = current_user.rsplit_once('@').unwrap_or((current_user, "%"));
    format!("'{}'@'{}'", user.replace('\'', "''"), host.replace('\'', "''"))
}

/// Whether the server's version string is a MariaDB with BINLOG MONITOR (10.5.2 and later).
fn has_binlog_monitor(version: &str) -> bool {
    if !version.contains("MariaDB") {
        return false;
    }
    // The replication handshake's "5.5.5-" prefix, if a caller passes that version.
    let version = version.strip_prefix("5.5.5-").unwrap_or(version);
    let nums: Vec<u32> = version
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .take(3)
        .filter_map(|s| s.parse().ok())
        .collect();
    nums.as_slice() >= [10, 5, 2].as_slice()
}

/// The server's version, the grantee, and what the binlog's settings and
/// `information_schema` lack (all but the replica registration).
async fn server_problems(c: &mut Conn, cfg: &Config) -> mysql_async::Result<(String, String, Vec<Problem>)> {
    let mut out = Vec::new();
    let (version, me): (String, String) = c.query_first("SELECT VERSION(), CURRENT_USER()").await?.unwrap_or_default();
    let me = grantee(&me);
    let monitor = if has_binlog_monitor(&version) { "BINLOG MONITOR" } else { "REPLICATION CLIENT" };
    let vars: Option<(String, String, String)> = c
        .query_first("SELECT CAST(@@GLOBAL.log_bin AS CHAR), @@GLOBAL.binlog_format, @@GLOBAL.binlog_row_image")
        .await?;
    let (log_bin, format, image) = vars.unwrap_or_default();
    let on = log_bin == "1" || log_bin.eq_ignore_ascii_case("ON");
    if !on {
        out.push(blocking(
            "log_bin",
            format!(
                "{} writes no binlog (log_bin is OFF), so no change made on it can be followed; fix: start the server \
                 with log_bin (log-bin in [mysqld], with a server_id) and restart it",
                cfg.backend
            ),
        ));
    }
    // What the follower runs to find where the binlog ends.
    match c.query_drop("SHOW MASTER STATUS").await {
        Ok(()) => {}
        Err(mysql_async::Error::Server(e)) if e.code == SPECIFIC_ACCESS_DENIED => out.push(blocking(
            "binlog_monitor",
            format!(
                "--mysql-user {} may not ask where the binlog ends (SHOW MASTER STATUS: {}); fix: GRANT {monitor} ON \
                 *.* TO {me}",
                cfg.user, e.message
            ),
        )),
        Err(mysql_async::Error::Server(e)) if e.code == PARSE_ERROR => {
            // MySQL 8.4 renamed it.
            if let Err(mysql_async::Error::Server(e)) = c.query_drop("SHOW BINARY LOG STATUS").await {
                if e.code == SPECIFIC_ACCESS_DENIED {
                    out.push(blocking(
                        "binlog_monitor",
                        format!(
                            "--mysql-user {} may not run SHOW BINARY LOG STATUS; fix: GRANT {monitor} ON *.* TO {me}",
                            cfg.user
                        ),
                    ));
                }
            }
        }
        Err(e) => return Err(e),
    }
    if on && !format.eq_ignore_ascii_case("ROW") {
        out.push(coarser(
            "binlog_format",
            format!(
                "binlog_format is {format}: a change is logged as its statement, so it invalidates whole tables (and \
                 what their triggers and cascades write) instead of rows; fix: SET GLOBAL binlog_format = 'ROW' and \
                 binlog_format = ROW in [mysqld]"
            ),
        ));
    }
    if on && !image.eq_ignore_ascii_case("FULL") {
        out.push(coarser(
            "binlog_row_image",
            format!(
                "binlog_row_image is {image}: before images lack the old values of non-key columns (keys built from \
                 them cannot be named); fix: SET GLOBAL binlog_row_image = 'FULL' and binlog_row_image = FULL in \
                 [mysqld]"
            ),
        ));
    }
    let tables: Option<u64> = c
        .query_first(
            "SELECT COUNT(*) FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')",
        )
        .await?;
    if tables == Some(0) {
        out.push(coarser(
            "metadata",
            format!(
                "--mysql-user {} sees no table in information_schema (it lists only tables the account has a \
                 privilege on), so no table's keys can be read; fix: GRANT SELECT ON <db>.* TO {me} for each \
                 database to cache",
                cfg.user
            ),
        ));
    }
    // information_schema.TRIGGERS lists only triggers on tables the account has the TRIGGER
    // privilege on. These views list every account's grants to one that may read `mysql`:
    // keep ours.
    let q = format!(
        "SELECT COUNT(*) FROM (\
         SELECT 1 FROM information_schema.USER_PRIVILEGES WHERE PRIVILEGE_TYPE = 'TRIGGER' AND GRANTEE = {g} \
         UNION ALL SELECT 1 FROM information_schema.SCHEMA_PRIVILEGES WHERE PRIVILEGE_TYPE = 'TRIGGER' AND GRANTEE = {g} \
         UNION ALL SELECT 1 FROM information_schema.TABLE_PRIVILEGES WHERE PRIVILEGE_TYPE = 'TRIGGER' AND GRANTEE = {g}) p",
        g = "CONCAT(QUOTE(SUBSTRING_INDEX(CURRENT_USER(), '@', 1)), '@', QUOTE(SUBSTRING_INDEX(CURRENT_USER(), '@', -1)))"
    );
    if c.query_first::<u64, _>(q).await? == Some(0) {
        out.push(coarser(
            "triggers",
            format!(
                "--mysql-user {} has no TRIGGER privilege: information_schema.TRIGGERS hides the backend's triggers, so \
                 what they write is invalidated from the binlog's rows only (not before a proxied write's OK, and not \
                 at all for a statement-format write); fix: GRANT TRIGGER ON <db>.* TO {me}",
                cfg.user
            ),
        ));
    }
    Ok((version, me, out))
}

/// Registers as a replica and asks for a binlog file that does not exist: false if the
/// server refuses for want of REPLICATION SLAVE; true if it gets as far as the file.
async fn replication_slave(opts: OptsBuilder) -> mysql_async::Result<bool> {
    let conn = Conn::new(opts).await?;
    let id = CHECK_SERVER_ID_BASE
        | (std::process::id().wrapping_mul(2_654_435_761) ^ crate::position::now_ms() as u32) & 0x00FF_FFFF;
    let req = BinlogStreamRequest::new(id)
        .with_filename(b"sqlcached-replication-check.000000")
        .with_pos(4u64)
        .with_non_blocking();
    // Refused, MariaDB answers COM_REGISTER_SLAVE with ER_ACCESS_DENIED_ERROR (the login
    // itself was accepted just before), COM_BINLOG_DUMP with ER_SPECIFIC_ACCESS_DENIED_ERROR.
    let refused = |e: &mysql_async::ServerError| e.code == SPECIFIC_ACCESS_DENIED || e.code == ACCESS_DENIED;
    let mut stream = match conn.get_binlog_stream(req).await {
        Ok(s) => s,
        Err(mysql_async::Error::Server(e)) if refused(&e) => return Ok(false),
        Err(e) => return Err(e),
    };
    let granted = match stream.next().await {
        Some(Err(mysql_async::Error::Server(e))) if refused(&e) => false,
        Some(Err(mysql_async::Error::Server(e))) if e.code == FATAL_READING_BINLOG => true,
        Some(Err(e)) => return Err(e),
        // A server that streamed something after all: it let us register and dump.
        Some(Ok(_)) | None => true,
    };
    let _ = stream.close().await;
    Ok(granted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_grantees() {
        assert!(has_binlog_monitor("10.11.19-MariaDB-0+deb12u1-log"));
        assert!(has_binlog_monitor("10.5.2-MariaDB"));
        assert!(!has_binlog_monitor("10.5.1-MariaDB"));
        assert!(!has_binlog_monitor("10.4.30-MariaDB"));
        assert!(!has_binlog_monitor("8.0.36"));
        assert!(has_binlog_monitor("5.5.5-10.11.6-MariaDB"));
        assert_eq!(grantee("sqlcached@%"), "'sqlcached'@'%'");
        assert_eq!(grantee("o'b@10.0.0.%"), "'o''b'@'10.0.0.%'");
    }
}
