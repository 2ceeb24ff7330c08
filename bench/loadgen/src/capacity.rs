//! The `capacity` subcommand: fill past the memory limit, read `stats`, scan for hits.

use std::time::Instant;

use crate::args::{die, Args};
use crate::client::Stats;
use crate::load::fill_range;
use crate::procfs::rss_kb;
use crate::stats::{opt, server_stats, stat_u64};

pub(crate) fn cmd_capacity(a: &Args) {
    let addr = a.addr();
    let pid = a.str("server-pid", "");
    let max_keys: u64 = a.num("max-keys", 3_000_000);
    let chunk: u64 = a.num("chunk", 20_000);
    let past: f64 = a.num("past-factor", 2.0);
    let t0 = Instant::now();
    let mut written = 0u64;
    let mut first: Option<(u64, Option<u64>)> = None;
    let mut set_errors = 0u64;
    let mut stats_supported = true;
    while written < max_keys {
        let target = match first {
            Some((at, _)) => ((at as f64 * past) as u64).min(max_keys),
            None => max_keys,
        };
        if written >= target {
            break;
        }
        let to = (written + chunk).min(target);
        let mut st = Stats::new();
        if let Err(e) = fill_range(a, addr, written, to, 1.0, 1, &mut st) {
            die(&format!("capacity fill: {e}"));
        }
        set_errors += st.c.errors;
        written = to;
        if stats_supported && first.is_none() {
            let s = server_stats(addr);
            if s.is_none() {
                stats_supported = false;
            }
            if stat_u64(&s, "evictions").unwrap_or(0) > 0 {
                first = Some((written, stat_u64(&s, "curr_items")));
            }
        }
    }
    let fill_secs = t0.elapsed().as_secs_f64();
    let s = server_stats(addr);
    let rss = rss_kb(&pid);
    // scan every key written with 100-key multigets and count the hits
    let mut st = Stats::new();
    if let Err(e) = fill_range(a, addr, 0, written, 0.0, 100, &mut st) {
        die(&format!("capacity scan: {e}"));
    }
    println!(
        "CAPACITY written={} first_evict_at={} items_at_first_evict={} curr_items={} evictions={} scan_hits={} scan_bad={} \
         set_errors={} rss_kb={} limit_maxbytes={} fill_secs={:.2} secs={:.2}",
        written,
        opt(first.map(|f| f.0)),
        opt(first.and_then(|f| f.1)),
        opt(stat_u64(&s, "curr_items")),
        opt(stat_u64(&s, "evictions")),
        st.c.hits,
        st.c.bad,
        set_errors,
        opt(rss),
        opt(stat_u64(&s, "limit_maxbytes")),
        fill_secs,
        t0.elapsed().as_secs_f64()
    );
}
