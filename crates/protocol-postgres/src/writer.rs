//! Composing helpers (crate-internal): a typed message is its type byte, an int32 length
//! that counts itself and the body, then the body.

/// Appends `tag` and a placeholder length; returns where the length goes.
pub(crate) fn begin(out: &mut Vec<u8>, tag: u8) -> usize {
    out.push(tag);
    begin_untyped(out)
}

/// Appends a placeholder length (startup packets have no type byte).
pub(crate) fn begin_untyped(out: &mut Vec<u8>) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    at
}

/// Writes the length of everything from `at` to the end into the placeholder at `at`.
///
/// Bodies are bounded by the caller (a message of 1 GiB or more is refused by every peer);
/// the length wraps rather than panicking if one is not.
pub(crate) fn finish(out: &mut [u8], at: usize) {
    let len = (out.len() - at) as u32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

/// A NUL-terminated string. `s` must not contain NUL (the peer would read it as shorter).
pub(crate) fn cstr(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(s);
    out.push(0);
}

/// A 16-bit count (at most 65535 by construction of what is parsed).
pub(crate) fn count16(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u16).to_be_bytes());
}

/// An int32 length and the bytes, or -1 for NULL.
pub(crate) fn nullable_bytes(out: &mut Vec<u8>, v: Option<&[u8]>) {
    match v {
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        Some(b) => {
            out.extend_from_slice(&(b.len() as i32).to_be_bytes());
            out.extend_from_slice(b);
        }
    }
}

/// A count then the int16 values.
pub(crate) fn i16s(out: &mut Vec<u8>, v: &[i16]) {
    count16(out, v.len());
    for x in v {
        out.extend_from_slice(&x.to_be_bytes());
    }
}
