//! Row and table changes from a real MariaDB 10.11: values, key positions, update images,
//! transactions, DDL, statement-format DML, MINIMAL/NO_LOG metadata, foreign-key cascades.

mod common;

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use binlog::{Change, RowsKind, Value};
use common::*;

const T: Duration = Duration::from_secs(10);

fn b(s: &str) -> Value {
    Value::Bytes(s.as_bytes().to_vec())
}

/// The next Rows change of `table`: (column names, key positions, rows).
fn rows_of(ch: &Changes, t: &str) -> (Vec<String>, Vec<usize>, Vec<Vec<Value>>) {
    let (cols, pk, rows, _) = rows_kind(ch, t);
    (cols, pk, rows)
}

/// [`rows_of`] and what the event did.
fn rows_kind(ch: &Changes, t: &str) -> (Vec<String>, Vec<usize>, Vec<Vec<Value>>, RowsKind) {
    match ch.until(T, |c| is_rows_of(c, t)).pop().unwrap() {
        Change::Rows { schema, rows, db, kind, .. } => {
            assert_eq!(db, "shop");
            (schema.columns.clone(), schema.primary_key.clone(), rows, kind)
        }
        _ => unreachable!(),
    }
}

fn table(t: &str) -> Change {
    Change::Table { db: "shop".into(), table: t.into() }
}

