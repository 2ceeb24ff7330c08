//! `touch <key> <exptime> [noreply]`.

use engine::ops;

use crate::compose;
use crate::ctx::{Ctx, Flow};
use crate::pending;
use crate::route::{self, Routed};

/// Give a key a new TTL.
pub fn execute(key: &[u8], exptime: i32, noreply: bool, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    match route::key(ctx, key) {
        Routed::Memory => {
            let hit = ops::touch(&ctx.shared.engine, key, exptime as i64, &ctx.acks.receipt);
            compose::text::touch(out, noreply, Ok(hit));
        }
        Routed::Container(place) => {
            let later = place.touch(exptime as i64);
            return Flow::Pending(pending::job(later, move |r, v| compose::text::touch(v, noreply, r)));
        }
        other => super::refused(out, noreply, other),
    }
    Flow::Continue
}
