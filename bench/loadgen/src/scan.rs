//! The `scan` subcommand: get every key once, in multigets, to warm a read-through cache.

use std::time::Instant;

use crate::args::{die, Args};
use crate::client::Stats;
use crate::load::fill_range;

/// `scan`: get every key 0..keys once, `--mget` (default 100) keys per request, `--conns`
/// connections with `--depth` requests in flight each (bench/containers.sh: fills the memory
/// copy of a `caching` container). Reports hits; exits 2 on errors.
pub(crate) fn cmd_scan(a: &Args) {
    let addr = a.addr();
    let keys: u64 = a.num("keys", 100_000);
    let mget: usize = a.num::<usize>("mget", 100).max(1);
    let t0 = Instant::now();
    let mut st = Stats::new();
    if let Err(e) = fill_range(a, addr, 0, keys, 0.0, mget, &mut st) {
        die(&format!("scan: {e}"));
    }
    println!(
        "SCANNED keys={} hits={} errors={} bad={} secs={:.2}",
        st.c.keys,
        st.c.hits,
        st.c.errors,
        st.c.bad,
        t0.elapsed().as_secs_f64()
    );
    if st.c.errors > 0 {
        die("scan saw errors");
    }
}
