//! The memcached binary protocol (`protocol_binary.h`, `proto_bin.c` of memcached 1.6.18).
//!
//! Bytes only: parsing borrows from the caller's buffer and never allocates or panics;
//! composing appends to a `Vec<u8>`. Every rule below was checked against memcached 1.6.18.
//!
//! # Reading requests
//! [`parse_request`] returns `Ok(None)` until a whole request is buffered, then the
//! [`Request`] and the number of bytes it used. To handle a large value without buffering
//! it, call [`parse_header`] and [`RequestHeader::check`] first: both need only the 24
//! header bytes, and [`RequestHeader::value_len`] / [`RequestHeader::frame_len`] tell how
//! much follows.
//!
//! A malformed request is a [`ParseError`] whose [`Invalid`] action says what memcached
//! does: close silently (bad magic), reply and close (bad lengths: "Invalid arguments";
//! key + extras longer than the body: "Unknown command"), or reply "Unknown command" and
//! skip the frame (unknown opcode). [`ParseError::write_reply`] writes the reply.
//!
//! ```
//! use protocol_memcache::binary::{parse_request, write_get_miss, write_request, Opcode};
//!
//! let mut wire = Vec::new();
//! write_request(&mut wire, Opcode::GetK, 7, 0, &[], b"foo", &[]);
//! let (req, used) = parse_request(&wire).unwrap().unwrap();
//! assert_eq!((req.opcode(), req.key(), used), (Opcode::GetK, &b"foo"[..], wire.len()));
//!
//! let mut out = Vec::new();
//! write_get_miss(&mut out, req.opcode(), req.opaque(), req.key());
//! assert_eq!(&out[24..], b"foo"); // GetK misses echo the key, without "Not found"
//! ```
//!
//! # Replying
//! The reply echoes the request's opcode byte (quiet ones included) and opaque. Quiet
//! commands skip some replies: see [`Opcode::suppresses_reply`]. Error bodies are
//! [`Status::message`]. The server-side quirks worth knowing:
//! - a store whose value is too large gets "Too large." and memcached skips the value;
//!   but if [`RequestHeader::value_len`] is 2^31 or more (negative as memcached's `int`)
//!   it replies the same *without* skipping, so the value bytes are read as requests;
//! - a store that cannot allocate answers [`Status::OutOfMemory`] with
//!   [`OUT_OF_MEMORY_STORE_MESSAGE`];
//! - `Touch` hits reply with the flags extras and no value; `Gat*` hits like `Get*` hits;
//! - the first byte of a connection picks the protocol (0x80 = binary); this module only
//!   handles connections that picked binary.

#![deny(missing_docs)]

mod client;
mod error;
mod header;
mod opcode;
mod request;
mod response;
pub mod sasl;
mod status;
mod validate;

#[cfg(test)]
mod tests;

pub use client::{parse_response, write_request, Response, ResponseError};
pub use error::{Cause, Invalid, ParseError};
pub use header::{
    parse_header, RequestHeader, ResponseHeader, HEADER_LEN, MAX_HEAD_LEN, MAX_KEY_LEN, REQUEST_MAGIC, RESPONSE_MAGIC,
};
pub use opcode::Opcode;
pub use request::{parse_request, CounterExtras, Request, StoreExtras};
pub use response::{
    write_counter, write_error, write_error_message, write_get_hit, write_get_hit_header, write_get_miss, write_ok,
    write_response, write_response_header, write_stat, write_stat_end, write_version,
};
pub use status::{Status, OUT_OF_MEMORY_STORE_MESSAGE};
