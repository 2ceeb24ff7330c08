//! From statement to [`Plan`]: the session-dependent half of the analysis (resolving
//! tables against the session database and the schema registry, key tags, cache keys,
//! session changes) and the reply-time bookkeeping.

use std::sync::Arc;

use crate::ast::RelName;
use crate::cache::{make_key, QueryCache, MAX_KEY};
use crate::config::{CacheType, InTransactions};
use crate::digests::Outcome;
use crate::kind::{Analysis, Kind, ReadInfo, SetValue, Targets, WriteInfo};
use crate::lexer::{self, Slot, SlotValue};
use crate::session::{Change, Session, SERVER_STATUS_AUTOCOMMIT, SERVER_STATUS_IN_TRANS};
use crate::stats::bump;
use crate::types::{Invalidation, Param, Plan, RowTag, Scope, Source, TableName, Tag, Tags};
use crate::values::Values;
use crate::writes::{untrackable_var, write_keys};

const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
const SYSTEM_SCHEMAS: [&str; 4] = ["mysql", "information_schema", "performance_schema", "sys"];

/// A prepared statement's analysis, kept by the proxy per statement id.
#[derive(Debug)]
pub struct Prepared {
    analysis: Arc<Analysis>,
    slots: Vec<Slot>,
    text: Box<[u8]>,
    /// Its digest (literals as `?`), for the digest table.
    digest: Box<[u8]>,
    /// The session database when it was prepared (tables resolve against it).
    db: Option<Arc<str>>,
    malformed: bool,
}

impl Prepared {
    /// Number of `?` parameters the lexer saw.
    pub fn param_count(&self) -> usize {
        self.slots.iter().filter(|s| matches!(s.value, SlotValue::Param(_))).count()
    }
}

fn resolve(r: &RelName, db: Option<&Arc<str>>) -> Option<TableName> {
    let db = r.db.clone().or_else(|| db.cloned())?;
    Some(TableName { db, table: r.table.clone() })
}

impl QueryCache {
    /// State for a new client connection, after authentication. `capabilities` are the
    /// negotiated flags (MariaDB's extended capabilities in bits 32..63).
    pub fn session(&self, user: &str, db: Option<&str>, charset: u8, capabilities: u64) -> Session {
        let d = self.dialect();
        Session::new(user, db, charset, capabilities, (d.no_backslash_escapes, d.ansi_quotes))
    }

    /// How the session's statements lex; `unsure` when its sql_mode is unknown (then
    /// writes invalidate everything, as for a malformed statement).
    fn lex(&self, s: &Session, sql: &[u8]) -> (lexer::Lexed, bool) {
        let mut d = self.dialect();
        let (nbe, ansi) = s.lex.unwrap_or((false, false));
        d.no_backslash_escapes = nbe;
        d.ansi_quotes = ansi;
        (lexer::digest(sql, d), s.lex.is_none())
    }

    /// What to do with a `COM_QUERY`.
    pub fn on_query(&self, s: &mut Session, sql: &[u8]) -> Plan {
        let (lx, unsure) = self.lex(s, sql);
        let a = self.memo.get(&lx.digest);
        let v = Values { text: sql, slots: &lx.slots, params: &[] };
        let db = s.db.clone();
        let mut why = "";
        let mut p = self.plan(s, &a, &v, lx.malformed || unsure, db.as_ref(), false, &[], &mut why);
        self.count(s, &lx.digest, &mut p, why);
        p
    }

    /// `COM_STMT_PREPARE`: analyse the statement text once; keep the result per
    /// statement id for [`QueryCache::on_execute`].
    pub fn prepare(&self, s: &Session, sql: &[u8]) -> Arc<Prepared> {
        let (lx, unsure) = self.lex(s, sql);
        let analysis = self.memo.get(&lx.digest);
        let malformed = lx.malformed || unsure;
        let digest = lx.digest.into_boxed_slice();
        Arc::new(Prepared { analysis, slots: lx.slots, text: sql.into(), digest, db: s.db.clone(), malformed })
    }

    /// A `COM_STMT_EXECUTE` (or another statement command) of a statement id the proxy
    /// does not know: the backend most likely refuses it, but if it runs, it may write
    /// anything.
    pub fn on_unknown_statement(&self, s: &mut Session) -> Plan {
        self.write_plan(s, vec![Invalidation::All], false)
    }

