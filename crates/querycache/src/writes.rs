//! Session-dependent rules for writes and `SET`: which key values a write touches, and
//! which session variable values the cache cannot follow.

use crate::ast::{SlotRef, WriteKeys};
use crate::keys::{encode, row_values, KeyDef, Part};
use crate::schema::Known;
use crate::scopes::MAX_WRITE_POINTS;
use crate::types::{Invalidation, KeyValues, Param, RowChange, Scope, TableName};
use crate::values::Values;

/// What a single-table write changes, if it can be narrowed to rows: the integer primary
/// key's values, the values of the value-tagged keys it knows, and how the rows change
/// ([`crate::Invalidation::Keys`]). None: table-level.
pub(crate) type Narrowed = (Vec<i64>, Vec<KeyValues>, RowChange);

/// [`Narrowed`] of a write:
/// - UPDATE / DELETE are narrowed by their WHERE: to integer primary-key values when the
///   table has that key (every value-tagged result of the table goes unless its rows are
///   known and untouched: the old values of its other keys are not in the statement), else
///   to the values of the first key bound by equalities on all its columns (every other
///   key's results go). An UPDATE that assigns a column of that key is table-level (the
///   new rows' values are unknown). An UPDATE's change lists the columns it assigns and
///   those the table updates by itself ([`crate::schema::TableInfo::implicit`]).
/// - INSERT with a column list and VALUES is narrowed to the rows' values: each
///   value-tagged key whose columns all have literals of their kind is listed (the others'
///   results go), and the integer primary key's values when given (not 0); when they are
///   not (auto-increment), every result tagged by primary-key points or ranges goes.
pub(crate) fn write_keys(k: &WriteKeys, v: &Values<'_>, known: &Known) -> Option<Narrowed> {
    let (preds, assigned, change) = match k {
        WriteKeys::Update { preds, assigned } => {
            let mut cols = assigned.clone();
            cols.extend(known.implicit.iter().cloned());
            (preds, &assigned[..], RowChange::Update(cols))
        }
        WriteKeys::Delete { preds } => (preds, &[][..], RowChange::Delete),
        WriteKeys::Insert { columns, rows } => return insert_keys(columns, rows, v, known),
    };
    if let Some(pk) = known.int_pk.as_deref() {
        if assigned.iter().any(|c| &**c == pk) {
            return None;
        }
        let keys = match v.int_scope(preds, pk, MAX_WRITE_POINTS)? {
            Scope::Points(p) => p,
            Scope::Range(lo, hi) if (hi as i128 - lo as i128) < MAX_WRITE_POINTS as i128 => (lo..=hi).collect(),
            _ => return None,
        };
        return Some((keys, Vec::new(), change));
    }
    known.keys.iter().find_map(|key| {
        if key.columns.iter().any(|(c, _)| assigned.contains(c)) {
            return None;
        }
        Some((Vec::new(), vec![v.key_values(preds, key, MAX_WRITE_POINTS)?], change.clone()))
    })
}

/// The slot of one column in one VALUES row (None: not given, or not a literal).
type Cell<'a> = dyn Fn(&[Option<SlotRef>], &str) -> Option<SlotRef> + 'a;

/// [`write_keys`] of `INSERT (columns) VALUES rows`.
fn insert_keys(
    columns: &[std::sync::Arc<str>],
    rows: &[Vec<Option<SlotRef>>],
    v: &Values<'_>,
    known: &Known,
) -> Option<Narrowed> {
    if rows.len() > MAX_WRITE_POINTS {
        return None;
    }
    let cell = |row: &[Option<SlotRef>], col: &str| -> Option<SlotRef> {
        let i = columns.iter().position(|c| &**c == col)?;
        row.get(i).copied().flatten()
    };
    let keys = match known.int_pk.as_deref() {
        Some(pk) => rows.iter().map(|r| cell(r, pk).and_then(|s| v.int(s)).filter(|k| *k != 0)).collect(),
        None => Some(Vec::new()),
    };
    let values: Vec<KeyValues> = known.keys.iter().filter_map(|key| insert_values(key, rows, v, &cell)).collect();
    match keys {
        _ if known.int_pk.is_none() && values.is_empty() => None,
        Some(keys) => Some((keys, values, RowChange::Any)),
        None if values.is_empty() => None,
        None => Some((Vec::new(), values, RowChange::InsertUnknownKeys)),
    }
}

