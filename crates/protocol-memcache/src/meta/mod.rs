//! Meta commands (`mg`, `ms`, `md`, `ma`, `mn`, `me`): parsing their flags with
//! memcached's checks (`_meta_flag_preparse`), and small helpers for composing replies.
//!
//! Reply flags follow the order of the request flags, so executors walk
//! [`MetaRequest::flag_tokens`] when composing a reply.

mod flags;

pub use flags::Flags;

use std::borrow::Cow;

use crate::ascii::{ParseError, Tokens, KEY_MAX_LENGTH};

/// Which meta command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaCmd {
    /// `mg`: get.
    Get,
    /// `ms`: set.
    Set,
    /// `md`: delete.
    Delete,
    /// `ma`: arithmetic.
    Arith,
    /// `mn`: no-op.
    Noop,
    /// `me`: debug dump of an item.
    Debug,
}

/// A parsed meta command.
#[derive(Debug)]
pub struct MetaRequest<'a> {
    /// The command.
    pub cmd: MetaCmd,
    /// The key (base64-decoded when the `b` flag was given).
    pub key: Cow<'a, [u8]>,
    /// `ms` data block length (without `\r\n`).
    pub datalen: usize,
    /// The parsed flags.
    pub flags: Flags,
    tokens: Tokens<'a>,
    first_flag: usize,
}

impl<'a> MetaRequest<'a> {
    /// The flag tokens in request order (each starts with its flag character).
    pub fn flag_tokens(&self) -> &[&'a [u8]] {
        self.tokens.from(self.first_flag)
    }
}

/// Longest opaque token (`O` plus 31 bytes), memcached's `MFLAG_MAX_OPAQUE_LENGTH`.
pub const MAX_OPAQUE_LENGTH: usize = 32;
/// memcached refuses meta lines with more tokens than this (`MFLAG_MAX_OPT_LENGTH`).
const MAX_OPT_TOKENS: usize = 20;

const BAD_FORMAT: ParseError = ParseError::reply("CLIENT_ERROR bad command line format");
const ERROR: ParseError = ParseError::reply("ERROR");

/// Parse a meta command whose two-letter name is `m` + `c`.
pub fn parse<'a>(c: u8, t: &Tokens<'a>) -> Result<MetaRequest<'a>, ParseError> {
    let ntokens = t.len() + 1;
    let key = t.get(1);
    let cmd = match c {
        b'n' => {
            return Ok(MetaRequest {
                cmd: MetaCmd::Noop,
                key: Cow::Borrowed(&[]),
                datalen: 0,
                flags: Flags::default(),
                tokens: t.clone(),
                first_flag: t.len(),
            })
        }
        b'g' => MetaCmd::Get,
        b's' => MetaCmd::Set,
        b'd' => MetaCmd::Delete,
        b'a' => MetaCmd::Arith,
        b'e' => MetaCmd::Debug,
        _ => return Err(ERROR),
    };
    match cmd {
        MetaCmd::Debug => return parse_debug(t),
        MetaCmd::Set => return parse_set(t),
        _ => {}
    }
    if ntokens < 3 {
        return Err(ERROR);
    }
    if key.len() > KEY_MAX_LENGTH {
        return Err(BAD_FORMAT);
    }
    if ntokens > MAX_OPT_TOKENS {
        return Err(ParseError::reply(if cmd == MetaCmd::Get {
            "CLIENT_ERROR options flags are too long"
        } else {
            "CLIENT_ERROR options flags too long"
        }));
    }
    let (flags, key) = match Flags::parse(key, t.from(2)) {
        Ok(v) => v,
        Err(e) if cmd == MetaCmd::Get => return Err(ParseError::reply(e)),
        Err(_) => return Err(ParseError::reply("CLIENT_ERROR invalid or duplicate flag")),
    };
    if cmd == MetaCmd::Arith {
        if let Some(m) = flags.mode {
            if !matches!(m, b'I' | b'+' | b'D' | b'-') {
                return Err(ParseError::reply("CLIENT_ERROR invalid mode for ma M token"));
            }
        }
    }
    check_opaque(t.from(2))?;
    Ok(MetaRequest { cmd, key, datalen: 0, flags, tokens: t.clone(), first_flag: 2 })
}

