//! `get`, `gets`, `gat`, `gats` (memcached's `process_get_command`).

use engine::ops::{self, GetOptions};
use protocol_memcache::text::{reply, split_keys, KEY_MAX_LENGTH};

use crate::ctx::{Ctx, Flow};

/// Answer a (multi-key) retrieval: one `VALUE` block per hit, then `END`.
pub fn get(keys: &[u8], with_cas: bool, touch: Option<i32>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let start = out.len();
    let engine = &ctx.shared.engine;
    let opts = GetOptions { touch: touch.map(i64::from) };
    let use_cas = engine.config().use_cas;
    for key in split_keys(keys) {
        if key.len() > KEY_MAX_LENGTH {
            // memcached drops what it had queued for this command and answers an error.
            out.truncate(start);
            out.extend_from_slice(b"CLIENT_ERROR bad command line format\r\n");
            return Flow::Continue;
        }
        ops::get(engine, key, opts, &ctx.acks.receipt, |it| {
            ctx.shared.detail.get(key, it.is_some());
            if let Some(it) = it {
                let cas = with_cas.then_some(if use_cas { it.cas } else { 0 });
                reply::value(out, key, it.flags, it.value(), cas);
            }
        });
    }
    out.extend_from_slice(reply::END);
    Flow::Continue
}
