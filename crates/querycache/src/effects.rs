//! Side effects a statement's text does not show: the tables written by triggers and by
//! cascading foreign keys, and which stored functions exist (calling one may write
//! anything).
//!
//! The proxy's metadata task reads them from `information_schema` (TRIGGERS,
//! REFERENTIAL_CONSTRAINTS, ROUTINES) into an [`EffectsBuilder`] at start and again after
//! any DDL; [`Effects`] holds the transitive closure, so invalidating a table also drops
//! what its triggers and cascades may have changed, before the client sees the OK (for a
//! proxied write) and for changes seen in the binlog (where InnoDB's cascades do not
//! appear at all).

use std::collections::{HashMap, HashSet};

use crate::analyze::analyze_one;
use crate::ast::RelName;
use crate::kind::{Kind, Targets};
use crate::lexer::{self, Lexer, Tok, Token};
use crate::types::TableName;

/// What else may change when a table changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Follow {
    /// These tables (never empty).
    Tables(Vec<TableName>),
    /// Anything (a trigger body the analysis cannot bound).
    All,
}

/// The loaded side-effect graph (see the module doc).
#[derive(Debug, Default)]
pub struct Effects {
    follows: HashMap<TableName, Follow>,
    /// The closure over cascading foreign keys alone (what InnoDB changes without logging
    /// it, even in row format; cascades fire no triggers).
    cascades: HashMap<TableName, Vec<TableName>>,
    /// Stored functions as lower-cased (db, name).
    functions: HashSet<(String, String)>,
    /// Tables with at least one trigger.
    triggered: HashSet<TableName>,
}

impl Effects {
    /// What else may change when `t` changes (None: nothing).
    pub fn follows(&self, t: &TableName) -> Option<&Follow> {
        self.follows.get(t)
    }

    /// The tables a change to `t`'s rows may change through cascading foreign keys alone
    /// (ON DELETE / ON UPDATE CASCADE, SET NULL, SET DEFAULT, transitively): what a row-format
    /// binlog omits. [`Effects::follows`] adds the triggers, which a statement-format binlog
    /// omits too.
    pub fn cascades(&self, t: &TableName) -> &[TableName] {
        self.cascades.get(t).map_or(&[], Vec::as_slice)
    }

    /// Whether `t` has a trigger: a BEFORE trigger may change the key values a write's
    /// text shows (`SET NEW.id = ...`), so such writes are not narrowed to keys.
    pub fn has_triggers(&self, t: &TableName) -> bool {
        self.triggered.contains(t)
    }

    /// Every table of `db` with side effects, and what they are.
    pub fn follows_in<'a>(&'a self, db: &'a str) -> impl Iterator<Item = &'a Follow> + 'a {
        self.follows.iter().filter(move |(t, _)| &*t.db == db).map(|(_, f)| f)
    }

    /// Whether one of `calls` may be a stored function (an unqualified name matches a
    /// function of that name in any database).
    pub(crate) fn any_stored(&self, calls: &[RelName]) -> bool {
        calls.iter().any(|c| match &c.db {
            Some(db) => self.functions.contains(&(db.to_string(), c.table.to_string())),
            None => self.functions.iter().any(|(_, n)| *n == *c.table),
        })
    }
}

/// Collects what `information_schema` says, then [`EffectsBuilder::build`]s the closure.
#[derive(Debug, Default)]
pub struct EffectsBuilder {
    edges: HashMap<TableName, HashSet<TableName>>,
    /// The cascading foreign keys alone (also in `edges`).
    cascade_edges: HashMap<TableName, HashSet<TableName>>,
    unbounded: HashSet<TableName>,
    /// Trigger bodies, analysed once every function is known.
    triggers: Vec<(TableName, String, String)>,
    functions: HashSet<(String, String)>,
}

impl EffectsBuilder {
    /// A foreign key of `child` on `parent` whose ON DELETE or ON UPDATE rule changes the
    /// child (CASCADE, SET NULL, SET DEFAULT).
    pub fn cascade(&mut self, parent: TableName, child: TableName) {
        self.cascade_edges.entry(parent.clone()).or_default().insert(child.clone());
        self.edges.entry(parent).or_default().insert(child);
    }

