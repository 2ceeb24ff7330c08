//! The protocol side of SQL containers: which commands go to a container, `bind`, and
//! the replies (text, meta, binary) composed from container outcomes exactly as the
//! in-memory path composes them. Only reached with `--containers`.

use std::sync::Arc;

use engine::ops::{self as eops, GetOptions};
use protocol_memcache::binary::{
    write_counter, write_error, write_error_message, write_get_hit, write_get_miss, write_ok, Opcode,
    Request as BinaryRequest, Status, OUT_OF_MEMORY_STORE_MESSAGE,
};
use protocol_memcache::meta::{self, MetaCmd, MetaRequest};
use protocol_memcache::text::{reply, split_keys, Command, KEY_MAX_LENGTH};
use sql_containers::{ArithOutcome, DeleteOutcome, Reply, Request, StoreOutcome};

use crate::containers::{Fail, Slot, Sql, Target};
use crate::ctx::{Ctx, Job};

/// `bind <name>`: bind the connection to a container. `None` if the line is not `bind`.
pub fn bind_line(slot: &Slot, line: &[u8], ctx: &Ctx<'_>) -> Option<Vec<u8>> {
    let mut toks = line.split(|&b| b == b' ').filter(|t| !t.is_empty());
    if toks.next() != Some(b"bind") {
        return None;
    }
    let Some(sql) = slot.get() else {
        return Some(slot.unavailable().line());
    };
    Some(match (toks.next(), toks.next()) {
        (Some(name), None) => match sql.index(name) {
            Some(i) => {
                ctx.bound.set(Some(i));
                b"OK\r\n".to_vec()
            }
            None => Sql::unknown(name).line(),
        },
        _ => b"CLIENT_ERROR bad command line format.  Usage: bind <container>\r\n".to_vec(),
    })
}

/// Does `key` go to the containers (loaded or waiting for their backend)?
fn claims_key(slot: &Slot, ctx: &Ctx<'_>, key: &[u8]) -> bool {
    match slot.get() {
        Some(sql) => sql.claims(&ctx.bound, key),
        None => slot.waiting_claims(key),
    }
}

/// Does this text (or meta) command go to the containers?
pub fn claims(slot: &Slot, cmd: &Command<'_>, ctx: &Ctx<'_>) -> bool {
    let bound = || match slot.get() {
        Some(sql) => sql.binding(&ctx.bound).is_some(),
        None => slot.waiting_claims_keyless(),
    };
    match cmd {
        Command::Get { keys, .. } | Command::Gat { keys, .. } => {
            bound() || split_keys(keys).any(|k| k.starts_with(b"@@"))
        }
        Command::Store { key, .. }
        | Command::Delete { key, .. }
        | Command::Arith { key, .. }
        | Command::Touch { key, .. } => claims_key(slot, ctx, key),
        Command::FlushAll { .. } => bound(),
        Command::Meta(m) => {
            matches!(m.cmd, MetaCmd::Get | MetaCmd::Set | MetaCmd::Delete | MetaCmd::Arith)
                && claims_key(slot, ctx, &m.key)
        }
        _ => false,
    }
}

fn job<F>(f: F) -> Option<Job>
where
    F: std::future::Future<Output = Vec<u8>> + Send + 'static,
{
    Some(Box::pin(f))
}

fn said(noreply: bool, v: Vec<u8>) -> Vec<u8> {
    if noreply {
        Vec::new()
    } else {
        v
    }
}

/// Resolve a single-key command's key; errors are written (unless `noreply`).
fn single(sql: &Sql, ctx: &Ctx<'_>, key: &[u8], noreply: bool, out: &mut Vec<u8>) -> Option<(usize, Vec<u8>)> {
    match sql.route(&ctx.bound, key) {
        Target::Container(i, k) => Some((i, k.to_vec())),
        Target::Bind(i) => {
            out.extend(said(noreply, sql.missing_key(i).line()));
            None
        }
        Target::Unknown(n) => {
            out.extend(said(noreply, Sql::unknown(n).line()));
            None
        }
        Target::Memory => {
            out.extend(said(noreply, Fail::Server("internal: key not routed".into()).line()));
            None
        }
    }
}

