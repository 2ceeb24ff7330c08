//! Framing: where one message ends and the next begins.
//!
//! After the startup phase every message in both directions is a type byte, an int32
//! length that counts itself and the body (not the type byte), then the body. The startup
//! phase's packets (StartupMessage, SSLRequest, GSSENCRequest, CancelRequest) have no type
//! byte: see [`parse_startup_frame`].
//!
//! A reader keeps bytes in a buffer and calls [`parse_frame`] on it: `Ok(None)` means the
//! message is not complete yet (read more: [`frame_len`] tells how much once the header is
//! in), `Ok(Some((frame, used)))` hands out one message, and an error means the stream
//! cannot be trusted any more (a length below 4, or above the limit for this type of
//! message: PostgreSQL closes the connection then, and so should a proxy).
//!
//! The limits are the ones the peers enforce: the server accepts a frontend message of at
//! most [`SMALL_MESSAGE_LIMIT`] bytes except Query, FunctionCall, Parse, Bind and CopyData
//! ([`LARGE_MESSAGE_LIMIT`]), and an authentication message ('p') of at most
//! [`AUTH_MESSAGE_LIMIT`]; libpq accepts a backend message over 30,000 bytes only for
//! RowDescription, DataRow, CopyData, FunctionCallResponse, ErrorResponse, NoticeResponse
//! and NotificationResponse.

use crate::error::Error;

/// The type byte and length word of a typed message.
pub const HEADER_LEN: usize = 5;

/// PostgreSQL's `PQ_SMALL_MESSAGE_LIMIT`: the longest frontend message of the "small" types.
pub const SMALL_MESSAGE_LIMIT: u32 = 10_000;

/// PostgreSQL's `PQ_LARGE_MESSAGE_LIMIT` (`MaxAllocSize - 1`): the longest message at all.
pub const LARGE_MESSAGE_LIMIT: u32 = 0x3fff_fffe;

/// PostgreSQL's `PG_MAX_AUTH_TOKEN_LENGTH`: the longest password / SASL message.
pub const AUTH_MESSAGE_LIMIT: u32 = 65_535;

/// libpq's limit for backend messages of the types that are never long.
pub const SMALL_BACKEND_LIMIT: u32 = 30_000;

/// PostgreSQL's `MAX_STARTUP_PACKET_LENGTH`: the longest startup packet body (after the
/// length word).
pub const MAX_STARTUP_PACKET_LENGTH: u32 = 10_000;

/// One typed message: its type byte and its body (without the length word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The message type byte (`b'Q'` for Query, ...).
    pub tag: u8,
    /// The body after the length word.
    pub body: &'a [u8],
}

/// The largest length word the server accepts for a frontend message of type `tag`
/// (PostgreSQL's `SocketBackend`); 0 for a type byte the server refuses outright.
pub fn frontend_limit(tag: u8) -> u32 {
    match tag {
        b'Q' | b'F' | b'P' | b'B' | b'd' => LARGE_MESSAGE_LIMIT,
        b'X' | b'C' | b'D' | b'E' | b'H' | b'S' | b'c' | b'f' => SMALL_MESSAGE_LIMIT,
        b'p' => AUTH_MESSAGE_LIMIT,
        _ => 0,
    }
}

/// The largest length word a client (libpq) accepts for a backend message of type `tag`.
pub fn backend_limit(tag: u8) -> u32 {
    match tag {
        b'T' | b'D' | b'd' | b'V' | b'E' | b'N' | b'A' => LARGE_MESSAGE_LIMIT,
        _ => SMALL_BACKEND_LIMIT,
    }
}

/// The total size (type byte included) of the message at the start of `buf`, once its
/// header is in: `Ok(None)` while fewer than 5 bytes are buffered. Checks the length word
/// against `limit(tag)`.
pub fn frame_len(buf: &[u8], limit: impl Fn(u8) -> u32) -> Result<Option<usize>, Error> {
    let Some(head) = buf.first_chunk::<HEADER_LEN>() else { return Ok(None) };
    let tag = head[0];
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]);
    if len < 4 {
        return Err(Error::BadLength { tag, len });
    }
    let max = limit(tag);
    if len > max {
        if max == 0 {
            return Err(Error::UnknownTag { side: "frontend", tag });
        }
        return Err(Error::TooLarge { tag, len, max });
    }
    Ok(Some(len as usize + 1))
}

