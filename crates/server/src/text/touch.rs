//! `touch <key> <exptime> [noreply]`.

use engine::ops;
use protocol_memcache::text::reply;

use super::say;
use crate::ctx::{Ctx, Flow};

/// Give a key a new TTL.
pub fn execute(key: &[u8], exptime: i32, noreply: bool, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let hit = ops::touch(&ctx.shared.engine, key, exptime as i64, &ctx.acks.receipt);
    say(out, noreply, if hit { reply::TOUCHED } else { reply::NOT_FOUND });
    Flow::Continue
}
