//! Text and meta protocol parsing speed (std only: `cargo bench -p protocol-memcache --bench text`).

use std::hint::black_box;
use std::time::Instant;

use protocol_memcache::text::{next_line, parse, reply, Frame};

fn bench(name: &str, iters: u64, mut f: impl FnMut()) {
    for _ in 0..iters / 10 {
        f();
    }
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    println!("{name:<28} {:>8.1} ns/op", t.elapsed().as_nanos() as f64 / iters as f64);
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 200_000 } else { 5_000_000 };
    let get = b"get user:0000012345\r\n".to_vec();
    let set = b"set user:0000012345 0 0 32\r\n0123456789abcdef0123456789abcdef\r\n".to_vec();
    let multiget: Vec<u8> = {
        let mut v = b"get".to_vec();
        for i in 0..10 {
            v.extend_from_slice(format!(" user:{i:010}").as_bytes());
        }
        v.extend_from_slice(b"\r\n");
        v
    };
    let mg = b"mg user:0000012345 v f t c k O123\r\n".to_vec();
    for (name, buf) in
        [("parse get", &get), ("parse set line", &set), ("parse 10-key get", &multiget), ("parse mg", &mg)]
    {
        bench(name, n, || {
            if let Frame::Line(line, _) = next_line(black_box(buf), 1 << 20) {
                let _ = black_box(parse(line));
            }
        });
    }
    let mut out = Vec::with_capacity(1024);
    bench("compose VALUE (32 B)", n, || {
        out.clear();
        reply::value(&mut out, black_box(b"user:0000012345"), 0, black_box(&[b'x'; 32]), None);
        black_box(&out);
    });
}
