//! `stats` over a plain blocking connection, and the `stats` subcommand.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream as StdTcpStream};
use std::time::Duration;

use crate::args::{die, Args};

pub(crate) fn server_stats(addr: SocketAddr) -> Option<BTreeMap<String, String>> {
    let s = StdTcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    (&s).write_all(b"stats\r\n").ok()?;
    let mut r = BufReader::new(&s);
    let mut map = BTreeMap::new();
    let mut line = String::new();
    for _ in 0..10_000 {
        line.clear();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end();
        if l == "END" {
            return Some(map);
        }
        let mut it = l.splitn(3, ' ');
        if it.next() != Some("STAT") {
            return None; // ERROR or something else: no stats support
        }
        if let (Some(k), Some(v)) = (it.next(), it.next()) {
            map.insert(k.to_string(), v.to_string());
        }
    }
    None
}

pub(crate) fn stat_u64(m: &Option<BTreeMap<String, String>>, k: &str) -> Option<u64> {
    m.as_ref()?.get(k)?.parse().ok()
}

pub(crate) fn opt(v: Option<u64>) -> String {
    v.map_or("na".to_string(), |v| v.to_string())
}

/// `stats --addr A`: one line `STATS name=value ...` with every statistic (spaces in values
/// become `_`), for scripts that take deltas around a run.
pub(crate) fn cmd_stats(a: &Args) {
    let addr = a.addr();
    let s = server_stats(addr).unwrap_or_else(|| die(&format!("no stats from {addr}")));
    let mut line = String::from("STATS");
    for (k, v) in &s {
        line.push_str(&format!(" {}={}", k, v.replace(' ', "_")));
    }
    println!("{line}");
}
