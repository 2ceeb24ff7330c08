//! memcached semantics on a row: given what the table holds for a key, decide the one
//! statement to run and the outcome. Shared by both backends (they only differ in how
//! they read the row and run the statement).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use engine::ops::{add_delta, padded};

use crate::error::BackendError;
use crate::validate::{ColKind, Mapping};

/// A row as memcached sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The value columns joined by the separator (NULL columns as empty strings; integer
    /// columns as decimal digits).
    pub value: Vec<u8>,
    /// From the flags column; 0 without one.
    pub flags: u32,
    /// From the cas column; 0 without one.
    pub cas: u64,
    /// Absolute unix time (seconds) from the expire column; 0 = never (or no column).
    pub exptime: i64,
}

/// The storage command: the engine's type, so both front-end paths share one vocabulary.
pub use engine::ops::StoreMode;

/// What a store or delete answered: the engine's outcome types (one vocabulary for both
/// front-end paths). On a container, `Stored` carries the row's new cas (0 without a cas
/// column), `Exists` also means a cas was given to a container without a cas column, and
/// `StoreOutcome::NoMemory` never happens.
pub use engine::ops::{DeleteOutcome, StoreOutcome};

/// What incr/decr answered: the engine's type. On a container `Done` carries the row's
/// new cas (0 without a cas column) and `created` for a row made from the initial value;
/// `NonNumeric` also means the value does not fit 64 bits; `Exists` and `NoMemory` never
/// happen.
pub use engine::ops::ArithOutcome;

/// What a table row holds, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Existing {
    /// Each value column (NULL = None), integers as decimal digits.
    pub parts: Vec<Option<Vec<u8>>>,
    pub flags: u32,
    pub cas: u64,
    /// The raw expire column (NULL = None).
    pub exp: Option<i64>,
}

impl Existing {
    pub fn live(&self, now: i64) -> bool {
        match self.exp {
            None | Some(0) => true,
            Some(e) => e > now,
        }
    }

    pub fn joined(&self, sep: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        for (i, p) in self.parts.iter().enumerate() {
            if i > 0 {
                v.extend_from_slice(sep);
            }
            if let Some(p) = p {
                v.extend_from_slice(p);
            }
        }
        v
    }

    pub fn to_row(&self, sep: &[u8]) -> Row {
        Row { value: self.joined(sep), flags: self.flags, cas: self.cas, exptime: self.exp.unwrap_or(0).max(0) }
    }
}

/// Column values for an INSERT or a full UPDATE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewRow {
    pub parts: Vec<Option<Vec<u8>>>,
    pub flags: u32,
    pub cas: u64,
    pub exp: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Write {
    None,
    Insert(NewRow),
    Update(NewRow),
    /// Only the expire column.
    Touch(i64),
    Delete,
    /// The row is expired: remove it (conditionally), outcome unaffected.
    DeleteExpired,
}

/// One operation as queued to a connection.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Get {
        keys: Vec<Vec<u8>>,
    },
    Store {
        mode: StoreMode,
        key: Vec<u8>,
        value: Vec<u8>,
        flags: u32,
        exp: i64,
        cas: u64,
    },
    Delete {
        key: Vec<u8>,
        /// Delete only if the row's CAS is this (meta `C`, binary header CAS).
        cas: Option<u64>,
    },
    Arith {
        key: Vec<u8>,
        incr: bool,
        delta: u64,
        init: Option<(u64, i64)>,
        /// Compare with the row's CAS first (0: none).
        cas: u64,
        /// On success, the new absolute expiry (meta `T`; 0: never).
        touch: Option<i64>,
    },
    Touch {
        key: Vec<u8>,
        exp: i64,
    },
    /// Lazy removal of a row a reader found expired (no reply).
    DeleteExpired {
        key: Vec<u8>,
    },
    Flush,
}

impl Op {
    /// A plain `set` (no cas to compare): it can be written without reading the row.
    pub fn is_blind_set(&self) -> bool {
        matches!(self, Op::Store { mode: StoreMode::Set, cas: 0, .. })
    }

