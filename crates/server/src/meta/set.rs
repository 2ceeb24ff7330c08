//! `ms <key> <datalen> <flags>*`: the generic store (mode switch `M`, CAS `C`,
//! invalidation `I`).

use engine::ops::{self, StoreMode, StoreRequest};
use protocol_memcache::meta::MetaRequest;
use protocol_memcache::text::reply;

use super::{echo, owned};
use crate::compose;
use crate::ctx::{Ctx, Flow};
use crate::pending;
use crate::route::{self, Routed};

/// Run `ms` with its data block (still ending in `\r\n`).
pub fn execute(m: &MetaRequest<'_>, block: &[u8], ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let f = &m.flags;
    if block.len() != m.datalen + 2 || &block[m.datalen..] != b"\r\n" {
        out.extend_from_slice(reply::BAD_CHUNK);
        return Flow::Continue;
    }
    let mode = crate::modes::meta(f.mode, f.cas.is_some());
    let vivify = match mode {
        StoreMode::Append | StoreMode::Prepend => f.vivify.map(i64::from),
        _ => None,
    };
    let req = StoreRequest {
        mode,
        key: &m.key,
        value: &block[..m.datalen],
        flags: f.client_flags,
        exptime: f.ttl.unwrap_or(0) as i64,
        cas: f.cas.unwrap_or(0),
        set_stale: f.invalidate && mode == StoreMode::Cas,
        vivify,
        key_binary: f.base64,
    };
    match route::key(ctx, &m.key) {
        Routed::Memory => {
            let r = ops::store(&ctx.shared.engine, &req, &ctx.acks.receipt);
            compose::meta::store(out, &echo(m), Ok(r));
        }
        Routed::Container(place) => {
            let e = owned(m);
            let later = place.store(&req);
            return Flow::Pending(pending::job(later, move |r, v| compose::meta::store(v, &e.echo(), r)));
        }
        other => super::refused(out, other),
    }
    Flow::Continue
}
