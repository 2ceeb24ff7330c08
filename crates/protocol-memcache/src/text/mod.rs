//! The classic text protocol (memcached's `proto_text.c`): framing, tokenizing and
//! parsing a command line into a [`Command`]. Replies are in [`reply`].

pub mod auth;
mod command;
mod frame;
pub mod reply;
mod tokens;

pub use command::{parse, Command, ParseError, StoreCmd};
pub use frame::{next_line, Frame};
pub use tokens::{split_keys, Tokens, MAX_TOKENS};

/// Longest key memcached accepts.
pub const KEY_MAX_LENGTH: usize = 250;
