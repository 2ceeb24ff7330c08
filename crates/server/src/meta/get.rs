//! `mg <key> <flags>*`: the generic retrieval, with stampede protection
//! (`N` vivify, `R` recache, `W`/`Z`/`X` reply flags).

use engine::item::{Item, FETCHED, KEY_BINARY, STALE, WON};
use protocol_memcache::meta::{self, MetaRequest};

use super::{echo_opaque_and_key, ttl_left};
use crate::ctx::Ctx;

/// Run `mg`.
pub fn execute(m: &MetaRequest<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) {
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
        if !f.quiet {
            out.extend_from_slice(b"EN");
            echo_opaque_and_key(m, f.base64, out);
            out.extend_from_slice(b"\r\n");
        }
        return;
    };
    if f.value {
        out.extend_from_slice(b"VA ");
        out.extend_from_slice(itoa::Buffer::new().format(it.value().len()).as_bytes());
    } else {
        out.extend_from_slice(b"HD");
    }
    let mut won = false;
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
            b's' => meta::push_num(out, b's', it.value().len()),
            b't' => meta::push_num(out, b't', ttl_left(it.exptime, now)),
            b'c' => meta::push_num(out, b'c', if use_cas { it.cas } else { 0 }),
            b'f' => meta::push_num(out, b'f', it.flags),
            b'l' => meta::push_num(out, b'l', now.wrapping_sub(it.atime)),
            b'h' => meta::push_num(out, b'h', it.has(FETCHED) as u8),
            b'O' => {
                out.push(b' ');
                out.extend_from_slice(tok);
            }
            b'k' => meta::push_key(out, it.key(), it.has(KEY_BINARY)),
            _ => {}
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
    out.extend_from_slice(b"\r\n");
    if f.value {
        out.extend_from_slice(it.value());
        out.extend_from_slice(b"\r\n");
    }
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
