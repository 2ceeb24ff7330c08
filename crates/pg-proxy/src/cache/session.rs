//! One client session as the cache sees it: the settings its results depend on (the
//! reported ones that render values, and every `SET` it ran), its `search_path`, what its
//! open transaction wrote, and what its prepared statements and portals write (so a write
//! through the extended protocol drops results before its ReadyForQuery too).

use std::collections::HashMap;

use super::analyze::Statementish;
use super::batch::Held;
use super::catalog;
use super::index::TableId;
use super::{Extended, PgCache, Plan, View};
use crate::session::Session;

/// What a unit of work may change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Effect {
    /// Nothing cached.
    #[default]
    None,
    /// These tables.
    Tables(Vec<TableId>),
    /// Anything.
    All,
}

impl Effect {
    /// Both effects.
    pub fn and(&mut self, other: Effect) {
        *self = match (std::mem::take(self), other) {
            (Effect::All, _) | (_, Effect::All) => Effect::All,
            (Effect::None, e) | (e, Effect::None) => e,
            (Effect::Tables(mut a), Effect::Tables(b)) => {
                for t in b {
                    if !a.contains(&t) {
                        a.push(t);
                    }
                }
                Effect::Tables(a)
            }
        };
    }

    /// Applies it to `cache` (before the ReadyForQuery that ends it reaches the client).
    pub fn apply(&self, cache: &PgCache) {
        match self {
            Effect::None => {}
            Effect::Tables(t) => cache.written(Some(t)),
            Effect::All => cache.written(None),
        }
    }
}

/// The default `search_path`.
const DEFAULT_PATH: &str = "\"$user\", public";
/// Reported settings that do not change results (left out of the key).
const NOT_IN_KEY: &[&str] = &["application_name", "default_transaction_read_only", "in_hot_standby"];

/// The cache's view of one session.
#[derive(Default)]
pub struct CacheState {
    /// Every SET / RESET the session ran, in order (part of the key).
    sets: Vec<u8>,
    /// `search_path`, as last set (None: the default).
    path: Option<String>,
    /// Something the cache cannot follow happened (a temporary table, `set_config`): no
    /// read of this session is cached any more.
    pub tainted: bool,
    /// What the open transaction wrote (applied again when it ends).
    pub in_tx: Effect,
    statements: HashMap<String, Effect>,
    portals: HashMap<String, Effect>,
    /// What the extended-protocol batch so far writes (applied at its Sync).
    pub batch: Effect,
    /// Statement texts by name (the unnamed one too), for batches that bind them later.
    texts: HashMap<String, String>,
    /// The batch held back until its Sync (see [`Held`]).
    pub held: Held,
    /// The open transaction, as the in-transaction policy needs it.
    pub tx: TxState,
    /// The digest key of the statement last planned (counted in the digest table; None: a
    /// batch not analyzed).
    pub digest: Option<u64>,
}

/// What `--pg-query-cache-in-transactions` needs to know of the open transaction.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxState {
    /// Begun `BEGIN READ ONLY` / `START TRANSACTION READ ONLY`.
    pub read_only: bool,
    /// Ran something that is not a plain read (a write, DDL, a function call, a read that
    /// may call a volatile function, a statement the proxy could not see whole): its later
    /// reads go to the server, so it sees its own writes.
    pub wrote: bool,
}

/// Whether a statement inside a transaction leaves it a reader (its later reads may still be
/// answered from memory under `until-write`).
fn reads_only(st: &Statementish) -> bool {
    use super::analyze::Why;
    matches!(
        st,
        Statementish::Read { .. }
            | Statementish::Neutral
            | Statementish::Uncacheable(Why::Shape | Why::Locking | Why::Source)
    )
}

impl CacheState {
    /// The key's session part of `session` now, and its resolved search path.
    fn view_parts(&self, s: &Session) -> (Vec<u8>, Vec<String>) {
        let mut settings = Vec::with_capacity(256 + self.sets.len());
        for (n, v) in &s.params {
            if !NOT_IN_KEY.contains(&n.as_str()) {
                settings.extend_from_slice(n.as_bytes());
                settings.push(b'=');
                settings.extend_from_slice(v.as_bytes());
                settings.push(0);
            }
        }
        settings.extend_from_slice(&self.sets);
        let path = catalog::search_path(self.path.as_deref().unwrap_or(DEFAULT_PATH), role(s));
        (settings, path)
    }

