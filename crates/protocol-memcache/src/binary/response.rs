//! Composing responses: every function appends one complete frame (or a header) to `out`.
//!
//! Slices longer than their header field can describe (extras > 255, key > 65535 bytes,
//! body > 4 GiB) are truncated so that the frame always stays well-formed.

use super::error::ParseError;
use super::header::{fit, join, HEADER_LEN, RESPONSE_MAGIC};
use super::opcode::Opcode;
use super::status::Status;

// The reply to a malformed request lives with the other replies (`error.rs`, which `header.rs`
// uses, would otherwise import this file, which uses `header.rs`).
impl ParseError {
    /// Appends the error reply memcached sends (nothing for [`super::Invalid::Close`]).
    pub fn write_reply(&self, out: &mut Vec<u8>) {
        if let Some(status) = self.reply_status() {
            write_error(out, self.opcode, status, self.opaque);
        }
    }
}

/// Appends a response header only, for a body of `extras_len + key_len + value_len` bytes
/// the caller appends (or sends) itself, e.g. to write a large value without copying it.
#[allow(clippy::too_many_arguments)]
pub fn write_response_header(
    out: &mut Vec<u8>,
    opcode: impl Into<u8>,
    status: Status,
    opaque: u32,
    cas: u64,
    extras_len: u8,
    key_len: u16,
    value_len: u32,
) {
    let body = value_len.saturating_add(u32::from(extras_len) + u32::from(key_len));
    out.extend_from_slice(&join(
        RESPONSE_MAGIC,
        opcode.into(),
        key_len,
        extras_len,
        0,
        status.as_u16(),
        body,
        opaque,
        cas,
    ));
}

/// Appends a complete response: header, extras, key, value.
#[allow(clippy::too_many_arguments)]
pub fn write_response(
    out: &mut Vec<u8>,
    opcode: impl Into<u8>,
    status: Status,
    opaque: u32,
    cas: u64,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
) {
    let (e, k, v) = fit(extras.len(), key.len(), value.len());
    let (extras, key, value) = (&extras[..usize::from(e)], &key[..usize::from(k)], &value[..v]);
    out.reserve(HEADER_LEN + extras.len() + key.len() + value.len());
    // `fit` guarantees v fits in u32 together with e and k.
    write_response_header(out, opcode, status, opaque, cas, e, k, v as u32);
    out.extend_from_slice(extras);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
}

/// Appends an empty success reply (store, delete, append, flush, noop, quit...); `cas` is
/// the item's new CAS after a store, 0 otherwise.
pub fn write_ok(out: &mut Vec<u8>, opcode: Opcode, opaque: u32, cas: u64) {
    write_response_header(out, opcode, Status::NoError, opaque, cas, 0, 0, 0);
}

/// Appends an error reply with memcached's standard body for `status` (CAS 0, no key).
///
/// `opcode` is a raw byte so that unknown opcodes can be echoed. For a get miss use
/// [`write_get_miss`], which differs for the `K` variants.
pub fn write_error(out: &mut Vec<u8>, opcode: impl Into<u8>, status: Status, opaque: u32) {
    write_error_message(out, opcode, status, opaque, status.message().as_bytes());
}

/// Appends an error reply with a custom body, e.g.
/// [`super::OUT_OF_MEMORY_STORE_MESSAGE`] for a store that cannot allocate its item.
pub fn write_error_message(out: &mut Vec<u8>, opcode: impl Into<u8>, status: Status, opaque: u32, message: &[u8]) {
    write_response(out, opcode, status, opaque, 0, &[], &[], message);
}

/// Appends the header, flags extras and (for `K` opcodes) key of a get hit, leaving the
/// `value_len` value bytes to the caller.
///
/// Matches memcached: `GetK`/`GetKQ`/`GatK`/`GatKQ` echo `key`, the others ignore it;
/// `Touch` replies with the flags only, so pass `value_len` 0 for it.
pub fn write_get_hit_header(
    out: &mut Vec<u8>,
    opcode: Opcode,
    opaque: u32,
    cas: u64,
    flags: u32,
    key: &[u8],
    value_len: u32,
) {
    let key = if opcode.returns_key() { key } else { &[] };
    let (_, k, v) = fit(4, key.len(), value_len as usize);
    let key = &key[..usize::from(k)];
    write_response_header(out, opcode, Status::NoError, opaque, cas, 4, k, v as u32);
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(key);
}

/// Appends a complete get/gat/touch hit: flags extras, key for the `K` opcodes, value
/// (none for `Touch`, as memcached sends).
pub fn write_get_hit(out: &mut Vec<u8>, opcode: Opcode, opaque: u32, cas: u64, flags: u32, key: &[u8], value: &[u8]) {
    let value = if opcode == Opcode::Touch { &[] } else { value };
    let key_len = if opcode.returns_key() { key.len() } else { 0 };
    let (_, _, v) = fit(4, key_len, value.len());
    let value = &value[..v];
    out.reserve(HEADER_LEN + 4 + key_len + value.len());
    write_get_hit_header(out, opcode, opaque, cas, flags, key, v as u32);
    out.extend_from_slice(value);
}

/// Appends a get/gat/touch miss as memcached does: for `GetK`/`GetKQ`/`GatK`/`GatKQ`
/// status "Key not found" with the key and no message; otherwise the "Not found" error.
pub fn write_get_miss(out: &mut Vec<u8>, opcode: Opcode, opaque: u32, key: &[u8]) {
    if opcode.returns_key() {
        write_response(out, opcode, Status::KeyNotFound, opaque, 0, &[], key, &[]);
    } else {
        write_error(out, opcode, Status::KeyNotFound, opaque);
    }
}

/// Appends an incr/decr success: the new value as 8 big-endian bytes.
pub fn write_counter(out: &mut Vec<u8>, opcode: Opcode, opaque: u32, cas: u64, value: u64) {
    write_response(out, opcode, Status::NoError, opaque, cas, &[], &[], &value.to_be_bytes());
}

/// Appends one statistic: key = name, value = ASCII value.
pub fn write_stat(out: &mut Vec<u8>, opaque: u32, name: &[u8], value: &[u8]) {
    write_response(out, Opcode::Stat, Status::NoError, opaque, 0, &[], name, value);
}

/// Appends the empty reply that ends a list of statistics.
pub fn write_stat_end(out: &mut Vec<u8>, opaque: u32) {
    write_ok(out, Opcode::Stat, opaque, 0);
}

/// Appends the `Version` reply; memcached 1.6.18 sends `b"1.6.18"`.
pub fn write_version(out: &mut Vec<u8>, opaque: u32, version: &[u8]) {
    write_response(out, Opcode::Version, Status::NoError, opaque, 0, &[], &[], version);
}