    pub fn key(&self) -> Option<&[u8]> {
        match self {
            Op::Store { key, .. }
            | Op::Delete { key, .. }
            | Op::Arith { key, .. }
            | Op::Touch { key, .. }
            | Op::DeleteExpired { key } => Some(key),
            Op::Get { .. } | Op::Flush => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OpResult {
    Rows(Vec<Option<Row>>),
    /// What a lane answers a read with: the rows (None: absent or expired) and the keys
    /// whose rows were found expired (the router deletes them lazily).
    Read {
        rows: Vec<Option<Row>>,
        expired: Vec<Vec<u8>>,
    },
    Store(StoreOutcome),
    Delete(DeleteOutcome),
    Arith(ArithOutcome),
    Touch(Option<Row>),
    Done,
}

pub(crate) fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// memcached's exptime rule on unix times (the engine's, shared).
pub use engine::clock::absolute_unix_exptime as absolute_exptime;

/// New cas values: unique and increasing within the process, seeded with the start time
/// in microseconds so that values from before a restart are not handed out again, and
/// always above the row's previous value.
#[derive(Debug)]
pub(crate) struct CasClock(AtomicU64);

impl CasClock {
    pub fn new() -> CasClock {
        let micros = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(1);
        CasClock(AtomicU64::new(micros))
    }

    pub fn next_after(&self, old: u64) -> u64 {
        let n = self.0.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        if n > old {
            n
        } else {
            let m = old.wrapping_add(1).max(1);
            self.0.fetch_max(m, Ordering::Relaxed);
            m
        }
    }
}

/// A row to write under its key.
pub(crate) type KeyedRow<'a> = (&'a [u8], NewRow);
/// One operation's answer.
pub(crate) type Answer = Result<OpResult, BackendError>;

/// Plain sets ([`Op::is_blind_set`]) written together without reading their rows: the
/// rows to write, one per key (the later set of a key wins, as if run in order: one
/// statement may not name a key twice on PostgreSQL), and each set's answer (an error for a
/// value with too many parts, which is not written). Each row gets a new cas from `clock`;
/// the statement keeps `GREATEST(that, old cas + 1)` ([`crate::sql::Statements::set_rows`]).
pub(crate) fn blind_rows<'a>(m: &Mapping, ops: &[&'a Op], clock: &CasClock) -> (Vec<KeyedRow<'a>>, Vec<Answer>) {
    let mut rows: Vec<(&[u8], NewRow)> = Vec::with_capacity(ops.len());
    let mut results = Vec::with_capacity(ops.len());
    for op in ops {
        let Op::Store { key, value, flags, exp, .. } = op else { unreachable!("blind sets only") };
        match split_value(m, value) {
            Ok(parts) => {
                let cas = if m.cas.is_some() { clock.next_after(0) } else { 0 };
                let flags = if m.flags.is_some() { *flags } else { 0 };
                rows.push((key, NewRow { parts, flags, cas, exp: m.expire.as_ref().map(|_| *exp) }));
                results.push(Ok(OpResult::Store(StoreOutcome::Stored(cas))));
            }
            Err(e) => results.push(Err(e)),
        }
    }
    let mut seen = std::collections::HashSet::new();
    rows.reverse();
    rows.retain(|(k, _)| seen.insert(*k));
    rows.reverse();
    (rows, results)
}

/// Splits a value over the value columns. One column: the whole value, separators and
/// all (an empty value is an empty string). Several: split on the separator; more parts
/// than columns are refused. A part that is empty or missing (`Frankfurt|`, or `Frankfurt`
/// for two columns) is NULL, as the InnoDB memcached plugin stores it, so the table holds
/// the same row whichever of the two wrote it (a later `ALTER` to an integer type reads
/// NULL, not 0). A NOT NULL column cannot hold NULL: the plugin then refuses the whole
/// write (InnoDB's `DB_DATA_MISMATCH`); here a character or binary column gets the empty
/// string instead (it reads back as the same memcached value) and an integer column, which
/// has no empty value, refuses the write with a message naming the column.
pub(crate) fn split_value(m: &Mapping, value: &[u8]) -> Result<Vec<Option<Vec<u8>>>, BackendError> {
    let n = m.values.len();
    if n == 1 {
        return Ok(vec![Some(value.to_vec())]);
    }
    let sep = &m.separator[..];
    let mut parts: Vec<Option<Vec<u8>>> = Vec::with_capacity(n);
    let mut rest = value;
    loop {
        match find(rest, sep) {
            Some(i) => {
                parts.push(Some(rest[..i].to_vec()));
                rest = &rest[i + sep.len()..];
            }
            None => {
                parts.push(Some(rest.to_vec()));
                break;
            }
        }
    }
    if parts.len() > n {
        return Err(BackendError::Invalid(format!(
            "value has {} parts separated by '{}' but container '{}' has {} value columns",
            parts.len(),
            String::from_utf8_lossy(sep),
            m.name,
            n
        )));
    }
    parts.resize(n, None);
    for (p, c) in parts.iter_mut().zip(&m.values) {
        if p.as_ref().is_some_and(|v| !v.is_empty()) {
            continue;
        }
        *p = match (c.nullable, c.kind) {
            (true, _) => None,
            (false, ColKind::Int) => {
                return Err(BackendError::Invalid(format!(
                    "the value gives container '{}''s NOT NULL integer column {} no number (an empty part)",
                    m.name, c.name
                )))
            }
            (false, _) => Some(Vec::new()),
        };
    }
    Ok(parts)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    (0..=hay.len() - needle.len()).find(|&i| &hay[i..i + needle.len()] == needle)
}

