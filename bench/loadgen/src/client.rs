//! Connections and the mio event loop that drives them with pipelined text-protocol requests.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream as StdTcpStream};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use crate::transport::{handshake, Handshaken, Transport};

use crate::args::die;
use crate::request::{Gen, Kind, DIGITS};

pub(crate) struct Pending {
    pub(crate) sent: Instant,
    pub(crate) kind: Kind,
    pub(crate) hits: u32,
    pub(crate) bad: u32,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) ops: u64,
    pub(crate) keys: u64,
    pub(crate) hits: u64,
    pub(crate) errors: u64,
    pub(crate) bad: u64,
    pub(crate) sets: u64,
}

pub(crate) struct Stats {
    pub(crate) hist: Histogram<u64>,
    pub(crate) c: Counters,
}

impl Stats {
    pub(crate) fn new() -> Stats {
        Stats { hist: Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("histogram"), c: Counters::default() }
    }
    pub(crate) fn merge(&mut self, o: &Stats) {
        self.hist.add(&o.hist).expect("histogram add");
        self.c.ops += o.c.ops;
        self.c.keys += o.c.keys;
        self.c.hits += o.c.hits;
        self.c.errors += o.c.errors;
        self.c.bad += o.c.bad;
        self.c.sets += o.c.sets;
    }
}

pub(crate) struct Window {
    pub(crate) start: Instant,
    pub(crate) end: Instant,
}

pub(crate) struct Conn {
    pub(crate) stream: Transport,
    pub(crate) wbuf: Vec<u8>,
    pub(crate) wpos: usize,
    pub(crate) rbuf: Vec<u8>,
    pub(crate) rstart: usize,
    pub(crate) rend: usize,
    pub(crate) inflight: VecDeque<Pending>,
    pub(crate) dead: bool,
}

/// Print the first error reply of the process to stderr (once), for diagnosis.
pub(crate) fn note_error(line: &[u8]) {
    static SEEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SEEN.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!("loadgen: first error reply: {:?}", String::from_utf8_lossy(line).trim_end());
    }
}

pub(crate) fn find_nl(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

impl Conn {
    pub(crate) fn new(stream: Transport) -> Conn {
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

    pub(crate) fn complete(p: Pending, ok: bool, now: Instant, win: &Window, st: &mut Stats) {
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
    pub(crate) fn parse(&mut self, now: Instant, value_size: usize, win: &Window, st: &mut Stats) {
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
    pub(crate) fn on_readable(&mut self, value_size: usize, win: &Window, st: &mut Stats) -> Option<Instant> {
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
                    if self.dead || (n < space && !self.stream.is_tls()) {
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

    pub(crate) fn flush(&mut self) {
        if self.stream.flush_tls().is_err() {
            self.dead = true;
            return;
        }
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

pub(crate) struct Driver {
    pub(crate) poll: Poll,
    pub(crate) conns: Vec<Conn>,
    pub(crate) gen: Gen,
    pub(crate) depth: usize,
    pub(crate) value_size: usize,
    pub(crate) stall: Duration,
}

impl Driver {
    pub(crate) fn new(streams: Vec<Handshaken>, gen: Gen, depth: usize, stall: Duration) -> io::Result<Driver> {
        let poll = Poll::new()?;
        let mut conns = Vec::with_capacity(streams.len());
        for (i, h) in streams.into_iter().enumerate() {
            let mut t = match h {
                Handshaken::Plain(s) => {
                    s.set_nonblocking(true)?;
                    Transport::Plain(TcpStream::from_std(s))
                }
                Handshaken::Tls(s, c) => {
                    s.set_nonblocking(true)?;
                    Transport::Tls(TcpStream::from_std(s), c)
                }
            };
            poll.registry().register(t.socket(), Token(i), Interest::READABLE | Interest::WRITABLE)?;
            conns.push(Conn::new(t));
        }
        let value_size = gen.value_size;
        Ok(Driver { poll, conns, gen, depth: depth.max(1), value_size, stall })
    }

    pub(crate) fn refill(conn: &mut Conn, gen: &mut Gen, depth: usize, now: Instant) {
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
    pub(crate) fn run(
        &mut self,
        until: Option<Instant>,
        issue: bool,
        win: &Window,
        st: &mut Stats,
    ) -> Result<(), String> {
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
                if !c.dead && (c.wpos < c.wbuf.len() || c.stream.wants_write()) {
                    c.flush();
                }
                if c.dead {
                    st.c.errors += c.inflight.len() as u64;
                    c.inflight.clear();
                    let _ = self.poll.registry().deregister(c.stream.socket());
                }
            }
        }
    }
}

pub(crate) fn connect(addr: SocketAddr, n: usize) -> Vec<Handshaken> {
    (0..n)
        .map(|_| {
            let s = StdTcpStream::connect_timeout(&addr, Duration::from_secs(5))
                .unwrap_or_else(|e| die(&format!("connect {addr}: {e}")));
            s.set_nodelay(true).ok();
            handshake(s)
        })
        .collect()
}

pub(crate) fn all_time() -> Window {
    let now = Instant::now();
    Window { start: now - Duration::from_secs(1), end: now + Duration::from_secs(365 * 24 * 3600) }
}