#[test]
fn rows_tables_and_metadata() {
    if !have_mariadb() {
        return;
    }
    let db = MariaDb::start();
    let mut sql = Sql::connect(&db);
    sql.run(
        "CREATE DATABASE shop; CREATE TABLE shop.ints (id INT PRIMARY KEY, v VARCHAR(20));
         CREATE TABLE shop.ubig (id BIGINT UNSIGNED PRIMARY KEY, n INT);
         CREATE TABLE shop.comp (a INT, b VARCHAR(10), v INT, PRIMARY KEY (b, a))",
    );
    let (follower, ch) = db.follow_connected(T);

    // int + varchar, multi-row insert, update (before and after image), delete.
    sql.run("INSERT INTO shop.ints VALUES (1, 'one'), (2, 'two')");
    let (cols, pk, rows, kind) = rows_kind(&ch, "ints");
    assert_eq!((cols, pk, kind), (vec!["id".to_string(), "v".to_string()], vec![0], RowsKind::Insert));
    assert_eq!(rows, vec![vec![Value::Int(1), b("one")], vec![Value::Int(2), b("two")]]);
    sql.run("UPDATE shop.ints SET v = 'uno' WHERE id = 1");
    let (_, _, rows, kind) = rows_kind(&ch, "ints");
    assert_eq!(rows, vec![vec![Value::Int(1), b("one")], vec![Value::Int(1), b("uno")]]);
    assert_eq!(kind, RowsKind::Update(vec![1]), "the columns whose images differ");
    sql.run("UPDATE shop.ints SET v = CONCAT(v, '!')");
    let r = rows_of(&ch, "ints").2;
    assert_eq!(r.len(), 4, "two rows, before and after each: {r:?}");
    sql.run("DELETE FROM shop.ints WHERE id = 2");
    let (_, _, rows, kind) = rows_kind(&ch, "ints");
    assert_eq!((rows, kind), (vec![vec![Value::Int(2), b("two!")]], RowsKind::Delete));

    // bigint unsigned beyond i64.
    sql.run("INSERT INTO shop.ubig VALUES (18446744073709551615, -5)");
    assert_eq!(rows_of(&ch, "ubig").2, vec![vec![Value::UInt(u64::MAX), Value::Int(-5)]]);

    // Composite key (b, a): positions in key order.
    sql.run("INSERT INTO shop.comp VALUES (1, 'x', 10), (2, 'y', 20)");
    let (cols, pk, rows) = rows_of(&ch, "comp");
    assert_eq!((cols.len(), pk), (3, vec![1, 0]));
    assert_eq!(rows[1], vec![Value::Int(2), b("y"), Value::Int(20)]);
    sql.run("UPDATE shop.comp SET v = 11 WHERE a = 1 AND b = 'x'");
    assert_eq!(
        rows_of(&ch, "comp").2,
        vec![vec![Value::Int(1), b("x"), Value::Int(10)], vec![Value::Int(1), b("x"), Value::Int(11)]]
    );

    // A transaction's rows arrive at COMMIT, not before.
    sql.run("BEGIN; INSERT INTO shop.ints VALUES (10, 'ten'); UPDATE shop.ubig SET n = 6");
    let early = data(ch.drain(Duration::from_millis(500)));
    assert!(early.is_empty(), "changes before COMMIT: {early:?}");
    sql.run("COMMIT");
    assert_eq!(rows_of(&ch, "ints").2, vec![vec![Value::Int(10), b("ten")]]);
    assert_eq!(rows_of(&ch, "ubig").2.len(), 2);

    // Statement-format DML: the whole table.
    sql.run("SET SESSION binlog_format = 'STATEMENT'; UPDATE shop.ints SET v = 'x' WHERE id = 10");
    assert_eq!(ch.until(T, |c| matches!(c, Change::Table { .. })).pop().unwrap(), table("ints"));
    sql.run("SET SESSION binlog_format = 'ROW'");

    // DDL: TRUNCATE / ALTER / DROP name their tables; rows after ALTER use the new definition.
    sql.run("TRUNCATE TABLE shop.ints");
    assert_eq!(ch.until(T, |c| matches!(c, Change::Table { .. })).pop().unwrap(), table("ints"));
    sql.run("ALTER TABLE shop.comp ADD COLUMN w INT");
    assert_eq!(ch.until(T, |c| matches!(c, Change::Table { .. })).pop().unwrap(), table("comp"));
    sql.run("INSERT INTO shop.comp VALUES (3, 'z', 30, 40)");
    let (cols, pk, rows) = rows_of(&ch, "comp");
    assert_eq!((cols[3].as_str(), pk), ("w", vec![1, 0]));
    assert_eq!(rows, vec![vec![Value::Int(3), b("z"), Value::Int(30), Value::Int(40)]]);
    sql.run("USE shop; DROP TABLE ubig");
    assert_eq!(ch.until(T, |c| matches!(c, Change::Table { .. })).pop().unwrap(), table("ubig"));

    // MINIMAL metadata (no column names, no key): names and key from information_schema.
    sql.run("SET GLOBAL binlog_row_metadata = 'MINIMAL'");
    let mut sql2 = Sql::connect(&db);
    sql2.run("INSERT INTO shop.comp VALUES (4, 'q', 1, 2)");
    let (cols, pk, rows) = rows_of(&ch, "comp");
    assert_eq!((cols, pk), (vec!["a".into(), "b".into(), "v".into(), "w".into()], vec![1, 0]));
    assert_eq!(rows, vec![vec![Value::Int(4), b("q"), Value::Int(1), Value::Int(2)]]);
    // NO_LOG (no signedness either): unsigned columns still read as unsigned.
    sql2.run(
        "SET GLOBAL binlog_row_metadata = 'NO_LOG'; CREATE TABLE shop.u8 (id TINYINT UNSIGNED PRIMARY KEY, n INT)",
    );
    let mut sql3 = Sql::connect(&db);
    sql3.run("INSERT INTO shop.u8 VALUES (200, -1)");
    let (cols, pk, rows) = rows_of(&ch, "u8");
    assert_eq!((cols.len(), pk), (2, vec![0]));
    assert_eq!(rows, vec![vec![Value::UInt(200), Value::Int(-1)]]);
    sql3.run("SET GLOBAL binlog_row_metadata = 'FULL'");

    // ON DELETE CASCADE: InnoDB changes the child rows without logging them.
    let mut sql4 = Sql::connect(&db);
    sql4.run(
        "CREATE TABLE shop.parent (id INT PRIMARY KEY) ENGINE=InnoDB;
         CREATE TABLE shop.child (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES shop.parent (id) ON DELETE CASCADE) ENGINE=InnoDB;
         INSERT INTO shop.parent VALUES (1); INSERT INTO shop.child VALUES (7, 1)",
    );
    rows_of(&ch, "child");
    sql4.run("DELETE FROM shop.parent WHERE id = 1");
    let seen = ch.until(T, |c| *c == table("child") || is_rows_of(c, "child"));
    eprintln!("cascade delete gave: {seen:?}");
    let stats = follower.stats();
    assert!(stats.connected && stats.events > 10, "{stats:?}");
    assert_eq!(stats.position.as_ref().unwrap().file, "binlog.000001");
    eprintln!("stats: {stats:?}");
}

