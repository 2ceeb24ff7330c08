//! memcached's binary SASL authentication (`-S`, `proto_bin.c`): PLAIN, checked against
//! the `user:password` file named by `MEMCACHED_SASL_PWDB` as memcached's built-in
//! password database checks it (read at each attempt, so edits apply at once).
//!
//! Before a connection authenticates, only SASL_LIST_MECHS, SASL_AUTH, SASL_STEP and
//! VERSION are served; anything else gets "Auth failure." and the connection is closed.
//! As in memcached, every SASL command first forgets an earlier authentication.

use std::sync::atomic::{AtomicU64, Ordering};

use protocol_memcache::binary::sasl::{parse_plain, pwdb_allows, MAX_SASL_MECH_LEN, MECHANISMS};
use protocol_memcache::binary::{write_error, write_response, Opcode, Request, RequestHeader, Status};

/// The environment variable naming the password file, as in memcached.
pub const PWDB_ENV: &str = "MEMCACHED_SASL_PWDB";

/// A password file larger than this is not read (a misconfiguration, not a user list).
const MAX_PWDB_BYTES: u64 = 16 << 20;

/// The `-S` state: the password file and memcached's counters.
pub struct Sasl {
    /// The password file (`MEMCACHED_SASL_PWDB`).
    pub path: String,
    /// Completed authentication attempts (`auth_cmds`).
    pub cmds: AtomicU64,
    /// Failed ones (`auth_errors`).
    pub errors: AtomicU64,
}

impl Sasl {
    /// From `MEMCACHED_SASL_PWDB`; refused (with the reason) when it is unset or unreadable:
    /// sqlcached has memcached's built-in password database, not Cyrus SASL's sasldb.
    pub fn from_env() -> Result<Sasl, String> {
        let path = std::env::var(PWDB_ENV).map_err(|_| {
            format!(
                "-S: set {PWDB_ENV} to a file of user:password lines (memcached's built-in SASL password \
                 database; sqlcached does not read Cyrus SASL's sasldb)"
            )
        })?;
        std::fs::File::open(&path).map_err(|e| format!("-S: {PWDB_ENV}={path}: {e}"))?;
        Ok(Sasl { path, cmds: AtomicU64::new(0), errors: AtomicU64::new(0) })
    }

    /// Whether `user` / `pass` are in the password file, read now.
    pub fn check(&self, user: &[u8], pass: &[u8]) -> bool {
        use std::io::Read;
        let mut file = Vec::new();
        match std::fs::File::open(&self.path).and_then(|f| f.take(MAX_PWDB_BYTES).read_to_end(&mut file)) {
            Ok(_) => pwdb_allows(&file, user, pass),
            Err(e) => {
                log::warn!("SASL: cannot read {PWDB_ENV}={}: {e}; authentication refused", self.path);
                false
            }
        }
    }

    /// `stats reset`.
    pub fn reset(&self) {
        self.cmds.store(0, Ordering::Relaxed);
        self.errors.store(0, Ordering::Relaxed);
    }
}

/// What `-S` does with a request from its header alone, before the body is read.
#[derive(Debug, PartialEq, Eq)]
pub enum Gate {
    /// Go on: parse and run it.
    Pass,
    /// Not authenticated and not a command allowed before: "Auth failure.", then close.
    Refuse,
    /// SASL data larger than `-I`: "Out of memory", the frame skipped, never buffered
    /// (memcached reads SASL data into an item); keeps unauthenticated memory bounded.
    TooLarge,
}

/// memcached's check in `dispatch_bin_command`, plus the bound on SASL data.
pub fn gate(h: &RequestHeader, authenticated: bool, item_size_max: usize) -> Gate {
    let sasl = [Opcode::SaslListMechs, Opcode::SaslAuth, Opcode::SaslStep].map(u8::from);
    let consistent = u32::from(h.key_len) + u32::from(h.extras_len) <= h.body_len;
    let allowed = sasl.contains(&h.opcode) || h.opcode == u8::from(Opcode::Version);
    if !authenticated && consistent && !allowed {
        Gate::Refuse
    } else if sasl[1..].contains(&h.opcode) && h.body_len as usize > item_size_max {
        Gate::TooLarge
    } else {
        Gate::Pass
    }
}

