//! The meta protocol front end (`mg`, `ms`, `md`, `ma`, `mn`, `me`): each command is mapped
//! to its engine operation (`exec::Op::meta`: the flags it takes, in request order), run
//! where its key lives (`exec::run`) and answered by `compose::meta` (the return code, then
//! the requested flags in the request's order). What each flag does on an item is the
//! memory tier's (`exec/memory.rs`: `N` vivify, `R` recache, `I` invalidate, ...).

use protocol_memcache::meta::{MetaCmd, MetaRequest};

use crate::compose::meta::{self as reply, Echo};
use crate::ctx::{Ctx, Flow};
use crate::exec::{self, Op};
use crate::route::Where;

/// Run a meta command routed to `at` (None: `mn`); `value` is `ms`'s data (None: its block
/// did not end with `\r\n`).
pub fn execute(m: &MetaRequest<'_>, at: Option<Where>, value: Option<&[u8]>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    // memcached's `cmd_meta` counts only `me`.
    if m.cmd == MetaCmd::Debug {
        ctx.worker.cmd_meta.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    let Some(value) = value else {
        reply::bad_chunk(out);
        return Flow::Continue;
    };
    match (Op::meta(m, value), at) {
        (Some(op), Some(at)) => exec::run(ctx, at, &m.key, op, &Echo::of(m), out),
        _ => {
            reply::noop(out);
            Flow::Continue
        }
    }
}
