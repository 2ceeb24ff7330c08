//! Query cache hot-path micro-benchmarks, std only (`harness = false`):
//! `cargo bench -p querycache --bench analyze` (`-- --quick` for a smoke run).
//!
//! Prints ns/op for planning a statement whose digest is memoized (lexer pass, memo
//! lookup, registry lookup, key hash), for a lookup hit, and for the whole hit path.

use std::hint::black_box;
use std::time::{Duration, Instant};

use querycache::{CacheType, Config, FillStart, PkColumn, Plan, QueryCache, TableInfo};

/// Runs `op` in batches until `budget` has elapsed; prints the best batch's ns/op.
fn measure(name: &str, budget: Duration, mut op: impl FnMut()) {
    const BATCH: u32 = 10_000;
    for _ in 0..BATCH {
        op(); // warm-up
    }
    let start = Instant::now();
    let mut best = f64::INFINITY;
    let mut total: u64 = 0;
    while start.elapsed() < budget {
        let t = Instant::now();
        for _ in 0..BATCH {
            op();
        }
        best = best.min(t.elapsed().as_nanos() as f64 / f64::from(BATCH));
        total += u64::from(BATCH);
    }
    println!("{name:<44} {best:>8.1} ns/op  ({total} iterations)");
}

/// A one-row text result set (column count, one column definition, EOF, row, EOF).
fn reply() -> Vec<u8> {
    let mut out = Vec::new();
    let mut packet = |seq: u8, p: &[u8]| {
        out.extend_from_slice(&[p.len() as u8, 0, 0, seq]);
        out.extend_from_slice(p);
    };
    packet(1, &[1]);
    packet(2, b"\x03def\x06sbtest\x07sbtest1\x07sbtest1\x01c\x01c\x0c\x08\x00\x78\x00\x00\x00\xfe\x00\x00\x00\x00\x00");
    packet(3, &[0xfe, 0, 0, 2, 0]);
    let mut row = vec![119u8];
    row.extend_from_slice(&[b'7'; 119]);
    packet(4, &row);
    packet(5, &[0xfe, 0, 0, 2, 0]);
    out
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let budget = Duration::from_millis(if quick { 50 } else { 1000 });
    let c = QueryCache::new(Config { size: 64 << 20, limit: 1 << 20, mode: CacheType::On, ..Config::default() });
    c.schema().set_table("sbtest", "sbtest1", TableInfo::base(vec![PkColumn::int("id")]));
    let mut s = c.session("sbtest", Some("sbtest"), 45, 0x0000_0200);
    let point = b"SELECT c FROM sbtest1 WHERE id=5017";
    let range = b"SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 5017 AND 5116 ORDER BY c";
    let r = reply();
    let Plan::Cached { key, tags } = c.on_query(&mut s, point) else { panic!("point select not cacheable") };
    let FillStart::Leader(f) = c.begin_fill(&key, &tags) else { panic!("leader") };
    c.finish_fill(f, Some(&r));

    measure("on_query point select (memoized digest)", budget, || {
        black_box(c.on_query(&mut s, black_box(point)));
    });
    measure("on_query DISTINCT range (memoized digest)", budget, || {
        black_box(c.on_query(&mut s, black_box(range)));
    });
    measure("lookup hit (163-byte reply)", budget, || {
        black_box(c.lookup(black_box(&key)));
    });
    measure("hit path: on_query + lookup", budget, || {
        if let Plan::Cached { key, .. } = c.on_query(&mut s, black_box(point)) {
            black_box(c.lookup(&key));
        }
    });
    let mut n = 0u64;
    measure("first analysis of a new digest (sqlparser)", budget / 4, || {
        n += 1;
        let sql = format!("SELECT c FROM sbtest1 WHERE id=5 AND k{n} = 1");
        black_box(c.on_query(&mut s, sql.as_bytes()));
    });
    let st = c.stats();
    println!("hits {} inserts {}", st.hits, st.inserts);
}
