//! Binlog glue: the follower from crates/binlog reports changes made directly on the
//! backend; each becomes a query-cache invalidation (row changes become key-level ones
//! through `QueryCache::rows_changed`, which knows the table's keys), and the stream's state switches the cache
//! online (Connected) or offline (Disconnected: nothing is served while changes could be
//! missed).

use std::sync::Arc;

use sql_source::{Change, RowsKind, Value};

use querycache::types::{Invalidation, Param, RowChange, Source};
use sql_source::feeds::Pass;

use querycache::QueryCache;

/// What one binlog change asks of the cache.
#[derive(Debug, PartialEq)]
pub enum Action {
    /// Drop what depends on this.
    Invalidate(Invalidation),
    /// Read triggers, foreign keys and functions again (stored programs changed); no
    /// cached result depends on them (results calling stored functions are never cached).
    Effects,
    /// Go online (true) or offline (false); either drops everything.
    Online(bool),
}

/// Maps a binlog change onto the cache (`qc` knows the tables' keys).
pub fn action(change: &Change, qc: &QueryCache) -> Action {
    match change {
        Change::Rows { db, table, schema, rows, kind } => {
            let change = match kind {
                RowsKind::Insert => RowChange::Any,
                RowsKind::Delete => RowChange::Delete,
                RowsKind::Update(cols) => RowChange::Update(
                    cols.iter().filter_map(|i| schema.columns.get(*i)).map(|c| c.to_ascii_lowercase().into()).collect(),
                ),
            };
            Action::Invalidate(qc.rows_changed(db, table, &schema.columns, rows, |r, i| param(r.get(i)), change))
        }
        // New keys: results were tagged by the old ones.
        Change::Table { db, table } | Change::ManyRows { db, table } | Change::Keys { db, table } => {
            Action::Invalidate(Invalidation::Table { db: db.clone(), table: table.clone() })
        }
        Change::Database { db } => Action::Invalidate(Invalidation::Database { db: db.clone() }),
        // Results are per user: which users a REVOKE (through a role) or a FLUSH PRIVILEGES
        // reaches is not known, so none is served from before it.
        Change::All { .. } | Change::Privileges { .. } => Action::Invalidate(Invalidation::All),
        Change::Routines { .. } => Action::Effects,
        Change::Disconnected { .. } => Action::Online(false),
        Change::Connected => Action::Online(true),
    }
}

/// A row image's column as the query cache sees values.
fn param(v: Option<&Value>) -> Param {
    match v {
        Some(Value::Int(i)) => Param::Int(*i),
        Some(Value::UInt(u)) => Param::UInt(*u),
        Some(Value::Bytes(b)) => Param::Str(b.as_slice().into()),
        Some(Value::Other(_)) => Param::Other,
        Some(Value::Null) | None => Param::Null,
    }
}

/// The binlog sink of `cache` (for [`sql_source::feeds::Feeds::subscribe`]). Connection changes
/// are logged at the default level, each outage once (not every retry) with its reason.
pub fn sink(cache: Arc<QueryCache>, backend: String) -> sql_source::feeds::Sink {
    // (connected, reason of the outage already logged)
    let state = std::sync::Mutex::new((false, None::<String>));
    Box::new(move |change, pass| {
        if pass == Pass::Recheck {
            // The same rows again: drop what a fill read before the commit was visible.
            if let Action::Invalidate(inv) = action(change, &cache) {
                cache.invalidate(&inv, Source::Recheck);
            }
            return;
        }
        match change {
            Change::Disconnected { reason } => {
                let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
                if st.0 || st.1.as_deref() != Some(reason.as_str()) {
                    log::warn!("binlog of {backend}: {reason}; query cache offline until the binlog flows again");
                }
                *st = (false, Some(reason.clone()));
            }
            Change::All { reason } => log::info!("binlog: dropping every cached result: {reason}"),
            Change::Privileges { reason } => log::info!(
                "binlog: privileges may have been taken away ({reason}): dropping every cached result (results \
                 are per user)"
            ),
            Change::Connected => {
                *state.lock().unwrap_or_else(|p| p.into_inner()) = (true, None);
                log::info!("binlog of {backend}: connected; query cache online");
            }
            _ => {}
        }
        apply(&cache, change, action(change, &cache));
    })
}

