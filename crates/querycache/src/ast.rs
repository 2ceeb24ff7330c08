//! What the `sqlparser` AST of a digest tells: every table a statement references, and
//! the key predicates of single-table reads and writes.
//!
//! The digest given to the parser numbers its placeholders (`?1`, `?2`, ...), so a
//! predicate points back at the literal or parameter it compares with.

use std::ops::ControlFlow;
use std::sync::Arc;

use sqlparser::ast::{
    AssignmentTarget, BinaryOperator, Expr, FromTable, ObjectName, ObjectNamePart, OrderByKind, Query, Select,
    SelectItem, SetExpr, Statement, TableFactor, TableObject, TableWithJoins, UnaryOperator, Value, Visit, Visitor,
};
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;

/// A table as written: database optional (then it is the session's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RelName {
    pub db: Option<Arc<str>>,
    pub table: Arc<str>,
}

/// A reference to slot `n` of the digest, possibly negated (`- ?`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlotRef {
    pub slot: u16,
    pub neg: bool,
}

/// A constraint on one column that restricts the rows a statement can see or touch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Cons {
    /// `col = ?`, `col IN (?, ...)`.
    Points(Vec<SlotRef>),
    /// Bounds of `BETWEEN`, `<`, `<=`, `>`, `>=` (bool: inclusive).
    Range(Option<(SlotRef, bool)>, Option<(SlotRef, bool)>),
}

impl Cons {
    /// Every slot it compares with.
    pub(crate) fn slots(&self) -> impl Iterator<Item = SlotRef> + '_ {
        let (points, bounds) = match self {
            Cons::Points(v) => (v.as_slice(), [None, None]),
            Cons::Range(l, h) => (&[][..], [l.map(|b| b.0), h.map(|b| b.0)]),
        };
        points.iter().copied().chain(bounds.into_iter().flatten())
    }
}

/// A key-predicate candidate: a top-level conjunct of the WHERE clause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KeyPred {
    /// Lower-cased column name.
    pub column: Arc<str>,
    pub cons: Cons,
}

/// What a write lets us narrow to key values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum WriteKeys {
    /// Single-table UPDATE: WHERE candidates and the columns it assigns (lower-cased).
    Update { preds: Vec<KeyPred>, assigned: Vec<Arc<str>> },
    /// Single-table DELETE: WHERE candidates.
    Delete { preds: Vec<KeyPred> },
    /// Plain INSERT with a column list and VALUES rows (each value a slot or not).
    Insert { columns: Vec<Arc<str>>, rows: Vec<Vec<Option<SlotRef>>> },
}

/// Parse a numbered digest; exactly one statement or nothing.
pub(crate) fn parse(sql: &str) -> Option<Statement> {
    let mut v = Parser::parse_sql(&MySqlDialect {}, sql).ok()?;
    if v.len() != 1 {
        return None;
    }
    v.pop()
}

/// The CTE names one query block defines, and how many of them are in scope now.
struct Frame {
    names: Vec<String>,
    /// The CTE definitions (by address): while the visitor is inside definition i, only
    /// names `..i` are in scope (all of them with RECURSIVE); in the body, all are.
    defs: Vec<*const Query>,
    recursive: bool,
    visible: usize,
}

struct Rels {
    out: Vec<RelName>,
    /// Enclosing query blocks, innermost last.
    frames: Vec<Frame>,
    bad: bool,
}

impl Rels {
    /// Whether an unqualified name is a CTE in scope here.
    fn is_cte(&self, name: &str) -> bool {
        self.frames.iter().any(|f| f.names[..f.visible].iter().any(|c| c == name))
    }
}

/// A table name as written (`t` or `db.t`); None for other shapes.
pub(crate) fn rel_name(n: &ObjectName) -> Option<RelName> {
    let parts: Vec<&str> =
        n.0.iter()
            .map(|p| match p {
                ObjectNamePart::Identifier(i) => Some(i.value.as_str()),
                _ => None,
            })
            .collect::<Option<_>>()?;
    match parts.as_slice() {
        [t] => Some(RelName { db: None, table: (*t).into() }),
        [d, t] => Some(RelName { db: Some((*d).into()), table: (*t).into() }),
        _ => None,
    }
}

