//! The persistent storage tier below sqlcached's memory tier (`--data-dir`).
//!
//! Every change the engine makes is handed to [`DiskTier`] (it implements
//! `engine::tier::Tier`) as one [`entry`] (key and record in one allocation), queued and
//! staged in memory ([`pending`], [`states`]); the committer ([`committer`], or in
//! `async` mode the connection about to wait) appends what has queued up to the
//! write-ahead log ([`wal`]) as one frame and, in `sync` mode, fsyncs once for the whole
//! batch (group commit) before connections waiting on it may acknowledge. In `async`
//! mode the log is fsynced at least every flush interval. Large sets of staged states
//! are written into fjall's tables by the ingest thread (`ingest.rs`), and the log files
//! they came from are deleted.
//!
//! Reads that miss memory come here: first the staged and frozen states (the newest
//! state of a key not yet in fjall), then fjall. Records carry a CRC ([`record`]); a
//! damaged one is reported and treated as a miss, never served. One server per
//! directory ([`lock`]).

#![warn(missing_docs)]

pub mod ack;
pub mod checkpoint;
pub mod committer;
pub mod entry;
mod fault;
mod fsinfo;
mod ingest;
pub mod lock;
mod pace;
pub mod pending;
pub mod record;
mod shared;
mod spare;
pub mod states;
mod store;
mod tier;
pub mod wal;

pub use shared::{Durability, Options, Shares, STAGE_MAX};
pub use store::OpenReport;
pub use tier::DiskTier;
