//! `incr` / `decr` (memcached's `process_arithmetic_command`).

use engine::ops::{self, ArithRequest};

use crate::compose;
use crate::ctx::{Ctx, Flow};

/// Add to or subtract from a decimal value.
pub fn execute(incr: bool, key: &[u8], delta: u64, noreply: bool, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let req = ArithRequest { key, incr, delta, cas: 0, create: None, touch: None };
    compose::text::arith(ops::arith(&ctx.shared.engine, &req, &ctx.acks.receipt), noreply, out);
    Flow::Continue
}
