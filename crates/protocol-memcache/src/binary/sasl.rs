//! SASL in the binary protocol (memcached's `-S`): the PLAIN message (RFC 4616) clients
//! send in SASL_AUTH / SASL_STEP, and the line format of memcached's built-in password
//! database (`MEMCACHED_SASL_PWDB`, `sasl_defs.c`). Bytes only, no I/O.

/// Longest mechanism name memcached takes in a SASL_AUTH/SASL_STEP key
/// (`MAX_SASL_MECH_LEN`); a longer one gets "Invalid arguments".
pub const MAX_SASL_MECH_LEN: usize = 32;

/// The mechanism list SASL_LIST_MECHS answers (memcached's Cyrus list, with only PLAIN).
pub const MECHANISMS: &[u8] = b"PLAIN";

/// memcached's `MAX_ENTRY_LEN`: password-file lines are read in pieces of this size minus one.
const MAX_ENTRY_LEN: usize = 256;

/// A PLAIN message: `[authzid] NUL authcid NUL passwd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plain<'a> {
    /// Who to act as (empty: the authenticating user).
    pub authzid: &'a [u8],
    /// The user name.
    pub authcid: &'a [u8],
    /// The password.
    pub passwd: &'a [u8],
}

/// Split a PLAIN message; `None` unless it has exactly two NULs and a user name.
pub fn parse_plain(msg: &[u8]) -> Option<Plain<'_>> {
    let mut parts = msg.split(|&b| b == 0);
    let (authzid, authcid, passwd) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || authcid.is_empty() {
        return None;
    }
    Some(Plain { authzid, authcid, passwd })
}

/// Whether the password file `file` lets `user` in with `pass`, as memcached's
/// `sasl_server_userdb_checkpass`: the file is read in pieces of at most 255 bytes (each
/// line, or each 255-byte part of a longer one); the first piece that starts with
/// `user:` decides; it matches when `pass` follows and then `:`, a line end or the end
/// of the piece. A user name and password longer than 252 bytes together never match.
pub fn pwdb_allows(file: &[u8], user: &[u8], pass: &[u8]) -> bool {
    if user.len() + pass.len() > MAX_ENTRY_LEN - 4 {
        return false;
    }
    let mut rest = file;
    while !rest.is_empty() {
        let limit = rest.len().min(MAX_ENTRY_LEN - 1);
        let end = rest[..limit].iter().position(|&b| b == b'\n').map_or(limit, |nl| nl + 1);
        let piece = &rest[..end];
        rest = &rest[end..];
        if piece.len() > user.len() && piece.starts_with(user) && piece[user.len()] == b':' {
            let after = &piece[user.len() + 1..];
            return after.starts_with(pass) && matches!(after.get(pass.len()), None | Some(b':' | b'\n' | b'\r' | 0));
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_messages() {
        let p = parse_plain(b"\0alice\0secret").unwrap();
        assert_eq!((p.authzid, p.authcid, p.passwd), (&b""[..], &b"alice"[..], &b"secret"[..]));
        assert_eq!(parse_plain(b"bob\0alice\0pw").unwrap().authzid, b"bob");
        assert!(parse_plain(b"alicesecret").is_none());
        assert!(parse_plain(b"\0\0pw").is_none());
        assert!(parse_plain(b"\0a\0b\0c").is_none());
        assert!(parse_plain(b"").is_none());
    }

    #[test]
    fn password_file_lines() {
        let f = b"alice:secret\nbob:pw2:extra\r\ncarol:x\n";
        assert!(pwdb_allows(f, b"alice", b"secret"));
        assert!(!pwdb_allows(f, b"alice", b"secre"));
        assert!(!pwdb_allows(f, b"alice", b"secrets"));
        assert!(pwdb_allows(f, b"bob", b"pw2"));
        assert!(pwdb_allows(f, b"carol", b"x"));
        assert!(!pwdb_allows(f, b"ali", b"ce:secret"));
        assert!(!pwdb_allows(f, b"dave", b""));
        // The first line of a user decides.
        assert!(!pwdb_allows(b"alice:one\nalice:two\n", b"alice", b"two"));
        // No newline at the end of the file.
        assert!(pwdb_allows(b"alice:secret", b"alice", b"secret"));
        let long = [b'x'; 300];
        assert!(!pwdb_allows(&long, &long[..200], &long[..60]));
    }
}
