//! `ma <key> <flags>*`: incr/decr with auto-create (`N`, `J`), delta (`D`), mode (`M`).

use engine::ops::{self, ArithOutcome, ArithRequest};
use protocol_memcache::meta::{self, MetaRequest};

use super::{echo_opaque_and_key, ttl_left};
use crate::ctx::Ctx;

/// Run `ma`.
pub fn execute(m: &MetaRequest<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    let f = &m.flags;
    let engine = &ctx.shared.engine;
    let incr = !matches!(f.mode, Some(b'D' | b'-'));
    let req = ArithRequest {
        key: &m.key,
        incr,
        delta: f.delta,
        cas: f.cas.unwrap_or(0),
        create: f.vivify.map(|_| (f.initial, 0)),
        touch: None,
    };
    let (value, created) = match ops::arith(engine, &req, &ctx.acks.receipt) {
        ArithOutcome::Done { value, created, .. } => (value, created),
        ArithOutcome::NonNumeric => {
            out.extend_from_slice(b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
            return;
        }
        ArithOutcome::NoMemory => {
            out.extend_from_slice(b"SERVER_ERROR out of memory\r\n");
            return;
        }
        other => {
            out.extend_from_slice(if other == ArithOutcome::Exists { b"EX" } else { b"NF" });
            echo_opaque_and_key(m, f.base64, out);
            out.extend_from_slice(b"\r\n");
            return;
        }
    };
    // memcached hides a nominal reply under `q`, except right after auto-creating.
    let skip = f.quiet && !created;
    let mut line = Vec::new();
    let text = value.to_string();
    if f.value {
        line.extend_from_slice(b"VA ");
        line.extend_from_slice(itoa::Buffer::new().format(text.len()).as_bytes());
    } else {
        line.extend_from_slice(b"HD");
    }
    let clock = engine.clock();
    let mut a = engine.access(&m.key, &ctx.acks.receipt);
    let now = a.now();
    if let Ok(it) = a.lookup() {
        for tok in m.flag_tokens() {
            match tok[0] {
                b'c' => meta::push_num(&mut line, b'c', if engine.config().use_cas { it.cas } else { 0 }),
                b't' => meta::push_num(&mut line, b't', ttl_left(it.exptime, now)),
                b'T' => it.exptime = clock.realtime(f.ttl.unwrap_or(0) as i64),
                b'N' if created => it.exptime = clock.realtime(f.vivify.unwrap_or(0) as i64),
                b'O' => {
                    line.push(b' ');
                    line.extend_from_slice(tok);
                }
                b'k' => meta::push_key(&mut line, &m.key, f.base64),
                _ => {}
            }
        }
        if f.ttl.is_some() || created {
            a.changed();
        }
    }
    drop(a);
    if f.value {
        line.extend_from_slice(b"\r\n");
        line.extend_from_slice(text.as_bytes());
    }
    line.extend_from_slice(b"\r\n");
    if !skip {
        out.extend_from_slice(&line);
    }
}