impl Visitor for Rels {
    type Break = ();

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        let me = q as *const Query;
        if let Some(f) = self.frames.last_mut() {
            if let Some(i) = f.defs.iter().position(|d| *d == me) {
                f.visible = if f.recursive { f.names.len() } else { i };
            }
        }
        let (names, defs, recursive) = match &q.with {
            Some(w) => (
                w.cte_tables.iter().map(|c| c.alias.name.value.clone()).collect(),
                w.cte_tables.iter().map(|c| &*c.query as *const Query).collect(),
                w.recursive,
            ),
            None => (Vec::new(), Vec::new(), false),
        };
        let visible = if recursive { names.len() } else { 0 };
        self.frames.push(Frame { names, defs, recursive, visible });
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        self.frames.pop();
        let me = q as *const Query;
        if let Some(f) = self.frames.last_mut() {
            if let Some(i) = f.defs.iter().position(|d| *d == me) {
                // After the last definition, the body sees every name.
                f.visible = if f.recursive { f.names.len() } else { i + 1 };
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, f: &TableFactor) -> ControlFlow<()> {
        match f {
            TableFactor::Table { args: None, .. } | TableFactor::Derived { .. } | TableFactor::NestedJoin { .. } => {}
            _ => self.bad = true,
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, n: &ObjectName) -> ControlFlow<()> {
        match rel_name(n) {
            Some(r) if r.db.is_none() && self.is_cte(&r.table) => {}
            Some(r) => self.out.push(r),
            None => self.bad = true,
        }
        ControlFlow::Continue(())
    }
}

/// Every table the statement names (CTE names excluded); None if something is not a
/// plain table (table functions, odd names).
pub(crate) fn relations(stmt: &Statement) -> Option<Vec<RelName>> {
    let mut v = Rels { out: Vec::new(), frames: Vec::new(), bad: false };
    let _ = stmt.visit(&mut v);
    if v.bad {
        return None;
    }
    Some(v.out)
}

fn column(e: &Expr) -> Option<Arc<str>> {
    match e {
        Expr::Identifier(i) => Some(i.value.to_ascii_lowercase().into()),
        Expr::CompoundIdentifier(v) => v.last().map(|i| i.value.to_ascii_lowercase().into()),
        Expr::Nested(x) => column(x),
        _ => None,
    }
}

fn slot(e: &Expr) -> Option<SlotRef> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Placeholder(p) => {
                let n: u16 = p.strip_prefix('?')?.parse().ok()?;
                Some(SlotRef { slot: n.checked_sub(1)?, neg: false })
            }
            _ => None,
        },
        Expr::UnaryOp { op: UnaryOperator::Minus, expr } => slot(expr).map(|s| SlotRef { neg: !s.neg, ..s }),
        Expr::UnaryOp { op: UnaryOperator::Plus, expr } => slot(expr),
        Expr::Nested(x) => slot(x),
        _ => None,
    }
}

/// The top-level conjuncts of `e` (its AND-ed parts, parentheses looked through).
pub(crate) fn conjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        Expr::Nested(x) => conjuncts(x, out),
        _ => out.push(e),
    }
}

fn key_pred(e: &Expr) -> Option<KeyPred> {
    key_pred_with(e, column).map(|(column, cons)| KeyPred { column, cons })
}

