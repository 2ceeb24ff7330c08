//! `incr` / `decr` (memcached's `process_arithmetic_command`).

use engine::ops::{self, ArithOutcome, ArithRequest};
use protocol_memcache::text::reply;

use super::say;
use crate::ctx::{Ctx, Flow};

/// Add to or subtract from a decimal value.
pub fn execute(incr: bool, key: &[u8], delta: u64, noreply: bool, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let req = ArithRequest { key, incr, delta, cas: 0, create: None, touch: None };
    compose(ops::arith(&ctx.shared.engine, &req), noreply, out);
    Flow::Continue
}

/// The reply to `incr`/`decr`, for memory and container keys alike.
pub fn compose(outcome: ArithOutcome, noreply: bool, out: &mut Vec<u8>) {
    match outcome {
        ArithOutcome::Done { value, .. } => {
            if !noreply {
                reply::number(out, value);
            }
        }
        ArithOutcome::NotFound => say(out, noreply, reply::NOT_FOUND),
        ArithOutcome::NonNumeric => say(out, noreply, reply::NON_NUMERIC),
        ArithOutcome::NoMemory => say(out, noreply, b"SERVER_ERROR out of memory\r\n"),
        ArithOutcome::Exists => say(out, noreply, reply::EXISTS),
    }
}
