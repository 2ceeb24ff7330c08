//! A bounds-checked big-endian cursor over a message body (crate-internal).

use crate::error::Error;

/// Reads network-order fields; every read is bounds-checked.
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

    /// Bytes left.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Whether everything was consumed.
    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// Ok if everything was consumed, else `TrailingBytes(what)`.
    pub(crate) fn finish(&self, what: &'static str) -> Result<(), Error> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(Error::TrailingBytes(what))
        }
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

    pub(crate) fn i16(&mut self, what: &'static str) -> Result<i16, Error> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }

    /// A 16-bit count (PostgreSQL's `pq_getmsgint(msg, 2)`: unsigned, 0 to 65535).
    pub(crate) fn count16(&mut self, what: &'static str) -> Result<usize, Error> {
        Ok(usize::from(u16::from_be_bytes(self.array(what)?)))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, Error> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, Error> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, Error> {
        Ok(u64::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64, Error> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }

    /// A NUL-terminated string (the NUL is consumed, not returned).
    pub(crate) fn cstr(&mut self, what: &'static str) -> Result<&'a [u8], Error> {
        let rest = &self.buf[self.pos..];
        let n = rest.iter().position(|&b| b == 0).ok_or(Error::Truncated(what))?;
        self.pos += n + 1;
        Ok(&rest[..n])
    }

    /// A NUL-terminated string that must be UTF-8.
    pub(crate) fn cstr_utf8(&mut self, what: &'static str) -> Result<&'a str, Error> {
        std::str::from_utf8(self.cstr(what)?).map_err(|_| Error::Invalid(what))
    }

    /// An int32 length then that many bytes; -1 is NULL (`None`), another negative length
    /// is invalid.
    pub(crate) fn nullable_bytes(&mut self, what: &'static str) -> Result<Option<&'a [u8]>, Error> {
        match self.i32(what)? {
            -1 => Ok(None),
            n if n < 0 => Err(Error::Invalid(what)),
            n => self.bytes(n as usize, what).map(Some),
        }
    }

    /// `n` 16-bit values, after checking that they fit in what is left (no allocation for
    /// a count the message cannot hold).
    pub(crate) fn i16s(&mut self, n: usize, what: &'static str) -> Result<Vec<i16>, Error> {
        if n.saturating_mul(2) > self.remaining() {
            return Err(Error::Truncated(what));
        }
        (0..n).map(|_| self.i16(what)).collect()
    }

    /// `n` 32-bit values, after checking that they fit in what is left.
    pub(crate) fn u32s(&mut self, n: usize, what: &'static str) -> Result<Vec<u32>, Error> {
        if n.saturating_mul(4) > self.remaining() {
            return Err(Error::Truncated(what));
        }
        (0..n).map(|_| self.u32(what)).collect()
    }
}
