//! `delete <key> [0] [noreply]`.

use engine::ops::{self, DeleteOutcome};
use protocol_memcache::text::reply;

use super::say;
use crate::ctx::{Ctx, Flow};

/// Remove a key.
pub fn execute(key: &[u8], noreply: bool, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    ctx.shared.detail.delete(key);
    let r = match ops::delete(&ctx.shared.engine, key, 0, &ctx.acks.receipt) {
        DeleteOutcome::Deleted => reply::DELETED,
        _ => reply::NOT_FOUND,
    };
    say(out, noreply, r);
    Flow::Continue
}
