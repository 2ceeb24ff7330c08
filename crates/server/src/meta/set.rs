//! `ms <key> <datalen> <flags>*`: the generic store (mode switch `M`, CAS `C`,
//! invalidation `I`).

use engine::ops::{self, StoreMode, StoreOutcome, StoreRequest};
use protocol_memcache::meta::{self, MetaRequest};

use crate::ctx::Ctx;

/// Run `ms` with its data block (still ending in `\r\n`).
pub fn execute(m: &MetaRequest<'_>, block: &[u8], ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    let f = &m.flags;
    if &block[m.datalen..] != b"\r\n" {
        out.extend_from_slice(b"CLIENT_ERROR bad data chunk\r\n");
        return;
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
    let (code, cas): (&[u8], u64) = match ops::store(&ctx.shared.engine, &req, &ctx.acks.receipt) {
        StoreOutcome::Stored(cas) => (b"HD", cas),
        StoreOutcome::NotStored => (b"NS", 0),
        StoreOutcome::Exists => (b"EX", 0),
        StoreOutcome::NotFound => (b"NF", 0),
        StoreOutcome::NoMemory => {
            out.extend_from_slice(b"SERVER_ERROR out of memory storing object\r\n");
            return;
        }
    };
    if f.quiet && code == b"HD" {
        return;
    }
    out.extend_from_slice(code);
    for tok in m.flag_tokens() {
        match tok[0] {
            b'O' => {
                out.push(b' ');
                out.extend_from_slice(tok);
            }
            b'k' => meta::push_key(out, &m.key, f.base64),
            b'c' => meta::push_num(out, b'c', cas),
            _ => {}
        }
    }
    out.extend_from_slice(b"\r\n");
}
