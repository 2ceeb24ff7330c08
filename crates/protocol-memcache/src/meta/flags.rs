//! Meta flags, as memcached's `_meta_flag_preparse`.

use std::borrow::Cow;

use base64::Engine as _;

use crate::number::{parse_i32, parse_u32, parse_u64};

/// The flags of a meta command, with their tokens parsed.
#[derive(Debug, Clone)]
pub struct Flags {
    /// `b`: the key is base64.
    pub base64: bool,
    /// `v`: return the value.
    pub value: bool,
    /// `q`: noreply semantics for nominal replies.
    pub quiet: bool,
    /// `u`: do not bump the item.
    pub no_bump: bool,
    /// `I`: invalidate / allow a stale CAS.
    pub invalidate: bool,
    /// `N<ttl>`: vivify on miss (auto-create for `ma`).
    pub vivify: Option<i32>,
    /// `T<ttl>`: new TTL.
    pub ttl: Option<i32>,
    /// `R<ttl>`: win the recache if the TTL left is below this.
    pub recache: Option<i32>,
    /// `F<flags>`: client flags (`ms`).
    pub client_flags: u32,
    /// `C<cas>`: compare CAS.
    pub cas: Option<u64>,
    /// `M<mode>`: mode switch.
    pub mode: Option<u8>,
    /// `J<n>`: initial value for `ma` auto-create.
    pub initial: u64,
    /// `D<n>`: delta for `ma`.
    pub delta: u64,
}

impl Default for Flags {
    fn default() -> Self {
        Flags {
            base64: false,
            value: false,
            quiet: false,
            no_bump: false,
            invalidate: false,
            vivify: None,
            ttl: None,
            recache: None,
            client_flags: 0,
            cas: None,
            mode: None,
            initial: 0,
            delta: 1,
        }
    }
}

const BAD_TOKEN: &str = "CLIENT_ERROR bad token in command line format";

impl Flags {
    /// Parse flag tokens; returns the flags and the (decoded) key, or memcached's error.
    pub fn parse<'a>(key: &'a [u8], tokens: &[&[u8]]) -> Result<(Flags, Cow<'a, [u8]>), &'static str> {
        let mut f = Flags::default();
        let mut key = Cow::Borrowed(key);
        let mut seen = [false; 128];
        let mut err: Option<&'static str> = None;
        for tok in tokens {
            let o = tok[0];
            if o >= 127 || seen[o as usize] {
                return Err("CLIENT_ERROR duplicate flag");
            }
            seen[o as usize] = true;
            let arg = &tok[1..];
            match o {
                b'b' => match decode_key(&key) {
                    Some(k) => {
                        key = Cow::Owned(k);
                        f.base64 = true;
                    }
                    None => err = Some("CLIENT_ERROR error decoding key"),
                },
                b'N' => match parse_i32(arg) {
                    Some(v) => f.vivify = Some(v),
                    None => err = Some(BAD_TOKEN),
                },
                b'T' => match parse_i32(arg) {
                    Some(v) => f.ttl = Some(v),
                    None => err = Some(BAD_TOKEN),
                },
                b'R' => match parse_i32(arg) {
                    Some(v) => f.recache = Some(v),
                    None => err = Some(BAD_TOKEN),
                },
                b'l' | b'O' | b'P' | b'L' | b'k' | b's' | b't' | b'c' | b'f' | b'h' => {}
                b'v' => f.value = true,
                b'u' => f.no_bump = true,
                b'q' => f.quiet = true,
                b'F' => match parse_u32(arg) {
                    Some(v) => f.client_flags = v,
                    None => err = err.or(Some("CLIENT_ERROR bad command line format")),
                },
                b'C' => match parse_u64(arg) {
                    Some(v) => f.cas = Some(v),
                    None => err = Some(BAD_TOKEN),
                },
                b'M' => {
                    if tok.len() != 2 {
                        err = Some("CLIENT_ERROR incorrect length for M token");
                    } else {
                        f.mode = Some(tok[1]);
                    }
                }
                b'J' => match parse_u64(arg) {
                    Some(v) => f.initial = v,
                    None => err = Some("CLIENT_ERROR invalid numeric initial value"),
                },
                b'D' => match parse_u64(arg) {
                    Some(v) => f.delta = v,
                    None => err = Some("CLIENT_ERROR invalid numeric delta value"),
                },
                b'I' => f.invalidate = true,
                _ => return Err("CLIENT_ERROR invalid flag"),
            }
        }
        match err {
            Some(e) => Err(e),
            None => Ok((f, key)),
        }
    }
}

/// Decode a base64 key (`b` flag); `None` if it is not valid base64 or decodes to nothing.
pub fn decode_key(key: &[u8]) -> Option<Vec<u8>> {
    match base64::engine::general_purpose::STANDARD.decode(key) {
        Ok(k) if !k.is_empty() => Some(k),
        _ => None,
    }
}

/// Encode a binary key for a reply.
pub fn encode_key(key: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(key)
}