/// Every column type MariaDB logs, with NULLs, partial images (MINIMAL row image) and
/// updates: images.rs decodes them value by value, and a debug build (this test) checks
/// every event against mysql_common's own decoding (decode.rs panics on a difference).
/// (Negative `TIME(1)`/`TIME(2)` values with a fraction: see the next test.)
#[test]
fn every_column_type_decodes_as_mysql_common_does() {
    if !have_mariadb() {
        return;
    }
    let db = MariaDb::start();
    let mut sql = Sql::connect(&db);
    sql.run(
        "CREATE DATABASE shop; CREATE TABLE shop.types (id INT PRIMARY KEY,
           ti TINYINT, uti TINYINT UNSIGNED, si SMALLINT, usi SMALLINT UNSIGNED, mi MEDIUMINT,
           umi MEDIUMINT UNSIGNED, bi BIGINT, ubi BIGINT UNSIGNED, de DECIMAL(20,6), fl FLOAT,
           do DOUBLE, da DATE, dt DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(2), yr YEAR,
           ch CHAR(5), vc VARCHAR(300), bn BINARY(4), vb VARBINARY(10), tx TEXT, bl BLOB,
           en ENUM('a','b'), st SET('x','y'), bt BIT(10), js JSON, lt LONGTEXT)",
    );
    let (follower, ch) = db.follow_connected(T);
    sql.run(
        "INSERT INTO shop.types VALUES (1, -1, 255, -300, 65535, -8000000, 16777215, -9000000000,
           18446744073709551615, -12345.678901, 1.5, -2.25, '2024-02-29', '2024-02-29 12:34:56.123456',
           '2024-02-29 12:34:56.789', '-838:59:59', 2024, 'abc', REPEAT('v', 300), 'ab',
           x'00ff', 'text', x'010203', 'b', 'x,y', b'1010101010', '{\"k\": [1, 2]}', 'long'),
         (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    );
    let (_, _, rows) = rows_of(&ch, "types");
    assert_eq!(rows.len(), 2);
    let num = |v: &Value| match v {
        Value::Int(i) => *i as i128,
        Value::UInt(u) => *u as i128,
        v => panic!("not an integer: {v:?}"),
    };
    assert_eq!((num(&rows[0][2]), num(&rows[0][8])), (255, u64::MAX as i128), "{:?}", rows[0]);
    assert!(rows[1][1..].iter().all(|v| *v == Value::Null), "{:?}", rows[1]);
    sql.run("UPDATE shop.types SET vc = 'short', js = NULL, uti = 7 WHERE id = 1");
    let (_, _, rows) = rows_of(&ch, "types");
    assert_eq!(rows.len(), 2);
    // MINIMAL: the after image holds only the changed column, not the key: decoded (and
    // compared), then reported table-level.
    sql.run("SET SESSION binlog_row_image = 'MINIMAL'; UPDATE shop.types SET de = 1.5 WHERE id = 2");
    ch.until(T, |c| *c == table("types"));
    sql.run("SET SESSION binlog_row_image = 'FULL'");
    sql.run("DELETE FROM shop.types");
    let (_, _, rows) = rows_of(&ch, "types");
    assert_eq!(rows.len(), 2);
    drop(follower);
}

