//! MariaDB/MySQL: many concurrent operations on one thread, as a server worker runs
//! them, so that reads are merged and writes group-committed (`w_batch_size = 1`). Runs
//! when SQLCACHED_MARIADB=host:port:user:password names a server; skipped otherwise.

use std::sync::Arc;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts};
use sql_containers::{ArithOutcome, Containers, DeleteOutcome, SqlConfig, StoreMode, StoreOutcome};

const DDL: &[&str] = &[
    "CREATE TABLE kv (k VARCHAR(64) COLLATE utf8mb4_bin PRIMARY KEY, v TEXT, f INT UNSIGNED, c BIGINT UNSIGNED, e INT)",
    "CREATE TABLE ci (k VARCHAR(64) COLLATE utf8mb4_general_ci PRIMARY KEY, v TEXT)",
];

const CONTAINERS: &str = r#"
[[container]]
name = "kv"
table = "kv"
key_column = "k"
value_columns = "v"
flags_column = "f"
cas_column = "c"
expire_column = "e"

[[container]]
name = "ci"
table = "ci"
key_column = "k"
value_columns = "v"
"#;

/// `mysql://...` for SQLCACHED_MARIADB's server and database `db`, or None (skip).
fn url(db: &str) -> Option<String> {
    let v = std::env::var("SQLCACHED_MARIADB").ok().filter(|v| !v.is_empty())?;
    let p: Vec<&str> = v.splitn(4, ':').collect();
    (p.len() == 4).then(|| format!("mysql://{}:{}@{}:{}/{db}", p[2], p[3], p[0], p[1]))
}

async fn setup(db: &str, backend_extra: &str) -> Option<(Containers, Conn)> {
    let Some(u) = url(db) else {
        eprintln!("SQLCACHED_MARIADB not set: MariaDB test skipped");
        return None;
    };
    let mut c = Conn::new(Opts::from_url(&url("").unwrap()).unwrap()).await.unwrap();
    c.query_drop(format!("DROP DATABASE IF EXISTS `{db}`")).await.unwrap();
    c.query_drop(format!("CREATE DATABASE `{db}`")).await.unwrap();
    c.query_drop(format!("USE `{db}`")).await.unwrap();
    for stmt in DDL {
        c.query_drop(*stmt).await.unwrap();
    }
    let toml = format!(
        "[backend]\nkind = \"mariadb\"\nurl = \"{u}\"\nplugin_tables = \"off\"\n{backend_extra}\n[options]\n{CONTAINERS}"
    );
    let cs = Containers::load(&SqlConfig::from_toml_str(&toml).unwrap()).await.unwrap();
    Some((cs, c))
}

