//! The one execution call. A front end parses a command, maps it to an [`Op`] (`op.rs`, the
//! one mapping), routes its key once (`crate::route`: a [`Where`]) and calls [`run`] with
//! its protocol's [`Reply`]; `run` runs the operation where the key lives and composes the
//! outcome, now (the memory tier, a `cache_only` container) or later (a SQL container: a
//! pending job the connection awaits in order). The front end never looks at where.
//!
//! ```text
//! text/ meta/ binary/   parse → Op::{text,meta,binary} → route::key → exec::run(…, reply)
//! exec::run             Where::Memory      → memory::run (the server's engine)  → now
//!                       Where::Container   → container::run: cache_only → memory::run
//!                                            (its private engine) now; caching /
//!                                            innodb_only → the container library, later
//!                       Where::Refused     → the error, composed by the reply
//! ```

mod container;
mod memory;
mod op;

pub use op::{NotOp, Op};

use engine::ops::item_too_large;

use crate::ctx::{Ctx, Flow};
pub use crate::outcome::Refusal;
use crate::outcome::{Answer, Reply};
use crate::pending::{self, Fail, Later};
use crate::route::Where;

/// What [`step`] did with an operation.
pub enum Step {
    /// Answered now: the reply is composed into the output.
    Now,
    /// Answered later (compose it when it arrives).
    Later(Later<Answer>),
    /// Refused before running (compose the error, or fail the whole command).
    Refused(Fail),
}

/// Run `op` on `key` where `at` says it lives: the reply is composed now, or the
/// connection awaits the returned job.
#[inline(always)]
pub fn run<R: Reply>(ctx: &Ctx<'_>, at: Where, key: &[u8], op: Op<'_>, reply: &R, out: &mut Vec<u8>) -> Flow {
    match step(ctx, at, key, op, reply, out) {
        Step::Now => Flow::Continue,
        Step::Refused(f) => {
            reply.compose(out, Err(&f));
            Flow::Continue
        }
        Step::Later(later) => {
            let reply = reply.owned();
            Flow::Pending(pending::job(later, move |r, v| match r {
                Ok(a) => reply.compose(v, Ok(a.outcome())),
                Err(f) => reply.compose(v, Err(&f)),
            }))
        }
    }
}

/// [`run`] for a command that assembles several keys' outcomes itself (a multi-key get):
/// the outcome composed now, to come, or the refusal, uncomposed.
#[inline(always)]
pub fn step<R: Reply>(ctx: &Ctx<'_>, at: Where, key: &[u8], op: Op<'_>, reply: &R, out: &mut Vec<u8>) -> Step {
    match at {
        Where::Memory => {
            if op.writes() {
                if let Some(line) = crate::persistence::refusal(ctx.shared) {
                    return Step::Refused(Fail::Disk(line));
                }
            }
            let detail = Some(&ctx.shared.detail);
            let env = memory::Env { engine: &ctx.shared.engine, receipt: &ctx.acks.receipt, detail };
            memory::run(&env, key, op, reply, out);
            Step::Now
        }
        Where::Container(place) => match container::run(&place, key, op, reply, out) {
            container::Done::Now => Step::Now,
            container::Done::Later(l) => Step::Later(l),
            container::Done::Refused(f) => Step::Refused(f),
        },
        Where::Refused(f) => Step::Refused(f),
    }
}

/// Is a store of `len` bytes (client `flags`) to `key` refused before its data is read?
/// `unlinks`: a `set`/`ms` whose old value goes when it is too large; `detail`: the command
/// counts in `stats detail` (text and binary sets, whatever becomes of them).
pub fn admit(
    ctx: &Ctx<'_>,
    at: &Where,
    key: &[u8],
    len: usize,
    flags: u32,
    unlinks: bool,
    detail: bool,
) -> Option<Refusal> {
    let engine = &ctx.shared.engine;
    let too_large = item_too_large(engine, key.len(), len, flags);
    match at {
        Where::Memory => {
            if let Some(line) = crate::persistence::refusal(ctx.shared) {
                return Some(Refusal::Failed(Fail::Disk(line)));
            }
            if !too_large {
                return None;
            }
            if detail {
                ctx.shared.detail.set(key);
            }
            let mut a = engine.access(key, &ctx.acks.receipt);
            a.stats().store_too_large += 1;
            if unlinks {
                a.remove();
            }
        }
        // The same limit for container keys; a `cache_only` value goes as memcached's
        // would, a SQL row stays (the table is the data of record).
        Where::Container(p) if too_large && unlinks => p.sql.forget_cache_only(p.i, p.key(key)),
        _ if !too_large => return None,
        _ => {}
    }
    Some(Refusal::TooLarge)
}
