//! `get`, `gets`, `gat`, `gats` (memcached's `process_get_command`): one `VALUE` block per
//! hit in key order, then `END`. Each key is routed once and run by the execution call
//! (`exec::step`); keys answered later (SQL containers) are awaited together, so a backend
//! can merge their reads, and their blocks take their place among the others.

use protocol_memcache::text::{split_keys, KEY_MAX_LENGTH};

use crate::compose::text::{self as reply, Text};
use crate::ctx::{Ctx, Flow};
use crate::exec::{self, Op, Step};
use crate::outcome::{Answer, Reply};
use crate::pending::{self, Fail, Job, Later};
use crate::route;

/// Answer a (multi-key) retrieval.
pub fn get(keys: &[u8], with_cas: bool, touch: Option<i32>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let start = out.len();
    let op = Op::get(touch);
    let mut later: Option<Parts> = None;
    for key in split_keys(keys) {
        if key.len() > KEY_MAX_LENGTH {
            // memcached drops what it had queued for this command and answers an error.
            out.truncate(start);
            reply::key_too_long(out);
            return Flow::Continue;
        }
        let value = Text::value(key, with_cas);
        let at = route::key(ctx, key);
        let dst = match &mut later {
            Some(parts) => parts.now(),
            None => &mut *out,
        };
        match exec::step(ctx, at, key, op, &value, dst) {
            Step::Now => {}
            // `get @@name` binds and answers nothing for that key.
            Step::Refused(Fail::Bound(_)) => {}
            Step::Refused(f) => {
                out.truncate(start);
                reply::failed(out, &f);
                return Flow::Continue;
            }
            Step::Later(l) => {
                let parts = later.get_or_insert_with(|| Parts::after(out.split_off(start)));
                parts.push(l, value.owned());
            }
        }
    }
    match later {
        Some(parts) => Flow::Pending(parts.job()),
        None => {
            reply::end(out);
            Flow::Continue
        }
    }
}

/// A retrieval whose keys are answered partly now, partly later: in key order, the blocks
/// composed now and the keys to come.
struct Parts {
    /// Blocks composed before the first key to come.
    head: Vec<u8>,
    /// Each key to come, in order.
    later: Vec<Coming>,
}

/// A key answered later: its outcome to come, its reply, the blocks composed now after it.
type Coming = (Later<Answer>, Text<Vec<u8>>, Vec<u8>);

impl Parts {
    /// Parts after the blocks `head` composed so far.
    fn after(head: Vec<u8>) -> Parts {
        Parts { head, later: Vec::new() }
    }

    /// Where blocks composed now go.
    fn now(&mut self) -> &mut Vec<u8> {
        match self.later.last_mut() {
            Some((_, _, after)) => after,
            None => &mut self.head,
        }
    }

    /// One more key to come.
    fn push(&mut self, l: Later<Answer>, reply: Text<Vec<u8>>) {
        self.later.push((l, reply, Vec::new()));
    }

    /// The whole reply once every key came (or the first failure's error alone).
    fn job(self) -> Job {
        Box::pin(async move {
            let (laters, rest): (Vec<_>, Vec<_>) = self.later.into_iter().map(|(l, r, a)| (l, (r, a))).unzip();
            let answers = pending::all(laters).await;
            let mut v = Vec::new();
            if let Some(Err(f)) = answers.iter().find(|a| a.is_err()) {
                reply::failed(&mut v, f);
                return v;
            }
            v.extend(self.head);
            for (a, (r, after)) in answers.into_iter().zip(rest) {
                if let Ok(a) = a {
                    r.compose(&mut v, Ok(a.outcome()));
                }
                v.extend(after);
            }
            reply::end(&mut v);
            v
        })
    }
}
