//! The query cache on the command path: COM_QUERY and COM_STMT_EXECUTE reads answered
//! from the cache (a hit is one lookup and one write), misses filled while the reply
//! streams to the client (identical concurrent misses wait for one backend query), writes
//! invalidated before the client sees their reply, and the session state
//! (`querycache::Session`) kept in step with every reply.

use std::collections::HashMap;
use std::sync::Arc;

use protocol_mysql::command::{
    COM_INIT_DB, COM_QUERY, COM_RESET_CONNECTION, COM_STMT_CLOSE, COM_STMT_EXECUTE, COM_STMT_PREPARE,
    COM_STMT_SEND_LONG_DATA,
};
use protocol_mysql::{Command, FieldType, Value};
use querycache::session::Session;
use querycache::types::{Param, Plan};
use querycache::{Fill, FillStart, Outcome, Prepared, Waiter};

use crate::handshake::Login;
use crate::Proxy;
use protocol_mysql::reply::Reply;
use querycache::QueryCache;

mod txn;
pub use txn::{txn_word, Local, TxnWord};

/// What the cache decides for one command. The connection ([`crate::conn`]) does the I/O:
/// the cache never reads or writes a socket.
pub enum Decision {
    /// Forward the command and relay its reply ([`CacheConn::after_reply`] sees it end).
    Forward,
    /// Answered from the cache: these bytes are the whole reply; nothing is forwarded.
    Answer(Vec<u8>),
    /// A miss this connection fills: forward, relay the reply while copying it, then
    /// [`CacheConn::filled`].
    Fill(Fill),
    /// An identical miss is in flight: await it, then answer with [`CacheConn::served`]
    /// (or forward, if it failed).
    Wait(Waiter),
    /// COM_RESET_CONNECTION: forward, relay, then [`CacheConn::after_reset`] if it succeeded.
    Reset,
}

/// A prepared statement the backend accepted.
struct Stmt {
    prepared: Arc<Prepared>,
    num_params: u16,
    /// Parameter types bound by the last execution (clients send them once).
    types: Vec<FieldType>,
    /// COM_STMT_SEND_LONG_DATA was used since the last execution.
    long_data: bool,
    /// The backend was sent parameter types for it (an execution answered from the cache
    /// never reaches the backend, so the next forwarded one may have to carry them).
    backend_types: bool,
    /// Its text asks about the previous statement (see [`is_diagnostic`]).
    diagnostic: bool,
    /// It is a transaction statement the proxy may answer itself (see [`txn`]).
    txn: Option<TxnWord>,
}

/// The statement id MariaDB reads as "the statement prepared last".
const LAST_PREPARED: u32 = 0xFFFF_FFFF;

/// Per-connection cache state (nothing when the proxy does not cache).
pub struct CacheConn {
    cache: Option<Arc<QueryCache>>,
    session: Option<Session>,
    stmts: HashMap<u32, Stmt>,
    /// The id of the last statement prepared, what the id 0xFFFFFFFF stands for.
    last_prepared: Option<u32>,
    /// The analysis of the statement being prepared (whether it is a diagnostic, and a
    /// transaction statement), until the backend answers.
    preparing: Option<(Arc<Prepared>, bool, Option<TxnWord>)>,
    /// The COM_STMT_EXECUTE being handled: its statement id, and the packet to send
    /// instead of the client's when the backend must be given the parameter types.
    pending_exec: Option<(u32, Option<Vec<u8>>)>,
    /// The packet of the COM_STMT_EXECUTE being handled with every parameter type in it
    /// (what [`CacheConn::last_hit`] keeps if it is answered from the cache).
    typed_exec: Option<Vec<u8>>,
    /// The last command, if it was answered from the cache: the backend never ran it, so
    /// its diagnostics (SHOW WARNINGS, ROW_COUNT(), FOUND_ROWS(), ...) describe an older
    /// statement. A diagnostic command first replays it to the backend.
    last_hit: Option<Vec<u8>>,
    /// A `BEGIN` answered here and not yet sent to the backend (see [`txn`]).
    deferred: Option<Vec<u8>>,
    /// The backend's OKs to transaction statements, per session state (see [`txn`]).
    learned: Vec<txn::Learned>,
    /// The transaction statement being forwarded, whose OK is to be learned.
    learning: Option<txn::Learning>,
    /// The command being handled was planned as a cacheable read.
    planned_read: bool,
    /// Since the backend's transaction began (a deferred `BEGIN` sent, or under autocommit=0
    /// a cacheable read), every command sent there was a cacheable read: a `COMMIT` now only
    /// ends a read view (see [`txn`]).
    backend_reads_only: bool,
}

