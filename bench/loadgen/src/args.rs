//! Command-line arguments: `--name value` pairs, nothing fancy, and `die`.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::process::exit;

pub(crate) struct Args {
    pub(crate) map: BTreeMap<String, String>,
}

impl Args {
    pub(crate) fn parse(raw: &[String]) -> Args {
        let mut map = BTreeMap::new();
        let mut i = 0;
        while i < raw.len() {
            let a = &raw[i];
            let Some(name) = a.strip_prefix("--") else {
                die(&format!("unexpected argument {a:?}"));
            };
            if let Some((k, v)) = name.split_once('=') {
                map.insert(k.to_string(), v.to_string());
                i += 1;
            } else if i + 1 < raw.len() {
                map.insert(name.to_string(), raw[i + 1].clone());
                i += 2;
            } else {
                die(&format!("missing value for --{name}"));
            }
        }
        Args { map }
    }
    pub(crate) fn str(&self, k: &str, default: &str) -> String {
        self.map.get(k).cloned().unwrap_or_else(|| default.to_string())
    }
    pub(crate) fn num<T: std::str::FromStr>(&self, k: &str, default: T) -> T {
        match self.map.get(k) {
            None => default,
            Some(v) => v.parse().unwrap_or_else(|_| die(&format!("bad value for --{k}: {v:?}"))),
        }
    }
    pub(crate) fn addr(&self) -> SocketAddr {
        let a = self.str("addr", "127.0.0.1:11211");
        let addr =
            a.to_socket_addrs().ok().and_then(|mut it| it.next()).unwrap_or_else(|| die(&format!("bad --addr {a:?}")));
        if !addr.ip().is_loopback() {
            die("refusing to send load anywhere but the loopback interface");
        }
        addr
    }
}

pub(crate) fn die(msg: &str) -> ! {
    eprintln!("loadgen: {msg}");
    exit(2)
}
