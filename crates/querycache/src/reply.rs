//! Which backend replies may be stored: complete result sets only, ending without
//! warnings, more results, session-state changes, an open transaction or a cursor.

use protocol_mysql::reply::read_status;
use protocol_mysql::{
    SERVER_MORE_RESULTS_EXISTS, SERVER_SESSION_STATE_CHANGED, SERVER_STATUS_CURSOR_EXISTS, SERVER_STATUS_IN_TRANS,
};

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
    let Some((status, warnings)) = read_status(last, deprecate_eof) else { return false };
    let unsafe_status = SERVER_MORE_RESULTS_EXISTS
        | SERVER_STATUS_CURSOR_EXISTS
        | SERVER_SESSION_STATE_CHANGED
        | SERVER_STATUS_IN_TRANS;
    warnings == 0 && status & unsafe_status == 0
}
