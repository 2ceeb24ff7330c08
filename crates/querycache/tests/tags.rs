//! Key tags of reads and the invalidations of writes.

mod common;

use common::{cache, exec, read, rows, session};
use querycache::{Invalidation, Plan, RowChange, Scope, Source, TableName, Tag};

fn tags(sql: &str) -> Vec<Tag> {
    let c = cache();
    let mut s = session(&c);
    match c.on_query(&mut s, sql.as_bytes()) {
        Plan::Cached { tags, .. } => tags.0,
        p => panic!("not cached: {sql}: {p:?}"),
    }
}

fn scope(sql: &str) -> Scope {
    let t = tags(sql);
    assert_eq!(t.len(), 1, "{sql}");
    assert_eq!(t[0].table, TableName::new("sbtest", "sbtest1"));
    t[0].scope.clone()
}

fn write(sql: &str) -> Vec<Invalidation> {
    let c = cache();
    let mut s = session(&c);
    match c.on_query(&mut s, sql.as_bytes()) {
        Plan::Write(v) => v,
        p => panic!("not a write: {sql}: {p:?}"),
    }
}

fn keys(k: &[i64]) -> Vec<Invalidation> {
    keys_by(k, RowChange::Any)
}

fn keys_by(k: &[i64], change: RowChange) -> Vec<Invalidation> {
    vec![Invalidation::Keys { db: "sbtest".into(), table: "sbtest1".into(), keys: k.to_vec(), values: vec![], change }]
}

fn set(cols: &[&str]) -> RowChange {
    RowChange::Update(cols.iter().map(|c| (*c).into()).collect())
}

fn table(t: &str) -> Invalidation {
    Invalidation::Table { db: "sbtest".into(), table: t.into() }
}

#[test]
fn sysbench_reads_are_tagged_by_key() {
    assert_eq!(scope("SELECT c FROM sbtest1 WHERE id=42"), Scope::Points(vec![42]));
    assert_eq!(scope("SELECT c FROM sbtest1 WHERE id BETWEEN 10 AND 109"), Scope::Range(10, 109));
    assert_eq!(scope("SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 10 AND 109"), Scope::Range(10, 109));
    assert_eq!(scope("SELECT c FROM sbtest1 WHERE id BETWEEN 10 AND 109 ORDER BY c"), Scope::Range(10, 109));
    assert_eq!(scope("SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 10 AND 109 ORDER BY c"), Scope::Range(10, 109));
}

#[test]
fn other_key_shapes() {
    assert_eq!(scope("SELECT c FROM sbtest1 WHERE id IN (3, 1, 2, 3)"), Scope::Points(vec![1, 2, 3]));
    assert_eq!(scope("SELECT c FROM sbtest1 WHERE 7 = sbtest1.id AND k > 3"), Scope::Points(vec![7]));
    // One-sided ranges are too wide for range tags; bounds on both sides intersect.
    assert_eq!(scope("SELECT c FROM sbtest1 WHERE id > 5"), Scope::Table);
    assert_eq!(scope("SELECT c FROM sbtest1 WHERE id <= -5"), Scope::Table);
    assert_eq!(scope("SELECT c FROM sbtest1 WHERE ID >= 5 AND id < 10"), Scope::Range(5, 9));
    // Not the key, not integers, OR, subqueries, joins: table level.
    assert_eq!(scope("SELECT c FROM sbtest1 WHERE k = 5"), Scope::Table);
    assert_eq!(scope("SELECT c FROM sbtest1 WHERE id = '5'"), Scope::Table);
    assert_eq!(scope("SELECT c FROM sbtest1 WHERE id = 5.0"), Scope::Table);
    assert_eq!(scope("SELECT c FROM sbtest1 WHERE id = 5 OR k = 1"), Scope::Table);
    assert_eq!(scope("SELECT c FROM sbtest1"), Scope::Table);
    let t = tags("SELECT c FROM sbtest1 WHERE id IN (SELECT id FROM t3 WHERE id = 1)");
    assert!(t.iter().all(|t| t.scope == Scope::Table) && t.len() == 2);
    // Joins: see keys.rs (each table bounded by its own conjuncts and join equalities).
    let t = tags("SELECT a.c FROM sbtest1 a, t2 b WHERE a.c = 1");
    assert!(t.iter().all(|t| t.scope == Scope::Table) && t.len() == 2);
}

