//! Request generation: keys, values and get/set/multiget commands of the text protocol.

use crate::args::Args;
use crate::keys::{KeySource, Rng};

#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Get { nkeys: u32 },
    Set,
}

/// Keys are `<prefix><index as 8+ zero-padded digits>`; a value of size S for key index i is
/// i's 8 digits followed by a fixed filler, so a reply can be checked against the key it carries.
pub(crate) struct Gen {
    pub(crate) prefix: Vec<u8>,
    pub(crate) filler: Vec<u8>,
    pub(crate) value_size: usize,
    pub(crate) set_ratio: f64,
    pub(crate) mget: usize,
    pub(crate) keys: KeySource,
    pub(crate) rng: Rng,
}

pub(crate) const DIGITS: usize = 8;

impl Gen {
    pub(crate) fn push_key(&self, out: &mut Vec<u8>, idx: u64) {
        out.extend_from_slice(&self.prefix);
        push_digits(out, idx);
    }

    pub(crate) fn next_index(&mut self) -> Option<u64> {
        match &mut self.keys {
            KeySource::Random(n) => {
                let n = *n;
                Some(self.rng.below(n))
            }
            KeySource::Zipf(z) => {
                let z = *z;
                Some(z.index(self.rng.unit()))
            }
            KeySource::Seq { next, end } => {
                if *next >= *end {
                    None
                } else {
                    *next += 1;
                    Some(*next - 1)
                }
            }
        }
    }

    pub(crate) fn exhausted(&self) -> bool {
        matches!(self.keys, KeySource::Seq { next, end } if next >= end)
    }

    /// Append one request to `out`; None once a sequential key source is used up.
    pub(crate) fn push_request(&mut self, out: &mut Vec<u8>) -> Option<Kind> {
        let is_set = self.set_ratio >= 1.0 || (self.set_ratio > 0.0 && self.rng.unit() < self.set_ratio);
        let first = self.next_index()?;
        if is_set {
            out.extend_from_slice(b"set ");
            self.push_key(out, first);
            out.extend_from_slice(b" 0 0 ");
            push_decimal(out, self.value_size as u64);
            out.extend_from_slice(b"\r\n");
            let start = out.len();
            out.extend_from_slice(&self.filler);
            if self.value_size >= DIGITS {
                let mut d = Vec::with_capacity(12);
                push_digits(&mut d, first);
                let d = &d[d.len() - DIGITS..];
                out[start..start + DIGITS].copy_from_slice(d);
            }
            out.extend_from_slice(b"\r\n");
            Some(Kind::Set)
        } else {
            out.extend_from_slice(b"get ");
            self.push_key(out, first);
            let mut n = 1u32;
            while (n as usize) < self.mget {
                let Some(idx) = self.next_index() else { break };
                out.push(b' ');
                self.push_key(out, idx);
                n += 1;
            }
            out.extend_from_slice(b"\r\n");
            Some(Kind::Get { nkeys: n })
        }
    }
}

pub(crate) fn push_decimal(out: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&tmp[i..]);
}

/// At least DIGITS digits, zero-padded.
pub(crate) fn push_digits(out: &mut Vec<u8>, v: u64) {
    let mut tmp = [b'0'; 20];
    let mut i = tmp.len();
    let mut v = v;
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let start = i.min(tmp.len() - DIGITS);
    out.extend_from_slice(&tmp[start..]);
}

pub(crate) fn make_gen(a: &Args, keys: KeySource, seed: u64) -> Gen {
    let value_size: usize = a.num("value-size", 32);
    Gen {
        prefix: a.str("prefix", "key:").into_bytes(),
        filler: (0..value_size).map(|i| b'a' + (i % 26) as u8).collect(),
        value_size,
        set_ratio: a.num("set-ratio", 0.0),
        mget: a.num::<usize>("mget", 1).max(1),
        keys,
        rng: Rng::new(seed),
    }
}
