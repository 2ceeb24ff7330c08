//! The memory tier: an [`Op`] run now on an engine (the server's, or a `cache_only`
//! container's private one), its outcome handed to the reply while the item is locked (a
//! hit's value is never copied). memcached's semantics, meta's flag order included.

use engine::item::{memcached_item_size, Item, FETCHED, KEY_BINARY, STALE, WON};
use engine::ops::{self, ArithOutcome, ArithRequest, DeleteOutcome, GetOptions};
use engine::{Engine, Receipt};

use super::op::{MetaFlags, Op};
use crate::detail::Detail;
use crate::outcome::{Dump, Hit, ItemState, Outcome, Reply, Ttls};

/// The engine an operation runs on, and what it reports to.
pub struct Env<'e> {
    /// The engine.
    pub engine: &'e Engine,
    /// The receipt its writes note their disk tier sequence on.
    pub receipt: &'e Receipt,
    /// `stats detail` (the server's engine only).
    pub detail: Option<&'e Detail>,
}

/// Run `op` on `key` and hand its outcome to `reply` (into `out`).
#[inline(always)]
pub fn run<R: Reply>(env: &Env<'_>, key: &[u8], op: Op<'_>, reply: &R, out: &mut Vec<u8>) {
    let (engine, receipt) = (env.engine, env.receipt);
    let o = match op {
        Op::Get { touch, meta: None } => {
            let use_cas = engine.config().use_cas;
            return ops::get(engine, key, GetOptions { touch }, receipt, |it| {
                if let Some(d) = env.detail {
                    d.get(key, it.is_some());
                }
                let hit = it.map(|it| Hit {
                    value: it.value(),
                    flags: it.flags,
                    cas: if use_cas { it.cas } else { 0 },
                    ttls: Ttls::UNKNOWN,
                    item: None,
                });
                reply.compose(out, Ok(Outcome::Got(hit)))
            });
        }
        Op::Get { meta: Some(m), .. } => return meta_get(env, key, m, reply, out),
        Op::Store { req, meta } => {
            if let (Some(d), false) = (env.detail, meta) {
                d.set(key);
            }
            Outcome::Stored(ops::store(engine, &req, receipt))
        }
        Op::Delete { cas, meta: None } => {
            if let Some(d) = env.detail {
                d.delete(key);
            }
            Outcome::Deleted(ops::delete(engine, key, cas.unwrap_or(0), receipt))
        }
        Op::Delete { cas, meta: Some(m) } => Outcome::Deleted(meta_delete(env, key, cas, m)),
        Op::Arith { req, meta: None } => Outcome::Counted(ops::arith(engine, &req, receipt), Ttls::UNKNOWN),
        Op::Arith { req, meta: Some(m) } => {
            let (o, ttls) = meta_arith(env, key, req, m);
            Outcome::Counted(o, ttls)
        }
        Op::Touch { exptime } => Outcome::Touched(ops::touch(engine, key, exptime, receipt)),
        Op::Flush { delay } => {
            engine.flush_all(delay, receipt);
            Outcome::Flushed
        }
        Op::Inspect => return inspect(env, key, reply, out),
    };
    reply.compose(out, Ok(o));
}

/// A TTL for replies: -1 for none, else seconds left.
fn ttl_left(exptime: u32, now: u32) -> i64 {
    if exptime == 0 {
        -1
    } else {
        exptime.wrapping_sub(now) as i64
    }
}

/// `mg` with its stampede flags: on a miss `N` creates an empty item this client wins the
/// right to fill; `R` wins the recache of an item about to expire; `T` touches; all in
/// flag order (an `R` after `T` sees the new TTL).
fn meta_get<R: Reply>(env: &Env<'_>, key: &[u8], m: MetaFlags<'_>, reply: &R, out: &mut Vec<u8>) {
    let engine = env.engine;
    let clock = engine.clock();
    let f = m.flags;
    let mut a = engine.access(key, env.receipt);
    let now = a.now();
    let mut created = false;
    if a.lookup().is_err() && f.vivify.is_some() && a.store(Item::new(key, &[], 0, 0, now)).is_ok() {
        created = true;
    }
    let use_cas = engine.config().use_cas;
    let ttl_set = f.ttl.is_some();
    {
        let st = a.stats();
        st.cmd_get += 1;
        if ttl_set {
            st.cmd_touch += 1;
        }
    }
    let Ok(it) = a.lookup() else {
        let st = a.stats();
        if ttl_set {
            st.touch_misses += 1;
        } else {
            st.get_misses += 1;
        }
        return reply.compose(out, Ok(Outcome::Got(None)));
    };
    let mut state = ItemState {
        idle: now.wrapping_sub(it.atime),
        fetched: it.has(FETCHED),
        key_binary: it.has(KEY_BINARY),
        ..ItemState::default()
    };
    let mut ttls = Ttls { start: ttl_left(it.exptime, now), touched: None, vivified: None };
    for tok in m.tokens {
        match tok.first() {
            Some(b'T') => {
                it.exptime = clock.realtime(f.ttl.unwrap_or(0) as i64);
                ttls.touched = Some(ttl_left(it.exptime, now));
            }
            Some(b'N') if created => {
                it.exptime = clock.realtime(f.vivify.unwrap_or(0) as i64);
                ttls.vivified = Some(ttl_left(it.exptime, now));
                state.won = true;
            }
            Some(b'R') => {
                let recache = clock.realtime(f.recache.unwrap_or(0) as i64);
                if !it.has(WON) && !created && it.exptime != 0 && it.exptime < recache {
                    state.won = true;
                }
            }
            _ => {}
        }
    }
    state.win_taken = it.has(WON);
    state.stale = it.has(STALE);
    if state.stale && !state.win_taken {
        state.won = true;
    }
    if state.won {
        it.bits |= WON;
    }
    let hit =
        Hit { value: it.value(), flags: it.flags, cas: if use_cas { it.cas } else { 0 }, ttls, item: Some(state) };
    reply.compose(out, Ok(Outcome::Got(Some(hit))));
    if !f.no_bump {
        a.bump();
    }
    if ttl_set {
        a.changed();
    }
    let st = a.stats();
    if ttl_set {
        st.touch_hits += 1;
    } else {
        st.get_hits += 1;
    }
}

