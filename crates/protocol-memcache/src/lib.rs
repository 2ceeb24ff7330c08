//! memcached wire protocols: parse requests and compose replies.
//!
//! This crate only turns bytes into requests and replies into bytes; it performs no I/O
//! and holds no state. Each protocol has its own module, mirroring memcached's
//! `proto_text.c` and `proto_bin.c`:
//! - [`text`]: the classic ASCII protocol (`get`, `set`, ...),
//! - [`meta`]: the meta commands (`mg`, `ms`, `md`, `ma`, `mn`, `me`),
//! - [`binary`]: the binary protocol (24-byte headers, quiet variants),
//! - [`number`]: memcached's number parsing, quirks included.
//!
//! The contract is memcached 1.6.18's `protocol.txt` and `protocol-binary.txt`.

#![warn(missing_docs)]

pub mod ascii;
pub mod binary;
pub mod meta;
pub mod number;
pub mod text;
