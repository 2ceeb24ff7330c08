//! The fixed 24-byte request and response headers.

use super::error::{Cause, Invalid, ParseError};
use super::opcode::Opcode;
use super::status::Status;

/// Length of every header, request or response.
pub const HEADER_LEN: usize = 24;

/// Magic byte of a request (client to server).
pub const REQUEST_MAGIC: u8 = 0x80;

/// Magic byte of a response (server to client).
pub const RESPONSE_MAGIC: u8 = 0x81;

/// Longest key memcached accepts (`KEY_MAX_LENGTH`); a longer one gets "Invalid arguments"
/// and the connection is closed.
pub const MAX_KEY_LEN: usize = 250;

/// memcached's read buffer: header + extras + key must fit in it, otherwise memcached can
/// never read the key and closes the connection without a reply.
pub const MAX_HEAD_LEN: usize = 16384;

/// A request header as it is on the wire (all fields decoded from big-endian, unchecked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RequestHeader {
    /// Magic byte; [`REQUEST_MAGIC`] for a valid request.
    pub magic: u8,
    /// Raw opcode byte (see [`RequestHeader::opcode`]).
    pub opcode: u8,
    /// Length of the key.
    pub key_len: u16,
    /// Length of the extras.
    pub extras_len: u8,
    /// Data type; memcached ignores it.
    pub data_type: u8,
    /// vbucket id ("reserved"); memcached ignores it.
    pub vbucket: u16,
    /// Length of extras + key + value.
    pub body_len: u32,
    /// Opaque value, echoed in every reply to this request.
    pub opaque: u32,
    /// CAS value (compare-and-swap for stores, ignored by most commands).
    pub cas: u64,
}

impl RequestHeader {
    /// Decodes the 24 header bytes; no field is checked.
    pub fn decode(bytes: &[u8; HEADER_LEN]) -> RequestHeader {
        let (magic, opcode, key_len, extras_len, data_type, vbucket, body_len, opaque, cas) = split(bytes);
        RequestHeader { magic, opcode, key_len, extras_len, data_type, vbucket, body_len, opaque, cas }
    }

    /// Decodes the first 24 bytes of `buf`, or `None` if it is shorter; no field is checked.
    pub fn from_prefix(buf: &[u8]) -> Option<RequestHeader> {
        buf.first_chunk::<HEADER_LEN>().map(RequestHeader::decode)
    }

    /// The 24 wire bytes of this header.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        join(
            self.magic,
            self.opcode,
            self.key_len,
            self.extras_len,
            self.data_type,
            self.vbucket,
            self.body_len,
            self.opaque,
            self.cas,
        )
    }

    /// The opcode, or `None` if memcached does not implement this byte.
    pub fn opcode(&self) -> Option<Opcode> {
        Opcode::from_u8(self.opcode)
    }

    /// Header + extras + key: what memcached buffers before it acts on a request.
    pub fn head_len(&self) -> usize {
        HEADER_LEN + usize::from(self.extras_len) + usize::from(self.key_len)
    }

    /// Length of the value: body minus extras and key (0 if they do not fit in the body).
    pub fn value_len(&self) -> u32 {
        self.body_len.saturating_sub(u32::from(self.extras_len) + u32::from(self.key_len))
    }
}

/// A response header as it is on the wire (all fields decoded from big-endian, unchecked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ResponseHeader {
    /// Magic byte; [`RESPONSE_MAGIC`] for a valid response.
    pub magic: u8,
    /// Raw opcode byte, echoing the request's.
    pub opcode: u8,
    /// Length of the key.
    pub key_len: u16,
    /// Length of the extras.
    pub extras_len: u8,
    /// Data type; memcached always sends 0.
    pub data_type: u8,
    /// Raw status code (see [`ResponseHeader::status`]).
    pub status: u16,
    /// Length of extras + key + value.
    pub body_len: u32,
    /// Opaque value of the request.
    pub opaque: u32,
    /// CAS value of the item (0 when not applicable).
    pub cas: u64,
}

impl ResponseHeader {
    /// Decodes the 24 header bytes; no field is checked.
    pub fn decode(bytes: &[u8; HEADER_LEN]) -> ResponseHeader {
        let (magic, opcode, key_len, extras_len, data_type, status, body_len, opaque, cas) = split(bytes);
        ResponseHeader { magic, opcode, key_len, extras_len, data_type, status, body_len, opaque, cas }
    }

    /// Decodes the first 24 bytes of `buf`, or `None` if it is shorter; no field is checked.
    pub fn from_prefix(buf: &[u8]) -> Option<ResponseHeader> {
        buf.first_chunk::<HEADER_LEN>().map(ResponseHeader::decode)
    }

    /// The 24 wire bytes of this header.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        join(
            self.magic,
            self.opcode,
            self.key_len,
            self.extras_len,
            self.data_type,
            self.status,
            self.body_len,
            self.opaque,
            self.cas,
        )
    }

    /// The opcode, if known.
    pub fn opcode(&self) -> Option<Opcode> {
        Opcode::from_u8(self.opcode)
    }

    /// The status, if memcached defines it.
    pub fn status(&self) -> Option<Status> {
        Status::from_u16(self.status)
    }
}

