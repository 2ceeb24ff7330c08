//! From key predicates to the rows a statement can see or touch: the [`Scope`] of each
//! table a read sees (one table, or each of a join's, see `joins.rs`), and the key
//! values a write's predicates bind.
//!
//! A read's WHERE is a conjunction, so every conjunct on a key bounds the rows it can
//! see: all of them on the integer primary key are intersected (`id >= 5 AND id < 10` is
//! `Range(5, 9)`, `id IN (1, 7) AND id > 3` is `Points([7])`). A key tagged by value
//! (string or composite primary key, unique key) needs an equality or IN list on every
//! one of its columns, with values of the column's kind (strings for string columns,
//! integers for integer ones: MariaDB compares a string column with a number
//! numerically, so `code = 5` matches `'5.0'`). Anything else is table-level.

use std::borrow::Cow;

use crate::ast::{Cons, KeyPred, SlotRef};
use crate::joins::{Carried, TablePreds};
use crate::keys::{combinations, KeyDef, Part, MAX_VALUES};
use crate::lexer::SlotValue;
use crate::ranges::MAX_RANGE_WIDTH;
use crate::schema::Known;
use crate::types::{KeyValues, Param, Scope};
use crate::values::Values;

/// Most integer primary-key points a read is tagged with (an IN list); more: table-level.
pub(crate) const MAX_READ_POINTS: usize = MAX_VALUES;

/// Most key values a write is narrowed to (an IN list, a range expanded into its keys,
/// composite keys' combinations); more: table-level.
pub(crate) const MAX_WRITE_POINTS: usize = 1024;

impl Values<'_> {
    /// A slot's value as a [`Param`]: integer literals, the parameter bound, and quoted
    /// string literals without escapes or doubled quotes (anything else: None).
    pub(crate) fn param(&self, r: SlotRef) -> Option<Param> {
        let s = self.slots.get(r.slot as usize)?;
        let p = match s.value {
            SlotValue::Int(_) => return self.int(r).map(Param::Int),
            SlotValue::Param(n) => self.params.get(n as usize)?.clone(),
            SlotValue::Other => {
                let t = self.text.get(s.start as usize..s.end as usize)?;
                let q = *t.first()?;
                let inner = t.get(1..t.len().checked_sub(1)?)?;
                let plain = matches!(q, b'\'' | b'"') && t.last() == Some(&q) && t.len() >= 2;
                if !plain || inner.iter().any(|b| *b == q || *b == b'\\') {
                    return None;
                }
                Param::Str(inner.into())
            }
        };
        match (r.neg, p) {
            (false, p) => Some(p),
            (true, Param::Int(v)) => v.checked_neg().map(Param::Int),
            (true, Param::UInt(u)) => i64::try_from(u).ok()?.checked_neg().map(Param::Int),
            (true, _) => None,
        }
    }

    /// The integer primary key's rows allowed by every predicate on it that resolves:
    /// points (at most `max_points`) or a range no wider than the index keeps; None if
    /// unbounded, too wide, too many, or empty.
    pub(crate) fn int_scope(&self, preds: &[KeyPred], pk: &str, max_points: usize) -> Option<Scope> {
        let (mut lo, mut hi) = (i64::MIN, i64::MAX);
        let mut points: Option<Vec<i64>> = None;
        for p in preds.iter().filter(|p| &*p.column == pk) {
            match &p.cons {
                Cons::Points(v) => {
                    let Some(mut pts) = v.iter().map(|r| self.int(*r)).collect::<Option<Vec<i64>>>() else {
                        continue;
                    };
                    pts.sort_unstable();
                    pts.dedup();
                    if let Some(old) = &points {
                        pts.retain(|k| old.binary_search(k).is_ok());
                    }
                    points = Some(pts);
                }
                Cons::Range(l, h) => {
                    let l = match l {
                        None => Some(i64::MIN),
                        Some((r, true)) => self.int(*r),
                        Some((r, false)) => self.int(*r).and_then(|v| v.checked_add(1)),
                    };
                    let h = match h {
                        None => Some(i64::MAX),
                        Some((r, true)) => self.int(*r),
                        Some((r, false)) => self.int(*r).and_then(|v| v.checked_sub(1)),
                    };
                    // `id > i64::MAX` or `id < i64::MIN` would need a bound past i64: skip.
                    if let (Some(l), Some(h)) = (l, h) {
                        lo = lo.max(l);
                        hi = hi.min(h);
                    }
                }
            }
        }
        if let Some(mut pts) = points {
            pts.retain(|k| (lo..=hi).contains(k));
            if pts.is_empty() {
                return None; // no row can match: rare, and table-level is always right
            }
            if pts.len() <= max_points {
                return Some(Scope::Points(pts));
            }
            // Too many points: the range they lie in (or the bounds, if narrower) is the scope.
            lo = lo.max(pts[0]);
            hi = hi.min(pts[pts.len() - 1]);
        }
        let width = u64::try_from(hi as i128 - lo as i128).ok()?;
        (width <= MAX_RANGE_WIDTH).then_some(Scope::Range(lo, hi))
    }

    /// The values of `key` bound by equalities or IN lists on all its columns (at most
    /// `max` combinations); None if a column is not bound by values of its kind.
    pub(crate) fn key_values(&self, preds: &[KeyPred], key: &KeyDef, max: usize) -> Option<KeyValues> {
        let mut per_column: Vec<Vec<Part>> = Vec::with_capacity(key.columns.len());
        for (col, fold) in &key.columns {
            let parts = preds.iter().filter(|p| p.column == *col).find_map(|p| match &p.cons {
                Cons::Points(v) if v.len() <= max => {
                    v.iter().map(|r| fold.value(&self.param(*r)?)).collect::<Option<Vec<Part>>>()
                }
                _ => None,
            })?;
            per_column.push(parts);
        }
        let values = combinations(&per_column, max)?;
        (!values.is_empty()).then(|| KeyValues { key: key.id.clone(), values })
    }

    /// The predicates that may bound one table of a read: its own, and those a join
    /// equality carries over from a column `int_column(table, column)` says is an integer
    /// column, when every value is an integer within ±2^53 (then both comparisons are
    /// exact: as integers, or as doubles that hold the value exactly).
    pub(crate) fn table_preds<'p>(
        &self,
        p: &'p TablePreds,
        int_column: impl Fn(usize, &str) -> bool,
    ) -> Cow<'p, [KeyPred]> {
        if p.derived.is_empty() {
            return Cow::Borrowed(&p.own);
        }
        const EXACT: i64 = 1 << 53;
        let exact = |v: Option<i64>| v.is_some_and(|v| (-EXACT..=EXACT).contains(&v));
        let usable = |d: &&Carried| int_column(d.from, &d.column) && d.pred.cons.slots().all(|s| exact(self.int(s)));
        Cow::Owned(p.own.iter().cloned().chain(p.derived.iter().filter(usable).map(|d| d.pred.clone())).collect())
    }

    /// The scope of a single-table read of a table known as `known`: the integer primary
    /// key's points or range, else the first key (primary, then unique) bound by values.
    pub(crate) fn read_scope(&self, preds: &[KeyPred], known: &Known) -> Scope {
        if let Some(s) = known.int_pk.as_deref().and_then(|pk| self.int_scope(preds, pk, MAX_READ_POINTS)) {
            return s;
        }
        known.keys.iter().find_map(|k| self.key_values(preds, k, MAX_VALUES)).map_or(Scope::Table, Scope::Values)
    }
}
