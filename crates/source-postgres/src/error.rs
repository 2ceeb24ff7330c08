//! The client's errors, typed where a caller branches on them.

use std::fmt;
use std::io;

/// An error the server reported (ErrorResponse), owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbError {
    /// `ERROR`, `FATAL`, `PANIC` (never localized).
    pub severity: String,
    /// The SQLSTATE code (`42704`, `55000`, ...).
    pub code: String,
    /// The primary message.
    pub message: String,
    /// The detail, if any.
    pub detail: Option<String>,
    /// The hint, if any.
    pub hint: Option<String>,
}

impl DbError {
    /// From the fields of an ErrorResponse or NoticeResponse.
    pub fn from_fields(f: &protocol_postgres::ErrorFields<'_>) -> DbError {
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        DbError {
            severity: s(f.severity()),
            code: s(f.code()),
            message: s(f.message()),
            detail: f.get(protocol_postgres::backend::fields::DETAIL).map(s),
            hint: f.get(protocol_postgres::backend::fields::HINT).map(s),
        }
    }
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} (SQLSTATE {})", self.severity, self.message, self.code)?;
        if let Some(d) = &self.detail {
            write!(f, "; DETAIL: {d}")?;
        }
        if let Some(h) = &self.hint {
            write!(f, "; HINT: {h}")?;
        }
        Ok(())
    }
}

/// Why a connection, a command or the stream failed.
#[derive(Debug)]
pub enum Error {
    /// The connection settings are wrong (the message says which and why).
    Config(String),
    /// The server could not be reached (refused, unreachable, timed out).
    Connect(String),
    /// The connection broke or the server ended the session (closed, reset, shut down,
    /// terminated by an administrator): reconnect and resume from the confirmed position.
    ConnectionLost(String),
    /// TLS could not be set up as `sslmode` demands (the server refused it, the
    /// certificate did not verify, ...).
    Tls(String),
    /// Authentication failed or needs a method this client does not speak.
    Auth(String),
    /// The server's `wal_level` is not `logical`: set it (`ALTER SYSTEM SET wal_level =
    /// logical`) and restart the server.
    WalLevelNotLogical(DbError),
    /// The role may not open a replication connection: it needs the REPLICATION attribute
    /// (`ALTER ROLE name REPLICATION`) or to be a superuser.
    NoReplicationPrivilege(DbError),
    /// The replication slot does not exist (never created, or dropped).
    SlotMissing(DbError),
    /// The replication slot is in use by another connection.
    SlotInUse(DbError),
    /// A publication named by the stream does not exist.
    PublicationMissing(DbError),
    /// Any other error the server reported.
    Server(DbError),
    /// The server sent something the protocol does not allow here.
    Protocol(String),
}

impl Error {
    /// Classifies a server error by its SQLSTATE and message.
    pub fn from_db(e: DbError) -> Error {
        let m = e.message.as_str();
        match e.code.as_str() {
            "55000" if m.contains("wal_level") => Error::WalLevelNotLogical(e),
            "42501" if m.contains("replication") || m.contains("walsender") || m.contains("WAL sender") => {
                Error::NoReplicationPrivilege(e)
            }
            "42704" if m.starts_with("replication slot") => Error::SlotMissing(e),
            "42704" if m.starts_with("publication") => Error::PublicationMissing(e),
            "55006" if m.starts_with("replication slot") => Error::SlotInUse(e),
            "28P01" | "28000" => Error::Auth(e.to_string()),
            // admin_shutdown, crash_shutdown, cannot_connect_now, idle session timeout
            "57P01" | "57P02" | "57P03" | "57P05" => Error::ConnectionLost(e.to_string()),
            _ => Error::Server(e),
        }
    }

    /// An I/O error on an established connection.
    pub(crate) fn io(e: io::Error) -> Error {
        Error::ConnectionLost(e.to_string())
    }

    /// The server error behind this one, if it came from the server.
    pub fn db_error(&self) -> Option<&DbError> {
        match self {
            Error::WalLevelNotLogical(e)
            | Error::NoReplicationPrivilege(e)
            | Error::SlotMissing(e)
            | Error::SlotInUse(e)
            | Error::PublicationMissing(e)
            | Error::Server(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(m) => write!(f, "bad PostgreSQL connection settings: {m}"),
            Error::Connect(m) => write!(f, "cannot connect to PostgreSQL: {m}"),
            Error::ConnectionLost(m) => write!(f, "connection to PostgreSQL lost: {m}"),
            Error::Tls(m) => write!(f, "PostgreSQL TLS: {m}"),
            Error::Auth(m) => write!(f, "PostgreSQL authentication: {m}"),
            Error::WalLevelNotLogical(e) => {
                write!(f, "{e}: the server's wal_level must be logical (ALTER SYSTEM SET wal_level = logical, then restart it)")
            }
            Error::NoReplicationPrivilege(e) => {
                write!(f, "{e}: the role needs the REPLICATION attribute (ALTER ROLE ... REPLICATION) or superuser")
            }
            Error::SlotMissing(e) => write!(f, "{e}: the replication slot is gone (dropped?)"),
            Error::SlotInUse(e) => write!(f, "{e}: another connection is using the replication slot"),
            Error::PublicationMissing(e) => write!(f, "{e}: create the publication first"),
            Error::Server(e) => write!(f, "{e}"),
            Error::Protocol(m) => write!(f, "PostgreSQL protocol error: {m}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<protocol_postgres::Error> for Error {
    fn from(e: protocol_postgres::Error) -> Error {
        Error::Protocol(e.to_string())
    }
}