    /// A trigger on `table`, created in database `trigger_db`, with body `body`.
    pub fn trigger(&mut self, table: TableName, trigger_db: &str, body: &str) {
        self.triggers.push((table, trigger_db.to_string(), body.to_string()));
    }

    /// A stored function `db.name`.
    pub fn function(&mut self, db: &str, name: &str) {
        self.functions.insert((db.to_ascii_lowercase(), name.to_ascii_lowercase()));
    }

    /// The closure: for every table, everything a change to it may also change.
    pub fn build(mut self) -> Effects {
        let functions = Effects {
            follows: HashMap::new(),
            cascades: HashMap::new(),
            functions: std::mem::take(&mut self.functions),
            triggered: HashSet::new(),
        };
        let triggered: HashSet<TableName> = self.triggers.iter().map(|(t, _, _)| t.clone()).collect();
        for (table, db, body) in std::mem::take(&mut self.triggers) {
            match trigger_writes(&db, &body, &functions) {
                Some(ts) => self.edges.entry(table).or_default().extend(ts),
                None => {
                    self.unbounded.insert(table);
                }
            }
        }
        let follows = closure(&self.edges, &self.unbounded);
        let none = HashSet::new();
        let cascades = closure(&self.cascade_edges, &none)
            .into_iter()
            .filter_map(|(t, f)| match f {
                Follow::Tables(v) => Some((t, v)),
                Follow::All => None,
            })
            .collect();
        Effects { follows, cascades, functions: functions.functions, triggered }
    }
}

/// For every table with an edge (or unbounded), everything reachable from it: `All` when an
/// unbounded table is reachable (itself included), else the tables (sorted; none: left out).
fn closure(
    edges: &HashMap<TableName, HashSet<TableName>>,
    unbounded: &HashSet<TableName>,
) -> HashMap<TableName, Follow> {
    let mut follows = HashMap::new();
    for start in edges.keys().chain(unbounded.iter()) {
        let mut seen: HashSet<&TableName> = HashSet::new();
        let mut stack = vec![start];
        let mut all = false;
        while let Some(t) = stack.pop() {
            all |= unbounded.contains(t);
            for n in edges.get(t).into_iter().flatten() {
                if seen.insert(n) {
                    stack.push(n);
                }
            }
        }
        seen.remove(start);
        let f = if all {
            Follow::All
        } else if seen.is_empty() {
            continue;
        } else {
            let mut v: Vec<TableName> = seen.into_iter().cloned().collect();
            v.sort();
            Follow::Tables(v)
        };
        follows.insert(start.clone(), f);
    }
    follows
}

/// Words that make a trigger body unbounded: it runs other code or changes the schema.
const UNBOUNDED_WORDS: [&[u8]; 8] =
    [b"CALL", b"EXECUTE", b"PREPARE", b"CREATE", b"DROP", b"ALTER", b"RENAME", b"TRUNCATE"];

