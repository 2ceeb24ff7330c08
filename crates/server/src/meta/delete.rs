//! `md <key> <flags>*`: delete, or with `I` mark stale so one client recaches.

use engine::item::{STALE, WON};
use protocol_memcache::meta::MetaRequest;

use super::echo_opaque_and_key;
use crate::ctx::Ctx;

/// Run `md`.
pub fn execute(m: &MetaRequest<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    let f = &m.flags;
    let engine = &ctx.shared.engine;
    let mut a = engine.access(&m.key, &ctx.acks.receipt);
    let code: &[u8] = match a.lookup() {
        Ok(it) if f.cas.is_some_and(|c| c != it.cas) => {
            a.stats().delete_misses += 1;
            b"EX"
        }
        Ok(it) if f.invalidate => {
            if let Some(t) = f.ttl {
                it.exptime = engine.clock().realtime(t as i64);
            }
            it.bits = (it.bits | STALE) & !WON;
            a.new_cas();
            a.changed();
            b"HD"
        }
        Ok(_) => {
            a.stats().delete_hits += 1;
            a.remove();
            b"HD"
        }
        Err(_) => {
            a.stats().delete_misses += 1;
            b"NF"
        }
    };
    if f.quiet && code == b"HD" {
        return;
    }
    out.extend_from_slice(code);
    echo_opaque_and_key(m, f.base64, out);
    out.extend_from_slice(b"\r\n");
}
