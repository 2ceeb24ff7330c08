//! Session-dependent rules for writes and `SET`: which key values a write touches, and
//! which session variable values the cache cannot follow.

use crate::ast::WriteKeys;
use crate::plan::{Values, MAX_POINTS};
use crate::types::Scope;

/// Key values a single-table write touches, if it can be narrowed to them.
pub(crate) fn write_keys(k: &WriteKeys, v: &Values<'_>, pk: &str) -> Option<Vec<i64>> {
    let scope = match k {
        WriteKeys::Update { preds, assigned } => {
            if assigned.iter().any(|c| &**c == pk) {
                return None;
            }
            v.key_scope(preds, pk)?
        }
        WriteKeys::Delete { preds } => v.key_scope(preds, pk)?,
        WriteKeys::Insert { columns, rows } => {
            let i = columns.iter().position(|c| &**c == pk)?;
            let keys: Vec<i64> = rows
                .iter()
                .map(|r| r.get(i).copied().flatten().and_then(|s| v.int(s)).filter(|k| *k != 0))
                .collect::<Option<_>>()?;
            Scope::Points(keys)
        }
    };
    match scope {
        Scope::Points(p) if p.len() <= MAX_POINTS => Some(p),
        Scope::Range(lo, hi) if (hi as i128 - lo as i128) < MAX_POINTS as i128 => Some((lo..=hi).collect()),
        _ => None,
    }
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
