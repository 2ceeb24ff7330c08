use super::*;
use proptest::prelude::*;

fn t(schema: Option<&str>, table: &str) -> Named {
    Named { schema: schema.map(str::to_string), table: table.to_string() }
}

#[test]
fn reads_writes_and_the_rest() {
    assert_eq!(
        analyze("SELECT abalance FROM pgbench_accounts WHERE aid = 42"),
        vec![Statementish::Read {
            tables: vec![t(None, "pgbench_accounts")],
            equals: vec![("aid".into(), "42".into())]
        }]
    );
    assert_eq!(
        analyze("select * from Shop.\"Users\" u where u.email = 'a@x' and u.id > 3"),
        vec![Statementish::Read {
            tables: vec![t(Some("shop"), "Users")],
            equals: vec![("email".into(), "a@x".into())]
        }]
    );
    for (sql, why) in [
        ("SELECT now() FROM t", Why::Volatile),
        ("SELECT * FROM t WHERE d < now()", Why::Volatile),
        ("SELECT random() FROM t", Why::Volatile),
        ("SELECT nextval('s') FROM t", Why::Volatile),
        ("SELECT current_user FROM t", Why::Volatile),
        ("SELECT * FROM t FOR UPDATE", Why::Locking),
        ("SELECT * FROM t FOR SHARE", Why::Locking),
        ("SELECT * INTO x FROM t", Why::Locking),
        ("SELECT 1", Why::Source),
        ("SELECT * FROM (SELECT 1) s", Why::Source),
        ("SELECT * FROM t WHERE id IN (SELECT id FROM u)", Why::Source),
        ("SELECT 1 UNION SELECT 2", Why::Shape),
        ("WITH x AS (SELECT 1) SELECT * FROM x", Why::Shape),
    ] {
        assert_eq!(analyze(sql), vec![Statementish::Uncacheable(why)], "{sql}");
    }
    assert_eq!(analyze("UPDATE t SET a = 1 WHERE id = 2"), vec![Statementish::Write(vec![t(None, "t")])]);
    assert_eq!(analyze("DELETE FROM s.t"), vec![Statementish::Write(vec![t(Some("s"), "t")])]);
    assert_eq!(analyze("INSERT INTO t SELECT * FROM u"), vec![Statementish::Write(vec![t(None, "t"), t(None, "u")])]);
    assert_eq!(analyze("TRUNCATE a, b"), vec![Statementish::Write(vec![t(None, "a"), t(None, "b")])]);
    assert_eq!(analyze("SET search_path = s, public"), vec![Statementish::Setting]);
    assert_eq!(analyze("BEGIN; COMMIT"), vec![Statementish::Neutral, Statementish::Neutral]);
    for sql in
        ["CREATE TEMP TABLE x (a int)", "GRANT SELECT ON t TO u", "ALTER TABLE t ADD c int", "DO $$ BEGIN END $$"]
    {
        assert_eq!(analyze(sql), vec![Statementish::Other], "{sql}");
    }
    // Unparsable: a read is never cached, anything else may change anything.
    assert_eq!(analyze("SELECT * FROM t WHERE ("), vec![Statementish::Uncacheable(Why::Unparsed)]);
    assert_eq!(analyze("VACUUM (FREEZE) t ???"), vec![Statementish::Other]);
}

proptest! {
    /// Any text: no panic, and a read is only ever cacheable if it names a table.
    #[test]
    fn never_panics(sql in "[a-zA-Z0-9 ,;()'=*.<>\"$-]{0,80}") {
        for s in analyze(&sql) {
            if let Statementish::Read { tables, .. } = s {
                prop_assert!(!tables.is_empty());
            }
        }
    }
}

#[test]
fn read_only_begins() {
    for sql in [
        "BEGIN READ ONLY",
        "begin read only",
        "START TRANSACTION READ ONLY",
        "BEGIN ISOLATION LEVEL SERIALIZABLE, READ ONLY",
    ] {
        assert!(begins_read_only(sql), "{sql}");
    }
    for sql in ["BEGIN", "BEGIN READ WRITE", "START TRANSACTION", "SELECT 1", "BEGIN; UPDATE t SET a = 1", "bogus"] {
        assert!(!begins_read_only(sql), "{sql}");
    }
}
