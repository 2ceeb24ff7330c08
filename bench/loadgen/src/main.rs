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

use std::collections::{BTreeMap, VecDeque};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream as StdTcpStream, ToSocketAddrs};
use std::process::exit;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

// ---------------------------------------------------------------------------------------------
// command-line arguments: `--name value` pairs, nothing fancy

struct Args {
    map: BTreeMap<String, String>,
}

impl Args {
    fn parse(raw: &[String]) -> Args {
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
    fn str(&self, k: &str, default: &str) -> String {
        self.map.get(k).cloned().unwrap_or_else(|| default.to_string())
    }
    fn num<T: std::str::FromStr>(&self, k: &str, default: T) -> T {
        match self.map.get(k) {
            None => default,
            Some(v) => v.parse().unwrap_or_else(|_| die(&format!("bad value for --{k}: {v:?}"))),
        }
    }
    fn addr(&self) -> SocketAddr {
        let a = self.str("addr", "127.0.0.1:11211");
        let addr =
            a.to_socket_addrs().ok().and_then(|mut it| it.next()).unwrap_or_else(|| die(&format!("bad --addr {a:?}")));
        if !addr.ip().is_loopback() {
            die("refusing to send load anywhere but the loopback interface");
        }
        addr
    }
}

fn die(msg: &str) -> ! {
    eprintln!("loadgen: {msg}");
    exit(2)
}

// ---------------------------------------------------------------------------------------------
// request generation

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        (((self.next() >> 32) as u128 * n as u128) >> 32) as u64
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Zipfian key ranks (YCSB's generator, after Gray et al., "Quickly generating billion-record
/// synthetic databases"): rank r in 0..n with probability ~ 1/(r+1)^theta. Ranks are spread
/// over the key space by a fixed bijection (r * mult mod n), so hot keys are not neighbours.
#[derive(Clone, Copy)]
struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    mult: u64,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Zipf {
    fn new(n: u64, theta: f64) -> Zipf {
        if !(theta > 0.0 && theta < 1.0) {
            die("--zipf-theta must be in (0, 1)");
        }
        let n = n.max(2);
        let zeta = |m: u64| (1..=m).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let zetan = zeta(n);
        let zeta2 = zeta(2);
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        let mut mult = 0x9E37_79B9u64 % n; // odd; stepped until coprime with n
        while mult < 2 || gcd(mult, n) != 1 {
            mult = (mult + 1) % n;
        }
        Zipf { n, theta, alpha: 1.0 / (1.0 - theta), zetan, eta, mult }
    }
    fn rank(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        ((self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64).min(self.n - 1)
    }
    fn index(&self, u: f64) -> u64 {
        ((self.rank(u) as u128 * self.mult as u128) % self.n as u128) as u64
    }
}

#[derive(Clone, Copy)]
enum KeySource {
    /// uniformly random key indexes in 0..n
    Random(u64),
    /// zipfian key indexes in 0..n (`--dist zipf`)
    Zipf(Zipf),
    /// each index once, in order, then stop
    Seq { next: u64, end: u64 },
}

#[derive(Clone, Copy)]
enum Kind {
    Get { nkeys: u32 },
    Set,
}

/// Keys are `<prefix><index as 8+ zero-padded digits>`; a value of size S for key index i is
/// i's 8 digits followed by a fixed filler, so a reply can be checked against the key it carries.
struct Gen {
    prefix: Vec<u8>,
    filler: Vec<u8>,
    value_size: usize,
    set_ratio: f64,
    mget: usize,
    keys: KeySource,
    rng: Rng,
}

const DIGITS: usize = 8;

impl Gen {
    fn push_key(&self, out: &mut Vec<u8>, idx: u64) {
        out.extend_from_slice(&self.prefix);
        push_digits(out, idx);
    }

    fn next_index(&mut self) -> Option<u64> {
        match &mut self.keys {
            KeySource::Random(n) => {
                let n = *n;
                Some(self.rng.below(n))
            }
            KeySource::Zipf(z) => {
                let z = *z;
                Some(z.index(self.rng.unit()))
            }
            KeySource::Seq { next, end } => {
                if *next >= *end {
                    None
                } else {
                    *next += 1;
                    Some(*next - 1)
                }
            }
        }
    }

    fn exhausted(&self) -> bool {
        matches!(self.keys, KeySource::Seq { next, end } if next >= end)
    }

    /// Append one request to `out`; None once a sequential key source is used up.
    fn push_request(&mut self, out: &mut Vec<u8>) -> Option<Kind> {
        let is_set = self.set_ratio >= 1.0 || (self.set_ratio > 0.0 && self.rng.unit() < self.set_ratio);
        let first = self.next_index()?;
        if is_set {
            out.extend_from_slice(b"set ");
            self.push_key(out, first);
            out.extend_from_slice(b" 0 0 ");
            push_decimal(out, self.value_size as u64);
            out.extend_from_slice(b"\r\n");
            let start = out.len();
            out.extend_from_slice(&self.filler);
            if self.value_size >= DIGITS {
                let mut d = Vec::with_capacity(12);
                push_digits(&mut d, first);
                let d = &d[d.len() - DIGITS..];
                out[start..start + DIGITS].copy_from_slice(d);
            }
            out.extend_from_slice(b"\r\n");
            Some(Kind::Set)
        } else {
            out.extend_from_slice(b"get ");
            self.push_key(out, first);
            let mut n = 1u32;
            while (n as usize) < self.mget {
                let Some(idx) = self.next_index() else { break };
                out.push(b' ');
                self.push_key(out, idx);
                n += 1;
            }
            out.extend_from_slice(b"\r\n");
            Some(Kind::Get { nkeys: n })
        }
    }
}

fn push_decimal(out: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&tmp[i..]);
}

/// At least DIGITS digits, zero-padded.
fn push_digits(out: &mut Vec<u8>, v: u64) {
    let mut tmp = [b'0'; 20];
    let mut i = tmp.len();
    let mut v = v;
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let start = i.min(tmp.len() - DIGITS);
    out.extend_from_slice(&tmp[start..]);
}

// ---------------------------------------------------------------------------------------------
// connections and the event loop

struct Pending {
    sent: Instant,
    kind: Kind,
    hits: u32,
    bad: u32,
}

#[derive(Default)]
struct Counters {
    ops: u64,
    keys: u64,
    hits: u64,
    errors: u64,
    bad: u64,
    sets: u64,
}

struct Stats {
    hist: Histogram<u64>,
    c: Counters,
}

impl Stats {
    fn new() -> Stats {
        Stats { hist: Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("histogram"), c: Counters::default() }
    }
    fn merge(&mut self, o: &Stats) {
        self.hist.add(&o.hist).expect("histogram add");
        self.c.ops += o.c.ops;
        self.c.keys += o.c.keys;
        self.c.hits += o.c.hits;
        self.c.errors += o.c.errors;
        self.c.bad += o.c.bad;
        self.c.sets += o.c.sets;
    }
}

struct Window {
    start: Instant,
    end: Instant,
}

struct Conn {
    stream: TcpStream,
    wbuf: Vec<u8>,
    wpos: usize,
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    inflight: VecDeque<Pending>,
    dead: bool,
}

/// Print the first error reply of the process to stderr (once), for diagnosis.
fn note_error(line: &[u8]) {
    static SEEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SEEN.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!("loadgen: first error reply: {:?}", String::from_utf8_lossy(line).trim_end());
    }
}

fn find_nl(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

impl Conn {
    fn new(stream: TcpStream) -> Conn {
        Conn {
            stream,
            wbuf: Vec::with_capacity(16 * 1024),
            wpos: 0,
            rbuf: vec![0; 64 * 1024],
            rstart: 0,
            rend: 0,
            inflight: VecDeque::with_capacity(64),
            dead: false,
        }
    }

    fn complete(p: Pending, ok: bool, now: Instant, win: &Window, st: &mut Stats) {
        if p.sent < win.start || now > win.end {
            return;
        }
        let c = &mut st.c;
        c.ops += 1;
        match p.kind {
            Kind::Get { nkeys } => {
                c.keys += nkeys as u64;
                c.hits += p.hits as u64;
            }
            Kind::Set => c.sets += 1,
        }
        c.bad += p.bad as u64;
        if !ok {
            c.errors += 1;
        }
        let ns = now.saturating_duration_since(p.sent).as_nanos().max(1) as u64;
        let _ = st.hist.record(ns.min(60_000_000_000));
    }

    /// Consume complete replies from the read buffer.
    fn parse(&mut self, now: Instant, value_size: usize, win: &Window, st: &mut Stats) {
        while let Some(front) = self.inflight.front_mut() {
            let buf = &self.rbuf[self.rstart..self.rend];
            match front.kind {
                Kind::Set => {
                    let Some(nl) = find_nl(buf) else { return };
                    let ok = &buf[..=nl] == b"STORED\r\n";
                    if !ok {
                        note_error(&buf[..=nl]);
                    }
                    self.rstart += nl + 1;
                    let p = self.inflight.pop_front().unwrap();
                    Self::complete(p, ok, now, win, st);
                }
                Kind::Get { .. } => {
                    let Some(nl) = find_nl(buf) else { return };
                    let line = &buf[..=nl];
                    if line == b"END\r\n" {
                        self.rstart += nl + 1;
                        let p = self.inflight.pop_front().unwrap();
                        Self::complete(p, true, now, win, st);
                    } else if line.starts_with(b"VALUE ") {
                        // VALUE <key> <flags> <bytes> [<cas>]\r\n<data>\r\n
                        let text = &line[6..line.len().saturating_sub(2)];
                        let mut toks = text.split(|&c| c == b' ');
                        let key = toks.next().unwrap_or(b"");
                        let _flags = toks.next();
                        let bytes: Option<usize> =
                            toks.next().and_then(|t| std::str::from_utf8(t).ok()).and_then(|t| t.parse().ok());
                        let Some(bytes) = bytes else {
                            // unparseable: treat as a protocol error and drop the connection
                            self.dead = true;
                            return;
                        };
                        let need = line.len() + bytes + 2;
                        if buf.len() < need {
                            return;
                        }
                        let data = &buf[line.len()..line.len() + bytes];
                        let good = bytes == value_size
                            && &buf[line.len() + bytes..need] == b"\r\n"
                            && (value_size < DIGITS
                                || (key.len() >= DIGITS && data[..DIGITS] == key[key.len() - DIGITS..]));
                        if good {
                            front.hits += 1;
                        } else {
                            front.bad += 1;
                        }
                        self.rstart += need;
                    } else {
                        // ERROR / CLIENT_ERROR / SERVER_ERROR ends this request
                        note_error(line);
                        self.rstart += nl + 1;
                        let p = self.inflight.pop_front().unwrap();
                        Self::complete(p, false, now, win, st);
                    }
                }
            }
        }
    }

    /// Read what is there (edge-triggered: until a short read or WouldBlock) and parse it.
    fn on_readable(&mut self, value_size: usize, win: &Window, st: &mut Stats) -> Option<Instant> {
        let mut last = None;
        loop {
            if self.rstart == self.rend {
                self.rstart = 0;
                self.rend = 0;
            }
            if self.rend == self.rbuf.len() {
                if self.rstart > 0 {
                    self.rbuf.copy_within(self.rstart..self.rend, 0);
                    self.rend -= self.rstart;
                    self.rstart = 0;
                } else {
                    let n = self.rbuf.len() * 2;
                    self.rbuf.resize(n, 0);
                }
            }
            let space = self.rbuf.len() - self.rend;
            match self.stream.read(&mut self.rbuf[self.rend..]) {
                Ok(0) => {
                    self.dead = true;
                    return last;
                }
                Ok(n) => {
                    self.rend += n;
                    let now = Instant::now();
                    self.parse(now, value_size, win, st);
                    last = Some(now);
                    if self.dead || n < space {
                        return last;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return last,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.dead = true;
                    return last;
                }
            }
        }
    }

    fn flush(&mut self) {
        while self.wpos < self.wbuf.len() {
            match self.stream.write(&self.wbuf[self.wpos..]) {
                Ok(0) => {
                    self.dead = true;
                    return;
                }
                Ok(n) => self.wpos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.dead = true;
                    return;
                }
            }
        }
        self.wbuf.clear();
        self.wpos = 0;
    }
}

struct Driver {
    poll: Poll,
    conns: Vec<Conn>,
    gen: Gen,
    depth: usize,
    value_size: usize,
    stall: Duration,
}

impl Driver {
    fn new(streams: Vec<StdTcpStream>, gen: Gen, depth: usize, stall: Duration) -> io::Result<Driver> {
        let poll = Poll::new()?;
        let mut conns = Vec::with_capacity(streams.len());
        for (i, s) in streams.into_iter().enumerate() {
            s.set_nonblocking(true)?;
            let mut m = TcpStream::from_std(s);
            poll.registry().register(&mut m, Token(i), Interest::READABLE | Interest::WRITABLE)?;
            conns.push(Conn::new(m));
        }
        let value_size = gen.value_size;
        Ok(Driver { poll, conns, gen, depth: depth.max(1), value_size, stall })
    }

    fn refill(conn: &mut Conn, gen: &mut Gen, depth: usize, now: Instant) {
        while conn.inflight.len() < depth {
            match gen.push_request(&mut conn.wbuf) {
                Some(kind) => conn.inflight.push_back(Pending { sent: now, kind, hits: 0, bad: 0 }),
                None => break,
            }
        }
    }

    /// Drive all connections until `until` (if given) or until a sequential key source is used
    /// up and every reply is in. Errors if the server stalls or every connection died.
    ///
    /// With `issue == false` no new requests are sent: it returns once every reply in flight is in
    /// (a drain, used when switching between servers).
    fn run(&mut self, until: Option<Instant>, issue: bool, win: &Window, st: &mut Stats) -> Result<(), String> {
        let now = Instant::now();
        if issue {
            for c in self.conns.iter_mut().filter(|c| !c.dead) {
                Self::refill(c, &mut self.gen, self.depth, now);
                c.flush();
            }
        }
        let mut events = Events::with_capacity(1024);
        let mut last_progress = Instant::now();
        loop {
            let now = Instant::now();
            if let Some(u) = until {
                if now >= u {
                    return Ok(());
                }
            }
            if (!issue || self.gen.exhausted()) && self.conns.iter().all(|c| c.inflight.is_empty() || c.dead) {
                return Ok(());
            }
            if self.conns.iter().all(|c| c.dead) {
                return Err("every connection was closed by the server".into());
            }
            if now.duration_since(last_progress) > self.stall {
                return Err(format!("no reply for {:?}: server stalled", self.stall));
            }
            let mut timeout = Duration::from_millis(100);
            if let Some(u) = until {
                timeout = timeout.min(u.saturating_duration_since(now));
            }
            match self.poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("poll: {e}")),
            }
            let issuing = issue && until.is_none_or(|u| Instant::now() < u);
            for ev in events.iter() {
                let Some(c) = self.conns.get_mut(ev.token().0) else { continue };
                if c.dead {
                    continue;
                }
                if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                    if let Some(t) = c.on_readable(self.value_size, win, st) {
                        last_progress = t;
                        if issuing && !c.dead {
                            Self::refill(c, &mut self.gen, self.depth, t);
                        }
                    }
                }
                if !c.dead && c.wpos < c.wbuf.len() {
                    c.flush();
                }
                if c.dead {
                    st.c.errors += c.inflight.len() as u64;
                    c.inflight.clear();
                    let _ = self.poll.registry().deregister(&mut c.stream);
                }
            }
        }
    }
}

