//! What one statement means for the cache, from its text (sqlparser's PostgreSQL dialect):
//! a read that may be answered from memory (the tables it reads, and the primary-key
//! values it is limited to when it is a point read), a write (the tables it names), a
//! statement that changes the session's rendering or name resolution (`SET`, `RESET`), one
//! that changes nothing cached (`BEGIN`, `SHOW`...), or anything else, which may change
//! anything (DDL, `CALL`, `DO`, `GRANT`, `COPY ... FROM`...). What cannot be parsed is never
//! cached and counts as anything else.

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions, visit_relations, BinaryOperator, Expr, ObjectName, ObjectNamePart, SetExpr, Statement,
    TableFactor, Value,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// A table as a statement names it: schema (None: resolved through `search_path`) and name,
/// both as PostgreSQL folds them (unquoted names lower-cased).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Named {
    /// The schema, if qualified.
    pub schema: Option<String>,
    /// The table.
    pub table: String,
}

/// Why a read is not answered from memory (a stats label each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// Not one plain SELECT (set operations, several statements, VALUES...).
    Shape,
    /// `FOR UPDATE` / `FOR SHARE`, `INTO`.
    Locking,
    /// A function that is not known to be immutable (`now()`, `random()`, `nextval()`...).
    Volatile,
    /// No table, a system catalog, a view or a subquery in FROM.
    Source,
    /// The text could not be parsed.
    Unparsed,
}

impl Why {
    /// The label in stats.
    pub fn label(self) -> &'static str {
        match self {
            Why::Shape => "shape",
            Why::Locking => "locking",
            Why::Volatile => "volatile",
            Why::Source => "source",
            Why::Unparsed => "unparsed",
        }
    }
}

/// What a statement is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Statementish {
    /// A read that may be cached: the tables, and per table the equality constraints found
    /// on its columns (`column`, literal text) in the WHERE clause's top-level AND.
    Read {
        /// Tables read.
        tables: Vec<Named>,
        /// `(column, value)` pairs the read is limited to (for point tags).
        equals: Vec<(String, String)>,
    },
    /// A read that is never cached.
    Uncacheable(Why),
    /// INSERT, UPDATE, DELETE, MERGE, TRUNCATE of these tables.
    Write(Vec<Named>),
    /// SET / RESET: the session's settings change (part of the key from now on).
    Setting,
    /// Changes nothing a cached read depends on (transaction control, SHOW, EXPLAIN,
    /// LISTEN, PREPARE of a read...).
    Neutral,
    /// Anything else: may change anything (DDL, GRANT, CALL, DO, COPY FROM, CREATE TEMP...).
    Other,
}

/// Immutable or stable-within-a-statement functions whose result depends only on their
/// arguments (and on settings that are part of the key).
#[rustfmt::skip]
const IMMUTABLE: &[&str] = &[
    "count", "sum", "avg", "min", "max", "bool_and", "bool_or", "every", "string_agg", "array_agg", "json_agg",
    "jsonb_agg", "json_object_agg", "jsonb_object_agg", "stddev", "variance", "row_number", "rank", "dense_rank",
    "lower", "upper", "length", "char_length", "octet_length", "substr", "substring", "trim", "btrim", "ltrim",
    "rtrim", "lpad", "rpad", "replace", "concat", "concat_ws", "left", "right", "position", "strpos", "split_part",
    "md5", "abs", "ceil", "ceiling", "floor", "round", "trunc", "mod", "power", "sqrt", "greatest", "least",
    "coalesce", "nullif", "to_char", "date_trunc", "date_part", "extract", "cast", "array_length", "cardinality",
    "jsonb_build_object", "json_build_object", "jsonb_extract_path_text", "json_extract_path_text", "sign",
];

