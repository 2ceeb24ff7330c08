//! Meta protocol replies from outcomes (memory or container alike): the return code, then
//! the requested flags in the request's order, `O` and `k` echoed on every reply.

use engine::ops::{ArithOutcome, DeleteOutcome, StoreOutcome};
use protocol_memcache::meta::{self, MetaCmd, MetaRequest};
use protocol_memcache::text::reply;

use crate::outcome::{Dump, Hit, Outcome, Reply, Ttls};
use crate::pending::Fail;

/// What a meta reply echoes from its request (borrowed from the read buffer, or owned by
/// a pending job: `T` is `&[u8]` or `Vec<u8>`), and its shape.
pub struct Echo<'a, T: AsRef<[u8]>> {
    /// The command.
    pub cmd: MetaCmd,
    /// The request's flag tokens, in order.
    pub tokens: &'a [T],
    /// The key as decoded (echoed by `k`, base64 again under `b`).
    pub key: &'a [u8],
    /// `b`: the key is base64 on the wire.
    pub b64: bool,
    /// `q`: hide the nominal reply.
    pub quiet: bool,
    /// `v`: return the value.
    pub value: bool,
}

impl<'a> Echo<'a, &'a [u8]> {
    /// The reply to `m`, borrowing what it echoes.
    pub fn of(m: &'a MetaRequest<'a>) -> Self {
        let f = &m.flags;
        Echo { cmd: m.cmd, tokens: m.flag_tokens(), key: &m.key, b64: f.base64, quiet: f.quiet, value: f.value }
    }
}

/// An [`Echo`] owned by a pending job.
pub struct Owned {
    cmd: MetaCmd,
    tokens: Vec<Vec<u8>>,
    key: Vec<u8>,
    b64: bool,
    quiet: bool,
    value: bool,
}

impl Owned {
    /// The borrowed view the composers take.
    fn echo(&self) -> Echo<'_, Vec<u8>> {
        let (cmd, b64, quiet, value) = (self.cmd, self.b64, self.quiet, self.value);
        Echo { cmd, tokens: &self.tokens, key: &self.key, b64, quiet, value }
    }
}

impl<T: AsRef<[u8]>> Reply for Echo<'_, T> {
    type Owned = Owned;

    fn owned(&self) -> Owned {
        Owned {
            cmd: self.cmd,
            tokens: self.tokens.iter().map(|t| t.as_ref().to_vec()).collect(),
            key: self.key.to_vec(),
            b64: self.b64,
            quiet: self.quiet,
            value: self.value,
        }
    }

    #[inline]
    fn compose(&self, out: &mut Vec<u8>, r: Result<Outcome<'_>, &Fail>) {
        match r {
            Ok(Outcome::Got(hit)) => get(out, self, hit),
            Ok(Outcome::Stored(o)) => store(out, self, o),
            Ok(Outcome::Deleted(o)) => delete(out, self, o),
            Ok(Outcome::Counted(o, ttls)) => arith(out, self, o, ttls),
            Ok(Outcome::Inspected(d)) => dump(out, d),
            Ok(Outcome::Touched(_) | Outcome::Flushed) => {}
            // `mg @@name` binds, like `get @@name`, and answers a miss.
            Err(Fail::Bound(_)) if self.cmd == MetaCmd::Get => {
                if !self.quiet {
                    out.extend_from_slice(b"EN\r\n");
                }
            }
            // Meta commands say their errors under `q` too.
            Err(f) => out.extend(f.line()),
        }
    }
}

impl Reply for Owned {
    type Owned = Owned;

    fn owned(&self) -> Owned {
        self.echo().owned()
    }

    fn compose(&self, out: &mut Vec<u8>, r: Result<Outcome<'_>, &Fail>) {
        self.echo().compose(out, r)
    }
}

impl<T: AsRef<[u8]>> Echo<'_, T> {
    /// The tokens in order.
    fn each(&self) -> impl Iterator<Item = &[u8]> {
        self.tokens.iter().map(|t| t.as_ref()).filter(|t| !t.is_empty())
    }

    /// `O` (verbatim) or `k` for `tok`; false for other flags.
    fn opaque_or_key(&self, out: &mut Vec<u8>, tok: &[u8], key_binary: bool) -> bool {
        match tok[0] {
            b'O' => {
                out.push(b' ');
                out.extend_from_slice(tok);
            }
            b'k' => meta::push_key(out, self.key, key_binary),
            _ => return false,
        }
        true
    }

    /// A bare return code with `O` and `k` (hidden under `q` when `code` is nominal).
    fn code(&self, out: &mut Vec<u8>, code: &[u8], nominal: bool) {
        if self.quiet && nominal {
            return;
        }
        out.extend_from_slice(code);
        for tok in self.each() {
            self.opaque_or_key(out, tok, self.b64);
        }
        out.extend_from_slice(b"\r\n");
    }
}

