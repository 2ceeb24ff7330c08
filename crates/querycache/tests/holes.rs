//! The analysis holes of issue 17, one test each: executable comments by the backend's
//! version, CTE scoping, statements whose effects cannot be bounded, side effects of
//! triggers and cascades, sql_mode's lexical flags, prepared statements' database.

mod common;

use common::{cache, exec, is_cached, read, rows, session};
use querycache::{EffectsBuilder, Invalidation, Plan, TableName};

fn tables_of(p: &Plan) -> Vec<String> {
    match p {
        Plan::Cached { tags, .. } => tags.0.iter().map(|t| format!("{}.{}", t.table.db, t.table.table)).collect(),
        _ => panic!("not a cached read: {p:?}"),
    }
}

fn invs(p: &Plan) -> &[Invalidation] {
    match p {
        Plan::Write(v) => v,
        _ => panic!("not a write: {p:?}"),
    }
}

#[test]
fn versioned_comments_follow_the_backend_version() {
    let c = cache();
    c.set_backend_version("5.5.5-10.11.6-MariaDB-0+deb12u1");
    let mut s = session(&c);
    // Skipped by 10.11: the WHERE is a comment, the read covers the whole table.
    let p = c.on_query(&mut s, b"SELECT id FROM sbtest1 /*!999999 WHERE id = 1 */ ORDER BY id");
    let Plan::Cached { tags, .. } = &p else { panic!("{p:?}") };
    assert_eq!(tags.0[0].scope, querycache::Scope::Table);
    // Run by 10.11: the WHERE narrows to key 1.
    let p = c.on_query(&mut s, b"SELECT id FROM sbtest1 /*!100000 WHERE id = 1 */");
    let Plan::Cached { tags, .. } = &p else { panic!("{p:?}") };
    assert_eq!(tags.0[0].scope, querycache::Scope::Points(vec![1]));
    // MySQL 5.7+ versions are comments to MariaDB, /*M! and unversioned /*! are code.
    let p = c.on_query(&mut s, b"SELECT id FROM sbtest1 /*!50700 WHERE id = 1 */");
    let Plan::Cached { tags, .. } = &p else { panic!("{p:?}") };
    assert_eq!(tags.0[0].scope, querycache::Scope::Table);
    for sql in ["SELECT id FROM sbtest1 /*M!50700 WHERE id = 1 */", "SELECT id FROM sbtest1 /*! WHERE id = 1 */"] {
        let Plan::Cached { tags, .. } = c.on_query(&mut s, sql.as_bytes()) else { panic!("{sql}") };
        assert_eq!(tags.0[0].scope, querycache::Scope::Points(vec![1]), "{sql}");
    }
    // A write hidden in a skipped comment writes nothing; one in a run comment does.
    assert!(matches!(c.on_query(&mut s, b"SELECT 1 FROM sbtest1 /*!100000 ; DELETE FROM t3 */"), Plan::Write(_)));
    // MySQL: /*M! is a comment.
    c.set_backend_version("8.0.36");
    let Plan::Cached { tags, .. } = c.on_query(&mut s, b"SELECT id FROM sbtest1 /*M!50700 WHERE id = 1 */") else {
        panic!()
    };
    assert_eq!(tags.0[0].scope, querycache::Scope::Table);
}

#[test]
fn cte_names_are_scoped() {
    let c = cache();
    let mut s = session(&c);
    let p = c.on_query(
        &mut s,
        b"SELECT (WITH t3 AS (SELECT 5 AS v) SELECT v FROM t3) AS a, (SELECT MAX(id) FROM t3) AS b FROM sbtest1",
    );
    let mut t = tables_of(&p);
    t.sort();
    assert_eq!(t, ["sbtest.sbtest1", "sbtest.t3"]);
    // Non-recursive: a definition sees only the CTEs before it; its own name is the table.
    let p = c.on_query(&mut s, b"WITH t3 AS (SELECT id FROM t3) SELECT * FROM t3");
    assert_eq!(tables_of(&p), ["sbtest.t3"]);
    let p = c.on_query(&mut s, b"WITH a AS (SELECT id FROM sbtest1), b AS (SELECT id FROM a) SELECT * FROM b");
    assert_eq!(tables_of(&p), ["sbtest.sbtest1"]);
}

#[test]
fn unbounded_statements_invalidate_everything_and_stop_caching() {
    for sql in [
        "CALL p(1)",
        "EXECUTE IMMEDIATE 'CREATE TEMPORARY TABLE t3 (id INT)'",
        "EXECUTE s USING @a",
        "SELECT touch(id) FROM sbtest1",
        "DO shop.touch(1)",
        "SET @x = touch(2)",
        "INSERT INTO t3 (id) VALUES (touch(3))",
        "CREATE TEMPORARY TABLE x (id INT); UPDATE t3 SET c = 1 WHERE id = 1",
        "SET STATEMENT max_statement_time = 1 FOR CALL p()",
    ] {
        let c = cache();
        let mut s = session(&c);
        assert!(is_cached(&c, &mut s, "SELECT c FROM sbtest1 WHERE id = 1"));
        let p = exec(&c, &mut s, sql, 0x0002);
        assert_eq!(invs(&p), [Invalidation::All], "{sql}");
        assert!(s.caching_disabled().is_some(), "{sql}");
    }
    // A builtin or a name that is no stored function is not that.
    let c = cache();
    let mut s = session(&c);
    assert!(is_cached(&c, &mut s, "SELECT UPPER(c) FROM sbtest1 WHERE id = 1"));
    exec(&c, &mut s, "INSERT INTO t3 (id) VALUES (1)", 0x0002);
    assert!(s.caching_disabled().is_none());
}

