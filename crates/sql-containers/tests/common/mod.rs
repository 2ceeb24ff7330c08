//! Scenarios run on every backend (SQLite always, MariaDB when SQLCACHED_MARIADB is set,
//! PostgreSQL when SQLCACHED_POSTGRES is set).
//! Each takes containers mapped onto the same logical tables:
//!
//! * `demo`  (c1 key, c2 value, c3 flags, c4 cas, c5 expire)      -> container "default"
//! * `multi` (k key, a, n, b values, f flags, c cas, e expire)    -> container "multi"
//! * `plain` (k key, v binary value; no flags/cas/expire)         -> container "plain"
#![allow(dead_code)]

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sql_containers::{ArithOutcome, BackendError, Container, Containers, DeleteOutcome, StoreMode, StoreOutcome};

/// The three containers every backend's scenarios use (tables `demo`, `multi`, `plain`).
pub const CONTAINERS: &str = r#"
[[container]]
name = "default"
table = "demo"
key_column = "c1"
value_columns = "c2"
flags_column = "c3"
cas_column = "c4"
expire_column = "c5"
unique_index = "PRIMARY"

[[container]]
name = "multi"
table = "multi"
key_column = "k"
value_columns = ["a", "n", "b"]
flags_column = "f"
cas_column = "c"
expire_column = "e"
unique_index = "multi_k"

[[container]]
name = "plain"
table = "plain"
key_column = "k"
value_columns = "v"
"#;

pub type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Looks at the tables from another connection (what other SQL clients see).
pub trait Peek: Sync {
    /// First column of the first row of `sql` with one bound parameter; None: no row.
    /// NULL reads as "NULL".
    fn one<'a>(&'a self, sql: &'a str, param: &'a [u8]) -> BoxFut<'a, Option<Vec<u8>>>;
    fn count<'a>(&'a self, table: &'a str) -> BoxFut<'a, i64>;
}

pub fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

fn stored(o: StoreOutcome) -> u64 {
    match o {
        StoreOutcome::Stored(cas) => cas,
        other => panic!("expected Stored, got {other:?}"),
    }
}

pub async fn set(c: &Container, k: &[u8], v: &[u8]) -> u64 {
    stored(c.store(StoreMode::Set, k, v, 0, 0, 0).await.unwrap())
}

pub async fn val(c: &Container, k: &[u8]) -> Option<Vec<u8>> {
    c.get(k).await.unwrap().map(|r| r.value)
}

pub async fn basic(cs: &Containers) {
    let c = cs.get("default").unwrap();
    assert_eq!(c.get(b"k1").await.unwrap(), None);
    let cas = stored(c.store(StoreMode::Set, b"k1", b"hello", 5, 0, 0).await.unwrap());
    assert!(cas > 0);
    let r = c.get(b"k1").await.unwrap().unwrap();
    assert_eq!((r.value.as_slice(), r.flags, r.cas, r.exptime), (&b"hello"[..], 5, cas, 0));

    assert_eq!(c.store(StoreMode::Add, b"k1", b"x", 0, 0, 0).await.unwrap(), StoreOutcome::NotStored);
    stored(c.store(StoreMode::Add, b"k2", b"two", 0, 0, 0).await.unwrap());
    assert_eq!(c.store(StoreMode::Replace, b"k3", b"x", 0, 0, 0).await.unwrap(), StoreOutcome::NotStored);
    stored(c.store(StoreMode::Replace, b"k1", b"world", 9, 0, 0).await.unwrap());
    assert_eq!(c.get(b"k1").await.unwrap().unwrap().flags, 9);
    stored(c.store(StoreMode::Append, b"k1", b"!", 1, 0, 0).await.unwrap());
    stored(c.store(StoreMode::Prepend, b"k1", b">", 1, 0, 0).await.unwrap());
    let r = c.get(b"k1").await.unwrap().unwrap();
    assert_eq!((r.value.as_slice(), r.flags), (&b">world!"[..], 9), "append/prepend keep flags");
    assert_eq!(c.store(StoreMode::Append, b"nope", b"!", 0, 0, 0).await.unwrap(), StoreOutcome::NotStored);
    assert_eq!(c.store(StoreMode::Prepend, b"nope", b"!", 0, 0, 0).await.unwrap(), StoreOutcome::NotStored);

    let rows = c.get_many(&[b"k2", b"missing", b"k1", b"k2"]).await.unwrap();
    let vals: Vec<Option<&[u8]>> = rows.iter().map(|r| r.as_ref().map(|r| &r.value[..])).collect();
    assert_eq!(vals, vec![Some(&b"two"[..]), None, Some(&b">world!"[..]), Some(&b"two"[..])]);

    assert_eq!(c.delete(b"k1", 1).await.unwrap(), DeleteOutcome::Exists);
    assert_eq!(c.delete(b"k1", 0).await.unwrap(), DeleteOutcome::Deleted);
    assert_eq!(c.delete(b"k1", 0).await.unwrap(), DeleteOutcome::NotFound);
    assert_eq!(c.get(b"k1").await.unwrap(), None);
    let cas = c.get(b"k2").await.unwrap().unwrap().cas;
    assert_eq!(c.delete(b"k2", cas).await.unwrap(), DeleteOutcome::Deleted);
    // Empty value.
    set(c, b"empty", b"").await;
    assert_eq!(val(c, b"empty").await, Some(Vec::new()));
}

