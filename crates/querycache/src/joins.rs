//! Key predicates of a join: for each table a read joins, the conjuncts that bound which
//! of its rows can change the result, so a join is tagged per table by key (like a
//! single-table read) instead of table-level.
//!
//! A row of a joined table can only change the result through a combination of rows
//! that passes the WHERE clause and the inner joins' ON conditions (the *filter*). So:
//! - A conjunct of the filter on one of the table's columns (`u.id = ?`) bounds it.
//! - An equality between two columns in the filter (`p.user_id = u.id`) carries a bound
//!   from one to the other: `u.id = ? AND p.user_id = u.id` bounds `p.user_id` too.
//! - The right side of a `LEFT JOIN` (nullable: its rows may be missing from a result
//!   row) is bounded by the filter and by its own ON condition: a row that matches no
//!   row on the left through ON changes nothing. A `LEFT JOIN`'s ON condition never
//!   bounds the other tables (their rows appear whether or not it matches).
//!
//! Every predicate the filter holds is null-rejecting (`=`, `IN`, ranges), so a result
//! row padded with NULLs for a table cannot pass one on that table: the rules hold for
//! nullable tables too. Anything not understood (an unqualified column, a qualifier
//! that names no table or two, `OR`, `USING`, `NATURAL`) is ignored, which only makes a
//! tag coarser. RIGHT, FULL and nested joins, derived tables and CTEs are not analysed
//! (every table is then tagged table-level).
//!
//! A bound carried over a join equality is used only from a known integer column and
//! with integer values (see `scopes.rs`): two string columns may compare under another
//! collation than either's own (a string carried across could name the wrong keys), and
//! an ENUM, SET or date column compares with a number otherwise than with a column.

use std::sync::Arc;

use sqlparser::ast::{
    BinaryOperator, Expr, JoinConstraint, JoinOperator, Select, SelectItem, SelectItemQualifiedWildcardKind, SetExpr,
    Statement, TableFactor,
};

use crate::ast::{conjuncts, idents, key_pred_with, rel_name, row_refs, row_shaped, Cons, KeyPred, RelName};

/// Most conjuncts looked at per join (the rest are ignored: coarser, never wrong).
const MAX_CONJUNCTS: usize = 64;

/// The key predicates bounding which rows of one table a read can see.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TablePreds {
    /// Conjuncts on the table's own columns.
    pub own: Vec<KeyPred>,
    /// Bounds carried from other columns by equalities (`p.user_id = u.id AND u.id = ?`
    /// bounds `p.user_id`): valid from integer columns with integer values only.
    pub derived: Vec<Carried>,
}

/// A bound carried over a join equality.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Carried {
    /// The bound, on a column of this table.
    pub pred: KeyPred,
    /// The FROM entry (index) and column the statement bounds (`u.id` above).
    pub from: usize,
    /// That column, lower-cased.
    pub column: Arc<str>,
}

/// A column of one FROM entry: (entry index, lower-cased name).
type Col = (usize, Arc<str>);

/// One table of the FROM clause.
struct Entry {
    rel: RelName,
    /// Its alias, if it has one (then only the alias qualifies its columns).
    alias: Option<String>,
    /// The right side of a LEFT JOIN: its ON condition's conjuncts (None: preserved).
    on: Option<Vec<Expr>>,
}

impl Entry {
    /// Whether `t.c` (qualifier `q`) names a column of this entry.
    fn answers_to(&self, q: &[&str]) -> bool {
        match (&self.alias, q) {
            (Some(a), [x]) => a == x,
            (Some(_), _) => false,
            (None, [t]) => *self.rel.table == **t,
            (None, [d, t]) => self.rel.db.as_deref() == Some(*d) && *self.rel.table == **t,
            (None, _) => false,
        }
    }
}

