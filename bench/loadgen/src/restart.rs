//! The `restart` subcommand: time to listen / first reply / first hit after an exec, then reads.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream as StdTcpStream;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::args::{die, Args};
use crate::client::{all_time, connect, Driver, Stats};
use crate::keys::random_keys;
use crate::request::{make_gen, push_digits, DIGITS};

pub(crate) fn unix_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

/// One blocking `get` of `key` on `s`: Ok(Some(true)) for a hit with the right value,
/// Ok(Some(false)) for a miss (or a wrong value), Err on a closed connection or an error reply.
pub(crate) fn probe_get(r: &mut BufReader<StdTcpStream>, key: &[u8], value_size: usize) -> io::Result<bool> {
    let mut req = b"get ".to_vec();
    req.extend_from_slice(key);
    req.extend_from_slice(b"\r\n");
    r.get_mut().write_all(&req)?;
    let mut hit = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line)? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed"));
        }
        if line == b"END\r\n" {
            return Ok(hit);
        }
        if !line.starts_with(b"VALUE ") {
            return Err(io::Error::other(String::from_utf8_lossy(&line).trim_end().to_string()));
        }
        let bytes: usize = std::str::from_utf8(&line[6..line.len().saturating_sub(2)])
            .ok()
            .and_then(|t| t.split(' ').nth(2))
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| io::Error::other("bad VALUE line"))?;
        let mut data = vec![0; bytes + 2];
        r.read_exact(&mut data)?;
        hit = bytes == value_size
            && (value_size < DIGITS || (key.len() >= DIGITS && data[..DIGITS] == key[key.len() - DIGITS..]));
    }
}

