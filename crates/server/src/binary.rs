//! The binary protocol front end (memcached's `proto_bin.c`): frames requests with
//! `protocol_memcache::binary` and maps each opcode onto the engine operations the text
//! protocol uses too.

use engine::ops::{self, ArithOutcome, ArithRequest, DeleteOutcome, GetOptions, StoreOutcome, StoreRequest};
use protocol_memcache::binary::{
    parse_header, parse_request, write_counter, write_error, write_error_message, write_get_hit, write_get_miss,
    write_ok, write_stat, write_stat_end, write_version, Invalid, Opcode, Request, Status, HEADER_LEN,
    OUT_OF_MEMORY_STORE_MESSAGE,
};

use crate::ctx::{Ctx, Flow};
use crate::sasl::Gate;
use crate::timing::{self, Class, Proto};
use crate::VERSION;

/// Per-connection state that outlives one read.
#[derive(Default)]
pub struct BinaryState {
    /// Bytes still to discard (a refused value, or the tail of an unknown command).
    pub swallow: u64,
    /// With `-S`: where this connection is in the SASL exchange.
    pub sasl: crate::sasl::SaslState,
}

/// Run as many complete requests from `buf` as `budget` allows; returns bytes consumed.
pub fn process(
    buf: &[u8],
    st: &mut BinaryState,
    ctx: &Ctx<'_>,
    out: &mut Vec<u8>,
    budget: &mut usize,
) -> (usize, Flow) {
    let mut pos = 0;
    while *budget > 0 {
        if st.swallow > 0 {
            let n = st.swallow.min((buf.len() - pos) as u64);
            pos += n as usize;
            st.swallow -= n;
            if st.swallow > 0 {
                break;
            }
        }
        let rest = &buf[pos..];
        // A value too large to store is refused from its header alone, then skipped.
        match parse_header(rest) {
            Ok(None) => break,
            Ok(Some(h)) => {
                if ctx.shared.sasl.is_some() {
                    match crate::sasl::gate(&h, st.sasl.authenticated, ctx.shared.cfg.item_size_max) {
                        Gate::Pass => {}
                        Gate::Refuse => {
                            write_error(out, h.opcode, Status::AuthError, h.opaque);
                            return (pos, Flow::Close);
                        }
                        Gate::TooLarge => {
                            write_error(out, h.opcode, Status::OutOfMemory, h.opaque);
                            st.swallow = h.frame_len();
                            *budget -= 1;
                            continue;
                        }
                    }
                }
                if let (Ok(op), true) = (h.check(), rest.len() >= h.head_len()) {
                    let claimed = ctx.shared.sql.as_deref().is_some_and(|sql| {
                        crate::sqlfront::binary_claims(
                            sql,
                            op,
                            &rest[HEADER_LEN + h.extras_len as usize..h.head_len()],
                            ctx,
                        )
                    });
                    if is_store(op) && !claimed {
                        let key = &rest[HEADER_LEN + h.extras_len as usize..h.head_len()];
                        let flags = if h.extras_len >= 4 {
                            u32::from_be_bytes(rest[HEADER_LEN..HEADER_LEN + 4].try_into().unwrap_or([0; 4]))
                        } else {
                            0
                        };
                        if ops::item_too_large(&ctx.shared.engine, key.len(), h.value_len() as usize, flags) {
                            let engine = &ctx.shared.engine;
                            engine.access(key, &ctx.acks.receipt).stats().store_too_large += 1;
                            if op.base() == Opcode::Set {
                                engine.access(key, &ctx.acks.receipt).remove();
                            }
                            write_error(out, h.opcode, Status::ValueTooLarge, h.opaque);
                            st.swallow = h.frame_len();
                            *budget -= 1;
                            continue;
                        }
                    }
                }
            }
            Err(_) => {}
        }
        match parse_request(rest) {
            Ok(None) => break,
            Ok(Some((req, used))) => {
                pos += used;
                *budget -= 1;
                if let (Some(sasl), true) = (&ctx.shared.sasl, crate::sasl::is_sasl(req.opcode())) {
                    crate::sasl::execute(sasl, &req, &mut st.sasl, out);
                    continue;
                }
                if let Some(sql) = &ctx.shared.sql {
                    if crate::sqlfront::binary_claims(sql, req.opcode(), req.key(), ctx) {
                        if let Some(job) = crate::sqlfront::binary(sql, &req, ctx, out) {
                            *ctx.job.borrow_mut() = Some(job);
                            return (pos, Flow::Job);
                        }
                        continue;
                    }
                }
                let t = timing::start(ctx.shared.timing);
                let mark = out.len();
                let flow = execute(&req, ctx, out);
                ctx.acks.note(mark, out.len(), Some((req.opcode(), req.opaque())));
                timing::done(&ctx.worker.latency, t, Proto::Binary, class_of(req.opcode()));
                if flow == Flow::Close {
                    return (pos, Flow::Close);
                }
            }
            Err(e) => {
                e.write_reply(out);
                match e.action {
                    Invalid::RespondAndSkip { skip, .. } => {
                        st.swallow = skip;
                        *budget -= 1;
                    }
                    _ => return (pos, Flow::Close),
                }
            }
        }
    }
    (pos, Flow::Continue)
}

/// The latency histogram a binary opcode counts in.
fn class_of(op: Opcode) -> Class {
    match op.base() {
        Opcode::Get | Opcode::GetK | Opcode::Gat | Opcode::GatK => Class::Get,
        op if is_store(op) => Class::Set,
        _ => Class::Other,
    }
}

fn is_store(op: Opcode) -> bool {
    matches!(op.base(), Opcode::Set | Opcode::Add | Opcode::Replace | Opcode::Append | Opcode::Prepend)
}

