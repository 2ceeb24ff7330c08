//! `incr` / `decr`, as memcached's `do_add_delta`: unsigned 64-bit, wrapping on
//! increment, stopping at 0 on decrement.

use crate::item::Item;
use crate::store::Engine;
use crate::tier::Receipt;

/// An arithmetic request.
#[derive(Clone, Copy, Debug)]
pub struct ArithRequest<'a> {
    /// The key.
    pub key: &'a [u8],
    /// `true` for incr, `false` for decr.
    pub incr: bool,
    /// The amount.
    pub delta: u64,
    /// CAS unique to compare (0: none).
    pub cas: u64,
    /// On a miss, create the item with this value and client exptime (binary, meta `N`).
    pub create: Option<(u64, i64)>,
    /// On success, set this client exptime (meta `T`).
    pub touch: Option<i64>,
}

/// What an arithmetic request did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOutcome {
    /// The new value and CAS unique (created: whether the item was auto-created).
    Done {
        /// The value after the operation.
        value: u64,
        /// The item's new CAS unique.
        cas: u64,
        /// Whether the item did not exist and was created.
        created: bool,
    },
    /// No such key.
    NotFound,
    /// The stored value is not a decimal number.
    NonNumeric,
    /// CAS mismatch.
    Exists,
    /// No memory for the new value.
    NoMemory,
}

/// memcached's `safe_strtoull`: optional leading whitespace and sign, decimal digits,
/// then whitespace or the end; a negative number is refused.
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
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
    if i < s.len() && !matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        return None;
    }
    if neg {
        let v = v.wrapping_neg();
        // strtoull negates; memcached refuses the result only if it looks negative.
        if (v as i64) < 0 {
            return None;
        }
        return Some(v);
    }
    Some(v)
}

/// Carry out incr/decr.
pub fn arith(engine: &Engine, req: &ArithRequest<'_>, receipt: &Receipt) -> ArithOutcome {
    let use_cas = engine.config().use_cas;
    let mut a = engine.access(req.key, receipt);
    let now = a.now();
    let found = a.lookup().ok().map(|it| (it.cas, it.flags, it.exptime, it.value().len()));
    let Some((cas, flags, exptime, len)) = found else {
        if req.incr {
            a.stats().incr_misses += 1;
        } else {
            a.stats().decr_misses += 1;
        }
        let Some((initial, exp)) = req.create else {
            return ArithOutcome::NotFound;
        };
        let rel = engine.clock().realtime(exp);
        let item = Item::new(req.key, &[initial.to_string().as_bytes()], 0, rel, now);
        return match a.store(item) {
            Ok(c) => ArithOutcome::Done { value: initial, cas: if use_cas { c } else { 0 }, created: true },
            Err(_) => ArithOutcome::NoMemory,
        };
    };
    // memcached refuses an empty value before it looks at the CAS.
    if len == 0 {
        return ArithOutcome::NonNumeric;
    }
    if req.cas != 0 && req.cas != cas {
        return ArithOutcome::Exists;
    }
    let it = a.lookup().expect("present");
    let Some(value) = add_delta(it.value(), req.incr, req.delta) else {
        return ArithOutcome::NonNumeric;
    };
    if req.incr {
        a.stats().incr_hits += 1;
    } else {
        a.stats().decr_hits += 1;
    }
    let text = value.to_string();
    let new_exptime = req.touch.map(|t| engine.clock().realtime(t)).unwrap_or(exptime);
    let new_cas;
    if text.len() <= len {
        // memcached rewrites in place and pads with spaces when the number got shorter.
        let it = a.lookup().expect("present");
        let v = it.value_mut();
        v[..text.len()].copy_from_slice(text.as_bytes());
        v[text.len()..].fill(b' ');
        it.exptime = new_exptime;
        a.update();
        new_cas = a.new_cas();
        a.changed();
    } else {
        let item = Item::new(req.key, &[text.as_bytes()], flags, new_exptime, now);
        match a.store(item) {
            Ok(c) => new_cas = c,
            Err(_) => return ArithOutcome::NoMemory,
        }
    }
    ArithOutcome::Done { value, cas: if use_cas { new_cas } else { 0 }, created: false }
}

/// memcached's `do_add_delta` on a stored value: the new number (incr wraps at 2^64,
/// decr stops at 0), or `None` if the value is not a number to memcached (empty, or not
/// what its `strtoull` accepts).
pub fn add_delta(value: &[u8], incr: bool, delta: u64) -> Option<u64> {
    let current = parse_u64_value(value)?;
    Some(if incr { current.wrapping_add(delta) } else { current.saturating_sub(delta) })
}

/// The bytes memcached stores for an incr/decr result over a value of `old_len` bytes: the
/// digits, padded with spaces to the old length when the number got shorter (memcached
/// rewrites the value in place), else just the digits.
pub fn padded(value: u64, old_len: usize) -> Vec<u8> {
    let mut v = value.to_string().into_bytes();
    if v.len() < old_len {
        v.resize(old_len, b' ');
    }
    v
}

/// Parse a stored value as memcached does: as a C string (up to a NUL) that memcached
/// follows with "\r\n", so the end of the value counts as whitespace.
fn parse_u64_value(v: &[u8]) -> Option<u64> {
    let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
    parse_u64(&v[..end])
}
