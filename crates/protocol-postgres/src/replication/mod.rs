//! Logical replication, bytes only: the CopyData payloads of a walsender stream
//! ([`stream`]) and the pgoutput messages inside XLogData ([`pgoutput`]).
//!
//! A replication session (StartupMessage with `replication=database`) speaks the
//! replication command language through simple Query (`IDENTIFY_SYSTEM`,
//! `CREATE_REPLICATION_SLOT s LOGICAL pgoutput`, `START_REPLICATION SLOT s LOGICAL 0/0
//! (proto_version '1', publication_names 'p')`, `DROP_REPLICATION_SLOT s`); after
//! START_REPLICATION the server answers CopyBothResponse and the stream below flows.

pub mod pgoutput;
pub mod stream;