/// The FROM tables of a one-block read over joined plain tables, in order, each with
/// what bounds its rows; None if the read is not of that shape.
pub(crate) fn join_preds(stmt: &Statement) -> Option<(Vec<RelName>, Vec<TablePreds>)> {
    let sel = one_block(stmt)?;
    let mut entries = Vec::new();
    let mut filter: Vec<&Expr> = Vec::new();
    for (table, join) in from_tables(sel)? {
        let on = match join.map(|j| j.constraint) {
            Some(JoinConstraint::On(e)) => Some(e),
            _ => None,
        };
        if join.is_some_and(|j| j.left) {
            let mut cs = Vec::new();
            if let Some(e) = on {
                conjuncts(e, &mut cs);
            }
            entries.push(entry(table, Some(cs.into_iter().cloned().collect()))?);
        } else {
            entries.push(entry(table, None)?);
            if let Some(e) = on {
                conjuncts(e, &mut filter);
            }
        }
    }
    if let Some(w) = &sel.selection {
        conjuncts(w, &mut filter);
    }
    filter.truncate(MAX_CONJUNCTS);
    let preds = (0..entries.len())
        .map(|t| {
            let mut facts = filter.clone();
            if let Some(on) = &entries[t].on {
                facts.extend(on.iter().take(MAX_CONJUNCTS));
            }
            bounds(t, &facts, &entries)
        })
        .collect();
    Some((entries.into_iter().map(|e| e.rel).collect(), preds))
}

/// One table of a join as [`join_row_deps`] sees it: the name a reply's column
/// definitions give it (its alias, else its name), and its columns that decide which of
/// its rows are in the result and in what order (None: any column).
pub(crate) type JoinRows = (Arc<str>, Option<Vec<Arc<str>>>);

/// How each table of a join may be tagged with the rows it contributed (see
/// [`crate::RowTag`]), for one query block over plain tables joined by `JOIN`, `CROSS
/// JOIN`, `STRAIGHT_JOIN`, commas or `LEFT JOIN` with ON conditions, whose result rows are
/// combinations of their rows ([`crate::ast::row_shaped`], no function call in the select
/// list). A row of a table that no result row shows takes part in no combination that
/// passes WHERE and the ON conditions; an UPDATE of such rows that assigns none of the
/// columns those clauses and ORDER BY name of that table cannot make it take part (nor
/// change a combination that does), and deleting it changes nothing. So the columns of a
/// table counted here are those that WHERE, every ON and ORDER BY name through its alias,
/// plus every unqualified or unresolved one (it may be any table's). `USING`/`NATURAL`
/// (columns not written) and other joins give None.
pub(crate) fn join_row_deps(stmt: &Statement) -> Option<(Vec<RelName>, Vec<JoinRows>)> {
    let (q, sel) = row_shaped(stmt)?;
    let mut entries = Vec::new();
    let mut conds: Vec<&Expr> = Vec::new();
    for (table, join) in from_tables(sel)? {
        match join.map(|j| j.constraint) {
            Some(JoinConstraint::On(e)) => conds.push(e),
            None | Some(JoinConstraint::None) => {}
            Some(JoinConstraint::Using(_) | JoinConstraint::Natural) => return None,
        }
        entries.push(entry(table, None)?);
    }
    let refs = row_refs(q, sel, &conds)?;
    let rows = (0..entries.len())
        .map(|t| {
            let deps = refs.as_ref().map(|refs| {
                let mut d: Vec<Arc<str>> = refs
                    .iter()
                    .filter(|c| {
                        let q: Vec<&str> = c.qual.iter().map(String::as_str).collect();
                        let mut hits = entries.iter().enumerate().filter(|(_, en)| en.answers_to(&q));
                        match (hits.next(), hits.next()) {
                            (Some((i, _)), None) => i == t,
                            _ => true,
                        }
                    })
                    .map(|c| c.name.clone())
                    .collect();
                d.sort();
                d.dedup();
                d
            });
            let shown: Arc<str> = entries[t].alias.as_deref().map_or_else(|| entries[t].rel.table.clone(), Arc::from);
            (shown, deps)
        })
        .collect();
    Some((entries.into_iter().map(|e| e.rel).collect(), rows))
}