fn session_for(cache: &QueryCache, login: &Login) -> Session {
    cache.set_backend_version(&login.server_version);
    let user = String::from_utf8_lossy(&login.user);
    let db = login.db.as_deref().map(String::from_utf8_lossy);
    let caps = u64::from(login.caps) | (u64::from(login.mariadb_caps) << 32);
    let mut s = cache.session(&user, db.as_deref(), login.charset, caps);
    cache.on_reply(&mut s, login.status, true);
    s
}

impl CacheConn {
    /// State for a new login.
    pub fn new(proxy: &Arc<Proxy>, login: &Login) -> CacheConn {
        let cache = proxy.cache.clone();
        let session = cache.as_ref().map(|c| session_for(c, login));
        CacheConn {
            cache,
            session,
            stmts: HashMap::new(),
            last_prepared: None,
            preparing: None,
            pending_exec: None,
            typed_exec: None,
            last_hit: None,
            deferred: None,
            learned: Vec::new(),
            learning: None,
            planned_read: false,
            backend_reads_only: false,
        }
    }

    /// A new session (COM_CHANGE_USER, COM_RESET_CONNECTION): variables and statements are gone.
    pub fn reset(&mut self, _proxy: &Arc<Proxy>, login: &Login) {
        if let (Some(c), Some(s)) = (&self.cache, &mut self.session) {
            c.on_backend_lost(s); // invalidate what an open transaction may have written
            *s = session_for(c, login);
        }
        self.stmts.clear();
        self.deferred = None;
    }