#[test]
fn writes_invalidate_keys_or_tables() {
    assert_eq!(write("UPDATE sbtest1 SET k=k+1 WHERE id=5"), keys_by(&[5], set(&["k"])));
    assert_eq!(write("UPDATE sbtest1 SET c='x', K=2 WHERE id IN (5, 6)"), keys_by(&[5, 6], set(&["c", "k"])));
    assert_eq!(write("DELETE FROM sbtest1 WHERE id=5"), keys_by(&[5], RowChange::Delete));
    assert_eq!(write("INSERT INTO sbtest1 (id, k, c, pad) VALUES (5, 1, 'c', 'p'), (6, 1, 'c', 'p')"), keys(&[5, 6]));
    assert_eq!(write("UPDATE sbtest1 SET k=k+1 WHERE id BETWEEN 1 AND 3"), keys_by(&[1, 2, 3], set(&["k"])));
    // Assigning the key, no key predicate, auto-increment, REPLACE, ON DUPLICATE: table.
    assert_eq!(write("UPDATE sbtest1 SET id=id+1 WHERE id=5"), vec![table("sbtest1")]);
    assert_eq!(write("UPDATE sbtest1 SET k=1 WHERE k=5"), vec![table("sbtest1")]);
    assert_eq!(write("INSERT INTO sbtest1 (k, c, pad) VALUES (1, 'c', 'p')"), vec![table("sbtest1")]);
    assert_eq!(write("INSERT INTO sbtest1 (id, k) VALUES (0, 1)"), vec![table("sbtest1")]);
    assert_eq!(write("REPLACE INTO sbtest1 (id, k) VALUES (5, 1)"), vec![table("sbtest1")]);
    assert_eq!(
        write("INSERT INTO sbtest1 (id, k) VALUES (5, 1) ON DUPLICATE KEY UPDATE k = 2"),
        vec![table("sbtest1")]
    );
    assert_eq!(write("TRUNCATE TABLE sbtest1"), vec![table("sbtest1")]);
    assert_eq!(write("LOAD DATA INFILE '/tmp/x' INTO TABLE sbtest1"), vec![table("sbtest1")]);
    let multi = write("UPDATE sbtest1 a JOIN t3 b ON a.id = b.id SET a.k = 1 WHERE b.id = 5");
    assert_eq!(multi, vec![table("sbtest1"), table("t3")]);
    assert_eq!(
        write("DELETE FROM other.t1 WHERE id = 3"),
        vec![Invalidation::Keys {
            db: "other".into(),
            table: "t1".into(),
            keys: vec![3],
            values: vec![],
            change: RowChange::Delete
        }]
    );
    // Unparseable and unknown statements: everything.
    assert_eq!(write("UPDATE sbtest1 SET k = = 1 WHERE id = 1"), vec![Invalidation::All]);
    assert_eq!(write("FROBNICATE sbtest1"), vec![Invalidation::All]);
    assert_eq!(write("CALL proc()"), vec![Invalidation::All]);
    assert_eq!(write("ALTER TABLE sbtest1 ADD COLUMN z INT"), vec![Invalidation::All]);
    assert_eq!(write("DROP DATABASE other"), vec![Invalidation::Database { db: "other".into() }]);
    assert_eq!(write("GRANT SELECT ON sbtest.* TO u"), vec![Invalidation::All]);
}