pub async fn cas(cs: &Containers) {
    let c = cs.get("default").unwrap();
    let c1 = set(c, b"c", b"v1").await;
    assert_eq!(c.store(StoreMode::Cas, b"c", b"v2", 0, 0, c1 + 999).await.unwrap(), StoreOutcome::Exists);
    let c2 = stored(c.store(StoreMode::Cas, b"c", b"v2", 0, 0, c1).await.unwrap());
    assert!(c2 > c1);
    let r = c.get(b"c").await.unwrap().unwrap();
    assert_eq!((r.value.as_slice(), r.cas), (&b"v2"[..], c2));
    assert_eq!(c.store(StoreMode::Cas, b"c", b"v3", 0, 0, c1).await.unwrap(), StoreOutcome::Exists);
    assert_eq!(c.store(StoreMode::Cas, b"nocas", b"v", 0, 0, 1).await.unwrap(), StoreOutcome::NotFound);
    // A set carrying a cas compares too (binary/meta protocols); add ignores it.
    assert_eq!(c.store(StoreMode::Set, b"c", b"v3", 0, 0, c1).await.unwrap(), StoreOutcome::Exists);
    assert_eq!(c.store(StoreMode::Set, b"c-missing", b"v3", 0, 0, 5).await.unwrap(), StoreOutcome::NotFound);
    stored(c.store(StoreMode::Set, b"c", b"v3", 0, 0, c2).await.unwrap());
    assert_eq!(c.store(StoreMode::Append, b"c", b"!", 0, 0, c2).await.unwrap(), StoreOutcome::Exists);
    // Every write moves the cas, touch does not.
    let before = c.get(b"c").await.unwrap().unwrap().cas;
    let t = c.touch(b"c", 100).await.unwrap().unwrap();
    assert_eq!(t.cas, before);

    // No cas column: rows read with cas 0, a cas comparison never writes.
    let p = cs.get("plain").unwrap();
    assert!(!p.has_cas());
    assert_eq!(set(p, b"p", b"v").await, 0);
    assert_eq!(p.get(b"p").await.unwrap().unwrap().cas, 0);
    assert_eq!(p.store(StoreMode::Cas, b"p", b"w", 0, 0, 0).await.unwrap(), StoreOutcome::Exists);
    assert_eq!(p.store(StoreMode::Cas, b"p-missing", b"w", 0, 0, 0).await.unwrap(), StoreOutcome::NotFound);
    assert_eq!(p.delete(b"p", 7).await.unwrap(), DeleteOutcome::Exists);
    assert_eq!(val(p, b"p").await.unwrap(), b"v");
}

