//! Binlog glue: the follower from crates/binlog reports changes made directly on the
//! backend; each becomes a query-cache invalidation (row changes of a table with a single
//! integer primary key become key-level ones), and the stream's state switches the cache
//! online (Connected) or offline (Disconnected: nothing is served while changes could be
//! missed).

use std::sync::Arc;

use binlog::Change;

use binlog::feeds::Pass;
use querycache::types::{Invalidation, Source};

use querycache::QueryCache;

/// What one binlog change asks of the cache.
#[derive(Debug, PartialEq)]
pub enum Action {
    /// Drop what depends on this.
    Invalidate(Invalidation),
    /// Go online (true) or offline (false); either drops everything.
    Online(bool),
}

/// Maps a binlog change onto the cache.
pub fn action(change: &Change) -> Action {
    match change {
        Change::Rows { db, table, schema, rows } => {
            let keys = match schema.primary_key.as_slice() {
                &[pk] => rows.iter().map(|r| r.get(pk).and_then(|v| v.as_i64())).collect::<Option<Vec<i64>>>(),
                _ => None,
            };
            Action::Invalidate(match keys {
                Some(keys) => Invalidation::Keys { db: db.clone(), table: table.clone(), keys },
                None => Invalidation::Table { db: db.clone(), table: table.clone() },
            })
        }
        Change::Table { db, table } => Action::Invalidate(Invalidation::Table { db: db.clone(), table: table.clone() }),
        Change::Database { db } => Action::Invalidate(Invalidation::Database { db: db.clone() }),
        Change::All { .. } => Action::Invalidate(Invalidation::All),
        Change::Disconnected { .. } => Action::Online(false),
        Change::Connected => Action::Online(true),
    }
}

/// The binlog sink of `cache` (for [`binlog::feeds::Feeds::subscribe`]). Connection changes
/// are logged at the default level, each outage once (not every retry) with its reason.
pub fn sink(cache: Arc<QueryCache>, backend: String) -> binlog::feeds::Sink {
    // (connected, reason of the outage already logged)
    let state = std::sync::Mutex::new((false, None::<String>));
    Box::new(move |change, pass| {
        if pass == Pass::Recheck {
            // The same rows again: drop what a fill read before the commit was visible.
            if let Action::Invalidate(inv) = action(change) {
                cache.invalidate(&inv, querycache::types::Source::Recheck);
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
            Change::Connected => {
                *state.lock().unwrap_or_else(|p| p.into_inner()) = (true, None);
                log::info!("binlog of {backend}: connected; query cache online");
            }
            _ => {}
        }
        apply(&cache, change, action(change));
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
        Action::Invalidate(inv) => {
            if !matches!(change, Change::Rows { .. }) {
                // DDL (or a statement the binlog does not detail): triggers, foreign
                // keys or functions may have changed.
                qc.schema().effects_changed();
            }
            match &inv {
                Invalidation::Table { db, table } if matches!(change, Change::Table { .. }) => {
                    qc.schema().forget(db, table)
                }
                Invalidation::Database { db } => qc.schema().forget_database(db),
                Invalidation::All => qc.schema().clear(),
                _ => {}
            }
            qc.invalidate(&inv, Source::Binlog);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use binlog::{TableSchema, Value};

    fn rows(pk: Vec<usize>, rows: Vec<Vec<Value>>) -> Change {
        let schema = Arc::new(TableSchema { columns: vec!["id".into(), "v".into()], primary_key: pk });
        Change::Rows { db: "d".into(), table: "t".into(), schema, rows }
    }

    #[test]
    fn rows_become_keys_or_tables() {
        let c = rows(vec![0], vec![vec![Value::Int(1), Value::Null], vec![Value::UInt(2), Value::Null]]);
        assert_eq!(
            action(&c),
            Action::Invalidate(Invalidation::Keys { db: "d".into(), table: "t".into(), keys: vec![1, 2] })
        );
        let table = Action::Invalidate(Invalidation::Table { db: "d".into(), table: "t".into() });
        assert_eq!(action(&rows(vec![], vec![vec![Value::Int(1), Value::Null]])), table);
        assert_eq!(action(&rows(vec![0, 1], vec![vec![Value::Int(1), Value::Int(2)]])), table);
        assert_eq!(action(&rows(vec![0], vec![vec![Value::Bytes(b"k".to_vec()), Value::Null]])), table);
        assert_eq!(action(&rows(vec![0], vec![vec![Value::UInt(u64::MAX), Value::Null]])), table);
    }

    #[test]
    fn stream_state() {
        assert_eq!(action(&Change::Connected), Action::Online(true));
        assert_eq!(action(&Change::Disconnected { reason: "x".into() }), Action::Online(false));
        assert_eq!(action(&Change::All { reason: "gap".into() }), Action::Invalidate(Invalidation::All));
    }
}
