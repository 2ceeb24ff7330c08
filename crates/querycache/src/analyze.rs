//! Statement analysis of a digest: what kind of statement, whether a read may be cached,
//! which tables it reads or writes and which key predicates narrow it.
//!
//! The token-level pass (keywords, deny lists) runs first; `sqlparser` then finds every
//! table reference and the key predicates (see `ast.rs`).

use std::sync::Arc;

use crate::ast::{self, RelName};
use crate::funcs;
use crate::joins::{self, TablePreds};
use crate::kind::{write_all, Analysis, Kind, ReadInfo, RowDeps, Targets, WriteInfo};
use crate::lexer::{ident, Lexer, Tok, Token};

fn up(digest: &[u8], t: &Token) -> Vec<u8> {
    digest[t.start..t.end].to_ascii_uppercase()
}

fn is_word(digest: &[u8], t: Option<&Token>, w: &str) -> bool {
    t.is_some_and(|t| t.kind == Tok::Word && digest[t.start..t.end].eq_ignore_ascii_case(w.as_bytes()))
}

/// The digest with its `?` numbered (`?1`, `?2`, ...) for the parser.
fn numbered(digest: &[u8]) -> Option<String> {
    let mut out = String::with_capacity(digest.len() + 16);
    let mut n = 0u32;
    for t in Lexer::new(digest) {
        if !out.is_empty() {
            out.push(' ');
        }
        if t.kind == Tok::Param {
            n += 1;
            out.push('?');
            out.push_str(&n.to_string());
        } else {
            out.push_str(std::str::from_utf8(&digest[t.start..t.end]).ok()?);
        }
    }
    Some(out)
}

/// Words after which `name (` is a table, index, column list or type, not a call.
#[rustfmt::skip]
const NOT_CALL_AFTER: [&[u8]; 12] =
    [b"INTO", b"TABLE", b"JOIN", b"FROM", b"UPDATE", b"REFERENCES", b"KEY", b"INDEX", b"REPLACE", b"INSERT", b"ON", b"EXISTS"];

/// The non-builtin functions the statement calls (see [`Analysis::calls`]).
pub(crate) fn calls(digest: &[u8], toks: &[Token]) -> Vec<RelName> {
    let text = |t: &Token| &digest[t.start..t.end];
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let paren = toks.get(i + 1).is_some_and(|n| text(n) == b"(");
        if !paren || !matches!(t.kind, Tok::Word | Tok::Quoted) {
            continue;
        }
        if t.kind == Tok::Word && funcs::call_reason(text(t)) != Some(funcs::UNKNOWN_FUNCTION) {
            continue;
        }
        let qualified = i >= 2 && text(&toks[i - 1]) == b"." && matches!(toks[i - 2].kind, Tok::Word | Tok::Quoted);
        let before = if qualified { i.checked_sub(3) } else { i.checked_sub(1) };
        if before.is_some_and(|b| NOT_CALL_AFTER.iter().any(|w| text(&toks[b]).eq_ignore_ascii_case(w))) {
            continue;
        }
        let db = qualified.then(|| ident(digest, &toks[i - 2]).to_ascii_lowercase().into());
        out.push(RelName { db, table: ident(digest, t).to_ascii_lowercase().into() });
    }
    out
}

/// Analyse a digest (one or more statements).
pub(crate) fn analyze(digest: &[u8]) -> Analysis {
    let mut lx = Lexer::new(digest);
    let toks: Vec<Token> = lx.by_ref().collect();
    let kind = analyze_tokens(digest, &toks, lx.malformed);
    Analysis { kind, calls: calls(digest, &toks) }
}

