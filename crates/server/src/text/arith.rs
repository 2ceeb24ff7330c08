//! `incr` / `decr` (memcached's `process_arithmetic_command`).

use engine::ops::{self, ArithRequest};

use crate::compose;
use crate::ctx::{Ctx, Flow};
use crate::pending;
use crate::route::{self, Routed};

/// Add to or subtract from a decimal value.
pub fn execute(incr: bool, key: &[u8], delta: u64, noreply: bool, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let req = ArithRequest { key, incr, delta, cas: 0, create: None, touch: None };
    match route::key(ctx, key) {
        Routed::Memory => {
            compose::text::arith(out, noreply, Ok(ops::arith(&ctx.shared.engine, &req, &ctx.acks.receipt)));
        }
        Routed::Container(place) => {
            let later = place.arith(&req);
            return Flow::Pending(pending::job(later, move |r, v| compose::text::arith(v, noreply, r)));
        }
        other => super::refused(out, noreply, other),
    }
    Flow::Continue
}
