//! A transaction's many rows of one table become one `ManyRows` change past the bulk limit
//! (real MariaDB 10.11), and the follower's distance to the binlog head returns to 0.
//! (Its own file: test binaries run one after another, tests in one binary in parallel,
//! and two MariaDB installs at once are flaky on a 2-CPU machine.)

mod common;

use std::time::Duration;

use binlog::Change;
use common::*;

const T: Duration = Duration::from_secs(10);

/// Past the bulk limit, a transaction's further row events of one table are one
/// `ManyRows` (their rows are not decoded); other tables and the next transaction are
/// reported row by row again. And the follower's distance to the head returns to 0.
#[test]
fn many_rows_of_one_table_become_one_change() {
    if !have_mariadb() {
        return;
    }
    let db = MariaDb::start();
    let mut sql = Sql::connect(&db);
    sql.run(
        "CREATE DATABASE shop; CREATE TABLE shop.bulk (id INT PRIMARY KEY, v INT);
         CREATE TABLE shop.other (id INT PRIMARY KEY, v INT);
         INSERT INTO shop.bulk SELECT seq, 0 FROM shop.seq_1_to_30; INSERT INTO shop.other VALUES (1, 0)",
    );
    let (follower, ch) = db.follow();
    follower.set_bulk_rows(10);
    ch.until(T, |c| *c == Change::Connected);
    sql.run(
        "BEGIN; UPDATE shop.bulk SET v = 1 WHERE id <= 10; UPDATE shop.bulk SET v = 1 WHERE id > 10 AND id <= 20;
         UPDATE shop.other SET v = 1; UPDATE shop.bulk SET v = 1 WHERE id > 20; COMMIT",
    );
    let got = data(ch.drain(Duration::from_millis(500)));
    let kinds: Vec<String> = got
        .iter()
        .map(|c| match c {
            Change::Rows { table, rows, .. } => format!("rows {table} {}", rows.len()),
            Change::ManyRows { table, .. } => format!("many {table}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(kinds, ["rows bulk 20", "many bulk", "rows other 2"]);
    sql.run("UPDATE shop.bulk SET v = 2 WHERE id = 1");
    let next = ch.until(T, |c| is_rows_of(c, "bulk")).pop();
    assert!(
        matches!(next, Some(Change::Rows { rows, .. }) if rows.len() == 2),
        "a new transaction is reported row by row"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(follower.lag_ms() < 100, "caught up: {:?}", follower.stats());
    assert!(follower.stats().head_probes > 0);
}