/// Decides a write operation. `existing` is the row as read (locked) for this key.
pub(crate) fn plan(
    m: &Mapping,
    op: &Op,
    existing: Option<&Existing>,
    now: i64,
    clock: &CasClock,
) -> Result<(Write, OpResult), BackendError> {
    let live = existing.filter(|e| e.live(now));
    let expired = existing.is_some() && live.is_none();
    let has_cas = m.cas.is_some();
    let new_cas = |old: Option<&Existing>| if has_cas { clock.next_after(old.map_or(0, |e| e.cas)) } else { 0 };
    // A cas comparison: Exists unless the container has a cas column and it matches.
    let cas_ok = |e: &Existing, cas: u64| has_cas && e.cas == cas;
    // Writing a row that is absent or expired: INSERT, or UPDATE over the expired one.
    let put = |row: NewRow| if existing.is_some() { Write::Update(row) } else { Write::Insert(row) };
    let gone = |outcome: OpResult| (if expired { Write::DeleteExpired } else { Write::None }, outcome);
    match op {
        Op::Store { mode, key, value, flags, exp, cas } => {
            let exp = m.expire.as_ref().map(|_| *exp);
            let flags = if m.flags.is_some() { *flags } else { 0 };
            // Compare-and-set: cas mode always compares; the others when given a cas
            // (binary/meta protocols). add ignores it.
            let compare = *mode == StoreMode::Cas || (*cas != 0 && *mode != StoreMode::Add);
            if compare {
                match live {
                    None => {
                        let miss = match mode {
                            StoreMode::Replace | StoreMode::Append | StoreMode::Prepend => StoreOutcome::NotStored,
                            _ => StoreOutcome::NotFound,
                        };
                        return Ok(gone(OpResult::Store(miss)));
                    }
                    Some(e) if !cas_ok(e, *cas) => return Ok((Write::None, OpResult::Store(StoreOutcome::Exists))),
                    Some(_) => {}
                }
            }
            match mode {
                StoreMode::Set | StoreMode::Cas => {
                    let c = new_cas(existing);
                    let row = NewRow { parts: split_value(m, value)?, flags, cas: c, exp };
                    Ok((put(row), OpResult::Store(StoreOutcome::Stored(c))))
                }
                StoreMode::Add => match live {
                    Some(_) => Ok((Write::None, OpResult::Store(StoreOutcome::NotStored))),
                    None => {
                        let c = new_cas(existing);
                        let row = NewRow { parts: split_value(m, value)?, flags, cas: c, exp };
                        Ok((put(row), OpResult::Store(StoreOutcome::Stored(c))))
                    }
                },
                StoreMode::Replace => match live {
                    None => Ok(gone(OpResult::Store(StoreOutcome::NotStored))),
                    Some(e) => {
                        let c = new_cas(Some(e));
                        let row = NewRow { parts: split_value(m, value)?, flags, cas: c, exp };
                        Ok((Write::Update(row), OpResult::Store(StoreOutcome::Stored(c))))
                    }
                },
                StoreMode::Append | StoreMode::Prepend => match live {
                    None => Ok(gone(OpResult::Store(StoreOutcome::NotStored))),
                    Some(e) => {
                        // memcached refuses to grow an item past -I (NOT_STORED).
                        let old_len = e.joined(&m.separator).len();
                        if m.item_limit.too_large(key.len(), old_len + value.len(), e.flags) {
                            return Ok((Write::None, OpResult::Store(StoreOutcome::NotStored)));
                        }
                        // memcached keeps the item's flags and exptime.
                        let parts = if m.values.len() == 1 {
                            let old = e.parts[0].as_deref().unwrap_or_default();
                            let v = if *mode == StoreMode::Append {
                                [old, &value[..]].concat()
                            } else {
                                [&value[..], old].concat()
                            };
                            vec![Some(v)]
                        } else {
                            let old = e.joined(&m.separator);
                            let v = if *mode == StoreMode::Append {
                                [&old[..], &value[..]].concat()
                            } else {
                                [&value[..], &old[..]].concat()
                            };
                            split_value(m, &v)?
                        };
                        let c = new_cas(Some(e));
                        let row = NewRow { parts, flags: e.flags, cas: c, exp: e.exp };
                        Ok((Write::Update(row), OpResult::Store(StoreOutcome::Stored(c))))
                    }
                },
            }
        }
        Op::Delete { cas, .. } => match live {
            None => Ok(gone(OpResult::Delete(DeleteOutcome::NotFound))),
            Some(e) if cas.is_some_and(|c| !cas_ok(e, c)) => Ok((Write::None, OpResult::Delete(DeleteOutcome::Exists))),
            Some(_) => Ok((Write::Delete, OpResult::Delete(DeleteOutcome::Deleted))),
        },
        Op::Arith { incr, delta, init, cas, touch, .. } => match live {
            None => match init {
                None => Ok(gone(OpResult::Arith(ArithOutcome::NotFound))),
                Some((initial, exp)) => {
                    let c = new_cas(existing);
                    let row = NewRow {
                        parts: split_value(m, initial.to_string().as_bytes())?,
                        flags: 0,
                        cas: c,
                        exp: m.expire.as_ref().map(|_| *exp),
                    };
                    Ok((put(row), OpResult::Arith(ArithOutcome::Done { value: *initial, cas: c, created: true })))
                }
            },
            Some(e) => {
                // memcached's order: an empty value, then the CAS, then the number.
                let old = e.joined(&m.separator);
                let non_numeric = (Write::None, OpResult::Arith(ArithOutcome::NonNumeric));
                if old.is_empty() {
                    return Ok(non_numeric);
                }
                if *cas != 0 && !cas_ok(e, *cas) {
                    return Ok((Write::None, OpResult::Arith(ArithOutcome::Exists)));
                }
                let Some(v) = add_delta(&old, *incr, *delta) else {
                    return Ok(non_numeric);
                };
                // memcached pads a shorter number with spaces (it rewrites in place); an
                // integer column or several value columns cannot hold that: digits only.
                let text = match &m.values[..] {
                    [c] if c.kind != ColKind::Int => padded(v, old.len()),
                    _ => v.to_string().into_bytes(),
                };
                let c = new_cas(Some(e));
                let exp = match (touch, &m.expire) {
                    (Some(t), Some(_)) => Some(*t),
                    _ => e.exp,
                };
                let row = NewRow { parts: split_value(m, &text)?, flags: e.flags, cas: c, exp };
                Ok((Write::Update(row), OpResult::Arith(ArithOutcome::Done { value: v, cas: c, created: false })))
            }
        },
        Op::Touch { exp, .. } => match live {
            None => Ok(gone(OpResult::Touch(None))),
            Some(e) => {
                // The row as found, like memcached's gat (the new expiry applies after).
                let row = e.to_row(&m.separator);
                let write = if m.expire.is_some() { Write::Touch(*exp) } else { Write::None };
                Ok((write, OpResult::Touch(Some(row))))
            }
        },
        Op::DeleteExpired { .. } => Ok(gone(OpResult::Done)),
        Op::Get { .. } | Op::Flush => unreachable!("not planned per row"),
    }
}

