//! Parsing micro-benchmarks, std only (`harness = false`):
//! `cargo bench -p protocol-mysql --bench parse` (`-- --quick` for a smoke run).
//!
//! Prints ns/op for parsing a COM_QUERY packet and a 10-column text row.

use std::hint::black_box;
use std::time::{Duration, Instant};

use protocol_mysql::{
    parse_packet, parse_text_row_into, write_packet, write_text_row, Command, Query, CLIENT_PROTOCOL_41,
    CLIENT_QUERY_ATTRIBUTES,
};

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
    println!("{name:<40} {best:>8.1} ns/op  ({total} iterations)");
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let budget = Duration::from_millis(if quick { 50 } else { 1000 });

    let sql = b"SELECT id, name, email, created_at FROM users WHERE id = 12345 AND active = 1";
    let mut wire = Vec::new();
    for caps in [CLIENT_PROTOCOL_41, CLIENT_PROTOCOL_41 | CLIENT_QUERY_ATTRIBUTES] {
        let mut payload = Vec::new();
        Command::Query(Query { attributes: Vec::new(), query: sql }).write(&mut payload, caps);
        wire.clear();
        write_packet(&mut wire, 0, &payload);
        let name = if caps & CLIENT_QUERY_ATTRIBUTES != 0 {
            "parse COM_QUERY packet (query attrs)"
        } else {
            "parse COM_QUERY packet"
        };
        measure(name, budget, || {
            let (p, used) = parse_packet(black_box(&wire)).unwrap().unwrap();
            let cmd = Command::parse(p.payload, caps).unwrap();
            black_box((cmd, used));
        });
    }

    let values: Vec<Option<&[u8]>> = vec![
        Some(b"12345"),
        Some(b"Ada Lovelace"),
        Some(b"ada@example.com"),
        Some(b"2024-05-17 10:11:12"),
        None,
        Some(b"1"),
        Some(b"3.14159"),
        Some(b"some longer text column value with a few words in it"),
        Some(b""),
        Some(b"42"),
    ];
    let mut row = Vec::new();
    write_text_row(&mut row, &values);
    let mut out = Vec::with_capacity(10);
    measure("parse 10-column text row", budget, || {
        parse_text_row_into(black_box(&row), 10, &mut out).unwrap();
        black_box(&out);
    });
}
