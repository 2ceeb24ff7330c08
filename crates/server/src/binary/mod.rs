//! The binary protocol front end (memcached's `proto_bin.c`): frames requests with
//! `protocol_memcache::binary` and maps each opcode onto the engine operations the text
//! protocol uses too (`exec.rs`), memory and container keys alike.

mod exec;
mod stat;

use engine::ops;
use protocol_memcache::binary::{parse_header, parse_request, write_error, Invalid, Opcode, Status, HEADER_LEN};

use crate::ctx::{Ctx, Flow};
use crate::sasl::Gate;
use crate::timing::{self, Class, Proto};

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
                    if is_store(op) {
                        let key = &rest[HEADER_LEN + h.extras_len as usize..h.head_len()];
                        let flags = if h.extras_len >= 4 {
                            u32::from_be_bytes(rest[HEADER_LEN..HEADER_LEN + 4].try_into().unwrap_or([0; 4]))
                        } else {
                            0
                        };
                        // The same size limit for memory and container keys; only a memory
                        // key counts it and loses its old value (memcached's behaviour).
                        if ops::item_too_large(&ctx.shared.engine, key.len(), h.value_len() as usize, flags) {
                            if crate::route::binary_claims(ctx, op, key) {
                                crate::route::too_large(ctx, key, op.base() == Opcode::Set);
                            } else {
                                let engine = &ctx.shared.engine;
                                engine.access(key, &ctx.acks.receipt).stats().store_too_large += 1;
                                if op.base() == Opcode::Set {
                                    engine.access(key, &ctx.acks.receipt).remove();
                                }
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
                if crate::route::binary_claims(ctx, req.opcode(), req.key()) {
                    // A container key (or an error about one): its reply may be pending.
                    match exec::container(&req, ctx, out) {
                        Flow::Continue => continue,
                        flow => return (pos, flow),
                    }
                }
                let t = timing::start(ctx.shared.timing);
                let mark = out.len();
                let flow = exec::memory(&req, ctx, out);
                ctx.acks.note(mark, out.len(), Some((req.opcode(), req.opaque())));
                timing::done(&ctx.worker.latency, t, Proto::Binary, class_of(req.opcode()));
                if !flow.is_continue() {
                    return (pos, flow);
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
