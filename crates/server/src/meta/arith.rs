//! `ma <key> <flags>*`: incr/decr with auto-create (`N`, `J`), delta (`D`), mode (`M`).

use engine::ops::{self, ArithOutcome, ArithRequest};
use protocol_memcache::meta::MetaRequest;

use super::{echo, owned, ttl_left};
use crate::compose;
use crate::ctx::{Ctx, Flow};
use crate::pending;
use crate::route::{self, Routed};

/// Run `ma`.
pub fn execute(m: &MetaRequest<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let f = &m.flags;
    let incr = !matches!(f.mode, Some(b'D' | b'-'));
    let place = match route::key(ctx, &m.key) {
        Routed::Memory => {
            let (r, ttls) = memory(m, incr, ctx);
            compose::meta::arith(out, &echo(m), f.value, Ok(r), &mut ttls.into_iter());
            return Flow::Continue;
        }
        Routed::Container(place) => place,
        other => {
            super::refused(out, other);
            return Flow::Continue;
        }
    };
    let e = owned(m);
    let with_value = f.value;
    let req = ArithRequest {
        key: &m.key,
        incr,
        delta: f.delta,
        cas: f.cas.unwrap_or(0),
        create: f.vivify.map(|ttl| (f.initial, ttl as i64)),
        touch: f.ttl.map(i64::from),
    };
    // A container row's TTL is not read back after the change: `t` says -1.
    let later = place.arith(&req);
    Flow::Pending(pending::job(later, move |r, v| {
        compose::meta::arith(v, &e.echo(), with_value, r, &mut std::iter::empty())
    }))
}

/// `ma` on a memory key: the outcome (its CAS as read back) and what each `t` flag
/// reports: flags apply in request order, so a `t` before `T` (or `N` on creation) shows
/// the TTL before it.
fn memory(m: &MetaRequest<'_>, incr: bool, ctx: &Ctx<'_>) -> (ArithOutcome, Vec<i64>) {
    let f = &m.flags;
    let engine = &ctx.shared.engine;
    let req = ArithRequest {
        key: &m.key,
        incr,
        delta: f.delta,
        cas: f.cas.unwrap_or(0),
        create: f.vivify.map(|_| (f.initial, 0)),
        touch: None,
    };
    let outcome = ops::arith(engine, &req, &ctx.acks.receipt);
    let ArithOutcome::Done { value, created, .. } = outcome else {
        return (outcome, Vec::new());
    };
    let clock = engine.clock();
    let mut a = engine.access(&m.key, &ctx.acks.receipt);
    let now = a.now();
    let Ok(it) = a.lookup() else {
        return (outcome, Vec::new());
    };
    let mut ttls = Vec::new();
    for tok in m.flag_tokens() {
        match tok.first() {
            Some(b't') => ttls.push(ttl_left(it.exptime, now)),
            Some(b'T') => it.exptime = clock.realtime(f.ttl.unwrap_or(0) as i64),
            Some(b'N') if created => it.exptime = clock.realtime(f.vivify.unwrap_or(0) as i64),
            _ => {}
        }
    }
    let cas = if engine.config().use_cas { it.cas } else { 0 };
    if f.ttl.is_some() || created {
        a.changed();
    }
    (ArithOutcome::Done { value, cas, created }, ttls)
}
