//! MariaDB restarted under the follower: Disconnected, Connected, and no write made after
//! the restart is missed (the stream resumes where it stopped).

mod common;

use std::time::{Duration, Instant};

use binlog::{Change, Value};
use common::*;

const T: Duration = Duration::from_secs(15);

fn has_row(c: &Change, id: i64) -> bool {
    matches!(c, Change::Rows { table, rows, .. } if table == "t" && rows.iter().any(|r| r[0] == Value::Int(id)))
}

#[test]
fn restart_reconnects_and_resumes() {
    if !have_mariadb() {
        return;
    }
    let db = MariaDb::start();
    let mut sql = Sql::connect(&db);
    sql.run("CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, v INT)");
    let (follower, ch) = db.follow_connected(T);
    sql.run("INSERT INTO shop.t VALUES (1, 1)");
    ch.until(T, |c| has_row(c, 1));
    drop(sql);

    db.down();
    let seen = ch.until(T, |c| matches!(c, Change::Disconnected { .. }));
    assert_eq!(data(seen), vec![], "nothing but the break");
    assert!(!follower.stats().connected);

    // Writes right after the restart, before the follower is back (it retries every <= 1 s):
    // it must resume from its position, not from the new end.
    db.up();
    let t0 = Instant::now();
    let mut sql = Sql::connect(&db);
    sql.run("INSERT INTO shop.t VALUES (2, 2); UPDATE shop.t SET v = 3 WHERE id = 1");
    let seen = ch.until(T, |c| *c == Change::Connected);
    eprintln!("reconnected {:?} after the server came back", t0.elapsed());
    assert!(data(seen).is_empty());
    let seen = ch.until(T, |c| has_row(c, 1));
    assert!(seen.iter().any(|c| has_row(c, 2)), "write made before the reconnection: {seen:?}");
    // (mariadb.sh's FLUSH PRIVILEGES at start is reported as All: privileges reloaded.)
    assert!(!seen.iter().any(|c| matches!(c, Change::All { reason } if reason.contains("gap"))), "no gap: {seen:?}");

    sql.run("INSERT INTO shop.t VALUES (4, 4)");
    ch.until(T, |c| has_row(c, 4));
    let stats = follower.stats();
    assert!(stats.connected && stats.reconnects == 1, "{stats:?}");
    assert_eq!(stats.position.unwrap().file, "binlog.000002", "the restart opened a new binlog file");

    // Idle for longer than the silence limit: heartbeats keep the stream up, lag stays 0.
    std::thread::sleep(Duration::from_secs(4));
    let stats = follower.stats();
    assert!(stats.connected && stats.reconnects == 1 && stats.lag_ms == 0, "{stats:?}");
    assert!(data(ch.drain(Duration::from_millis(100))).is_empty());

    // The file to resume from is gone when the server comes back: All, then from the end.
    drop(sql);
    db.down();
    ch.until(T, |c| matches!(c, Change::Disconnected { .. }));
    let dir = db.dir.path().join("data");
    std::fs::remove_file(dir.join("binlog.000002")).unwrap();
    let index = std::fs::read_to_string(dir.join("binlog.index")).unwrap();
    let kept: String = index.lines().filter(|l| !l.contains("binlog.000002")).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("binlog.index"), kept).unwrap();
    db.up();
    let seen = ch.until(T, |c| *c == Change::Connected);
    let gap = |c: &Change| matches!(c, Change::All { reason } if reason.contains("gap"));
    assert!(seen.iter().any(gap), "a gap is reported before Connected: {seen:?}");
    let mut sql = Sql::connect(&db);
    sql.run("INSERT INTO shop.t VALUES (5, 5)");
    ch.until(T, |c| has_row(c, 5));
    assert_eq!(follower.stats().reconnects, 2);
}
