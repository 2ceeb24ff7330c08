//! sqlcached's binlog follower: reads a MariaDB or MySQL binlog as a replica (row format)
//! and reports every change, as it arrives, to a callback, in the words of the SQL-source
//! vocabulary (`sql_source::Change`); its [`Follower`] is a `sql_source::Follow`.
//!
//! ```no_run
//! let follower = binlog::Follower::spawn(
//!     binlog::Config {
//!         backend: "127.0.0.1:3306".into(),
//!         user: "repl".into(),
//!         password: "secret".into(),
//!         server_id: 23633,
//!         start: None,
//!     },
//!     |change| println!("{change:?}"),
//! );
//! println!("{:?}", follower.stats());
//! ```
//!
//! The stream starts at the current end of the binlog (or after a saved `Stats::resume`). `Change::Connected` is reported once
//! events flow; when the stream breaks, `Change::Disconnected`, then the follower reconnects
//! (backoff up to 1 s) and resumes after the last transaction it reported (or, if the server
//! no longer has that binlog file, at the current end after `Change::All`).
//! Rows events are decoded with the column names and primary key of the TABLE_MAP event's
//! optional metadata (`binlog_row_metadata=FULL`), else from information_schema.

#![warn(missing_docs)]

pub mod account;
mod ddl;
mod decode;
mod follower;
mod head;
pub mod health;
mod images;
mod meta;
mod position;
mod session;
mod state;
mod tables;
mod template;
#[cfg(test)]
mod test_rng;

pub use follower::{subscribe, Follower};
pub use head::PROBE;
pub use meta::load_effects;
pub use position::Position;
pub use sql_source::{Change, RowsKind, TableSchema, Value};
pub use state::{Config, Stats};
pub use template::render_key;