/// A conjunct that bounds one column by slots (`c = ?`, `c IN (...)`, `c < ?`, `c
/// BETWEEN ? AND ?`), the column named as `col` reads it.
pub(crate) fn key_pred_with<C>(e: &Expr, col: impl Fn(&Expr) -> Option<C>) -> Option<(C, Cons)> {
    match e {
        Expr::BinaryOp { left, op, right } => {
            let (c, s, op) = match (col(left), slot(right)) {
                (Some(c), Some(s)) => (c, s, op.clone()),
                _ => {
                    let flipped = match op {
                        BinaryOperator::Lt => BinaryOperator::Gt,
                        BinaryOperator::LtEq => BinaryOperator::GtEq,
                        BinaryOperator::Gt => BinaryOperator::Lt,
                        BinaryOperator::GtEq => BinaryOperator::LtEq,
                        o => o.clone(),
                    };
                    (col(right)?, slot(left)?, flipped)
                }
            };
            let cons = match op {
                BinaryOperator::Eq => Cons::Points(vec![s]),
                BinaryOperator::Lt => Cons::Range(None, Some((s, false))),
                BinaryOperator::LtEq => Cons::Range(None, Some((s, true))),
                BinaryOperator::Gt => Cons::Range(Some((s, false)), None),
                BinaryOperator::GtEq => Cons::Range(Some((s, true)), None),
                _ => return None,
            };
            Some((c, cons))
        }
        Expr::InList { expr, list, negated: false } => {
            let v: Option<Vec<SlotRef>> = list.iter().map(slot).collect();
            Some((col(expr)?, Cons::Points(v?)))
        }
        Expr::Between { expr, negated: false, low, high } => {
            Some((col(expr)?, Cons::Range(Some((slot(low)?, true)), Some((slot(high)?, true)))))
        }
        _ => None,
    }
}

fn preds(selection: &Option<Expr>) -> Vec<KeyPred> {
    let mut cs = Vec::new();
    if let Some(w) = selection {
        conjuncts(w, &mut cs);
    }
    cs.into_iter().filter_map(key_pred).collect()
}

fn single_table(t: &TableWithJoins) -> bool {
    t.joins.is_empty() && matches!(t.relation, TableFactor::Table { args: None, .. })
}

/// Key-predicate candidates of a read that is one query block over one table.
pub(crate) fn read_keys(stmt: &Statement) -> Vec<KeyPred> {
    let Statement::Query(q) = stmt else { return Vec::new() };
    if q.with.is_some() {
        return Vec::new();
    }
    let SetExpr::Select(sel) = q.body.as_ref() else { return Vec::new() };
    if sel.from.len() != 1 || !single_table(&sel.from[0]) {
        return Vec::new();
    }
    preds(&sel.selection)
}

/// A column reference as written: its qualifier (`u` in `u.id`, `db`, `t` in `db.t.id`;
/// empty when unqualified) and its lower-cased name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ColRef {
    /// The qualifier's parts, as written.
    pub qual: Vec<String>,
    /// The column, lower-cased.
    pub name: Arc<str>,
}

fn col_ref(e: &Expr) -> Option<ColRef> {
    match e {
        Expr::Identifier(i) => Some(ColRef { qual: Vec::new(), name: i.value.to_ascii_lowercase().into() }),
        Expr::CompoundIdentifier(v) => {
            let (last, q) = v.split_last()?;
            Some(ColRef {
                qual: q.iter().map(|i| i.value.clone()).collect(),
                name: last.value.to_ascii_lowercase().into(),
            })
        }
        _ => None,
    }
}

/// The columns an expression names, whether it calls a function, and whether it names
/// columns in a form not collected here (MATCH ... AGAINST).
#[derive(Default)]
pub(crate) struct Idents {
    /// Every column reference, in the order met.
    pub cols: Vec<ColRef>,
    /// Whether a function is called.
    pub calls: bool,
    /// Whether columns are named in a form not collected.
    pub opaque: bool,
}

impl Idents {
    fn names(self) -> Vec<Arc<str>> {
        self.cols.into_iter().map(|c| c.name).collect()
    }
}