/// `restart`: started right after the script execs a server (whose exec time it passes as
/// `--t0-ns`, unix nanoseconds), measure how soon the server is useful.
///
/// Phase 1 polls every `--poll-ms` (2): connect until the port accepts, then on that
/// connection `get` the known key `--probe` (index; default keys/2+1) until it hits
/// (`--until hit`), until any reply (`--until reply`), or stop at the first connect
/// (`--until listen`). Prints `RESTART connect_ms= first_reply_ms= first_hit_ms= ...` (ms
/// since t0; `na` if it never happened within `--timeout`, default 60 s).
///
/// Phase 2, with `--read-secs S` > 0: from the first connect on, `--conns` connections read
/// random keys of the loaded set (`--keys`, `--dist uniform|zipf`) in a closed loop for S
/// seconds, and one `READ` line gives totals and `per_sec=ops/hits/keys,...` for each second.
pub(crate) fn cmd_restart(a: &Args) {
    let addr = a.addr();
    let t0: u128 = a.num("t0-ns", unix_ns());
    let ms = || (unix_ns().saturating_sub(t0)) as f64 / 1e6;
    let keys: u64 = a.num::<u64>("keys", 1_000_000).max(1);
    let probe_idx: u64 = a.num("probe", keys / 2 + 1).min(keys - 1);
    let value_size: usize = a.num("value-size", 32);
    let poll = Duration::from_millis(a.num("poll-ms", 2));
    let timeout = Duration::from_secs_f64(a.num("timeout", 60.0));
    let until = a.str("until", "hit");
    let read_secs: f64 = a.num("read-secs", 0.0);
    if !["hit", "reply", "listen"].contains(&until.as_str()) {
        die("--until must be hit, reply or listen");
    }
    if !(0.0..=600.0).contains(&read_secs) {
        die("--read-secs must be in [0, 600]");
    }
    let mut key = a.str("prefix", "key:").into_bytes();
    push_digits(&mut key, probe_idx);

    let deadline = Instant::now() + timeout;
    let mut conn: Option<BufReader<StdTcpStream>> = None;
    let (mut connect_ms, mut reply_ms, mut hit_ms) = (None::<f64>, None::<f64>, None::<f64>);
    let (mut polls, mut misses, mut connect_fails, mut drops) = (0u64, 0u64, 0u64, 0u64);
    let mut last_err = String::new();
    while Instant::now() < deadline {
        if conn.is_none() {
            match StdTcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
                Ok(s) if s.local_addr().ok() == Some(addr) => {
                    // TCP self-connect (source port == the closed server port): not the server
                    drop(s);
                    connect_fails += 1;
                    std::thread::sleep(poll);
                    continue;
                }
                Ok(s) => {
                    s.set_nodelay(true).ok();
                    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
                    connect_ms.get_or_insert_with(ms);
                    conn = Some(BufReader::new(s));
                    if until == "listen" {
                        break;
                    }
                }
                Err(_) => {
                    connect_fails += 1;
                    std::thread::sleep(poll);
                    continue;
                }
            }
        }
        polls += 1;
        match probe_get(conn.as_mut().unwrap(), &key, value_size) {
            Ok(hit) => {
                reply_ms.get_or_insert_with(ms);
                if hit {
                    hit_ms = Some(ms());
                    break;
                }
                misses += 1;
                if until == "reply" {
                    break;
                }
            }
            Err(e) => {
                drops += 1;
                last_err = e.to_string();
                conn = None;
            }
        }
        std::thread::sleep(poll);
    }
    let f = |v: Option<f64>| v.map_or("na".to_string(), |v| format!("{v:.1}"));
    let timed_out = match until.as_str() {
        "hit" => hit_ms.is_none(),
        "reply" => reply_ms.is_none(),
        _ => connect_ms.is_none(),
    };
    let mut out = format!(
        "RESTART connect_ms={} first_reply_ms={} first_hit_ms={} polls={} misses_before_hit={} connect_fails={} \
         dropped={} timed_out={} probe={}",
        f(connect_ms),
        f(reply_ms),
        f(hit_ms),
        polls,
        misses,
        connect_fails,
        drops,
        timed_out as u8,
        String::from_utf8_lossy(&key)
    );
    if !last_err.is_empty() {
        eprintln!("loadgen: restart probe: last error: {last_err}");
    }
    if read_secs <= 0.0 || connect_ms.is_none() {
        println!("{out}");
        if timed_out && read_secs > 0.0 {
            die("server never accepted a connection");
        }
        return;
    }
    drop(conn);

    // Phase 2: closed-loop reads from the first connect on, bucketed per second.
    let conns: usize = a.num("conns", 50);
    let stall = Duration::from_secs(a.num("stall-secs", 10));
    let mut gen = make_gen(a, random_keys(a, keys), 0x5eed + a.num::<u64>("seed", 0));
    gen.set_ratio = 0.0;
    gen.mget = 1;
    let start = Instant::now();
    let mut d = Driver::new(connect(addr, conns), gen, a.num("depth", 1), stall)
        .unwrap_or_else(|e| die(&format!("restart read: {e}")));
    let win = all_time();
    let mut total = Stats::new();
    let mut per_sec = Vec::new();
    let n = read_secs.ceil() as u32;
    for i in 0..n {
        let end = start + Duration::from_secs_f64(read_secs.min((i + 1) as f64));
        let mut st = Stats::new();
        if let Err(e) = d.run(Some(end), true, &win, &mut st) {
            die(&format!("restart read: {e}"));
        }
        let c = &st.c;
        eprintln!(
            "loadgen: second {}: {} gets, hit {:.1} %, p99 {:.0} µs",
            i + 1,
            c.ops,
            if c.keys > 0 { 100.0 * c.hits as f64 / c.keys as f64 } else { 0.0 },
            st.hist.value_at_quantile(0.99) as f64 / 1000.0
        );
        per_sec.push(format!("{}/{}/{}", c.ops, c.hits, c.keys));
        total.merge(&st);
    }
    let secs = start.elapsed().as_secs_f64();
    let c = &total.c;
    let h = &total.hist;
    out = out.replacen("RESTART", "READ", 1);
    println!(
        "{out} read_start_ms={:.1} secs={:.3} ops={} ops_s={:.1} keys={} hits={} errors={} bad={} p50_us={:.1} p99_us={:.1} \
         conns={} dist={} per_sec={}",
        connect_ms.unwrap_or(0.0),
        secs,
        c.ops,
        c.ops as f64 / secs,
        c.keys,
        c.hits,
        c.errors,
        c.bad,
        h.value_at_quantile(0.5) as f64 / 1000.0,
        h.value_at_quantile(0.99) as f64 / 1000.0,
        conns,
        a.str("dist", "uniform"),
        per_sec.join(",")
    );
}
