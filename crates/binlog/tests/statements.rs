//! QUERY events from a real MariaDB 10.11 (issue 42): what statements that change no row
//! report (FLUSH, ANALYZE, OPTIMIZE, account and privilege statements, stored programs,
//! indexes), every table an ALTER names (partition exchange and conversion), what a
//! statement-format write's triggers and cascading foreign keys changed, and a prepared XA
//! transaction's rows reported again at its XA COMMIT.

mod common;

use std::time::Duration;

use binlog::{Change, RowsKind};
use common::*;

const T: Duration = Duration::from_secs(10);

fn table(t: &str) -> Change {
    Change::Table { db: "shop".into(), table: t.into() }
}

/// A session for the statements under test and one that writes a marker row after each.
struct Probe {
    sql: Sql,
    marker: Sql,
}

impl Probe {
    fn new(db: &MariaDb) -> Probe {
        Probe { sql: Sql::connect(db), marker: Sql::connect(db) }
    }
}

/// Everything the follower reports for `stmts`, up to (not including) the marker row
/// inserted after them (in row format, from the other session): a quiet statement leaves `[]`.
fn reported(p: &mut Probe, ch: &Changes, stmts: &str) -> Vec<Change> {
    p.sql.run(stmts);
    p.marker.run("INSERT INTO shop.marker VALUES (NULL)");
    let mut seen = data(ch.until(T, |c| is_rows_of(c, "marker")));
    seen.pop();
    seen
}

/// Statements that cannot change a row report nothing (a cache of rows keeps its data):
/// FLUSH PRIVILEGES with nothing written to the grant tables since the last one, other
/// FLUSHes, ANALYZE, OPTIMIZE, GRANT, CREATE/ALTER USER, SET PASSWORD, CREATE DATABASE.
/// Privileges that may be taken away, stored programs and indexes say what they are.
#[test]
fn statements_that_change_no_rows() {
    if !have_mariadb() {
        return;
    }
    let db = MariaDb::start();
    let mut p = Probe::new(&db);
    p.sql.run(
        "SET GLOBAL log_bin_trust_function_creators = 1; CREATE DATABASE shop;
         CREATE TABLE shop.marker (id INT AUTO_INCREMENT PRIMARY KEY); CREATE TABLE shop.t (id INT PRIMARY KEY, v INT)",
    );
    let (follower, ch) = db.follow_connected(T);
    // The follower cannot know what was written before it started: the first FLUSH
    // PRIVILEGES counts, the next ones (nothing written since) do not.
    let first = reported(&mut p, &ch, "FLUSH PRIVILEGES");
    assert!(matches!(first[..], [Change::Privileges { .. }]), "{first:?}");
    let quiet = "FLUSH PRIVILEGES; FLUSH TABLES; FLUSH STATUS; FLUSH HOSTS; FLUSH USER_RESOURCES;
                 ANALYZE TABLE shop.t; OPTIMIZE TABLE shop.t; CHECK TABLE shop.t;
                 CREATE USER u1 IDENTIFIED BY 'x'; GRANT SELECT ON shop.* TO u1; ALTER USER u1 IDENTIFIED BY 'y';
                 SET PASSWORD FOR u1 = PASSWORD('z'); CREATE ROLE r1; GRANT r1 TO u1;
                 CREATE DATABASE IF NOT EXISTS shop; CREATE DATABASE other; ALTER DATABASE other CHARACTER SET utf8mb4;
                 FLUSH PRIVILEGES";
    assert_eq!(reported(&mut p, &ch, quiet), vec![], "nothing of these changes a row");
    for stmt in
        ["REVOKE SELECT ON shop.* FROM u1", "SET DEFAULT ROLE r1 FOR u1", "RENAME USER u1 TO u2", "DROP USER u2"]
    {
        let seen = reported(&mut p, &ch, stmt);
        assert!(matches!(seen[..], [Change::Privileges { .. }]), "{stmt}: {seen:?}");
    }
    // A direct write to a grant table takes effect at the next FLUSH PRIVILEGES.
    p.sql.run("CREATE USER u3; GRANT SELECT ON shop.t TO u3");
    let seen = reported(&mut p, &ch, "DELETE FROM mysql.tables_priv WHERE User = 'u3'");
    assert!(seen.iter().all(|c| !matches!(c, Change::Privileges { .. })), "{seen:?}");
    let seen = reported(&mut p, &ch, "FLUSH PRIVILEGES");
    assert!(matches!(seen[..], [Change::Privileges { .. }]), "{seen:?}");
    assert_eq!(reported(&mut p, &ch, "FLUSH PRIVILEGES"), vec![]);
    // Stored programs: no row, said as such.
    for stmt in [
        "CREATE TRIGGER shop.tr AFTER INSERT ON shop.t FOR EACH ROW SET @a = 1",
        "DROP TRIGGER shop.tr",
        "CREATE FUNCTION shop.f() RETURNS INT RETURN 1",
        "DROP FUNCTION shop.f",
        "CREATE EVENT shop.ev ON SCHEDULE EVERY 1 DAY DO SELECT 1",
        "DROP EVENT shop.ev",
    ] {
        let seen = reported(&mut p, &ch, stmt);
        assert!(matches!(seen[..], [Change::Routines { .. }]), "{stmt}: {seen:?}");
    }
    // Indexes: the table's keys, not its rows.
    let keys = Change::Keys { db: "shop".into(), table: "t".into() };
    for stmt in ["CREATE INDEX iv ON shop.t (v)", "ALTER TABLE shop.t DROP INDEX iv, ADD UNIQUE KEY uv (v)"] {
        assert_eq!(reported(&mut p, &ch, stmt), vec![keys.clone()], "{stmt}");
    }
    assert_eq!(reported(&mut p, &ch, "ALTER TABLE shop.t ADD COLUMN w INT"), vec![table("t")]);
    drop(follower);
}

