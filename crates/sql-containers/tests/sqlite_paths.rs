//! SQLite's two fast paths, against real database files: gets read on the asking thread's
//! own connection (`inline_reads`) and writes group-committed by the writer thread.

mod common;

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use sql_containers::{BackendError, Containers, SqlConfig, StoreMode, StoreOutcome};

/// `demo` refuses values longer than 10 bytes: one write of a group can fail alone.
const SCHEMA: &str = "
CREATE TABLE demo (c1 VARCHAR(250) PRIMARY KEY, c2 TEXT CHECK (length(c2) <= 10), c3 INTEGER, c4 BIGINT, c5 INTEGER);
CREATE TABLE multi (k TEXT NOT NULL, a TEXT, n INTEGER, b TEXT, f INTEGER, c INTEGER, e INTEGER);
CREATE UNIQUE INDEX multi_k ON multi (k);
CREATE TABLE plain (k BLOB PRIMARY KEY, v BLOB);
";

fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cache.db");
    Connection::open(&db).unwrap().execute_batch(SCHEMA).unwrap();
    (dir, db)
}

async fn load(db: &Path, backend: &str) -> Containers {
    let toml = format!(
        "[backend]\nkind = \"sqlite\"\npath = {:?}\npool_size = 3\nquery_timeout_ms = 5000\n{backend}\n\n[options]\nw_batch_size = 1\n{}",
        db.to_str().unwrap(),
        common::CONTAINERS
    );
    Containers::load(&SqlConfig::from_toml_str(&toml).unwrap()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_reads_see_every_acknowledged_write() {
    let (_dir, db) = fixture();
    let cs = load(&db, "").await;
    let c = cs.default_container().clone();
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let c = c.clone();
            tokio::spawn(async move {
                for i in 0..50 {
                    let (k, v) = (format!("t{t}k{i}"), format!("v{i}"));
                    common::set(&c, k.as_bytes(), v.as_bytes()).await;
                    assert_eq!(common::val(&c, k.as_bytes()).await.as_deref(), Some(v.as_bytes()));
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let s = cs.stats();
    // Every get inline, but for one that found the database busy (WAL readers hardly ever
    // are; such a read goes to the reader threads and is not counted).
    assert!(s.reads_inline >= 380, "{s:?}");
    assert_eq!(s.errors, 0, "{s:?}");
}

#[tokio::test]
async fn inline_reads_off_reads_on_the_reader_threads() {
    let (_dir, db) = fixture();
    let cs = load(&db, "inline_reads = false").await;
    let c = cs.default_container();
    common::set(c, b"k", b"v").await;
    assert_eq!(common::val(c, b"k").await.as_deref(), Some(&b"v"[..]));
    assert_eq!(cs.stats().reads_inline, 0);
}

#[tokio::test]
async fn a_group_commit_fails_only_the_bad_write() {
    let (_dir, db) = fixture();
    let cs = load(&db, "").await;
    let c = cs.default_container();
    let commits_before = cs.stats().commits;
    // Another process holds the write lock for a moment: the writer thread waits for it
    // (busy timeout) with the first write while the other 59 queue behind it.
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let path = db.clone();
    let holder = std::thread::spawn(move || {
        let other = Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        locked_tx.send(()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        other.execute_batch("COMMIT").unwrap();
    });
    locked_rx.recv().unwrap();
    let results = join_all(
        (0..60)
            .map(|i| {
                let c = c.clone();
                async move {
                    let k = format!("g{i}");
                    let v = if i % 3 == 0 { "far-too-long-for-the-check".to_string() } else { format!("v{i}") };
                    (i, c.store(StoreMode::Set, k.as_bytes(), v.as_bytes(), 0, 0, 0).await)
                }
            })
            .collect(),
    )
    .await;
    holder.join().unwrap();
    for (i, r) in &results {
        if i % 3 == 0 {
            assert!(matches!(r, Err(BackendError::Sql(m)) if m.contains("CHECK")), "write {i}: {r:?}");
        } else {
            assert!(matches!(r, Ok(StoreOutcome::Stored(_))), "write {i}: {r:?}");
        }
    }
    let peek = Connection::open(&db).unwrap();
    let n: i64 = peek.query_row("SELECT count(*) FROM demo WHERE c1 LIKE 'g%'", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 40);
    let commits = cs.stats().commits - commits_before;
    assert!(commits <= 3, "the queued writes were not grouped: {commits} commits for 40 writes");
}

/// Polls every future until all are done (the crate has no `futures` dependency).
async fn join_all<F: std::future::Future>(futs: Vec<F>) -> Vec<F::Output> {
    let mut futs: Vec<_> = futs.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = futs.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, o) in futs.iter_mut().zip(out.iter_mut()) {
            if o.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *o = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(|o| o.expect("polled to completion")).collect()
}