/// The columns a join names of each of its tables, for column tags (see
/// [`crate::Tag::columns`]): every column named anywhere (select list, WHERE, every ON,
/// GROUP BY, HAVING, ORDER BY), through its alias (or name) that table's, unqualified or
/// unresolved ones every table's. An UPDATE of a table that assigns none of that table's
/// columns here changes no value the result shows, no row combination that passes WHERE
/// and the ON conditions, and no grouping or order. None for a table under `*` or `t.*`;
/// None for the whole read with `USING`/`NATURAL` (columns compared without being
/// written) or MATCH ... AGAINST.
pub(crate) fn join_columns(stmt: &Statement) -> Option<(Vec<RelName>, Vec<Columns>)> {
    let sel = one_block(stmt)?;
    let mut entries = Vec::new();
    for (table, join) in from_tables(sel)? {
        if join.is_some_and(|j| matches!(j.constraint, JoinConstraint::Using(_) | JoinConstraint::Natural)) {
            return None;
        }
        entries.push(entry(table, None)?);
    }
    // Which entry `q` qualifies (None: none or more than one, i.e. any of them).
    let owner = |q: &[&str]| {
        let mut hits = entries.iter().enumerate().filter(|(_, en)| en.answers_to(q));
        match (hits.next(), hits.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    };
    let mut every = vec![false; entries.len()];
    for it in &sel.projection {
        let q: Vec<&str> = match it {
            SelectItem::Wildcard(_) => Vec::new(),
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(n), _) => {
                n.0.iter().map(|p| p.as_ident().map_or("", |i| i.value.as_str())).collect()
            }
            SelectItem::QualifiedWildcard(..) => Vec::new(),
            _ => continue,
        };
        match owner(&q) {
            Some(i) if !q.is_empty() => every[i] = true,
            _ => every.iter_mut().for_each(|e| *e = true),
        }
    }
    let id = idents(stmt);
    if id.opaque {
        return None;
    }
    let mut named: Vec<Vec<Arc<str>>> = vec![Vec::new(); entries.len()];
    for c in id.cols {
        let q: Vec<&str> = c.qual.iter().map(String::as_str).collect();
        match owner(&q) {
            Some(i) if !q.is_empty() => named[i].push(c.name),
            _ => named.iter_mut().for_each(|n| n.push(c.name.clone())),
        }
    }
    let columns = named
        .into_iter()
        .zip(every)
        .map(|(mut n, every)| {
            (!every).then(|| {
                n.sort();
                n.dedup();
                n
            })
        })
        .collect();
    Some((entries.into_iter().map(|e| e.rel).collect(), columns))
}

/// The columns a read names of one table (None: any column).
pub(crate) type Columns = Option<Vec<Arc<str>>>;

/// The one SELECT block of a read without a CTE (None: another statement or shape).
fn one_block(stmt: &Statement) -> Option<&Select> {
    let Statement::Query(q) = stmt else { return None };
    if q.with.is_some() {
        return None;
    }
    match q.body.as_ref() {
        SetExpr::Select(sel) => Some(sel),
        _ => None,
    }
}

/// How a FROM entry after the first of its list is joined.
#[derive(Clone, Copy)]
struct Join<'a> {
    /// A `LEFT [OUTER] JOIN` (else an inner, cross or straight join).
    left: bool,
    constraint: &'a JoinConstraint,
}

/// The FROM clause's tables in order, each with how it is joined (None: first of a comma
/// list entry); None if a join is of a kind not analysed (RIGHT, FULL, ...).
fn from_tables(sel: &Select) -> Option<Vec<(&TableFactor, Option<Join<'_>>)>> {
    let mut out = Vec::new();
    for twj in &sel.from {
        out.push((&twj.relation, None));
        for j in &twj.joins {
            let join = match &j.join_operator {
                JoinOperator::Join(c)
                | JoinOperator::Inner(c)
                | JoinOperator::CrossJoin(c)
                | JoinOperator::StraightJoin(c) => Join { left: false, constraint: c },
                JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => Join { left: true, constraint: c },
                _ => return None,
            };
            out.push((&j.relation, Some(join)));
        }
    }
    Some(out)
}

