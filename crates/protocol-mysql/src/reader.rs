//! A bounds-checked cursor over a payload (crate-internal).

use crate::error::Error;

/// Reads little-endian fields from a payload; every read is bounds-checked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Whether everything was consumed.
    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The next byte without consuming it.
    pub(crate) fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// The next `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Error> {
        let end = self.pos.checked_add(n).ok_or(Error::Truncated(what))?;
        let out = self.buf.get(self.pos..end).ok_or(Error::Truncated(what))?;
        self.pos = end;
        Ok(out)
    }

    /// The next `N` bytes as an array.
    pub(crate) fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], Error> {
        let b = self.bytes(N, what)?;
        let mut out = [0; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    /// Everything left.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let out = &self.buf[self.pos..];
        self.pos = self.buf.len();
        out
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, Error> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, Error> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, Error> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A length-encoded integer; `None` is the NULL marker `0xfb`.
    pub(crate) fn lenenc_int_or_null(&mut self, what: &'static str) -> Result<Option<u64>, Error> {
        let (v, used) = crate::lenenc::parse_lenenc_int(&self.buf[self.pos..]).map_err(|e| match e {
            Error::Truncated(_) => Error::Truncated(what),
            _ => Error::Invalid(what),
        })?;
        self.pos += used;
        Ok(v)
    }

    /// A length-encoded integer where NULL is not allowed.
    pub(crate) fn lenenc_int(&mut self, what: &'static str) -> Result<u64, Error> {
        self.lenenc_int_or_null(what)?.ok_or(Error::Invalid(what))
    }

    /// A length-encoded string; `None` is NULL.
    pub(crate) fn lenenc_str_or_null(&mut self, what: &'static str) -> Result<Option<&'a [u8]>, Error> {
        match self.lenenc_int_or_null(what)? {
            None => Ok(None),
            Some(n) => {
                let n = usize::try_from(n).map_err(|_| Error::Truncated(what))?;
                self.bytes(n, what).map(Some)
            }
        }
    }

    /// A length-encoded string where NULL is not allowed.
    pub(crate) fn lenenc_str(&mut self, what: &'static str) -> Result<&'a [u8], Error> {
        self.lenenc_str_or_null(what)?.ok_or(Error::Invalid(what))
    }

    /// A NUL-terminated string (the NUL is consumed, not returned).
    pub(crate) fn nul_str(&mut self, what: &'static str) -> Result<&'a [u8], Error> {
        let rest = &self.buf[self.pos..];
        let n = rest.iter().position(|&b| b == 0).ok_or(Error::Truncated(what))?;
        self.pos += n + 1;
        Ok(&rest[..n])
    }

    /// A NUL-terminated string that may instead run to the end of the payload.
    pub(crate) fn nul_str_or_eof(&mut self) -> &'a [u8] {
        let rest = &self.buf[self.pos..];
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                self.pos += n + 1;
                &rest[..n]
            }
            None => self.rest(),
        }
    }
}
