//! `sqlcached` as a library: [`server::Server::start`] runs a whole server (memcached
//! listeners, disk tier, SQL containers, MySQL proxy, metrics) inside the calling process
//! and returns a [`server::Handle`] that stops it; the `sqlcached` binary (`main.rs`) only
//! parses the command line, does the process chores (daemon, signals, privileges) and
//! waits. In-process tests start servers the same way (`tests/`, see TESTING.md).
//!
//! Data flows one way: socket ([`listen`], [`workers`], [`conn`]) → protocol front end
//! ([`text`], [`meta`], [`binary`]: parse, map to an engine operation) → [`route`] (where
//! the key lives) → the one execution call ([`exec`]: the memory engine and its storage
//! tier now, or a SQL container, now or later through [`pending`]) → one composer per
//! protocol ([`compose`]) over the same [`outcome`] types.

#![warn(missing_docs)]

/// The memcached version sqlcached answers `version` and `stats` with: the one whose
/// behaviour it reproduces.
pub const VERSION: &str = "1.6.18";

mod admin;
mod auth;
mod binary;
pub mod check;
mod compose;
pub use config;
mod conn;
mod containers;
mod ctx;
mod detail;
mod durable;
mod exec;
mod feeds;
mod invalidate;
mod listen;
pub mod logging;
pub mod memory;
mod meta;
mod outcome;
mod pending;
mod persistence;
mod rbuf;
mod rotate;
mod route;
mod sasl;
pub mod server;
mod session;
mod shared;
mod slab;
mod stats;
mod text;
mod timing;
mod tls;
mod udp;
pub mod unix;
mod uring;
mod workers;