/// Applies one binlog change to the cache (what [`action`] made of it).
fn apply(qc: &QueryCache, change: &Change, action: Action) {
    match action {
        Action::Online(on) => {
            qc.schema().clear();
            qc.schema().effects_changed();
            qc.set_online(on);
        }
        Action::Effects => qc.schema().effects_changed(),
        Action::Invalidate(inv) => {
            if !matches!(change, Change::Rows { .. } | Change::ManyRows { .. } | Change::Privileges { .. }) {
                // DDL (or a statement the binlog does not detail): triggers, foreign
                // keys or functions may have changed.
                qc.schema().effects_changed();
            }
            match &inv {
                Invalidation::Table { db, table } if matches!(change, Change::Table { .. } | Change::Keys { .. }) => {
                    qc.schema().forget(db, table)
                }
                Invalidation::Database { db } => qc.schema().forget_database(db),
                Invalidation::All if !matches!(change, Change::Privileges { .. }) => qc.schema().clear(),
                _ => {}
            }
            qc.invalidate(&inv, Source::Binlog);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use querycache::{CacheType, Config, InTransactions, PkColumn, TableInfo};
    use sql_source::{TableSchema, Value};

    /// A cache knowing d.t (id INT primary key), d.u (code VARCHAR _ci primary key,
    /// UNIQUE(email) _bin) and d.c (primary key (a INT, b VARCHAR _ci)).
    fn qc() -> QueryCache {
        let c = QueryCache::new(Config {
            size: 1 << 20,
            limit: 1 << 16,
            mode: CacheType::On,
            in_transactions: InTransactions::Never,
        });
        let ci = |n: &str| PkColumn::new(n, "varchar", Some("utf8mb4_general_ci"));
        c.schema().set_table("d", "t", TableInfo::base(vec![PkColumn::int("id")]));
        let u =
            TableInfo::base(vec![ci("code")]).with_unique(vec![PkColumn::new("email", "varchar", Some("utf8mb4_bin"))]);
        c.schema().set_table("d", "u", u);
        c.schema().set_table("d", "c", TableInfo::base(vec![PkColumn::int("a"), ci("b")]));
        c
    }

    fn rows(table: &str, columns: &[&str], rows: Vec<Vec<Value>>) -> Change {
        rows_of(table, columns, rows, RowsKind::Insert)
    }

    fn rows_of(table: &str, columns: &[&str], rows: Vec<Vec<Value>>, kind: RowsKind) -> Change {
        let columns = columns.iter().map(|c| c.to_string()).collect();
        let schema = Arc::new(TableSchema { columns, primary_key: vec![0] });
        Change::Rows { db: "d".into(), table: table.into(), schema, rows, kind }
    }

    fn s(v: &str) -> Value {
        Value::Bytes(v.as_bytes().to_vec())
    }

    #[test]
    fn rows_become_keys_or_tables() {
        let qc = qc();
        let c = rows("t", &["id", "v"], vec![vec![Value::Int(1), Value::Null], vec![Value::UInt(2), Value::Null]]);
        assert_eq!(
            action(&c, &qc),
            Action::Invalidate(Invalidation::Keys {
                db: "d".into(),
                table: "t".into(),
                keys: vec![1, 2],
                values: vec![],
                change: querycache::RowChange::Any
            })
        );
        let table = |t: &str| Action::Invalidate(Invalidation::Table { db: "d".into(), table: t.into() });
        assert_eq!(action(&rows("t", &["id"], vec![vec![Value::UInt(u64::MAX)]]), &qc), table("t"));
        assert_eq!(action(&rows("t", &["ID"], vec![vec![Value::Null]]), &qc), table("t"));
        assert_eq!(action(&rows("t", &["k"], vec![vec![Value::Int(1)]]), &qc), table("t"));
        assert_eq!(action(&rows("unknown", &["id"], vec![vec![Value::Int(1)]]), &qc), table("unknown"));
    }

    /// The key names of a row invalidation's values, and how many values each has.
    fn listed(a: Action) -> Vec<(String, usize)> {
        match a {
            Action::Invalidate(Invalidation::Keys { keys, values, .. }) => {
                assert!(keys.is_empty());
                values.iter().map(|kv| (kv.key.to_string(), kv.values.len())).collect()
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn string_composite_and_unique_keys() {
        let qc = qc();
        let cols = ["code", "email", "v"];
        // Before and after images: 'AB' and 'ab ' are one code under _ci; two emails.
        let c = rows("u", &cols, vec![vec![s("AB"), s("x@y"), Value::Null], vec![s("ab "), s("X@y"), Value::Int(1)]]);
        assert_eq!(listed(action(&c, &qc)), vec![("code".into(), 1), ("email".into(), 2)]);
        // A NULL (or left-out) email, a non-ASCII one: the email key is not listed.
        let c = rows("u", &cols, vec![vec![s("ab"), Value::Null, Value::Null]]);
        assert_eq!(listed(action(&c, &qc)), vec![("code".into(), 1)]);
        let c = rows("u", &cols, vec![vec![s("ab"), s("é@y"), Value::Null]]);
        assert_eq!(listed(action(&c, &qc)), vec![("code".into(), 1)]);
        let c = rows("c", &["a", "b"], vec![vec![Value::Int(1), s("k")], vec![Value::UInt(1), s("K")]]);
        assert_eq!(listed(action(&c, &qc)), vec![("a,b".into(), 1)]);
        // No key value known at all: the table.
        let c = rows("c", &["a", "b"], vec![vec![Value::Int(1), s("é")]]);
        assert_eq!(action(&c, &qc), Action::Invalidate(Invalidation::Table { db: "d".into(), table: "c".into() }));
    }

    #[test]
    fn events_say_how_rows_changed() {
        let qc = qc();
        let change = |kind| match action(&rows_of("t", &["id", "V"], vec![vec![Value::Int(1), Value::Null]], kind), &qc)
        {
            Action::Invalidate(Invalidation::Keys { change, .. }) => change,
            other => panic!("{other:?}"),
        };
        assert_eq!(change(RowsKind::Delete), RowChange::Delete);
        assert_eq!(change(RowsKind::Update(vec![1])), RowChange::Update(vec!["v".into()]));
        assert_eq!(change(RowsKind::Insert), RowChange::Any);
    }

    #[test]
    fn stream_state() {
        let qc = qc();
        assert_eq!(action(&Change::Connected, &qc), Action::Online(true));
        assert_eq!(action(&Change::Disconnected { reason: "x".into() }, &qc), Action::Online(false));
        assert_eq!(action(&Change::All { reason: "gap".into() }, &qc), Action::Invalidate(Invalidation::All));
    }

    /// What no row changed still matters here: results are per user (privileges), tagged by
    /// the table's keys (keys), and proxied writes follow triggers (routines).
    #[test]
    fn privileges_keys_and_routines() {
        let qc = qc();
        let p = Change::Privileges { reason: "REVOKE".into() };
        assert_eq!(action(&p, &qc), Action::Invalidate(Invalidation::All));
        let k = Change::Keys { db: "d".into(), table: "t".into() };
        assert_eq!(action(&k, &qc), Action::Invalidate(Invalidation::Table { db: "d".into(), table: "t".into() }));
        assert_eq!(action(&Change::Routines { reason: "CREATE TRIGGER".into() }, &qc), Action::Effects);
    }
}
