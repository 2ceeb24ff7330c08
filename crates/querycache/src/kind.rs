//! What the analysis makes of a statement ([`Kind`], [`Analysis`]): the types the
//! analysis (`analyze.rs`, `setstmt.rs`) produces and the planner (`plan.rs`) consumes.

use std::sync::Arc;

use crate::ast::{RelName, SlotRef, WriteKeys};
use crate::joins::TablePreds;

/// A session-variable assignment as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SetValue {
    /// A literal (its text is taken from the statement).
    Slot(SlotRef),
    /// A bare word (`ON`, `DEFAULT`, a charset name).
    Word(Arc<str>),
}

/// One tracked `SET` item: lower-cased variable name and value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SetItem {
    pub name: Arc<str>,
    pub value: Vec<SetValue>,
}

/// Which tables a write may change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Targets {
    Tables(Vec<RelName>),
    /// A whole database (None: the session's).
    Database(Option<Arc<str>>),
    All,
}

/// A write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WriteInfo {
    pub targets: Targets,
    pub keys: Option<WriteKeys>,
    /// DDL: the schema registry forgets what it knew.
    pub ddl: bool,
}

/// A read that may be cached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReadInfo {
    pub tables: Vec<RelName>,
    /// What bounds each table's rows, one per table (empty: every table table-level).
    pub preds: Vec<TablePreds>,
    pub sql_cache: bool,
    /// Per table (empty: none), set when the result may be tagged with the rows of that
    /// table it returns. See [`crate::RowTag`].
    pub row_deps: Vec<Option<RowDeps>>,
    /// Per table (empty: none), every column the read names of it (None: `*`, or not
    /// known); see [`crate::Tag::columns`].
    pub columns: Vec<Option<Arc<[Arc<str>]>>>,
    /// The plain columns of its ORDER BY, and whether it has a LIMIT ([`ast::ordering`]).
    pub order: (Arc<[Arc<str>]>, bool),
}

/// How a read's result may be tagged with the rows of one table it returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RowDeps {
    /// In a join, the name the reply's column definitions give the table (its alias, else
    /// its name); None for a single-table read.
    pub alias: Option<Arc<str>>,
    /// The table's columns its rows' membership and order depend on (None: any column).
    pub deps: Option<Arc<[Arc<str>]>>,
}

/// The kind of a statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Read(ReadInfo),
    /// A read that is never cached, and why.
    NotCacheable(&'static str),
    Write(WriteInfo),
    /// BEGIN, COMMIT, ROLLBACK, ...: state comes from the reply's status flags.
    Txn,
    /// Trackable session changes.
    Set(Vec<SetItem>),
    /// `USE db`.
    Use(Arc<str>),
    /// Session state the cache cannot follow: caching off for the connection.
    Untrackable(&'static str),
    /// Effects the analysis cannot bound (dynamic SQL, `CALL`, a stored function): may
    /// write any table and create temporary tables, so everything is invalidated before
    /// the OK and caching is off for the connection.
    Unbounded(&'static str),
    /// Anything else, forwarded without effect on the cache (SHOW, DO, ...).
    Other,
}

/// The memoized analysis of one digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Analysis {
    pub kind: Kind,
    /// Calls of functions that are not builtins (`name(` or `db.name(`): if one is a
    /// stored function it may write anything (checked against the schema registry).
    pub calls: Vec<RelName>,
}

/// A write that may change anything: everything is invalidated before its OK.
pub(crate) fn write_all() -> Kind {
    Kind::Write(WriteInfo { targets: Targets::All, keys: None, ddl: false })
}
