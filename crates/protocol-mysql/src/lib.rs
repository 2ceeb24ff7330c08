//! MySQL / MariaDB client/server protocol: parse and compose packets.
//!
//! This crate only turns bytes into typed packets and typed packets into bytes; it
//! performs no I/O, holds no connection state, contains no `unsafe` and never panics on
//! any input (malformed bytes are an [`Error`]). Parsers borrow from the caller's buffer;
//! composers append to a `Vec<u8>`. It is the foundation of a query-cache proxy that
//! speaks the wire protocol to clients and to MariaDB/MySQL servers.
//!
//! The contract is MySQL's "Client/Server Protocol" documentation (MySQL 8.0/8.4) and
//! MariaDB's "Clients & Communication Protocols" pages. Modules by concern:
//! - [`packet`]: framing (3-byte length + sequence id), split payloads of 16 MiB or more;
//! - [`lenenc`]: length-encoded integers and strings;
//! - [`flags`]: `CLIENT_*` capabilities, `SERVER_*` status flags, column flags;
//! - [`handshake`]: the server's Initial Handshake v10, capability rewriting;
//! - [`handshake_response`]: HandshakeResponse41 and SSLRequest;
//! - [`auth`]: AuthSwitchRequest, AuthMoreData (caching_sha2_password markers);
//! - [`response`]: OK / ERR / EOF packets, session state tracking;
//! - [`command`]: client commands (COM_QUERY, COM_STMT_EXECUTE, ...);
//! - [`resultset`]: column count, column definitions, text and binary rows, COM_STMT_PREPARE_OK;
//! - [`value`]: column types and binary-protocol values.
//!
//! Payloads given to parsers are packet payloads (without the 4-byte header); most parsers
//! take the negotiated capabilities (client ∩ server) because fields depend on them.
//!
//! ```
//! use protocol_mysql::{parse_packet, write_packet, Command, CLIENT_PROTOCOL_41};
//!
//! let mut payload = Vec::new();
//! Command::Query(protocol_mysql::Query { attributes: vec![], query: b"SELECT 1" })
//!     .write(&mut payload, CLIENT_PROTOCOL_41);
//! let mut wire = Vec::new();
//! write_packet(&mut wire, 0, &payload);
//!
//! let (packet, used) = parse_packet(&wire).unwrap().unwrap();
//! assert_eq!((packet.seq, used), (0, wire.len()));
//! match Command::parse(packet.payload, CLIENT_PROTOCOL_41).unwrap() {
//!     Command::Query(q) => assert_eq!(q.query, b"SELECT 1"),
//!     other => panic!("{other:?}"),
//! }
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod auth;
pub mod command;
mod error;
pub mod flags;
pub mod handshake;
pub mod handshake_response;
pub mod lenenc;
pub mod packet;
mod reader;
pub mod reply;
pub mod response;
pub mod resultset;
pub mod value;

pub use auth::{AuthPacket, AuthSwitchRequest, CachingSha2Status};
pub use command::{BoundParam, ChangeUser, Command, ExecuteParams, Query, StmtExecute};
pub use error::Error;
pub use flags::*;
pub use handshake::{rewrite_handshake_capabilities, rewrite_handshake_mariadb_capabilities, HandshakeV10};
pub use handshake_response::{
    is_ssl_request, parse_client_handshake, rewrite_response_capabilities, ClientHandshake, HandshakeResponse41,
    SslRequest,
};
pub use lenenc::{parse_lenenc_int, parse_lenenc_str, write_lenenc_int, write_lenenc_str};
pub use packet::{parse_message, parse_packet, write_packet, Message, Packet, MAX_PACKET_PAYLOAD};
pub use response::{is_eof_packet, is_err_packet, EofPacket, ErrPacket, OkPacket, ResponseKind, SessionStateChange};
pub use resultset::{
    parse_binary_row, parse_text_row, parse_text_row_into, write_binary_row, write_column_count, write_text_row,
    ColumnDefinition, QueryResponse, StmtPrepareOk,
};
pub use value::{parse_binary_value, write_binary_value, ColumnType, DateTime, FieldType, Time, Value};
