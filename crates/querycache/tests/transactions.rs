//! Reads inside transactions (`--query-cache-in-transactions`): which are answered from the
//! cache, and which fills are refused because the transaction's snapshot may be older than
//! a change the cache has already seen.

mod common;

use common::{cache_with_policy, exec, read, rows};
use querycache::{CacheType, InTransactions, Invalidation, Source};

const IN_TRANS: u16 = 0x0001 | 0x0002; // IN_TRANS | AUTOCOMMIT
const OUT: u16 = 0x0002;
const Q: &str = "SELECT c FROM sbtest1 WHERE id = 1";

fn fresh(policy: InTransactions) -> (querycache::QueryCache, querycache::Session) {
    let c = cache_with_policy(CacheType::On, 8 << 20, policy);
    let s = c.session("u", Some("sbtest"), 33, 0);
    (c, s)
}

#[test]
fn never_keeps_transactions_away_from_the_cache() {
    let (c, mut s) = fresh(InTransactions::Never);
    assert!(!read(&c, &mut s, Q, &rows("a")).1);
    assert!(read(&c, &mut s, Q, &rows("a")).1, "cached outside a transaction");
    exec(&c, &mut s, "BEGIN", IN_TRANS);
    assert!(!read(&c, &mut s, Q, &rows("a")).1, "inside: the backend answers");
    exec(&c, &mut s, "COMMIT", OUT);
    assert!(read(&c, &mut s, Q, &rows("a")).1);
}

#[test]
fn read_only_answers_only_read_only_transactions() {
    let (c, mut s) = fresh(InTransactions::ReadOnly);
    read(&c, &mut s, Q, &rows("a"));
    exec(&c, &mut s, "BEGIN", IN_TRANS);
    assert!(!read(&c, &mut s, Q, &rows("a")).1, "a read-write transaction");
    exec(&c, &mut s, "COMMIT", OUT);
    exec(&c, &mut s, "START TRANSACTION READ ONLY", IN_TRANS);
    assert!(read(&c, &mut s, Q, &rows("a")).1, "a READ ONLY transaction is answered");
    exec(&c, &mut s, "COMMIT", OUT);
    exec(&c, &mut s, "START TRANSACTION /* READ ONLY */", IN_TRANS);
    assert!(!read(&c, &mut s, Q, &rows("a")).1, "a comment is not a READ ONLY");
}

