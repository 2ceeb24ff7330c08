//! The persistent storage tier below sqlcached's memory tier (`--data-dir`).
//!
//! Every change the engine makes is handed to [`DiskTier`] (it implements
//! `engine::tier::Tier`) and queued in memory ([`pending`]); a committer thread
//! ([`committer`]) writes what has queued up as one atomic fjall batch and, in `sync`
//! mode, fsyncs once for the whole batch (group commit) before connections waiting on it
//! may acknowledge. In `async` mode it fsyncs at least every flush interval.
//!
//! Reads that miss memory come here: first the queue (newest state of a key not yet
//! committed), then fjall. Records carry a CRC ([`record`]); a damaged one is reported
//! and treated as a miss, never served. One server per directory ([`lock`]).

#![warn(missing_docs)]

pub mod checkpoint;
pub mod committer;
mod fault;
mod ingest;
pub mod lock;
pub mod pending;
pub mod record;
mod shared;
mod store;
mod tier;
pub mod wal;

pub use shared::{Durability, Options};
pub use store::OpenReport;
pub use tier::DiskTier;