/// Append a hit's `s`, `c` or `f` flag for `tok`.
fn hit_flag(out: &mut Vec<u8>, tok: &[u8], hit: &Hit<'_>) {
    match tok[0] {
        b's' => meta::push_num(out, b's', hit.value.len()),
        b'c' => meta::push_num(out, b'c', hit.cas),
        b'f' => meta::push_num(out, b'f', hit.flags),
        _ => {}
    }
}

/// The start of a value reply: `VA <len>` with `v`, else `HD`.
fn head(out: &mut Vec<u8>, with_value: bool, len: usize) {
    if with_value {
        out.extend_from_slice(b"VA ");
        out.extend_from_slice(itoa::Buffer::new().format(len).as_bytes());
    } else {
        out.extend_from_slice(b"HD");
    }
}

/// The end of a value reply: `\r\n`, then the data block with `v`.
fn tail(out: &mut Vec<u8>, with_value: bool, value: &[u8]) {
    out.extend_from_slice(b"\r\n");
    if with_value {
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
}

/// The reply to `mg`: `EN`, or the hit's flags in request order (a `t` shows the TTL as
/// the flags before it left it), then a memory item's stampede flags `Z`, `X`, `W`.
fn get<T: AsRef<[u8]>>(out: &mut Vec<u8>, e: &Echo<'_, T>, hit: Option<Hit<'_>>) {
    let Some(hit) = hit else {
        return e.code(out, b"EN", true);
    };
    head(out, e.value, hit.value.len());
    let mut ttl = hit.ttls.start;
    for tok in e.each() {
        if e.opaque_or_key(out, tok, hit.item.map_or(e.b64, |i| i.key_binary)) {
            continue;
        }
        match (tok[0], hit.item) {
            (b'T', _) => ttl = hit.ttls.touched.unwrap_or(ttl),
            (b'N', _) => ttl = hit.ttls.vivified.unwrap_or(ttl),
            (b't', _) => meta::push_num(out, b't', ttl),
            (b'l', Some(i)) => meta::push_num(out, b'l', i.idle),
            (b'h', Some(i)) => meta::push_num(out, b'h', i.fetched as u8),
            _ => hit_flag(out, tok, &hit),
        }
    }
    if let Some(i) = hit.item {
        for (on, flag) in [(i.win_taken, b" Z"), (i.stale, b" X"), (i.won, b" W")] {
            if on {
                out.extend_from_slice(flag);
            }
        }
    }
    tail(out, e.value, hit.value);
}

/// The reply to `ms`.
fn store<T: AsRef<[u8]>>(out: &mut Vec<u8>, e: &Echo<'_, T>, o: StoreOutcome) {
    let (code, cas): (&[u8], u64) = match o {
        StoreOutcome::Stored(cas) => (b"HD", cas),
        StoreOutcome::NotStored => (b"NS", 0),
        StoreOutcome::Exists => (b"EX", 0),
        StoreOutcome::NotFound => (b"NF", 0),
        StoreOutcome::NoMemory => return out.extend_from_slice(reply::NO_MEMORY),
    };
    if e.quiet && code == b"HD" {
        return;
    }
    out.extend_from_slice(code);
    for tok in e.each() {
        if !e.opaque_or_key(out, tok, e.b64) && tok[0] == b'c' {
            meta::push_num(out, b'c', cas);
        }
    }
    out.extend_from_slice(b"\r\n");
}

/// The reply to `md`.
fn delete<T: AsRef<[u8]>>(out: &mut Vec<u8>, e: &Echo<'_, T>, o: DeleteOutcome) {
    match o {
        DeleteOutcome::Deleted => e.code(out, b"HD", true),
        DeleteOutcome::NotFound => e.code(out, b"NF", false),
        DeleteOutcome::Exists => e.code(out, b"EX", false),
    }
}

/// The reply to `ma`: a `t` reads the TTL as the flags before it left it.
fn arith<T: AsRef<[u8]>>(out: &mut Vec<u8>, e: &Echo<'_, T>, o: ArithOutcome, ttls: Ttls) {
    let (value, cas, created) = match o {
        ArithOutcome::Done { value, cas, created } => (value, cas, created),
        ArithOutcome::NonNumeric => return out.extend_from_slice(reply::NON_NUMERIC),
        ArithOutcome::NoMemory => return out.extend_from_slice(b"SERVER_ERROR out of memory\r\n"),
        ArithOutcome::Exists => return e.code(out, b"EX", false),
        ArithOutcome::NotFound => return e.code(out, b"NF", false),
    };
    // memcached hides a nominal reply under `q`, except right after auto-creating.
    if e.quiet && !created {
        return;
    }
    let text = itoa::Buffer::new().format(value).as_bytes().to_vec();
    head(out, e.value, text.len());
    let mut reads = ttls.reads(e.tokens);
    for tok in e.each() {
        if e.opaque_or_key(out, tok, e.b64) {
            continue;
        }
        match tok[0] {
            b'c' => meta::push_num(out, b'c', cas),
            b't' => meta::push_num(out, b't', reads.next().unwrap_or(-1)),
            _ => {}
        }
    }
    tail(out, e.value, &text);
}

/// The reply to `me`: `EN`, or `ME <key> exp=.. la=.. cas=.. fetch=.. cls=.. size=..`.
fn dump(out: &mut Vec<u8>, d: Option<Dump<'_>>) {
    let Some(d) = d else {
        return out.extend_from_slice(b"EN\r\n");
    };
    out.extend_from_slice(b"ME ");
    if d.key_binary {
        let mut k = Vec::new();
        meta::push_key(&mut k, d.key, true);
        // push_key writes " k<b64> b"; `me` wants just the encoded key.
        out.extend_from_slice(&k[2..k.len() - 2]);
    } else {
        out.extend_from_slice(d.key);
    }
    let line = format!(
        " exp={} la={} cas={} fetch={} cls={} size={}\r\n",
        d.exp,
        d.idle,
        d.cas,
        if d.fetched { "yes" } else { "no" },
        d.class,
        d.size
    );
    out.extend_from_slice(line.as_bytes());
}

/// `mn`.
pub fn noop(out: &mut Vec<u8>) {
    out.extend_from_slice(b"MN\r\n");
}

/// An `ms` whose data block does not end with `\r\n`.
pub fn bad_chunk(out: &mut Vec<u8>) {
    out.extend_from_slice(reply::BAD_CHUNK);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::ItemState;

    fn echo<'a>(cmd: MetaCmd, tokens: &'a [&'a [u8]], quiet: bool) -> Echo<'a, &'a [u8]> {
        Echo { cmd, tokens, key: b"foo", b64: false, quiet, value: true }
    }

    #[test]
    fn flags_follow_the_request_order() {
        let toks: [&[u8]; 6] = [b"c", b"Oab", b"t", b"k", b"T30", b"t"];
        let hit = Hit {
            value: b"xyz",
            flags: 5,
            cas: 9,
            ttls: Ttls { start: -1, touched: Some(30), vivified: None },
            item: None,
        };
        let mut v = Vec::new();
        echo(MetaCmd::Get, &toks, false).compose(&mut v, Ok(Outcome::Got(Some(hit))));
        assert_eq!(v, b"VA 3 c9 Oab t-1 kfoo t30\r\nxyz\r\n");
    }

    #[test]
    fn memory_items_add_their_own_flags() {
        let toks: [&[u8]; 3] = [b"l", b"h", b"s"];
        let item = ItemState { idle: 4, fetched: true, stale: true, won: true, ..ItemState::default() };
        let hit = Hit { value: b"ab", flags: 0, cas: 0, ttls: Ttls::UNKNOWN, item: Some(item) };
        let mut v = Vec::new();
        echo(MetaCmd::Get, &toks, false).owned().compose(&mut v, Ok(Outcome::Got(Some(hit))));
        assert_eq!(v, b"VA 2 l4 h1 s2 X W\r\nab\r\n");
        v.clear();
        let container = Hit { item: None, ..hit };
        echo(MetaCmd::Get, &toks, false).compose(&mut v, Ok(Outcome::Got(Some(container))));
        assert_eq!(v, b"VA 2 s2\r\nab\r\n");
    }

    #[test]
    fn quiet_hides_only_nominal_codes() {
        let toks: [&[u8]; 1] = [b"q"];
        let mut v = Vec::new();
        let e = echo(MetaCmd::Delete, &toks, true);
        e.compose(&mut v, Ok(Outcome::Deleted(DeleteOutcome::Deleted)));
        assert!(v.is_empty());
        e.compose(&mut v, Ok(Outcome::Deleted(DeleteOutcome::NotFound)));
        assert_eq!(v, b"NF\r\n");
        v.clear();
        let created = ArithOutcome::Done { value: 0, cas: 1, created: true };
        let mut e = echo(MetaCmd::Arith, &toks, true);
        e.value = false;
        e.compose(&mut v, Ok(Outcome::Counted(created, Ttls::UNKNOWN)));
        assert_eq!(v, b"HD\r\n");
    }

    #[test]
    fn a_bare_container_name_is_a_miss_for_mg_only() {
        let mut v = Vec::new();
        echo(MetaCmd::Get, &[], false).compose(&mut v, Err(&Fail::Bound("b".into())));
        echo(MetaCmd::Delete, &[], false).compose(&mut v, Err(&Fail::Bound("b".into())));
        assert_eq!(v, b"EN\r\nCLIENT_ERROR b\r\n");
    }
}