/// Negative times with a fraction, in each fraction width. mysql_common 0.37.3 overflows
/// on `TIME(1)`/`TIME(2)` ones (its fraction is a `u32`: a panic in a debug build, a wrong
/// value in release); images.rs decodes those itself, as MySQL does, so a TIME key names
/// the row it should.
#[test]
fn negative_times_with_fractions_decode_as_mariadb_stores_them() {
    if !have_mariadb() {
        return;
    }
    let db = MariaDb::start();
    let mut sql = Sql::connect(&db);
    sql.run("CREATE DATABASE shop; CREATE TABLE shop.times (id INT PRIMARY KEY, t1 TIME(1), t2 TIME(2), t4 TIME(4), t6 TIME(6))");
    let (follower, ch) = db.follow_connected(T);
    sql.run(
        "INSERT INTO shop.times VALUES (1, '-00:00:01.5', '-838:59:58.99', '-00:00:00.0001', '-01:02:03.000004'),
           (2, '12:34:56.7', '-00:00:00.01', '-10:00:00.5', '838:59:59'), (3, '-00:00:01', '-00:00:01', NULL, '00:00:00')",
    );
    let (_, _, rows) = rows_of(&ch, "times");
    let text = |v: &Value| match v {
        Value::Other(s) => s.clone(),
        Value::Null => "NULL".into(),
        v => panic!("not a time: {v:?}"),
    };
    let got: Vec<Vec<String>> = rows.iter().map(|r| r[1..].iter().map(text).collect()).collect();
    assert_eq!(
        got,
        [
            ["-00:00:01.500000", "-838:59:58.990000", "-00:00:00.000100", "-01:02:03.000004"],
            ["12:34:56.700000", "-00:00:00.010000", "-10:00:00.500000", "838:59:59.000000"],
            ["-00:00:01.000000", "-00:00:01.000000", "NULL", "00:00:00.000000"],
        ]
    );
    drop(follower);
}

/// A panic while following (here the sink's own, on the first row change of `shop.boom`)
/// does not end the follower thread: everything is invalidated (`All`, with the panic's
/// message), the stream starts again from the end of the binlog, and later changes arrive.
#[test]
fn a_panic_while_following_invalidates_everything_and_follows_on() {
    if !have_mariadb() {
        return;
    }
    let db = MariaDb::start();
    let mut sql = Sql::connect(&db);
    sql.run("CREATE DATABASE shop; CREATE TABLE shop.boom (id INT PRIMARY KEY); CREATE TABLE shop.calm (id INT PRIMARY KEY)");
    let fired = Arc::new(AtomicBool::new(false));
    let once = fired.clone();
    let (follower, ch) = db.follow_through(move |c| {
        if is_rows_of(c, "boom") && !once.swap(true, SeqCst) {
            panic!("the sink fails once");
        }
    });
    ch.until(T, |c| *c == Change::Connected);
    sql.run("INSERT INTO shop.boom VALUES (1)");
    ch.until(T, |c| matches!(c, Change::All { reason } if reason.contains("the sink fails once")));
    ch.until(T, |c| *c == Change::Connected);
    assert!(fired.load(SeqCst));
    sql.run("INSERT INTO shop.calm VALUES (1)");
    let (_, _, rows) = rows_of(&ch, "calm");
    assert_eq!(rows.len(), 1);
    assert!(follower.stats().connected);
    drop(follower);
}

