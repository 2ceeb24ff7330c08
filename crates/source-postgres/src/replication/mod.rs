//! A small async logical replication client: connect as `replication=database`, check and
//! create the publication and the slot, then stream decoded pgoutput messages, answering
//! keepalives and reporting the confirmed position.
//!
//! ```no_run
//! # async fn run() -> Result<(), source_postgres::Error> {
//! use source_postgres::replication::{Event, Publication, ReplicationClient, StartOptions};
//! use source_postgres::{Config, Lsn};
//! use protocol_postgres::LogicalMessage;
//!
//! let cfg = Config::from_url("postgres://repl:secret@127.0.0.1:5432/shop?sslmode=require")?;
//! let mut client = ReplicationClient::connect(&cfg).await?;
//! if !client.publication_exists("sqlcached").await? {
//!     client.create_publication("sqlcached", Publication::Tables(&[("public", "users")])).await?;
//! }
//! if client.slot("sqlcached").await?.is_none() {
//!     client.create_slot("sqlcached", false).await?;
//! }
//! let mut stream = client.start("sqlcached", Lsn::INVALID, StartOptions::new(&["sqlcached"])).await?;
//! loop {
//!     if let Event::Message { message: LogicalMessage::Commit(c), .. } = stream.recv().await? {
//!         // ... once the transaction's effects are applied:
//!         stream.confirm(c.end_lsn);
//!     }
//! }
//! # }
//! ```

mod client;
mod stream;

pub use client::{first_value, Publication, ReplicationClient, SlotInfo, SlotState, SystemInfo};
pub use stream::{Event, ReplicationStream, StartOptions, StreamStats};