/// The tables a trigger body writes (unqualified names in `db`); None if it cannot be
/// bounded (CALL, dynamic SQL, DDL, a stored function call, a write it cannot parse).
fn trigger_writes(db: &str, body: &str, fx: &Effects) -> Option<Vec<TableName>> {
    let lx = lexer::digest(body.as_bytes(), lexer::Dialect::default());
    if lx.malformed {
        return None;
    }
    let d = &lx.digest[..];
    let toks: Vec<Token> = Lexer::new(d).collect();
    let text = |t: &Token| &d[t.start..t.end];
    if toks.iter().any(|t| t.kind == Tok::Word && UNBOUNDED_WORDS.iter().any(|w| text(t).eq_ignore_ascii_case(w))) {
        return None;
    }
    if fx.any_stored(&crate::analyze::calls(d, &toks)) {
        return None;
    }
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let is_write = t.kind == Tok::Word
            && [&b"INSERT"[..], b"REPLACE", b"UPDATE", b"DELETE"].iter().any(|w| text(t).eq_ignore_ascii_case(w));
        let call = toks.get(i + 1).is_some_and(|n| text(n) == b"(");
        let after = i.checked_sub(1).map(|p| text(&toks[p]).to_ascii_uppercase());
        let clause = matches!(after.as_deref(), Some(b"KEY" | b"FOR" | b"ON" | b"."));
        if !is_write || call || clause {
            continue;
        }
        let end = toks[i..].iter().position(|t| text(t) == b";").map_or(toks.len(), |p| i + p);
        let mut stmt = &toks[i..end];
        if end == toks.len() && stmt.last().is_some_and(|t| text(t).eq_ignore_ascii_case(b"END")) {
            stmt = &stmt[..stmt.len() - 1];
        }
        match analyze_one(d, stmt, false) {
            Kind::Write(w) => match w.targets {
                Targets::Tables(ts) => {
                    out.extend(ts.into_iter().map(|r| TableName::new(r.db.as_deref().unwrap_or(db), &r.table)))
                }
                _ => return None,
            },
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(db: &str, table: &str) -> TableName {
        TableName::new(db, table)
    }

    #[test]
    fn trigger_bodies_name_what_they_write() {
        let fx = Effects::default();
        let body = "BEGIN INSERT INTO audit (id, v) VALUES (NEW.id, NEW.v) ON DUPLICATE KEY UPDATE v = NEW.v; \
                    IF NEW.v > 3 THEN UPDATE other.counts SET n = n + 1 WHERE id = 1; END IF; \
                    DELETE FROM q WHERE id = OLD.id; SET NEW.w = REPLACE(NEW.w, 'a', 'b'); END";
        let w = trigger_writes("d", body, &fx).unwrap();
        assert_eq!(w, vec![t("d", "audit"), t("other", "counts"), t("d", "q")]);
        assert_eq!(trigger_writes("d", "INSERT INTO log VALUES (NEW.id)", &fx).unwrap(), vec![t("d", "log")]);
        assert_eq!(trigger_writes("d", "BEGIN CALL p(NEW.id); END", &fx), None);
        let mut b = EffectsBuilder::default();
        b.function("d", "bump");
        let fx = b.build();
        assert_eq!(trigger_writes("d", "SET NEW.v = bump(NEW.v)", &fx), None);
        assert_eq!(trigger_writes("d", "SET NEW.v = UPPER(NEW.v)", &fx), Some(vec![]));
    }

    #[test]
    fn closure_follows_triggers_and_cascades() {
        let mut b = EffectsBuilder::default();
        b.trigger(t("d", "a"), "d", "INSERT INTO b VALUES (NEW.id)");
        b.cascade(t("d", "b"), t("d", "c"));
        b.cascade(t("d", "c"), t("d", "a")); // a cycle
        b.trigger(t("d", "x"), "d", "CALL p()");
        b.cascade(t("d", "y"), t("d", "x"));
        let fx = b.build();
        assert_eq!(fx.follows(&t("d", "a")), Some(&Follow::Tables(vec![t("d", "b"), t("d", "c")])));
        assert_eq!(fx.follows(&t("d", "c")), Some(&Follow::Tables(vec![t("d", "a"), t("d", "b")])));
        assert_eq!(fx.follows(&t("d", "x")), Some(&Follow::All));
        assert_eq!(fx.follows(&t("d", "y")), Some(&Follow::All));
        assert_eq!(fx.follows(&t("d", "z")), None);
        // Cascades alone: what a row-format binlog omits (triggers' rows are logged).
        assert_eq!(fx.cascades(&t("d", "b")), &[t("d", "a"), t("d", "c")]);
        assert_eq!(fx.cascades(&t("d", "y")), &[t("d", "x")]);
        assert!(fx.cascades(&t("d", "a")).is_empty(), "a trigger is no cascade");
        assert!(fx.has_triggers(&t("d", "a")) && fx.has_triggers(&t("d", "x")));
        assert!(!fx.has_triggers(&t("d", "b")) && !fx.has_triggers(&t("d", "y")));
    }

    #[test]
    fn stored_function_calls() {
        let mut b = EffectsBuilder::default();
        b.function("Shop", "Touch");
        let fx = b.build();
        let name = |db: Option<&str>, n: &str| RelName { db: db.map(Into::into), table: n.into() };
        assert!(fx.any_stored(&[name(None, "touch")]));
        assert!(fx.any_stored(&[name(Some("shop"), "touch")]));
        assert!(!fx.any_stored(&[name(Some("other"), "touch"), name(None, "t")]));
    }
}
