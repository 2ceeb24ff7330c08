//! Which backend replies may be stored: complete result sets only, ending without
//! warnings, more results, session-state changes, an open transaction or a cursor.

const MORE_RESULTS: u16 = 0x0008;
const CURSOR_EXISTS: u16 = 0x0040;
const SESSION_STATE_CHANGED: u16 = 0x4000;
const IN_TRANS: u16 = 0x0001;

fn lenenc(b: &[u8], pos: &mut usize) -> Option<u64> {
    let first = *b.get(*pos)?;
    let (n, v) = match first {
        0..=0xfa => {
            return {
                *pos += 1;
                Some(first as u64)
            }
        }
        0xfc => (2, 0),
        0xfd => (3, 0),
        0xfe => (8, 0),
        _ => return None,
    };
    let bytes = b.get(*pos + 1..*pos + 1 + n)?;
    let mut x: u64 = v;
    for (i, by) in bytes.iter().enumerate() {
        x |= (*by as u64) << (8 * i);
    }
    *pos += 1 + n;
    Some(x)
}

/// Whether `reply` (packets with headers, first sequence id 1) is a clean result set.
pub(crate) fn storable(reply: &[u8], deprecate_eof: bool) -> bool {
    let mut pos = 0;
    let mut seq: u8 = 1;
    let mut first: Option<&[u8]> = None;
    let mut last: &[u8] = &[];
    while pos < reply.len() {
        let Some(h) = reply.get(pos..pos + 4) else { return false };
        let len = h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16;
        if h[3] != seq || len == 0xff_ffff {
            return false;
        }
        let Some(p) = reply.get(pos + 4..pos + 4 + len) else { return false };
        first.get_or_insert(p);
        last = p;
        seq = seq.wrapping_add(1);
        pos += 4 + len;
    }
    match first.and_then(|p| p.first()) {
        Some(0x00 | 0xff | 0xfb) | None => return false,
        _ => {}
    }
    if last.first() != Some(&0xfe) || last.len() >= 0xff_ffff {
        return false;
    }
    let (warnings, status) = if deprecate_eof {
        let mut i = 1;
        if lenenc(last, &mut i).is_none() || lenenc(last, &mut i).is_none() {
            return false;
        }
        let Some(s) = last.get(i..i + 4) else { return false };
        (u16::from_le_bytes([s[2], s[3]]), u16::from_le_bytes([s[0], s[1]]))
    } else {
        let Some(s) = last.get(1..5) else { return false };
        (u16::from_le_bytes([s[0], s[1]]), u16::from_le_bytes([s[2], s[3]]))
    };
    warnings == 0 && status & (MORE_RESULTS | CURSOR_EXISTS | SESSION_STATE_CHANGED | IN_TRANS) == 0
}