fn check_opaque(flags: &[&[u8]]) -> Result<(), ParseError> {
    if flags.iter().any(|f| f.first() == Some(&b'O') && f.len() > MAX_OPAQUE_LENGTH) {
        return Err(ParseError::reply("CLIENT_ERROR opaque token too long"));
    }
    Ok(())
}

/// `ms <key> <datalen> <flags>*`: errors found after the length is known swallow the
/// data block, as memcached does.
fn parse_set<'a>(t: &Tokens<'a>) -> Result<MetaRequest<'a>, ParseError> {
    let ntokens = t.len() + 1;
    if ntokens < 3 {
        return Err(ERROR);
    }
    if ntokens > MAX_OPT_TOKENS {
        return Err(ParseError::reply("CLIENT_ERROR options flags too long"));
    }
    if ntokens == 3 || t.get(1).len() > KEY_MAX_LENGTH {
        return Err(BAD_FORMAT);
    }
    let vlen = match crate::number::parse_i32(t.get(2)) {
        Some(v) if (0..=i32::MAX - 2).contains(&v) => v as usize,
        _ => return Err(BAD_FORMAT),
    };
    let swallow = |msg| ParseError { msg, silent: false, swallow: vlen + 2, close: false };
    let (flags, key) = Flags::parse(t.get(1), t.from(3)).map_err(swallow)?;
    if t.from(3).iter().any(|f| f.first() == Some(&b'O') && f.len() > MAX_OPAQUE_LENGTH) {
        return Err(swallow("CLIENT_ERROR opaque token too long"));
    }
    if let Some(m) = flags.mode {
        if !matches!(m, b'E' | b'A' | b'P' | b'R' | b'S') {
            return Err(swallow("CLIENT_ERROR invalid mode for ms M token"));
        }
    }
    Ok(MetaRequest { cmd: MetaCmd::Set, key, datalen: vlen, flags, tokens: t.clone(), first_flag: 3 })
}

/// `me <key> [b]`.
fn parse_debug<'a>(t: &Tokens<'a>) -> Result<MetaRequest<'a>, ParseError> {
    let ntokens = t.len() + 1;
    if !(3..=4).contains(&ntokens) || t.get(1).len() > KEY_MAX_LENGTH {
        return Err(BAD_FORMAT);
    }
    let mut flags = Flags::default();
    let mut key = Cow::Borrowed(t.get(1));
    if t.get(2) == b"b" {
        match flags::decode_key(t.get(1)) {
            Some(k) => key = Cow::Owned(k),
            None => return Err(BAD_FORMAT),
        }
        flags.base64 = true;
    }
    Ok(MetaRequest { cmd: MetaCmd::Debug, key, datalen: 0, flags, tokens: t.clone(), first_flag: t.len() })
}

/// Append ` <c><value>` to a reply line.
pub fn push_flag(out: &mut Vec<u8>, c: u8, value: &[u8]) {
    out.push(b' ');
    out.push(c);
    out.extend_from_slice(value);
}

/// Append ` <c><number>` to a reply line.
pub fn push_num(out: &mut Vec<u8>, c: u8, n: impl itoa::Integer) {
    let mut buf = itoa::Buffer::new();
    push_flag(out, c, buf.format(n).as_bytes());
}

/// Append ` k<key>`, base64-encoded with a trailing ` b` when the key is binary.
pub fn push_key(out: &mut Vec<u8>, key: &[u8], binary: bool) {
    if binary {
        push_flag(out, b'k', flags::encode_key(key).as_bytes());
        out.extend_from_slice(b" b");
    } else {
        push_flag(out, b'k', key);
    }
}
