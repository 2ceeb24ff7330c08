//! MySQL group commit (`w_batch_size = 1`): the writes of one container queued by many
//! client connections at once run as **one transaction** on one connection, committed
//! before any of them is answered (so each write is still committed before it is
//! acknowledged, as batch size 1 promises):
//!
//! 1. `SELECT ... WHERE k IN (...) FOR UPDATE`: the group's keys, sorted (rows are
//!    locked in index order, which keeps concurrent groups from deadlocking each other);
//! 2. every operation is decided in queue order by [`plan`] on the rows as the earlier
//!    operations of the group left them (two writes of one key behave as if run one
//!    after the other);
//! 3. the net change per key: one multi-row `INSERT` (new rows), one multi-row
//!    `INSERT ... ON DUPLICATE KEY UPDATE` (rows held locked), one `DELETE ... IN`;
//! 4. `COMMIT`.
//!
//! Nothing is acknowledged before the COMMIT returns, so a group that fails before its
//! COMMIT (deadlock, a concurrent insert of a new key, a dead connection) is rolled back
//! whole and may be run again exactly.
//!
//! A group of plain `set`s only (no cas to compare) needs no read: [`set_group`] writes
//! it in one autocommitted multi-row `INSERT ... ON DUPLICATE KEY UPDATE` (one round
//! trip, like a prepared upsert), the cas column set to `GREATEST(new, old + 1)`.

use std::collections::HashMap;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Params, Value};

use super::myconn::{decode, key_param, row_params, run_write, MyErr, Shared};
use crate::error::BackendError;
use crate::ops::{blind_rows, plan, unix_now, Existing, NewRow, Op, OpResult, Write};
use crate::sql::in_chunks;
use crate::validate::Mapping;

/// Most rows per multi-row statement (exact sizes for INSERT, padded for the others:
/// every connection prepares at most this many INSERT statements per container).
pub(super) const ROWS_PER_STATEMENT: usize = 32;

/// Why a group did not commit.
#[derive(Debug)]
pub(super) enum GroupErr {
    /// A statement before the COMMIT failed: the transaction is rolled back (or the
    /// connection is dead), nothing of the group happened.
    Before(MyErr),
    /// The COMMIT itself failed on a dead connection: the outcome is unknown.
    Commit(MyErr),
    /// The table matched a key the group did not ask for (PAD SPACE collations): run the
    /// operations one by one instead.
    Stray,
}

/// Runs `ops` (all on container `m`) as one transaction on `conn` (autocommit off) and
/// commits it; returns each operation's outcome in order.
pub(super) async fn write_group(
    sh: &Shared,
    conn: &mut Conn,
    m: &Mapping,
    ops: &[&Op],
) -> Result<Vec<Result<OpResult, BackendError>>, GroupErr> {
    let mut keys: Vec<&[u8]> = ops.iter().filter_map(|o| o.key()).collect();
    keys.sort_unstable();
    keys.dedup();
    begin(sh, conn).await?;
    let original = lock_rows(sh, conn, m, &keys).await?;
    let mut state = original.clone();
    let now = unix_now();
    let mut results = Vec::with_capacity(ops.len());
    for op in ops {
        let key = op.key().expect("write op has a key");
        let cur = state.get(key).and_then(Option::as_ref);
        results.push(match plan(m, op, cur, now, &sh.clock) {
            Ok((w, res)) => {
                let next = match w {
                    Write::None => None,
                    Write::Insert(row) | Write::Update(row) => Some(Some(existing_of(row))),
                    Write::Touch(exp) => cur.map(|e| Some(Existing { exp: Some(exp), ..e.clone() })),
                    Write::Delete | Write::DeleteExpired => Some(None),
                };
                if let Some(n) = next {
                    state.insert(key.to_vec(), n);
                }
                Ok(res)
            }
            Err(e) => Err(e),
        });
    }
    let (mut inserts, mut updates, mut deletes) = (Vec::new(), Vec::new(), Vec::new());
    for k in &keys {
        let (before, after) = (&original[*k], &state[*k]);
        match (before, after) {
            (None, Some(e)) => inserts.push((*k, e)),
            (Some(_), None) => deletes.push(*k),
            (Some(b), Some(a)) if a != b => updates.push((*k, a)),
            _ => {}
        }
    }
    for chunk in deletes.chunks(ROWS_PER_STATEMENT) {
        let size = padded(chunk.len());
        let params = (0..size).map(|i| key_param(chunk[i.min(chunk.len() - 1)])).collect();
        exec(sh, conn, &m.sql.delete_in(size), params).await?;
    }
    for chunk in inserts.chunks(ROWS_PER_STATEMENT) {
        exec(sh, conn, &m.sql.insert_rows(chunk.len()), row_values(m, chunk, chunk.len())).await?;
    }
    for chunk in updates.chunks(ROWS_PER_STATEMENT) {
        let size = padded(chunk.len());
        exec(sh, conn, &m.sql.upsert_rows(size), row_values(m, chunk, size)).await?;
    }
    commit(sh, conn).await?;
    Ok(results)
}