    /// What to do with a simple Query of `sql`.
    pub fn query(&mut self, cache: &PgCache, s: &Session, db: &str, sql: &str) -> Plan {
        let (stmts, digest) = cache.analyze_counted(sql);
        self.digest = Some(digest);
        self.follow_settings(sql, &stmts);
        self.settings_in_transaction(s, &stmts);
        self.follow_transaction(sql, &stmts);
        if s.database != db {
            // Another database: its WAL is not followed, and its writes change nothing cached.
            return Plan::Forward("session");
        }
        if self.tainted {
            return match cache.plan_effect(sql, &self.resolved(s)) {
                Effect::None => Plan::Forward("session"),
                Effect::Tables(t) => Plan::Write(Some(t)),
                Effect::All => Plan::Write(None),
            };
        }
        let (settings, path) = self.view_parts(s);
        let view = View { database: &s.database, role: role(s), settings: &settings, search_path: &path };
        cache.plan_statements(&view, sql, &stmts, &Extended::default())
    }

    /// Notes a read-only BEGIN, and whatever in (or beginning) a transaction is not a plain
    /// read. A `SET` in a transaction already taints the session; `SET TRANSACTION` counts as
    /// a write (conservative).
    /// (Marked whatever the status seen now: a pipelined BEGIN may not be answered yet; the
    /// marks are cleared once the session is idle with nothing in flight.)
    fn follow_transaction(&mut self, sql: &str, stmts: &[Statementish]) {
        if stmts.len() == 1 && stmts[0] == Statementish::Neutral && super::analyze::begins_read_only(sql) {
            self.tx.read_only = true;
        }
        if !stmts.iter().all(reads_only) {
            self.tx.wrote = true;
        }
    }

    /// Whether a cached read may be answered inside the open transaction under `policy`
    /// (with READ COMMITTED semantics: the latest committed result, as the MySQL cache).
    pub fn tx_may_hit(&self, policy: config::querycache::InTransactions, s: &Session) -> bool {
        use config::querycache::InTransactions;
        if s.status != Some(protocol_postgres::TransactionStatus::InTransaction) {
            return false;
        }
        let wrote = self.tx.wrote || self.in_tx != Effect::None;
        let read_only =
            self.tx.read_only || s.params.iter().any(|(n, v)| n == "default_transaction_read_only" && v == "on");
        match policy {
            InTransactions::Never => false,
            InTransactions::ReadOnly => read_only && !wrote,
            InTransactions::UntilWrite => !wrote,
        }
    }

    /// Whether a batch starting now may be held (cache eligible session: its database,
    /// not tainted).
    pub fn may_hold(&self, s: &Session, db: &str) -> bool {
        !self.tainted && s.database == db
    }

    /// The held batch at its Sync: the plan of its statement (None: it is not of the
    /// answerable shape, or its statement is unknown).
    pub fn batch_plan(&mut self, cache: &PgCache, s: &Session) -> Option<Plan> {
        self.digest = None;
        if !self.held.answerable() {
            return None;
        }
        let name = self.held.statement.clone()?;
        let text = match &self.held.parse {
            Some((n, t)) if *n == name => t.clone(),
            _ => self.texts.get(&name)?.clone(),
        };
        let (stmts, digest) = cache.analyze_counted(&text);
        self.digest = Some(digest);
        if !matches!(stmts.as_slice(), [Statementish::Read { .. }]) {
            return None;
        }
        let (settings, path) = self.view_parts(s);
        let view = View { database: &s.database, role: role(s), settings: &settings, search_path: &path };
        let ext = Extended { params: self.held.params.clone(), tail: self.held.bytes.clone() };
        Some(cache.plan_statements(&view, &text, &stmts, &ext))
    }

    fn resolved(&self, s: &Session) -> Vec<String> {
        catalog::search_path(self.path.as_deref().unwrap_or(DEFAULT_PATH), role(s))
    }

    /// A SET inside a transaction may be rolled back (or end with it, `SET LOCAL`): the
    /// settings part of the key could then name settings the session does not have, so
    /// the session's reads are no longer cached.
    fn settings_in_transaction(&mut self, s: &Session, stmts: &[Statementish]) {
        if s.status != Some(protocol_postgres::TransactionStatus::Idle) && stmts.contains(&Statementish::Setting) {
            self.tainted = true;
        }
    }

