//! The binary protocol front end (memcached's `proto_bin.c`): frames requests with
//! `protocol_memcache::binary`, maps each to its engine operation (`exec::Op::binary`: the
//! one opcode mapping), routes its key once and runs it with the execution call
//! (`exec::run`), replies composed by `compose::binary`; `stat.rs` answers `Stat`.

mod stat;

use protocol_memcache::binary::{parse_header, parse_request, Invalid, Opcode, Request, Status, HEADER_LEN};

use crate::compose::binary::{self as reply, Binary, To};
use crate::ctx::{Ctx, Flow};
use crate::exec::{self, NotOp, Op};
use crate::route::{self, Where};
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
        // A store's key, routed once from its header: a value too large to store (or any
        // write while the disk tier refuses them) is refused from the header alone, then
        // skipped.
        let mut routed: Option<Where> = None;
        match parse_header(rest) {
            Ok(None) => break,
            Ok(Some(h)) => {
                if ctx.shared.sasl.is_some() {
                    match crate::sasl::gate(&h, st.sasl.authenticated, ctx.shared.cfg.item_size_max) {
                        Gate::Pass => {}
                        Gate::Refuse => {
                            reply::unauthenticated(out, h.opcode, h.opaque, false);
                            return (pos, Flow::Close);
                        }
                        Gate::TooLarge => {
                            reply::unauthenticated(out, h.opcode, h.opaque, true);
                            st.swallow = h.frame_len();
                            *budget -= 1;
                            continue;
                        }
                    }
                }
                if let (Ok(op), true) = (h.check(), rest.len() >= h.head_len()) {
                    let to = To { op, opaque: h.opaque };
                    if is_store(op) {
                        let key = &rest[HEADER_LEN + h.extras_len as usize..h.head_len()];
                        let flags = if h.extras_len >= 4 {
                            u32::from_be_bytes(rest[HEADER_LEN..HEADER_LEN + 4].try_into().unwrap_or([0; 4]))
                        } else {
                            0
                        };
                        let at = route::key(ctx, key);
                        let len = h.value_len() as usize;
                        if let Some(r) = exec::admit(ctx, &at, key, len, flags, op.base() == Opcode::Set, true) {
                            reply::refused(out, to, &r);
                            st.swallow = h.frame_len();
                            *budget -= 1;
                            continue;
                        }
                        routed = Some(at);
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
                let t = timing::start(ctx.shared.timing);
                let mark = out.len();
                let (class, flow) = run(&req, routed, ctx, out);
                ctx.acks.note(mark, out.len(), Some((req.opcode(), req.opaque())));
                match flow {
                    Flow::Continue => timing::done(&ctx.worker.latency, t, Proto::Binary, class),
                    flow => return (pos, flow),
                }
            }
            Err(e) => {
                reply::invalid(out, &e);
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

/// Run one request (`routed`: its key's route, if its header already had it); the latency
/// class it counts in.
fn run(req: &Request<'_>, routed: Option<Where>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> (Class, Flow) {
    let to = To { op: req.opcode(), opaque: req.opaque() };
    let op = match Op::binary(req, ctx.shared.engine.config().use_cas) {
        Ok(op) => op,
        Err(NotOp::Malformed) => {
            reply::error(out, to, Status::InvalidArguments);
            return (Class::Other, Flow::Close);
        }
        Err(NotOp::Other) => return (Class::Other, other(req, to, ctx, out)),
    };
    if op.keyless() && ctx.shared.cfg.disable_flush_all {
        reply::error(out, to, Status::AuthError);
        return (Class::Other, Flow::Continue);
    }
    let at = match routed {
        Some(at) => at,
        None if op.keyless() => route::keyless(ctx),
        None => route::key(ctx, req.key()),
    };
    (op.class(), exec::run(ctx, at, req.key(), op, &Binary { to, key: req.key() }, out))
}

/// The requests that are not key operations.
fn other(req: &Request<'_>, to: To, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    match to.op.base() {
        Opcode::Quit => {
            reply::ok(out, to, 0);
            return Flow::Close;
        }
        Opcode::Noop => reply::ok(out, to, 0),
        Opcode::Version => reply::version(out, to, VERSION),
        Opcode::Stat => stat::stat(req.key(), to.opaque, ctx, out),
        _ => reply::error(out, to, Status::UnknownCommand),
    }
    Flow::Continue
}

fn is_store(op: Opcode) -> bool {
    matches!(op.base(), Opcode::Set | Opcode::Add | Opcode::Replace | Opcode::Append | Opcode::Prepend)
}
