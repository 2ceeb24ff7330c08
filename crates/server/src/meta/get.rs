//! `mg <key> <flags>*`: the generic retrieval, with stampede protection
//! (`N` vivify, `R` recache, `W`/`Z`/`X` reply flags).

use engine::clock::{absolute_unix_exptime, ttl_left_unix};
use engine::item::{Item, FETCHED, KEY_BINARY, STALE, WON};
use protocol_memcache::meta::{self, MetaRequest};

use super::{echo, owned, ttl_left};
use crate::compose::meta::{self as reply, Hit};
use crate::ctx::{Ctx, Flow};
use crate::pending;
use crate::route::{self, Routed};

/// Run `mg`.
pub fn execute(m: &MetaRequest<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let place = match route::key(ctx, &m.key) {
        Routed::Memory => {
            memory(m, ctx, out);
            return Flow::Continue;
        }
        Routed::Container(place) => place,
        // `mg @@name`: binds, like `get @@name`; answers a miss.
        Routed::Bind(_) => {
            if !m.flags.quiet {
                out.extend_from_slice(b"EN\r\n");
            }
            return Flow::Continue;
        }
        other => {
            super::refused(out, other);
            return Flow::Continue;
        }
    };
    let f = &m.flags;
    let (e, with_value, touch) = (owned(m), f.value, f.ttl.map(i64::from));
    let now = ctx.shared.engine.clock().unix_now();
    // The row comes back as found; `T` applies after, in flag order.
    let later = place.get(touch);
    Flow::Pending(pending::job(later, move |r, v| match r {
        Ok(row) => {
            let mut ttls = Vec::new();
            if let Some(row) = &row {
                let mut exptime = row.exptime;
                for tok in &e.tokens {
                    match tok.first() {
                        Some(b't') => ttls.push(ttl_left_unix(exptime, now)),
                        Some(b'T') => exptime = absolute_unix_exptime(touch.unwrap_or(0), now),
                        _ => {}
                    }
                }
            }
            let hit = row.as_ref().map(|row| Hit {
                value: &row.value,
                flags: row.flags,
                cas: row.cas,
                ttl: ttl_left_unix(row.exptime, now),
            });
            reply::get(v, &e.echo(), with_value, hit, &mut ttls.into_iter())
        }
        Err(f) => v.extend(f.line()),
    }))
}

/// `mg` on a memory key, with the stampede flags.
fn memory(m: &MetaRequest<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    let engine = &ctx.shared.engine;
    let clock = engine.clock();
    let f = &m.flags;
    let mut a = engine.access(&m.key, &ctx.acks.receipt);
    let now = a.now();
    let mut created = false;
    // On a miss with `N`, a stub item with no data: this client wins the right to fill it.
    if a.lookup().is_err() && f.vivify.is_some() && a.store(Item::new(&m.key, &[], 0, 0, now)).is_ok() {
        created = true;
    }
    let use_cas = engine.config().use_cas;
    let ttl_set = f.ttl.is_some();
    {
        let st = a.stats();
        st.cmd_get += 1;
        if ttl_set {
            st.cmd_touch += 1;
        }
    }
    let Ok(it) = a.lookup() else {
        let st = a.stats();
        if ttl_set {
            st.touch_misses += 1;
        } else {
            st.get_misses += 1;
        }
        echo(m).code(out, b"EN", true);
        return;
    };
    reply::head(out, f.value, it.value().len());
    let mut won = false;
    let (cas, ttl) = (if use_cas { it.cas } else { 0 }, ttl_left(it.exptime, now));
    for tok in m.flag_tokens() {
        match tok[0] {
            b'T' => it.exptime = clock.realtime(f.ttl.unwrap_or(0) as i64),
            b'N' if created => {
                it.exptime = clock.realtime(f.vivify.unwrap_or(0) as i64);
                won = true;
            }
            b'R' => {
                let recache = clock.realtime(f.recache.unwrap_or(0) as i64);
                if !it.has(WON) && !created && it.exptime != 0 && it.exptime < recache {
                    won = true;
                }
            }
            b't' => meta::push_num(out, b't', ttl_left(it.exptime, now)),
            b'l' => meta::push_num(out, b'l', now.wrapping_sub(it.atime)),
            b'h' => meta::push_num(out, b'h', it.has(FETCHED) as u8),
            b'k' => meta::push_key(out, it.key(), it.has(KEY_BINARY)),
            _ => {
                let hit = Hit { value: it.value(), flags: it.flags, cas, ttl };
                reply::hit_flag(out, tok, &hit);
            }
        }
    }
    if it.has(WON) {
        out.extend_from_slice(b" Z");
    }
    if it.has(STALE) {
        out.extend_from_slice(b" X");
        if !it.has(WON) {
            won = true;
        }
    }
    if won {
        out.extend_from_slice(b" W");
        it.bits |= WON;
    }
    reply::tail(out, f.value, it.value());
    if !f.no_bump {
        a.bump();
    }
    if ttl_set {
        a.changed();
    }
    let st = a.stats();
    if ttl_set {
        st.touch_hits += 1;
    } else {
        st.get_hits += 1;
    }
}