/// MariaDB's `SET STATEMENT var = value FOR <statement>` is logged with its prefix: the
/// statement after FOR is what changed (a DDL, or DML in statement format), not a SET.
#[test]
fn set_statement_for_names_what_its_statement_changes() {
    if !have_mariadb() {
        return;
    }
    let db = MariaDb::start();
    let mut sql = Sql::connect(&db);
    sql.run("CREATE DATABASE shop; CREATE TABLE shop.a (id INT PRIMARY KEY, v INT); CREATE TABLE shop.b (id INT PRIMARY KEY)");
    let (follower, ch) = db.follow_connected(T);
    sql.run("SET STATEMENT max_statement_time = 100 FOR ALTER TABLE shop.a ADD COLUMN w INT");
    assert_eq!(ch.until(T, |c| matches!(c, Change::Table { .. })).pop().unwrap(), table("a"));
    sql.run("SET SESSION binlog_format = 'STATEMENT'");
    sql.run("SET STATEMENT lock_wait_timeout = 5 FOR UPDATE shop.a SET v = 1");
    assert_eq!(ch.until(T, |c| matches!(c, Change::Table { .. })).pop().unwrap(), table("a"));
    sql.run("SET SESSION binlog_format = 'ROW'");
    sql.run("SET STATEMENT max_statement_time = 100 FOR DROP TABLE shop.b");
    assert_eq!(ch.until(T, |c| matches!(c, Change::Table { .. })).pop().unwrap(), table("b"));
    drop(follower);
}

/// In statement format a function that writes, called by `DO`, reports its database
/// changed (MariaDB logs the call, not the function's own statements: the tables it writes
/// are not named). ddl.rs also takes a logged `DO` itself as a change, in case one is.
#[test]
fn do_of_a_writing_function_changes_its_database() {
    if !have_mariadb() {
        return;
    }
    let db = MariaDb::start();
    let mut sql = Sql::connect(&db);
    sql.run(
        "SET GLOBAL log_bin_trust_function_creators = 1; CREATE DATABASE shop; CREATE TABLE shop.a (id INT PRIMARY KEY, v INT);
         INSERT INTO shop.a VALUES (1, 0)",
    );
    sql.run_one(
        "CREATE FUNCTION shop.bump() RETURNS INT MODIFIES SQL DATA BEGIN UPDATE shop.a SET v = v + 1; RETURN 1; END",
    );
    let (follower, ch) = db.follow_connected(T);
    sql.run("SET SESSION binlog_format = 'STATEMENT'; USE shop; DO shop.bump()");
    let seen = ch.until(T, |c| matches!(c, Change::Table { .. } | Change::Database { .. } | Change::All { .. }));
    assert!(matches!(seen.last(), Some(Change::Database { db }) if db == "shop"), "{seen:?}");
    drop(follower);
}

/// MariaDB runs an anonymous compound statement (`BEGIN NOT ATOMIC ... END`, statement
/// format) and logs each statement it ran, not the block: the follower never sees a QUERY
/// event starting with `BEGIN NOT ATOMIC` (which ddl.rs would take for a transaction start)
/// and reports the table the block wrote. Checked here so a MariaDB that logged the block
/// itself would fail this test instead of leaving cached results stale.
#[test]
fn a_compound_statement_is_logged_as_the_statements_it_ran() {
    if !have_mariadb() {
        return;
    }
    let db = MariaDb::start();
    let mut sql = Sql::connect(&db);
    sql.run("CREATE DATABASE shop; CREATE TABLE shop.a (id INT PRIMARY KEY, v INT); INSERT INTO shop.a VALUES (1, 0)");
    let (follower, ch) = db.follow_connected(T);
    sql.run("SET SESSION binlog_format = 'STATEMENT'; USE shop");
    sql.run_one("BEGIN NOT ATOMIC UPDATE shop.a SET v = v + 1 WHERE id = 1; END");
    let seen = ch.until(T, |c| matches!(c, Change::Table { .. } | Change::Database { .. } | Change::All { .. }));
    let named = |c: &Change| match c {
        Change::Table { db, .. } | Change::Database { db } => db == "shop",
        Change::All { .. } => true,
        _ => false,
    };
    assert!(seen.last().is_some_and(named), "{seen:?}");
    drop(follower);
}