    /// The statement a command's id names: 0xFFFFFFFF is MariaDB's "the last prepared".
    fn stmt_id(&self, payload: &[u8]) -> Option<u32> {
        let id = payload.get(1..5).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))?;
        Some(if id == LAST_PREPARED { self.last_prepared.unwrap_or(id) } else { id })
    }

    /// A command without reply (COM_STMT_CLOSE, COM_STMT_SEND_LONG_DATA).
    pub fn no_reply_command(&mut self, payload: &[u8], _login: &Login) {
        let id = self.stmt_id(payload);
        match (payload.first().copied(), id) {
            (Some(COM_STMT_CLOSE), Some(id)) => {
                self.stmts.remove(&id);
            }
            (Some(COM_STMT_SEND_LONG_DATA), Some(id)) => {
                if let Some(s) = self.stmts.get_mut(&id) {
                    s.long_data = true;
                }
            }
            _ => {}
        }
    }

    /// After a forwarded reply: the session learns the final status (transaction state,
    /// accepted session changes) and applies pending invalidations.
    pub fn after_reply(&mut self, reply: &Reply, code: u8) {
        if code == COM_STMT_PREPARE {
            if let (Some((p, diagnostic, txn)), Some((id, n))) = (self.preparing.take(), reply.prepared) {
                let types = Vec::new();
                let stmt =
                    Stmt { prepared: p, num_params: n, types, long_data: false, backend_types: false, diagnostic, txn };
                self.stmts.insert(id, stmt);
                self.last_prepared = Some(id);
            }
        }
        let (Some(c), Some(s)) = (&self.cache, &mut self.session) else { return };
        let was_open = s.txn_open();
        if reply.error {
            c.on_reply(s, 0, false);
        } else if let Some(status) = reply.status {
            c.on_reply(s, status, true);
        }
        // A transaction the backend opened with a cacheable read (autocommit=0): so far it
        // has only read (see [`txn`]).
        if !was_open && s.txn_open() && self.planned_read {
            self.backend_reads_only = true;
        }
    }

    /// A new command starts: nothing pending from the previous one.
    pub fn begin_command(&mut self) {
        self.pending_exec = None;
        self.typed_exec = None;
        self.planned_read = false;
        self.learning = None;
    }

    /// A command is going to the backend: the last one is no longer a cache hit.
    pub fn forwarded(&mut self) {
        self.last_hit = None;
        self.backend_reads_only &= self.planned_read;
    }

    /// The command is about to be forwarded: the packet to send instead of the client's
    /// (a COM_STMT_EXECUTE given the parameter types the backend has not seen), if any.
    pub fn take_rewrite(&mut self) -> Option<Vec<u8>> {
        let (id, rewrite) = self.pending_exec.take()?;
        if let Some(s) = self.stmts.get_mut(&id) {
            s.backend_types = true;
        }
        rewrite
    }

    /// The backend connection broke: what the session may have written is invalidated.
    pub fn backend_lost(&mut self) {
        if let (Some(c), Some(s)) = (&self.cache, &mut self.session) {
            c.on_backend_lost(s);
        }
        self.deferred = None;
    }

    /// COM_RESET_CONNECTION succeeded.
    pub fn after_reset(&mut self, login: &Login) {
        let db = self.session.as_ref().and_then(|s| s.db().map(|d| d.as_bytes().to_vec()));
        if let Some(c) = &self.cache {
            let login = Login { db, ..login.clone() };
            self.session = Some(session_for(c, &login));
        }
        self.stmts.clear();
        self.deferred = None;
    }

    /// Whether the proxy caches (else every command is forwarded untouched).
    pub fn enabled(&self) -> bool {
        self.cache.is_some()
    }

    /// The packet to run on the backend first, its reply discarded: the last command, if
    /// it was answered from the cache and this one (`payload`, code `code`) asks about it,
    /// so the backend's diagnostics describe it (as they would have without the cache).
    pub fn replay_first(&mut self, payload: &[u8], code: u8) -> Option<Vec<u8>> {
        self.cache.as_ref()?;
        if self.last_hit.is_none() || !self.asks_about_last(payload, code) {
            return None;
        }
        let packet = self.last_hit.take()?;
        if packet.get(4) == Some(&COM_STMT_EXECUTE) {
            let id = packet.get(5..9).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            if let Some(s) = id.and_then(|id| self.stmts.get_mut(&id)) {
                s.backend_types = true;
            }
        }
        Some(packet)
    }

    /// Decides command `code` (COM_QUERY, COM_STMT_*, COM_INIT_DB, COM_RESET_CONNECTION):
    /// `packet` is the command as the client sent it, `payload` its body, `seq` its last
    /// sequence id. Writes are planned here too: their invalidations run in
    /// [`CacheConn::after_reply`], before the client sees the end of their reply.
    pub fn decide(&mut self, packet: &[u8], payload: &[u8], code: u8, seq: u8, caps: u32) -> Decision {
        let Some(cache) = self.cache.clone() else { return Decision::Forward };
        let Some(session) = self.session.as_mut() else { return Decision::Forward };
        let plan = match code {
            COM_QUERY => cache.on_query(session, &payload[1..]),
            COM_STMT_EXECUTE => {
                let out = ExecOut { pending: &mut self.pending_exec, typed: &mut self.typed_exec };
                let id = payload.get(1..5).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                let id = match id {
                    Some(LAST_PREPARED) => self.last_prepared.or(id),
                    id => id,
                };
                match id.and_then(|id| execute_plan(&cache, session, &mut self.stmts, out, payload, id, caps)) {
                    Some(plan) => plan,
                    // Not a statement prepared here, or a packet the proxy cannot read:
                    // if the backend runs it anyway, it may write anything.
                    None => cache.on_unknown_statement(session),
                }
            }
            COM_STMT_PREPARE => {
                let sql = &payload[1..];
                self.preparing = Some((cache.prepare(session, sql), is_diagnostic(sql), txn_word(sql)));
                return Decision::Forward;
            }
            COM_INIT_DB => {
                cache.on_init_db(session, &String::from_utf8_lossy(&payload[1..]));
                return Decision::Forward;
            }
            COM_RESET_CONNECTION => return Decision::Reset,
            _ => return Decision::Forward,
        };
        let Plan::Cached { key, tags } = plan else { return Decision::Forward };
        self.planned_read = true;
        if seq != 0 {
            return Decision::Forward; // a split command: replies would not start at sequence id 1
        }
        if let Some(bytes) = cache.lookup(&key) {
            return Decision::Answer(self.served(bytes, packet, code));
        }
        match cache.begin_fill(&key, &tags) {
            FillStart::Leader(fill) => Decision::Fill(fill),
            FillStart::Follower(waiter) => Decision::Wait(waiter),
            // A transaction's read whose snapshot may predate a change: the backend answers.
            FillStart::Bypass => Decision::Forward,
            // A statement whose results do not pay back (adaptive bypass): the backend answers.
            FillStart::Skip => {
                cache.answered(session, Outcome::Bypassed, 0, 0);
                Decision::Forward
            }
        }
    }

    /// A stored reply about to answer command `packet` (code `code`): rewritten for this
    /// session's transaction state, counted, and remembered for a later diagnostic's replay.
    pub fn served(&mut self, mut bytes: Vec<u8>, packet: &[u8], code: u8) -> Vec<u8> {
        if let (Some(c), Some(s)) = (&self.cache, &self.session) {
            c.serve_as(s, &mut bytes);
            c.answered(s, Outcome::Hit, 0, bytes.len() as u64);
        }
        self.last_hit = match code {
            COM_QUERY => Some(packet.to_vec()),
            COM_STMT_EXECUTE => self.typed_exec.clone(),
            _ => None,
        };
        bytes
    }

    /// A fill's reply was relayed in `us` microseconds: `copy` is stored if the reply can
    /// be (dropping an unfinished `Fill` instead wakes the waiting followers).
    pub fn filled(&mut self, fill: Fill, reply: &Reply, copy: &[u8], us: u64) {
        let Some(c) = &self.cache else { return };
        if let Some(s) = &self.session {
            c.answered(s, Outcome::Miss, us, copy.len() as u64);
        }
        c.finish_fill(fill, reply.storable().then_some(copy));
    }

    /// Whether command `payload` (code `code`) is a diagnostic.
    fn asks_about_last(&self, payload: &[u8], code: u8) -> bool {
        match code {
            COM_QUERY => is_diagnostic(&payload[1..]),
            COM_STMT_EXECUTE => {
                let id = self.stmt_id(payload);
                id.and_then(|id| self.stmts.get(&id)).is_some_and(|s| s.diagnostic)
            }
            _ => false,
        }
    }
}