    /// Notes SET / RESET / DISCARD statements and what the cache cannot follow.
    fn follow_settings(&mut self, sql: &str, stmts: &[Statementish]) {
        // Plain reads (the hot path) set nothing.
        if let [Statementish::Read { .. }] = stmts {
            return;
        }
        let lower = sql.to_ascii_lowercase();
        if lower.contains("set_config")
            || lower.contains("pg_temp")
            || lower.contains("temp ")
            || lower.contains("temporary")
        {
            self.tainted = true;
        }
        for st in stmts {
            if *st == Statementish::Setting {
                self.sets.extend_from_slice(sql.as_bytes());
                self.sets.push(0);
                if lower.contains("search_path") {
                    self.path = search_path_of(sql);
                    if self.path.is_none() && !lower.contains("default") && !lower.trim_start().starts_with("reset") {
                        self.tainted = true;
                    }
                }
            }
        }
        if lower.trim_start().starts_with("discard all") {
            self.sets.clear();
            self.path = None;
        }
    }

    /// A Parse: remember what the statement writes.
    pub fn parse(&mut self, cache: &PgCache, s: &Session, name: &str, sql: &str) {
        let stmts = cache.analyze(sql);
        self.follow_settings(sql, &stmts);
        self.settings_in_transaction(s, &stmts);
        if self.texts.len() < 4096 || self.texts.contains_key(name) {
            self.texts.insert(name.to_string(), sql.to_string());
        }
        let e = cache.plan_effect(sql, &self.resolved(s));
        self.statements.insert(name.to_string(), e);
    }

    /// A Parse in a database the cache does not follow: the statement changes nothing cached.
    pub fn parse_neutral(&mut self, name: &str) {
        self.statements.insert(name.to_string(), Effect::None);
    }

    /// A Bind: the portal runs that statement.
    pub fn bind(&mut self, portal: &str, statement: &str) {
        // An unknown statement (prepared before the proxy saw it is impossible: 1:1) counts as anything.
        let e = self.statements.get(statement).cloned().unwrap_or(Effect::All);
        self.portals.insert(portal.to_string(), e);
    }

    /// An Execute: the batch writes what the portal writes.
    pub fn execute(&mut self, portal: &str) {
        let e = self.portals.get(portal).cloned().unwrap_or(Effect::All);
        self.batch.and(e);
    }

    /// A Close of a statement ('S') or portal ('P').
    pub fn close(&mut self, kind: u8, name: &str) {
        match kind {
            b'S' => {
                self.texts.remove(name);
                self.statements.remove(name)
            }
            _ => self.portals.remove(name),
        };
    }
}

fn role(s: &Session) -> &str {
    s.param("session_authorization").unwrap_or(&s.user)
}

/// The value of `SET [SESSION|LOCAL] search_path {TO|=} value` (None if not that shape).
fn search_path_of(sql: &str) -> Option<String> {
    let lower = sql.to_ascii_lowercase();
    let at = lower.find("search_path")? + "search_path".len();
    let rest = sql[at..].trim_start();
    let rest = rest.strip_prefix('=').or_else(|| {
        let (w, r) = rest.split_at(rest.find(char::is_whitespace)?);
        w.eq_ignore_ascii_case("to").then_some(r)
    })?;
    let v = rest.trim().trim_end_matches(';').trim();
    if v.eq_ignore_ascii_case("default") {
        return None;
    }
    // Single-quoted schema names are names too ('a', 'b').
    Some(v.split(',').map(|p| p.trim().trim_matches('\'')).collect::<Vec<_>>().join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_path_values() {
        assert_eq!(search_path_of("SET search_path TO app, public").as_deref(), Some("app,public"));
        assert_eq!(search_path_of("set SESSION search_path = 'app'").as_deref(), Some("app"));
        assert_eq!(search_path_of("SET search_path TO DEFAULT"), None);
        let mut e = Effect::None;
        e.and(Effect::Tables(vec![TableId::new("a", "b")]));
        e.and(Effect::Tables(vec![TableId::new("a", "b"), TableId::new("a", "c")]));
        assert_eq!(e, Effect::Tables(vec![TableId::new("a", "b"), TableId::new("a", "c")]));
        e.and(Effect::All);
        assert_eq!(e, Effect::All);
    }

    #[test]
    fn temp_tables_and_set_config_taint() {
        let mut c = CacheState::default();
        let follow = |c: &mut CacheState, sql: &str| c.follow_settings(sql, &super::super::analyze::analyze(sql));
        follow(&mut c, "CREATE TEMP TABLE x (a int)");
        assert!(c.tainted);
        let mut c = CacheState::default();
        follow(&mut c, "SET TimeZone = 'UTC'");
        assert!(!c.tainted && !c.sets.is_empty());
    }
}