/// Whether `sql` is one `BEGIN` / `START TRANSACTION` with `READ ONLY` (a transaction the
/// `read-only` policy answers reads of from memory).
pub fn begins_read_only(sql: &str) -> bool {
    use sqlparser::ast::{TransactionAccessMode, TransactionMode};
    let first = sql.trim_start().get(..5).unwrap_or("");
    if !first.eq_ignore_ascii_case("begin") && !first.eq_ignore_ascii_case("start") {
        return false;
    }
    match Parser::parse_sql(&PostgreSqlDialect {}, sql).as_deref() {
        Ok([Statement::StartTransaction { modes, .. }]) => {
            modes.contains(&TransactionMode::AccessMode(TransactionAccessMode::ReadOnly))
        }
        _ => false,
    }
}

/// The statements of `sql` (one or more, `;`-separated) as the cache sees them.
pub fn analyze(sql: &str) -> Vec<Statementish> {
    match Parser::parse_sql(&PostgreSqlDialect {}, sql) {
        Ok(stmts) if !stmts.is_empty() => stmts.iter().map(one).collect(),
        Ok(_) => vec![Statementish::Neutral],
        Err(_) => vec![guess(sql)],
    }
}

/// What an unparsable statement is, from its first word: a read is never cached, a
/// statement that may write is `Other`.
fn guess(sql: &str) -> Statementish {
    let first = sql.trim_start().split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("");
    match first.to_ascii_lowercase().as_str() {
        "select" | "with" | "table" | "values" | "show" | "explain" | "begin" | "commit" | "rollback" | "end"
        | "start" | "savepoint" | "release" | "abort" | "listen" | "unlisten" | "notify" | "fetch" | "close"
        | "deallocate" | "discard" => {
            if first.eq_ignore_ascii_case("select") || first.eq_ignore_ascii_case("table") {
                Statementish::Uncacheable(Why::Unparsed)
            } else if first.eq_ignore_ascii_case("with") {
                // A WITH may hold a writable CTE.
                Statementish::Other
            } else {
                Statementish::Neutral
            }
        }
        "set" | "reset" => Statementish::Setting,
        _ => Statementish::Other,
    }
}

fn one(s: &Statement) -> Statementish {
    match s {
        Statement::Query(q) => read(q),
        Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) | Statement::Merge { .. } => {
            Statementish::Write(relations(s))
        }
        Statement::Truncate(_) => Statementish::Write(relations(s)),
        Statement::Set(_) => Statementish::Setting,
        Statement::StartTransaction { .. }
        | Statement::Commit { .. }
        | Statement::Rollback { .. }
        | Statement::Savepoint { .. }
        | Statement::ReleaseSavepoint { .. }
        | Statement::ShowVariable { .. }
        | Statement::ShowVariables { .. }
        | Statement::Explain { analyze: false, .. }
        | Statement::ExplainTable { .. }
        | Statement::LISTEN { .. }
        | Statement::UNLISTEN { .. }
        | Statement::NOTIFY { .. }
        | Statement::Close { .. }
        | Statement::Fetch { .. }
        | Statement::Deallocate { .. } => Statementish::Neutral,
        _ => Statementish::Other,
    }
}