/// Runs `n` copies of `f(i)` concurrently on the current thread.
async fn together<T, F, Fut>(n: usize, f: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    let tasks: Vec<_> = (0..n).map(|i| tokio::spawn(f(i))).collect();
    let mut out = Vec::with_capacity(n);
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test]
async fn group_commit_keeps_memcached_semantics() {
    let Some((cs, mut sql)) = setup("sqlcached_t_group", "thread_writers = 1\nthread_readers = 1").await else {
        return;
    };
    let kv = Arc::new(cs.get("kv").unwrap().clone());

    // 200 concurrent sets of distinct keys: every acknowledged one is in the table.
    let commits = cs.stats().commits;
    let c = kv.clone();
    let r = together(200, move |i| {
        let c = c.clone();
        async move { c.store(StoreMode::Set, format!("s{i}").as_bytes(), format!("v{i}").as_bytes(), 7, 0, 0).await }
    })
    .await;
    assert!(r.iter().all(|r| matches!(r, Ok(StoreOutcome::Stored(_)))), "{r:?}");
    let n: i64 = sql.query_first("SELECT COUNT(*) FROM kv WHERE k LIKE 's%' AND f = 7").await.unwrap().unwrap();
    assert_eq!(n, 200, "every acknowledged set is committed");
    let groups = cs.stats().commits - commits;
    assert!(groups < 20, "200 concurrent sets on one thread were group-committed ({groups} commits)");
    let cas: Vec<u64> = r.iter().map(|r| if let Ok(StoreOutcome::Stored(cas)) = r { *cas } else { 0 }).collect();
    let mut uniq = cas.clone();
    uniq.sort_unstable();
    uniq.dedup();
    assert_eq!(uniq.len(), 200, "every write gets its own cas");

    // 50 concurrent adds of one key: exactly one is stored.
    let c = kv.clone();
    let r = together(50, move |i| {
        let c = c.clone();
        async move { c.store(StoreMode::Add, b"once", format!("a{i}").as_bytes(), 0, 0, 0).await.unwrap() }
    })
    .await;
    assert_eq!(r.iter().filter(|o| matches!(o, StoreOutcome::Stored(_))).count(), 1, "{r:?}");
    assert_eq!(r.iter().filter(|o| **o == StoreOutcome::NotStored).count(), 49);

    // 100 concurrent incrs of one counter: each sees its own value, the total is exact.
    kv.store(StoreMode::Set, b"n", b"0", 0, 0, 0).await.unwrap();
    let c = kv.clone();
    let r = together(100, move |_| {
        let c = c.clone();
        async move { c.arith(b"n", true, 1, None).await.unwrap() }
    })
    .await;
    let mut vals: Vec<u64> =
        r.iter().map(|o| if let ArithOutcome::Done { value, .. } = o { *value } else { 0 }).collect();
    vals.sort_unstable();
    assert_eq!(vals, (1..=100).collect::<Vec<u64>>());
    let v: String = sql.query_first("SELECT v FROM kv WHERE k = 'n'").await.unwrap().unwrap();
    assert_eq!(v, "100");

    // Mixed on one key in one burst: set, append, delete, add, then everything reads back
    // as if run one after the other: memcached and SQL agree on the outcome.
    let c = kv.clone();
    let r = together(40, move |i| {
        let c = c.clone();
        async move {
            match i % 4 {
                0 => format!("{:?}", c.store(StoreMode::Set, b"m", b"x", 0, 0, 0).await.unwrap()),
                1 => format!("{:?}", c.store(StoreMode::Append, b"m", b"y", 0, 0, 0).await.unwrap()),
                2 => format!("{:?}", c.delete(b"m", 0).await.unwrap()),
                _ => format!("{:?}", c.store(StoreMode::Add, b"m", b"z", 0, 0, 0).await.unwrap()),
            }
        }
    })
    .await;
    assert_eq!(r.len(), 40);
    let got = kv.get(b"m").await.unwrap();
    let row: Option<String> = sql.query_first("SELECT v FROM kv WHERE k = 'm'").await.unwrap();
    assert_eq!(got.map(|r| String::from_utf8(r.value).unwrap()), row, "memcached and SQL agree");

    // cas: of 30 concurrent cas writes with the same (current) cas, exactly one wins.
    let now = kv.get(b"s1").await.unwrap().unwrap().cas;
    let c = kv.clone();
    let r = together(30, move |i| {
        let c = c.clone();
        async move { c.store(StoreMode::Cas, b"s1", format!("w{i}").as_bytes(), 0, 0, now).await.unwrap() }
    })
    .await;
    assert_eq!(r.iter().filter(|o| matches!(o, StoreOutcome::Stored(_))).count(), 1, "{r:?}");
    assert_eq!(r.iter().filter(|o| **o == StoreOutcome::Exists).count(), 29);

    // Merged reads: 300 concurrent gets (some absent, some repeated) answer each its own key.
    let c = kv.clone();
    let r = together(300, move |i| {
        let c = c.clone();
        async move { (i, c.get(format!("s{}", i % 250).as_bytes()).await.unwrap()) }
    })
    .await;
    for (i, row) in r {
        let k = i % 250;
        match row {
            Some(row) if k == 1 => assert!(row.value.starts_with(b"w")),
            Some(row) => assert_eq!(row.value, format!("v{k}").into_bytes(), "key s{k}"),
            None => assert!(k >= 200, "s{k} missing"),
        }
    }

    // Deletes in a group, visible to SQL at once.
    let c = kv.clone();
    let r = together(100, move |i| {
        let c = c.clone();
        async move { c.delete(format!("s{}", i + 100).as_bytes(), 0).await.unwrap() }
    })
    .await;
    assert_eq!(r.iter().filter(|o| **o == DeleteOutcome::Deleted).count(), 100);
    let n: i64 = sql.query_first("SELECT COUNT(*) FROM kv WHERE k LIKE 's%'").await.unwrap().unwrap();
    assert_eq!(n, 100);
    assert_eq!(cs.stats().lost_writes, 0);
}

#[tokio::test]
async fn inexact_keys_and_bad_values_fail_alone() {
    let Some((cs, mut sql)) = setup("sqlcached_t_group_ci", "thread_writers = 1").await else {
        return;
    };
    let ci = Arc::new(cs.get("ci").unwrap().clone());
    // A case-insensitive key column: Foo and foo are one row, written one at a time.
    let c = ci.clone();
    let r = together(20, move |i| {
        let c = c.clone();
        let k = if i % 2 == 0 { "Foo" } else { "foo" };
        async move { c.store(StoreMode::Add, k.as_bytes(), b"x", 0, 0, 0).await.unwrap() }
    })
    .await;
    assert_eq!(r.iter().filter(|o| matches!(o, StoreOutcome::Stored(_))).count(), 1, "{r:?}");
    let n: i64 = sql.query_first("SELECT COUNT(*) FROM ci").await.unwrap().unwrap();
    assert_eq!(n, 1);

    // One value too long for its column (strict mode) among good ones: only it fails.
    sql.query_drop("ALTER TABLE kv MODIFY v VARCHAR(8)").await.unwrap();
    let kv = Arc::new(cs.get("kv").unwrap().clone());
    let c = kv.clone();
    let r = together(20, move |i| {
        let c = c.clone();
        let v = if i == 7 { "far too long for eight".to_string() } else { format!("ok{i}") };
        async move { c.store(StoreMode::Set, format!("b{i}").as_bytes(), v.as_bytes(), 0, 0, 0).await }
    })
    .await;
    for (i, o) in r.iter().enumerate() {
        if i == 7 {
            assert!(o.is_err(), "{o:?}");
        } else {
            assert!(matches!(o, Ok(StoreOutcome::Stored(_))), "b{i}: {o:?}");
        }
    }
    let n: i64 = sql.query_first("SELECT COUNT(*) FROM kv WHERE k LIKE 'b%'").await.unwrap().unwrap();
    assert_eq!(n, 19);
}
