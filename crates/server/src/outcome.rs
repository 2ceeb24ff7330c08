//! What one engine operation answered, whatever tier ran it, and what a reply needs of it.
//!
//! The execution call (`crate::exec`) hands an [`Outcome`] to a [`Reply`] (one per protocol,
//! in `compose/`): now, borrowing the item while its shard is locked (no copy of a hit's
//! value), or later, from an owned [`Answer`] a slow tier (a SQL container) delivered. The
//! reply cannot tell which: memory and container keys get the same bytes.

use engine::ops::{ArithOutcome, DeleteOutcome, StoreOutcome};

use crate::pending::Fail;

/// How a key's TTL reads while a meta request's flags apply in order: `start` before any,
/// then `touched` after a `T`, `vivified` after an `N` that created the item (seconds
/// left, -1: none). A tier that cannot tell (a container's `ma`) reports [`Ttls::UNKNOWN`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ttls {
    /// Before the flags.
    pub start: i64,
    /// After `T` (None: no `T`, or the tier does not apply it before answering).
    pub touched: Option<i64>,
    /// After `N`, if it created the item.
    pub vivified: Option<i64>,
}

impl Ttls {
    /// No TTL known: every `t` reads -1.
    pub const UNKNOWN: Ttls = Ttls { start: -1, touched: None, vivified: None };

    /// The TTL each `t` among `tokens` reads, in order (what flags before it changed).
    pub fn reads<'t, T: AsRef<[u8]>>(self, tokens: &'t [T]) -> impl Iterator<Item = i64> + 't {
        let mut now = self.start;
        tokens.iter().filter_map(move |t| {
            match t.as_ref().first() {
                Some(b'T') => now = self.touched.unwrap_or(now),
                Some(b'N') => now = self.vivified.unwrap_or(now),
                Some(b't') => return Some(now),
                _ => {}
            }
            None
        })
    }
}

/// What only an item of the memory engine knows (meta `l`, `h`, `k`'s binary bit and the
/// stampede flags `Z`, `X`, `W`), as it was before this request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ItemState {
    /// Seconds since the last access (`l`).
    pub idle: u32,
    /// Fetched before (`h`).
    pub fetched: bool,
    /// Stored with a binary (`b`) key: `k` shows it base64-encoded.
    pub key_binary: bool,
    /// Another client already won the right to recache it (`Z`).
    pub win_taken: bool,
    /// Marked stale (`X`).
    pub stale: bool,
    /// This request won the right to recache it (`W`).
    pub won: bool,
}

/// A found key, as replies see it.
#[derive(Clone, Copy, Debug)]
pub struct Hit<'a> {
    /// The value.
    pub value: &'a [u8],
    /// Client flags.
    pub flags: u32,
    /// CAS unique (0 with `-C`).
    pub cas: u64,
    /// The TTL as meta `t` flags read it.
    pub ttls: Ttls,
    /// Memory items only.
    pub item: Option<ItemState>,
}

/// What `me` shows of an item.
#[derive(Clone, Copy, Debug)]
pub struct Dump<'a> {
    /// The key.
    pub key: &'a [u8],
    /// Stored with a binary key.
    pub key_binary: bool,
    /// memcached 1.6.18's `exp=`: -1 for none, else now - exptime.
    pub exp: i64,
    /// Seconds since the last access.
    pub idle: u32,
    /// CAS unique (0 with `-C`).
    pub cas: u64,
    /// Fetched since stored.
    pub fetched: bool,
    /// Its memcached slab class and item size.
    pub class: u32,
    /// Its memcached item size.
    pub size: usize,
}

/// What an operation answered, borrowed from the tier (a hit's value under its lock).
#[derive(Clone, Copy, Debug)]
pub enum Outcome<'a> {
    /// A retrieval: the hit, or a miss.
    Got(Option<Hit<'a>>),
    /// A store.
    Stored(StoreOutcome),
    /// A delete.
    Deleted(DeleteOutcome),
    /// incr/decr, with what meta `t` flags read.
    Counted(ArithOutcome, Ttls),
    /// A touch: whether the key was there.
    Touched(bool),
    /// flush_all.
    Flushed,
    /// `me`: the item, if any.
    Inspected(Option<Dump<'a>>),
}

/// A hit that arrives later, owned.
#[derive(Clone, Debug)]
pub struct Found {
    /// The value.
    pub value: Vec<u8>,
    /// Client flags.
    pub flags: u32,
    /// CAS unique (0 with `-C`).
    pub cas: u64,
    /// The TTL as meta `t` flags read it.
    pub ttls: Ttls,
}

/// An [`Outcome`] a slow tier delivers later (owned).
#[derive(Clone, Debug)]
pub enum Answer {
    /// A retrieval.
    Got(Option<Found>),
    /// A store.
    Stored(StoreOutcome),
    /// A delete.
    Deleted(DeleteOutcome),
    /// incr/decr.
    Counted(ArithOutcome, Ttls),
    /// A touch.
    Touched(bool),
    /// flush_all.
    Flushed,
}

impl Answer {
    /// The outcome, as replies read it.
    pub fn outcome(&self) -> Outcome<'_> {
        match self {
            Answer::Got(f) => Outcome::Got(f.as_ref().map(|f| Hit {
                value: &f.value,
                flags: f.flags,
                cas: f.cas,
                ttls: f.ttls,
                item: None,
            })),
            Answer::Stored(o) => Outcome::Stored(*o),
            Answer::Deleted(o) => Outcome::Deleted(*o),
            Answer::Counted(o, t) => Outcome::Counted(*o, *t),
            Answer::Touched(b) => Outcome::Touched(*b),
            Answer::Flushed => Outcome::Flushed,
        }
    }
}

/// Why a store is refused before its data block is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The item would exceed `-I` (memcached refuses it from its header; a `set` also
    /// loses the key's old value).
    TooLarge,
    /// The disk tier refuses writes.
    Failed(Fail),
}

/// One protocol's reply to one command (`compose/`): what it echoes of the request, and
/// how it writes any outcome or failure.
pub trait Reply {
    /// The same reply owning what it borrowed from the read buffer, for an outcome that
    /// comes later.
    type Owned: Reply + Send + 'static;
    /// Copy what the reply echoes out of the read buffer.
    fn owned(&self) -> Self::Owned;
    /// Write the reply to `r` into `out`.
    fn compose(&self, out: &mut Vec<u8>, r: Result<Outcome<'_>, &Fail>);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_read_in_flag_order() {
        let t = Ttls { start: 5, touched: Some(60), vivified: None };
        let toks: [&[u8]; 5] = [b"t", b"v", b"T60", b"t", b"N30"];
        assert_eq!(t.reads(&toks).collect::<Vec<_>>(), vec![5, 60]);
        let created = Ttls { start: -1, touched: None, vivified: Some(30) };
        let toks: [&[u8]; 3] = [b"t", b"N30", b"t"];
        assert_eq!(created.reads(&toks).collect::<Vec<_>>(), vec![-1, 30]);
        assert_eq!(Ttls::UNKNOWN.reads(&toks).collect::<Vec<_>>(), vec![-1, -1]);
    }
}
