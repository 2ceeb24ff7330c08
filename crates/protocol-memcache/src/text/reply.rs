//! Text protocol replies, byte for byte as memcached sends them.

/// `STORED`
pub const STORED: &[u8] = b"STORED\r\n";
/// `NOT_STORED`
pub const NOT_STORED: &[u8] = b"NOT_STORED\r\n";
/// `EXISTS`
pub const EXISTS: &[u8] = b"EXISTS\r\n";
/// `NOT_FOUND`
pub const NOT_FOUND: &[u8] = b"NOT_FOUND\r\n";
/// `DELETED`
pub const DELETED: &[u8] = b"DELETED\r\n";
/// `TOUCHED`
pub const TOUCHED: &[u8] = b"TOUCHED\r\n";
/// `END`
pub const END: &[u8] = b"END\r\n";
/// `OK`
pub const OK: &[u8] = b"OK\r\n";
/// `RESET`
pub const RESET: &[u8] = b"RESET\r\n";
/// `ERROR`
pub const ERROR: &[u8] = b"ERROR\r\n";
/// Item larger than `-I`.
pub const TOO_LARGE: &[u8] = b"SERVER_ERROR object too large for cache\r\n";
/// No memory for a store.
pub const NO_MEMORY: &[u8] = b"SERVER_ERROR out of memory storing object\r\n";
/// Data block not followed by `\r\n`.
pub const BAD_CHUNK: &[u8] = b"CLIENT_ERROR bad data chunk\r\n";
/// incr/decr of a value that is not a number.
pub const NON_NUMERIC: &[u8] = b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n";

/// Append `msg\r\n`.
pub fn line(out: &mut Vec<u8>, msg: &[u8]) {
    out.extend_from_slice(msg);
    out.extend_from_slice(b"\r\n");
}

/// Append a decimal number and `\r\n` (the incr/decr reply).
pub fn number(out: &mut Vec<u8>, n: u64) {
    let mut b = itoa::Buffer::new();
    line(out, b.format(n).as_bytes());
}

/// Append `VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n`.
pub fn value(out: &mut Vec<u8>, key: &[u8], flags: u32, data: &[u8], cas: Option<u64>) {
    let mut b = itoa::Buffer::new();
    out.extend_from_slice(b"VALUE ");
    out.extend_from_slice(key);
    out.push(b' ');
    out.extend_from_slice(b.format(flags).as_bytes());
    out.push(b' ');
    out.extend_from_slice(b.format(data.len()).as_bytes());
    if let Some(c) = cas {
        out.push(b' ');
        out.extend_from_slice(b.format(c).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// Append `STAT <name> <value>\r\n`.
pub fn stat(out: &mut Vec<u8>, name: &str, value: impl std::fmt::Display) {
    use std::io::Write;
    let _ = write!(out, "STAT {name} {value}\r\n");
}
