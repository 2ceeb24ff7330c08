//! The one error type of the crate.

use std::fmt;

/// Why bytes could not be parsed.
///
/// Parsers never panic: every malformed input ends up here. A proxy answers most of these
/// as PostgreSQL does (`08P01`, protocol violation) and closes the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The message ended before the named field was complete.
    Truncated(&'static str),
    /// The named field holds a value the protocol does not allow.
    Invalid(&'static str),
    /// Bytes were left after the last field of the named message.
    TrailingBytes(&'static str),
    /// The message type byte is not one this side of the protocol sends.
    UnknownTag {
        /// Which side's messages were expected (`"frontend"`, `"backend"`, `"pgoutput"`, ...).
        side: &'static str,
        /// The type byte found.
        tag: u8,
    },
    /// A length word below the smallest a message can have (4, or 8 for a startup packet).
    BadLength {
        /// The type byte (0 for an untyped startup packet).
        tag: u8,
        /// The length word as sent.
        len: u32,
    },
    /// A length word above the limit for this kind of message.
    TooLarge {
        /// The type byte (0 for an untyped startup packet).
        tag: u8,
        /// The length word as sent.
        len: u32,
        /// The largest length accepted for it.
        max: u32,
    },
    /// A message this crate recognises but does not decode (named).
    Unsupported(&'static str),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated(what) => write!(f, "truncated {what}"),
            Error::Invalid(what) => write!(f, "invalid {what}"),
            Error::TrailingBytes(what) => write!(f, "bytes after the end of {what}"),
            Error::UnknownTag { side, tag } => write!(f, "unknown {side} message type {}", Tag(*tag)),
            Error::BadLength { tag, len } => write!(f, "invalid length {len} of message {}", Tag(*tag)),
            Error::TooLarge { tag, len, max } => {
                write!(f, "message {} of length {len} is larger than the limit {max}", Tag(*tag))
            }
            Error::Unsupported(what) => write!(f, "unsupported {what}"),
        }
    }
}

impl std::error::Error for Error {}

/// A type byte shown as PostgreSQL's documentation names it (`'Q'`), or in hex.
struct Tag(u8);

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => f.write_str("(startup packet)"),
            b if b.is_ascii_graphic() => write!(f, "'{}'", b as char),
            b => write!(f, "{b:#04x}"),
        }
    }
}
