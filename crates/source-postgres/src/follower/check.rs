//! `sql_source::check::Check` for the WAL follower: what following the wanted tables needs,
//! each missing prerequisite with its fix — `wal_level = logical`, a role with REPLICATION
//! (or superuser), the right to create the publication or add the tables to it (the
//! tables' owner, and CREATE on the database), every table with every wanted column, a
//! replica identity that carries the old value of every wanted column (the primary key,
//! or `REPLICA IDENTITY FULL` when a wanted column is not in the key), and a slot that is
//! free and decodes with pgoutput.

use std::time::Duration;

use sql_source::check::{Check, Verdict, Wanted};

use super::FollowConfig;
use crate::conn::{Connection, QueryResult};
use crate::error::Error;
use crate::sql::quote_literal;

impl Check for FollowConfig {
    fn backend(&self) -> String {
        self.backend.clone()
    }

    fn check(&self, wanted: &[Wanted], timeout: Duration) -> Verdict {
        let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt,
            Err(e) => return Verdict::Unreachable(format!("runtime: {e}")),
        };
        rt.block_on(async {
            match tokio::time::timeout(timeout, verify(self, wanted)).await {
                Ok(Ok(v)) => v,
                Ok(Err(e @ (Error::Connect(_) | Error::ConnectionLost(_)))) => Verdict::Unreachable(e.to_string()),
                Ok(Err(e)) => Verdict::Wrong(vec![format!("{}: {e}", self.backend)]),
                Err(_) => Verdict::Unreachable(format!("no answer within {}s", timeout.as_secs())),
            }
        })
    }
}

/// The rows of one query's first result.
async fn rows(c: &mut Connection, sql: &str) -> Result<Vec<Vec<Option<String>>>, Error> {
    let mut r: Vec<QueryResult> = c.simple_query(sql).await?;
    Ok(if r.is_empty() { Vec::new() } else { r.swap_remove(0).rows })
}

fn text(row: &[Option<String>], i: usize) -> String {
    row.get(i).cloned().flatten().unwrap_or_default()
}

