//! Delay from a direct INSERT's acknowledgement (autocommit: committed) to the follower's
//! callback. Printed, not asserted (performance is never asserted in tests).

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use binlog::{Change, Value};
use common::*;

#[test]
fn commit_to_callback_latency() {
    if !have_mariadb() {
        return;
    }
    let db = MariaDb::start();
    let mut sql = Sql::connect(&db);
    sql.run("CREATE DATABASE shop; CREATE TABLE shop.lat (id INT PRIMARY KEY, v INT)");
    let (_follower, ch) = db.follow();
    ch.until(Duration::from_secs(10), |c| *c == Change::Connected);

    const N: i64 = 400;
    let mut acked = HashMap::new();
    for i in 0..N {
        sql.run(&format!("INSERT INTO shop.lat VALUES ({i}, {i})"));
        acked.insert(i, Instant::now());
        if i % 4 == 0 {
            std::thread::sleep(Duration::from_millis(2)); // some idle gaps, as in real traffic
        }
    }
    let mut lat = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while lat.len() < N as usize && Instant::now() < deadline {
        let Ok((at, c)) = ch.rx.recv_timeout(Duration::from_secs(5)) else { break };
        if let Change::Rows { rows, .. } = c {
            for r in rows {
                if let Value::Int(id) = r[0] {
                    lat.push(at.saturating_duration_since(acked[&id]));
                }
            }
        }
    }
    assert_eq!(lat.len(), N as usize, "every insert reported");
    lat.sort();
    let p = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    eprintln!(
        "binlog latency over {N} inserts (ack -> callback): p50 {:?} p99 {:?} max {:?}",
        p(0.50),
        p(0.99),
        lat[lat.len() - 1]
    );
}
