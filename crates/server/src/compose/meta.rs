//! Meta protocol replies from outcomes (memory or container alike): the return code, then
//! the requested flags in the request's order, `O` and `k` echoed on every reply.

use engine::ops::{ArithOutcome, DeleteOutcome, StoreOutcome};
use protocol_memcache::meta;
use protocol_memcache::text::reply;

use crate::pending::Fail;

/// What a meta reply echoes from its request (borrowed from the read buffer, or owned by
/// a pending job: `T` is `&[u8]` or `Vec<u8>`).
pub struct Echo<'a, T: AsRef<[u8]>> {
    /// The request's flag tokens, in order.
    pub tokens: &'a [T],
    /// The key as decoded (echoed by `k`, base64 again under `b`).
    pub key: &'a [u8],
    /// `b`: the key is base64 on the wire.
    pub b64: bool,
    /// `q`: hide the nominal reply.
    pub quiet: bool,
}

impl<T: AsRef<[u8]>> Echo<'_, T> {
    /// The tokens in order.
    fn each(&self) -> impl Iterator<Item = &[u8]> {
        self.tokens.iter().map(|t| t.as_ref()).filter(|t| !t.is_empty())
    }

    /// Append the reply flags in request order: `O` and `k` here (every meta reply echoes
    /// them), any other token by `other` (the command's own: `c`, `t`, `s`, ...).
    pub fn flags(&self, out: &mut Vec<u8>, mut other: impl FnMut(&mut Vec<u8>, &[u8])) {
        for tok in self.each() {
            match tok[0] {
                b'O' => {
                    out.push(b' ');
                    out.extend_from_slice(tok);
                }
                b'k' => meta::push_key(out, self.key, self.b64),
                _ => other(out, tok),
            }
        }
    }

    /// Append `O` and `k` alone (misses and errors).
    pub fn opaque_and_key(&self, out: &mut Vec<u8>) {
        self.flags(out, |_, _| {});
    }

    /// A bare return code with `O` and `k` (hidden under `q` when `code` is nominal).
    pub fn code(&self, out: &mut Vec<u8>, code: &[u8], nominal: bool) {
        if self.quiet && nominal {
            return;
        }
        out.extend_from_slice(code);
        self.opaque_and_key(out);
        out.extend_from_slice(b"\r\n");
    }
}

/// A hit as the flags see it.
pub struct Hit<'a> {
    /// The value.
    pub value: &'a [u8],
    /// Client flags.
    pub flags: u32,
    /// CAS unique (0 with `-C`).
    pub cas: u64,
    /// Seconds left, -1 for none.
    pub ttl: i64,
}

/// Append a hit's `s`, `t`, `c`, `f` or `O` flag for `tok`; false for other flags (the
/// caller's own: `k`, `l`, `h`, `T`, `N`, `R`, ...).
pub fn hit_flag(out: &mut Vec<u8>, tok: &[u8], hit: &Hit<'_>) -> bool {
    match tok[0] {
        b's' => meta::push_num(out, b's', hit.value.len()),
        b't' => meta::push_num(out, b't', hit.ttl),
        b'c' => meta::push_num(out, b'c', hit.cas),
        b'f' => meta::push_num(out, b'f', hit.flags),
        b'O' => {
            out.push(b' ');
            out.extend_from_slice(tok);
        }
        _ => return false,
    }
    true
}

/// The start of a value reply: `VA <len>` with `v`, else `HD`.
pub fn head(out: &mut Vec<u8>, with_value: bool, len: usize) {
    if with_value {
        out.extend_from_slice(b"VA ");
        out.extend_from_slice(itoa::Buffer::new().format(len).as_bytes());
    } else {
        out.extend_from_slice(b"HD");
    }
}