fn analyze_tokens(digest: &[u8], toks: &[Token], malformed_text: bool) -> Kind {
    if malformed_text {
        return malformed(digest, toks);
    }
    let mut stmts: Vec<&[Token]> =
        toks.split(|t| t.kind == Tok::Punct && &digest[t.start..t.end] == b";").filter(|s| !s.is_empty()).collect();
    if stmts.len() <= 1 {
        let one = stmts.pop().unwrap_or(&[]);
        return analyze_one(digest, one, true);
    }
    // Several statements in one COM_QUERY: never cached; writes invalidate, and session
    // changes make the session untrackable (their OK packets are not followed one by one).
    let mut targets = Vec::new();
    let mut all = false;
    let mut ddl = false;
    let mut session = None;
    for s in stmts {
        match analyze_one(digest, s, false) {
            Kind::Write(w) => {
                ddl |= w.ddl;
                match w.targets {
                    Targets::Tables(t) => targets.extend(t),
                    _ => all = true,
                }
            }
            Kind::Unbounded(r) => return Kind::Unbounded(r),
            Kind::Set(_) | Kind::Use(_) | Kind::Untrackable(_) => session = Some("session change in a multi-statement"),
            _ => {}
        }
    }
    let targets = if all { Targets::All } else { Targets::Tables(targets) };
    match session {
        // The writes must still be invalidated before the OK.
        Some(r) if targets != Targets::Tables(Vec::new()) => Kind::Unbounded(r),
        Some(r) => Kind::Untrackable(r),
        None if targets == Targets::Tables(Vec::new()) => Kind::NotCacheable("multi-statement"),
        None => Kind::Write(WriteInfo { targets, keys: None, ddl }),
    }
}

/// Unterminated quote or comment: the server will most likely refuse it, but a write
/// keyword anywhere invalidates everything.
fn malformed(digest: &[u8], toks: &[Token]) -> Kind {
    match toks.first().map(|t| up(digest, t)).as_deref() {
        Some(b"SELECT") | Some(b"SHOW") => Kind::NotCacheable("malformed statement"),
        _ => Kind::Write(WriteInfo { targets: Targets::All, keys: None, ddl: false }),
    }
}

pub(crate) fn analyze_one(digest: &[u8], toks: &[Token], whole: bool) -> Kind {
    let first = toks.iter().position(|t| !(t.kind == Tok::Punct && &digest[t.start..t.end] == b"("));
    let Some(first) = first else { return Kind::Other };
    let kw = up(digest, &toks[first]);
    match kw.as_slice() {
        b"SELECT" | b"WITH" | b"VALUES" | b"TABLE" => read(digest, toks, whole),
        b"INSERT" | b"UPDATE" | b"DELETE" | b"REPLACE" | b"LOAD" | b"TRUNCATE" => write(digest, toks, whole),
        b"CREATE" | b"ALTER" | b"DROP" | b"RENAME" => ddl(digest, toks),
        b"BEGIN" | b"START" | b"COMMIT" | b"ROLLBACK" | b"SAVEPOINT" | b"RELEASE" | b"XA" => Kind::Txn,
        b"SET" if is_word(digest, toks.get(first + 1), "STATEMENT") => set_statement(digest, &toks[first + 2..]),
        b"SET" => crate::setstmt::analyze_set(digest, &toks[first + 1..]),
        b"USE" => match toks.get(first + 1) {
            Some(t) if toks.len() == first + 2 => Kind::Use(ident(digest, t).into()),
            _ => Kind::Other,
        },
        // Dynamic SQL (EXECUTE, EXECUTE IMMEDIATE) and procedures run statements the
        // analysis does not see.
        b"CALL" => Kind::Unbounded("CALL"),
        b"EXECUTE" => Kind::Unbounded("dynamic SQL (EXECUTE)"),
        // MariaDB's ANALYZE runs the statement: analyse it as that statement.
        b"ANALYZE" => analyze_statement(digest, &toks[first + 1..], whole),
        b"SHOW" | b"DESCRIBE" | b"DESC" | b"EXPLAIN" | b"HELP" | b"DO" | b"HANDLER" | b"PREPARE" | b"DEALLOCATE"
        | b"LOCK" | b"UNLOCK" | b"KILL" | b"CHECK" | b"CHECKSUM" | b"SIGNAL" | b"RESIGNAL" | b"GET" => Kind::Other,
        _ => write_all(),
    }
}

/// `SET STATEMENT var=val, ... FOR statement` (`toks` after `STATEMENT`): the statement runs
/// with those values.
fn set_statement(digest: &[u8], toks: &[Token]) -> Kind {
    let Some(f) = toks.iter().position(|t| is_word(digest, Some(t), "FOR")) else { return Kind::Untrackable("SET") };
    // Under another sql_mode the statement may lex differently (NO_BACKSLASH_ESCAPES,
    // ANSI_QUOTES): what it writes is not known.
    let sets_mode = toks[..f].iter().any(|t| is_word(digest, Some(t), "sql_mode"));
    match analyze_one(digest, &toks[f + 1..], true) {
        Kind::Unbounded(r) => Kind::Unbounded(r),
        _ if sets_mode => write_all(),
        Kind::Read(_) | Kind::NotCacheable(_) | Kind::Other => Kind::NotCacheable("SET STATEMENT"),
        Kind::Write(w) => Kind::Write(WriteInfo { keys: None, ..w }),
        _ => Kind::Untrackable("SET STATEMENT"),
    }
}

