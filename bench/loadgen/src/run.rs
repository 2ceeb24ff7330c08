//! The `run` subcommand: the timed closed-loop workload, optionally time-sliced over two servers.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::args::{die, Args};
use crate::client::{connect, Driver, Stats, Window};
use crate::keys::random_keys;
use crate::procfs::cpu_secs;
use crate::request::{make_gen, Gen};

/// `--addr A` measures one server. `--addr A,B` measures two servers in the same run by time
/// slicing: the load goes to A for `--slice` seconds, then (after A's replies in flight are in) to
/// B, and so on, so that whatever else the machine is doing hits both alike. Each server gets
/// `--warmup` unmeasured and `--duration` measured seconds in total. One RESULT line per server.
pub(crate) fn cmd_run(a: &Args) {
    let addrs: Vec<SocketAddr> = a
        .str("addr", "127.0.0.1:11211")
        .split(',')
        .map(|x| Args { map: BTreeMap::from([("addr".to_string(), x.to_string())]) }.addr())
        .collect();
    let n = addrs.len();
    let pids: Vec<String> = a.str("server-pid", "").split(',').map(|s| s.to_string()).collect();
    let conns: usize = a.num("conns", 50);
    let threads: usize = a.num::<usize>("threads", 1).clamp(1, conns.max(1));
    let keys: u64 = a.num("keys", 100_000);
    let depth: usize = a.num("depth", 1);
    let duration = Duration::from_secs_f64(a.num("duration", 10.0));
    let warmup = Duration::from_secs_f64(a.num("warmup", 1.0));
    let slice = Duration::from_secs_f64(a.num("slice", 1.0)).max(Duration::from_millis(100));
    let stall = Duration::from_secs(a.num("stall-secs", 10));
    if duration > Duration::from_secs(3600) || warmup > Duration::from_secs(600) {
        die("--duration is capped at 3600 s, --warmup at 600 s");
    }

    // the schedule: (offset from t0, end offset, measured?)
    let mut slices: Vec<(Duration, Duration, bool)> = Vec::new();
    let warm_total = warmup * n as u32;
    let total = (warmup + duration) * n as u32;
    let step = if n == 1 { total } else { slice };
    let mut t = Duration::ZERO;
    while t < total {
        let lim = if t < warm_total { warm_total } else { total };
        let e = (t + step).min(lim);
        slices.push((t, e, t >= warm_total));
        t = e;
    }

    // connections: `conns` per server, spread over the threads
    let mut per_thread: Vec<Vec<Vec<crate::transport::Handshaken>>> =
        (0..threads).map(|_| (0..n).map(|_| Vec::new()).collect()).collect();
    for (si, addr) in addrs.iter().enumerate() {
        for (i, s) in connect(*addr, conns).into_iter().enumerate() {
            per_thread[i % threads][si].push(s);
        }
    }
    let t0 = Instant::now();
    let far = t0 + Duration::from_secs(10 * 365 * 24 * 3600);
    let mut handles = Vec::new();
    for (ti, per_server) in per_thread.into_iter().enumerate() {
        let seed = 0x5eed + ti as u64 * 7919 + a.num::<u64>("seed", 0);
        // the same key sequence for every server
        let gens: Vec<Gen> = (0..n).map(|_| make_gen(a, random_keys(a, keys), seed)).collect();
        let slices = slices.clone();
        handles.push(std::thread::spawn(move || -> Result<Vec<(Stats, Duration)>, String> {
            let mut drivers = Vec::new();
            for (ss, gen) in per_server.into_iter().zip(gens) {
                drivers.push(Driver::new(ss, gen, depth, stall).map_err(|e| e.to_string())?);
            }
            let mut out: Vec<(Stats, Duration)> = (0..n).map(|_| (Stats::new(), Duration::ZERO)).collect();
            for (j, &(_, end, measured)) in slices.iter().enumerate() {
                let srv = j % n;
                let slice_end = t0 + end;
                let start = Instant::now();
                if start >= slice_end {
                    continue; // a slow drain ate this slice
                }
                let win = if n == 1 {
                    Window { start: t0 + warm_total, end: t0 + total }
                } else if measured {
                    Window { start, end: far }
                } else {
                    Window { start: far, end: far }
                };
                let (st, active) = &mut out[srv];
                drivers[srv].run(Some(slice_end), true, &win, st)?;
                if n > 1 {
                    drivers[srv].run(None, false, &win, st)?;
                    if measured {
                        *active += start.elapsed();
                    }
                }
            }
            if n == 1 {
                out[0].1 = duration;
            }
            Ok(out)
        }));
    }
    std::thread::sleep((t0 + warm_total).saturating_duration_since(Instant::now()));
    let srv0: Vec<Option<f64>> = pids.iter().map(|p| cpu_secs(p)).collect();
    let me0 = cpu_secs("self");
    let real0 = Instant::now();
    std::thread::sleep((t0 + total).saturating_duration_since(Instant::now()));
    let srv1: Vec<Option<f64>> = pids.iter().map(|p| cpu_secs(p)).collect();
    let me1 = cpu_secs("self");
    let mut totals: Vec<(Stats, f64, f64)> = (0..n).map(|_| (Stats::new(), 0.0, 0.0)).collect();
    for h in handles {
        match h.join() {
            Ok(Ok(per)) => {
                for (si, (st, active)) in per.iter().enumerate() {
                    let secs = active.as_secs_f64();
                    totals[si].0.merge(st);
                    if secs > 0.0 {
                        totals[si].1 += st.c.ops as f64 / secs; // threads run in parallel: rates add
                    }
                    totals[si].2 = totals[si].2.max(secs);
                }
            }
            Ok(Err(e)) => die(&format!("run: {e}")),
            Err(_) => die("worker thread panicked"),
        }
    }
    let real = real0.elapsed().as_secs_f64();
    let lg_cpu = match (me0, me1) {
        (Some(x), Some(y)) => format!("{:.3}", y - x),
        _ => "na".into(),
    };
    for (si, (total, ops_s, secs)) in totals.iter().enumerate() {
        let h = &total.hist;
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        let srv_cpu = match (srv0.get(si).copied().flatten(), srv1.get(si).copied().flatten()) {
            (Some(x), Some(y)) => format!("{:.3}", y - x),
            _ => "na".into(),
        };
        let c = &total.c;
        println!(
            "RESULT server={} ops={} secs={:.3} ops_s={:.1} p50_us={:.1} p90_us={:.1} p99_us={:.1} p999_us={:.1} max_us={:.1} \
             mean_us={:.1} keys={} hits={} sets={} errors={} bad={} srv_cpu_s={} lg_cpu_s={} lg_secs={:.3} servers={} \
             conns={} threads={} depth={} mget={} set_ratio={}",
            si,
            c.ops,
            secs,
            ops_s,
            us(0.5),
            us(0.9),
            us(0.99),
            us(0.999),
            h.max() as f64 / 1000.0,
            h.mean() / 1000.0,
            c.keys,
            c.hits,
            c.sets,
            c.errors,
            c.bad,
            srv_cpu,
            lg_cpu,
            real,
            n,
            conns,
            threads,
            depth,
            a.num::<usize>("mget", 1),
            a.num::<f64>("set-ratio", 0.0),
        );
    }
}
