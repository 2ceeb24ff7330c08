//! `set`, `add`, `replace`, `append`, `prepend`, `cas` (memcached's
//! `process_update_command` and `complete_nread_ascii`), and the size check that
//! `ms` shares.

use engine::ops::{self, StoreOutcome, StoreRequest};
use protocol_memcache::meta::MetaCmd;
use protocol_memcache::text::{reply, Command, StoreCmd};

use super::say;
use crate::ctx::{Ctx, Flow};

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

/// Store a text command's data block (`block` still ends with its `\r\n`).
pub fn execute(cmd: &Command<'_>, block: &[u8], ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let Command::Store { cmd, key, flags, exptime, bytes, cas, noreply } = *cmd else {
        return Flow::Continue;
    };
    if &block[bytes..] != b"\r\n" {
        say(out, noreply, reply::BAD_CHUNK);
        return Flow::Continue;
    }
    let mode = crate::modes::text(cmd);
    let req = StoreRequest {
        mode,
        key,
        value: &block[..bytes],
        flags,
        exptime: exptime as i64,
        cas,
        set_stale: false,
        vivify: None,
        key_binary: false,
    };
    let r: &[u8] = match ops::store(&ctx.shared.engine, &req, &ctx.acks.receipt) {
        StoreOutcome::Stored(_) => reply::STORED,
        StoreOutcome::NotStored => reply::NOT_STORED,
        StoreOutcome::Exists => reply::EXISTS,
        StoreOutcome::NotFound => reply::NOT_FOUND,
        StoreOutcome::NoMemory => reply::NO_MEMORY,
    };
    say(out, noreply, r);
    Flow::Continue
}