/// Where [`execute_plan`] leaves the packets it prepared.
struct ExecOut<'a> {
    /// The statement id, and the packet to forward instead of the client's (if any).
    pending: &'a mut Option<(u32, Option<Vec<u8>>)>,
    /// The execution with every parameter type in it (replayable at any time).
    typed: &'a mut Option<Vec<u8>>,
}

/// The plan of a COM_STMT_EXECUTE of a statement prepared through the proxy.
fn execute_plan(
    cache: &QueryCache,
    session: &mut Session,
    stmts: &mut HashMap<u32, Stmt>,
    out: ExecOut<'_>,
    payload: &[u8],
    id: u32,
    caps: u32,
) -> Option<Plan> {
    let Ok(Command::StmtExecute(exec)) = Command::parse(payload, caps) else { return None };
    let stmt = stmts.get_mut(&id)?;
    let decoded = exec.params(usize::from(stmt.num_params), caps, &stmt.types).ok()?;
    if decoded.new_params_bound {
        stmt.types = decoded.types();
    }
    let params: Vec<Param> = decoded
        .params
        .iter()
        .map(|p| match p.value {
            Value::Null => Param::Null,
            Value::Int(v) => Param::Int(v),
            Value::UInt(v) => Param::UInt(v),
            // Character strings (key tags of string columns); BLOB-typed ones are binary.
            Value::Bytes(b)
                if matches!(
                    p.ty.column_type,
                    protocol_mysql::ColumnType::String
                        | protocol_mysql::ColumnType::VarString
                        | protocol_mysql::ColumnType::VarChar
                ) =>
            {
                Param::Str(b.into())
            }
            _ => Param::Other,
        })
        .collect();
    let raw = raw_params(exec.params, decoded.new_params_bound, &stmt.types);
    let typed = {
        let mut p = payload[..10].to_vec();
        p[1..5].copy_from_slice(&id.to_le_bytes()); // replayable after another prepare
        p.extend_from_slice(&raw);
        let mut packet = Vec::with_capacity(p.len() + 4);
        protocol_mysql::write_packet(&mut packet, 0, &p);
        packet
    };
    let rewrite = (!stmt.backend_types && !decoded.new_params_bound && stmt.num_params > 0).then(|| typed.clone());
    *out.pending = Some((id, rewrite));
    *out.typed = Some(typed);
    let allow_cache = !stmt.long_data && exec.flags & 0x07 == 0;
    stmt.long_data = false;
    Some(cache.on_execute(session, &stmt.prepared, &raw, &params, allow_cache))
}

