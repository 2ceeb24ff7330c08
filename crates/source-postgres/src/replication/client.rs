//! A replication session before streaming: IDENTIFY_SYSTEM, publications, slots.
//!
//! A `replication=database` connection takes replication commands and, since PostgreSQL
//! 10, plain SQL (simple Query only) in the same session, so one connection can check and
//! create the publication, check and create the slot, then start streaming.

use protocol_postgres::Lsn;

use crate::config::Config;
use crate::conn::{Connection, QueryResult};
use crate::error::Error;
use crate::sql::{quote_ident, quote_literal};

/// IDENTIFY_SYSTEM's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemInfo {
    /// The cluster's system identifier (unique per `initdb`).
    pub system_id: String,
    /// The current timeline.
    pub timeline: u32,
    /// The current WAL flush position.
    pub xlog_pos: Lsn,
    /// The database the session is connected to.
    pub dbname: Option<String>,
}

/// CREATE_REPLICATION_SLOT's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotInfo {
    /// The slot's name.
    pub name: String,
    /// From here on every committed change is in the slot's stream.
    pub consistent_point: Lsn,
    /// The output plugin (`pgoutput`).
    pub plugin: Option<String>,
}

/// A slot as `pg_replication_slots` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotState {
    /// The slot's name.
    pub name: String,
    /// Its output plugin (`None` for a physical slot).
    pub plugin: Option<String>,
    /// Its database (`None` for a physical slot).
    pub database: Option<String>,
    /// A connection is streaming from it now.
    pub active: bool,
    /// The oldest WAL it holds.
    pub restart_lsn: Option<Lsn>,
    /// What its consumer confirmed (a restart streams commits after this).
    pub confirmed_flush: Option<Lsn>,
    /// `reserved`, `extended`, `unreserved` or `lost` (WAL it needs was removed).
    pub wal_status: Option<String>,
}

/// What a publication publishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Publication<'a> {
    /// `FOR ALL TABLES` (needs a superuser), including tables created later.
    AllTables,
    /// `FOR TABLE schema.table, ...`.
    Tables(&'a [(&'a str, &'a str)]),
}

/// A `replication=database` session, not streaming.
pub struct ReplicationClient {
    pub(crate) conn: Connection,
}

impl ReplicationClient {
    /// Connects as a logical replication client (`replication=database`). A role without
    /// the REPLICATION attribute is [`Error::NoReplicationPrivilege`].
    pub async fn connect(cfg: &Config) -> Result<ReplicationClient, Error> {
        Ok(ReplicationClient { conn: Connection::connect(cfg, true).await? })
    }