/// Run a claimed text command (`block`: the data block with its `\r\n`). Replies that
/// need no container are written to `out`; otherwise the job producing the reply.
pub fn text(slot: &Slot, cmd: Command<'_>, block: Option<&[u8]>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Option<Job> {
    let Some(sql) = slot.get() else {
        // Sent under noreply too, like memcached's other SERVER_ERROR replies.
        out.extend(slot.unavailable().line());
        return None;
    };
    if let Command::Meta(m) = cmd {
        return meta_cmd(sql, &m, block, ctx, out);
    }
    let s = sql.clone();
    match cmd {
        Command::Get { cas, keys } => get(sql, keys, cas, None, ctx, out),
        Command::Gat { cas, exptime, keys } => get(sql, keys, cas, Some(exptime as i64), ctx, out),
        Command::Store { cmd, key, flags, exptime, bytes, cas, noreply } => {
            let block = block.unwrap_or(b"");
            if block.len() != bytes + 2 || &block[bytes..] != b"\r\n" {
                out.extend(said(noreply, reply::BAD_CHUNK.to_vec()));
                return None;
            }
            let (i, key) = single(sql, ctx, key, noreply, out)?;
            let mode = crate::modes::text(cmd);
            let op = Request::Store { mode, key, value: block[..bytes].to_vec(), flags, exptime: exptime as i64, cas };
            job(async move {
                said(
                    noreply,
                    match s.run(i, op).await {
                        Ok(Reply::Store(o)) => match o {
                            StoreOutcome::Stored(_) => reply::STORED,
                            StoreOutcome::NotStored => reply::NOT_STORED,
                            StoreOutcome::Exists => reply::EXISTS,
                            StoreOutcome::NotFound => reply::NOT_FOUND,
                            StoreOutcome::NoMemory => reply::NO_MEMORY,
                        }
                        .to_vec(),
                        Ok(_) => unexpected(),
                        Err(f) => f.line(),
                    },
                )
            })
        }
        Command::Delete { key, noreply } => {
            let (i, key) = single(sql, ctx, key, noreply, out)?;
            job(async move {
                said(
                    noreply,
                    match s.run(i, Request::Delete { key, cas: 0 }).await {
                        Ok(Reply::Delete(DeleteOutcome::Deleted)) => reply::DELETED.to_vec(),
                        Ok(Reply::Delete(_)) => reply::NOT_FOUND.to_vec(),
                        Ok(_) => unexpected(),
                        Err(f) => f.line(),
                    },
                )
            })
        }
        Command::Arith { incr, key, delta, noreply } => {
            let (i, key) = single(sql, ctx, key, noreply, out)?;
            job(async move {
                let mut v = Vec::new();
                match s.run(i, Request::Arith { key, incr, delta, init: None }).await {
                    Ok(Reply::Arith(o)) => crate::compose::text::arith(o, noreply, &mut v),
                    Ok(_) => v = said(noreply, unexpected()),
                    Err(f) => v = said(noreply, f.line()),
                }
                v
            })
        }
        Command::Touch { key, exptime, noreply } => {
            let (i, key) = single(sql, ctx, key, noreply, out)?;
            job(async move {
                said(
                    noreply,
                    match s.run(i, Request::Touch { key, exptime: exptime as i64 }).await {
                        Ok(Reply::Touch(Some(_))) => reply::TOUCHED.to_vec(),
                        Ok(Reply::Touch(None)) => reply::NOT_FOUND.to_vec(),
                        Ok(_) => unexpected(),
                        Err(f) => f.line(),
                    },
                )
            })
        }
        Command::FlushAll { delay, noreply } => {
            let i = sql.binding(&ctx.bound)?;
            if ctx.shared.cfg.disable_flush_all {
                out.extend(said(noreply, b"CLIENT_ERROR flush_all not allowed\r\n".to_vec()));
                return None;
            }
            if delay != 0 {
                out.extend(said(
                    noreply,
                    Fail::Client(format!("flush_all with a delay is not supported on container {}", sql.name(i)))
                        .line(),
                ));
                return None;
            }
            job(async move {
                said(
                    noreply,
                    match s.run(i, Request::Flush).await {
                        Ok(_) => reply::OK.to_vec(),
                        Err(f) => f.line(),
                    },
                )
            })
        }
        _ => None,
    }
}

fn unexpected() -> Vec<u8> {
    b"SERVER_ERROR internal: unexpected container answer\r\n".to_vec()
}

enum Part {
    Bytes(Vec<u8>),
    /// Container, key in it, key as the client wrote it (echoed in VALUE lines).
    Key(usize, Vec<u8>, Vec<u8>),
}

