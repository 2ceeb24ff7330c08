//! The meta protocol front end (`mg`, `ms`, `md`, `ma`, `mn`, `me`): one file per
//! command, as memcached's `process_m*_command` functions. Reply flags follow the order
//! of the request's flags.

mod arith;
mod debug;
mod delete;
mod get;
mod set;

use std::sync::atomic::Ordering;

use protocol_memcache::meta::{MetaCmd, MetaRequest};

use crate::compose::meta::Echo;
use crate::ctx::{Ctx, Flow};
use crate::route::Routed;

/// Run a meta command; `block` is the `ms` data block (with its `\r\n`).
pub fn execute(m: MetaRequest<'_>, block: Option<&[u8]>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    // memcached's `cmd_meta` counts only `me`.
    if m.cmd == MetaCmd::Debug {
        ctx.worker.cmd_meta.fetch_add(1, Ordering::Relaxed);
    }
    match m.cmd {
        MetaCmd::Noop => out.extend_from_slice(b"MN\r\n"),
        MetaCmd::Get => return get::execute(&m, ctx, out),
        MetaCmd::Set => return set::execute(&m, block.unwrap_or(b"\r\n"), ctx, out),
        MetaCmd::Delete => return delete::execute(&m, ctx, out),
        MetaCmd::Arith => return arith::execute(&m, ctx, out),
        MetaCmd::Debug => debug::execute(&m, ctx, out),
    }
    Flow::Continue
}

/// What a reply echoes from `m`, borrowed.
fn echo<'a>(m: &'a MetaRequest<'_>) -> Echo<'a, &'a [u8]> {
    Echo { tokens: m.flag_tokens(), key: &m.key, b64: m.flags.base64, quiet: m.flags.quiet }
}

/// What a reply echoes from a request, owned by a pending job.
struct Owned {
    /// The flag tokens.
    tokens: Vec<Vec<u8>>,
    /// The decoded key.
    key: Vec<u8>,
    /// `b`.
    b64: bool,
    /// `q`.
    quiet: bool,
}

impl Owned {
    /// The borrowed view the composers take.
    fn echo(&self) -> Echo<'_, Vec<u8>> {
        Echo { tokens: &self.tokens, key: &self.key, b64: self.b64, quiet: self.quiet }
    }
}

/// Copy what a reply echoes out of the read buffer.
fn owned(m: &MetaRequest<'_>) -> Owned {
    Owned {
        tokens: m.flag_tokens().iter().map(|t| t.to_vec()).collect(),
        key: m.key.to_vec(),
        b64: m.flags.base64,
        quiet: m.flags.quiet,
    }
}

/// A key the containers would not take: its error line (meta sends errors under `q` too).
fn refused(out: &mut Vec<u8>, r: Routed) {
    if let Routed::Bind(f) | Routed::Refused(f) | Routed::Down(f) = r {
        out.extend(f.line());
    }
}

/// A TTL for replies: -1 for none, else seconds left.
fn ttl_left(exptime: u32, now: u32) -> i64 {
    if exptime == 0 {
        -1
    } else {
        exptime.wrapping_sub(now) as i64
    }
}
