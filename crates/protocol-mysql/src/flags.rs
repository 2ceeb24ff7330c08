//! Capability flags (`CLIENT_*`), server status flags (`SERVER_*`) and column flags.
//!
//! Capabilities are a `u32`: the low 16 bits travel first in the handshake, the high 16
//! bits later. MariaDB adds extended capabilities (`MARIADB_CLIENT_*`) in otherwise
//! reserved handshake bytes when [`CLIENT_MYSQL`] is clear.

/// Old "long password" flag; MariaDB calls it `CLIENT_MYSQL` (set by MySQL peers).
pub const CLIENT_LONG_PASSWORD: u32 = 1;
/// MariaDB's name for bit 0: when clear, MariaDB extended capabilities are exchanged.
pub const CLIENT_MYSQL: u32 = 1;
/// Send found rows instead of affected rows in OK packets.
pub const CLIENT_FOUND_ROWS: u32 = 1 << 1;
/// Get all column flags (legacy).
pub const CLIENT_LONG_FLAG: u32 = 1 << 2;
/// A database (schema) name follows in the handshake response.
pub const CLIENT_CONNECT_WITH_DB: u32 = 1 << 3;
/// Do not allow `database.table.column` (deprecated).
pub const CLIENT_NO_SCHEMA: u32 = 1 << 4;
/// Compression protocol (zlib) after the handshake.
pub const CLIENT_COMPRESS: u32 = 1 << 5;
/// ODBC client (no special behaviour today).
pub const CLIENT_ODBC: u32 = 1 << 6;
/// `LOAD DATA LOCAL` is allowed.
pub const CLIENT_LOCAL_FILES: u32 = 1 << 7;
/// The parser ignores spaces before `(`.
pub const CLIENT_IGNORE_SPACE: u32 = 1 << 8;
/// The 4.1 protocol (required by this crate's 4.1 packet formats).
pub const CLIENT_PROTOCOL_41: u32 = 1 << 9;
/// Interactive client (`wait_timeout` becomes `interactive_timeout`).
pub const CLIENT_INTERACTIVE: u32 = 1 << 10;
/// Switch to TLS after the SSLRequest packet.
pub const CLIENT_SSL: u32 = 1 << 11;
/// Do not issue SIGPIPE (client-side only).
pub const CLIENT_IGNORE_SIGPIPE: u32 = 1 << 12;
/// The client knows about transactions (status flags in OK packets).
pub const CLIENT_TRANSACTIONS: u32 = 1 << 13;
/// Old 4.1 flag, unused.
pub const CLIENT_RESERVED: u32 = 1 << 14;
/// 4.1 authentication: a length-prefixed auth response (also `CLIENT_RESERVED2`).
pub const CLIENT_SECURE_CONNECTION: u32 = 1 << 15;
/// Several statements per COM_QUERY.
pub const CLIENT_MULTI_STATEMENTS: u32 = 1 << 16;
/// Several result sets per COM_QUERY.
pub const CLIENT_MULTI_RESULTS: u32 = 1 << 17;
/// Several result sets per COM_STMT_EXECUTE.
pub const CLIENT_PS_MULTI_RESULTS: u32 = 1 << 18;
/// Pluggable authentication: plugin names in the handshake packets.
pub const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
/// Connection attributes in the handshake response.
pub const CLIENT_CONNECT_ATTRS: u32 = 1 << 20;
/// The auth response is a length-encoded string (longer than 255 bytes allowed).
pub const CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 1 << 21;
/// The client can handle expired passwords.
pub const CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS: u32 = 1 << 22;
/// Session state tracking information in OK packets.
pub const CLIENT_SESSION_TRACK: u32 = 1 << 23;
/// OK packets (header `0xfe`) replace EOF packets.
pub const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;
/// Result set metadata may be omitted (MySQL 8.0 `resultset_metadata`).
pub const CLIENT_OPTIONAL_RESULTSET_METADATA: u32 = 1 << 25;
/// zstd compression (MySQL 8.0.18+); a compression level follows the handshake response.
pub const CLIENT_ZSTD_COMPRESSION_ALGORITHM: u32 = 1 << 26;
/// Query attributes in COM_QUERY and COM_STMT_EXECUTE (MySQL 8.0.23+).
pub const CLIENT_QUERY_ATTRIBUTES: u32 = 1 << 27;
/// Multi-factor authentication (MySQL 8.0.27+).
pub const MULTI_FACTOR_AUTHENTICATION: u32 = 1 << 28;
/// Capability extension bit (reserved).
pub const CLIENT_CAPABILITY_EXTENSION: u32 = 1 << 29;
/// Verify the server certificate (client-side only).
pub const CLIENT_SSL_VERIFY_SERVER_CERT: u32 = 1 << 30;
/// Keep the connection on an unknown-command error (client-side only).
pub const CLIENT_REMEMBER_OPTIONS: u32 = 1 << 31;