/// Write a reply unless this quiet opcode suppresses it.
fn reply(out: &mut Vec<u8>, op: Opcode, status: Status, opaque: u32) {
    if !op.suppresses_reply(status) {
        write_error(out, op, status, opaque);
    }
}

fn execute(req: &Request<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let engine = &ctx.shared.engine;
    let op = req.opcode();
    let opaque = req.opaque();
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
            let touch = if matches!(op.base(), Opcode::Get | Opcode::GetK) {
                None
            } else {
                Some(req.touch_expiration().unwrap_or(0) as i64)
            };
            ops::get(engine, key, GetOptions { touch }, &ctx.acks.receipt, |it| {
                ctx.shared.detail.get(key, it.is_some());
                match it {
                    Some(it) => {
                        let cas = if use_cas { it.cas } else { 0 };
                        write_get_hit(out, op, opaque, cas, it.flags, key, it.value());
                    }
                    None if op.suppresses_reply(Status::KeyNotFound) => {}
                    None => write_get_miss(out, op, opaque, key),
                }
            });
        }
        Opcode::Set | Opcode::Add | Opcode::Replace | Opcode::Append | Opcode::Prepend => {
            ctx.shared.detail.set(key);
            let (flags, exptime) = req.store_extras().map(|e| (e.flags, e.expiration as i64)).unwrap_or((0, 0));
            // With CAS off (-C) memcached ignores a request's CAS on stores.
            let cas = if use_cas { req.cas() } else { 0 };
            let mode = crate::modes::binary(op.base(), cas);
            let r = StoreRequest {
                mode,
                key,
                value: req.value(),
                flags,
                exptime,
                cas,
                set_stale: false,
                vivify: None,
                key_binary: false,
            };
            match ops::store(engine, &r, &ctx.acks.receipt) {
                StoreOutcome::Stored(cas) => {
                    if !op.suppresses_reply(Status::NoError) {
                        write_ok(out, op, opaque, cas);
                    }
                }
                StoreOutcome::Exists => reply(out, op, Status::KeyExists, opaque),
                StoreOutcome::NotFound => reply(out, op, Status::KeyNotFound, opaque),
                StoreOutcome::NotStored => {
                    let status = match op.base() {
                        Opcode::Add => Status::KeyExists,
                        Opcode::Replace => Status::KeyNotFound,
                        _ => Status::ItemNotStored,
                    };
                    reply(out, op, status, opaque);
                }
                StoreOutcome::NoMemory => {
                    write_error_message(out, op, Status::OutOfMemory, opaque, OUT_OF_MEMORY_STORE_MESSAGE.as_bytes())
                }
            }
        }
        Opcode::Delete => {
            ctx.shared.detail.delete(key);
            let status = match ops::delete(engine, key, req.cas(), &ctx.acks.receipt) {
                DeleteOutcome::Deleted => Status::NoError,
                DeleteOutcome::NotFound => Status::KeyNotFound,
                DeleteOutcome::Exists => Status::KeyExists,
            };
            if status == Status::NoError {
                if !op.suppresses_reply(status) {
                    write_ok(out, op, opaque, 0);
                }
            } else {
                reply(out, op, status, opaque);
            }
        }
        Opcode::Increment | Opcode::Decrement => {
            let Some(x) = req.counter_extras() else {
                write_error(out, op, Status::InvalidArguments, opaque);
                return Flow::Close;
            };
            let r = ArithRequest {
                key,
                incr: op.base() == Opcode::Increment,
                delta: x.delta,
                cas: req.cas(),
                create: x.creates_missing().then_some((x.initial, x.expiration as i64)),
                touch: None,
            };
            match ops::arith(engine, &r, &ctx.acks.receipt) {
                ArithOutcome::Done { value, cas, .. } => {
                    if !op.suppresses_reply(Status::NoError) {
                        write_counter(out, op, opaque, cas, value);
                    }
                }
                ArithOutcome::NotFound => reply(out, op, Status::KeyNotFound, opaque),
                ArithOutcome::NonNumeric => reply(out, op, Status::NonNumeric, opaque),
                ArithOutcome::Exists => reply(out, op, Status::KeyExists, opaque),
                ArithOutcome::NoMemory => reply(out, op, Status::OutOfMemory, opaque),
            }
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
        Opcode::Stat => stat(key, opaque, ctx, out),
        _ => write_error(out, op, Status::UnknownCommand, opaque),
    }
    Flow::Continue
}

/// `Stat`: the same figures as the text protocol's `stats`, one key/value reply each,
/// then an empty one.
fn stat(key: &[u8], opaque: u32, ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    let mut line = b"stats".to_vec();
    if !key.is_empty() {
        line.push(b' ');
        line.extend_from_slice(key);
    }
    let args = protocol_memcache::text::Tokens::new(&line[5..]);
    if args.get(0) == b"detail" {
        match args.get(1) {
            b"on" => ctx.shared.detail.set_enabled(true),
            b"off" => ctx.shared.detail.set_enabled(false),
            b"dump" => {
                let mut dump = Vec::new();
                ctx.shared.detail.dump(&mut dump);
                write_stat(out, opaque, b"detailed", &dump);
            }
            _ => {
                write_error(out, Opcode::Stat, Status::KeyNotFound, opaque);
                return;
            }
        }
        write_stat_end(out, opaque);
        return;
    }
    if args.get(0) == b"reset" {
        crate::stats::reset(ctx);
    } else if !crate::stats::report(args.get(0), ctx.shared, &mut crate::stats::BinarySink { out, opaque }) {
        write_error(out, Opcode::Stat, Status::KeyNotFound, opaque);
        return;
    }
    write_stat_end(out, opaque);
}