    /// Count one execution in the digest table (a cacheable read's hit or miss comes later,
    /// through [`QueryCache::answered`]).
    fn count(&self, s: &mut Session, digest: &[u8], plan: &mut Plan, why: &'static str) {
        let key = crate::digests::Digests::key(digest);
        s.last_digest = key;
        if let Plan::Cached { key: k, .. } = plan {
            k.digest = key;
        }
        let outcome = match plan {
            Plan::Cached { .. } => Outcome::Other,
            Plan::Forward { not_cached: true } => Outcome::NotCached(why),
            Plan::Forward { not_cached: false } => Outcome::Other,
            Plan::Write(_) => Outcome::Write,
        };
        self.digests.record(key, digest, outcome, 0, 0);
    }

    /// `COM_STMT_EXECUTE`. `raw_params`: the bytes after the 9-byte header (null bitmap,
    /// new-params-bound flag, the parameter types in effect, values; when the client did
    /// not resend the types the proxy inserts the ones it remembers); `params`: the
    /// decoded values. `allow_cache`: false for executions with long data or a cursor.
    pub fn on_execute(
        &self,
        s: &mut Session,
        p: &Prepared,
        raw_params: &[u8],
        params: &[Param],
        allow_cache: bool,
    ) -> Plan {
        let v = Values { text: &p.text, slots: &p.slots, params };
        let mut why = "";
        let mut plan = if !allow_cache && matches!(p.analysis.kind, Kind::Read(_)) {
            bump(&self.counters.not_cached);
            why = "long data or a cursor";
            Plan::Forward { not_cached: true }
        } else if let Kind::Set(_) | Kind::Use(_) = p.analysis.kind {
            s.disabled = Some("prepared SET");
            Plan::Forward { not_cached: false }
        } else {
            self.plan(s, &p.analysis, &v, p.malformed, p.db.as_ref(), true, raw_params, &mut why)
        };
        self.count(s, &p.digest, &mut plan, why);
        plan
    }

    /// `COM_INIT_DB`: the new database applies once the backend answers OK.
    pub fn on_init_db(&self, s: &mut Session, db: &str) {
        s.pending_change = Some(Change::Db(db.into()));
    }

    /// The plan of an analysed statement; `why` is set when a read is not cached.
    #[allow(clippy::too_many_arguments)]
    fn plan(
        &self,
        s: &mut Session,
        a: &Analysis,
        v: &Values<'_>,
        malformed: bool,
        db: Option<&Arc<str>>,
        binary: bool,
        raw_params: &[u8],
        why: &mut &'static str,
    ) -> Plan {
        if !a.calls.is_empty() {
            // A stored function may write anything and create temporary tables; before
            // the functions are known, any non-builtin call may be one.
            let fx = self.schema.effects();
            if fx.is_none_or(|fx| fx.any_stored(&a.calls)) {
                s.disabled = Some("stored function call");
                bump(&self.counters.not_cached);
                return self.write_plan(s, vec![Invalidation::All], false);
            }
        }
        if !s.in_txn {
            s.stmt_seq = self.seq();
        }
        s.pending_read_only = matches!(a.kind, Kind::Txn) && starts_read_only(v.text);
        match &a.kind {
            Kind::Read(_) | Kind::NotCacheable(_) if malformed => {
                *why = "malformed statement or unknown sql_mode";
                self.not_cached()
            }
            _ if malformed => self.write_plan(s, vec![Invalidation::All], false),
            Kind::Read(r) => self.read_plan(s, r, v, db, binary, raw_params).unwrap_or_else(|reason| {
                *why = reason;
                self.not_cached()
            }),
            Kind::NotCacheable(r) => {
                *why = r;
                self.not_cached()
            }
            Kind::Write(w) => {
                let invs = self.write_invalidations(w, v, db);
                self.write_plan(s, invs, w.ddl)
            }
            Kind::Txn | Kind::Other => Plan::Forward { not_cached: false },
            Kind::Untrackable(r) => {
                s.disabled = Some(r);
                if v.text.to_ascii_lowercase().windows(8).any(|w| w == b"sql_mode") {
                    s.lex = None; // set to an expression: how it lexes is no longer known
                }
                Plan::Forward { not_cached: false }
            }
            Kind::Unbounded(r) => {
                s.disabled = Some(r);
                self.write_plan(s, vec![Invalidation::All], false)
            }
            Kind::Use(d) => {
                s.pending_change = Some(Change::Db(d.clone()));
                Plan::Forward { not_cached: false }
            }
            Kind::Set(items) => {
                let mut vars = Vec::new();
                for it in items {
                    let mut val = Vec::new();
                    for (i, part) in it.value.iter().enumerate() {
                        if i > 0 {
                            val.push(b' ');
                        }
                        match part {
                            SetValue::Word(w) => val.extend_from_slice(w.as_bytes()),
                            SetValue::Slot(r) => match v.text(*r) {
                                Some(t) => val.extend_from_slice(&t),
                                None => {
                                    s.disabled = Some("SET with a parameter");
                                    return Plan::Forward { not_cached: false };
                                }
                            },
                        }
                    }
                    if let Some(r) = untrackable_var(&it.name, &val) {
                        s.disabled = Some(r);
                        if &*it.name == "sql_mode" {
                            // Not cached any more, but writes must still lex right.
                            s.pending_change = Some(Change::Vars(vec![(it.name.clone(), val)]));
                        }
                        return Plan::Forward { not_cached: false };
                    }
                    if &*it.name != "autocommit" {
                        vars.push((it.name.clone(), val));
                    }
                }
                s.pending_change = Some(Change::Vars(vars));
                Plan::Forward { not_cached: false }
            }
        }
    }