pub async fn arith(cs: &Containers) {
    let c = cs.get("default").unwrap();
    assert_eq!(c.arith(b"n", true, 1, None).await.unwrap(), ArithOutcome::NotFound);
    set(c, b"n", b"10").await;
    let cas0 = c.get(b"n").await.unwrap().unwrap().cas;
    let ArithOutcome::Done { value, cas, .. } = c.arith(b"n", true, 5, None).await.unwrap() else { panic!() };
    assert_eq!(value, 15);
    assert!(cas > cas0);
    assert_eq!(c.get(b"n").await.unwrap().unwrap().cas, cas);
    assert!(matches!(c.arith(b"n", false, 20, None).await.unwrap(), ArithOutcome::Done { value: 0, .. }));
    // memcached rewrites a shorter number in place, padded with spaces to the old length.
    assert_eq!(val(c, b"n").await.unwrap(), b"0 ");
    set(c, b"n", b"18446744073709551615").await;
    assert!(matches!(c.arith(b"n", true, 2, None).await.unwrap(), ArithOutcome::Done { value: 1, .. }));
    set(c, b"n", b"abc").await;
    assert_eq!(c.arith(b"n", true, 1, None).await.unwrap(), ArithOutcome::NonNumeric);
    assert!(matches!(c.arith(b"n2", true, 1, Some((42, 0))).await.unwrap(), ArithOutcome::Done { value: 42, .. }));
    assert_eq!(val(c, b"n2").await.unwrap(), b"42");

    // Concurrent increments of one key are serialized on its connection: none lost.
    set(c, b"ctr", b"0").await;
    let mut tasks = Vec::new();
    for _ in 0..40 {
        let c = c.clone();
        tasks.push(tokio::spawn(async move { c.arith(b"ctr", true, 1, None).await.unwrap() }));
    }
    for t in tasks {
        assert!(matches!(t.await.unwrap(), ArithOutcome::Done { .. }));
    }
    assert_eq!(val(c, b"ctr").await.unwrap(), b"40");
}

pub async fn expire(cs: &Containers, peek: &dyn Peek, demo_select_c2: &str) {
    let c = cs.get("default").unwrap();
    set(c, b"e0", b"x").await;
    stored(c.store(StoreMode::Set, b"e0", b"gone", 0, -1, 0).await.unwrap());
    assert_eq!(c.get(b"e0").await.unwrap(), None, "negative exptime: expired at once");
    let t = now();
    stored(c.store(StoreMode::Set, b"e1", b"v", 0, 2, 0).await.unwrap());
    let r = c.get(b"e1").await.unwrap().unwrap();
    assert!((t + 2..=t + 3).contains(&r.exptime), "relative exptime stored as absolute: {}", r.exptime);
    let abs = t + 1000;
    stored(c.store(StoreMode::Set, b"e2", b"v", 0, abs, 0).await.unwrap());
    assert_eq!(c.get(b"e2").await.unwrap().unwrap().exptime, abs);
    stored(c.store(StoreMode::Set, b"e3", b"v", 0, 100, 0).await.unwrap());
    let touched = c.touch(b"e3", 1).await.unwrap().unwrap();
    assert!((t + 100..=t + 101).contains(&touched.exptime), "touch returns the row as found");
    let after = c.get(b"e3").await.unwrap().unwrap();
    assert!((t + 1..=t + 2).contains(&after.exptime));
    assert_eq!(c.touch(b"e-missing", 1).await.unwrap(), None);

    tokio::time::sleep(Duration::from_millis(3100)).await;
    assert_eq!(c.get(b"e1").await.unwrap(), None);
    assert_eq!(c.get_many(&[b"e3", b"e2"]).await.unwrap()[0], None);
    assert_eq!(c.touch(b"e1", 100).await.unwrap(), None);
    assert_eq!(c.store(StoreMode::Replace, b"e1", b"r", 0, 0, 0).await.unwrap(), StoreOutcome::NotStored);
    assert_eq!(c.arith(b"e1", true, 1, None).await.unwrap(), ArithOutcome::NotFound);
    assert_eq!(c.delete(b"e1", 0).await.unwrap(), DeleteOutcome::NotFound);
    // The read removed e3 lazily (the expired row is gone from the table).
    let mut gone = false;
    for _ in 0..50 {
        if peek.one(demo_select_c2, b"e3").await.is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "expired row removed after a read met it");
    // add over an expired row stores.
    stored(c.store(StoreMode::Set, b"e4", b"old", 0, -1, 0).await.unwrap());
    stored(c.store(StoreMode::Add, b"e4", b"new", 0, 0, 0).await.unwrap());
    assert_eq!(val(c, b"e4").await.unwrap(), b"new");
    assert_eq!(c.get(b"e2").await.unwrap().unwrap().value, b"v");
}

