//! The classic text protocol (memcached's `proto_text.c`): framing, tokenizing and
//! parsing a command line into a [`Command`]. Replies are in [`reply`].

pub mod auth;
mod command;
mod frame;
pub mod reply;

pub use crate::ascii::{split_keys, ParseError, Tokens, KEY_MAX_LENGTH, MAX_TOKENS};
pub use command::{parse, Command, StoreCmd};
pub use frame::{next_line, Frame};