/// The parameter block with the types in effect: when the client did not resend them,
/// the remembered types are inserted (so equal values of different types differ).
fn raw_params<'a>(raw: &'a [u8], new_params_bound: bool, types: &[FieldType]) -> std::borrow::Cow<'a, [u8]> {
    if new_params_bound || types.is_empty() {
        return raw.into();
    }
    let bitmap = types.len().div_ceil(8);
    let Some(values) = raw.get(bitmap + 1..) else { return raw.into() };
    let mut out = Vec::with_capacity(raw.len() + 2 * types.len());
    out.extend_from_slice(&raw[..bitmap]);
    out.push(1);
    for t in types {
        out.extend_from_slice(&t.to_bytes());
    }
    out.extend_from_slice(values);
    out.into()
}

/// Whether `sql` asks about the statement before it: its warnings, errors, row counts
/// or diagnostics area. Deliberately broad (a false positive costs one extra query).
fn is_diagnostic(sql: &[u8]) -> bool {
    const WORDS: [&[u8]; 5] = [b"warning", b"error", b"found_rows", b"row_count", b"diagnostics"];
    let lower = sql.to_ascii_lowercase();
    WORDS.iter().any(|w| lower.windows(w.len()).any(|x| x == *w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol_mysql::ColumnType;

    #[test]
    fn diagnostics_are_recognised() {
        for sql in
            ["SHOW WARNINGS", "show errors", "SELECT FOUND_ROWS()", "select row_count()", "SELECT @@warning_count"]
        {
            assert!(is_diagnostic(sql.as_bytes()), "{sql}");
        }
        assert!(!is_diagnostic(b"SELECT c FROM sbtest1 WHERE id=5"));
    }

    #[test]
    fn raw_params_insert_remembered_types() {
        let types = [FieldType::new(ColumnType::LongLong)];
        let sent = [0u8, 1, 8, 0, 5, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(&*raw_params(&sent, true, &types), &sent);
        let resent = [0u8, 0, 5, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(&*raw_params(&resent, false, &types), &sent);
        assert_eq!(&*raw_params(&[], false, &[]), &[] as &[u8]);
    }
}
