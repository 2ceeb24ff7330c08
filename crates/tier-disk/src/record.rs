//! How one item is laid out on disk: a small fixed header with a CRC-32 over everything
//! after it, then the value. A record whose checksum does not match is reported as
//! damaged and treated as missing, never served.

/// Record format version.
const VERSION: u8 = 1;
/// Bytes before the value.
pub const HEADER: usize = 42;

/// An item as stored on disk: owning its value as decoded (`Record`), or borrowing it as
/// a write encodes it (`Record<&[u8]>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record<V = Vec<u8>> {
    /// Client flags.
    pub flags: u32,
    /// Absolute unix expiry, 0 for never.
    pub exptime: i64,
    /// CAS unique.
    pub cas: u64,
    /// Unix time the item was stored (for delayed `flush_all`).
    pub stored: i64,
    /// Write sequence number (orders items oldest-first for disk eviction).
    pub seq: u64,
    /// Item state bits kept across restarts (stale, recache token sent, binary key).
    pub bits: u8,
    /// The value.
    pub value: V,
}

/// Why a record could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// Shorter than the header.
    Truncated,
    /// Unknown format version.
    Version(u8),
    /// Checksum mismatch.
    Checksum,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Damage::Truncated => f.write_str("record shorter than its header"),
            Damage::Version(v) => write!(f, "unknown record version {v}"),
            Damage::Checksum => f.write_str("record checksum mismatch"),
        }
    }
}

impl<V: AsRef<[u8]>> Record<V> {
    /// Encode for storage.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER + self.value.as_ref().len());
        self.encode_into(&mut b);
        b
    }

    /// Append the encoded record to `out` (the log frames records without a copy each).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let value = self.value.as_ref();
        out.reserve(HEADER + value.len());
        out.push(VERSION);
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(&self.exptime.to_le_bytes());
        out.extend_from_slice(&self.cas.to_le_bytes());
        out.extend_from_slice(&self.stored.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.push(self.bits);
        out.extend_from_slice(value);
        let crc = crc32fast::hash(&out[start + 5..]);
        out[start + 1..start + 5].copy_from_slice(&crc.to_le_bytes());
    }
}

impl Record {
    /// Check an encoded record's version and checksum without decoding it.
    pub fn check(b: &[u8]) -> Result<(), Damage> {
        if b.len() < HEADER {
            return Err(Damage::Truncated);
        }
        if b[0] != VERSION {
            return Err(Damage::Version(b[0]));
        }
        let crc = u32::from_le_bytes(b[1..5].try_into().expect("4 bytes"));
        if crc32fast::hash(&b[5..]) != crc {
            return Err(Damage::Checksum);
        }
        Ok(())
    }

    /// The CAS unique of an encoded record (already checked).
    pub fn cas_of(b: &[u8]) -> u64 {
        u64::from_le_bytes(b[17..25].try_into().expect("8 bytes"))
    }

    /// Decode, verifying the checksum.
    pub fn decode(b: &[u8]) -> Result<Record, Damage> {
        Record::check(b)?;
        Ok(Record::decode_checked(b))
    }

    /// Decode a record already checked (an entry in memory was checked when it was made
    /// or read from the log): no second CRC over it on every read.
    pub fn decode_checked(b: &[u8]) -> Record {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Record {
            flags: u32::from_le_bytes(b[5..9].try_into().expect("4 bytes")),
            exptime: u64_at(9) as i64,
            cas: u64_at(17),
            stored: u64_at(25) as i64,
            seq: u64_at(33),
            bits: b[41],
            value: b[HEADER..].to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let r = Record {
            flags: 7,
            exptime: 1_900_000_000,
            cas: 42,
            stored: 1_800_000_000,
            seq: 9,
            bits: 4,
            value: b"hi".to_vec(),
        };
        let mut b = r.encode();
        assert_eq!(Record::decode(&b), Ok(r));
        assert_eq!(Record::cas_of(&b), 42);
        b[HEADER] ^= 1;
        assert_eq!(Record::decode(&b), Err(Damage::Checksum));
        assert_eq!(Record::decode(&b[..10]), Err(Damage::Truncated));
    }
}
