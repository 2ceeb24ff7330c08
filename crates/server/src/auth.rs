//! memcached's ASCII authentication (`-Y FILE`, memcached's `authfile.c`): a file of
//! `user:password` lines, loaded at start and again on SIGHUP; a connection authenticates
//! with a `set` whose data block is `<user> <password>` (`protocol_memcache::text::auth`).
//!
//! As memcached 1.6.18: every line must hold a `:` (a blank line is malformed), the user is
//! what precedes the first `:`, the password what follows it up to the end of the line; at
//! most 8 users are read (later lines are ignored, and sqlcached says so at load); an empty
//! file loads and lets nobody in (said too). A reload that fails keeps the users loaded
//! before (said at the default verbosity).

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;

/// memcached's `MAX_ENTRIES`.
pub const MAX_USERS: usize = 8;

/// One `user:password` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    user: Vec<u8>,
    pass: Vec<u8>,
}

/// Parse an authfile: the entries, how many lines past [`MAX_USERS`] were ignored, or
/// `Err(())` for a line without `:` (memcached's "malformed entry").
pub fn parse(text: &[u8]) -> Result<(Vec<Entry>, usize), ()> {
    let mut entries = Vec::new();
    let mut ignored = 0;
    let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    if lines.last() == Some(&&b""[..]) {
        lines.pop(); // the file's final newline ends the last line
    }
    for line in lines {
        let line = line.iter().position(|&b| b == 0).map_or(line, |i| &line[..i]);
        let Some(colon) = line.iter().position(|&b| b == b':') else { return Err(()) };
        let pass = &line[colon + 1..];
        let pass = pass.iter().position(|&b| b == b'\r').map_or(pass, |i| &pass[..i]);
        if entries.len() == MAX_USERS {
            ignored += 1;
            continue;
        }
        entries.push(Entry { user: line[..colon].to_vec(), pass: pass.to_vec() });
    }
    Ok((entries, ignored))
}

/// Compare without stopping at the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The loaded file and the authentication counters.
pub struct AuthFile {
    /// The file's path (`stats settings` shows it as `auth_enabled_ascii`).
    pub path: String,
    entries: RwLock<Vec<Entry>>,
    /// Authentication attempts (`auth_cmds`).
    pub cmds: AtomicU64,
    /// Failed ones (`auth_errors`).
    pub errors: AtomicU64,
}

impl AuthFile {
    /// Load `path`; the error is memcached's start-up message.
    pub fn load(path: &str) -> Result<AuthFile, String> {
        let entries = read(path)?;
        Ok(AuthFile { path: path.to_string(), entries: RwLock::new(entries), cmds: 0.into(), errors: 0.into() })
    }

    /// Read the file again (SIGHUP); on failure the users loaded before stay.
    pub fn reload(&self) {
        match read(&self.path) {
            Ok(e) => {
                log::info!("auth file {} reloaded: {} users", self.path, e.len());
                *self.entries.write() = e;
            }
            Err(e) => log::warn!("auth file not reloaded, the users loaded before stay: {e}"),
        }
    }

    /// Whether `user` / `pass` is in the file (counted in `auth_cmds` / `auth_errors`).
    pub fn check(&self, user: &[u8], pass: &[u8]) -> bool {
        self.cmds.fetch_add(1, Ordering::Relaxed);
        let ok = self.entries.read().iter().fold(false, |ok, e| ok | (same(&e.user, user) & same(&e.pass, pass)));
        if !ok {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        ok
    }

    /// `stats reset`.
    pub fn reset(&self) {
        self.cmds.store(0, Ordering::Relaxed);
        self.errors.store(0, Ordering::Relaxed);
    }
}

/// Read and parse the file, saying what a reader should know.
fn read(path: &str) -> Result<Vec<Entry>, String> {
    let text = std::fs::read(path).map_err(|e| {
        // strerror's text, as memcached prints it (without Rust's " (os error N)").
        let e = e.to_string();
        let reason = e.split(" (os error").next().unwrap_or_default();
        format!("Could not open authfile [{path}] for reading, error {reason}: {reason}")
    })?;
    let (entries, ignored) =
        parse(&text).map_err(|()| format!("Authfile [{path}] has a malformed entry. Should be 'user:password'"))?;
    if ignored > 0 {
        log::warn!("auth file {path}: only the first {MAX_USERS} users are read (as memcached): {ignored} ignored");
    }
    if entries.is_empty() {
        log::warn!("auth file {path} has no users: no client can authenticate");
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files() {
        let (e, n) = parse(b"alice:secret\nbob:pw:with:colons\r\n").unwrap();
        assert_eq!(n, 0);
        assert_eq!(e[0], Entry { user: b"alice".to_vec(), pass: b"secret".to_vec() });
        assert_eq!(e[1], Entry { user: b"bob".to_vec(), pass: b"pw:with:colons".to_vec() });
        assert_eq!(parse(b"").unwrap().0.len(), 0);
        assert!(parse(b"alice:secret\n\nbob:pw\n").is_err()); // a blank line is malformed
        assert!(parse(b"nocolon\n").is_err());
        let many: Vec<u8> = (0..10).flat_map(|i| format!("u{i}:p\n").into_bytes()).collect();
        let (e, n) = parse(&many).unwrap();
        assert_eq!((e.len(), n), (MAX_USERS, 2));
        assert_eq!(parse(b"a:b").unwrap().0[0].pass, b"b".to_vec()); // no final newline
    }

    /// Property: parsing arbitrary bytes never panics; what it returns has no newline in
    /// a user or password and no `:` in a user.
    #[test]
    fn arbitrary_files() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let alphabet = b"ab:\n\r\0 ";
        for _ in 0..20_000 {
            let len = (next() % 30) as usize;
            let buf: Vec<u8> = (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
            if let Ok((entries, _)) = parse(&buf) {
                for e in entries {
                    assert!(!e.user.contains(&b'\n') && !e.user.contains(&b':') && !e.pass.contains(&b'\n'));
                }
            }
        }
    }
}