/// MariaDB extended capability: progress reports (ERR packets with code `0xffff`).
pub const MARIADB_CLIENT_PROGRESS: u32 = 1;
/// MariaDB extended capability: COM_MULTI (unused).
pub const MARIADB_CLIENT_COM_MULTI: u32 = 1 << 1;
/// MariaDB extended capability: bulk COM_STMT_BULK_EXECUTE.
pub const MARIADB_CLIENT_STMT_BULK_OPERATIONS: u32 = 1 << 2;
/// MariaDB extended capability: extended column metadata (type names, formats).
pub const MARIADB_CLIENT_EXTENDED_METADATA: u32 = 1 << 3;
/// MariaDB extended capability: metadata cache for prepared statements.
pub const MARIADB_CLIENT_CACHE_METADATA: u32 = 1 << 4;

/// A transaction is active.
pub const SERVER_STATUS_IN_TRANS: u16 = 1;
/// Autocommit mode is on.
pub const SERVER_STATUS_AUTOCOMMIT: u16 = 1 << 1;
/// More result sets follow (multi-statement or stored procedure).
pub const SERVER_MORE_RESULTS_EXISTS: u16 = 1 << 3;
/// The query used no good index.
pub const SERVER_QUERY_NO_GOOD_INDEX_USED: u16 = 1 << 4;
/// The query used no index.
pub const SERVER_QUERY_NO_INDEX_USED: u16 = 1 << 5;
/// A read-only cursor was opened by COM_STMT_EXECUTE (rows via COM_STMT_FETCH).
pub const SERVER_STATUS_CURSOR_EXISTS: u16 = 1 << 6;
/// The last row of an open cursor was sent.
pub const SERVER_STATUS_LAST_ROW_SENT: u16 = 1 << 7;
/// A database was dropped.
pub const SERVER_STATUS_DB_DROPPED: u16 = 1 << 8;
/// `NO_BACKSLASH_ESCAPES` SQL mode is on.
pub const SERVER_STATUS_NO_BACKSLASH_ESCAPES: u16 = 1 << 9;
/// A prepared statement's metadata changed (re-prepare).
pub const SERVER_STATUS_METADATA_CHANGED: u16 = 1 << 10;
/// The query was slow (logged as such).
pub const SERVER_QUERY_WAS_SLOW: u16 = 1 << 11;
/// The result set holds OUT parameters of a stored procedure.
pub const SERVER_PS_OUT_PARAMS: u16 = 1 << 12;
/// The active transaction is read-only.
pub const SERVER_STATUS_IN_TRANS_READONLY: u16 = 1 << 13;
/// Session state changed: the OK packet carries session state information.
pub const SERVER_SESSION_STATE_CHANGED: u16 = 1 << 14;

/// Column flag: `NOT NULL`.
pub const NOT_NULL_FLAG: u16 = 1;
/// Column flag: part of the primary key.
pub const PRI_KEY_FLAG: u16 = 1 << 1;
/// Column flag: part of a unique key.
pub const UNIQUE_KEY_FLAG: u16 = 1 << 2;
/// Column flag: part of a non-unique key.
pub const MULTIPLE_KEY_FLAG: u16 = 1 << 3;
/// Column flag: a BLOB or TEXT column.
pub const BLOB_FLAG: u16 = 1 << 4;
/// Column flag: unsigned numeric column (also bit 7 of the flags byte of parameter types).
pub const UNSIGNED_FLAG: u16 = 1 << 5;
/// Column flag: `ZEROFILL`.
pub const ZEROFILL_FLAG: u16 = 1 << 6;
/// Column flag: binary collation.
pub const BINARY_FLAG: u16 = 1 << 7;
/// Column flag: an ENUM column.
pub const ENUM_FLAG: u16 = 1 << 8;
/// Column flag: `AUTO_INCREMENT`.
pub const AUTO_INCREMENT_FLAG: u16 = 1 << 9;
/// Column flag: a TIMESTAMP column.
pub const TIMESTAMP_FLAG: u16 = 1 << 10;
/// Column flag: a SET column.
pub const SET_FLAG: u16 = 1 << 11;
/// Column flag: no default value.
pub const NO_DEFAULT_VALUE_FLAG: u16 = 1 << 12;
/// Column flag: `ON UPDATE NOW()`.
pub const ON_UPDATE_NOW_FLAG: u16 = 1 << 13;
/// Column flag: numeric column.
pub const NUM_FLAG: u16 = 1 << 15;

/// Character set / collation id `utf8mb4_general_ci`.
pub const CHARSET_UTF8MB4_GENERAL_CI: u8 = 45;
/// Character set / collation id `utf8mb3_general_ci`.
pub const CHARSET_UTF8_GENERAL_CI: u8 = 33;
/// Character set / collation id `binary`.
pub const CHARSET_BINARY: u8 = 63;
