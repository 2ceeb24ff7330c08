//! Per-connection state: who, which database, which session variables, transaction
//! state, and what is pending until the backend's reply arrives.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::types::Invalidation;

/// Server status flag: a transaction is open.
pub const SERVER_STATUS_IN_TRANS: u16 = 0x0001;
/// Server status flag: autocommit is on.
pub const SERVER_STATUS_AUTOCOMMIT: u16 = 0x0002;

/// Capability bits that change the bytes of a result set (the rest only change requests
/// or OK packets). MariaDB's extended capabilities (bits 32..) are all kept.
const REPLY_CAPS: u64 = 0x4 | 0x200 | 0x0080_0000 | 0x0100_0000 | 0x0200_0000 | !0xffff_ffff;
/// CLIENT_DEPRECATE_EOF.
pub(crate) const CLIENT_DEPRECATE_EOF: u64 = 0x0100_0000;

/// A session change that takes effect only if the backend answers OK.
#[derive(Debug)]
pub(crate) enum Change {
    Vars(Vec<(Arc<str>, Vec<u8>)>),
    Db(Arc<str>),
}

/// One client connection's state (create with [`crate::QueryCache::session`]).
#[derive(Debug)]
pub struct Session {
    pub(crate) user: Arc<str>,
    pub(crate) db: Option<Arc<str>>,
    pub(crate) charset: u8,
    pub(crate) caps: u64,
    pub(crate) vars: BTreeMap<Arc<str>, Vec<u8>>,
    /// Encoded (user, db, charset, caps, vars): the start of every cache key.
    pub(crate) prefix: Vec<u8>,
    pub(crate) in_txn: bool,
    pub(crate) autocommit: bool,
    pub(crate) disabled: Option<&'static str>,
    pub(crate) pending_change: Option<Change>,
    pub(crate) pending_write: Vec<Invalidation>,
    pub(crate) pending_ddl: bool,
    /// Writes of the open transaction, invalidated again when it ends.
    pub(crate) txn_writes: Vec<Invalidation>,
    /// The index's invalidation sequence when the last statement outside a transaction was
    /// planned (the start of the transaction it may open).
    pub(crate) stmt_seq: u64,
    /// The open transaction's start (its reads fill only from tables not invalidated since).
    pub(crate) txn_seq: Option<u64>,
    /// The open transaction was started `START TRANSACTION READ ONLY`.
    pub(crate) txn_read_only: bool,
    /// The statement in flight is a `START TRANSACTION ... READ ONLY`.
    pub(crate) pending_read_only: bool,
    /// The lexical flags of the session's `sql_mode` (NO_BACKSLASH_ESCAPES, ANSI_QUOTES);
    /// None once it was set to something the proxy cannot read (every write then
    /// invalidates everything).
    pub(crate) lex: Option<(bool, bool)>,
    /// Digest key of the last statement planned (for [`crate::QueryCache::answered`]).
    pub(crate) last_digest: u64,
}

fn put(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

impl Session {
    pub(crate) fn new(user: &str, db: Option<&str>, charset: u8, caps: u64, lex: (bool, bool)) -> Session {
        let mut s = Session {
            user: user.into(),
            db: db.filter(|d| !d.is_empty()).map(Into::into),
            charset,
            caps: caps & REPLY_CAPS,
            vars: BTreeMap::new(),
            prefix: Vec::new(),
            in_txn: false,
            autocommit: true,
            disabled: None,
            pending_change: None,
            pending_write: Vec::new(),
            pending_ddl: false,
            txn_writes: Vec::new(),
            stmt_seq: 0,
            txn_seq: None,
            txn_read_only: false,
            pending_read_only: false,
            lex: Some(lex),
            last_digest: 0,
        };
        s.rebuild_prefix();
        s
    }

    pub(crate) fn rebuild_prefix(&mut self) {
        let mut p = Vec::with_capacity(64);
        put(&mut p, self.user.as_bytes());
        match &self.db {
            Some(d) => put(&mut p, d.as_bytes()),
            None => p.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
        p.push(self.charset);
        p.extend_from_slice(&self.caps.to_le_bytes());
        p.extend_from_slice(&(self.vars.len() as u32).to_le_bytes());
        for (k, v) in &self.vars {
            put(&mut p, k.as_bytes());
            put(&mut p, v);
        }
        self.prefix = p;
    }

    /// Apply a change the backend accepted.
    pub(crate) fn apply(&mut self, c: Change) {
        match c {
            Change::Db(d) => self.db = Some(d),
            Change::Vars(v) => {
                for (k, val) in v {
                    if &*k == "sql_mode" {
                        let d = crate::lexer::Dialect::default().with_sql_mode(&val);
                        self.lex = Some((d.no_backslash_escapes, d.ansi_quotes));
                    }
                    self.vars.insert(k, val);
                }
            }
        }
        self.rebuild_prefix();
    }

    /// The current default database.
    pub fn db(&self) -> Option<&str> {
        self.db.as_deref()
    }

    /// The user the client authenticated as.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// Why caching is off for this connection for good, if it is.
    pub fn caching_disabled(&self) -> Option<&'static str> {
        self.disabled
    }

    /// Whether the backend reported an open transaction (or autocommit off).
    pub fn in_transaction(&self) -> bool {
        self.in_txn || !self.autocommit
    }

    /// Whether the last reply's status had IN_TRANS set: a transaction is open on the backend
    /// (or, after a `BEGIN` the proxy answered itself, for the client).
    pub fn txn_open(&self) -> bool {
        self.in_txn
    }

    /// Whether autocommit is on (as the last reply's status said).
    pub fn autocommit(&self) -> bool {
        self.autocommit
    }

    /// The encoded user, database, character set, capabilities and session variables:
    /// two statements of sessions with equal keys are answered alike.
    pub fn state_key(&self) -> &[u8] {
        &self.prefix
    }

    /// Whether the open transaction has written (or is writing): its reads go to the backend.
    pub(crate) fn txn_wrote(&self) -> bool {
        !self.txn_writes.is_empty() || !self.pending_write.is_empty()
    }

    /// Whether replies use an OK packet instead of EOF (CLIENT_DEPRECATE_EOF).
    pub(crate) fn deprecate_eof(&self) -> bool {
        self.caps & CLIENT_DEPRECATE_EOF != 0
    }

    /// The tracked session variables (lower-cased name → value as written).
    pub fn vars(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.vars.iter().map(|(k, v)| (&**k, v.as_slice()))
    }
}