fn entry(f: &TableFactor, on: Option<Vec<Expr>>) -> Option<Entry> {
    let TableFactor::Table { name, alias, args: None, .. } = f else { return None };
    Some(Entry { rel: rel_name(name)?, alias: alias.as_ref().map(|a| a.name.value.clone()), on })
}

/// The entry column a qualified column reference names (exactly one entry must answer).
fn resolve(e: &Expr, entries: &[Entry]) -> Option<Col> {
    match e {
        Expr::Nested(x) => resolve(x, entries),
        Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
            let (col, q) = parts.split_last()?;
            let q: Vec<&str> = q.iter().map(|i| i.value.as_str()).collect();
            let mut hits = entries.iter().enumerate().filter(|(_, en)| en.answers_to(&q));
            let (i, _) = hits.next()?;
            if hits.next().is_some() {
                return None;
            }
            Some((i, col.value.to_ascii_lowercase().into()))
        }
        _ => None,
    }
}

/// What `facts` (conjuncts that hold whenever a row of entry `t` matters) bound on `t`.
fn bounds(t: usize, facts: &[&Expr], entries: &[Entry]) -> TablePreds {
    let mut cols: Vec<Col> = Vec::new();
    let mut parent: Vec<usize> = Vec::new();
    let id = |c: Col, cols: &mut Vec<Col>, parent: &mut Vec<usize>| -> usize {
        cols.iter().position(|x| *x == c).unwrap_or_else(|| {
            cols.push(c);
            parent.push(parent.len());
            parent.len() - 1
        })
    };
    let mut consts: Vec<(usize, Cons)> = Vec::new();
    for e in facts {
        if let Expr::BinaryOp { left, op: BinaryOperator::Eq, right } = e {
            if let (Some(a), Some(b)) = (resolve(left, entries), resolve(right, entries)) {
                let (a, b) = (id(a, &mut cols, &mut parent), id(b, &mut cols, &mut parent));
                let (ra, rb) = (root(&parent, a), root(&parent, b));
                parent[ra] = rb;
                continue;
            }
        }
        if let Some((c, cons)) = key_pred_with(e, |x| resolve(x, entries)) {
            let i = id(c, &mut cols, &mut parent);
            consts.push((i, cons));
        }
    }
    let mut out = TablePreds::default();
    for (i, cons) in consts {
        if cols[i].0 == t {
            out.own.push(KeyPred { column: cols[i].1.clone(), cons: cons.clone() });
        }
        let r = root(&parent, i);
        for (j, c) in cols.iter().enumerate() {
            if j != i && c.0 == t && root(&parent, j) == r {
                let pred = KeyPred { column: c.1.clone(), cons: cons.clone() };
                out.derived.push(Carried { pred, from: cols[i].0, column: cols[i].1.clone() });
            }
        }
    }
    out
}