impl Visitor for Idents {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        match e {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => self.cols.extend(col_ref(e)),
            Expr::Function(_) => self.calls = true,
            Expr::MatchAgainst { .. } => self.opaque = true,
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// The column references `e` makes ([`Idents`]).
pub(crate) fn idents(e: &impl Visit) -> Idents {
    let mut v = Idents::default();
    let _ = e.visit(&mut v);
    v
}

/// The query and its one block, if a read's result rows are rows of its FROM clause (see
/// [`row_deps`]): no CTE, FETCH, locking, OFFSET, GROUP BY, HAVING, DISTINCT or window.
pub(crate) fn row_shaped(stmt: &Statement) -> Option<(&Query, &Select)> {
    let Statement::Query(q) = stmt else { return None };
    if q.with.is_some() || q.fetch.is_some() || !q.locks.is_empty() || q.for_clause.is_some() {
        return None;
    }
    match &q.limit_clause {
        None => {}
        Some(sqlparser::ast::LimitClause::LimitOffset { offset: None, limit_by, .. }) if limit_by.is_empty() => {}
        Some(_) => return None,
    }
    let SetExpr::Select(sel) = q.body.as_ref() else { return None };
    let plain_group =
        matches!(&sel.group_by, sqlparser::ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty());
    if !plain_group
        || sel.distinct.is_some()
        || sel.top.is_some()
        || sel.into.is_some()
        || sel.having.is_some()
        || sel.qualify.is_some()
        || sel.prewhere.is_some()
        || !sel.named_window.is_empty()
        || !sel.connect_by.is_empty()
        || !sel.sort_by.is_empty()
        || !sel.lateral_views.is_empty()
    {
        return None;
    }
    Some((q, sel))
}

/// What a row-tagged result depends on ([`crate::RowTag`]), for a read that is one query
/// block over one table whose result rows are rows of the table: no GROUP BY, HAVING,
/// DISTINCT, OFFSET or window, no function call in the select list (an aggregate or a
/// window function makes a row depend on other rows). The columns named in WHERE and
/// ORDER BY (an ORDER BY of a select-list alias or position names that item's columns).
/// `Some(None)`: any column (a position over `*`); None: not row-taggable.
pub(crate) fn row_deps(stmt: &Statement) -> Option<Option<Vec<Arc<str>>>> {
    let (q, sel) = row_shaped(stmt)?;
    if sel.from.len() != 1 || !single_table(&sel.from[0]) {
        return None;
    }
    let deps = row_refs(q, sel, &[])?.map(|refs| {
        let mut names: Vec<Arc<str>> = refs.into_iter().map(|c| c.name).collect();
        names.sort();
        names.dedup();
        names
    });
    Some(deps)
}

/// The column references a row-shaped block's membership and order depend on: those in
/// WHERE, in `conds` (a join's ON conditions), and in ORDER BY (an ORDER BY of a select-list
/// alias or position names that item's columns). `Some(None)`: any column (a position over
/// `*`); None: not row-taggable (a function call in the select list: an aggregate or a
/// window function makes a row depend on other rows; MATCH ... AGAINST).
pub(crate) fn row_refs(q: &Query, sel: &Select, conds: &[&Expr]) -> Option<Option<Vec<ColRef>>> {
    let mut items = Vec::with_capacity(sel.projection.len());
    let mut star = false;
    for it in &sel.projection {
        let (expr, alias) = match it {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.to_ascii_lowercase())),
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                star = true;
                continue;
            }
            SelectItem::ExprWithAliases { .. } => return None,
        };
        let id = idents(expr);
        if id.calls || id.opaque {
            return None;
        }
        items.push((alias, id.cols));
    }
    let mut deps = Vec::new();
    for e in sel.selection.iter().chain(conds.iter().copied()) {
        let id = idents(e);
        if id.opaque {
            return None;
        }
        deps.extend(id.cols);
    }
    if let Some(ob) = &q.order_by {
        let OrderByKind::Expressions(list) = &ob.kind else { return None };
        for o in list {
            let id = idents(&o.expr);
            if id.opaque {
                return None;
            }
            let cols = id.cols;
            if cols.is_empty() {
                // `ORDER BY 2` (a position; the digest made the number a `?`).
                if star {
                    return Some(None);
                }
                deps.extend(items.iter().flat_map(|(_, c)| c.iter().cloned()));
            }
            for c in cols {
                let alias = c.qual.is_empty().then_some(&*c.name);
                if let Some((_, named)) = items.iter().find(|(a, _)| alias.is_some() && a.as_deref() == alias) {
                    deps.extend(named.iter().cloned());
                }
                deps.push(c);
            }
        }
    }
    Some(Some(deps))
}