/// The reply to a read of `keys` given the rows found: live rows in key order, and the
/// keys whose rows had expired (deleted after the reply, once each).
pub(crate) fn read_result(
    keys: &[Vec<u8>],
    found: &std::collections::HashMap<Vec<u8>, Existing>,
    now: i64,
    separator: &[u8],
) -> OpResult {
    let mut expired = Vec::new();
    let rows = keys
        .iter()
        .map(|k| match found.get(k) {
            Some(e) if e.live(now) => Some(e.to_row(separator)),
            Some(_) => {
                if !expired.contains(k) {
                    expired.push(k.clone());
                }
                None
            }
            None => None,
        })
        .collect::<Vec<Option<Row>>>();
    OpResult::Read { rows, expired }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ContainerDef, Policy};
    use crate::sql::Dialect;
    use crate::validate::{validate, ColKind, ColumnInfo, IndexInfo, TableInfo};

    fn mapping(values: &[&str], cas: bool) -> Mapping {
        let mut cols = vec![ColumnInfo {
            name: "k".into(),
            decl: "TEXT".into(),
            kind: ColKind::Text,
            nullable: false,
            exact: true,
            cast: None,
        }];
        for v in values {
            cols.push(ColumnInfo {
                name: v.to_string(),
                decl: "TEXT".into(),
                kind: ColKind::Text,
                nullable: true,
                exact: true,
                cast: None,
            });
        }
        for c in ["f", "c", "e"] {
            cols.push(ColumnInfo {
                name: c.into(),
                decl: "INTEGER".into(),
                kind: ColKind::Int,
                nullable: true,
                exact: false,
                cast: None,
            });
        }
        let info = TableInfo {
            columns: cols,
            indexes: vec![IndexInfo {
                name: "PRIMARY".into(),
                unique: true,
                primary: true,
                columns: vec!["k".into()],
                complete: true,
            }],
        };
        let def = ContainerDef {
            name: "t".into(),
            schema: None,
            table: "t".into(),
            key_column: "k".into(),
            value_columns: values.iter().map(|s| s.to_string()).collect(),
            flags_column: Some("f".into()),
            cas_column: cas.then(|| "c".into()),
            expire_column: Some("e".into()),
            unique_index: None,
            policy: Policy::default(),
            cache_ttl: None,
            origin: "test",
        };
        validate(&def, "main", Some(&info), Dialect::Sqlite, "|", 60).unwrap()
    }

    fn ex(parts: &[Option<&str>], cas: u64, exp: Option<i64>) -> Existing {
        Existing { parts: parts.iter().map(|p| p.map(|s| s.as_bytes().to_vec())).collect(), flags: 7, cas, exp }
    }

    fn store(mode: StoreMode, v: &str, cas: u64) -> Op {
        Op::Store { mode, key: b"k".to_vec(), value: v.as_bytes().to_vec(), flags: 1, exp: 0, cas }
    }

    #[test]
    fn exptime_rules() {
        let now = 1_700_000_000;
        assert_eq!(absolute_exptime(0, now), 0);
        assert_eq!(absolute_exptime(10, now), now + 10);
        assert_eq!(absolute_exptime(30 * 86400, now), now + 30 * 86400);
        assert_eq!(absolute_exptime(30 * 86400 + 1, now), 30 * 86400 + 1);
        assert!(absolute_exptime(-1, now) < now && absolute_exptime(-1, now) != 0);
    }

    #[test]
    fn split_and_join() {
        let m = mapping(&["a", "b", "v3"], true);
        assert_eq!(
            split_value(&m, b"x|y|z").unwrap(),
            vec![Some(b"x".to_vec()), Some(b"y".to_vec()), Some(b"z".to_vec())]
        );
        assert_eq!(split_value(&m, b"x").unwrap(), vec![Some(b"x".to_vec()), None, None]);
        // Empty parts are NULL, as the InnoDB memcached plugin stores them.
        assert_eq!(split_value(&m, b"x|").unwrap(), vec![Some(b"x".to_vec()), None, None]);
        assert_eq!(split_value(&m, b"|y|").unwrap(), vec![None, Some(b"y".to_vec()), None]);
        assert_eq!(split_value(&m, b"x||z").unwrap(), vec![Some(b"x".to_vec()), None, Some(b"z".to_vec())]);
        assert_eq!(split_value(&m, b"").unwrap(), vec![None, None, None]);
        // NOT NULL: a character column gets '', an integer column refuses the write.
        let mut strict = mapping(&["a", "b", "v3"], true);
        strict.values[1].nullable = false;
        assert_eq!(split_value(&strict, b"x|").unwrap(), vec![Some(b"x".to_vec()), Some(vec![]), None]);
        strict.values[2].nullable = false;
        strict.values[2].kind = ColKind::Int;
        assert_eq!(split_value(&strict, b"x|y|7").unwrap()[2], Some(b"7".to_vec()));
        let e = split_value(&strict, b"x|y").unwrap_err();
        assert!(matches!(&e, BackendError::Invalid(m) if m.contains("NOT NULL integer column v3")), "{e:?}");
        assert!(matches!(split_value(&m, b"1|2|3|4"), Err(BackendError::Invalid(_))));
        let one = mapping(&["a"], true);
        assert_eq!(split_value(&one, b"x|y|z|w").unwrap(), vec![Some(b"x|y|z|w".to_vec())]);
        assert_eq!(ex(&[Some("x"), None, Some("3")], 0, None).joined(b"|"), b"x||3");
    }

    #[test]
    fn arith_follows_memcached_strtoull_padding_and_cas() {
        let m = mapping(&["a"], true);
        let clock = CasClock::new();
        let op = |incr, delta, cas| Op::Arith { key: b"k".to_vec(), incr, delta, init: None, cas, touch: None };
        // strtoull: a sign, then digits, then a blank and anything.
        for (v, want) in [("+12", 13), ("12 ab", 13), ("-0", 1)] {
            let (_, r) = plan(&m, &op(true, 1, 0), Some(&ex(&[Some(v)], 5, None)), 100, &clock).unwrap();
            assert!(matches!(r, OpResult::Arith(ArithOutcome::Done { value, .. }) if value == want), "{v}");
        }
        // A shorter result is padded to the old length, as memcached's in-place rewrite.
        let (w, _) = plan(&m, &op(false, 1, 0), Some(&ex(&[Some("10")], 5, None)), 100, &clock).unwrap();
        let Write::Update(row) = w else { panic!() };
        assert_eq!(row.parts, vec![Some(b"9 ".to_vec())]);
        // The CAS is compared before the value is parsed.
        let (_, r) = plan(&m, &op(true, 1, 6), Some(&ex(&[Some("abc")], 5, None)), 100, &clock).unwrap();
        assert_eq!(r, OpResult::Arith(ArithOutcome::Exists));
        let (_, r) = plan(&m, &op(true, 1, 5), Some(&ex(&[Some("1")], 5, None)), 100, &clock).unwrap();
        assert!(matches!(r, OpResult::Arith(ArithOutcome::Done { value: 2, .. })));
    }

    #[test]
    fn delete_with_cas_zero_compares() {
        let m = mapping(&["a"], true);
        let e = ex(&[Some("v")], 5, None);
        let del = |cas| Op::Delete { key: b"k".to_vec(), cas };
        let (_, r) = plan(&m, &del(Some(0)), Some(&e), 100, &CasClock::new()).unwrap();
        assert_eq!(r, OpResult::Delete(DeleteOutcome::Exists));
        let (w, _) = plan(&m, &del(None), Some(&e), 100, &CasClock::new()).unwrap();
        assert_eq!(w, Write::Delete);
    }

    #[test]
    fn cas_without_cas_column_never_writes() {
        let m = mapping(&["a"], false);
        let clock = CasClock::new();
        let e = ex(&[Some("v")], 0, None);
        let (w, r) = plan(&m, &store(StoreMode::Cas, "n", 0), Some(&e), 100, &clock).unwrap();
        assert_eq!((w, r), (Write::None, OpResult::Store(StoreOutcome::Exists)));
        let (w, r) = plan(&m, &store(StoreMode::Cas, "n", 0), None, 100, &clock).unwrap();
        assert_eq!((w, r), (Write::None, OpResult::Store(StoreOutcome::NotFound)));
        let (_, r) = plan(&m, &store(StoreMode::Set, "n", 0), Some(&e), 100, &clock).unwrap();
        assert_eq!(r, OpResult::Store(StoreOutcome::Stored(0)));
    }

    #[test]
    fn cas_clock_is_above_previous() {
        let c = CasClock::new();
        let a = c.next_after(0);
        assert!(c.next_after(0) > a);
        assert_eq!(c.next_after(u64::MAX - 1), u64::MAX);
        let m = mapping(&["a"], true);
        let e = ex(&[Some("v")], 5, None);
        let (_, r) = plan(&m, &store(StoreMode::Set, "n", 0), Some(&e), 100, &CasClock::new()).unwrap();
        assert!(matches!(r, OpResult::Store(StoreOutcome::Stored(cas)) if cas > 5));
    }

    #[test]
    fn expired_rows_are_absent() {
        let m = mapping(&["a"], true);
        let clock = CasClock::new();
        let e = ex(&[Some("v")], 5, Some(50));
        let (w, r) = plan(&m, &store(StoreMode::Add, "n", 0), Some(&e), 100, &clock).unwrap();
        assert!(matches!(w, Write::Update(_)) && matches!(r, OpResult::Store(StoreOutcome::Stored(_))));
        let (w, r) = plan(&m, &store(StoreMode::Replace, "n", 0), Some(&e), 100, &clock).unwrap();
        assert_eq!((w, r), (Write::DeleteExpired, OpResult::Store(StoreOutcome::NotStored)));
        let (_, r) = plan(&m, &store(StoreMode::Cas, "n", 5), Some(&e), 100, &clock).unwrap();
        assert_eq!(r, OpResult::Store(StoreOutcome::NotFound));
        let (w, r) = plan(&m, &Op::Delete { key: b"k".to_vec(), cas: None }, Some(&e), 100, &clock).unwrap();
        assert_eq!((w, r), (Write::DeleteExpired, OpResult::Delete(DeleteOutcome::NotFound)));
        // exp 0 and NULL: never.
        assert!(ex(&[], 0, Some(0)).live(i64::MAX) && ex(&[], 0, None).live(i64::MAX));
    }

    #[test]
    fn append_prepend_multi_column() {
        let m = mapping(&["a", "b"], true);
        let clock = CasClock::new();
        let e = ex(&[Some("x"), Some("y")], 5, Some(0));
        let (w, _) = plan(&m, &store(StoreMode::Append, "z", 0), Some(&e), 100, &clock).unwrap();
        let Write::Update(row) = w else { panic!() };
        assert_eq!(row.parts, vec![Some(b"x".to_vec()), Some(b"yz".to_vec())]);
        assert_eq!((row.flags, row.exp), (7, Some(0)), "append keeps flags and exptime");
        let (w, _) = plan(&m, &store(StoreMode::Prepend, "z", 0), Some(&e), 100, &clock).unwrap();
        let Write::Update(row) = w else { panic!() };
        assert_eq!(row.parts, vec![Some(b"zx".to_vec()), Some(b"y".to_vec())]);
        let r = plan(&m, &store(StoreMode::Append, "|w", 0), Some(&e), 100, &clock);
        assert!(matches!(r, Err(BackendError::Invalid(_))));
    }

    #[test]
    fn arith_rules() {
        let m = mapping(&["a"], true);
        let clock = CasClock::new();
        let arith = |incr, delta| Op::Arith { key: b"k".to_vec(), incr, delta, init: None, cas: 0, touch: None };
        let e = ex(&[Some("18446744073709551615")], 5, None);
        let (_, r) = plan(&m, &arith(true, 2), Some(&e), 100, &clock).unwrap();
        assert!(matches!(r, OpResult::Arith(ArithOutcome::Done { value: 1, .. })));
        let e = ex(&[Some("3")], 5, None);
        let (w, r) = plan(&m, &arith(false, 5), Some(&e), 100, &clock).unwrap();
        assert!(matches!(r, OpResult::Arith(ArithOutcome::Done { value: 0, .. })));
        let Write::Update(row) = w else { panic!() };
        assert_eq!(row.parts, vec![Some(b"0".to_vec())]);
        let e = ex(&[Some("abc")], 5, None);
        let (w, r) = plan(&m, &arith(true, 1), Some(&e), 100, &clock).unwrap();
        assert_eq!((w, r), (Write::None, OpResult::Arith(ArithOutcome::NonNumeric)));
        let (_, r) = plan(&m, &arith(true, 1), None, 100, &clock).unwrap();
        assert_eq!(r, OpResult::Arith(ArithOutcome::NotFound));
        let init = Op::Arith { key: b"k".to_vec(), incr: true, delta: 1, init: Some((10, 0)), cas: 0, touch: None };
        let (w, r) = plan(&m, &init, None, 100, &clock).unwrap();
        assert!(matches!(w, Write::Insert(_)) && matches!(r, OpResult::Arith(ArithOutcome::Done { value: 10, .. })));
    }
}