/// The end of a value reply: `\r\n`, then the data block with `v`.
pub fn tail(out: &mut Vec<u8>, with_value: bool, value: &[u8]) {
    out.extend_from_slice(b"\r\n");
    if with_value {
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
}

/// `mg` on a tier that has no stampede state (a container): `EN`, or the hit's flags;
/// `ttls`: what each `t` reports in turn (flags apply in order: a `t` before `T` shows the
/// TTL before the touch), `hit.ttl` once exhausted.
pub fn get<T: AsRef<[u8]>>(
    out: &mut Vec<u8>,
    e: &Echo<'_, T>,
    with_value: bool,
    hit: Option<Hit<'_>>,
    ttls: &mut dyn Iterator<Item = i64>,
) {
    let Some(hit) = hit else {
        return e.code(out, b"EN", true);
    };
    head(out, with_value, hit.value.len());
    e.flags(out, |out, tok| {
        if tok[0] == b't' {
            meta::push_num(out, b't', ttls.next().unwrap_or(hit.ttl));
        } else {
            hit_flag(out, tok, &hit);
        }
    });
    tail(out, with_value, hit.value);
}

/// The reply to `ms`.
pub fn store<T: AsRef<[u8]>>(out: &mut Vec<u8>, e: &Echo<'_, T>, r: Result<StoreOutcome, Fail>) {
    let (code, cas): (&[u8], u64) = match r {
        Ok(StoreOutcome::Stored(cas)) => (b"HD", cas),
        Ok(StoreOutcome::NotStored) => (b"NS", 0),
        Ok(StoreOutcome::Exists) => (b"EX", 0),
        Ok(StoreOutcome::NotFound) => (b"NF", 0),
        Ok(StoreOutcome::NoMemory) => return out.extend_from_slice(reply::NO_MEMORY),
        Err(f) => return out.extend_from_slice(&f.line()),
    };
    if e.quiet && code == b"HD" {
        return;
    }
    out.extend_from_slice(code);
    e.flags(out, |out, tok| {
        if tok[0] == b'c' {
            meta::push_num(out, b'c', cas);
        }
    });
    out.extend_from_slice(b"\r\n");
}

/// The reply to `md`.
pub fn delete<T: AsRef<[u8]>>(out: &mut Vec<u8>, e: &Echo<'_, T>, r: Result<DeleteOutcome, Fail>) {
    match r {
        Ok(DeleteOutcome::Deleted) => e.code(out, b"HD", true),
        Ok(DeleteOutcome::NotFound) => e.code(out, b"NF", false),
        Ok(DeleteOutcome::Exists) => e.code(out, b"EX", false),
        Err(f) => out.extend_from_slice(&f.line()),
    }
}

/// The reply to `ma`; `ttls`: what each `t` flag reports in turn (-1 once exhausted:
/// no TTL known).
pub fn arith<T: AsRef<[u8]>>(
    out: &mut Vec<u8>,
    e: &Echo<'_, T>,
    with_value: bool,
    r: Result<ArithOutcome, Fail>,
    ttls: &mut dyn Iterator<Item = i64>,
) {
    let (value, cas, created) = match r {
        Ok(ArithOutcome::Done { value, cas, created }) => (value, cas, created),
        Ok(ArithOutcome::NonNumeric) => return out.extend_from_slice(reply::NON_NUMERIC),
        Ok(ArithOutcome::NoMemory) => return out.extend_from_slice(b"SERVER_ERROR out of memory\r\n"),
        Ok(ArithOutcome::Exists) => return e.code(out, b"EX", false),
        Ok(ArithOutcome::NotFound) => return e.code(out, b"NF", false),
        Err(f) => return out.extend_from_slice(&f.line()),
    };
    // memcached hides a nominal reply under `q`, except right after auto-creating.
    if e.quiet && !created {
        return;
    }
    let text = itoa::Buffer::new().format(value).as_bytes().to_vec();
    head(out, with_value, text.len());
    e.flags(out, |out, tok| match tok[0] {
        b'c' => meta::push_num(out, b'c', cas),
        b't' => meta::push_num(out, b't', ttls.next().unwrap_or(-1)),
        _ => {}
    });
    tail(out, with_value, &text);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo<'a>(tokens: &'a [&'a [u8]], quiet: bool) -> Echo<'a, &'a [u8]> {
        Echo { tokens, key: b"foo", b64: false, quiet }
    }

    #[test]
    fn flags_follow_the_request_order() {
        let toks: [&[u8]; 4] = [b"c", b"Oab", b"k", b"s"];
        let mut v = Vec::new();
        let hit = Hit { value: b"xyz", flags: 5, cas: 9, ttl: -1 };
        get(&mut v, &echo(&toks, false), true, Some(hit), &mut std::iter::empty());
        assert_eq!(v, b"VA 3 c9 Oab kfoo s3\r\nxyz\r\n");
    }

    #[test]
    fn quiet_hides_only_nominal_codes() {
        let toks: [&[u8]; 1] = [b"q"];
        let mut v = Vec::new();
        delete(&mut v, &echo(&toks, true), Ok(DeleteOutcome::Deleted));
        assert!(v.is_empty());
        delete(&mut v, &echo(&toks, true), Ok(DeleteOutcome::NotFound));
        assert_eq!(v, b"NF\r\n");
        v.clear();
        let created = ArithOutcome::Done { value: 0, cas: 1, created: true };
        arith(&mut v, &echo(&toks, true), false, Ok(created), &mut std::iter::empty());
        assert_eq!(v, b"HD\r\n");
    }
}
