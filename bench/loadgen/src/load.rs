//! The `load` subcommand: set keys 0..N once, and the fill helper it shares with `scan` and `capacity`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::args::{die, Args};
use crate::client::{all_time, connect, Driver, Stats};
use crate::keys::KeySource;
use crate::request::make_gen;

/// Set keys [from, to) with `conns` connections, `depth` requests in flight each.
pub(crate) fn fill_range(
    a: &Args,
    addr: SocketAddr,
    from: u64,
    to: u64,
    set_ratio: f64,
    mget: usize,
    st: &mut Stats,
) -> Result<(), String> {
    let conns: usize = a.num("conns", 4);
    let depth: usize = a.num("depth", 32);
    let stall = Duration::from_secs(a.num("stall-secs", 10));
    let mut gen = make_gen(a, KeySource::Seq { next: from, end: to }, 1);
    gen.set_ratio = set_ratio;
    gen.mget = mget;
    let mut d = Driver::new(connect(addr, conns), gen, depth, stall).map_err(|e| e.to_string())?;
    d.run(None, true, &all_time(), st)
}

pub(crate) fn cmd_load(a: &Args) {
    let addr = a.addr();
    let keys: u64 = a.num("keys", 100_000);
    let t0 = Instant::now();
    let mut st = Stats::new();
    if let Err(e) = fill_range(a, addr, 0, keys, 1.0, 1, &mut st) {
        die(&format!("load: {e}"));
    }
    println!("LOADED keys={} sets={} errors={} secs={:.2}", keys, st.c.sets, st.c.errors, t0.elapsed().as_secs_f64());
    if st.c.errors > 0 || st.c.sets != keys {
        die("preload saw errors");
    }
}