    /// The session, for SQL of your own (simple queries).
    pub fn connection(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// Runs SQL (or a replication command) and returns its results.
    pub async fn simple_query(&mut self, sql: &str) -> Result<Vec<QueryResult>, Error> {
        self.conn.simple_query(sql).await
    }

    /// One row of one result, or a protocol error naming `what`.
    async fn one_row(&mut self, sql: &str, what: &str) -> Result<Vec<Option<String>>, Error> {
        let mut results = self.conn.simple_query(sql).await?;
        let row = results.first_mut().and_then(|r| r.rows.pop());
        row.ok_or_else(|| Error::Protocol(format!("{what} returned no row")))
    }

    /// IDENTIFY_SYSTEM.
    pub async fn identify_system(&mut self) -> Result<SystemInfo, Error> {
        let row = self.one_row("IDENTIFY_SYSTEM", "IDENTIFY_SYSTEM").await?;
        let col = |i: usize| row.get(i).cloned().flatten();
        let bad = |what: &str| Error::Protocol(format!("IDENTIFY_SYSTEM: bad {what}"));
        Ok(SystemInfo {
            system_id: col(0).ok_or_else(|| bad("systemid"))?,
            timeline: col(1).and_then(|t| t.parse().ok()).ok_or_else(|| bad("timeline"))?,
            xlog_pos: col(2).and_then(|p| p.parse().ok()).ok_or_else(|| bad("xlogpos"))?,
            dbname: col(3),
        })
    }

    /// Whether a publication named `name` exists in the database.
    pub async fn publication_exists(&mut self, name: &str) -> Result<bool, Error> {
        let sql = format!("SELECT 1 FROM pg_catalog.pg_publication WHERE pubname = {}", quote_literal(name));
        Ok(self.conn.simple_query(&sql).await?.first().is_some_and(|r| !r.rows.is_empty()))
    }

    /// CREATE PUBLICATION (an error if it exists: check with
    /// [`ReplicationClient::publication_exists`]).
    pub async fn create_publication(&mut self, name: &str, what: Publication<'_>) -> Result<(), Error> {
        let target = match what {
            Publication::AllTables => "FOR ALL TABLES".to_string(),
            Publication::Tables(tables) => {
                let list: Vec<String> =
                    tables.iter().map(|(s, t)| format!("{}.{}", quote_ident(s), quote_ident(t))).collect();
                format!("FOR TABLE {}", list.join(", "))
            }
        };
        self.conn.simple_query(&format!("CREATE PUBLICATION {} {target}", quote_ident(name))).await?;
        Ok(())
    }

    /// DROP PUBLICATION IF EXISTS.
    pub async fn drop_publication(&mut self, name: &str) -> Result<(), Error> {
        self.conn.simple_query(&format!("DROP PUBLICATION IF EXISTS {}", quote_ident(name))).await?;
        Ok(())
    }

    /// The slot named `name`, if it exists.
    pub async fn slot(&mut self, name: &str) -> Result<Option<SlotState>, Error> {
        let sql = format!(
            "SELECT slot_name, plugin, database, active, restart_lsn, confirmed_flush_lsn, wal_status \
             FROM pg_catalog.pg_replication_slots WHERE slot_name = {}",
            quote_literal(name)
        );
        let mut results = self.conn.simple_query(&sql).await?;
        let Some(row) = results.first_mut().and_then(|r| r.rows.pop()) else { return Ok(None) };
        let col = |i: usize| row.get(i).cloned().flatten();
        let lsn = |i: usize| col(i).and_then(|v| v.parse().ok());
        Ok(Some(SlotState {
            name: col(0).unwrap_or_default(),
            plugin: col(1),
            database: col(2),
            active: col(3).as_deref() == Some("t"),
            restart_lsn: lsn(4),
            confirmed_flush: lsn(5),
            wal_status: col(6),
        }))
    }

    /// CREATE_REPLICATION_SLOT name [TEMPORARY] LOGICAL pgoutput NOEXPORT_SNAPSHOT. With
    /// `wal_level` below logical this is [`Error::WalLevelNotLogical`].
    pub async fn create_slot(&mut self, name: &str, temporary: bool) -> Result<SlotInfo, Error> {
        let temp = if temporary { " TEMPORARY" } else { "" };
        let sql = format!("CREATE_REPLICATION_SLOT {}{temp} LOGICAL pgoutput NOEXPORT_SNAPSHOT", quote_ident(name));
        let row = self.one_row(&sql, "CREATE_REPLICATION_SLOT").await?;
        let col = |i: usize| row.get(i).cloned().flatten();
        Ok(SlotInfo {
            name: col(0).unwrap_or_else(|| name.to_string()),
            consistent_point: col(1)
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| Error::Protocol("CREATE_REPLICATION_SLOT: bad consistent_point".into()))?,
            plugin: col(3),
        })
    }

    /// DROP_REPLICATION_SLOT (with `wait`, waits while another connection uses it instead
    /// of failing with [`Error::SlotInUse`]). A missing slot is [`Error::SlotMissing`].
    pub async fn drop_slot(&mut self, name: &str, wait: bool) -> Result<(), Error> {
        let wait = if wait { " WAIT" } else { "" };
        self.conn.simple_query(&format!("DROP_REPLICATION_SLOT {}{wait}", quote_ident(name))).await?;
        Ok(())
    }

    /// Ends the session.
    pub async fn close(self) {
        self.conn.close().await
    }
}

/// The SQL-side shape of a [`QueryResult`] list, for callers that want the first value.
pub fn first_value(results: &[QueryResult]) -> Option<&str> {
    results.first()?.rows.first()?.first()?.as_deref()
}
