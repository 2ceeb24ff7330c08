//! ERR packets the proxy itself sends, and the error codes it uses (docs/querycache.md).

use protocol_mysql::{write_packet, ErrPacket, CLIENT_PROTOCOL_41};

/// Sent instead of the greeting when the backend cannot be reached:
/// `ER_CONNECT_TO_FOREIGN_DATA_SOURCE` ("unable to connect to foreign data source"). A
/// server error code on purpose: libmariadb rejects client-range codes (2xxx, e.g.
/// `CR_CONN_HOST_ERROR`) from a server as a malformed packet.
pub const CONNECT_FAILED: u16 = 1429;
/// Sent when the backend connection breaks during a command: `ER_NET_READ_ERROR`
/// (SQL state 08S01, a communication failure for JDBC and ODBC).
pub const BACKEND_LOST: u16 = 1158;
/// `ER_UNKNOWN_COM_ERROR`: a command the proxy refuses (replication, bulk, ...).
pub const UNKNOWN_COMMAND: u16 = 1047;
/// `ER_NOT_SUPPORTED_YET`: a capability the proxy cannot inspect (TLS, compression).
pub const NOT_SUPPORTED: u16 = 1235;
/// `ER_HANDSHAKE_ERROR` ("Bad handshake", 08S01): a login not finished within the connect
/// timeout, or a login packet larger than a server accepts.
pub const BAD_HANDSHAKE: u16 = 1043;
/// `ER_NET_READ_INTERRUPTED` ("Got timeout reading communication packets", 08S01): a
/// half-sent command that stalled past the read timeout.
pub const READ_TIMEOUT: u16 = 1159;

/// The ERR packet that closes a login that failed on the client's side.
pub fn bad_handshake(seq: u8, why: &str) -> Vec<u8> {
    let mut out = Vec::new();
    err_packet(&mut out, seq, BAD_HANDSHAKE, b"08S01", &format!("Bad handshake ({why})"), CLIENT_PROTOCOL_41);
    out
}

/// Appends an ERR packet with sequence id `seq`. Before the handshake (`caps` without
/// `CLIENT_PROTOCOL_41`) no SQL state is written, as servers do.
pub fn err_packet(out: &mut Vec<u8>, seq: u8, code: u16, sql_state: &[u8; 5], message: &str, caps: u32) {
    let mut payload = Vec::with_capacity(message.len() + 9);
    ErrPacket { code, sql_state: Some(*sql_state), message: message.as_bytes() }.write(&mut payload, caps);
    write_packet(out, seq, &payload);
}

/// An ERR packet for a client that finished the handshake (4.1 protocol, with SQL state).
pub fn err41(seq: u8, code: u16, sql_state: &[u8; 5], message: &str) -> Vec<u8> {
    let mut out = Vec::new();
    err_packet(&mut out, seq, code, sql_state, message, CLIENT_PROTOCOL_41);
    out
}
