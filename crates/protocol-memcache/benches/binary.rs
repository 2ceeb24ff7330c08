//! Binary protocol micro-benchmarks, std only (`harness = false`):
//! `cargo bench -p protocol-memcache --bench binary`.
//!
//! Prints ns/op for parsing a get and a set request and for composing a get response.

use std::hint::black_box;
use std::time::{Duration, Instant};

use protocol_memcache::binary::{parse_request, write_get_hit, write_request, Opcode};

/// Runs `op` in batches until `budget` has elapsed; returns the best batch's ns/op.
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
    println!("{name:<32} {best:>8.1} ns/op  ({total} iterations)");
}

fn main() {
    // `cargo bench` passes `--bench`; a quick mode for smoke runs: `-- --quick`.
    let quick = std::env::args().any(|a| a == "--quick");
    let budget = Duration::from_millis(if quick { 50 } else { 1000 });

    let mut get = Vec::new();
    write_request(&mut get, Opcode::Get, 1, 0, &[], b"user:1234:profile", &[]);

    let mut set = Vec::new();
    let value = vec![b'x'; 100];
    let extras = [0, 0, 0, 0, 0, 0, 0x0e, 0x10];
    write_request(&mut set, Opcode::Set, 2, 0, &extras, b"user:1234:profile", &value);

    measure("parse get (17-byte key)", budget, || {
        let (req, used) = parse_request(black_box(&get)).unwrap().unwrap();
        black_box((req.key(), used));
    });

    measure("parse set (17-byte key, 100 B)", budget, || {
        let (req, used) = parse_request(black_box(&set)).unwrap().unwrap();
        black_box((req.store_extras(), req.value(), used));
    });

    let mut out = Vec::with_capacity(4096);
    measure("compose get hit (100 B value)", budget, || {
        out.clear();
        write_get_hit(&mut out, black_box(Opcode::Get), 1, 42, 0, b"user:1234:profile", black_box(&value));
        black_box(&out);
    });
}
