//! information_schema look-ups on a second connection: table definitions when the binlog
//! carries no column names (binlog_row_metadata=MINIMAL/NO_LOG), and the side effects a
//! binlog omits: the foreign keys whose cascades InnoDB applies without logging them (in
//! any format), and the triggers a statement-format binlog does not show running
//! ([`load_effects`], the same graph and closure the query cache uses for proxied writes).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts};
use querycache::{Effects, EffectsBuilder, TableName};

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
    /// Triggers, cascading foreign keys and stored functions (None: to be read again).
    effects: Option<Arc<Effects>>,
}

const TIMEOUT: Duration = Duration::from_secs(5);
const RETRY: Duration = Duration::from_secs(5);

impl Meta {
    pub(crate) fn new(opts: Opts) -> Meta {
        Meta { opts, conn: None, failed_at: None, tables: HashMap::new(), effects: None }
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

    /// The side-effect graph, read once and again after DDL. Err: unknown (no metadata
    /// connection), the caller must assume anything changed.
    pub(crate) async fn effects(&mut self) -> Result<Arc<Effects>, String> {
        if let Some(fx) = &self.effects {
            return Ok(fx.clone());
        }
        let conn = self.conn().await?;
        let fx = match tokio::time::timeout(TIMEOUT, load_effects(conn)).await {
            Ok(Ok(fx)) => Arc::new(fx),
            Ok(Err(e)) => {
                self.conn = None;
                return Err(e.to_string());
            }
            Err(_) => {
                self.conn = None;
                return Err("timeout".into());
            }
        };
        self.effects = Some(fx.clone());
        Ok(fx)
    }

    /// Forgets what it knows about `db.table` (None: about every table) after DDL.
    pub(crate) fn forget(&mut self, name: Option<(&str, &str)>) {
        match name {
            Some((db, t)) => {
                self.tables.remove(&(db.to_string(), t.to_string()));
            }
            None => self.tables.clear(),
        }
        self.effects = None;
    }

    /// Forgets the side-effect graph only (triggers or routines were defined or dropped).
    pub(crate) fn forget_effects(&mut self) {
        self.effects = None;
    }
}

/// Reads the side-effect graph from `information_schema` on `c`: foreign keys whose ON
/// UPDATE / ON DELETE rule changes the child (CASCADE, SET NULL, SET DEFAULT), every
/// trigger's table and body, every stored function. Only what the account may see is
/// listed (TRIGGERS needs the TRIGGER privilege on the table). Used by the follower here
/// and by the MySQL proxy's metadata task: one reading, one closure (`querycache::effects`).
pub async fn load_effects(c: &mut Conn) -> mysql_async::Result<Effects> {
    let mut b = EffectsBuilder::default();
    let fks: Vec<(String, String, String, String)> = c
        .query(
            "SELECT UNIQUE_CONSTRAINT_SCHEMA, REFERENCED_TABLE_NAME, CONSTRAINT_SCHEMA, TABLE_NAME \
             FROM information_schema.REFERENTIAL_CONSTRAINTS \
             WHERE UPDATE_RULE NOT IN ('RESTRICT', 'NO ACTION') OR DELETE_RULE NOT IN ('RESTRICT', 'NO ACTION')",
        )
        .await?;
    for (pdb, parent, cdb, child) in fks {
        b.cascade(TableName::new(&pdb, &parent), TableName::new(&cdb, &child));
    }
    let triggers: Vec<(String, String, String, String)> = c
        .query(
            "SELECT EVENT_OBJECT_SCHEMA, EVENT_OBJECT_TABLE, TRIGGER_SCHEMA, ACTION_STATEMENT \
             FROM information_schema.TRIGGERS",
        )
        .await?;
    for (db, table, tdb, body) in triggers {
        b.trigger(TableName::new(&db, &table), &tdb, &body);
    }
    let functions: Vec<(String, String)> = c
        .query("SELECT ROUTINE_SCHEMA, ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_TYPE = 'FUNCTION'")
        .await?;
    for (db, name) in functions {
        b.function(&db, &name);
    }
    Ok(b.build())
}
