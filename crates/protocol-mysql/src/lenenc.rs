//! Length-encoded integers and strings (MySQL "Protocol::LengthEncodedInteger/String").
//!
//! | first byte | meaning                      |
//! |------------|------------------------------|
//! | `0x00..=0xfa` | the value itself          |
//! | `0xfb`     | NULL (only in result rows)   |
//! | `0xfc`     | a 2-byte value follows       |
//! | `0xfd`     | a 3-byte value follows       |
//! | `0xfe`     | an 8-byte value follows      |
//! | `0xff`     | invalid (an ERR packet header) |

use crate::error::Error;

/// The NULL marker of text result rows.
pub const LENENC_NULL: u8 = 0xfb;

/// Parses a length-encoded integer at the start of `buf`.
///
/// Returns the value (`None` for the NULL marker `0xfb`) and the bytes used.
/// Non-minimal encodings (for example `0xfc 0x01 0x00`) are accepted.
pub fn parse_lenenc_int(buf: &[u8]) -> Result<(Option<u64>, usize), Error> {
    const WHAT: &str = "length-encoded integer";
    let first = *buf.first().ok_or(Error::Truncated(WHAT))?;
    let width = match first {
        0..=0xfa => return Ok((Some(u64::from(first)), 1)),
        LENENC_NULL => return Ok((None, 1)),
        0xfc => 2,
        0xfd => 3,
        0xfe => 8,
        0xff => return Err(Error::Invalid(WHAT)),
    };
    let bytes = buf.get(1..1 + width).ok_or(Error::Truncated(WHAT))?;
    let mut le = [0u8; 8];
    le[..width].copy_from_slice(bytes);
    Ok((Some(u64::from_le_bytes(le)), 1 + width))
}

/// Parses a length-encoded string at the start of `buf`.
///
/// Returns the bytes (`None` for NULL) and the bytes used, prefix included.
pub fn parse_lenenc_str(buf: &[u8]) -> Result<(Option<&[u8]>, usize), Error> {
    const WHAT: &str = "length-encoded string";
    let (len, head) = parse_lenenc_int(buf)?;
    let Some(len) = len else { return Ok((None, head)) };
    let len = usize::try_from(len).map_err(|_| Error::Truncated(WHAT))?;
    let end = head.checked_add(len).ok_or(Error::Truncated(WHAT))?;
    let s = buf.get(head..end).ok_or(Error::Truncated(WHAT))?;
    Ok((Some(s), end))
}

/// The number of bytes [`write_lenenc_int`] uses for `v`.
pub fn lenenc_int_len(v: u64) -> usize {
    match v {
        0..=0xfa => 1,
        0xfb..=0xffff => 3,
        0x1_0000..=0xff_ffff => 4,
        _ => 9,
    }
}

/// Appends `v` as a length-encoded integer (minimal form).
pub fn write_lenenc_int(out: &mut Vec<u8>, v: u64) {
    let le = v.to_le_bytes();
    match lenenc_int_len(v) {
        1 => out.push(le[0]),
        3 => {
            out.push(0xfc);
            out.extend_from_slice(&le[..2]);
        }
        4 => {
            out.push(0xfd);
            out.extend_from_slice(&le[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&le);
        }
    }
}

/// Appends `s` as a length-encoded string.
pub fn write_lenenc_str(out: &mut Vec<u8>, s: &[u8]) {
    write_lenenc_int(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Appends `s` as a length-encoded string, or the NULL marker for `None`.
pub fn write_lenenc_opt_str(out: &mut Vec<u8>, s: Option<&[u8]>) {
    match s {
        Some(s) => write_lenenc_str(out, s),
        None => out.push(LENENC_NULL),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_forms_round_trip() {
        for (v, len) in
            [(0u64, 1), (250, 1), (251, 3), (0xffff, 3), (0x1_0000, 4), (0xff_ffff, 4), (1 << 24, 9), (u64::MAX, 9)]
        {
            let mut out = Vec::new();
            write_lenenc_int(&mut out, v);
            assert_eq!(out.len(), len, "{v}");
            assert_eq!(lenenc_int_len(v), len);
            assert_eq!(parse_lenenc_int(&out), Ok((Some(v), len)));
            // Every strict prefix is truncated.
            for cut in 0..len {
                assert!(matches!(parse_lenenc_int(&out[..cut]), Err(Error::Truncated(_))));
            }
        }
    }

    #[test]
    fn int_special_bytes() {
        assert_eq!(parse_lenenc_int(&[0xfb]), Ok((None, 1)));
        assert!(matches!(parse_lenenc_int(&[0xff]), Err(Error::Invalid(_))));
        assert_eq!(parse_lenenc_int(&[0xfc, 1, 0]), Ok((Some(1), 3))); // non-minimal accepted
        assert_eq!(parse_lenenc_int(&[0xfd, 1, 2, 3]), Ok((Some(0x030201), 4)));
    }

    #[test]
    fn strings() {
        let mut out = Vec::new();
        write_lenenc_str(&mut out, b"hello");
        write_lenenc_opt_str(&mut out, None);
        let big = vec![b'x'; 300];
        write_lenenc_str(&mut out, &big);
        let (s, n) = parse_lenenc_str(&out).unwrap();
        assert_eq!((s, n), (Some(&b"hello"[..]), 6));
        assert_eq!(parse_lenenc_str(&out[6..]), Ok((None, 1)));
        assert_eq!(parse_lenenc_str(&out[7..]), Ok((Some(&big[..]), 303)));
        assert!(matches!(parse_lenenc_str(&out[7..300]), Err(Error::Truncated(_))));
        // A huge declared length is truncated, not an overflow.
        assert!(parse_lenenc_str(&[0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).is_err());
    }
}