/// The values of `key` in every inserted row; None if a row lacks one.
fn insert_values(key: &KeyDef, rows: &[Vec<Option<SlotRef>>], v: &Values<'_>, cell: &Cell<'_>) -> Option<KeyValues> {
    let mut values = Vec::with_capacity(rows.len());
    for r in rows {
        // An integer 0 may be an auto-increment column's "generate one".
        let parts: Vec<Part> = key
            .columns
            .iter()
            .map(|(c, f)| f.value(&v.param(cell(r, c)?)?).filter(|p| *p != Part::Int(0)))
            .collect::<Option<_>>()?;
        values.push(encode(&parts));
    }
    values.sort();
    values.dedup();
    Some(KeyValues { key: key.id.clone(), values })
}

/// Session variables whose values the cache cannot follow.
pub(crate) fn untrackable_var(name: &str, val: &[u8]) -> Option<&'static str> {
    let up = val.to_ascii_uppercase();
    let has = |w: &[u8]| up.windows(w.len()).any(|x| x == w);
    match name {
        "tx_isolation" | "transaction_isolation" if has(b"UNCOMMITTED") => Some("READ UNCOMMITTED"),
        "sql_mode"
            if [&b"ANSI"[..], b"NO_BACKSLASH_ESCAPES", b"ORACLE", b"MSSQL", b"DB2", b"POSTGRESQL", b"MAXDB"]
                .iter()
                .any(|w| has(w)) =>
        {
            Some("sql_mode changes how statements are lexed")
        }
        _ => None,
    }
}

impl crate::QueryCache {
    /// The invalidation for rows of `db.table` seen changed in the binlog: `columns` are
    /// the table's column names, `value(row, i)` the value of column `i` in a row image
    /// (give every image: before and after for updates). Key-level when the schema
    /// registry knows the table's keys and the images hold their values (else
    /// table-level); a value-tagged key whose value is unknown or refused in any image
    /// (NULL included: an image may leave columns out) is left unlisted, so every result
    /// tagged on it goes. `change`: what the event did (an update's assigned columns are
    /// those whose images differ).
    pub fn rows_changed<R>(
        &self,
        db: &str,
        table: &str,
        columns: &[String],
        rows: &[R],
        value: impl Fn(&R, usize) -> Param,
        change: RowChange,
    ) -> Invalidation {
        let t = TableName::new(db, table);
        let whole = || Invalidation::Table { db: db.to_string(), table: table.to_string() };
        let Some(known) = self.schema.peek(&t) else { return whole() };
        let pos = |name: &str| columns.iter().position(|c| c.eq_ignore_ascii_case(name));
        let keys = match known.int_pk.as_deref() {
            Some(pk) => {
                let Some(i) = pos(pk) else { return whole() };
                let ints = rows.iter().map(|r| match value(r, i) {
                    Param::Int(v) => Some(v),
                    Param::UInt(u) => i64::try_from(u).ok(),
                    _ => None,
                });
                match ints.collect::<Option<Vec<i64>>>() {
                    Some(k) => k,
                    None => return whole(),
                }
            }
            None => Vec::new(),
        };
        let values: Vec<KeyValues> =
            known.keys.iter().filter_map(|k| row_values(k, rows, |r, c| Some(value(r, pos(c)?)))).collect();
        if known.int_pk.is_none() && values.is_empty() {
            return whole();
        }
        Invalidation::Keys { db: db.to_string(), table: table.to_string(), keys, values, change }
    }
}
