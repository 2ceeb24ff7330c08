//! What timing one request costs (`cargo bench -p engine --bench latency`): the two clock
//! reads and the histogram update that `--metrics-listen` adds to every memcached command
//! and MySQL query, to compare with the server's CPU time per request (`bench/run.sh`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use engine::latency::Histogram;

fn bench(name: &str, iters: u64, mut f: impl FnMut()) {
    for _ in 0..iters / 10 {
        f();
    }
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    println!("{name:<36} {:>8.1} ns/op", t.elapsed().as_nanos() as f64 / iters as f64);
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 200_000 } else { 10_000_000 };
    let h = Histogram::default();
    bench("Instant::now", n, || {
        black_box(Instant::now());
    });
    bench("record (fixed 3 us)", n, || h.record(black_box(Duration::from_micros(3))));
    bench("start + record_since (one request)", n, || {
        let t = Instant::now();
        h.record_since(black_box(t));
    });
    black_box(h.snapshot());
}