/// One complete typed message from the start of `buf`, with the bytes it used; `Ok(None)`
/// if `buf` holds only part of it. `max` bounds the length word for every type.
pub fn parse_frame(buf: &[u8], max: u32) -> Result<Option<(Frame<'_>, usize)>, Error> {
    parse_frame_with(buf, |_| max)
}

/// [`parse_frame`] with the server's per-type limits for messages from clients.
pub fn parse_frontend_frame(buf: &[u8]) -> Result<Option<(Frame<'_>, usize)>, Error> {
    parse_frame_with(buf, frontend_limit)
}

/// [`parse_frame`] with libpq's per-type limits for messages from servers.
pub fn parse_backend_frame(buf: &[u8]) -> Result<Option<(Frame<'_>, usize)>, Error> {
    parse_frame_with(buf, backend_limit)
}

/// [`parse_frame`] with a limit chosen per type byte.
pub fn parse_frame_with(buf: &[u8], limit: impl Fn(u8) -> u32) -> Result<Option<(Frame<'_>, usize)>, Error> {
    let Some(total) = frame_len(buf, limit)? else { return Ok(None) };
    match buf.get(HEADER_LEN..total) {
        Some(body) => Ok(Some((Frame { tag: buf[0], body }, total))),
        None => Ok(None),
    }
}

/// Appends one typed message.
pub fn write_frame(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    out.push(tag);
    out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    out.extend_from_slice(body);
}

/// One complete startup-phase packet (no type byte) from the start of `buf`: its body after
/// the length word (starting with the protocol version or request code), with the bytes it
/// used; `Ok(None)` if incomplete. As the server, refuses a length word below 8 or a body
/// over [`MAX_STARTUP_PACKET_LENGTH`].
pub fn parse_startup_frame(buf: &[u8]) -> Result<Option<(&[u8], usize)>, Error> {
    let Some(head) = buf.first_chunk::<4>() else { return Ok(None) };
    let len = u32::from_be_bytes(*head);
    if len < 8 {
        return Err(Error::BadLength { tag: 0, len });
    }
    if len - 4 > MAX_STARTUP_PACKET_LENGTH {
        return Err(Error::TooLarge { tag: 0, len, max: MAX_STARTUP_PACKET_LENGTH + 4 });
    }
    match buf.get(4..len as usize) {
        Some(body) => Ok(Some((body, len as usize))),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_complete_and_refused() {
        let mut wire = Vec::new();
        write_frame(&mut wire, b'Q', b"SELECT 1\0");
        for cut in 0..wire.len() {
            assert_eq!(parse_frontend_frame(&wire[..cut]).unwrap(), None, "cut at {cut}");
        }
        assert_eq!(frame_len(&wire[..5], frontend_limit).unwrap(), Some(wire.len()));
        let (f, used) = parse_frontend_frame(&wire).unwrap().unwrap();
        assert_eq!((f.tag, f.body, used), (b'Q', &b"SELECT 1\0"[..], wire.len()));

        assert_eq!(parse_frame(b"Q\0\0\0\x03", 100), Err(Error::BadLength { tag: b'Q', len: 3 }));
        // A Sync claiming 20,000 bytes is refused before they arrive.
        assert_eq!(
            parse_frontend_frame(b"S\0\0\x4e\x20"),
            Err(Error::TooLarge { tag: b'S', len: 20_000, max: SMALL_MESSAGE_LIMIT })
        );
        assert_eq!(parse_frontend_frame(b"Z\0\0\0\x04"), Err(Error::UnknownTag { side: "frontend", tag: b'Z' }));
        assert!(parse_backend_frame(b"Z\0\0\x75\x31").is_err()); // 30,001 > libpq's limit
        assert!(parse_backend_frame(b"D\0\0\x75\x31").unwrap().is_none()); // long type: wait
    }

    #[test]
    fn startup_bounds() {
        assert_eq!(parse_startup_frame(b"\0\0\0\x07"), Err(Error::BadLength { tag: 0, len: 7 }));
        assert!(matches!(parse_startup_frame(b"\0\0\x27\x15"), Err(Error::TooLarge { .. }))); // 10,005
        assert!(parse_startup_frame(b"\0\0\x27\x14").unwrap().is_none()); // 10,004: wait for it
        let ssl = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];
        assert_eq!(parse_startup_frame(&ssl).unwrap(), Some((&ssl[4..], 8)));
    }
}