/// `ANALYZE [FORMAT = JSON] stmt`: what the statement it runs does (ANALYZE TABLE only
/// reads).
fn analyze_statement(digest: &[u8], toks: &[Token], whole: bool) -> Kind {
    let mut i = 0;
    if is_word(digest, toks.first(), "FORMAT") {
        i = 3; // FORMAT = JSON
    }
    let rest = &toks[i.min(toks.len())..];
    let Some(first) = rest.first() else { return Kind::Other };
    match up(digest, first).as_slice() {
        b"TABLE" | b"TABLES" | b"NO_WRITE_TO_BINLOG" | b"LOCAL" => Kind::Other,
        _ => match analyze_one(digest, rest, whole) {
            Kind::Read(_) => Kind::NotCacheable("ANALYZE"),
            k => k,
        },
    }
}

/// The first reason the token stream makes a read uncacheable.
fn deny(digest: &[u8], toks: &[Token]) -> Option<&'static str> {
    for (i, t) in toks.iter().enumerate() {
        let text = &digest[t.start..t.end];
        match t.kind {
            Tok::Var => return Some("user or system variable"),
            Tok::Param => {}
            Tok::Word => {
                let next = toks.get(i + 1);
                let up = text.to_ascii_uppercase();
                match up.as_slice() {
                    b"SQL_NO_CACHE" => return Some("SQL_NO_CACHE"),
                    b"INTO" => return Some("SELECT ... INTO"),
                    b"FOR" if is_word(digest, next, "UPDATE") || is_word(digest, next, "SHARE") => {
                        return Some("locking read (FOR UPDATE / FOR SHARE)")
                    }
                    b"LOCK" if is_word(digest, next, "IN") => return Some("locking read (LOCK IN SHARE MODE)"),
                    b"NEXT" | b"PREVIOUS" if is_word(digest, next, "VALUE") => return Some("sequence value"),
                    b"PROCEDURE" => return Some("PROCEDURE clause"),
                    _ => {}
                }
                if funcs::bare_denied(text) {
                    return Some("non-deterministic function");
                }
                let call = next.is_some_and(|n| n.kind == Tok::Punct && &digest[n.start..n.end] == b"(");
                if call {
                    let qualified = i > 0 && &digest[toks[i - 1].start..toks[i - 1].end] == b".";
                    if qualified {
                        return Some("unknown function (stored function or UDF)");
                    }
                    if let Some(r) = funcs::call_reason(text) {
                        return Some(r);
                    }
                }
            }
            Tok::Quoted => {
                let call = toks.get(i + 1).is_some_and(|n| &digest[n.start..n.end] == b"(");
                if call {
                    return Some("unknown function (stored function or UDF)");
                }
            }
            _ => {}
        }
    }
    None
}

fn stmt_text(digest: &[u8], toks: &[Token]) -> Option<String> {
    let (a, b) = (toks.first()?.start, toks.last()?.end);
    numbered(&digest[a..b])
}

