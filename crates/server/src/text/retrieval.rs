//! `get`, `gets`, `gat`, `gats` (memcached's `process_get_command`), over any mix of memory
//! and container keys: one `VALUE` block per hit in key order, then `END`.

use std::sync::Arc;

use engine::ops::{self, GetOptions};
use protocol_memcache::text::{reply, split_keys, KEY_MAX_LENGTH};
use sql_containers::Row;

use crate::containers::Sql;
use crate::ctx::{Ctx, Flow};
use crate::pending::{self, Fail, Later};
use crate::route::{self, Routed};

/// A piece of the reply: composed now (memory keys), or the container key's row to come.
enum Part {
    /// `VALUE` blocks of memory keys.
    Bytes(Vec<u8>),
    /// Container, key in it, key as the client wrote it (echoed in `VALUE`).
    Key(usize, Vec<u8>, Vec<u8>),
}

/// Answer a (multi-key) retrieval.
pub fn get(keys: &[u8], with_cas: bool, touch: Option<i32>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let start = out.len();
    let engine = &ctx.shared.engine;
    let opts = GetOptions { touch: touch.map(i64::from) };
    let use_cas = engine.config().use_cas;
    let mut parts: Vec<Part> = Vec::new();
    let mut sql: Option<Arc<Sql>> = None;
    let direct = ctx.shared.sql.is_none();
    for key in split_keys(keys) {
        if key.len() > KEY_MAX_LENGTH {
            // memcached drops what it had queued for this command and answers an error.
            out.truncate(start);
            out.extend_from_slice(b"CLIENT_ERROR bad command line format\r\n");
            return Flow::Continue;
        }
        match route::key(ctx, key) {
            Routed::Memory => {
                // Without containers, straight into `out`; else in order with theirs.
                let dst = if direct {
                    &mut *out
                } else {
                    if !matches!(parts.last(), Some(Part::Bytes(_))) {
                        parts.push(Part::Bytes(Vec::new()));
                    }
                    let Some(Part::Bytes(b)) = parts.last_mut() else { unreachable!() };
                    b
                };
                ops::get(engine, key, opts, &ctx.acks.receipt, |it| {
                    ctx.shared.detail.get(key, it.is_some());
                    if let Some(it) = it {
                        let cas = with_cas.then_some(if use_cas { it.cas } else { 0 });
                        reply::value(dst, key, it.flags, it.value(), cas);
                    }
                });
            }
            Routed::Container(p) => {
                sql.get_or_insert(p.sql);
                parts.push(Part::Key(p.i, p.key, key.to_vec()));
            }
            // `get @@name` binds and answers nothing for that key.
            Routed::Bind(_) => {}
            Routed::Refused(f) | Routed::Down(f) => {
                out.truncate(start);
                out.extend(f.line());
                return Flow::Continue;
            }
        }
    }
    let Some(sql) = sql else {
        for p in parts {
            if let Part::Bytes(b) = p {
                out.extend(b);
            }
        }
        out.extend_from_slice(reply::END);
        return Flow::Continue;
    };
    let later = rows(sql, &parts, opts.touch, use_cas);
    Flow::Pending(pending::job(later, move |r, v| compose(parts, r, with_cas, v)))
}

/// One request per container (keys in order), the answers in the same order.
fn rows(sql: Arc<Sql>, parts: &[Part], touch: Option<i64>, use_cas: bool) -> Later<Vec<Vec<Option<Row>>>> {
    let mut order: Vec<usize> = Vec::new();
    let mut keys: Vec<Vec<Vec<u8>>> = Vec::new();
    for p in parts {
        if let Part::Key(i, k, _) = p {
            let at = order.iter().position(|o| o == i).unwrap_or_else(|| {
                order.push(*i);
                keys.push(Vec::new());
                order.len() - 1
            });
            keys[at].push(k.clone());
        }
    }
    Box::pin(async move {
        let mut answers = Vec::with_capacity(order.len());
        for (i, ks) in order.into_iter().zip(keys) {
            answers.push(route::get_many(sql.clone(), i, ks, touch, use_cas).await?);
        }
        Ok(answers)
    })
}

/// The whole reply once the containers answered (or their error alone).
fn compose(parts: Vec<Part>, r: Result<Vec<Vec<Option<Row>>>, Fail>, with_cas: bool, v: &mut Vec<u8>) {
    let answers = match r {
        Ok(a) => a,
        Err(f) => return v.extend(f.line()),
    };
    let mut order: Vec<usize> = Vec::new();
    let mut answers: Vec<std::vec::IntoIter<Option<Row>>> = answers.into_iter().map(|a| a.into_iter()).collect();
    for p in parts {
        match p {
            Part::Bytes(b) => v.extend(b),
            Part::Key(i, _, echo) => {
                let at = order.iter().position(|&o| o == i).unwrap_or_else(|| {
                    order.push(i);
                    order.len() - 1
                });
                if let Some(Some(row)) = answers.get_mut(at).and_then(|a| a.next()) {
                    reply::value(v, &echo, row.flags, &row.value, with_cas.then_some(row.cas));
                }
            }
        }
    }
    v.extend_from_slice(reply::END);
}