/// get/gets/gat/gats over any mix of memory and container keys, VALUE lines in order.
fn get(
    sql: &Arc<Sql>,
    keys: &[u8],
    with_cas: bool,
    touch: Option<i64>,
    ctx: &Ctx<'_>,
    out: &mut Vec<u8>,
) -> Option<Job> {
    let engine = &ctx.shared.engine;
    let use_cas = engine.config().use_cas;
    let mut parts: Vec<Part> = Vec::new();
    for key in split_keys(keys) {
        if key.len() > KEY_MAX_LENGTH {
            out.extend_from_slice(b"CLIENT_ERROR bad command line format\r\n");
            return None;
        }
        match sql.route(&ctx.bound, key) {
            Target::Memory => {
                let mut b = Vec::new();
                eops::get(engine, key, GetOptions { touch }, &ctx.acks.receipt, |it| {
                    ctx.shared.detail.get(key, it.is_some());
                    if let Some(it) = it {
                        let cas = with_cas.then_some(if use_cas { it.cas } else { 0 });
                        reply::value(&mut b, key, it.flags, it.value(), cas);
                    }
                });
                parts.push(Part::Bytes(b));
            }
            Target::Container(i, k) => parts.push(Part::Key(i, k.to_vec(), key.to_vec())),
            Target::Bind(_) => {}
            Target::Unknown(n) => {
                out.extend(Sql::unknown(n).line());
                return None;
            }
        }
    }
    if !parts.iter().any(|p| matches!(p, Part::Key(..))) {
        for p in parts {
            if let Part::Bytes(b) = p {
                out.extend(b);
            }
        }
        out.extend_from_slice(reply::END);
        return None;
    }
    let s = sql.clone();
    job(async move {
        // One request per container, keys in order; then the replies in request order.
        let mut order: Vec<usize> = Vec::new();
        for p in &parts {
            if let Part::Key(i, ..) = p {
                if !order.contains(i) {
                    order.push(*i);
                }
            }
        }
        let mut answers: Vec<std::vec::IntoIter<Option<sql_containers::Row>>> = Vec::new();
        for &i in &order {
            let keys: Vec<Vec<u8>> = parts
                .iter()
                .filter_map(|p| match p {
                    Part::Key(j, k, _) if *j == i => Some(k.clone()),
                    _ => None,
                })
                .collect();
            match s.clone().run(i, Request::Get { keys, touch }).await {
                Ok(Reply::Rows(r)) => answers.push(r.into_iter()),
                Ok(_) => return unexpected(),
                Err(f) => return f.line(),
            }
        }
        let mut v = Vec::new();
        for p in parts {
            match p {
                Part::Bytes(b) => v.extend(b),
                Part::Key(i, _, echo) => {
                    let at = order.iter().position(|&o| o == i).unwrap_or(0);
                    if let Some(Some(row)) = answers[at].next() {
                        reply::value(&mut v, &echo, row.flags, &row.value, with_cas.then_some(row.cas));
                    }
                }
            }
        }
        v.extend_from_slice(reply::END);
        v
    })
}

/// Echo `O` and `k` (every meta reply does).
fn echo(tokens: &[Vec<u8>], key: &[u8], b64: bool, v: &mut Vec<u8>) {
    for t in tokens {
        match t[0] {
            b'O' => {
                v.push(b' ');
                v.extend_from_slice(t);
            }
            b'k' => meta::push_key(v, key, b64),
            _ => {}
        }
    }
}