async fn verify(cfg: &FollowConfig, wanted: &[Wanted]) -> Result<Verdict, Error> {
    let mut c = Connection::connect(&cfg.conn, false).await?;
    let (mut wrong, mut notes) = (Vec::new(), Vec::new());
    let user = cfg.conn.user.clone();
    let level = rows(&mut c, "SHOW wal_level").await?;
    let level = level.first().map(|r| text(r, 0)).unwrap_or_default();
    if level != "logical" {
        wrong.push(format!(
            "wal_level is {level}, not logical: ALTER SYSTEM SET wal_level = logical, then restart PostgreSQL"
        ));
    }
    let role = rows(
        &mut c,
        "SELECT rolreplication, rolsuper, has_database_privilege(current_database(), 'CREATE') \
         FROM pg_catalog.pg_roles WHERE rolname = current_user",
    )
    .await?;
    let role = role.first().cloned().unwrap_or_default();
    let superuser = text(&role, 1) == "t";
    if text(&role, 0) != "t" && !superuser {
        wrong.push(format!("role {user} lacks REPLICATION: ALTER ROLE {user} REPLICATION (or use a superuser)"));
    }
    let publication = rows(
        &mut c,
        &format!(
            "SELECT puballtables, pg_catalog.pg_get_userbyid(pubowner) = current_user FROM pg_catalog.pg_publication \
             WHERE pubname = {}",
            quote_literal(&cfg.publication)
        ),
    )
    .await?;
    let published = rows(
        &mut c,
        &format!(
            "SELECT schemaname, tablename FROM pg_catalog.pg_publication_tables WHERE pubname = {}",
            quote_literal(&cfg.publication)
        ),
    )
    .await?;
    match publication.first() {
        None if !superuser && text(&role, 2) != "t" => wrong.push(format!(
            "publication {} does not exist and role {user} may not create it: GRANT CREATE ON DATABASE {} TO {user} \
             (it must own the tables too), or create it as their owner: CREATE PUBLICATION {} FOR TABLE ...",
            cfg.publication, cfg.conn.dbname, cfg.publication
        )),
        None => notes.push(format!("publication {} is created at start", cfg.publication)),
        Some(p) if !superuser && text(p, 1) != "t" => notes.push(format!(
            "publication {} exists (owned by another role: tables it lacks cannot be added by {user})",
            cfg.publication
        )),
        Some(_) => notes.push(format!("publication {} exists", cfg.publication)),
    }
    for w in wanted {
        let (s, t) = (&w.db, &w.table);
        let found = rows(
            &mut c,
            &format!(
                "SELECT c.oid, c.relreplident, pg_catalog.pg_get_userbyid(c.relowner) = current_user \
                 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = {} AND c.relname = {} AND c.relkind IN ('r', 'p')",
                quote_literal(s),
                quote_literal(t)
            ),
        )
        .await?;
        let Some(rel) = found.first() else {
            wrong.push(format!("{s}.{t}: no such table (or role {user} cannot see it)"));
            continue;
        };
        let (oid, identity, owner) = (text(rel, 0), text(rel, 1), text(rel, 2) == "t");
        let in_publication = published.iter().any(|r| text(r, 0) == *s && text(r, 1) == *t);
        if !in_publication && !owner && !superuser {
            wrong.push(format!(
                "{s}.{t} is not in publication {} and role {user} does not own it: ALTER PUBLICATION {} ADD TABLE \
                 {s}.{t} as its owner",
                cfg.publication, cfg.publication
            ));
        }
        let cols = rows(
            &mut c,
            &format!(
                "SELECT a.attname, COALESCE(i.indisprimary OR i.indisreplident, false) FROM pg_catalog.pg_attribute a \
                 LEFT JOIN pg_catalog.pg_index i ON i.indrelid = a.attrelid AND a.attnum = ANY(i.indkey) \
                 AND (i.indisprimary OR i.indisreplident) \
                 WHERE a.attrelid = {oid} AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
            ),
        )
        .await?;
        let have: Vec<String> = cols.iter().map(|r| text(r, 0)).collect();
        let keyed = cols.iter().any(|r| text(r, 1) == "t");
        for col in w.columns.iter().filter(|c| !have.iter().any(|h| h == *c)) {
            wrong.push(format!("{s}.{t} has no column {col} (it has {})", have.join(", ")));
        }
        if identity != "f" {
            let unkeyed: Vec<&String> =
                w.columns.iter().filter(|col| !cols.iter().any(|r| text(r, 0) == **col && text(r, 1) == "t")).collect();
            if !keyed || identity == "n" {
                notes.push(format!(
                    "WARNING: {s}.{t} has no replica identity key: each UPDATE or DELETE of it is a change of the \
                     whole table; ALTER TABLE {s}.{t} REPLICA IDENTITY FULL for row-level changes"
                ));
            } else if !unkeyed.is_empty() {
                wrong.push(format!(
                    "{s}.{t}: the WAL does not carry the old value of {} (not in the replica identity key), so a key \
                     built from it before an UPDATE could not be named: ALTER TABLE {s}.{t} REPLICA IDENTITY FULL",
                    unkeyed.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    let slot = rows(
        &mut c,
        &format!(
            "SELECT plugin, active, wal_status FROM pg_catalog.pg_replication_slots WHERE slot_name = {}",
            quote_literal(&cfg.slot)
        ),
    )
    .await?;
    match slot.first() {
        None => notes.push(format!("replication slot {} is created at start", cfg.slot)),
        Some(r) if text(r, 0) != "pgoutput" => wrong.push(format!(
            "replication slot {} exists with plugin {}, not pgoutput: name another with --pg-slot",
            cfg.slot,
            text(r, 0)
        )),
        Some(r) if text(r, 1) == "t" => wrong.push(format!(
            "replication slot {} is in use by another connection (another sqlcached?): give each its own --pg-slot",
            cfg.slot
        )),
        Some(r) => notes.push(format!("replication slot {} exists (wal_status {})", cfg.slot, text(r, 2))),
    }
    c.close().await;
    if !wrong.is_empty() {
        return Ok(Verdict::Wrong(wrong));
    }
    notes.insert(0, format!("wal_level logical, role {user} may replicate, tables and columns checked"));
    Ok(Verdict::Good { notes })
}
