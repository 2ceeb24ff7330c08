//! Malformed requests and what memcached does about each.

use super::status::Status;

/// What memcached 1.6.18 does with a malformed request (observed on the real server).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Invalid {
    /// Close the connection without a reply.
    Close,
    /// Send the error reply (status with its standard body), then close the connection.
    RespondAndClose(Status),
    /// Send the error reply, discard `skip` bytes counted from the start of the header
    /// (they may not have arrived yet), and go on reading requests.
    RespondAndSkip {
        /// Status of the reply.
        status: Status,
        /// Bytes to discard, header included.
        skip: u64,
    },
}

/// Why a request is malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    /// The magic byte is not [`super::REQUEST_MAGIC`]: close, no reply.
    BadMagic,
    /// Header + extras + key exceed [`super::MAX_HEAD_LEN`]: memcached cannot buffer the key
    /// and closes without a reply.
    HeadTooLarge,
    /// Key + extras are longer than the body: "Unknown command", then close.
    BodyTooShort,
    /// The key is longer than [`super::MAX_KEY_LEN`]: "Invalid arguments", then close
    /// (whatever the opcode, known or not).
    KeyTooLong,
    /// memcached does not implement the opcode: "Unknown command", skip, keep the connection.
    UnknownOpcode,
    /// Extras/key/value lengths do not fit the opcode: "Invalid arguments", then close.
    BadLayout,
}

/// A malformed request: why, what to do, and what to echo in the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ParseError {
    /// Why the request is malformed.
    pub cause: Cause,
    /// What memcached does about it.
    pub action: Invalid,
    /// Raw opcode byte of the request, echoed in the reply (even when unknown).
    pub opcode: u8,
    /// Opaque of the request, echoed in the reply.
    pub opaque: u32,
}

impl ParseError {
    /// Status of the error reply, or `None` if the connection is closed without one.
    pub fn reply_status(&self) -> Option<Status> {
        match self.action {
            Invalid::Close => None,
            Invalid::RespondAndClose(status) | Invalid::RespondAndSkip { status, .. } => Some(status),
        }
    }

    /// True if the connection must be closed (after sending the reply, if any).
    pub fn closes(&self) -> bool {
        !matches!(self.action, Invalid::RespondAndSkip { .. })
    }
}

impl core::fmt::Display for ParseError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let what = match self.cause {
            Cause::BadMagic => "bad magic byte",
            Cause::HeadTooLarge => "extras and key too large to buffer",
            Cause::BodyTooShort => "key and extras longer than the body",
            Cause::KeyTooLong => "key longer than 250 bytes",
            Cause::UnknownOpcode => "unknown opcode",
            Cause::BadLayout => "extras/key/value lengths invalid for the opcode",
        };
        write!(f, "binary request (opcode {:#04x}): {what}", self.opcode)
    }
}

impl std::error::Error for ParseError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary::{parse_response, HEADER_LEN};

    fn err(action: Invalid) -> ParseError {
        ParseError { cause: Cause::BadLayout, action, opcode: 0x30, opaque: 7 }
    }

    #[test]
    fn close_writes_nothing() {
        let e = err(Invalid::Close);
        let mut out = Vec::new();
        e.write_reply(&mut out);
        assert!(out.is_empty());
        assert!(e.closes());
        assert_eq!(e.reply_status(), None);
    }

    #[test]
    fn respond_and_close() {
        let e = err(Invalid::RespondAndClose(Status::InvalidArguments));
        let mut out = Vec::new();
        e.write_reply(&mut out);
        assert!(e.closes());
        let (resp, used) = parse_response(&out).unwrap().unwrap();
        assert_eq!(used, HEADER_LEN + 17);
        assert_eq!(resp.header().opcode, 0x30);
        assert_eq!(resp.opaque(), 7);
        assert_eq!(resp.status(), Some(Status::InvalidArguments));
        assert_eq!(resp.value(), b"Invalid arguments");
    }

    #[test]
    fn respond_and_skip() {
        let e = err(Invalid::RespondAndSkip { status: Status::UnknownCommand, skip: 99 });
        assert!(!e.closes());
        assert_eq!(e.reply_status(), Some(Status::UnknownCommand));
        let mut out = Vec::new();
        e.write_reply(&mut out);
        let (resp, _) = parse_response(&out).unwrap().unwrap();
        assert_eq!(resp.value(), b"Unknown command");
        assert!(e.to_string().contains("0x30"));
    }
}
