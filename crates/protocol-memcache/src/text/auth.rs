//! memcached's ASCII authentication exchange (`-Y FILE`, `proto_text.c`'s
//! `try_read_command_asciiauth` in 1.6.18): before a connection is authenticated, every line
//! must be a `set <key> <flags> <exptime> <bytes> ...` whose data block is
//! `<user> <password>`; anything else is answered `CLIENT_ERROR unauthenticated`.
//!
//! Bytes only: [`auth_line`] reads the command line, [`auth_token`] the data block; the
//! server checks the pair against its file and answers with the replies below.

use super::Tokens;
use crate::number::parse_u32;

/// The reply to anything but the authentication `set` before authentication.
pub const UNAUTHENTICATED: &[u8] = b"CLIENT_ERROR unauthenticated\r\n";
/// The data block did not end with `\r\n`.
pub const BAD_TERMINATION: &[u8] = b"CLIENT_ERROR bad command line termination\r\n";
/// The data block is not two space-separated tokens.
pub const BAD_FORMAT: &[u8] = b"CLIENT_ERROR bad authentication token format\r\n";
/// Unknown user or wrong password.
pub const FAILURE: &[u8] = b"CLIENT_ERROR authentication failure\r\n";
/// Authenticated (memcached answers the `set` as if it stored, `noreply` or not).
pub const STORED: &[u8] = b"STORED\r\n";
/// memcached closes an unauthenticated connection whose first line is longer than this
/// without a newline.
pub const MAX_LINE: usize = 1024;

/// What C string functions see of `b`: the bytes before the first NUL.
fn c_str(b: &[u8]) -> &[u8] {
    b.iter().position(|&c| c == 0).map_or(b, |i| &b[..i])
}

/// The command line (without its `\n`; a `\r` stays, as memcached leaves it): the data
/// block's length if it is an authentication `set` (`set` and at least four arguments, the
/// fourth a number), else `None` (answer [`UNAUTHENTICATED`]).
pub fn auth_line(line: &[u8]) -> Option<u32> {
    let t = Tokens::new(c_str(line));
    // memcached counts a final empty token: "ntokens < 6" is fewer than five real ones.
    if t.len() < 5 || t.get(0) != b"set" {
        return None;
    }
    parse_u32(t.get(4))
}

/// Why a data block did not authenticate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenError {
    /// Not ended by `\r\n` ([`BAD_TERMINATION`]).
    Termination,
    /// Fewer than two tokens ([`BAD_FORMAT`]).
    Format,
}

impl TokenError {
    /// The reply line.
    pub fn reply(self) -> &'static [u8] {
        match self {
            TokenError::Termination => BAD_TERMINATION,
            TokenError::Format => BAD_FORMAT,
        }
    }
}

/// The data block with its `\r\n` (exactly `bytes + 2` bytes): the user and password (the
/// first two space-separated tokens; more are ignored, as memcached does).
pub fn auth_token(block: &[u8]) -> Result<(&[u8], &[u8]), TokenError> {
    let Some(data) = block.strip_suffix(b"\r\n") else { return Err(TokenError::Termination) };
    let t = Tokens::new(c_str(data));
    if t.len() < 2 {
        return Err(TokenError::Format);
    }
    Ok((t.get(0), t.get(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        assert_eq!(auth_line(b"set x 0 0 12\r"), Some(12));
        assert_eq!(auth_line(b"set x 0 0 12 noreply\r"), Some(12));
        assert_eq!(auth_line(b"set  x 0  0 7"), Some(7));
        assert_eq!(auth_line(b"set x 0 0"), None);
        assert_eq!(auth_line(b"add x 0 0 12"), None);
        assert_eq!(auth_line(b"cas x 0 0 12 1"), None);
        assert_eq!(auth_line(b"set x 0 0 bad"), None);
        assert_eq!(auth_line(b"set x 0 0 -1"), None);
        assert_eq!(auth_line(b"get foo\r"), None);
        assert_eq!(auth_line(b"set x 0\0 0 12"), None); // C strings end at NUL
    }

    #[test]
    fn tokens() {
        assert_eq!(auth_token(b"alice secret\r\n"), Ok((&b"alice"[..], &b"secret"[..])));
        assert_eq!(auth_token(b"bob pw2  \r\n"), Ok((&b"bob"[..], &b"pw2"[..])));
        assert_eq!(auth_token(b"  bob pw2 extra\r\n"), Ok((&b"bob"[..], &b"pw2"[..])));
        assert_eq!(auth_token(b"alice\r\n"), Err(TokenError::Format));
        assert_eq!(auth_token(b"alice\0 secret\r\n"), Err(TokenError::Format));
        assert_eq!(auth_token(b"alice secretXX"), Err(TokenError::Termination));
        assert_eq!(auth_token(b""), Err(TokenError::Termination));
    }

    /// Property: neither parser panics, and a token pair is always a pair of non-empty,
    /// space-free slices of the block.
    #[test]
    fn arbitrary_bytes() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let alphabet = b"set 0123456789 \r\n\0abc-";
        for _ in 0..20_000 {
            let len = (next() % 40) as usize;
            let buf: Vec<u8> = (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
            let _ = auth_line(&buf);
            if let Ok((u, p)) = auth_token(&buf) {
                for t in [u, p] {
                    assert!(!t.is_empty() && !t.contains(&b' ') && !t.contains(&0));
                }
            }
        }
    }
}
