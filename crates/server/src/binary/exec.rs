//! One binary request on the engine (memory keys) or on a container: the same outcomes,
//! composed by `compose::binary` either way.

use engine::ops::{self, ArithRequest, GetOptions, StoreRequest};
use protocol_memcache::binary::{write_error, write_ok, write_version, Opcode, Request, Status};

use super::is_store;
use crate::compose::binary::{self as reply, To};
use crate::ctx::{Ctx, Flow};
use crate::pending;
use crate::route::{self, Routed};
use crate::VERSION;

/// `touch`'s new exptime for the retrievals that have one (gat/gatk/touch).
fn touch_of(req: &Request<'_>) -> Option<i64> {
    match req.opcode().base() {
        Opcode::Get | Opcode::GetK => None,
        _ => Some(req.touch_expiration().unwrap_or(0) as i64),
    }
}

/// The store a set/add/replace/append/prepend asks for (with `-C` its CAS is ignored).
fn store_request<'a>(req: &Request<'a>, use_cas: bool) -> StoreRequest<'a> {
    let (flags, exptime) = req.store_extras().map(|e| (e.flags, e.expiration as i64)).unwrap_or((0, 0));
    let cas = if use_cas { req.cas() } else { 0 };
    StoreRequest::new(crate::modes::binary(req.opcode().base(), cas), req.key(), req.value(), flags, exptime, cas)
}

/// The incr/decr a request asks for (`None`: its extras are missing).
fn arith_request<'a>(req: &Request<'a>) -> Option<ArithRequest<'a>> {
    let x = req.counter_extras()?;
    Some(ArithRequest {
        key: req.key(),
        incr: req.opcode().base() == Opcode::Increment,
        delta: x.delta,
        cas: req.cas(),
        create: x.creates_missing().then_some((x.initial, x.expiration as i64)),
        touch: None,
    })
}

/// A request on a container key (see `route::binary_claims`).
pub fn container(req: &Request<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let to = To { op: req.opcode(), opaque: req.opaque() };
    let place = match route::key(ctx, req.key()) {
        Routed::Container(place) => place,
        Routed::Bind(f) | Routed::Refused(f) | Routed::Down(f) => {
            reply::fail(out, to, &f);
            return Flow::Continue;
        }
        Routed::Memory => return memory(req, ctx, out),
    };
    let job = match to.op.base() {
        Opcode::Get | Opcode::GetK | Opcode::Touch | Opcode::Gat | Opcode::GatK => {
            let key = req.key().to_vec();
            pending::job(place.get(touch_of(req)), move |r, v| match r {
                Ok(row) => reply::get(v, to, &key, row.as_ref().map(|r| (r.cas, r.flags, &r.value[..]))),
                Err(f) => reply::fail(v, to, &f),
            })
        }
        op if is_store(op) => {
            let later = place.store(&store_request(req, ctx.shared.engine.config().use_cas));
            pending::job(later, move |r, v| reply::store(v, to, r))
        }
        Opcode::Delete => {
            let cas = (req.cas() != 0).then_some(req.cas());
            pending::job(place.delete(cas), move |r, v| reply::delete(v, to, r))
        }
        Opcode::Increment | Opcode::Decrement => {
            let Some(r) = arith_request(req) else {
                write_error(out, to.op, Status::InvalidArguments, to.opaque);
                return Flow::Close;
            };
            pending::job(place.arith(&r), move |r, v| reply::arith(v, to, r))
        }
        _ => return memory(req, ctx, out),
    };
    Flow::Pending(job)
}

/// A request on the engine.
pub fn memory(req: &Request<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let engine = &ctx.shared.engine;
    let to = To { op: req.opcode(), opaque: req.opaque() };
    let (op, opaque) = (to.op, to.opaque);
    let use_cas = engine.config().use_cas;
    let key = req.key();
    let writes = is_store(op)
        || matches!(op.base(), Opcode::Delete | Opcode::Increment | Opcode::Decrement | Opcode::Flush | Opcode::Touch);
    if writes && crate::persistence::refusal(ctx.shared).is_some() {
        // The disk tier is degraded: refused like a store that finds no memory.
        write_error(out, op, Status::OutOfMemory, opaque);
        return Flow::Continue;
    }
    match op.base() {
        Opcode::Get | Opcode::GetK | Opcode::Touch | Opcode::Gat | Opcode::GatK => {
            ops::get(engine, key, GetOptions { touch: touch_of(req) }, &ctx.acks.receipt, |it| {
                ctx.shared.detail.get(key, it.is_some());
                let hit = it.map(|it| (if use_cas { it.cas } else { 0 }, it.flags, it.value()));
                reply::get(out, to, key, hit);
            });
        }
        op if is_store(op) => {
            ctx.shared.detail.set(key);
            let r = ops::store(engine, &store_request(req, use_cas), &ctx.acks.receipt);
            reply::store(out, to, Ok(r));
        }
        Opcode::Delete => {
            ctx.shared.detail.delete(key);
            reply::delete(out, to, Ok(ops::delete(engine, key, req.cas(), &ctx.acks.receipt)));
        }
        Opcode::Increment | Opcode::Decrement => {
            let Some(r) = arith_request(req) else {
                write_error(out, op, Status::InvalidArguments, opaque);
                return Flow::Close;
            };
            reply::arith(out, to, Ok(ops::arith(engine, &r, &ctx.acks.receipt)));
        }
        Opcode::Quit => {
            if !op.suppresses_reply(Status::NoError) {
                write_ok(out, op, opaque, 0);
            }
            return Flow::Close;
        }
        Opcode::Flush => {
            if ctx.shared.cfg.disable_flush_all {
                write_error(out, op, Status::AuthError, opaque);
            } else {
                let delay = req.flush_expiration().flatten().unwrap_or(0) as i64;
                engine.flush_all(delay, &ctx.acks.receipt);
                if !op.suppresses_reply(Status::NoError) {
                    write_ok(out, op, opaque, 0);
                }
            }
        }
        Opcode::Noop => write_ok(out, op, opaque, 0),
        Opcode::Version => write_version(out, opaque, VERSION.as_bytes()),
        Opcode::Stat => super::stat::stat(key, opaque, ctx, out),
        _ => write_error(out, op, Status::UnknownCommand, opaque),
    }
    Flow::Continue
}
