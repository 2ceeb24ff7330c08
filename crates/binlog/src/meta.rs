//! information_schema look-ups on a second connection: table definitions when the binlog
//! carries no column names (binlog_row_metadata=MINIMAL/NO_LOG), and the foreign keys whose
//! cascades InnoDB applies without logging them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts};

/// A table's definition as information_schema describes it now.
#[derive(Debug)]
pub(crate) struct TableMeta {
    /// Column names in table order.
    pub columns: Vec<String>,
    /// Primary key column positions in key order.
    pub primary_key: Vec<usize>,
    /// Per column: declared UNSIGNED.
    pub unsigned: Vec<bool>,
}

type Name = (String, String);

/// The metadata connection and what it learned.
pub(crate) struct Meta {
    opts: Opts,
    conn: Option<Conn>,
    /// Last failed connection attempt: no new attempt for `RETRY` (events must not wait on it).
    failed_at: Option<Instant>,
    tables: HashMap<Name, Option<Arc<TableMeta>>>,
    /// Parent table -> tables a change to it cascades to (ON UPDATE/DELETE CASCADE/SET NULL/SET DEFAULT).
    cascades: Option<HashMap<Name, Vec<Name>>>,
}

const TIMEOUT: Duration = Duration::from_secs(5);
const RETRY: Duration = Duration::from_secs(5);

impl Meta {
    pub(crate) fn new(opts: Opts) -> Meta {
        Meta { opts, conn: None, failed_at: None, tables: HashMap::new(), cascades: None }
    }

    async fn conn(&mut self) -> Result<&mut Conn, String> {
        if self.conn.is_none() {
            if self.failed_at.is_some_and(|t| t.elapsed() < RETRY) {
                return Err("metadata connection failed recently".into());
            }
            let c = tokio::time::timeout(TIMEOUT, Conn::new(self.opts.clone())).await;
            let c = c.map_err(|_| "timeout".to_string()).and_then(|c| c.map_err(|e| e.to_string()));
            self.failed_at = c.is_err().then(Instant::now);
            self.conn = Some(c?);
        }
        Ok(self.conn.as_mut().expect("connected above"))
    }

    async fn query<T: mysql_async::prelude::FromRow + Send + 'static>(
        &mut self,
        sql: &str,
        params: Vec<String>,
    ) -> Result<Vec<T>, String> {
        let conn = self.conn().await?;
        let r = tokio::time::timeout(TIMEOUT, conn.exec::<T, _, _>(sql, params)).await;
        match r {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(e)) => {
                self.conn = None;
                Err(e.to_string())
            }
            Err(_) => {
                self.conn = None;
                Err("timeout".into())
            }
        }
    }

    /// The definition of `db.table` (cached until `forget`); None if unknown or unreadable.
    pub(crate) async fn table(&mut self, db: &str, table: &str) -> Option<Arc<TableMeta>> {
        let name = (db.to_string(), table.to_string());
        if let Some(t) = self.tables.get(&name) {
            return t.clone();
        }
        let cols: Vec<(String, String, String)> = self
            .query(
                "SELECT COLUMN_NAME, COLUMN_TYPE, COLUMN_KEY FROM information_schema.COLUMNS \
                 WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
                vec![db.to_string(), table.to_string()],
            )
            .await
            .ok()?;
        let pk: Vec<String> = self
            .query(
                "SELECT COLUMN_NAME FROM information_schema.STATISTICS \
                 WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX",
                vec![db.to_string(), table.to_string()],
            )
            .await
            .ok()?;
        let meta = (!cols.is_empty()).then(|| {
            let columns: Vec<String> = cols.iter().map(|c| c.0.clone()).collect();
            let primary_key = pk.iter().filter_map(|k| columns.iter().position(|c| c == k)).collect();
            let unsigned = cols.iter().map(|c| c.1.to_ascii_lowercase().contains("unsigned")).collect();
            Arc::new(TableMeta { columns, primary_key, unsigned })
        });
        self.tables.insert(name, meta.clone());
        meta
    }

    /// Tables that a change to `db.table` may cascade to (transitively). Err: unknown (no
    /// metadata connection), the caller must assume anything changed.
    pub(crate) async fn cascades(&mut self, db: &str, table: &str) -> Result<Vec<Name>, String> {
        if self.cascades.is_none() {
            let rows: Vec<(String, String, String, String, String, String)> = self
                .query(
                    "SELECT CONSTRAINT_SCHEMA, TABLE_NAME, UNIQUE_CONSTRAINT_SCHEMA, REFERENCED_TABLE_NAME, \
                     UPDATE_RULE, DELETE_RULE FROM information_schema.REFERENTIAL_CONSTRAINTS",
                    vec![],
                )
                .await?;
            let mut graph: HashMap<Name, Vec<Name>> = HashMap::new();
            for (cdb, ct, pdb, pt, upd, del) in rows {
                let acts = |r: &str| !matches!(r, "RESTRICT" | "NO ACTION");
                if acts(&upd) || acts(&del) {
                    graph.entry((pdb, pt)).or_default().push((cdb, ct));
                }
            }
            self.cascades = Some(graph);
        }
        let graph = self.cascades.as_ref().expect("loaded above");
        let start = (db.to_string(), table.to_string());
        let (mut seen, mut todo, mut out) = (HashSet::from([start.clone()]), vec![start], Vec::new());
        while let Some(t) = todo.pop() {
            for child in graph.get(&t).into_iter().flatten() {
                if seen.insert(child.clone()) {
                    out.push(child.clone());
                    todo.push(child.clone());
                }
            }
        }
        Ok(out)
    }

    /// Forgets what it knows about `db.table` (None: about every table) after DDL.
    pub(crate) fn forget(&mut self, name: Option<(&str, &str)>) {
        match name {
            Some((db, t)) => {
                self.tables.remove(&(db.to_string(), t.to_string()));
            }
            None => self.tables.clear(),
        }
        self.cascades = None;
    }
}