/// `md`: a CAS mismatch (`C`, 0 included) is `Exists`; `I` marks the item stale instead of
/// removing it (`T`: with a new TTL).
fn meta_delete(env: &Env<'_>, key: &[u8], cas: Option<u64>, m: MetaFlags<'_>) -> DeleteOutcome {
    let f = m.flags;
    let engine = env.engine;
    let mut a = engine.access(key, env.receipt);
    match a.lookup() {
        Ok(it) if cas.is_some_and(|c| c != it.cas) => {
            a.stats().delete_misses += 1;
            DeleteOutcome::Exists
        }
        Ok(it) if f.invalidate => {
            if let Some(t) = f.ttl {
                it.exptime = engine.clock().realtime(t as i64);
            }
            it.bits = (it.bits | STALE) & !WON;
            a.new_cas();
            a.changed();
            DeleteOutcome::Deleted
        }
        Ok(_) => {
            a.stats().delete_hits += 1;
            a.remove();
            DeleteOutcome::Deleted
        }
        Err(_) => {
            a.stats().delete_misses += 1;
            DeleteOutcome::NotFound
        }
    }
}

/// `ma`: the arithmetic, then its `T` and `N` flags in request order (so a `t` before `T`,
/// or before `N` on creation, shows the TTL before it), the CAS as read back.
fn meta_arith(env: &Env<'_>, key: &[u8], req: ArithRequest<'_>, m: MetaFlags<'_>) -> (ArithOutcome, Ttls) {
    let f = m.flags;
    let engine = env.engine;
    let req = ArithRequest { create: req.create.map(|(initial, _)| (initial, 0)), touch: None, ..req };
    let outcome = ops::arith(engine, &req, env.receipt);
    let ArithOutcome::Done { value, created, .. } = outcome else {
        return (outcome, Ttls::UNKNOWN);
    };
    let clock = engine.clock();
    let mut a = engine.access(key, env.receipt);
    let now = a.now();
    let Ok(it) = a.lookup() else {
        return (outcome, Ttls::UNKNOWN);
    };
    let mut ttls = Ttls { start: ttl_left(it.exptime, now), touched: None, vivified: None };
    for tok in m.tokens {
        match tok.first() {
            Some(b'T') => {
                it.exptime = clock.realtime(f.ttl.unwrap_or(0) as i64);
                ttls.touched = Some(ttl_left(it.exptime, now));
            }
            Some(b'N') if created => {
                it.exptime = clock.realtime(f.vivify.unwrap_or(0) as i64);
                ttls.vivified = Some(ttl_left(it.exptime, now));
            }
            _ => {}
        }
    }
    let cas = if engine.config().use_cas { it.cas } else { 0 };
    if f.ttl.is_some() || created {
        a.changed();
    }
    (ArithOutcome::Done { value, cas, created }, ttls)
}

/// `me`: the item's metadata as memcached 1.6.18 prints it.
fn inspect<R: Reply>(env: &Env<'_>, key: &[u8], reply: &R, out: &mut Vec<u8>) {
    let engine = env.engine;
    let use_cas = engine.config().use_cas;
    let mut a = engine.access(key, env.receipt);
    let now = a.now();
    let Ok(it) = a.lookup() else {
        return reply.compose(out, Ok(Outcome::Inspected(None)));
    };
    let size = memcached_item_size(it.key().len(), it.value().len(), it.flags, use_cas);
    let dump = Dump {
        key: it.key(),
        key_binary: it.has(KEY_BINARY),
        // memcached 1.6.18 prints now - exptime here (negative while the item lives).
        exp: if it.exptime == 0 { -1 } else { now as i64 - it.exptime as i64 },
        idle: now.wrapping_sub(it.atime),
        cas: if use_cas { it.cas } else { 0 },
        fetched: it.has(FETCHED),
        class: crate::slab::class_of(size),
        size,
    };
    reply.compose(out, Ok(Outcome::Inspected(Some(dump))));
}
