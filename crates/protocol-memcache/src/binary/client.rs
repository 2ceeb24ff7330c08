//! The client side: composing requests and parsing responses (tests, fuzzing, tools).

use super::header::{fit, join, ResponseHeader, HEADER_LEN, REQUEST_MAGIC, RESPONSE_MAGIC};
use super::status::Status;

/// Appends a complete request (data type 0, vbucket 0).
///
/// `opcode` is a raw byte so that unknown opcodes can be sent too. Over-long slices are
/// truncated to what the header can describe.
pub fn write_request(
    out: &mut Vec<u8>,
    opcode: impl Into<u8>,
    opaque: u32,
    cas: u64,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
) {
    let (e, k, v) = fit(extras.len(), key.len(), value.len());
    let (extras, key, value) = (&extras[..usize::from(e)], &key[..usize::from(k)], &value[..v]);
    let body = (extras.len() + key.len() + value.len()) as u32;
    out.reserve(HEADER_LEN + body as usize);
    out.extend_from_slice(&join(REQUEST_MAGIC, opcode.into(), k, e, 0, 0, body, opaque, cas));
    out.extend_from_slice(extras);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
}

/// A response, borrowing extras, key and value from the input buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response<'a> {
    header: ResponseHeader,
    extras: &'a [u8],
    key: &'a [u8],
    value: &'a [u8],
}

impl<'a> Response<'a> {
    /// The raw header.
    pub fn header(&self) -> &ResponseHeader {
        &self.header
    }

    /// The status, if memcached defines it.
    pub fn status(&self) -> Option<Status> {
        self.header.status()
    }

    /// Opaque value of the request.
    pub fn opaque(&self) -> u32 {
        self.header.opaque
    }

    /// CAS value.
    pub fn cas(&self) -> u64 {
        self.header.cas
    }

    /// Raw extras (4-byte flags on a get hit).
    pub fn extras(&self) -> &'a [u8] {
        self.extras
    }

    /// Key (stat name, or the key of a `K` get).
    pub fn key(&self) -> &'a [u8] {
        self.key
    }

    /// Value, or the error message when the status is an error.
    pub fn value(&self) -> &'a [u8] {
        self.value
    }

    /// Flags of a get hit (4 bytes of extras).
    pub fn flags(&self) -> Option<u32> {
        self.extras.first_chunk::<4>().map(|b| u32::from_be_bytes(*b))
    }

    /// Counter value of an incr/decr success (8-byte value).
    pub fn counter(&self) -> Option<u64> {
        let bytes: [u8; 8] = self.value.try_into().ok()?;
        Some(u64::from_be_bytes(bytes))
    }
}

/// Why a response cannot be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResponseError {
    /// The magic byte is not [`RESPONSE_MAGIC`].
    BadMagic(u8),
    /// Key + extras are longer than the body.
    BodyTooShort,
}

impl core::fmt::Display for ResponseError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ResponseError::BadMagic(m) => write!(f, "binary response: bad magic {m:#04x}"),
            ResponseError::BodyTooShort => f.write_str("binary response: key and extras longer than the body"),
        }
    }
}

impl std::error::Error for ResponseError {}

/// Parses one response at the start of `buf`: `Ok(None)` until it is complete, else the
/// response and the number of bytes it used. Never allocates and never panics.
pub fn parse_response(buf: &[u8]) -> Result<Option<(Response<'_>, usize)>, ResponseError> {
    let Some(header) = ResponseHeader::from_prefix(buf) else {
        return Ok(None);
    };
    if header.magic != RESPONSE_MAGIC {
        return Err(ResponseError::BadMagic(header.magic));
    }
    let extras_len = usize::from(header.extras_len);
    let key_len = usize::from(header.key_len);
    if (extras_len + key_len) as u64 > u64::from(header.body_len) {
        return Err(ResponseError::BodyTooShort);
    }
    let frame = HEADER_LEN as u64 + u64::from(header.body_len);
    let Some(frame_bytes) = usize::try_from(frame).ok().and_then(|n| buf.get(..n)) else {
        return Ok(None);
    };
    let extras_end = HEADER_LEN + extras_len;
    let key_end = extras_end + key_len;
    match (frame_bytes.get(HEADER_LEN..extras_end), frame_bytes.get(extras_end..key_end), frame_bytes.get(key_end..)) {
        (Some(extras), Some(key), Some(value)) => {
            Ok(Some((Response { header, extras, key, value }, frame_bytes.len())))
        }
        _ => Err(ResponseError::BodyTooShort),
    }
}