pub async fn multi(cs: &Containers, peek: &dyn Peek, select_b: &str) {
    let c = cs.get("multi").unwrap();
    assert_eq!(c.value_columns(), 3);
    set(c, b"m", b"x|3|y").await;
    assert_eq!(val(c, b"m").await.unwrap(), b"x|3|y");
    assert_eq!(peek.one(select_b, b"m").await.unwrap(), b"y");
    set(c, b"m", b"only").await;
    assert_eq!(val(c, b"m").await.unwrap(), b"only||", "missing parts are NULL, read as empty");
    assert_eq!(peek.one(select_b, b"m").await.unwrap(), b"NULL");
    // An empty part is NULL too, as the InnoDB memcached plugin stores it (issue 42): a
    // later ALTER to an integer type reads NULL there, not 0.
    let select_n = select_b.replacen("SELECT b", "SELECT n", 1);
    set(c, b"m", b"Frankfurt||").await;
    assert_eq!(val(c, b"m").await.unwrap(), b"Frankfurt||");
    assert_eq!(peek.one(&select_n, b"m").await.unwrap(), b"NULL");
    assert_eq!(peek.one(select_b, b"m").await.unwrap(), b"NULL");
    set(c, b"m", b"x||y").await;
    assert_eq!(peek.one(&select_n, b"m").await.unwrap(), b"NULL", "an empty part in the middle");
    assert_eq!(peek.one(select_b, b"m").await.unwrap(), b"y");
    let e = c.store(StoreMode::Set, b"m", b"1|2|3|4", 0, 0, 0).await.unwrap_err();
    assert!(matches!(e, BackendError::Invalid(_)), "{e:?}");
    set(c, b"m", b"x|3|y").await;
    stored(c.store(StoreMode::Append, b"m", b"z", 0, 0, 0).await.unwrap());
    stored(c.store(StoreMode::Prepend, b"m", b"w", 0, 0, 0).await.unwrap());
    assert_eq!(val(c, b"m").await.unwrap(), b"wx|3|yz", "append: last column, prepend: first");
    assert_eq!(c.arith(b"m", true, 1, None).await.unwrap(), ArithOutcome::NonNumeric);
    let r = c.store(StoreMode::Set, b"m2", b"a|7|b", 77, 0, 0).await.unwrap();
    let row = c.get(b"m2").await.unwrap().unwrap();
    assert_eq!((row.flags, StoreOutcome::Stored(row.cas)), (77, r));
}

/// Container "strict" on table `strict` (k key; a TEXT NOT NULL, n integer NOT NULL, b
/// TEXT nullable): what empty parts become in NOT NULL columns.
pub const STRICT: &str = r#"
[[container]]
name = "strict"
table = "strict"
key_column = "k"
value_columns = ["a", "n", "b"]
unique_index = "strict_k"
"#;

/// Empty parts of a multi-column value in NOT NULL columns (docs/containers.md): a
/// character column stores '' (the plugin would refuse the write), an integer column
/// refuses it with a message naming the column, a nullable one stores NULL.
pub async fn empty_parts(cs: &Containers, peek: &dyn Peek, table: &str) {
    let c = cs.get("strict").unwrap();
    let one = |col: &str| format!("SELECT {col} FROM {table} WHERE k = ?");
    set(c, b"s", b"x|5|").await;
    assert_eq!(peek.one(&one("b"), b"s").await.unwrap(), b"NULL");
    set(c, b"s", b"|6|y").await;
    assert_eq!(peek.one(&one("a"), b"s").await.unwrap(), b"", "NOT NULL character column: ''");
    assert_eq!(val(c, b"s").await.unwrap(), b"|6|y");
    let e = c.store(StoreMode::Set, b"s", b"x||y", 0, 0, 0).await.unwrap_err();
    assert!(matches!(&e, BackendError::Invalid(m) if m.contains("column n")), "{e:?}");
    assert_eq!(val(c, b"s").await.unwrap(), b"|6|y", "the refused write changed nothing");
}

pub async fn binary(cs: &Containers) {
    let p = cs.get("plain").unwrap();
    let v: Vec<u8> = (0..=255u8).chain(b"|\r\nEND\r\n".iter().copied()).collect();
    set(p, b"bin", &v).await;
    assert_eq!(val(p, b"bin").await.unwrap(), v, "one value column: any bytes, separator included");
    assert_eq!(p.get(b"bin").await.unwrap().unwrap().flags, 0, "no flags column: flags 0");
}

