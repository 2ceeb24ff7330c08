//! The one error type of the crate.

use std::fmt;

/// Why bytes could not be parsed (or a value could not be composed).
///
/// Parsers never panic: every malformed input ends up here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The payload ended before the named field was complete.
    Truncated(&'static str),
    /// The named field holds a value the protocol does not allow.
    Invalid(&'static str),
    /// The payload does not start with the header byte this parser expects.
    UnexpectedHeader {
        /// What was being parsed (for example `"OK packet"`).
        expected: &'static str,
        /// The first byte found.
        found: u8,
    },
    /// A multi-packet message is larger than the caller's limit.
    TooLarge,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated(what) => write!(f, "truncated {what}"),
            Error::Invalid(what) => write!(f, "invalid {what}"),
            Error::UnexpectedHeader { expected, found } => {
                write!(f, "expected {expected}, found header byte {found:#04x}")
            }
            Error::TooLarge => f.write_str("message larger than the limit"),
        }
    }
}

impl std::error::Error for Error {}