/// mg / ms / md / ma on a container key (flags v f t c k O q s, T, C, F, M, N J D).
fn meta_cmd(
    sql: &Arc<Sql>,
    m: &MetaRequest<'_>,
    block: Option<&[u8]>,
    ctx: &Ctx<'_>,
    out: &mut Vec<u8>,
) -> Option<Job> {
    let f = m.flags.clone();
    let full_key = m.key.to_vec();
    let (i, key) = match sql.route(&ctx.bound, &m.key) {
        Target::Container(i, k) => (i, k.to_vec()),
        Target::Bind(i) => {
            if m.cmd == MetaCmd::Get {
                // `mg @@name`: binds, like `get @@name`; answers a miss.
                if !f.quiet {
                    out.extend_from_slice(b"EN\r\n");
                }
            } else {
                out.extend(sql.missing_key(i).line());
            }
            return None;
        }
        Target::Unknown(n) => {
            out.extend(Sql::unknown(n).line());
            return None;
        }
        Target::Memory => return None,
    };
    let tokens: Vec<Vec<u8>> = m.flag_tokens().iter().map(|t| t.to_vec()).collect();
    let s = sql.clone();
    match m.cmd {
        MetaCmd::Get => {
            let touch = f.ttl.map(i64::from);
            let now = ctx.shared.engine.clock().unix_now();
            job(async move {
                let row = match s.run(i, Request::Get { keys: vec![key], touch }).await {
                    Ok(Reply::Rows(mut r)) => r.pop().flatten(),
                    Ok(_) => return unexpected(),
                    Err(e) => return e.line(),
                };
                let mut v = Vec::new();
                let Some(row) = row else {
                    if !f.quiet {
                        v.extend_from_slice(b"EN");
                        echo(&tokens, &full_key, f.base64, &mut v);
                        v.extend_from_slice(b"\r\n");
                    }
                    return v;
                };
                if f.value {
                    v.extend_from_slice(b"VA ");
                    v.extend_from_slice(itoa::Buffer::new().format(row.value.len()).as_bytes());
                } else {
                    v.extend_from_slice(b"HD");
                }
                for t in &tokens {
                    match t[0] {
                        b's' => meta::push_num(&mut v, b's', row.value.len()),
                        b't' => meta::push_num(&mut v, b't', engine::clock::ttl_left_unix(row.exptime, now)),
                        b'c' => meta::push_num(&mut v, b'c', row.cas),
                        b'f' => meta::push_num(&mut v, b'f', row.flags),
                        b'O' => {
                            v.push(b' ');
                            v.extend_from_slice(t);
                        }
                        b'k' => meta::push_key(&mut v, &full_key, f.base64),
                        _ => {}
                    }
                }
                v.extend_from_slice(b"\r\n");
                if f.value {
                    v.extend_from_slice(&row.value);
                    v.extend_from_slice(b"\r\n");
                }
                v
            })
        }
        MetaCmd::Set => {
            let block = block.unwrap_or(b"");
            if block.len() != m.datalen + 2 || &block[m.datalen..] != b"\r\n" {
                out.extend_from_slice(reply::BAD_CHUNK);
                return None;
            }
            let mode = crate::modes::meta(f.mode, f.cas.is_some());
            let op = Request::Store {
                mode,
                key,
                value: block[..m.datalen].to_vec(),
                flags: f.client_flags,
                exptime: f.ttl.unwrap_or(0) as i64,
                cas: f.cas.unwrap_or(0),
            };
            job(async move {
                let (code, cas): (&[u8], u64) = match s.run(i, op).await {
                    Ok(Reply::Store(StoreOutcome::Stored(cas))) => (b"HD", cas),
                    Ok(Reply::Store(StoreOutcome::NotStored)) => (b"NS", 0),
                    Ok(Reply::Store(StoreOutcome::Exists)) => (b"EX", 0),
                    Ok(Reply::Store(StoreOutcome::NotFound)) => (b"NF", 0),
                    Ok(Reply::Store(StoreOutcome::NoMemory)) => return reply::NO_MEMORY.to_vec(),
                    Ok(_) => return unexpected(),
                    Err(e) => return e.line(),
                };
                let mut v = Vec::new();
                if f.quiet && code == b"HD" {
                    return v;
                }
                v.extend_from_slice(code);
                for t in &tokens {
                    match t[0] {
                        b'O' => {
                            v.push(b' ');
                            v.extend_from_slice(t);
                        }
                        b'k' => meta::push_key(&mut v, &full_key, f.base64),
                        b'c' => meta::push_num(&mut v, b'c', cas),
                        _ => {}
                    }
                }
                v.extend_from_slice(b"\r\n");
                v
            })
        }
        MetaCmd::Delete => job(async move {
            let code: &[u8] = match s.run(i, Request::Delete { key, cas: f.cas.unwrap_or(0) }).await {
                Ok(Reply::Delete(DeleteOutcome::Deleted)) => b"HD",
                Ok(Reply::Delete(DeleteOutcome::NotFound)) => b"NF",
                Ok(Reply::Delete(DeleteOutcome::Exists)) => b"EX",
                Ok(_) => return unexpected(),
                Err(e) => return e.line(),
            };
            let mut v = Vec::new();
            if f.quiet && code == b"HD" {
                return v;
            }
            v.extend_from_slice(code);
            echo(&tokens, &full_key, f.base64, &mut v);
            v.extend_from_slice(b"\r\n");
            v
        }),
        MetaCmd::Arith => {
            let incr = !matches!(f.mode, Some(b'D' | b'-'));
            let init = f.vivify.map(|ttl| (f.initial, ttl as i64));
            job(async move {
                let (value, cas) = match s.run(i, Request::Arith { key, incr, delta: f.delta, init }).await {
                    Ok(Reply::Arith(ArithOutcome::Done { value, cas, .. })) => (value, cas),
                    Ok(Reply::Arith(ArithOutcome::NonNumeric)) => return reply::NON_NUMERIC.to_vec(),
                    Ok(Reply::Arith(ArithOutcome::NoMemory)) => return b"SERVER_ERROR out of memory\r\n".to_vec(),
                    Ok(Reply::Arith(ArithOutcome::NotFound)) => {
                        let mut v = b"NF".to_vec();
                        echo(&tokens, &full_key, f.base64, &mut v);
                        v.extend_from_slice(b"\r\n");
                        return v;
                    }
                    Ok(_) => return unexpected(),
                    Err(e) => return e.line(),
                };
                let mut v = Vec::new();
                if f.quiet {
                    return v;
                }
                let text = value.to_string();
                if f.value {
                    v.extend_from_slice(b"VA ");
                    v.extend_from_slice(itoa::Buffer::new().format(text.len()).as_bytes());
                } else {
                    v.extend_from_slice(b"HD");
                }
                for t in &tokens {
                    match t[0] {
                        b'c' => meta::push_num(&mut v, b'c', cas),
                        b't' => meta::push_num(&mut v, b't', -1i64),
                        b'O' => {
                            v.push(b' ');
                            v.extend_from_slice(t);
                        }
                        b'k' => meta::push_key(&mut v, &full_key, f.base64),
                        _ => {}
                    }
                }
                v.extend_from_slice(b"\r\n");
                if f.value {
                    v.extend_from_slice(text.as_bytes());
                    v.extend_from_slice(b"\r\n");
                }
                v
            })
        }
        _ => None,
    }
}