/// Every relation a statement names.
fn relations(s: &Statement) -> Vec<Named> {
    let mut out = Vec::new();
    let _ = visit_relations(s, |n: &ObjectName| {
        if let Some(t) = named(n) {
            if !out.contains(&t) {
                out.push(t);
            }
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

/// An object name as PostgreSQL resolves it (unquoted parts folded to lower case).
fn named(n: &ObjectName) -> Option<Named> {
    let parts: Vec<String> =
        n.0.iter()
            .map(|p| match p {
                ObjectNamePart::Identifier(i) if i.quote_style.is_some() => Some(i.value.clone()),
                ObjectNamePart::Identifier(i) => Some(i.value.to_lowercase()),
                _ => None,
            })
            .collect::<Option<_>>()?;
    match parts.as_slice() {
        [t] => Some(Named { schema: None, table: t.clone() }),
        [s, t] => Some(Named { schema: Some(s.clone()), table: t.clone() }),
        // database.schema.table: only the current database can be named.
        [_, s, t] => Some(Named { schema: Some(s.clone()), table: t.clone() }),
        _ => None,
    }
}

fn read(q: &sqlparser::ast::Query) -> Statementish {
    if !q.locks.is_empty() || q.for_clause.is_some() {
        return Statementish::Uncacheable(Why::Locking);
    }
    if q.with.is_some() {
        return Statementish::Uncacheable(Why::Shape);
    }
    let SetExpr::Select(sel) = q.body.as_ref() else { return Statementish::Uncacheable(Why::Shape) };
    if sel.into.is_some() {
        return Statementish::Uncacheable(Why::Locking);
    }
    let mut tables = Vec::new();
    for twj in &sel.from {
        for f in std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation)) {
            match f {
                TableFactor::Table { name, args: None, .. } => match named(name) {
                    Some(t) if !tables.contains(&t) => tables.push(t),
                    Some(_) => {}
                    None => return Statementish::Uncacheable(Why::Source),
                },
                _ => return Statementish::Uncacheable(Why::Source),
            }
        }
    }
    if tables.is_empty() {
        return Statementish::Uncacheable(Why::Source);
    }
    // Every function immutable; no subquery (its tables would be unknown here).
    let mut bad = None;
    let _ = visit_expressions(q, |e: &Expr| {
        match e {
            Expr::Function(f) => {
                let name = f.name.to_string().to_lowercase();
                if !IMMUTABLE.contains(&name.as_str()) {
                    bad = Some(Why::Volatile);
                    return ControlFlow::Break(());
                }
            }
            // A user-defined operator runs a function that may be volatile.
            Expr::BinaryOp { op: BinaryOperator::PGCustomBinaryOperator(_) | BinaryOperator::Custom(_), .. } => {
                bad = Some(Why::Volatile);
                return ControlFlow::Break(());
            }
            Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => {
                bad = Some(Why::Source);
                return ControlFlow::Break(());
            }
            // current_user, current_timestamp, localtime...: parsed as identifiers.
            Expr::Identifier(i) if i.quote_style.is_none() && volatile_word(&i.value) => {
                bad = Some(Why::Volatile);
                return ControlFlow::Break(());
            }
            _ => {}
        }
        ControlFlow::Continue(())
    });
    if let Some(w) = bad {
        return Statementish::Uncacheable(w);
    }
    let mut equals = Vec::new();
    if let Some(w) = &sel.selection {
        conjuncts(w, &mut equals);
    }
    Statementish::Read { tables, equals }
}

/// Words that read the session or the clock without parentheses.
fn volatile_word(w: &str) -> bool {
    matches!(
        w.to_ascii_lowercase().as_str(),
        "current_user"
            | "current_role"
            | "session_user"
            | "user"
            | "current_timestamp"
            | "current_date"
            | "current_time"
            | "localtime"
            | "localtimestamp"
            | "current_catalog"
            | "current_schema"
    )
}

/// `column = literal` terms of a top-level AND (either side), as (column, literal text).
fn conjuncts(e: &Expr, out: &mut Vec<(String, String)>) {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        Expr::Nested(inner) => conjuncts(inner, out),
        Expr::BinaryOp { left, op: BinaryOperator::Eq, right } => {
            if let Some(p) = column_literal(left, right).or_else(|| column_literal(right, left)) {
                out.push(p);
            }
        }
        _ => {}
    }
}

fn column_literal(col: &Expr, lit: &Expr) -> Option<(String, String)> {
    let name = match col {
        Expr::Identifier(i) => fold(i),
        Expr::CompoundIdentifier(parts) => fold(parts.last()?),
        _ => return None,
    };
    let value = match lit {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.clone(),
            Value::SingleQuotedString(s) => s.clone(),
            // `$1`: the Bind's value (the extended protocol).
            Value::Placeholder(p) if p.starts_with('$') => p.clone(),
            _ => return None,
        },
        Expr::UnaryOp { op: sqlparser::ast::UnaryOperator::Minus, expr } => match expr.as_ref() {
            Expr::Value(v) => match &v.value {
                Value::Number(n, _) => format!("-{n}"),
                _ => return None,
            },
            _ => return None,
        },
        _ => return None,
    };
    Some((name, value))
}

fn fold(i: &sqlparser::ast::Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_lowercase()
    }
}

#[cfg(test)]
mod tests;