/// Every column a read of one table names anywhere (select list, WHERE, GROUP BY, HAVING,
/// ORDER BY, ...), lower-cased: an UPDATE that assigns none of them cannot change its
/// result. None for `*` (every column), set operations, or columns named in a form not
/// collected (MATCH ... AGAINST).
pub(crate) fn read_columns(stmt: &Statement) -> Option<Vec<Arc<str>>> {
    let Statement::Query(q) = stmt else { return None };
    let SetExpr::Select(sel) = q.body.as_ref() else { return None };
    if sel.projection.iter().any(|i| matches!(i, SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..))) {
        return None;
    }
    let id = idents(stmt);
    if id.opaque {
        return None;
    }
    let mut cols = id.names();
    cols.sort();
    cols.dedup();
    Some(cols)
}

/// How a query orders and bounds its rows: the plain columns of its ORDER BY (lower-cased,
/// in order) and whether it has a LIMIT (or FETCH). A result whose order is not total (no
/// unique column in its ORDER BY) comes in the order of the index the backend scans, and
/// under a LIMIT that order also decides which rows it holds.
pub(crate) fn ordering(stmt: &Statement) -> (Vec<Arc<str>>, bool) {
    let Statement::Query(q) = stmt else { return (Vec::new(), false) };
    // A name that is also a select-list alias orders by that item (`name AS id ... ORDER
    // BY id` orders by name): it is left out.
    let aliases: Vec<String> = match q.body.as_ref() {
        SetExpr::Select(sel) => sel
            .projection
            .iter()
            .filter_map(|i| match i {
                SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.to_ascii_lowercase()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let order = match q.order_by.as_ref().map(|o| &o.kind) {
        Some(OrderByKind::Expressions(list)) => {
            list.iter().filter_map(|o| column(&o.expr)).filter(|c| !aliases.iter().any(|a| **a == **c)).collect()
        }
        _ => Vec::new(),
    };
    (order, q.limit_clause.is_some() || q.fetch.is_some())
}

/// Key information of a single-table INSERT, UPDATE or DELETE.
pub(crate) fn write_keys(stmt: &Statement) -> Option<WriteKeys> {
    match stmt {
        Statement::Update(u) if u.from.is_none() && single_table(&u.table) => {
            let mut assigned = Vec::new();
            for a in &u.assignments {
                match &a.target {
                    AssignmentTarget::ColumnName(n) => assigned.push(n.0.last().map(|p| match p {
                        ObjectNamePart::Identifier(i) => i.value.to_ascii_lowercase().into(),
                        _ => Arc::from(""),
                    })?),
                    AssignmentTarget::Tuple(_) => return None,
                }
            }
            Some(WriteKeys::Update { preds: preds(&u.selection), assigned })
        }
        Statement::Delete(d) => {
            let from = match &d.from {
                FromTable::WithFromKeyword(f) | FromTable::WithoutKeyword(f) => f,
            };
            if d.tables.len() > 1 || d.using.is_some() || from.len() != 1 || !single_table(&from[0]) {
                return None;
            }
            Some(WriteKeys::Delete { preds: preds(&d.selection) })
        }
        Statement::Insert(i) => {
            if i.replace_into || i.on.is_some() || i.columns.is_empty() || !matches!(i.table, TableObject::TableName(_))
            {
                return None;
            }
            let SetExpr::Values(v) = i.source.as_ref()?.body.as_ref() else { return None };
            let columns = i
                .columns
                .iter()
                .map(|c| match c.0.last() {
                    Some(ObjectNamePart::Identifier(id)) => Some(Arc::from(id.value.to_ascii_lowercase())),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            let rows = v.rows.iter().map(|r| r.iter().map(slot).collect()).collect();
            Some(WriteKeys::Insert { columns, rows })
        }
        _ => None,
    }
}

/// Whether the statement is a query (a read).
pub(crate) fn is_query(stmt: &Statement) -> bool {
    matches!(stmt, Statement::Query(_))
}
