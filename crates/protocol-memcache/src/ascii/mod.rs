//! What the classic text commands ([`crate::text`]) and the meta commands ([`crate::meta`])
//! share, one command line of memcached's ASCII protocol: its tokens, the error a refused
//! line gets, and the key length limit.

mod tokens;

pub use tokens::{split_keys, Tokens, MAX_TOKENS};

/// Longest key memcached accepts.
pub const KEY_MAX_LENGTH: usize = 250;

/// A command line memcached refuses, with the reply it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseError {
    /// The reply line without `\r\n`.
    pub msg: &'static str,
    /// `noreply` was given: classic commands then send nothing, even for errors.
    pub silent: bool,
    /// Bytes of data block to discard after replying (meta set errors).
    pub swallow: usize,
    /// Close the connection instead of replying.
    pub close: bool,
}

impl ParseError {
    /// An error reply.
    pub const fn reply(msg: &'static str) -> ParseError {
        ParseError { msg, silent: false, swallow: 0, close: false }
    }

    /// An error reply, suppressed if `silent`.
    pub const fn maybe_silent(msg: &'static str, silent: bool) -> ParseError {
        ParseError { msg, silent, swallow: 0, close: false }
    }
}
