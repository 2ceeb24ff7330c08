//! Which backend replies may be stored: complete result sets only, ending without
//! warnings, more results, session-state changes or a cursor; the transaction bits of
//! their final status are rewritten for each session served.

use protocol_mysql::reply::{read_status, status_offset};
use protocol_mysql::{
    SERVER_MORE_RESULTS_EXISTS, SERVER_SESSION_STATE_CHANGED, SERVER_STATUS_AUTOCOMMIT, SERVER_STATUS_CURSOR_EXISTS,
    SERVER_STATUS_IN_TRANS, SERVER_STATUS_IN_TRANS_READONLY,
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
    // The transaction bits are rewritten for each session that is served ([`set_txn_status`]).
    let unsafe_status = SERVER_MORE_RESULTS_EXISTS | SERVER_STATUS_CURSOR_EXISTS | SERVER_SESSION_STATE_CHANGED;
    warnings == 0 && status & unsafe_status == 0
}

/// Rewrites the transaction bits of the final status of a stored reply (packets with
/// headers) for the session it is served to: IN_TRANS, IN_TRANS_READONLY and AUTOCOMMIT as
/// given, every other flag as the backend sent it. False if the reply has no readable
/// terminator (it is then left alone).
pub(crate) fn set_txn_status(
    reply: &mut [u8],
    deprecate_eof: bool,
    in_trans: bool,
    read_only: bool,
    autocommit: bool,
) -> bool {
    let mut pos = 0;
    let mut last = None;
    while let Some(h) = reply.get(pos..pos + 4) {
        let len = h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16;
        if pos + 4 + len > reply.len() {
            return false;
        }
        last = Some((pos + 4, len));
        pos += 4 + len;
    }
    let Some((start, len)) = last else { return false };
    let Some(at) = status_offset(&reply[start..start + len], deprecate_eof) else { return false };
    let i = start + at;
    let mut status = u16::from_le_bytes([reply[i], reply[i + 1]]);
    let bits = SERVER_STATUS_IN_TRANS | SERVER_STATUS_IN_TRANS_READONLY | SERVER_STATUS_AUTOCOMMIT;
    status &= !bits;
    if in_trans {
        status |= SERVER_STATUS_IN_TRANS;
    }
    if in_trans && read_only {
        status |= SERVER_STATUS_IN_TRANS_READONLY;
    }
    if autocommit {
        status |= SERVER_STATUS_AUTOCOMMIT;
    }
    reply[i..i + 2].copy_from_slice(&status.to_le_bytes());
    true
}