fn read(digest: &[u8], toks: &[Token], whole: bool) -> Kind {
    let is_with = is_word(digest, toks.first(), "WITH");
    if !is_with {
        if let Some(r) = deny(digest, toks) {
            return Kind::NotCacheable(r);
        }
    }
    let Some(stmt) = stmt_text(digest, toks).and_then(|s| ast::parse(&s)) else {
        return if is_with { write_all() } else { Kind::NotCacheable("statement the parser does not know") };
    };
    if !ast::is_query(&stmt) {
        return write_stmt(&stmt);
    }
    if is_with {
        if let Some(r) = deny(digest, toks) {
            return Kind::NotCacheable(r);
        }
    }
    if !whole {
        return Kind::NotCacheable("multi-statement");
    }
    let Some(tables) = ast::relations(&stmt) else { return Kind::NotCacheable("table function") };
    if tables.is_empty() {
        return Kind::NotCacheable("no tables");
    }
    let single = tables.len() == 1;
    let preds = if single {
        vec![TablePreds { own: ast::read_keys(&stmt), derived: Vec::new() }]
    } else {
        // A join's bounds count only if its FROM names every table (no subquery adds one).
        joins::join_preds(&stmt).filter(|(rels, _)| *rels == tables).map(|(_, p)| p).unwrap_or_default()
    };
    let row_deps = if single {
        vec![ast::row_deps(&stmt).map(|d| RowDeps { alias: None, deps: d.map(Arc::from) })]
    } else {
        let rows = joins::join_row_deps(&stmt).filter(|(rels, _)| *rels == tables).map(|(_, r)| r);
        let of = |(alias, deps): (Arc<str>, Option<Vec<Arc<str>>>)| {
            Some(RowDeps { alias: Some(alias), deps: deps.map(Arc::from) })
        };
        rows.map(|r| r.into_iter().map(of).collect()).unwrap_or_default()
    };
    let columns = if single {
        vec![ast::read_columns(&stmt).map(Arc::from)]
    } else {
        let cols = joins::join_columns(&stmt).filter(|(rels, _)| *rels == tables).map(|(_, c)| c);
        cols.map(|c| c.into_iter().map(|c| c.map(Arc::from)).collect()).unwrap_or_default()
    };
    let (order, limit) = ast::ordering(&stmt);
    let order = (Arc::from(order), limit);
    let sql_cache =
        toks.iter().any(|t| t.kind == Tok::Word && digest[t.start..t.end].eq_ignore_ascii_case(b"SQL_CACHE"));
    Kind::Read(ReadInfo { tables, preds, sql_cache, row_deps, columns, order })
}

fn write_stmt(stmt: &sqlparser::ast::Statement) -> Kind {
    match ast::relations(stmt) {
        Some(t) if !t.is_empty() => {
            let keys = if t.len() == 1 { ast::write_keys(stmt) } else { None };
            Kind::Write(WriteInfo { targets: Targets::Tables(t), keys, ddl: false })
        }
        _ => write_all(),
    }
}

fn write(digest: &[u8], toks: &[Token], _whole: bool) -> Kind {
    if let Some(stmt) = stmt_text(digest, toks).and_then(|s| ast::parse(&s)) {
        return write_stmt(&stmt);
    }
    // LOAD DATA/XML ... INTO TABLE name: the parser may not know it.
    if is_word(digest, toks.first(), "LOAD") {
        if let Some(i) = (0..toks.len().saturating_sub(1))
            .find(|&i| is_word(digest, toks.get(i), "INTO") && is_word(digest, toks.get(i + 1), "TABLE"))
        {
            if let Some(name) = name_at(digest, toks, i + 2) {
                return Kind::Write(WriteInfo { targets: Targets::Tables(vec![name]), keys: None, ddl: false });
            }
        }
    }
    write_all()
}

/// `name` or `db.name` at token `i`.
fn name_at(digest: &[u8], toks: &[Token], i: usize) -> Option<RelName> {
    let a = toks.get(i).filter(|t| matches!(t.kind, Tok::Word | Tok::Quoted))?;
    let dot = toks.get(i + 1).is_some_and(|t| &digest[t.start..t.end] == b".");
    if dot {
        let b = toks.get(i + 2).filter(|t| matches!(t.kind, Tok::Word | Tok::Quoted))?;
        return Some(RelName { db: Some(ident(digest, a).into()), table: ident(digest, b).into() });
    }
    Some(RelName { db: None, table: ident(digest, a).into() })
}

fn ddl(digest: &[u8], toks: &[Token]) -> Kind {
    let w = |i: usize, s: &str| is_word(digest, toks.get(i), s);
    if w(1, "TEMPORARY") || (w(1, "OR") && w(2, "REPLACE") && w(3, "TEMPORARY")) {
        if w(0, "CREATE") {
            return Kind::Untrackable("temporary table");
        }
        return Kind::Other;
    }
    if (w(0, "CREATE") || w(0, "DROP") || w(0, "ALTER")) && (w(1, "DATABASE") || w(1, "SCHEMA")) {
        let mut i = 2;
        while w(i, "IF") || w(i, "NOT") || w(i, "EXISTS") {
            i += 1;
        }
        if let Some(t) = toks.get(i).filter(|t| matches!(t.kind, Tok::Word | Tok::Quoted)) {
            return Kind::Write(WriteInfo {
                targets: Targets::Database(Some(ident(digest, t).into())),
                keys: None,
                ddl: true,
            });
        }
    }
    Kind::Write(WriteInfo { targets: Targets::All, keys: None, ddl: true })
}