#[test]
fn analyze_runs_the_statement() {
    let c = cache();
    let mut s = session(&c);
    let p = exec(&c, &mut s, "ANALYZE UPDATE t3 SET c = 'x' WHERE id = 2", 0x0002);
    assert_eq!(
        invs(&p),
        [Invalidation::Keys {
            db: "sbtest".into(),
            table: "t3".into(),
            keys: vec![2],
            values: vec![],
            change: querycache::RowChange::Update(vec!["c".into()])
        }]
    );
    let p = exec(&c, &mut s, "ANALYZE FORMAT=JSON DELETE FROM sbtest1", 0x0002);
    assert_eq!(invs(&p), [Invalidation::Table { db: "sbtest".into(), table: "sbtest1".into() }]);
    assert!(matches!(exec(&c, &mut s, "ANALYZE TABLE t3", 0x0002), Plan::Forward { .. }));
}

#[test]
fn triggers_and_cascades_invalidate_what_they_change() {
    let c = cache();
    let mut b = EffectsBuilder::default();
    b.trigger(TableName::new("sbtest", "t3"), "sbtest", "BEGIN UPDATE sbtest1 SET k = k + 1 WHERE id = NEW.id; END");
    b.cascade(TableName::new("other", "t1"), TableName::new("sbtest", "t3"));
    c.schema().set_effects(b.build());
    let mut s = session(&c);
    let q = "SELECT c FROM sbtest1 WHERE id = 7";
    read(&c, &mut s, q, &rows("a"));
    assert!(read(&c, &mut s, q, &rows("a")).1);
    exec(&c, &mut s, "UPDATE t3 SET c = 'x' WHERE id = 1", 0x0002);
    assert!(!read(&c, &mut s, q, &rows("a")).1, "the trigger's table is invalidated before the OK");
    // other.t1 cascades to t3, whose trigger writes sbtest1.
    read(&c, &mut s, q, &rows("a"));
    exec(&c, &mut s, "DELETE FROM other.t1 WHERE id = 1", 0x0002);
    assert!(!read(&c, &mut s, q, &rows("a")).1, "cascade then trigger");
}

#[test]
fn no_backslash_escapes_lexes_writes_right() {
    let c = cache();
    let mut s = session(&c);
    exec(&c, &mut s, "SET sql_mode = 'NO_BACKSLASH_ESCAPES'", 0x0002);
    assert!(s.caching_disabled().is_some());
    // Under NO_BACKSLASH_ESCAPES the string is 'a\' and the statement deletes from t3.
    let p = exec(&c, &mut s, "SELECT 'a\\' FROM sbtest1; DELETE FROM t3 WHERE id = 1 -- '", 0x0002);
    assert_eq!(invs(&p), [Invalidation::Table { db: "sbtest".into(), table: "t3".into() }]);
    // Set to an expression: unknown lexing, every write invalidates everything.
    let mut s = session(&c);
    exec(&c, &mut s, "SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')", 0x0002);
    let p = exec(&c, &mut s, "UPDATE t3 SET c = 'a\\' WHERE id = 1", 0x0002);
    assert_eq!(invs(&p), [Invalidation::All]);
    // A server whose global sql_mode has it: new sessions start with it.
    c.set_global_sql_mode("STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES");
    let mut s = session(&c);
    let p = exec(&c, &mut s, "SELECT 'a\\' FROM sbtest1; DELETE FROM t3 WHERE id = 1 -- '", 0x0002);
    assert_eq!(invs(&p), [Invalidation::Table { db: "sbtest".into(), table: "t3".into() }]);
}

#[test]
fn prepared_statements_key_on_their_database() {
    let c = cache();
    let id = vec![querycache::PkColumn::int("id")];
    c.schema().set_table("other", "sbtest1", querycache::TableInfo::base(id));
    let mut s = session(&c);
    let in_sbtest = c.prepare(&s, b"SELECT c FROM sbtest1 WHERE id = ?");
    exec(&c, &mut s, "USE other", 0x0002);
    let in_other = c.prepare(&s, b"SELECT c FROM sbtest1 WHERE id = ?");
    let params = [querycache::Param::Int(1)];
    let raw = [0u8, 1, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0];
    let Plan::Cached { key: ka, tags: ta } = c.on_execute(&mut s, &in_sbtest, &raw, &params, true) else { panic!() };
    let Plan::Cached { key: kb, tags: tb } = c.on_execute(&mut s, &in_other, &raw, &params, true) else { panic!() };
    assert_eq!(&*ta.0[0].table.db, "sbtest", "resolved where it was prepared");
    assert_eq!(&*tb.0[0].table.db, "other");
    assert_ne!(ka.bytes(), kb.bytes(), "same text, same session: different entries");
}

#[test]
fn plain_inserts_call_nothing_before_functions_are_known() {
    // Before the metadata task has loaded the stored functions, any non-builtin call
    // counts as one (and turns caching off for good): `VALUES (` must not look like a call.
    let c = querycache::QueryCache::new(querycache::Config {
        size: 1 << 24,
        limit: 1 << 20,
        mode: querycache::CacheType::On,
        ..Default::default()
    });
    let mut s = session(&c);
    for sql in [
        "INSERT INTO t3 (id, c) VALUES (1, 'a')",
        "INSERT INTO t3 VALUES (2, 'b') ON DUPLICATE KEY UPDATE c = VALUES(c)",
    ] {
        exec(&c, &mut s, sql, 0x0002);
        assert!(s.caching_disabled().is_none(), "{sql}");
    }
}