fn root(parent: &[usize], mut i: usize) -> usize {
    while parent[i] != i {
        i = parent[i];
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{parse, SlotRef};

    /// Per table: its name, its own bounds and the carried ones, as text.
    type Shown = Vec<(String, Vec<String>, Vec<String>)>;

    fn preds(sql: &str) -> Option<Shown> {
        let (rels, ps) = join_preds(&parse(sql).unwrap())?;
        let show = |v: &mut dyn Iterator<Item = &KeyPred>| v.map(|p| format!("{}{:?}", p.column, p.cons)).collect();
        let shown = |r: &RelName, p: &TablePreds| {
            (r.table.to_string(), show(&mut p.own.iter()), show(&mut p.derived.iter().map(|d| &d.pred)))
        };
        Some(rels.iter().zip(&ps).map(|(r, p)| shown(r, p)).collect())
    }

    fn pt(col: &str, slot: u16) -> String {
        format!("{col}{:?}", Cons::Points(vec![SlotRef { slot, neg: false }]))
    }

    #[test]
    fn inner_join_carries_the_key_across() {
        let p = preds("SELECT * FROM posts p JOIN users u ON p.user_id = u.id WHERE u.id = ?1").unwrap();
        assert_eq!(p[0], ("posts".into(), vec![], vec![pt("user_id", 0)]));
        assert_eq!(p[1], ("users".into(), vec![pt("id", 0)], vec![]));
        // The same with the tables named instead of aliased, and a comma join.
        let p = preds("SELECT * FROM posts, users WHERE posts.user_id = users.id AND users.id = ?1").unwrap();
        assert_eq!(p[0].2, vec![pt("user_id", 0)]);
    }

    #[test]
    fn left_join_on_bounds_only_its_right_side() {
        // SQLAlchemy's joinedload: every user row shows, its posts are the ones matching.
        let sql = "SELECT * FROM users LEFT OUTER JOIN posts AS p1 ON users.id = p1.user_id WHERE users.id = ?1";
        let p = preds(sql).unwrap();
        assert_eq!(p[0], ("users".into(), vec![pt("id", 0)], vec![]));
        assert_eq!(p[1], ("posts".into(), vec![], vec![pt("user_id", 0)]));
        // A constant in the ON condition bounds the right side, never the left.
        let p = preds("SELECT * FROM users u LEFT JOIN posts p ON p.user_id = u.id AND u.id = ?1").unwrap();
        assert_eq!(p[0], ("users".into(), vec![], vec![]));
        assert_eq!(p[1], ("posts".into(), vec![], vec![pt("user_id", 0)]));
    }

    #[test]
    fn what_is_not_understood_bounds_nothing() {
        // Unqualified columns, OR, USING, an unknown or ambiguous qualifier.
        for sql in [
            "SELECT * FROM a JOIN b ON a.id = b.a_id WHERE id = ?1",
            "SELECT * FROM a JOIN b ON a.id = b.a_id WHERE a.id = ?1 OR a.id = ?2",
            "SELECT * FROM a JOIN b USING (id) WHERE x.id = ?1",
            "SELECT * FROM a JOIN a ON a.id = a.id WHERE a.id = ?1",
        ] {
            let p = preds(sql).unwrap();
            assert!(p.iter().all(|(_, o, d)| o.is_empty() && d.is_empty()), "{sql}: {p:?}");
        }
        // An aliased table is named by its alias only.
        let p = preds("SELECT * FROM a AS x JOIN b ON x.id = b.a_id WHERE a.id = ?1").unwrap();
        assert!(p.iter().all(|(_, o, d)| o.is_empty() && d.is_empty()), "{p:?}");
        // Shapes not analysed at all.
        for sql in [
            "SELECT * FROM a RIGHT JOIN b ON a.id = b.a_id WHERE b.a_id = ?1",
            "SELECT * FROM a JOIN (SELECT * FROM b) d ON a.id = d.a_id",
            "SELECT * FROM (a JOIN b ON a.id = b.a_id) JOIN c ON c.id = a.id",
            "WITH w AS (SELECT 1) SELECT * FROM a JOIN b ON a.id = b.a_id",
        ] {
            assert!(preds(sql).is_none(), "{sql}");
        }
    }

    #[test]
    fn row_deps_go_to_the_table_each_column_names() {
        let deps = |sql: &str| {
            let (_, rows) = join_row_deps(&parse(sql).unwrap())?;
            Some(rows.into_iter().map(|(n, d)| (n.to_string(), d.map(|d| d.join(",")))).collect::<Vec<_>>())
        };
        let sql = "SELECT p.title, u.name AS who FROM posts p JOIN users u ON u.id = p.user_id \
                   LEFT JOIN tags ON tags.post_id = p.id WHERE p.score > ?1 ORDER BY who, karma";
        let d = deps(sql).unwrap();
        assert_eq!(d[0], ("p".into(), Some("id,karma,score,user_id,who".into())));
        assert_eq!(d[1], ("u".into(), Some("id,karma,name,who".into())));
        assert_eq!(d[2], ("tags".into(), Some("karma,post_id,who".into())));
        // A position over `*` may order by any column; shapes whose rows are not rows.
        let d = deps("SELECT * FROM a JOIN b ON b.a_id = a.id ORDER BY ?1").unwrap();
        assert!(d.iter().all(|(_, d)| d.is_none()), "{d:?}");
        for sql in [
            "SELECT a.id FROM a JOIN b USING (id)",
            "SELECT a.id FROM a NATURAL JOIN b",
            "SELECT a.id, MAX(b.id) FROM a JOIN b ON b.a_id = a.id",
            "SELECT a.id FROM a JOIN b ON b.a_id = a.id GROUP BY a.id",
            "SELECT a.id FROM a JOIN b ON b.a_id = a.id LIMIT ?1 OFFSET ?2",
            "SELECT a.id FROM a RIGHT JOIN b ON b.a_id = a.id",
        ] {
            assert!(deps(sql).is_none(), "{sql}");
        }
    }

    #[test]
    fn chains_and_self_joins() {
        // Two hops through the filter; a LEFT JOIN's ON is not a fact for a later table.
        let sql = "SELECT * FROM a JOIN b ON b.a_id = a.id JOIN c ON c.b_id = b.a_id \
                   LEFT JOIN d ON d.c_id = c.b_id LEFT JOIN e ON e.d_id = d.c_id WHERE a.id IN (?1, ?2)";
        let p = preds(sql).unwrap();
        let both =
            format!("{:?}", Cons::Points(vec![SlotRef { slot: 0, neg: false }, SlotRef { slot: 1, neg: false }]));
        assert_eq!(p[0].1, vec![format!("id{both}")]);
        assert_eq!(p[1].2, vec![format!("a_id{both}")]);
        assert_eq!(p[2].2, vec![format!("b_id{both}")]);
        assert_eq!(p[3].2, vec![format!("c_id{both}")]);
        assert!(p[4].1.is_empty() && p[4].2.is_empty(), "{:?}", p[4]);
        // A self-join: each alias gets its own bounds.
        let p = preds("SELECT * FROM t x JOIN t y ON y.parent = x.id WHERE x.id = ?1").unwrap();
        assert_eq!(p[0], ("t".into(), vec![pt("id", 0)], vec![]));
        assert_eq!(p[1], ("t".into(), vec![], vec![pt("parent", 0)]));
        // Ranges carry over too.
        let p = preds("SELECT * FROM a JOIN b ON a.id = b.a_id WHERE a.id BETWEEN ?1 AND ?2").unwrap();
        assert_eq!(p[1].2.len(), 1);
    }

    #[test]
    fn columns_go_to_the_table_each_qualifier_names() {
        let cols = |sql: &str| {
            join_columns(&parse(sql).unwrap()).map(|(_, c)| {
                c.into_iter()
                    .map(|c| c.map(|v| v.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(",")))
                    .collect::<Vec<_>>()
            })
        };
        let some = |s: &str| Some(s.to_string());
        // Qualified by alias or by name; an unqualified or unknown qualifier counts for both.
        let sql =
            "SELECT u.name, posts.title, x.y, z FROM users u JOIN posts ON posts.user_id = u.id ORDER BY posts.id";
        assert_eq!(cols(sql), Some(vec![some("id,name,y,z"), some("id,title,user_id,y,z")]));
        // `u.*` is every column of u only; `*` of both.
        let sql = "SELECT u.*, p.title FROM users u JOIN posts p ON p.user_id = u.id";
        assert_eq!(cols(sql), Some(vec![None, some("title,user_id")]));
        assert_eq!(cols("SELECT * FROM users u JOIN posts p ON p.user_id = u.id"), Some(vec![None, None]));
        // Columns compared without being written, or in a form not collected: not known.
        assert_eq!(cols("SELECT u.name FROM users u JOIN posts p USING (id)"), None);
        assert_eq!(cols("SELECT u.name FROM users u JOIN posts p ON MATCH (p.t) AGAINST ('x')"), None);
    }
}
