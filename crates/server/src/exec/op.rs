//! [`Op`]: the engine operation a memcached command means, whatever its protocol. The one
//! mapping from text, meta and binary commands to operations is here ([`Op::text`],
//! [`Op::meta`], [`Op::binary`]); every tier runs an `Op` (`exec::memory`, `exec::container`).

use engine::ops::{ArithRequest, StoreMode, StoreRequest};
use protocol_memcache::binary::{Opcode, Request};
use protocol_memcache::meta::{Flags, MetaCmd, MetaRequest};
use protocol_memcache::text::{Command, StoreCmd};

use crate::timing::Class;

/// A meta request's flags, in request order (what flags before a `t` changed shows there).
#[derive(Clone, Copy, Debug)]
pub struct MetaFlags<'a> {
    /// The flag tokens, in order.
    pub tokens: &'a [&'a [u8]],
    /// The same, parsed.
    pub flags: &'a Flags,
}

/// One engine operation on one key (or none: `Flush`).
#[derive(Clone, Copy, Debug)]
pub enum Op<'a> {
    /// get/gets (`touch` None), gat/gats, binary get/getk/gat/gatk/touch, `mg` (with its
    /// flags: on memory keys `N` vivifies, `R` recaches, `T` touches, in flag order).
    Get {
        /// A new client exptime, applied after the value is read.
        touch: Option<i64>,
        /// `mg`'s flags.
        meta: Option<MetaFlags<'a>>,
    },
    /// set/add/replace/append/prepend/cas, binary stores, `ms` (`meta`: keeps no
    /// per-prefix `stats detail`, as memcached's meta commands).
    Store {
        /// The store, as the engine takes it.
        req: StoreRequest<'a>,
        /// From `ms`.
        meta: bool,
    },
    /// delete, binary delete (`cas`: compare first), `md` (its flags: `I` marks the item
    /// stale instead, with `T` a new TTL).
    Delete {
        /// Only if the item's CAS is this (0 included).
        cas: Option<u64>,
        /// `md`'s flags.
        meta: Option<MetaFlags<'a>>,
    },
    /// incr/decr, binary increment/decrement, `ma` (its flags: `t`/`T`/`N` in order).
    Arith {
        /// The request as a tier that applies `N`'s TTL and `T` at once takes it.
        req: ArithRequest<'a>,
        /// `ma`'s flags.
        meta: Option<MetaFlags<'a>>,
    },
    /// touch.
    Touch {
        /// The new client exptime.
        exptime: i64,
    },
    /// flush_all, binary flush (no key: the connection's bound container, else memory).
    Flush {
        /// Seconds (or a unix time) before it applies; 0: now.
        delay: i64,
    },
    /// `me`: what the memory engine holds for the key.
    Inspect,
}

/// Why a binary request is not an [`Op`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotOp {
    /// Not a key operation (noop, version, quit, stat, an unknown opcode).
    Other,
    /// incr/decr without their extras: invalid arguments, and the connection closes.
    Malformed,
}