#[test]
fn update_of_one_row_keeps_other_rows_results() {
    let c = cache();
    let mut s = session(&c);
    for id in 1..=10 {
        read(&c, &mut s, &format!("SELECT c FROM sbtest1 WHERE id={id}"), &rows("x"));
    }
    read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 3", &rows("r1"));
    read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id BETWEEN 6 AND 9", &rows("r2"));
    read(&c, &mut s, "SELECT MAX(c) FROM sbtest1", &rows("n"));
    read(&c, &mut s, "SELECT COUNT(*) FROM sbtest1", &rows("n"));
    assert_eq!(c.stats().inserts, 14);
    assert!(matches!(exec(&c, &mut s, "UPDATE sbtest1 SET c=CONCAT(c, 'x') WHERE id=5", 0x0002), Plan::Write(_)));
    for id in 1..=10 {
        let (_, hit) = read(&c, &mut s, &format!("SELECT c FROM sbtest1 WHERE id={id}"), &rows("y"));
        assert_eq!(hit, id != 5, "id {id}");
    }
    assert!(read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 3", &rows("r1")).1);
    assert!(read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id BETWEEN 6 AND 9", &rows("r2")).1);
    assert!(!read(&c, &mut s, "SELECT MAX(c) FROM sbtest1", &rows("n")).1, "table-level result dropped");
    // ... unless it names no column the UPDATE assigns.
    assert!(read(&c, &mut s, "SELECT COUNT(*) FROM sbtest1", &rows("n")).1, "column-disjoint result kept");
    // A binlog row change inside a range drops the range.
    c.invalidate(
        &Invalidation::Keys {
            db: "sbtest".into(),
            table: "sbtest1".into(),
            keys: vec![7],
            values: vec![],
            change: querycache::RowChange::Any,
        },
        Source::Binlog,
    );
    assert!(!read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id BETWEEN 6 AND 9", &rows("r2")).1);
    assert!(read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 3", &rows("r1")).1);
    assert!(!read(&c, &mut s, "SELECT c FROM sbtest1 WHERE id=7", &rows("x")).1);
    let st = c.stats();
    assert_eq!(st.invalidations_binlog_rows, 1);
    assert_eq!(st.invalidations_proxy, 1);
}

#[test]
fn table_database_and_all_invalidations() {
    let c = cache();
    let mut s = session(&c);
    let q = ["SELECT c FROM sbtest1 WHERE id=1", "SELECT c FROM t3 WHERE id=1", "SELECT c FROM other.t1 WHERE id=1"];
    let fill = |s: &mut _| {
        for sql in q {
            read(&c, s, sql, &rows("x"));
        }
    };
    let hits = |s: &mut _| q.map(|sql| read(&c, s, sql, &rows("x")).1);
    fill(&mut s);
    c.invalidate(&Invalidation::Table { db: "sbtest".into(), table: "t3".into() }, Source::Proxy);
    assert_eq!(hits(&mut s), [true, false, true]);
    c.invalidate(&Invalidation::Database { db: "sbtest".into() }, Source::Proxy);
    assert_eq!(hits(&mut s), [false, false, true]);
    c.invalidate(&Invalidation::All, Source::Proxy);
    assert_eq!(hits(&mut s), [false, false, false]);
    assert_eq!(c.stats().invalidations_all, 1);
    // A table-level change from the binlog (a keyless table's rows, a table not known
    // yet) keeps the table's schema: a steady writer must not keep it unknown. DDL is
    // forgotten by the proxy when its binlog change comes (mysql-proxy's feed.rs).
    assert!(c.schema().get("sbtest", "t3").is_some());
    c.invalidate(&Invalidation::Table { db: "sbtest".into(), table: "t3".into() }, Source::Binlog);
    assert!(c.schema().get("sbtest", "t3").is_some());
    c.schema().forget("sbtest", "t3");
    assert!(c.schema().get("sbtest", "t3").is_none());
    assert!(c.schema().wanted().is_empty());
    assert!(!common::is_cached(&c, &mut s, "SELECT c FROM t3"));
    assert_eq!(c.schema().wanted(), vec![TableName::new("sbtest", "t3")]);
}

#[test]
fn multi_statement_writes_apply_at_the_end_of_the_reply() {
    let c = cache();
    let mut w = session(&c);
    let mut r = session(&c);
    let q = "SELECT c FROM sbtest1 WHERE id = 5";
    let p = c.on_query(&mut w, b"SELECT 1; UPDATE sbtest1 SET k = 1 WHERE id = 5");
    assert_eq!(p, Plan::Write(vec![table("sbtest1")]));
    c.on_reply(&mut w, 0x000a, true); // first result: more results follow
    read(&c, &mut r, q, &rows("old")); // cached while the UPDATE has not run yet
    assert!(read(&c, &mut r, q, &rows("old")).1);
    c.on_reply(&mut w, 0x0002, true); // the UPDATE's OK ends the reply
    assert!(!read(&c, &mut r, q, &rows("new")).1);
}
