//! The in-memory item store behind every sqlcached front end.
//!
//! Data flows one way: a protocol front end parses a request, calls one of the
//! operations in [`ops`] on an [`Engine`], and composes the reply from what the
//! operation returns. The engine never sees protocol bytes.
//!
//! - [`Engine`] ([`store`]): the key space split into shards, each behind its own lock,
//!   so there is no global lock on the get/set path.
//! - [`shard`]: one shard: a hash table of record locations over its segments.
//! - [`segments`]: where items live: fixed-size segments of packed records, in two queues.
//! - [`hold`]: keys an invalidation holds: fills refused for a short while.
//! - [`eviction`]: S3-FIFO over segments, a scan-resistant policy: new items enter a small
//!   probation queue and only items that are used again reach the main queue.
//! - [`clock`]: memcached's relative clock and its TTL rules.
//! - [`item`]: the stored item and its memory cost.
//! - [`budget`]: `-m` as one budget shared by items, the disk tier's caches and the
//!   other caches.
//! - [`tier`]: the trait a storage tier below memory implements.
//! - [`stats`]: counters with memcached's names.
//! - [`errors`]: error text for log lines and replies (an error as its innermost cause).
//! - [`latency`]: lock-free latency histograms for the metrics endpoint.
//! - [`backoff`]: pausing a cache that does not pay back, longer each time (query cache,
//!   `caching` containers).

#![warn(missing_docs)]

pub mod backoff;
pub mod budget;
pub mod bufpool;
pub mod clock;
pub mod config;
pub mod errors;
pub mod eviction;
pub mod hold;
pub mod item;
pub mod latency;
pub mod ops;
pub mod segments;
pub mod shard;
pub mod stats;
pub mod store;
pub mod tier;

pub use clock::Clock;
pub use config::{EngineConfig, ItemLimit};
pub use item::Item;
pub use store::{Access, Engine};
pub use tier::Receipt;