impl<'a> Op<'a> {
    /// A text command's operation (`value`: a storage command's data, without `\r\n`);
    /// None for gets (one [`Op::get`] per key), meta and administrative commands.
    #[inline]
    pub fn text(cmd: &Command<'a>, value: &'a [u8]) -> Option<Op<'a>> {
        Some(match *cmd {
            Command::Store { cmd, key, flags, exptime, cas, .. } => {
                let mode = match cmd {
                    StoreCmd::Set => StoreMode::Set,
                    StoreCmd::Add => StoreMode::Add,
                    StoreCmd::Replace => StoreMode::Replace,
                    StoreCmd::Append => StoreMode::Append,
                    StoreCmd::Prepend => StoreMode::Prepend,
                    StoreCmd::Cas => StoreMode::Cas,
                };
                Op::Store { req: StoreRequest::new(mode, key, value, flags, exptime as i64, cas), meta: false }
            }
            Command::Delete { .. } => Op::Delete { cas: None, meta: None },
            Command::Arith { incr, key, delta, .. } => {
                let req = ArithRequest { key, incr, delta, cas: 0, create: None, touch: None };
                Op::Arith { req, meta: None }
            }
            Command::Touch { exptime, .. } => Op::Touch { exptime: exptime as i64 },
            Command::FlushAll { delay, .. } => Op::Flush { delay: delay as i64 },
            _ => return None,
        })
    }

    /// get/gets (`touch` None) and gat/gats, for each of their keys.
    #[inline]
    pub fn get(touch: Option<i32>) -> Op<'static> {
        Op::Get { touch: touch.map(i64::from), meta: None }
    }

    /// A meta command's operation (`value`: `ms`'s data, without `\r\n`); None for `mn`.
    #[inline]
    pub fn meta(m: &'a MetaRequest<'a>, value: &'a [u8]) -> Option<Op<'a>> {
        let f = &m.flags;
        let meta = Some(MetaFlags { tokens: m.flag_tokens(), flags: f });
        Some(match m.cmd {
            MetaCmd::Get => Op::Get { touch: f.ttl.map(i64::from), meta },
            MetaCmd::Set => {
                // As in memcached, a CAS turns set and replace into a CAS store.
                let mode = match f.mode {
                    Some(b'E') => StoreMode::Add,
                    Some(b'A') => StoreMode::Append,
                    Some(b'P') => StoreMode::Prepend,
                    Some(b'R') if f.cas.is_some() => StoreMode::Cas,
                    Some(b'R') => StoreMode::Replace,
                    _ if f.cas.is_some() => StoreMode::Cas,
                    _ => StoreMode::Set,
                };
                let vivify = match mode {
                    StoreMode::Append | StoreMode::Prepend => f.vivify.map(i64::from),
                    _ => None,
                };
                let req = StoreRequest {
                    mode,
                    key: &m.key,
                    value,
                    flags: f.client_flags,
                    exptime: f.ttl.unwrap_or(0) as i64,
                    cas: f.cas.unwrap_or(0),
                    set_stale: f.invalidate && mode == StoreMode::Cas,
                    vivify,
                    key_binary: f.base64,
                };
                Op::Store { req, meta: true }
            }
            MetaCmd::Delete => Op::Delete { cas: f.cas, meta },
            MetaCmd::Arith => {
                let req = ArithRequest {
                    key: &m.key,
                    incr: !matches!(f.mode, Some(b'D' | b'-')),
                    delta: f.delta,
                    cas: f.cas.unwrap_or(0),
                    create: f.vivify.map(|ttl| (f.initial, ttl as i64)),
                    touch: f.ttl.map(i64::from),
                };
                Op::Arith { req, meta }
            }
            MetaCmd::Debug => Op::Inspect,
            MetaCmd::Noop => return None,
        })
    }

    /// A binary request's operation (`use_cas`: `-C` off, so a header CAS counts). As in
    /// memcached, a CAS on set/add/replace makes it a CAS store.
    #[inline]
    pub fn binary(req: &Request<'a>, use_cas: bool) -> Result<Op<'a>, NotOp> {
        let base = req.opcode().base();
        let store = |mode: StoreMode| {
            let (flags, exptime) = req.store_extras().map(|e| (e.flags, e.expiration as i64)).unwrap_or((0, 0));
            let cas = if use_cas { req.cas() } else { 0 };
            let mode = match mode {
                StoreMode::Set | StoreMode::Add | StoreMode::Replace if cas != 0 => StoreMode::Cas,
                mode => mode,
            };
            Op::Store { req: StoreRequest::new(mode, req.key(), req.value(), flags, exptime, cas), meta: false }
        };
        Ok(match base {
            Opcode::Get | Opcode::GetK => Op::Get { touch: None, meta: None },
            Opcode::Touch | Opcode::Gat | Opcode::GatK => {
                Op::Get { touch: Some(req.touch_expiration().unwrap_or(0) as i64), meta: None }
            }
            Opcode::Set => store(StoreMode::Set),
            Opcode::Add => store(StoreMode::Add),
            Opcode::Replace => store(StoreMode::Replace),
            Opcode::Append => store(StoreMode::Append),
            Opcode::Prepend => store(StoreMode::Prepend),
            Opcode::Delete => Op::Delete { cas: (req.cas() != 0).then_some(req.cas()), meta: None },
            Opcode::Increment | Opcode::Decrement => {
                let x = req.counter_extras().ok_or(NotOp::Malformed)?;
                let req = ArithRequest {
                    key: req.key(),
                    incr: base == Opcode::Increment,
                    delta: x.delta,
                    cas: req.cas(),
                    create: x.creates_missing().then_some((x.initial, x.expiration as i64)),
                    touch: None,
                };
                Op::Arith { req, meta: None }
            }
            Opcode::Flush => Op::Flush { delay: req.flush_expiration().flatten().unwrap_or(0) as i64 },
            _ => return Err(NotOp::Other),
        })
    }

    /// Does it change data (refused while the disk tier refuses writes)? A retrieval that
    /// sets a new TTL does.
    #[inline]
    pub fn writes(&self) -> bool {
        !matches!(self, Op::Get { touch: None, .. } | Op::Inspect)
    }

    /// Keyless: runs where the connection is bound (flush_all).
    #[inline]
    pub fn keyless(&self) -> bool {
        matches!(self, Op::Flush { .. })
    }

    /// The latency histogram it counts in.
    #[inline]
    pub fn class(&self) -> Class {
        match self {
            Op::Get { .. } => Class::Get,
            Op::Store { .. } => Class::Set,
            _ => Class::Other,
        }
    }

    /// The same operation on `key` (a container's key without `@@name.`).
    pub fn on<'k>(self, key: &'k [u8]) -> Op<'k>
    where
        'a: 'k,
    {
        match self {
            Op::Store { req, meta } => Op::Store { req: StoreRequest { key, ..req }, meta },
            Op::Arith { req, meta } => Op::Arith { req: ArithRequest { key, ..req }, meta },
            op => op,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta_mode(line: &[u8]) -> StoreMode {
        let t = protocol_memcache::text::Tokens::new(line);
        let m = protocol_memcache::meta::parse(b's', &t).unwrap();
        match Op::meta(&m, b"") {
            Some(Op::Store { req, .. }) => req.mode,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn cas_upgrades_like_memcached() {
        assert_eq!(meta_mode(b"ms k 1 ME C7"), StoreMode::Add);
        assert_eq!(meta_mode(b"ms k 1 MR C7"), StoreMode::Cas);
        assert_eq!(meta_mode(b"ms k 1 C7"), StoreMode::Cas);
        assert_eq!(meta_mode(b"ms k 1 MA C7"), StoreMode::Append);
        assert_eq!(meta_mode(b"ms k 1"), StoreMode::Set);
        let cmd = Command::Store {
            cmd: StoreCmd::Prepend,
            key: b"k",
            flags: 0,
            exptime: 0,
            bytes: 1,
            cas: 0,
            noreply: false,
        };
        assert!(matches!(
            Op::text(&cmd, b"x"),
            Some(Op::Store { req: StoreRequest { mode: StoreMode::Prepend, .. }, .. })
        ));
    }

    #[test]
    fn only_plain_reads_are_not_writes() {
        assert!(!Op::get(None).writes());
        assert!(Op::get(Some(10)).writes());
        assert!(Op::Flush { delay: 0 }.writes() && Op::Flush { delay: 0 }.keyless());
        assert!(!Op::Inspect.writes());
    }
}
