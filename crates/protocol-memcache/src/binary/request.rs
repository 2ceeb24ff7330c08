//! Parsed requests borrowing from the read buffer, and their typed extras.

use super::error::ParseError;
use super::header::{parse_header, RequestHeader, HEADER_LEN, MAX_HEAD_LEN};
use super::opcode::Opcode;

/// Extras of `Set`/`Add`/`Replace` and their quiet forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StoreExtras {
    /// Opaque client flags stored with the item.
    pub flags: u32,
    /// Expiration as sent (0 = never; up to 30 days relative, else a unix time).
    pub expiration: u32,
}

/// Extras of `Increment`/`Decrement` and their quiet forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CounterExtras {
    /// Amount to add or subtract.
    pub delta: u64,
    /// Value stored when the key is missing (unless `expiration` is [`CounterExtras::NO_CREATE`]).
    pub initial: u64,
    /// Expiration of a newly created counter.
    pub expiration: u32,
}

impl CounterExtras {
    /// Expiration meaning "do not create a missing counter; answer Not found".
    pub const NO_CREATE: u32 = 0xffff_ffff;

    /// True unless the expiration is [`CounterExtras::NO_CREATE`].
    pub fn creates_missing(&self) -> bool {
        self.expiration != Self::NO_CREATE
    }
}

/// A valid request, borrowing extras, key and value from the input buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    header: RequestHeader,
    opcode: Opcode,
    extras: &'a [u8],
    key: &'a [u8],
    value: &'a [u8],
}

impl<'a> Request<'a> {
    /// The command.
    pub fn opcode(&self) -> Opcode {
        self.opcode
    }

    /// The raw header.
    pub fn header(&self) -> &RequestHeader {
        &self.header
    }

    /// Opaque value, to echo in every reply.
    pub fn opaque(&self) -> u32 {
        self.header.opaque
    }

    /// CAS value (used by stores, ignored by the other commands).
    pub fn cas(&self) -> u64 {
        self.header.cas
    }

    /// vbucket id / reserved field (memcached ignores it).
    pub fn vbucket(&self) -> u16 {
        self.header.vbucket
    }

    /// Data type (memcached ignores it).
    pub fn data_type(&self) -> u8 {
        self.header.data_type
    }

    /// Raw extras.
    pub fn extras(&self) -> &'a [u8] {
        self.extras
    }

    /// Key (empty when the command has none).
    pub fn key(&self) -> &'a [u8] {
        self.key
    }

    /// Value (empty when the command has none; always empty for `Stat`, `Touch`, `Gat*`).
    pub fn value(&self) -> &'a [u8] {
        self.value
    }

    /// Flags and expiration, for `Set`/`Add`/`Replace` and their quiet forms.
    pub fn store_extras(&self) -> Option<StoreExtras> {
        match self.opcode.base() {
            Opcode::Set | Opcode::Add | Opcode::Replace => {
                let e: &[u8; 8] = self.extras.first_chunk()?;
                Some(StoreExtras { flags: be32(e, 0), expiration: be32(e, 4) })
            }
            _ => None,
        }
    }

    /// Delta, initial value and expiration, for `Increment`/`Decrement` and their quiet forms.
    pub fn counter_extras(&self) -> Option<CounterExtras> {
        match self.opcode.base() {
            Opcode::Increment | Opcode::Decrement => {
                let e: &[u8; 20] = self.extras.first_chunk()?;
                Some(CounterExtras { delta: be64(e, 0), initial: be64(e, 8), expiration: be32(e, 16) })
            }
            _ => None,
        }
    }

    /// New expiration, for `Touch`, `Gat`, `GatQ`, `GatK`, `GatKQ`.
    pub fn touch_expiration(&self) -> Option<u32> {
        match self.opcode.base() {
            Opcode::Touch | Opcode::Gat | Opcode::GatK => self.extras.first_chunk::<4>().map(|e| be32(e, 0)),
            _ => None,
        }
    }

    /// For `Flush(Q)`: `Some(Some(exptime))` with 4 bytes of extras, `Some(None)` without
    /// (memcached then flushes immediately, as with 0); `None` for other commands.
    pub fn flush_expiration(&self) -> Option<Option<u32>> {
        match self.opcode.base() {
            Opcode::Flush => Some(self.extras.first_chunk::<4>().map(|e| be32(e, 0))),
            _ => None,
        }
    }
}

fn be32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        w.copy_from_slice(s);
    }
    u32::from_be_bytes(w)
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        w.copy_from_slice(s);
    }
    u64::from_be_bytes(w)
}

/// Parses one request at the start of `buf`.
///
/// - `Ok(None)`: more bytes are needed (at most [`RequestHeader::frame_len`] in all; for a
///   huge value use [`parse_header`] + [`RequestHeader::check`] to decide before buffering).
/// - `Ok(Some((request, used)))`: `used` bytes belong to this request (see
///   [`RequestHeader::frame_len`] for memcached's quirks).
/// - `Err(e)`: malformed; `e.action` says whether memcached replies, skips or closes.
///   Like memcached, errors other than a bad magic byte or an unbufferable head are only
///   reported once header + extras + key have arrived.
///
/// Never allocates and never panics.
pub fn parse_request(buf: &[u8]) -> Result<Option<(Request<'_>, usize)>, ParseError> {
    let Some(header) = parse_header(buf)? else {
        return Ok(None);
    };
    let head = header.head_len();
    if head <= MAX_HEAD_LEN && buf.len() < head {
        return Ok(None);
    }
    let opcode = header.check()?;
    let frame = header.frame_len();
    let Some(frame_bytes) = usize::try_from(frame).ok().and_then(|n| buf.get(..n)) else {
        return Ok(None);
    };
    let extras_end = HEADER_LEN + usize::from(header.extras_len);
    let (extras, key, value) =
        match (frame_bytes.get(HEADER_LEN..extras_end), frame_bytes.get(extras_end..head), frame_bytes.get(head..)) {
            (Some(e), Some(k), Some(v)) => (e, k, v),
            // Unreachable: check() guarantees head <= frame.
            _ => return Ok(None),
        };
    Ok(Some((Request { header, opcode, extras, key, value }, frame_bytes.len())))
}
