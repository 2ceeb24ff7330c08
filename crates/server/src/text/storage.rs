//! `set`, `add`, `replace`, `append`, `prepend`, `cas` (memcached's
//! `process_update_command` and `complete_nread_ascii`), and the size check that
//! `ms` shares.

use engine::ops::{self, StoreRequest};
use protocol_memcache::meta::MetaCmd;
use protocol_memcache::text::{reply, Command, StoreCmd};

use super::say;
use crate::compose;
use crate::ctx::{Ctx, Flow};
use crate::pending;
use crate::route::{self, Routed};

/// A storage command refused before its data block was read.
pub struct Reject {
    /// What to send (empty under `noreply`).
    pub reply: &'static [u8],
}

/// Check a storage command before reading its data: an item over `-I` is refused, its
/// data swallowed, and (for `set` and `ms`) any old value removed, as memcached does.
pub fn precheck(cmd: &Command<'_>, ctx: &Ctx<'_>) -> Option<Reject> {
    let engine = &ctx.shared.engine;
    let (key, len, flags, noreply, delete_old) = match cmd {
        Command::Store { cmd, key, bytes, flags, noreply, .. } => {
            ctx.shared.detail.set(key);
            (*key, *bytes, *flags, *noreply, *cmd == StoreCmd::Set)
        }
        Command::Meta(m) if m.cmd == MetaCmd::Set => (&m.key[..], m.datalen, m.flags.client_flags, false, true),
        _ => return None,
    };
    if !ops::item_too_large(engine, key.len(), len, flags) {
        return None;
    }
    engine.access(key, &ctx.acks.receipt).stats().store_too_large += 1;
    if delete_old {
        engine.access(key, &ctx.acks.receipt).remove();
    }
    Some(Reject { reply: if noreply { b"" } else { reply::TOO_LARGE } })
}

/// Store a text command's data block (`block` still ends with its `\r\n`), in memory or
/// in the key's container.
pub fn execute(cmd: &Command<'_>, block: &[u8], ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let Command::Store { cmd, key, flags, exptime, bytes, cas, noreply } = *cmd else {
        return Flow::Continue;
    };
    if block.len() != bytes + 2 || &block[bytes..] != b"\r\n" {
        say(out, noreply, reply::BAD_CHUNK);
        return Flow::Continue;
    }
    let req = StoreRequest::new(crate::modes::text(cmd), key, &block[..bytes], flags, exptime as i64, cas);
    match route::key(ctx, key) {
        Routed::Memory => {
            compose::text::store(out, noreply, Ok(ops::store(&ctx.shared.engine, &req, &ctx.acks.receipt)))
        }
        Routed::Container(place) => {
            return Flow::Pending(pending::job(place.store(&req), move |r, v| compose::text::store(v, noreply, r)))
        }
        other => super::refused(out, noreply, other),
    }
    Flow::Continue
}
