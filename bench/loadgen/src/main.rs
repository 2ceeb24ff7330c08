//! `loadgen`: a small closed-loop load generator for the memcached text protocol, used by
//! `bench/run.sh` to drive memcached and sqlcached identically.
//!
//! Subcommands (all talk only to the address given, which run.sh keeps on 127.0.0.1):
//!   load      set keys 0..N once (preload, so that gets hit)
//!   scan      get keys 0..N once, in `--mget`-key requests (warms a read-through cache); prints SCANNED
//!   run       timed closed-loop workload (get/set mix, multiget, pipelining); prints RESULT
//!   capacity  fill distinct keys past the memory limit, read `stats`, scan for hits; prints CAPACITY
//!   report    turn the TSV that run.sh collects into a markdown table (medians over repetitions)
//!   stats     print a server's `stats` as one `STATS k=v ...` line (persist.sh takes deltas)
//!   restart   right after a server's exec: time to accepting / first reply / first hit of a
//!             known key, then optionally reads per second for a while; prints RESTART or READ
//!   persist-report  turn the TSV that persist.sh collects into markdown tables
//!
//! Every loop is bounded: `run` by its duration, `load`/`capacity` by their key counts, `restart`
//! by `--timeout` and `--read-secs`, and all of them abort when the server makes no progress for
//! `--stall-secs` (default 10 s).

mod args;
mod capacity;
mod client;
mod keys;
mod load;
mod persist_report;
mod procfs;
mod report;
mod request;
mod restart;
mod run;
mod scan;
mod stats;
mod transport;

use crate::args::{die, Args};
use crate::capacity::cmd_capacity;
use crate::load::cmd_load;
use crate::persist_report::cmd_persist_report;
use crate::report::cmd_report;
use crate::restart::cmd_restart;
use crate::run::cmd_run;
use crate::scan::cmd_scan;
use crate::stats::cmd_stats;

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = argv.first() else {
        die("usage: loadgen <load|scan|run|capacity|stats|restart|report|persist-report> [--name value ...] (see bench/README.md)");
    };
    let a = Args::parse(&argv[1..]);
    if let Some(ca) = a.map.get("tls-ca") {
        transport::enable_tls(ca);
    }
    match cmd.as_str() {
        "load" => cmd_load(&a),
        "run" => cmd_run(&a),
        "scan" => cmd_scan(&a),
        "capacity" => cmd_capacity(&a),
        "stats" => cmd_stats(&a),
        "restart" => cmd_restart(&a),
        "persist-report" => cmd_persist_report(&a),
        "report" => cmd_report(&a),
        other => die(&format!("unknown subcommand {other:?}")),
    }
}