/// Reads the request header at the start of `buf`.
///
/// `Ok(None)` until 24 bytes are there. A magic byte other than [`REQUEST_MAGIC`] is an error
/// whose action is [`Invalid::Close`] (memcached closes without a reply). Nothing else is
/// checked here: call [`RequestHeader::check`] for memcached's per-command rules. This lets a
/// server look at a request (e.g. a too-large value) before its body has arrived.
pub fn parse_header(buf: &[u8]) -> Result<Option<RequestHeader>, ParseError> {
    let Some(header) = RequestHeader::from_prefix(buf) else {
        return Ok(None);
    };
    if header.magic != REQUEST_MAGIC {
        return Err(ParseError {
            cause: Cause::BadMagic,
            action: Invalid::Close,
            opcode: header.opcode,
            opaque: header.opaque,
        });
    }
    Ok(Some(header))
}

type Fields = (u8, u8, u16, u8, u8, u16, u32, u32, u64);

fn split(b: &[u8; HEADER_LEN]) -> Fields {
    (
        b[0],
        b[1],
        u16::from_be_bytes([b[2], b[3]]),
        b[4],
        b[5],
        u16::from_be_bytes([b[6], b[7]]),
        u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
        u32::from_be_bytes([b[12], b[13], b[14], b[15]]),
        u64::from_be_bytes([b[16], b[17], b[18], b[19], b[20], b[21], b[22], b[23]]),
    )
}

#[allow(clippy::too_many_arguments)]
pub(super) fn join(
    magic: u8,
    opcode: u8,
    key_len: u16,
    extras_len: u8,
    data_type: u8,
    word: u16,
    body_len: u32,
    opaque: u32,
    cas: u64,
) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    b[0] = magic;
    b[1] = opcode;
    b[2..4].copy_from_slice(&key_len.to_be_bytes());
    b[4] = extras_len;
    b[5] = data_type;
    b[6..8].copy_from_slice(&word.to_be_bytes());
    b[8..12].copy_from_slice(&body_len.to_be_bytes());
    b[12..16].copy_from_slice(&opaque.to_be_bytes());
    b[16..24].copy_from_slice(&cas.to_be_bytes());
    b
}

/// Clamps extras/key/value lengths to what the header fields can describe (extras ≤ 255,
/// key ≤ 65535, body ≤ u32::MAX), so a composed frame is always self-consistent.
pub(super) fn fit(extras: usize, key: usize, value: usize) -> (u8, u16, usize) {
    let e = u8::try_from(extras).unwrap_or(u8::MAX);
    let k = u16::try_from(key).unwrap_or(u16::MAX);
    let room = u32::MAX as usize - usize::from(e) - usize::from(k);
    (e, k, value.min(room))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: [u8; HEADER_LEN] = [
        0x80, 0x01, 0x00, 0x05, 0x08, 0x07, 0x12, 0x34, 0x00, 0x00, 0x00, 0x12, 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02,
        0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
    ];

    #[test]
    fn request_header_fields() {
        let h = RequestHeader::decode(&SAMPLE);
        assert_eq!(
            h,
            RequestHeader {
                magic: 0x80,
                opcode: 0x01,
                key_len: 5,
                extras_len: 8,
                data_type: 7,
                vbucket: 0x1234,
                body_len: 0x12,
                opaque: 0xdeadbeef,
                cas: 0x0102030405060708,
            }
        );
        assert_eq!(h.to_bytes(), SAMPLE);
        assert_eq!(h.opcode(), Some(Opcode::Set));
        assert_eq!(h.head_len(), 24 + 8 + 5);
        assert_eq!(h.value_len(), 5);
    }

    #[test]
    fn response_header_fields() {
        let mut bytes = SAMPLE;
        bytes[0] = RESPONSE_MAGIC;
        bytes[6] = 0x00;
        bytes[7] = 0x82;
        let h = ResponseHeader::decode(&bytes);
        assert_eq!(h.status, 0x82);
        assert_eq!(h.status(), Some(Status::OutOfMemory));
        assert_eq!(h.opcode(), Some(Opcode::Set));
        assert_eq!(h.to_bytes(), bytes);
        assert_eq!(ResponseHeader::from_prefix(&bytes[..23]), None);
        assert_eq!(ResponseHeader::from_prefix(&bytes), Some(h));
    }

    #[test]
    fn value_len_saturates() {
        let h = RequestHeader { key_len: 10, extras_len: 8, body_len: 4, ..RequestHeader::default() };
        assert_eq!(h.value_len(), 0);
        let h =
            RequestHeader { key_len: u16::MAX, extras_len: u8::MAX, body_len: u32::MAX, ..RequestHeader::default() };
        assert_eq!(h.value_len(), u32::MAX - 65535 - 255);
        assert_eq!(h.head_len(), 24 + 65535 + 255);
    }

    #[test]
    fn parse_header_needs_24_bytes() {
        for n in 0..HEADER_LEN {
            assert_eq!(parse_header(&SAMPLE[..n]), Ok(None));
        }
        assert_eq!(parse_header(&SAMPLE), Ok(Some(RequestHeader::decode(&SAMPLE))));
    }

    #[test]
    fn parse_header_bad_magic_closes() {
        for magic in [0x00, 0x81, 0x7f, b'g', 0xff] {
            let mut bytes = SAMPLE;
            bytes[0] = magic;
            let err = parse_header(&bytes).unwrap_err();
            assert_eq!(err.cause, Cause::BadMagic);
            assert_eq!(err.action, Invalid::Close);
            assert_eq!(err.opaque, 0xdeadbeef);
        }
    }

    #[test]
    fn fit_clamps() {
        assert_eq!(fit(1, 2, 3), (1, 2, 3));
        assert_eq!(fit(300, 70000, 0), (255, 65535, 0));
        let (e, k, v) = fit(8, 5, usize::MAX);
        assert_eq!((e, k), (8, 5));
        assert_eq!(v as u64 + 13, u64::from(u32::MAX));
    }
}