/// Does this binary request go to the containers?
pub fn binary_claims(slot: &Slot, op: Opcode, key: &[u8], ctx: &Ctx<'_>) -> bool {
    matches!(
        op.base(),
        Opcode::Get
            | Opcode::GetK
            | Opcode::Touch
            | Opcode::Gat
            | Opcode::GatK
            | Opcode::Set
            | Opcode::Add
            | Opcode::Replace
            | Opcode::Append
            | Opcode::Prepend
            | Opcode::Delete
            | Opcode::Increment
            | Opcode::Decrement
    ) && claims_key(slot, ctx, key)
}

fn bin_fail(v: &mut Vec<u8>, op: Opcode, opaque: u32, f: &Fail) {
    let status = match f {
        Fail::Client(_) => Status::InvalidArguments,
        Fail::Server(_) => Status::OutOfMemory,
    };
    write_error_message(v, op, status, opaque, f.text().as_bytes());
}

/// A claimed binary request: its job (or its error written to `out`).
pub fn binary(slot: &Slot, req: &BinaryRequest<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Option<Job> {
    let op = req.opcode();
    let opaque = req.opaque();
    let Some(sql) = slot.get() else {
        bin_fail(out, op, opaque, &slot.unavailable());
        return None;
    };
    let full_key = req.key().to_vec();
    let (i, key) = match sql.route(&ctx.bound, req.key()) {
        Target::Container(i, k) => (i, k.to_vec()),
        Target::Bind(i) => {
            bin_fail(out, op, opaque, &sql.missing_key(i));
            return None;
        }
        Target::Unknown(n) => {
            bin_fail(out, op, opaque, &Sql::unknown(n));
            return None;
        }
        Target::Memory => return None,
    };
    let s = sql.clone();
    let rep = move |v: &mut Vec<u8>, st: Status| {
        if !op.suppresses_reply(st) {
            write_error(v, op, st, opaque);
        }
    };
    match op.base() {
        Opcode::Get | Opcode::GetK | Opcode::Touch | Opcode::Gat | Opcode::GatK => {
            let touch = if matches!(op.base(), Opcode::Get | Opcode::GetK) {
                None
            } else {
                Some(req.touch_expiration().unwrap_or(0) as i64)
            };
            job(async move {
                let mut v = Vec::new();
                match s.run(i, Request::Get { keys: vec![key], touch }).await {
                    Ok(Reply::Rows(mut r)) => match r.pop().flatten() {
                        Some(row) => write_get_hit(&mut v, op, opaque, row.cas, row.flags, &full_key, &row.value),
                        None if op.suppresses_reply(Status::KeyNotFound) => {}
                        None => write_get_miss(&mut v, op, opaque, &full_key),
                    },
                    Ok(_) => return unexpected(),
                    Err(e) => bin_fail(&mut v, op, opaque, &e),
                }
                v
            })
        }
        Opcode::Set | Opcode::Add | Opcode::Replace | Opcode::Append | Opcode::Prepend => {
            let (flags, exptime) = req.store_extras().map(|e| (e.flags, e.expiration as i64)).unwrap_or((0, 0));
            // With CAS off (-C) memcached ignores a request's CAS on stores (as the memory path).
            let cas = if ctx.shared.engine.config().use_cas { req.cas() } else { 0 };
            let mode = crate::modes::binary(op.base(), cas);
            let store = Request::Store { mode, key, value: req.value().to_vec(), flags, exptime, cas };
            job(async move {
                let mut v = Vec::new();
                match s.run(i, store).await {
                    Ok(Reply::Store(StoreOutcome::Stored(cas))) => {
                        if !op.suppresses_reply(Status::NoError) {
                            write_ok(&mut v, op, opaque, cas);
                        }
                    }
                    Ok(Reply::Store(StoreOutcome::Exists)) => rep(&mut v, Status::KeyExists),
                    Ok(Reply::Store(StoreOutcome::NotFound)) => rep(&mut v, Status::KeyNotFound),
                    Ok(Reply::Store(StoreOutcome::NoMemory)) => write_error_message(
                        &mut v,
                        op,
                        Status::OutOfMemory,
                        opaque,
                        OUT_OF_MEMORY_STORE_MESSAGE.as_bytes(),
                    ),
                    Ok(Reply::Store(StoreOutcome::NotStored)) => rep(
                        &mut v,
                        match op.base() {
                            Opcode::Add => Status::KeyExists,
                            Opcode::Replace => Status::KeyNotFound,
                            _ => Status::ItemNotStored,
                        },
                    ),
                    Ok(_) => return unexpected(),
                    Err(e) => bin_fail(&mut v, op, opaque, &e),
                }
                v
            })
        }
        Opcode::Delete => {
            let cas = req.cas();
            job(async move {
                let mut v = Vec::new();
                match s.run(i, Request::Delete { key, cas }).await {
                    Ok(Reply::Delete(DeleteOutcome::Deleted)) => {
                        if !op.suppresses_reply(Status::NoError) {
                            write_ok(&mut v, op, opaque, 0);
                        }
                    }
                    Ok(Reply::Delete(DeleteOutcome::NotFound)) => rep(&mut v, Status::KeyNotFound),
                    Ok(Reply::Delete(DeleteOutcome::Exists)) => rep(&mut v, Status::KeyExists),
                    Ok(_) => return unexpected(),
                    Err(e) => bin_fail(&mut v, op, opaque, &e),
                }
                v
            })
        }
        Opcode::Increment | Opcode::Decrement => {
            let Some(x) = req.counter_extras() else {
                write_error(out, op, Status::InvalidArguments, opaque);
                return None;
            };
            let incr = op.base() == Opcode::Increment;
            let init = x.creates_missing().then_some((x.initial, x.expiration as i64));
            let delta = x.delta;
            job(async move {
                let mut v = Vec::new();
                match s.run(i, Request::Arith { key, incr, delta, init }).await {
                    Ok(Reply::Arith(ArithOutcome::Done { value, cas, .. })) => {
                        if !op.suppresses_reply(Status::NoError) {
                            write_counter(&mut v, op, opaque, cas, value);
                        }
                    }
                    Ok(Reply::Arith(ArithOutcome::NotFound)) => rep(&mut v, Status::KeyNotFound),
                    Ok(Reply::Arith(ArithOutcome::NonNumeric)) => rep(&mut v, Status::NonNumeric),
                    Ok(Reply::Arith(ArithOutcome::NoMemory)) => rep(&mut v, Status::OutOfMemory),
                    Ok(_) => return unexpected(),
                    Err(e) => bin_fail(&mut v, op, opaque, &e),
                }
                v
            })
        }
        _ => None,
    }
}
