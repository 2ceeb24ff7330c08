//! The container tier: an [`Op`] on a key of a SQL container, under that container's policy
//! for the operation's family (get / set / delete / flush, docs/containers.md):
//!
//! * `cache_only`: the memory tier's own code on the container's private engine, now;
//! * `caching`, `innodb_only`: the container library's request, answered later
//!   ([`Later`]), the library's reply turned into the same outcome types;
//! * `disabled`: `SERVER_ERROR operation disabled for container <name>`.
//!
//! Every operation is counted in the container's figures (`containers::stats`).

use std::cell::Cell;

use engine::clock::{absolute_unix_exptime, ttl_left_unix};
use engine::ops::{ArithOutcome, StoreOutcome};
use sql_containers::{CachePolicy, Reply as SqlReply, Request, Row};

use super::memory::{self, Env};
use super::op::Op;
use crate::containers::stats::Counted;
use crate::outcome::{Answer, Found, Outcome, Reply, Ttls};
use crate::pending::{Fail, Later};
use crate::route::Place;

/// What the tier did with an operation.
pub enum Done {
    /// Answered now (the reply is composed).
    Now,
    /// Answered later.
    Later(Later<Answer>),
    /// Refused before running.
    Refused(Fail),
}

/// Run `op` on `key` (as the client wrote it) in the container `place` names.
pub fn run<R: Reply>(place: &Place, key: &[u8], op: Op<'_>, reply: &R, out: &mut Vec<u8>) -> Done {
    let (sql, i) = (&place.sql, place.i);
    let key = place.key(key);
    let p = sql.container(i).policy();
    let policy = match op {
        Op::Get { touch: None, .. } => p.get,
        Op::Get { .. } | Op::Store { .. } | Op::Arith { .. } | Op::Touch { .. } => p.set,
        Op::Delete { .. } => p.delete,
        Op::Flush { delay } if delay != 0 => {
            let why = format!("flush_all with a delay is not supported on container {}", sql.name(i));
            return Done::Refused(Fail::Client(why));
        }
        Op::Flush { .. } => p.flush,
        // `me` is never routed to a container; a container key holds no memory item.
        Op::Inspect => {
            reply.compose(out, Ok(Outcome::Inspected(None)));
            return Done::Now;
        }
    };
    match (policy, sql.memory(i)) {
        (CachePolicy::Disabled, _) => {
            sql.record(i, Counted::Error, None);
            Done::Refused(Fail::Server(format!("operation disabled for container {}", sql.name(i))))
        }
        (CachePolicy::CacheOnly, Some(engine)) => {
            let t = sql.started();
            let counting = Counting { reply, hit: Cell::new(false) };
            let env = Env { engine, receipt: engine::Receipt::none(), detail: None };
            memory::run(&env, key, op.on(key), &counting, out);
            let what = match op {
                Op::Get { touch: None, .. } => Counted::Get { keys: 1, hits: counting.hit.get() as u64 },
                Op::Delete { .. } => Counted::Delete,
                Op::Flush { .. } => Counted::Flush,
                _ => Counted::Write,
            };
            sql.record(i, what, t);
            Done::Now
        }
        _ => Done::Later(later(place, key, op)),
    }
}

/// A reply that notes whether a get found its key (for the container's figures).
struct Counting<'r, R> {
    reply: &'r R,
    hit: Cell<bool>,
}

impl<R: Reply> Reply for Counting<'_, R> {
    type Owned = R::Owned;

    fn owned(&self) -> R::Owned {
        self.reply.owned()
    }

    fn compose(&self, out: &mut Vec<u8>, r: Result<Outcome<'_>, &Fail>) {
        self.hit.set(matches!(r, Ok(Outcome::Got(Some(_)))));
        self.reply.compose(out, r)
    }
}

/// The container library's request for `op`, run under the container's policy; its reply
/// as an [`Answer`] (CAS values 0 with `-C`, TTLs as meta `t` reads them).
fn later(place: &Place, key: &[u8], op: Op<'_>) -> Later<Answer> {
    let (sql, i, use_cas) = (place.sql.clone(), place.i, place.use_cas);
    let now = sql.unix_now();
    let key = key.to_vec();
    let (req, touch) = match op {
        Op::Get { touch, .. } => (Request::Get { keys: vec![key], touch }, touch),
        Op::Store { req, .. } => {
            let value = req.value.to_vec();
            (Request::Store { mode: req.mode, key, value, flags: req.flags, exptime: req.exptime, cas: req.cas }, None)
        }
        Op::Delete { cas, .. } => (Request::Delete { key, cas }, None),
        Op::Arith { req, .. } => {
            let (incr, delta, init, cas, touch) = (req.incr, req.delta, req.create, req.cas, req.touch);
            (Request::Arith { key, incr, delta, init, cas, touch }, None)
        }
        Op::Touch { exptime } => (Request::Touch { key, exptime }, None),
        Op::Flush { .. } | Op::Inspect => (Request::Flush, None),
    };
    Box::pin(async move {
        let found = |row: Row| Found {
            cas: if use_cas { row.cas } else { 0 },
            ttls: Ttls {
                start: ttl_left_unix(row.exptime, now),
                touched: touch.map(|t| ttl_left_unix(absolute_unix_exptime(t, now), now)),
                vivified: None,
            },
            flags: row.flags,
            value: row.value,
        };
        Ok(match sql.run(i, req).await? {
            SqlReply::Rows(mut rows) => Answer::Got(rows.pop().flatten().map(found)),
            SqlReply::Store(StoreOutcome::Stored(_)) if !use_cas => Answer::Stored(StoreOutcome::Stored(0)),
            SqlReply::Store(o) => Answer::Stored(o),
            SqlReply::Delete(o) => Answer::Deleted(o),
            SqlReply::Arith(ArithOutcome::Done { value, created, .. }) if !use_cas => {
                Answer::Counted(ArithOutcome::Done { value, cas: 0, created }, Ttls::UNKNOWN)
            }
            // A container row's TTL is not read back after the change: `t` says -1.
            SqlReply::Arith(o) => Answer::Counted(o, Ttls::UNKNOWN),
            SqlReply::Touch(row) => Answer::Touched(row.is_some()),
            SqlReply::Done => Answer::Flushed,
        })
    })
}
