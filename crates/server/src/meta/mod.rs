//! The meta protocol front end (`mg`, `ms`, `md`, `ma`, `mn`, `me`): one file per
//! command, as memcached's `process_m*_command` functions. Reply flags follow the order
//! of the request's flags.

mod arith;
mod debug;
mod delete;
mod get;
mod set;

use std::sync::atomic::Ordering;

use protocol_memcache::meta::{self, MetaCmd, MetaRequest};

use crate::ctx::{Ctx, Flow};

/// Run a meta command; `block` is the `ms` data block (with its `\r\n`).
pub fn execute(m: MetaRequest<'_>, block: Option<&[u8]>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    // memcached's `cmd_meta` counts only `me`.
    if m.cmd == MetaCmd::Debug {
        ctx.worker.cmd_meta.fetch_add(1, Ordering::Relaxed);
    }
    match m.cmd {
        MetaCmd::Noop => out.extend_from_slice(b"MN\r\n"),
        MetaCmd::Get => get::execute(&m, ctx, out),
        MetaCmd::Set => set::execute(&m, block.unwrap_or(b"\r\n"), ctx, out),
        MetaCmd::Delete => delete::execute(&m, ctx, out),
        MetaCmd::Arith => arith::execute(&m, ctx, out),
        MetaCmd::Debug => debug::execute(&m, ctx, out),
    }
    Flow::Continue
}

/// Append the `O` and `k` flags that every meta reply echoes (misses and errors too).
fn echo_opaque_and_key(m: &MetaRequest<'_>, key_binary: bool, out: &mut Vec<u8>) {
    for tok in m.flag_tokens() {
        match tok[0] {
            b'O' => {
                out.push(b' ');
                out.extend_from_slice(tok);
            }
            b'k' => meta::push_key(out, &m.key, key_binary),
            _ => {}
        }
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