/// Every table an ALTER names (issue 42): `EXCHANGE PARTITION ... WITH TABLE t`,
/// `CONVERT PARTITION ... TO TABLE t` and `CONVERT TABLE t TO PARTITION` change `t` too
/// (only the partitioned table was reported, so cached reads of `t` stayed stale).
#[test]
fn partition_exchange_and_conversion_name_both_tables() {
    if !have_mariadb() {
        return;
    }
    let db = MariaDb::start();
    let mut p = Probe::new(&db);
    p.sql.run(
        "CREATE DATABASE shop; CREATE TABLE shop.marker (id INT AUTO_INCREMENT PRIMARY KEY);
         CREATE TABLE shop.p (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id)
           (PARTITION p0 VALUES LESS THAN (100), PARTITION p1 VALUES LESS THAN (200));
         CREATE TABLE shop.t (id INT PRIMARY KEY, v INT);
         INSERT INTO shop.p VALUES (1, 1), (150, 150); INSERT INTO shop.t VALUES (2, 2)",
    );
    let (follower, ch) = db.follow_connected(T);
    let seen = reported(&mut p, &ch, "ALTER TABLE shop.p EXCHANGE PARTITION p0 WITH TABLE shop.t");
    assert_eq!(seen, vec![table("p"), table("t")]);
    let seen = reported(&mut p, &ch, "USE shop; ALTER TABLE p CONVERT PARTITION p1 TO TABLE t2");
    assert_eq!(seen, vec![table("p"), table("t2")]);
    let seen = reported(&mut p, &ch, "ALTER TABLE shop.p CONVERT TABLE shop.t2 TO PARTITION p1 VALUES LESS THAN (200)");
    assert_eq!(seen, vec![table("p"), table("t2")]);
    drop(follower);
}