pub async fn injection(cs: &Containers, peek: &dyn Peek, table: &str, select_c2: &str) {
    let c = cs.get("default").unwrap();
    set(c, b"victim", b"safe").await;
    let nasty: [&[u8]; 6] = [
        b"1' OR '1'='1",
        b"\"; DROP TABLE demo; --",
        b"'); DELETE FROM demo; --",
        b"` OR 1=1 #",
        b"x\\' OR 1=1 -- ",
        b"%_*",
    ];
    let before = peek.count(table).await;
    for (i, k) in nasty.iter().enumerate() {
        let v = format!("v{i}' OR ''='; DROP TABLE demo; --");
        set(c, k, v.as_bytes()).await;
        assert_eq!(val(c, k).await.unwrap(), v.as_bytes());
        assert_eq!(peek.one(select_c2, k).await.unwrap(), v.as_bytes(), "stored under exactly that key");
    }
    assert_eq!(peek.count(table).await, before + nasty.len() as i64);
    let rows = c.get_many(&nasty).await.unwrap();
    assert!(rows.iter().all(Option::is_some));
    assert_eq!(c.get(b"' OR '1'='1").await.unwrap(), None);
    assert_eq!(c.delete(b"1' OR '1'='1", 0).await.unwrap(), DeleteOutcome::Deleted);
    assert_eq!(c.delete(b"' OR 1=1 --", 0).await.unwrap(), DeleteOutcome::NotFound);
    assert_eq!(peek.count(table).await, before + nasty.len() as i64 - 1);
    assert_eq!(val(c, b"victim").await.unwrap(), b"safe");
}

pub async fn many(cs: &Containers) {
    let c = cs.get("default").unwrap();
    let keys: Vec<Vec<u8>> = (0..70).map(|i| format!("many{i}").into_bytes()).collect();
    for (i, k) in keys.iter().enumerate() {
        if i % 3 != 0 {
            set(c, k, format!("val{i}").as_bytes()).await;
        }
    }
    let mut ask: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    ask.push(b"many5");
    let rows = c.get_many(&ask).await.unwrap();
    assert_eq!(rows.len(), 71);
    for (i, r) in rows.iter().take(70).enumerate() {
        match r {
            Some(r) => assert_eq!(r.value, format!("val{i}").into_bytes()),
            None => assert_eq!(i % 3, 0, "key {i} missing"),
        }
    }
    assert_eq!(rows[70].as_ref().unwrap().value, b"val5");
}

pub async fn flush(cs: &Containers, peek: &dyn Peek) {
    let c = cs.get("plain").unwrap();
    set(c, b"f1", b"1").await;
    set(c, b"f2", b"2").await;
    c.flush().await.unwrap();
    assert_eq!(c.get(b"f1").await.unwrap(), None);
    assert_eq!(peek.count("plain").await, 0);
    set(c, b"f3", b"3").await;
    assert_eq!(val(c, b"f3").await.unwrap(), b"3");
}

/// `w_batch_size = 3`, `bk_commit_interval = 1`.
pub async fn batching(cs: &Containers, peek: &dyn Peek, select_c2: &str) {
    let c = cs.default_container();
    let commits0 = cs.stats().commits;
    set(c, b"b1", b"1").await;
    assert_eq!(peek.one(select_c2, b"b1").await, None, "not committed yet: other sessions do not see it");
    assert_eq!(val(c, b"b1").await.unwrap(), b"1", "read-your-writes through sqlcached");
    set(c, b"b2", b"2").await;
    set(c, b"b3", b"3").await;
    for k in [b"b1", b"b2", b"b3"] {
        assert!(peek.one(select_c2, k).await.is_some(), "committed after w_batch_size writes");
    }
    assert_eq!(cs.stats().commits, commits0 + 1);
    set(c, b"b4", b"4").await;
    assert_eq!(peek.one(select_c2, b"b4").await, None);
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_eq!(peek.one(select_c2, b"b4").await.unwrap(), b"4", "background commit after bk_commit_interval idle");
    set(c, b"b5", b"5").await;
    cs.commit_all().await.unwrap();
    assert_eq!(peek.one(select_c2, b"b5").await.unwrap(), b"5", "commit_all");
    assert_eq!(cs.stats().lost_writes, 0);
}

/// `w_batch_size = 1`: an acknowledged write is committed.
pub async fn unbatched(cs: &Containers, peek: &dyn Peek, select_c2: &str) {
    let c = cs.default_container();
    for i in 0..5 {
        let k = format!("u{i}");
        set(c, k.as_bytes(), b"v").await;
        assert_eq!(peek.one(select_c2, k.as_bytes()).await.unwrap(), b"v");
    }
}