fn connect(addr: SocketAddr, n: usize) -> Vec<StdTcpStream> {
    (0..n)
        .map(|_| {
            let s = StdTcpStream::connect_timeout(&addr, Duration::from_secs(5))
                .unwrap_or_else(|e| die(&format!("connect {addr}: {e}")));
            s.set_nodelay(true).ok();
            s
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// /proc helpers (CPU time of the server and of ourselves, resident memory of the server)

fn clk_tck() -> f64 {
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// user+system CPU seconds of a process (all its threads).
fn cpu_secs(pid: &str) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // fields after "(comm) ": state=0 ... utime=11 stime=12
    let ut: f64 = f.get(11)?.parse().ok()?;
    let stt: f64 = f.get(12)?.parse().ok()?;
    Some((ut + stt) / clk_tck())
}

fn rss_kb(pid: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

// ---------------------------------------------------------------------------------------------
// `stats` over a plain blocking connection

fn server_stats(addr: SocketAddr) -> Option<BTreeMap<String, String>> {
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

fn stat_u64(m: &Option<BTreeMap<String, String>>, k: &str) -> Option<u64> {
    m.as_ref()?.get(k)?.parse().ok()
}

fn opt(v: Option<u64>) -> String {
    v.map_or("na".to_string(), |v| v.to_string())
}

// ---------------------------------------------------------------------------------------------
// subcommands

fn make_gen(a: &Args, keys: KeySource, seed: u64) -> Gen {
    let value_size: usize = a.num("value-size", 32);
    Gen {
        prefix: a.str("prefix", "key:").into_bytes(),
        filler: (0..value_size).map(|i| b'a' + (i % 26) as u8).collect(),
        value_size,
        set_ratio: a.num("set-ratio", 0.0),
        mget: a.num::<usize>("mget", 1).max(1),
        keys,
        rng: Rng::new(seed),
    }
}

/// `--dist uniform` (default) or `--dist zipf [--zipf-theta 0.99]` over key indexes 0..keys.
fn random_keys(a: &Args, keys: u64) -> KeySource {
    match a.str("dist", "uniform").as_str() {
        "uniform" => KeySource::Random(keys),
        "zipf" => KeySource::Zipf(Zipf::new(keys, a.num("zipf-theta", 0.99))),
        other => die(&format!("--dist must be uniform or zipf, not {other:?}")),
    }
}

fn all_time() -> Window {
    let now = Instant::now();
    Window { start: now - Duration::from_secs(1), end: now + Duration::from_secs(365 * 24 * 3600) }
}

/// Set keys [from, to) with `conns` connections, `depth` requests in flight each.
fn fill_range(
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

fn cmd_load(a: &Args) {
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

/// `scan`: get every key 0..keys once, `--mget` (default 100) keys per request, `--conns`
/// connections with `--depth` requests in flight each (bench/containers.sh: fills the memory
/// copy of a `caching` container). Reports hits; exits 2 on errors.
fn cmd_scan(a: &Args) {
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

/// `--addr A` measures one server. `--addr A,B` measures two servers in the same run by time
/// slicing: the load goes to A for `--slice` seconds, then (after A's replies in flight are in) to
/// B, and so on, so that whatever else the machine is doing hits both alike. Each server gets
/// `--warmup` unmeasured and `--duration` measured seconds in total. One RESULT line per server.
fn cmd_run(a: &Args) {
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
    let mut per_thread: Vec<Vec<Vec<StdTcpStream>>> =
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

/// `stats --addr A`: one line `STATS name=value ...` with every statistic (spaces in values
/// become `_`), for scripts that take deltas around a run.
fn cmd_stats(a: &Args) {
    let addr = a.addr();
    let s = server_stats(addr).unwrap_or_else(|| die(&format!("no stats from {addr}")));
    let mut line = String::from("STATS");
    for (k, v) in &s {
        line.push_str(&format!(" {}={}", k, v.replace(' ', "_")));
    }
    println!("{line}");
}

fn unix_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

/// One blocking `get` of `key` on `s`: Ok(Some(true)) for a hit with the right value,
/// Ok(Some(false)) for a miss (or a wrong value), Err on a closed connection or an error reply.
fn probe_get(r: &mut BufReader<StdTcpStream>, key: &[u8], value_size: usize) -> io::Result<bool> {
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
fn cmd_restart(a: &Args) {
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

fn cmd_capacity(a: &Args) {
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

// ---------------------------------------------------------------------------------------------
// report: TSV lines "<case>\t<server>\t<rep>\t<RESULT|CAPACITY k=v ...>" -> markdown

fn case_title(c: &str) -> String {
    match c {
        "a" => "a: 90/10 get/set".into(),
        "b" => "b: get only".into(),
        "c" => "c: 10-key multiget".into(),
        "d" => "d: pipelined gets (16 in flight)".into(),
        "m" => "m: memcaslap 90/10 (cross-check)".into(),
        other => other.into(),
    }
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn thousands(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let s = format!("{:.0}", v);
    let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    format!("{sign}{out}")
}

fn fmt_f(v: f64, prec: usize) -> String {
    if v.is_finite() {
        format!("{:.*}", prec, v)
    } else {
        "n/a".into()
    }
}

fn ratio(s: f64, m: f64) -> String {
    if s.is_finite() && m.is_finite() && m > 0.0 {
        format!("**{:.2}**", s / m)
    } else {
        "n/a".into()
    }
}

fn cmd_report(a: &Args) {
    let path = a.str("input", "");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| die(&format!("read {path}: {e}")));
    // case -> server -> list of k=v maps
    let mut runs: BTreeMap<String, BTreeMap<String, Vec<BTreeMap<String, String>>>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut failed: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.splitn(4, '\t').collect();
        if f.len() < 4 {
            continue;
        }
        if f[3].starts_with("FAILED") {
            *failed.entry((f[0].to_string(), f[1].to_string())).or_insert(0) += 1;
            let reason: String = f[3].chars().take(300).collect();
            failures.push(format!("- case {} {} rep {}: {}", f[0], f[1], f[2], reason));
            if !order.contains(&f[0].to_string()) {
                order.push(f[0].to_string());
            }
            runs.entry(f[0].into()).or_default().entry(f[1].into()).or_default();
            continue;
        }
        let mut kv: BTreeMap<String, String> = f[3]
            .split_whitespace()
            .filter_map(|t| t.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
            .collect();
        kv.insert("rep".into(), f[2].to_string());
        if !order.contains(&f[0].to_string()) {
            order.push(f[0].to_string());
        }
        runs.entry(f[0].into()).or_default().entry(f[1].into()).or_default().push(kv);
    }
    let servers = ["memcached", "sqlcached"];
    let med = |rs: &Vec<BTreeMap<String, String>>, k: &str| -> f64 {
        let mut v: Vec<f64> = rs.iter().filter_map(|r| r.get(k)?.parse().ok()).collect();
        median(&mut v)
    };
    let minmax = |rs: &Vec<BTreeMap<String, String>>, k: &str| -> (f64, f64) {
        let v: Vec<f64> = rs.iter().filter_map(|r| r.get(k)?.parse().ok()).collect();
        (v.iter().cloned().fold(f64::INFINITY, f64::min), v.iter().cloned().fold(f64::NEG_INFINITY, f64::max))
    };
    let empty = Vec::new();
    let runs_col = |c: &str, s: &str, n: usize| -> String {
        match failed.get(&(c.to_string(), s.to_string())) {
            Some(f) => format!("{n} (+{f} FAILED)"),
            None => n.to_string(),
        }
    };

    let perf_cases: Vec<&String> = order.iter().filter(|c| c.as_str() != "e").collect();
    if !perf_cases.is_empty() {
        println!("| case | server | ops/s (median) | ops/s min–max | p50 µs | p99 µs | p99.9 µs | hit % | errors | server CPU µs/op | loadgen CPU % | runs |");
        println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for c in perf_cases {
            let by = &runs[c];
            let mut vals = BTreeMap::new();
            for s in servers {
                let rs = by.get(s).unwrap_or(&empty);
                let ops = med(rs, "ops_s");
                let (lo, hi) = minmax(rs, "ops_s");
                let p50 = med(rs, "p50_us");
                let p99 = med(rs, "p99_us");
                let p999 = med(rs, "p999_us");
                let keys: f64 = rs.iter().filter_map(|r| r.get("keys")?.parse::<f64>().ok()).sum();
                let hits: f64 = rs.iter().filter_map(|r| r.get("hits")?.parse::<f64>().ok()).sum();
                let errs: f64 = rs.iter().filter_map(|r| r.get("errors")?.parse::<f64>().ok()).sum::<f64>()
                    + rs.iter().filter_map(|r| r.get("bad")?.parse::<f64>().ok()).sum::<f64>();
                let mut cpu_op: Vec<f64> = rs
                    .iter()
                    .filter_map(|r| {
                        let cpu: f64 = r.get("srv_cpu_s")?.parse().ok()?;
                        let ops: f64 = r.get("ops")?.parse().ok()?;
                        (ops > 0.0).then(|| cpu * 1e6 / ops)
                    })
                    .collect();
                let cpu_op = median(&mut cpu_op);
                let mut lg: Vec<f64> = rs
                    .iter()
                    .filter_map(|r| {
                        let cpu: f64 = r.get("lg_cpu_s")?.parse().ok()?;
                        let secs: f64 = r.get("lg_secs").or(r.get("secs"))?.parse().ok()?;
                        Some(100.0 * cpu / secs)
                    })
                    .collect();
                let lg = median(&mut lg);
                let hitp = if keys > 0.0 { fmt_f(100.0 * hits / keys, 1) } else { "–".into() };
                println!(
                    "| {} | {} | {} | {}–{} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    case_title(c),
                    s,
                    thousands(ops),
                    thousands(lo),
                    thousands(hi),
                    fmt_f(p50, 1),
                    fmt_f(p99, 1),
                    fmt_f(p999, 1),
                    hitp,
                    errs.max(0.0) as u64,
                    fmt_f(cpu_op, 2),
                    fmt_f(lg, 0),
                    runs_col(c, s, rs.len())
                );
                vals.insert(s, (ops, p50, p99, p999, cpu_op));
            }
            let (mo, m50, m99, m999, mc) = vals["memcached"];
            let (so, s50, s99, s999, sc) = vals["sqlcached"];
            // Ratios: the median over repetitions of sqlcached/memcached within one repetition (the
            // two ran interleaved, so they shared the machine's noise); the ratio of the medians
            // when there are no pairs.
            let metric = |r: &BTreeMap<String, String>, k: &str| -> Option<f64> {
                if k == "cpu_op" {
                    let cpu: f64 = r.get("srv_cpu_s")?.parse().ok()?;
                    let ops: f64 = r.get("ops")?.parse().ok()?;
                    (ops > 0.0).then(|| cpu * 1e6 / ops)
                } else {
                    r.get(k)?.parse().ok()
                }
            };
            let pairs = |k: &str| -> Vec<f64> {
                by.get("sqlcached")
                    .unwrap_or(&empty)
                    .iter()
                    .filter_map(|r| {
                        let sv = metric(r, k)?;
                        let m = by.get("memcached")?.iter().find(|m| m.get("rep") == r.get("rep"))?;
                        let mv = metric(m, k)?;
                        (mv > 0.0 && sv.is_finite()).then(|| sv / mv)
                    })
                    .collect()
            };
            let pratio = |k: &str, s: f64, m: f64| -> String {
                let mut p = pairs(k);
                if p.is_empty() {
                    ratio(s, m)
                } else {
                    format!("**{:.2}**", median(&mut p))
                }
            };
            let mut paired = pairs("ops_s");
            paired.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let spread = if paired.is_empty() {
                String::new()
            } else {
                let list: Vec<String> = paired.iter().map(|r| format!("{r:.2}")).collect();
                format!("per rep: {}", list.join(" · "))
            };
            println!(
                "| {} | ratio sqlcached/memcached | {} | {} | {} | {} | {} | | | {} | | |",
                case_title(c),
                pratio("ops_s", so, mo),
                spread,
                pratio("p50_us", s50, m50),
                pratio("p99_us", s99, m99),
                pratio("p999_us", s999, m999),
                pratio("cpu_op", sc, mc)
            );
        }
        println!();
    }

    if let Some(by) = runs.get("e") {
        println!("Capacity (e): distinct keys with 100-byte values set into a fresh server started with `-m 64`,");
        println!("past the first eviction, then every written key read back (`items held` = hits on that scan).");
        println!();
        println!("| server | items held (scan hits, median) | curr_items | items when evictions began | keys written | evictions | failed sets | RSS MiB | runs |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        let mut held = BTreeMap::new();
        for s in servers {
            let rs = by.get(s).unwrap_or(&empty);
            let h = med(rs, "scan_hits");
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                s,
                thousands(h),
                thousands(med(rs, "curr_items")),
                thousands(med(rs, "items_at_first_evict")),
                thousands(med(rs, "written")),
                thousands(med(rs, "evictions")),
                {
                    // all repetitions, with the wrong values the scan saw
                    let v: Vec<String> = rs
                        .iter()
                        .map(|r| {
                            let e: u64 = r.get("set_errors").and_then(|x| x.parse().ok()).unwrap_or(0);
                            let b: u64 = r.get("scan_bad").and_then(|x| x.parse().ok()).unwrap_or(0);
                            if b > 0 {
                                format!("{e} (+{b} bad values)")
                            } else {
                                e.to_string()
                            }
                        })
                        .collect();
                    v.join(" · ")
                },
                fmt_f(med(rs, "rss_kb") / 1024.0, 1),
                runs_col("e", s, rs.len())
            );
            held.insert(s, (h, med(rs, "rss_kb")));
        }
        println!(
            "| ratio sqlcached/memcached | {} | | | | | | {} | |",
            ratio(held["sqlcached"].0, held["memcached"].0),
            ratio(held["sqlcached"].1, held["memcached"].1)
        );
        println!();
    }
    if !failures.is_empty() {
        println!("Failed measurements (not in the medians):");
        println!();
        for f in &failures {
            println!("{f}");
        }
        println!();
    }
}

// ---------------------------------------------------------------------------------------------
// persist-report: the TSV of bench/persist.sh -> markdown

const PERSIST_SERVERS: [&str; 4] = ["memcached", "sqlcached-mem", "sqlcached-async", "sqlcached-sync"];

struct Row {
    case: String,
    server: String,
    rep: String,
    kv: BTreeMap<String, String>,
}

impl Row {
    fn f(&self, k: &str) -> Option<f64> {
        self.kv.get(k)?.parse().ok()
    }
}

fn server_label(s: &str) -> &str {
    match s {
        "memcached" => "memcached (memory)",
        "sqlcached-mem" => "sqlcached (memory only)",
        "sqlcached-async" => "sqlcached --durability async",
        "sqlcached-sync" => "sqlcached --durability sync",
        other => other,
    }
}

fn short_k(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn cmd_persist_report(a: &Args) {
    let path = a.str("input", "");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| die(&format!("read {path}: {e}")));
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.splitn(4, '\t').collect();
        if f.len() < 4 {
            continue;
        }
        if f[3].starts_with("FAILED") {
            failures.push(format!("- {} {} rep {}: {}", f[0], f[1], f[2], f[3].chars().take(300).collect::<String>()));
            continue;
        }
        let kv = f[3]
            .split_whitespace()
            .filter_map(|t| t.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
            .collect();
        rows.push(Row { case: f[0].into(), server: f[1].into(), rep: f[2].into(), kv });
    }
    let sel = |case: &str, server: &str| -> Vec<&Row> {
        rows.iter().filter(|r| r.case == case && r.server == server).collect()
    };
    let med_of = |rs: &[&Row], k: &str| -> f64 {
        let mut v: Vec<f64> = rs.iter().filter_map(|r| r.f(k)).collect();
        median(&mut v)
    };
    let sum_of = |rs: &[&Row], k: &str| -> f64 { rs.iter().filter_map(|r| r.f(k)).sum() };

    // 1. throughput
    let mut perf_cases: Vec<String> = Vec::new();
    for r in &rows {
        if r.kv.contains_key("ops_s") && !r.case.starts_with("read") && !perf_cases.contains(&r.case) {
            perf_cases.push(r.case.clone());
        }
    }
    let mut goal_ratio: BTreeMap<(String, String), f64> = BTreeMap::new();
    if !perf_cases.is_empty() {
        println!("### Throughput (all four servers interleaved in one load generator run per repetition)");
        println!();
        println!("| workload | server | ops/s (median) | ops/s min–max | × memcached (per-rep ratios) | p50 µs | p99 µs | server CPU µs/op | sets per batch | fsyncs/s | sets per fsync | runs |");
        println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for c in &perf_cases {
            let any = rows.iter().find(|r| &r.case == c && r.kv.contains_key("set_ratio"));
            let sr: f64 = any.and_then(|r| r.f("set_ratio")).unwrap_or(f64::NAN);
            let conns = any.and_then(|r| r.kv.get("conns").cloned()).unwrap_or_default();
            let title = if sr >= 1.0 {
                format!("{c}: 100 % sets, {conns} conns")
            } else if sr.is_finite() {
                format!("{c}: {:.0}/{:.0} get/set, {conns} conns", 100.0 * (1.0 - sr), 100.0 * sr)
            } else {
                c.clone()
            };
            let mc = sel(c, "memcached");
            for s in PERSIST_SERVERS {
                let rs = sel(c, s);
                if rs.is_empty() {
                    continue;
                }
                let ops: Vec<f64> = rs.iter().filter_map(|r| r.f("ops_s")).collect();
                let lo = ops.iter().cloned().fold(f64::INFINITY, f64::min);
                let hi = ops.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let mut ratios: Vec<f64> = rs
                    .iter()
                    .filter_map(|r| {
                        let m = mc.iter().find(|m| m.rep == r.rep)?.f("ops_s")?;
                        let v = r.f("ops_s")?;
                        (m > 0.0).then_some(v / m)
                    })
                    .collect();
                let list: Vec<String> = ratios.iter().map(|x| format!("{x:.2}")).collect();
                let rmed = median(&mut ratios);
                if s != "memcached" {
                    goal_ratio.insert((c.clone(), s.to_string()), rmed);
                }
                let mut cpu: Vec<f64> = rs
                    .iter()
                    .filter_map(|r| {
                        let (c, o) = (r.f("srv_cpu_s")?, r.f("ops")?);
                        (o > 0.0).then(|| c * 1e6 / o)
                    })
                    .collect();
                let disk = rs.iter().any(|r| r.kv.contains_key("d_batches"));
                let (batch, fps, per_fsync) = if disk {
                    let w = sum_of(&rs, "d_writes");
                    let b = sum_of(&rs, "d_batches");
                    let fs = sum_of(&rs, "d_fsyncs");
                    let mut fsps: Vec<f64> = rs
                        .iter()
                        .filter_map(|r| {
                            let (f, t) = (r.f("d_fsyncs")?, r.f("d_secs")?);
                            (t > 0.0).then_some(f / t)
                        })
                        .collect();
                    (
                        if b > 0.0 { fmt_f(w / b, 1) } else { "–".into() },
                        fmt_f(median(&mut fsps), 0),
                        if fs > 0.0 { fmt_f(w / fs, 1) } else { "–".into() },
                    )
                } else {
                    ("–".into(), "–".into(), "–".into())
                };
                println!(
                    "| {} | {} | {} | {}–{} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    title,
                    server_label(s),
                    thousands(median(&mut ops.clone())),
                    thousands(lo),
                    thousands(hi),
                    if s == "memcached" {
                        "1".into()
                    } else {
                        format!("**{}** ({})", fmt_f(rmed, 2), list.join(" · "))
                    },
                    fmt_f(med_of(&rs, "p50_us"), 0),
                    fmt_f(med_of(&rs, "p99_us"), 0),
                    fmt_f(median(&mut cpu), 2),
                    batch,
                    fps,
                    per_fsync,
                    rs.len()
                );
            }
        }
        println!();
        let goal = |s: &str, want: f64, what: &str| {
            for c in &perf_cases {
                let is_sets = rows.iter().any(|r| &r.case == c && r.f("set_ratio") == Some(1.0));
                if let (true, Some(v)) = (is_sets, goal_ratio.get(&(c.clone(), s.to_string()))) {
                    // the per-repetition ratios, to show when the verdict is within the noise
                    let mc = sel(c, "memcached");
                    let per: Vec<f64> = sel(c, s)
                        .iter()
                        .filter_map(|r| {
                            let m = mc.iter().find(|m| m.rep == r.rep)?.f("ops_s")?;
                            let v = r.f("ops_s")?;
                            (m > 0.0).then_some(v / m)
                        })
                        .collect();
                    let lo = per.iter().cloned().fold(f64::INFINITY, f64::min);
                    let hi = per.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let verdict = if *v >= want { "met" } else { "**not met**" };
                    let straddle = if lo < want && hi >= want {
                        " (the per-repetition ratios straddle the goal: within the noise)"
                    } else {
                        ""
                    };
                    println!(
                        "- {what}, case `{c}`: **{}× memcached** (median; per repetition {}–{}), goal ≥ {want}×: {verdict}{straddle}",
                        fmt_f(*v, 2),
                        fmt_f(lo, 2),
                        fmt_f(hi, 2)
                    );
                }
            }
        };
        goal("sqlcached-sync", 0.3, "sync sets, 50 writer connections (InnoDB memcached plugin: 0.26×)");
        goal("sqlcached-async", 0.8, "async sets");
        println!();
    }

    // 2. restart to first hit
    let restarts: Vec<&Row> = rows.iter().filter(|r| r.case.starts_with("restart")).collect();
    if !restarts.is_empty() {
        println!("### Restart to first hit");
        println!();
        println!("| server | stopped by | restart | items on disk | data dir MiB | stop took ms | exec → accepting ms | exec → first reply ms | exec → first hit ms | < 2 s |");
        println!("|---|---|---|---:|---:|---:|---:|---:|---:|---|");
        for r in &restarts {
            let sig = r.case.trim_start_matches("restart-").to_uppercase();
            let hit = r.f("first_hit_ms");
            println!(
                "| {} | SIG{} | {} | {} | {} | {} | {} | {} | {} | {} |",
                server_label(&r.server),
                sig,
                if r.rep == "1" { "1 (right after the load)".to_string() } else { r.rep.clone() },
                r.f("items").map_or("n/a".into(), thousands),
                fmt_f(r.f("disk_mb").unwrap_or(f64::NAN), 0),
                r.f("stop_ms").map_or("–".into(), |v| fmt_f(v, 0)),
                fmt_f(r.f("connect_ms").unwrap_or(f64::NAN), 1),
                fmt_f(r.f("first_reply_ms").unwrap_or(f64::NAN), 1),
                hit.map_or("never".into(), |v| format!("**{}**", fmt_f(v, 1))),
                match hit {
                    Some(v) if v < 2000.0 => "yes",
                    _ => "**no**",
                }
            );
        }
        for r in rows.iter().filter(|r| r.case.starts_with("read") && r.server == "memcached").take(1) {
            println!(
                "| {} | SIGTERM | (any) | 0 | – | – | {} | – | never: memory only, empty after a restart | – |",
                server_label(&r.server),
                fmt_f(r.f("connect_ms").unwrap_or(f64::NAN), 1)
            );
        }
        println!();
    }

    // 3. reads right after a restart
    let reads: Vec<&Row> = rows.iter().filter(|r| r.case.starts_with("read")).collect();
    if !reads.is_empty() {
        let secs = reads.iter().map(|r| r.kv.get("per_sec").map_or(0, |p| p.split(',').count())).max().unwrap_or(0);
        println!("### Reads in the first {secs} s after a restart (cells: hit % · gets/s in that second)");
        println!();
        let mut head = "| server | keys read | exec → accepting ms |".to_string();
        let mut rule = "|---|---|---:|".to_string();
        for i in 1..=secs {
            head.push_str(&format!(" s{i} |"));
            rule.push_str("---:|");
        }
        head.push_str(" all: hit % | all: gets/s | p50 µs | p99 µs | disk_hits |");
        rule.push_str("---:|---:|---:|---:|---:|");
        println!("{head}");
        println!("{rule}");
        for r in &reads {
            let mut line = format!(
                "| {} | {} | {} |",
                server_label(&r.server),
                match r.kv.get("dist").map(|s| s.as_str()) {
                    Some("zipf") => format!(
                        "zipf θ={} over {}",
                        r.kv.get("zipf_theta").map_or("0.99", |s| s),
                        r.kv.get("keys_n").map_or("?", |s| s)
                    ),
                    _ => format!("uniform over {}", r.kv.get("keys_n").map_or("?", |s| s)),
                },
                fmt_f(r.f("connect_ms").unwrap_or(f64::NAN), 0)
            );
            let per: Vec<(f64, f64, f64)> =
                r.kv.get("per_sec")
                    .map(|p| {
                        p.split(',')
                            .filter_map(|x| {
                                let v: Vec<f64> = x.split('/').filter_map(|y| y.parse().ok()).collect();
                                (v.len() == 3).then(|| (v[0], v[1], v[2]))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
            for i in 0..secs {
                match per.get(i) {
                    Some(&(ops, hits, keys)) => {
                        let hp = if keys > 0.0 { 100.0 * hits / keys } else { f64::NAN };
                        line.push_str(&format!(
                            " {} % · {} |",
                            fmt_f(hp, if hp > 99.0 && hp < 100.0 { 1 } else { 0 }),
                            short_k(ops)
                        ));
                    }
                    None => line.push_str(" |"),
                }
            }
            let (keys, hits) = (r.f("keys").unwrap_or(0.0), r.f("hits").unwrap_or(0.0));
            line.push_str(&format!(
                " {} | {} | {} | {} | {} |",
                if keys > 0.0 { fmt_f(100.0 * hits / keys, 1) } else { "n/a".into() },
                thousands(r.f("ops_s").unwrap_or(f64::NAN)),
                fmt_f(r.f("p50_us").unwrap_or(f64::NAN), 0),
                fmt_f(r.f("p99_us").unwrap_or(f64::NAN), 0),
                r.kv.get("disk_hits").map_or("–".to_string(), |v| thousands(v.parse().unwrap_or(f64::NAN)))
            ));
            println!("{line}");
        }
        println!();
    }
    if !failures.is_empty() {
        println!("Failed measurements:");
        println!();
        for f in &failures {
            println!("{f}");
        }
        println!();
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = argv.first() else {
        die("usage: loadgen <load|scan|run|capacity|stats|restart|report|persist-report> [--name value ...] (see bench/README.md)");
    };
    let a = Args::parse(&argv[1..]);
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
