//! memcached's number parsing (`safe_strtoul`, `safe_strtol`, `safe_strtoull`), quirks
//! included, so that edge cases answer exactly as memcached does: values are parsed as
//! 64-bit C longs and then truncated to the target width.

/// C `isspace`.
#[inline]
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// C `strtoull`/`strtol` core: returns (negative?, magnitude, digits seen) or `None` on
/// overflow of 64 bits (ERANGE) or when no digits were found.
fn scan(s: &[u8]) -> Option<(bool, u64, usize)> {
    let mut i = 0;
    while i < s.len() && is_space(s[i]) {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let start = i;
    let mut v: u64 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        v = v.checked_mul(10)?.checked_add((s[i] - b'0') as u64)?;
        i += 1;
    }
    if i == start {
        return None;
    }
    // What follows the digits must be whitespace or the end of the token.
    if i < s.len() && !is_space(s[i]) {
        return None;
    }
    Some((neg, v, i))
}

/// `safe_strtoull`: an unsigned 64-bit number; negative numbers are refused.
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    let (neg, v, _) = scan(s)?;
    if neg {
        let v = v.wrapping_neg();
        if (v as i64) < 0 {
            return None;
        }
        return Some(v);
    }
    Some(v)
}

/// `safe_strtoul` into a `uint32_t`: parsed as 64-bit, then truncated (so
/// `4294967296` is accepted as 0, exactly as memcached 1.6.18 on 64-bit Linux does).
pub fn parse_u32(s: &[u8]) -> Option<u32> {
    parse_u64(s).map(|v| v as u32)
}

/// `safe_strtol` into an `int32_t`: parsed as a 64-bit long, then truncated.
pub fn parse_i32(s: &[u8]) -> Option<i32> {
    let (neg, v, _) = scan(s)?;
    let l: i64 = if neg {
        if v > (i64::MAX as u64) + 1 {
            return None;
        }
        (v as i64).wrapping_neg()
    } else {
        if v > i64::MAX as u64 {
            return None;
        }
        v as i64
    };
    Some(l as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quirks() {
        assert_eq!(parse_u64(b"10"), Some(10));
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"-0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"12abc"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u32(b"4294967296"), Some(0));
        assert_eq!(parse_i32(b"4294967297"), Some(1));
        assert_eq!(parse_i32(b"2147483648"), Some(i32::MIN));
        assert_eq!(parse_i32(b"-5"), Some(-5));
        assert_eq!(parse_i32(b"x"), None);
    }
}