/// Whether the opcode is one of the SASL commands.
pub fn is_sasl(op: Opcode) -> bool {
    matches!(op, Opcode::SaslListMechs | Opcode::SaslAuth | Opcode::SaslStep)
}

/// One binary connection's place in the SASL exchange.
#[derive(Debug, Default)]
pub struct SaslState {
    /// This connection authenticated.
    pub authenticated: bool,
    /// A PLAIN exchange waits for its SASL_STEP.
    pub plain_pending: bool,
}

/// Run SASL_LIST_MECHS, SASL_AUTH or SASL_STEP on connection state `st`.
pub fn execute(sasl: &Sasl, req: &Request<'_>, st: &mut SaslState, out: &mut Vec<u8>) {
    let op = req.opcode();
    let opaque = req.opaque();
    // memcached's init_sasl_conn, run by each of them: an earlier login is forgotten.
    st.authenticated = false;
    if op == Opcode::SaslListMechs {
        write_response(out, op, Status::NoError, opaque, 0, &[], &[], MECHANISMS);
        return;
    }
    if req.key().len() > MAX_SASL_MECH_LEN {
        write_error(out, op, Status::InvalidArguments, opaque);
        return;
    }
    let data = req.value();
    let outcome = if op == Opcode::SaslAuth {
        st.plain_pending = false;
        if !req.key().eq_ignore_ascii_case(b"PLAIN") {
            Some(false)
        } else if data.is_empty() {
            // PLAIN with no initial response: the server asks for it (an empty challenge).
            st.plain_pending = true;
            None
        } else {
            Some(plain(sasl, data))
        }
    } else if std::mem::take(&mut st.plain_pending) {
        Some(plain(sasl, data))
    } else {
        // SASL_STEP without a started exchange, or after one completed.
        Some(false)
    };
    match outcome {
        None => write_response(out, op, Status::AuthContinue, opaque, 0, &[], &[], &[]),
        Some(true) => {
            st.authenticated = true;
            sasl.cmds.fetch_add(1, Ordering::Relaxed);
            write_response(out, op, Status::NoError, opaque, 0, &[], &[], b"Authenticated");
        }
        Some(false) => {
            sasl.cmds.fetch_add(1, Ordering::Relaxed);
            sasl.errors.fetch_add(1, Ordering::Relaxed);
            write_error(out, op, Status::AuthError, opaque);
        }
    }
}

/// Check a PLAIN message: a user and a non-empty password from the file, acting as itself.
fn plain(sasl: &Sasl, msg: &[u8]) -> bool {
    match parse_plain(msg) {
        Some(p) if (p.authzid.is_empty() || p.authzid == p.authcid) && !p.passwd.is_empty() => {
            let ok = sasl.check(p.authcid, p.passwd);
            if !ok {
                log::debug!("SASL: user <{}> failed to authenticate", String::from_utf8_lossy(p.authcid));
            }
            ok
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol_memcache::binary::parse_header;

    fn header(opcode: u8, key_len: u16, body_len: u32) -> RequestHeader {
        let mut b = vec![0x80, opcode];
        b.extend(key_len.to_be_bytes());
        b.extend([0, 0, 0, 0]);
        b.extend(body_len.to_be_bytes());
        b.extend([0; 12]);
        parse_header(&b).unwrap().unwrap()
    }

    #[test]
    fn the_gate_reads_only_the_header() {
        // Before authentication: SASL and VERSION pass, the rest is refused.
        assert_eq!(gate(&header(0x0b, 0, 0), false, 1024), Gate::Pass);
        assert_eq!(gate(&header(0x21, 5, 20), false, 1024), Gate::Pass);
        assert_eq!(gate(&header(0x00, 1, 1), false, 1024), Gate::Refuse);
        assert_eq!(gate(&header(0x00, 1, 1), true, 1024), Gate::Pass);
        // Lengths that do not add up are left to the parser (Unknown command, close).
        assert_eq!(gate(&header(0x00, 9, 1), false, 1024), Gate::Pass);
        // SASL data over -I is never buffered.
        assert_eq!(gate(&header(0x21, 5, 100_000_000), false, 1024), Gate::TooLarge);
        assert_eq!(gate(&header(0x22, 5, 1025), true, 1024), Gate::TooLarge);
        assert_eq!(gate(&header(0x20, 0, 100_000_000), false, 1024), Gate::Pass);
    }
}