    fn not_cached(&self) -> Plan {
        if self.cfg.mode != CacheType::Off {
            bump(&self.counters.not_cached);
        }
        Plan::Forward { not_cached: true }
    }

    fn read_plan(
        &self,
        s: &Session,
        r: &ReadInfo,
        v: &Values<'_>,
        db: Option<&Arc<str>>,
        binary: bool,
        raw_params: &[u8],
    ) -> Result<Plan, &'static str> {
        if self.cfg.mode == CacheType::Off || !self.is_online() {
            return Ok(Plan::Forward { not_cached: false });
        }
        if let Some(r) = s.disabled {
            return Err(r);
        }
        let fill_since = if s.in_transaction() {
            if s.txn_wrote() {
                return Err("after a write in this transaction");
            }
            match self.cfg.in_transactions {
                InTransactions::Never => return Err("in a transaction"),
                InTransactions::ReadOnly if !(s.in_txn && s.txn_read_only) => {
                    return Err("in a read-write transaction (--query-cache-in-transactions read-only)")
                }
                // The transaction's snapshot is taken at or after its first statement.
                _ => Some(if s.in_txn { s.txn_seq.unwrap_or(s.stmt_seq) } else { s.stmt_seq }),
            }
        } else {
            None
        };
        if self.cfg.mode == CacheType::Demand && !r.sql_cache {
            return Err("no SQL_CACHE (DEMAND mode)");
        }
        if !self.schema.effects_loaded() {
            return Err("triggers and foreign keys not loaded yet");
        }
        // A join carries bounds only from integer columns (see `joins.rs`): looked up only
        // for a carried bound, so a single-table read pays nothing for it.
        let int_column = |i: usize, c: &str| {
            let t = r.tables.get(i).and_then(|rel| resolve(rel, db));
            t.and_then(|t| self.schema.lookup(&t)).is_some_and(|k| k.int_column(c))
        };
        let mut tags = Vec::with_capacity(r.tables.len());
        let single = r.tables.len() == 1;
        for (i, rel) in r.tables.iter().enumerate() {
            let Some(t) = resolve(rel, db) else { return Err("no database selected") };
            if SYSTEM_SCHEMAS.iter().any(|x| x.eq_ignore_ascii_case(&t.db)) {
                return Err("system schema");
            }
            let Some(known) = self.schema.lookup(&t) else { return Err("table not known yet") };
            if !known.base_table {
                return Err("view or missing table");
            }
            let scope = r.preds.get(i).map_or(Scope::Table, |p| v.read_scope(&v.table_preds(p, int_column), &known));
            // With its order total (the primary key in its ORDER BY), the backend's choice of
            // index cannot show; else the columns of an index it may scan count as named,
            // and under a LIMIT any column may decide which rows it holds.
            let (order, limit) = &r.order;
            // (A join's ORDER BY names columns without their table here: never total.)
            let total = single && known.int_pk.as_ref().is_some_and(|pk| order.contains(pk));
            let rows = match (&known.int_pk, r.row_deps.get(i)) {
                (Some(pk), Some(Some(rd))) => {
                    let deps = if *limit && !total { None } else { rd.deps.clone() };
                    Some(RowTag { pk: pk.clone(), deps, binary, alias: rd.alias.clone() })
                }
                _ => None,
            };
            let columns = match r.columns.get(i) {
                Some(Some(c)) if !total => Some(known.scanned_with(c)),
                Some(c) => c.clone(),
                None => None,
            };
            tags.push(Tag { table: t, scope, rows, columns });
        }
        // A table joined with itself keeps one record of an entry's rows and columns: no
        // row or column tags.
        if !single {
            for i in 0..tags.len() {
                if (tags[i].rows.is_some() || tags[i].columns.is_some())
                    && tags.iter().filter(|g| g.table == tags[i].table).count() > 1
                {
                    tags[i].rows = None;
                    tags[i].columns = None;
                }
            }
        }
        if v.text.len() + raw_params.len() + s.prefix.len() + db.map_or(0, |d| d.len()) > MAX_KEY {
            return Err("statement too long");
        }
        // A prepared statement's tables resolve against the database it was prepared in.
        let mut key = make_key(&s.prefix, binary, db.map(|d| d.as_bytes()), v.text, raw_params, s.deprecate_eof());
        key.fill_since = fill_since;
        Ok(Plan::Cached { key, tags: Tags(tags) })
    }

    fn write_invalidations(&self, w: &WriteInfo, v: &Values<'_>, db: Option<&Arc<str>>) -> Vec<Invalidation> {
        let rels = match &w.targets {
            Targets::All => return vec![Invalidation::All],
            Targets::Database(d) => {
                return match d.clone().or_else(|| db.cloned()) {
                    Some(db) => vec![Invalidation::Database { db: db.to_string() }],
                    None => vec![Invalidation::All],
                }
            }
            Targets::Tables(t) => t,
        };
        let mut out = Vec::with_capacity(rels.len());
        for rel in rels {
            let Some(t) = resolve(rel, db) else { return vec![Invalidation::All] };
            let inv = match (&w.keys, rels.len()) {
                // A BEFORE trigger may rewrite the key values the text shows.
                (Some(k), 1) if self.schema.effects().is_some_and(|fx| !fx.has_triggers(&t)) => {
                    self.schema.lookup(&t).and_then(|known| write_keys(k, v, &known))
                }
                _ => None,
            };
            out.push(match inv {
                Some((keys, values, change)) => {
                    Invalidation::Keys { db: t.db.to_string(), table: t.table.to_string(), keys, values, change }
                }
                None => Invalidation::Table { db: t.db.to_string(), table: t.table.to_string() },
            });
        }
        out
    }

    fn write_plan(&self, s: &mut Session, invs: Vec<Invalidation>, ddl: bool) -> Plan {
        s.pending_write.extend(invs.iter().cloned());
        s.pending_ddl |= ddl;
        Plan::Write(invs)
    }

    /// Every backend reply's final status flags (`ok`: OK/EOF, `false`: ERR, flags then
    /// ignored). Applies the pending writes' invalidations (call it before the client
    /// sees the reply), pending session changes (on OK), and, when the transaction has
    /// ended, invalidates again what it wrote. Also call it with the authentication OK.
    /// Call it too at the end of each intermediate result of a multi-result reply
    /// (SERVER_MORE_RESULTS_EXISTS set), before that result reaches the client: the
    /// statements before it have run, so the pending writes are invalidated then (all of
    /// them: the text's statements are not told apart), and again when the whole reply has
    /// arrived. No client sees the OK of a write in multi-statement text before its
    /// invalidation.
    pub fn on_reply(&self, s: &mut Session, status_flags: u16, ok: bool) {
        if ok && status_flags & SERVER_MORE_RESULTS_EXISTS != 0 {
            for inv in &s.pending_write {
                self.invalidate(inv, Source::Proxy);
            }
            return;
        }
        let writes = std::mem::take(&mut s.pending_write);
        for inv in &writes {
            self.invalidate(inv, Source::Proxy);
        }
        if std::mem::take(&mut s.pending_ddl) {
            self.schema.effects_changed(); // DDL: triggers, keys or functions may have changed
            self.forget_schema(&writes);
        }
        let change = s.pending_change.take();
        if !ok {
            // Unknown transaction state (a deadlock rolls back): invalidate again, keep.
            for inv in &s.txn_writes {
                self.invalidate(inv, Source::Proxy);
            }
            if s.in_transaction() {
                s.txn_writes.extend(writes);
            }
            return;
        }
        if let Some(c) = change {
            s.apply(c);
        }
        let was_in_txn = s.in_txn;
        s.in_txn = status_flags & SERVER_STATUS_IN_TRANS != 0;
        s.autocommit = status_flags & SERVER_STATUS_AUTOCOMMIT != 0;
        let read_only = std::mem::take(&mut s.pending_read_only);
        if s.in_txn && !was_in_txn {
            s.txn_seq = Some(s.stmt_seq);
            s.txn_read_only = read_only;
        } else if !s.in_txn {
            s.txn_seq = None;
            s.txn_read_only = false;
        }
        // The IN_TRANS flag (also set under autocommit=0 once a statement ran) tells
        // when the transaction ends.
        if s.in_txn {
            s.txn_writes.extend(writes);
        } else {
            for inv in std::mem::take(&mut s.txn_writes) {
                self.invalidate(&inv, Source::Proxy);
            }
        }
    }

    /// The backend connection broke (the fate of an open transaction or a pending
    /// write is unknown): invalidate everything the session may have written.
    pub fn on_backend_lost(&self, s: &mut Session) {
        for inv in std::mem::take(&mut s.pending_write).iter().chain(std::mem::take(&mut s.txn_writes).iter()) {
            self.invalidate(inv, Source::Proxy);
        }
        s.pending_change = None;
        s.in_txn = false;
        s.txn_seq = None;
        s.txn_read_only = false;
        s.pending_read_only = false;
    }

    /// Forget the registry's knowledge of what `invs` name (after DDL).
    pub(crate) fn forget_schema(&self, invs: &[Invalidation]) {
        for inv in invs {
            match inv {
                Invalidation::Keys { db, table, .. } | Invalidation::Table { db, table } => {
                    self.schema.forget(db, table)
                }
                Invalidation::Database { db } => self.schema.forget_database(db),
                Invalidation::All => self.schema.clear(),
            }
        }
    }
}