/// A write logged as a statement (`binlog_format` STATEMENT or MIXED, which a session may
/// set) does not show what its triggers and cascading foreign keys changed: the follower
/// adds them, from the same side-effect graph as proxied writes (`querycache::Effects`).
#[test]
fn statement_format_writes_name_what_triggers_and_cascades_changed() {
    if !have_mariadb() {
        return;
    }
    let db = MariaDb::start();
    let mut p = Probe::new(&db);
    p.sql.run(
        "SET GLOBAL log_bin_trust_function_creators = 1; CREATE DATABASE shop;
         CREATE TABLE shop.marker (id INT AUTO_INCREMENT PRIMARY KEY);
         CREATE TABLE shop.a (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB;
         CREATE TABLE shop.b (id INT PRIMARY KEY, v VARCHAR(10)) ENGINE=InnoDB;
         CREATE TABLE shop.parent (id INT PRIMARY KEY) ENGINE=InnoDB;
         CREATE TABLE shop.child (id INT PRIMARY KEY, pid INT,
           FOREIGN KEY (pid) REFERENCES shop.parent (id) ON DELETE CASCADE) ENGINE=InnoDB;
         INSERT INTO shop.a VALUES (1, 'a'); INSERT INTO shop.b VALUES (1, 'b');
         INSERT INTO shop.parent VALUES (1), (2); INSERT INTO shop.child VALUES (7, 1), (8, 2)",
    );
    p.sql.run_one(
        "CREATE TRIGGER shop.a_upd AFTER UPDATE ON shop.a FOR EACH ROW UPDATE shop.b SET v = NEW.v WHERE id = NEW.id",
    );
    let (follower, ch) = db.follow_connected(T);
    for format in ["STATEMENT", "MIXED"] {
        p.sql.run(&format!("SET SESSION binlog_format = '{format}'"));
        let seen = reported(&mut p, &ch, &format!("UPDATE shop.a SET v = '{}' WHERE id = 1", &format[..3]));
        assert_eq!(seen, vec![table("a"), table("b")], "{format}: the trigger's table");
        let id = if format == "STATEMENT" { 1 } else { 2 };
        let seen = reported(&mut p, &ch, &format!("DELETE FROM shop.parent WHERE id = {id}"));
        assert_eq!(seen, vec![table("parent"), table("child")], "{format}: the cascade's table");
    }
    // In row format the trigger's rows are logged themselves; the cascade is added.
    p.sql.run(
        "SET SESSION binlog_format = 'ROW'; INSERT INTO shop.parent VALUES (3); INSERT INTO shop.child VALUES (9, 3)",
    );
    let seen = reported(&mut p, &ch, "UPDATE shop.a SET v = 'row' WHERE id = 1");
    assert!(seen.iter().any(|c| is_rows_of(c, "b")) && !seen.contains(&table("b")), "{seen:?}");
    let seen = reported(&mut p, &ch, "DELETE FROM shop.parent WHERE id = 3");
    assert!(seen.iter().any(|c| is_rows_of(c, "parent")) && seen.contains(&table("child")), "{seen:?}");
    // A new trigger is read again before the next statement-format write.
    let trigger = "CREATE TRIGGER shop.b_upd AFTER UPDATE ON shop.b FOR EACH ROW INSERT INTO shop.marker VALUES (NULL)";
    let seen = reported(&mut p, &ch, trigger);
    assert!(matches!(&seen[..], [Change::Routines { reason }] if reason == "CREATE TRIGGER shop.b_upd"), "{seen:?}");
    p.sql.run("SET SESSION binlog_format = 'STATEMENT'");
    let seen = reported(&mut p, &ch, "UPDATE shop.a SET v = 'again' WHERE id = 1");
    assert_eq!(seen, vec![table("a"), table("b"), table("marker")]);
    drop(follower);
}

/// A prepared XA transaction's rows are logged (and reported) at XA PREPARE, before they
/// are visible; XA COMMIT reports them again (it used to report everything changed, which
/// flushed every `--invalidate` key at each commit of a JTA application).
#[test]
fn xa_commit_reports_the_prepared_rows_again() {
    if !have_mariadb() {
        return;
    }
    let db = MariaDb::start();
    let mut p = Probe::new(&db);
    p.sql.run(
        "CREATE DATABASE shop; CREATE TABLE shop.marker (id INT AUTO_INCREMENT PRIMARY KEY);
         CREATE TABLE shop.a (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
    );
    let (follower, ch) = db.follow_connected(T);
    let prepared =
        reported(&mut p, &ch, "XA START 'x1'; INSERT INTO shop.a VALUES (5, 5); XA END 'x1'; XA PREPARE 'x1'");
    assert!(
        matches!(&prepared[..], [Change::Rows { table, kind: RowsKind::Insert, .. }] if table == "a"),
        "{prepared:?}"
    );
    let committed = reported(&mut p, &ch, "XA COMMIT 'x1'");
    assert_eq!(committed, prepared, "the same rows again, at the commit");
    // Rolled back: nothing more. One phase: reported once, like any transaction.
    reported(&mut p, &ch, "XA START 'x2'; INSERT INTO shop.a VALUES (6, 6); XA END 'x2'; XA PREPARE 'x2'");
    assert_eq!(reported(&mut p, &ch, "XA ROLLBACK 'x2'"), vec![]);
    let once =
        reported(&mut p, &ch, "XA START 'x3'; INSERT INTO shop.a VALUES (7, 7); XA END 'x3'; XA COMMIT 'x3' ONE PHASE");
    assert!(matches!(&once[..], [Change::Rows { table, .. }] if table == "a"), "{once:?}");
    drop(follower);
}
