//! Log sequence numbers: byte positions in the write-ahead log.

use std::fmt;
use std::str::FromStr;

/// A WAL position (`pg_lsn`), shown as PostgreSQL shows it: two hexadecimal halves,
/// `16/B374D848`. Zero is `0/0`, "invalid" / "none yet".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lsn(pub u64);

impl Lsn {
    /// `0/0`: no position.
    pub const INVALID: Lsn = Lsn(0);

    /// Whether this is `0/0`.
    pub fn is_invalid(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:X}/{:X}", self.0 >> 32, self.0 as u32)
    }
}

/// A string that is not `hex/hex` with halves of at most 8 digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseLsnError;

impl fmt::Display for ParseLsnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a WAL position (expected two hexadecimal numbers such as 16/B374D848)")
    }
}

impl std::error::Error for ParseLsnError {}

impl FromStr for Lsn {
    type Err = ParseLsnError;

    fn from_str(s: &str) -> Result<Lsn, ParseLsnError> {
        let (hi, lo) = s.split_once('/').ok_or(ParseLsnError)?;
        let half = |h: &str| {
            if h.is_empty() || h.len() > 8 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(ParseLsnError);
            }
            u32::from_str_radix(h, 16).map_err(|_| ParseLsnError)
        };
        Ok(Lsn((u64::from(half(hi)?) << 32) | u64::from(half(lo)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_parse() {
        let l = Lsn(0x16_B374_D848);
        assert_eq!(l.to_string(), "16/B374D848");
        assert_eq!("16/B374D848".parse::<Lsn>(), Ok(l));
        assert_eq!("0/0".parse::<Lsn>(), Ok(Lsn::INVALID));
        for bad in ["", "1", "1/", "/1", "g/1", "1/123456789", "+1/1"] {
            assert_eq!(bad.parse::<Lsn>(), Err(ParseLsnError), "{bad}");
        }
    }
}
