//! `md <key> <flags>*`: delete, or with `I` mark stale so one client recaches.

use engine::item::{STALE, WON};
use engine::ops::DeleteOutcome;
use protocol_memcache::meta::MetaRequest;

use super::{echo, owned};
use crate::compose;
use crate::ctx::{Ctx, Flow};
use crate::pending;
use crate::route::{self, Routed};

/// Run `md`.
pub fn execute(m: &MetaRequest<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let f = &m.flags;
    let place = match route::key(ctx, &m.key) {
        Routed::Memory => {
            compose::meta::delete(out, &echo(m), Ok(memory(m, ctx)));
            return Flow::Continue;
        }
        Routed::Container(place) => place,
        other => {
            super::refused(out, other);
            return Flow::Continue;
        }
    };
    let e = owned(m);
    let later = place.delete(f.cas);
    Flow::Pending(pending::job(later, move |r, v| compose::meta::delete(v, &e.echo(), r)))
}

/// `md` on a memory key: a CAS mismatch is `Exists`; `I` marks the item stale (`Deleted`).
fn memory(m: &MetaRequest<'_>, ctx: &Ctx<'_>) -> DeleteOutcome {
    let f = &m.flags;
    let engine = &ctx.shared.engine;
    let mut a = engine.access(&m.key, &ctx.acks.receipt);
    match a.lookup() {
        Ok(it) if f.cas.is_some_and(|c| c != it.cas) => {
            a.stats().delete_misses += 1;
            DeleteOutcome::Exists
        }
        Ok(it) if f.invalidate => {
            if let Some(t) = f.ttl {
                it.exptime = engine.clock().realtime(t as i64);
            }
            it.bits = (it.bits | STALE) & !WON;
            a.new_cas();
            a.changed();
            DeleteOutcome::Deleted
        }
        Ok(_) => {
            a.stats().delete_hits += 1;
            a.remove();
            DeleteOutcome::Deleted
        }
        Err(_) => {
            a.stats().delete_misses += 1;
            DeleteOutcome::NotFound
        }
    }
}
