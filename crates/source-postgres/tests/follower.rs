//! The WAL follower against a real PostgreSQL 15 (SQLCACHED_POSTGRES, as scripts/postgres.sh
//! prints; skipped, passing, without it): the publication and slot made at first start,
//! row changes with before and after images, TRUNCATE and ALTER as whole-table changes,
//! resuming from the confirmed position after a restart of the follower, and a slot dropped
//! under it recreated and reported as `Change::All`.

mod common;

use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use common::*;
use source_postgres::follower::{FollowConfig, Follower};
use source_postgres::replication::ReplicationClient;
use sql_source::{Change, Follow, RowsKind, Value};

fn start(url: &str, slot: &str, table: &str) -> (Follower, Receiver<Change>) {
    let cfg = FollowConfig {
        conn: config(url, ""),
        backend: "test".into(),
        slot: slot.into(),
        publication: slot.into(),
        tables: vec![("public".into(), table.into())],
        confirm_delay: Duration::ZERO,
        ddl_trigger: false,
    };
    let (tx, rx) = channel();
    let f = Follower::spawn(cfg, move |c| {
        let _ = tx.send(c);
    });
    (f, rx)
}

/// The next change that is not a stream state, within 10 s.
fn next(rx: &Receiver<Change>) -> Change {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left).expect("a change within 10 s") {
            Change::Connected => continue,
            c => return c,
        }
    }
}

fn wait_connected(rx: &Receiver<Change>) {
    match rx.recv_timeout(Duration::from_secs(10)).expect("connected within 10 s") {
        Change::Connected => {}
        c => panic!("Connected expected, got {c:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follows_rows_tables_restarts_and_a_dropped_slot() {
    let url = need_server!();
    let (table, slot) = (unique("fol"), unique("fol_slot"));
    let mut admin = admin(&url).await;
    sql(&mut admin, &format!("CREATE TABLE {table} (id int PRIMARY KEY, email text, n numeric)")).await;
    let (f, rx) = start(&url, &slot, &table);
    wait_connected(&rx);
    sql(&mut admin, &format!("INSERT INTO {table} VALUES (1, 'a@x', 1.5)")).await;
    sql(&mut admin, &format!("UPDATE {table} SET email = 'b@x' WHERE id = 1")).await;
    sql(&mut admin, &format!("DELETE FROM {table} WHERE id = 1")).await;
    match next(&rx) {
        Change::Rows { db, table: t, rows, kind, schema } => {
            assert_eq!((db.as_str(), t.as_str(), kind), ("public", table.as_str(), RowsKind::Insert));
            assert_eq!(rows[0], vec![Value::Int(1), Value::Bytes(b"a@x".to_vec()), Value::Bytes(b"1.5".to_vec())]);
            assert_eq!(schema.primary_key, vec![0]);
        }
        c => panic!("insert expected, got {c:?}"),
    }
    match next(&rx) {
        Change::Rows { rows, kind: RowsKind::Update(_), .. } => {
            assert_eq!(rows[0][0], Value::Int(1), "before image: the key");
            assert_eq!(rows[1][1], Value::Bytes(b"b@x".to_vec()), "after image");
        }
        c => panic!("update expected, got {c:?}"),
    }
    assert!(matches!(next(&rx), Change::Rows { kind: RowsKind::Delete, .. }));
    sql(&mut admin, &format!("TRUNCATE {table}")).await;
    assert_eq!(next(&rx), Change::Table { db: "public".into(), table: table.clone() });
    // Stopped, written meanwhile, started again: the change made while down arrives.
    drop(f);
    sql(&mut admin, &format!("INSERT INTO {table} VALUES (2, 'c@x', 2)")).await;
    let (f, rx) = start(&url, &slot, &table);
    wait_connected(&rx);
    // (What was delivered but not yet confirmed when it stopped may come again: at least once.)
    loop {
        match next(&rx) {
            Change::Rows { kind: RowsKind::Insert, rows, .. } if rows[0][0] == Value::Int(2) => break,
            Change::Rows { .. } | Change::Table { .. } => {}
            c => panic!("unexpected {c:?}"),
        }
    }
    // ALTER: the next Relation differs: the whole table.
    sql(&mut admin, &format!("ALTER TABLE {table} ADD COLUMN extra int; INSERT INTO {table} VALUES (3, 'd@x', 3, 1)"))
        .await;
    assert_eq!(next(&rx), Change::Table { db: "public".into(), table: table.clone() });
    assert!(matches!(next(&rx), Change::Rows { kind: RowsKind::Insert, .. }));
    assert!(f.stats().connected);
    // The slot dropped under the follower: it reconnects, recreates it, and says All.
    sql(
        &mut admin,
        &format!(
            "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '{slot}' AND active_pid IS NOT NULL"
        ),
    )
    .await;
    let mut dropped = false;
    for _ in 0..50 {
        if admin.simple_query(&format!("SELECT pg_drop_replication_slot('{slot}')")).await.is_ok() {
            dropped = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(dropped, "the slot could be dropped while the follower was away");
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        match rx.recv_timeout(until.saturating_duration_since(Instant::now())).expect("All within 10 s") {
            Change::All { reason } => {
                assert!(reason.contains("dropped"), "{reason}");
                break;
            }
            Change::Connected | Change::Disconnected { .. } => {}
            c => panic!("unexpected {c:?}"),
        }
    }
    assert_eq!(f.stats().extra.iter().find(|(k, _, _)| *k == "slot_recreated").map(|(_, _, v)| v.as_str()), Some("1"));
    drop(f);
    let mut client = ReplicationClient::connect(&config(&url, "")).await.unwrap();
    client.drop_slot(&slot, true).await.unwrap();
    client.drop_publication(&slot).await.unwrap();
    sql(&mut admin, &format!("DROP TABLE {table}")).await;
}