/// One write alone, exactly as the per-key path always ran it (`SELECT ... WHERE k = ?
/// FOR UPDATE`, at most one statement, COMMIT): for groups of one, and for containers
/// whose key column compares inexactly (integers, `_ci` collations).
pub(super) async fn write_one(
    sh: &Shared,
    conn: &mut Conn,
    m: &Mapping,
    op: &Op,
) -> Result<Vec<Result<OpResult, BackendError>>, GroupErr> {
    begin(sh, conn).await?;
    let res = match run_write(sh, conn, m, op).await {
        Ok(r) => Ok(r),
        Err(MyErr::Request(e)) => Err(e),
        Err(e) => return Err(GroupErr::Before(e)),
    };
    commit(sh, conn).await?;
    Ok(vec![res])
}

/// Are these all plain sets (no cas compare), fitting one statement?
pub(super) fn blind_sets(ops: &[&Op]) -> bool {
    ops.len() <= ROWS_PER_STATEMENT && ops.iter().all(|o| o.is_blind_set())
}

/// Plain sets ([`blind_sets`]): one autocommitted multi-row upsert, no read. Each set
/// gets a new cas from the clock; the row keeps `GREATEST(that, old cas + 1)`, so the cas
/// answered is the row's unless the table held a cas above the clock (written by
/// someone else). A value with too many parts fails alone, before the statement. The
/// same key twice: the later row wins, as if run in order. Running the statement again
/// after a dead connection is harmless (sets are idempotent; the cas is new again).
pub(super) async fn set_group(
    sh: &Shared,
    conn: &mut Conn,
    m: &Mapping,
    ops: &[&Op],
) -> Result<Vec<Result<OpResult, BackendError>>, GroupErr> {
    let (rows, results) = blind_rows(m, ops, &sh.clock);
    let n = rows.len();
    let mut params = Vec::new();
    for (key, row) in &rows {
        params.push(key_param(key));
        row_params(m, row, &mut params);
    }
    if n > 0 {
        sh.timed(conn.exec_drop(m.sql.set_rows(n), Params::Positional(params))).await.map_err(|e| match e {
            e @ MyErr::Fatal(_) => GroupErr::Commit(e),
            e => GroupErr::Before(e),
        })?;
    }
    Ok(results)
}

async fn begin(sh: &Shared, conn: &mut Conn) -> Result<(), GroupErr> {
    sh.timed(conn.query_drop("BEGIN")).await.map_err(GroupErr::Before)
}

async fn commit(sh: &Shared, conn: &mut Conn) -> Result<(), GroupErr> {
    sh.timed(conn.query_drop("COMMIT")).await.map_err(|e| match e {
        e @ MyErr::Fatal(_) => GroupErr::Commit(e),
        e => GroupErr::Before(e),
    })
}

/// Reads and locks the rows of `keys` (sorted, distinct); absent keys map to None.
async fn lock_rows(
    sh: &Shared,
    conn: &mut Conn,
    m: &Mapping,
    keys: &[&[u8]],
) -> Result<HashMap<Vec<u8>, Option<Existing>>, GroupErr> {
    let mut found: HashMap<Vec<u8>, Option<Existing>> = keys.iter().map(|k| (k.to_vec(), None)).collect();
    for (start, len, size) in in_chunks(keys.len()) {
        let params: Vec<Value> = (0..size).map(|i| key_param(keys[start + i.min(len - 1)])).collect();
        let rows: Vec<mysql_async::Row> = sh
            .timed(conn.exec(m.sql.select_in_for_update(size), Params::Positional(params)))
            .await
            .map_err(GroupErr::Before)?;
        for r in &rows {
            let (k, e) = decode(m, r);
            match found.get_mut(&k) {
                Some(slot) => *slot = Some(e),
                None => return Err(GroupErr::Stray),
            }
        }
    }
    Ok(found)
}

fn existing_of(r: NewRow) -> Existing {
    Existing { parts: r.parts, flags: r.flags, cas: r.cas, exp: r.exp }
}

/// IN-list / row-count sizes used for padded statements (few distinct prepared ones).
fn padded(n: usize) -> usize {
    in_chunks(n).first().map_or(1, |c| c.2)
}

/// Parameters of `size` rows (the last one repeated to pad: harmless in an upsert).
fn row_values(m: &Mapping, rows: &[(&[u8], &Existing)], size: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for i in 0..size {
        let (k, e) = rows[i.min(rows.len() - 1)];
        out.push(key_param(k));
        let row = NewRow { parts: e.parts.clone(), flags: e.flags, cas: e.cas, exp: e.exp };
        row_params(m, &row, &mut out);
    }
    out
}

async fn exec(sh: &Shared, conn: &mut Conn, sql: &str, params: Vec<Value>) -> Result<(), GroupErr> {
    sh.timed(conn.exec_drop(sql, Params::Positional(params))).await.map_err(GroupErr::Before)
}