/// Whether a transaction statement is `START TRANSACTION ... READ ONLY` (comments skipped).
fn starts_read_only(sql: &[u8]) -> bool {
    let mut words: Vec<Vec<u8>> = Vec::new();
    let mut i = 0;
    let mut word = Vec::new();
    while i < sql.len() {
        if sql[i..].starts_with(b"/*") {
            i = sql[i..].windows(2).position(|w| w == b"*/").map_or(sql.len(), |p| i + p + 2);
        } else if sql[i..].starts_with(b"--") || sql[i] == b'#' {
            i = sql[i..].iter().position(|&b| b == b'\n').map_or(sql.len(), |p| i + p);
        } else {
            if sql[i].is_ascii_alphanumeric() || sql[i] == b'_' {
                word.push(sql[i].to_ascii_uppercase());
            } else if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            i += 1;
            continue;
        }
        if !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words.first().is_some_and(|w| w == b"START") && words.windows(2).any(|w| w[0] == b"READ" && w[1] == b"ONLY")
}

#[cfg(test)]
mod txn_tests {
    use super::starts_read_only;

    #[test]
    fn read_only_starts() {
        assert!(starts_read_only(b"START TRANSACTION READ ONLY"));
        assert!(starts_read_only(b"start transaction with consistent snapshot, read only"));
        assert!(!starts_read_only(b"START TRANSACTION /* READ ONLY */"));
        assert!(!starts_read_only(b"START TRANSACTION READ WRITE"));
        assert!(!starts_read_only(b"BEGIN"));
        assert!(!starts_read_only(b"START TRANSACTION -- READ ONLY\n"));
    }
}