#[test]
fn until_write_stops_at_the_first_write() {
    let (c, mut s) = fresh(InTransactions::UntilWrite);
    read(&c, &mut s, Q, &rows("a"));
    exec(&c, &mut s, "BEGIN", IN_TRANS);
    assert!(read(&c, &mut s, Q, &rows("a")).1, "before the first write: from the cache");
    exec(&c, &mut s, "UPDATE sbtest1 SET c = 'b' WHERE id = 2", IN_TRANS);
    // Own write visible: the backend answers, and nothing it says is stored.
    assert!(!read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 2", &rows("b (uncommitted)")).1);
    exec(&c, &mut s, "ROLLBACK", OUT);
    let mut other = c.session("u", Some("sbtest"), 33, 0);
    assert!(
        !read(&c, &mut other, "SELECT c FROM sbtest1 WHERE id = 2", &rows("a")).1,
        "the uncommitted value was never stored for anyone"
    );
    assert!(read(&c, &mut s, Q, &rows("a")).1, "after the transaction: cached again");
}

#[test]
fn a_fill_from_a_snapshot_older_than_an_invalidation_is_refused() {
    let (c, mut s) = fresh(InTransactions::UntilWrite);
    exec(&c, &mut s, "BEGIN", IN_TRANS);
    // Another session commits a change the binlog reports while this transaction runs:
    // the transaction's snapshot (repeatable read) still shows the old row.
    c.invalidate(
        &Invalidation::Keys {
            db: "sbtest".into(),
            table: "sbtest1".into(),
            keys: vec![1],
            values: vec![],
            change: querycache::RowChange::Any,
        },
        Source::Binlog,
    );
    assert!(!read(&c, &mut s, Q, &rows("old snapshot")).1);
    exec(&c, &mut s, "COMMIT", OUT);
    let mut other = c.session("u", Some("sbtest"), 33, 0);
    let (reply, hit) = read(&c, &mut other, Q, &rows("new"));
    assert!(!hit && reply == rows("new"), "the snapshot's row was not stored");
    assert!(read(&c, &mut other, Q, &rows("new")).1);
    // A transaction that began after the change fills normally.
    exec(&c, &mut s, "BEGIN", IN_TRANS);
    assert!(!read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 3", &rows("x")).1);
    assert!(read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 3", &rows("x")).1);
}

#[test]
fn autocommit_off_statements_open_transactions() {
    let (c, mut s) = fresh(InTransactions::UntilWrite);
    exec(&c, &mut s, "SET autocommit = 0", 0); // autocommit off, no transaction yet
                                               // The read opens a transaction: answered and filled as its first statement.
    assert!(!read(&c, &mut s, Q, &rows("a")).1);
    assert!(read(&c, &mut s, Q, &rows("a")).1);
}

#[test]
fn probe_begin_then_first_read_fills() {
    let (c, mut s) = fresh(InTransactions::UntilWrite);
    exec(&c, &mut s, "SET NAMES utf8mb4", OUT);
    assert!(!read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 2", &rows("x")).1);
    exec(&c, &mut s, "BEGIN", IN_TRANS);
    let p = c.on_query(&mut s, Q.as_bytes());
    assert!(matches!(p, querycache::Plan::Cached { .. }), "{p:?}");
}

/// A read inside the transaction (the reply keeps IN_TRANS).
fn tread(c: &querycache::QueryCache, s: &mut querycache::Session, sql: &str, backend: &[u8]) -> (Vec<u8>, bool) {
    common::read_with_status(c, s, sql, backend, IN_TRANS)
}

fn by_id(id: i64) -> String {
    format!("SELECT c FROM sbtest1 WHERE id = {id}")
}

fn changed(c: &querycache::QueryCache, keys: Vec<i64>) {
    let inv = Invalidation::Keys {
        db: "sbtest".into(),
        table: "sbtest1".into(),
        keys,
        values: vec![],
        change: querycache::RowChange::Any,
    };
    c.invalidate(&inv, Source::Binlog);
}

#[test]
fn a_change_to_other_rows_does_not_stop_a_transactions_fill() {
    let (c, mut s) = fresh(InTransactions::UntilWrite);
    read(&c, &mut s, &by_id(1), &rows("a")); // the table is known and has state
    exec(&c, &mut s, "BEGIN", IN_TRANS);
    changed(&c, vec![2]);
    // Row 3 did not change since the transaction began: its snapshot is the latest state.
    assert!(!tread(&c, &mut s, &by_id(3), &rows("c")).1);
    assert!(tread(&c, &mut s, &by_id(3), &rows("c")).1, "stored: the change was to row 2");
    // Row 2 did: the snapshot may show the old row, so nothing is stored.
    assert!(!tread(&c, &mut s, &by_id(2), &rows("old")).1);
    assert!(!tread(&c, &mut s, &by_id(2), &rows("old")).1, "refused again");
    // A range holding 2 is refused too; one beside it is not.
    let r = "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 5";
    assert!(!tread(&c, &mut s, r, &rows("old")).1);
    assert!(!tread(&c, &mut s, r, &rows("old")).1, "a range holding row 2");
    let r = "SELECT c FROM sbtest1 WHERE id BETWEEN 10 AND 20";
    assert!(!tread(&c, &mut s, r, &rows("x")).1);
    assert!(tread(&c, &mut s, r, &rows("x")).1, "a range beside it fills");
    exec(&c, &mut s, "COMMIT", OUT);
    let mut other = c.session("u", Some("sbtest"), 33, 0);
    let (reply, hit) = read(&c, &mut other, &by_id(2), &rows("new"));
    assert!(!hit && reply == rows("new"), "the snapshot's row 2 was never stored");
}

#[test]
fn what_the_log_forgot_or_never_knew_refuses() {
    let (c, mut s) = fresh(InTransactions::UntilWrite);
    read(&c, &mut s, &by_id(1), &rows("a"));
    exec(&c, &mut s, "BEGIN", IN_TRANS);
    // More row-level changes than the per-table log keeps: the oldest fall below its floor.
    for k in 100..140 {
        changed(&c, vec![k]);
    }
    assert!(!tread(&c, &mut s, &by_id(5), &rows("e")).1);
    assert!(!tread(&c, &mut s, &by_id(5), &rows("e")).1, "unknown changes since BEGIN: refused");
    exec(&c, &mut s, "COMMIT", OUT);
    // A table-level change refuses every read of a transaction begun before it.
    exec(&c, &mut s, "BEGIN", IN_TRANS);
    c.invalidate(&Invalidation::Table { db: "sbtest".into(), table: "sbtest1".into() }, Source::Binlog);
    assert!(!tread(&c, &mut s, &by_id(6), &rows("f")).1);
    assert!(!tread(&c, &mut s, &by_id(6), &rows("f")).1, "table-level: refused");
    exec(&c, &mut s, "COMMIT", OUT);
    // A transaction begun after all of it fills.
    exec(&c, &mut s, "BEGIN", IN_TRANS);
    assert!(!tread(&c, &mut s, &by_id(6), &rows("f")).1);
    assert!(tread(&c, &mut s, &by_id(6), &rows("f")).1);
}
