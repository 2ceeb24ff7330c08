//! `me <key> [b]`: a human-readable dump of an item's metadata.

use engine::item::{memcached_item_size, FETCHED, KEY_BINARY};
use protocol_memcache::meta::{self, MetaRequest};

use crate::ctx::Ctx;

/// Run `me`.
pub fn execute(m: &MetaRequest<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    let engine = &ctx.shared.engine;
    let use_cas = engine.config().use_cas;
    let mut a = engine.access(&m.key, &ctx.acks.receipt);
    let now = a.now();
    let Ok(it) = a.lookup() else {
        out.extend_from_slice(b"EN\r\n");
        return;
    };
    let size = memcached_item_size(it.key().len(), it.value().len(), it.flags, use_cas);
    out.extend_from_slice(b"ME ");
    if it.has(KEY_BINARY) {
        let mut k = Vec::new();
        meta::push_key(&mut k, it.key(), true);
        // push_key writes " k<b64> b"; `me` wants just the encoded key.
        out.extend_from_slice(&k[2..k.len() - 2]);
    } else {
        out.extend_from_slice(it.key());
    }
    let line = format!(
        " exp={} la={} cas={} fetch={} cls={} size={}\r\n",
        // memcached 1.6.18 prints now - exptime here (negative while the item lives).
        if it.exptime == 0 { -1 } else { now as i64 - it.exptime as i64 },
        now.wrapping_sub(it.atime),
        if use_cas { it.cas } else { 0 },
        if it.has(FETCHED) { "yes" } else { "no" },
        crate::slab::class_of(size),
        size
    );
    out.extend_from_slice(line.as_bytes());
}
