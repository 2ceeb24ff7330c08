//! `delete <key> [0] [noreply]`.

use engine::ops;

use crate::compose;
use crate::ctx::{Ctx, Flow};
use crate::pending;
use crate::route::{self, Routed};

/// Remove a key.
pub fn execute(key: &[u8], noreply: bool, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    match route::key(ctx, key) {
        Routed::Memory => {
            ctx.shared.detail.delete(key);
            let r = ops::delete(&ctx.shared.engine, key, 0, &ctx.acks.receipt);
            compose::text::delete(out, noreply, Ok(r));
        }
        Routed::Container(place) => {
            return Flow::Pending(pending::job(place.delete(None), move |r, v| compose::text::delete(v, noreply, r)))
        }
        other => super::refused(out, noreply, other),
    }
    Flow::Continue
}
