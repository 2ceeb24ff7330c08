//! The tags of the stored results, per table: which results read the whole table, which
//! read only rows with given primary-key values, and each table's version (bumped by every
//! change to it, so that a fill that began before is refused). Bounded: past its number of
//! references, a table's results are dropped (as an eviction would).

use std::collections::HashMap;
use std::sync::Arc;

/// A result's key hash.
pub type Hk = [u8; 16];

/// A table: schema and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TableId(Arc<str>, Arc<str>);

impl TableId {
    /// The table `schema.name`.
    pub fn new(schema: &str, name: &str) -> TableId {
        TableId(schema.into(), name.into())
    }
}

/// Which rows of a table a result read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Any row.
    Table,
    /// Only the row whose primary key is this value (as the WAL renders it).
    Point(String),
}

#[derive(Default)]
struct TableState {
    version: u64,
    whole: Vec<Hk>,
    points: HashMap<String, Vec<Hk>>,
    refs: usize,
}

/// The tag index.
pub struct Index {
    tables: HashMap<TableId, TableState>,
    refs: usize,
    max_refs: usize,
}

impl Index {
    /// An empty index holding at most `max_refs` references.
    pub fn new(max_refs: usize) -> Index {
        Index { tables: HashMap::new(), refs: 0, max_refs }
    }

    /// The table's version now.
    pub fn version(&self, t: &TableId) -> u64 {
        self.tables.get(t).map_or(0, |s| s.version)
    }

    /// Tags result `hk` with (t, scope); past the bound, returns the table's results to drop.
    pub fn add(&mut self, t: &TableId, scope: &Scope, hk: Hk) -> Option<Vec<Hk>> {
        if self.refs >= self.max_refs {
            return Some(self.invalidate(t, None));
        }
        let st = self.tables.entry(t.clone()).or_default();
        match scope {
            Scope::Table => st.whole.push(hk),
            Scope::Point(v) => st.points.entry(v.clone()).or_default().push(hk),
        }
        st.refs += 1;
        self.refs += 1;
        None
    }

    /// A change to `t`: the results to drop (those of the whole table, and those of these
    /// points; every one of the table's if `points` is None). Bumps its version.
    pub fn invalidate(&mut self, t: &TableId, points: Option<&[String]>) -> Vec<Hk> {
        let st = self.tables.entry(t.clone()).or_default();
        st.version += 1;
        let mut out = std::mem::take(&mut st.whole);
        match points {
            None => {
                for (_, v) in st.points.drain() {
                    out.extend(v);
                }
            }
            Some(ps) => {
                for p in ps {
                    if let Some(v) = st.points.remove(p) {
                        out.extend(v);
                    }
                }
            }
        }
        st.refs = st.refs.saturating_sub(out.len());
        self.refs = self.refs.saturating_sub(out.len());
        out
    }

    /// Every result (a change to everything); versions are kept (and bumped).
    pub fn clear(&mut self) -> Vec<Hk> {
        let mut out = Vec::new();
        for st in self.tables.values_mut() {
            st.version += 1;
            out.append(&mut st.whole);
            for (_, v) in st.points.drain() {
                out.extend(v);
            }
            st.refs = 0;
        }
        self.refs = 0;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_whole_tables_and_the_bound() {
        let mut ix = Index::new(4);
        let t = TableId::new("public", "a");
        assert!(ix.add(&t, &Scope::Point("1".into()), [1; 16]).is_none());
        assert!(ix.add(&t, &Scope::Point("2".into()), [2; 16]).is_none());
        assert!(ix.add(&t, &Scope::Table, [3; 16]).is_none());
        let v = ix.version(&t);
        let mut out = ix.invalidate(&t, Some(&["1".into()]));
        out.sort();
        assert_eq!(out, vec![[1; 16], [3; 16]], "the point and the whole-table result");
        assert_eq!(ix.version(&t), v + 1);
        assert!(ix.add(&t, &Scope::Point("3".into()), [4; 16]).is_none());
        assert!(ix.add(&t, &Scope::Point("4".into()), [5; 16]).is_none());
        assert!(ix.add(&t, &Scope::Point("5".into()), [6; 16]).is_none());
        // Over the bound: the table's results go.
        let dropped = ix.add(&t, &Scope::Point("6".into()), [7; 16]).unwrap();
        assert_eq!(dropped.len(), 4);
        assert_eq!(ix.clear(), Vec::<Hk>::new());
    }
}
