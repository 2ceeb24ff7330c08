//! The text protocol front end: frames lines out of the read buffer, parses them with
//! `protocol_memcache::text`, and hands each command to its executor (one file per
//! command family, as memcached's `proto_text.c` functions).

mod admin;
mod arith;
mod auth;
mod delete;
mod retrieval;
mod storage;
mod touch;

use engine::ops;
use protocol_memcache::text::{self, Command, Frame, StoreCmd};

use crate::ctx::{Ctx, Flow};
use crate::meta;
use crate::route::Routed;
use crate::timing::{self, Class, Proto};
use protocol_memcache::meta::MetaCmd;

/// Per-connection parser state that outlives one read.
#[derive(Default)]
pub struct TextState {
    /// Bytes of an unwanted data block still to discard (memcached's `conn_swallow`).
    pub swallow: usize,
    /// With `-Y`: where the connection is in the authentication exchange.
    pub auth: auth::Gate,
}

/// Run as many complete commands from `buf` as allowed by `budget`.
/// Returns the bytes consumed and what to do next.
pub fn process(buf: &[u8], st: &mut TextState, ctx: &Ctx<'_>, out: &mut Vec<u8>, budget: &mut usize) -> (usize, Flow) {
    let mut pos = 0;
    if let Some(file) = &ctx.shared.auth {
        if !st.auth.done {
            let (used, flow) = st.auth.run(buf, file, out);
            if !flow.is_continue() || !st.auth.done {
                return (used, flow);
            }
            pos = used;
        }
    }
    let max_line = ctx.shared.cfg.item_size_max.max(1 << 20);
    while *budget > 0 {
        if st.swallow > 0 {
            let n = st.swallow.min(buf.len() - pos);
            pos += n;
            st.swallow -= n;
            if st.swallow > 0 {
                break;
            }
        }
        let (line, used) = match text::next_line(&buf[pos..], max_line) {
            Frame::Incomplete => break,
            Frame::Close => return (pos, Flow::Close),
            Frame::Line(line, used) => (line, used),
        };
        if ctx.shared.verbose() > 1 {
            eprintln!("<{} {}", ctx.conn.addr, String::from_utf8_lossy(line));
        }
        if let Some(sql) = &ctx.shared.sql {
            if let Some(r) = crate::route::bind_line(sql, line, ctx) {
                out.extend_from_slice(&r);
                pos += used;
                *budget -= 1;
                continue;
            }
        }
        let cmd = match text::parse(line) {
            Ok(c) => c,
            Err(e) => {
                if e.close {
                    return (pos, Flow::Close);
                }
                if !e.silent {
                    out.extend_from_slice(e.msg.as_bytes());
                    out.extend_from_slice(b"\r\n");
                }
                st.swallow = e.swallow;
                pos += used;
                *budget -= 1;
                continue;
            }
        };
        *budget -= 1;
        // Commands with a data block wait until all of it is buffered.
        // (data length, key length, client flags): what memcached sizes the item by.
        let data_len = match &cmd {
            Command::Store { bytes, key, flags, .. } => Some((*bytes, key.len(), *flags)),
            Command::Meta(m) if m.cmd == protocol_memcache::meta::MetaCmd::Set => {
                Some((m.datalen, m.key.len(), m.flags.client_flags))
            }
            _ => None,
        };
        // A container key skips the memory tier's own checks (disk refusal, size
        // precheck, timing: the containers time their operations themselves).
        let to_sql = crate::route::claims(ctx, &cmd);
        let writes = data_len.is_some()
            || matches!(
                cmd,
                Command::Delete { .. } | Command::Arith { .. } | Command::Touch { .. } | Command::FlushAll { .. }
            )
            || matches!(&cmd, Command::Meta(m) if matches!(m.cmd, MetaCmd::Delete | MetaCmd::Arith));
        // Refused before reading the data (an item too large, or the disk tier is degraded):
        // reply now, discard the block (these errors are sent under noreply too).
        let refusal: Option<&[u8]> = match (to_sql, data_len) {
            (true, Some((len, key_len, flags))) if ops::item_too_large(&ctx.shared.engine, key_len, len, flags) => {
                let noreply = matches!(cmd, Command::Store { noreply: true, .. });
                match &cmd {
                    Command::Store { cmd, key, .. } => crate::route::too_large(ctx, key, *cmd == StoreCmd::Set),
                    Command::Meta(m) => crate::route::too_large(ctx, &m.key, true),
                    _ => {}
                }
                Some(if noreply { b"" } else { protocol_memcache::text::reply::TOO_LARGE })
            }
            (true, _) => None,
            (false, _) if writes => {
                crate::persistence::refusal(ctx.shared).or_else(|| storage::precheck(&cmd, ctx).map(|r| r.reply))
            }
            (false, _) => None,
        };
        if let Some(err) = refusal {
            out.extend_from_slice(err);
            if let Some((len, ..)) = data_len {
                st.swallow = len + 2;
            }
            pos += used;
            continue;
        }
        let mut block = None;
        let mut consumed = used;
        if let Some((len, ..)) = data_len {
            // Commands with a data block wait until all of it is buffered.
            consumed = used + len + 2;
            if buf.len() - pos < consumed {
                *budget += 1;
                break;
            }
            block = Some(&buf[pos + used..pos + consumed]);
        }
        pos += consumed;
        let t = (!to_sql).then(|| timing::start(ctx.shared.timing)).flatten();
        let (proto, class) = match &cmd {
            Command::Get { .. } | Command::Gat { .. } => (Proto::Text, Class::Get),
            Command::Store { .. } => (Proto::Text, Class::Set),
            Command::Meta(m) if m.cmd == MetaCmd::Get => (Proto::Meta, Class::Get),
            Command::Meta(m) if m.cmd == MetaCmd::Set => (Proto::Meta, Class::Set),
            Command::Meta(_) => (Proto::Meta, Class::Other),
            _ => (Proto::Text, Class::Other),
        };
        let mark = out.len();
        let flow = match cmd {
            Command::Get { cas, keys } => retrieval::get(keys, cas, None, ctx, out),
            Command::Gat { cas, exptime, keys } => retrieval::get(keys, cas, Some(exptime), ctx, out),
            Command::Store { .. } => storage::execute(&cmd, block.unwrap_or(b""), ctx, out),
            Command::Delete { key, noreply } => delete::execute(key, noreply, ctx, out),
            Command::Arith { incr, key, delta, noreply } => arith::execute(incr, key, delta, noreply, ctx, out),
            Command::Touch { key, exptime, noreply } => touch::execute(key, exptime, noreply, ctx, out),
            Command::Meta(m) => meta::execute(m, block, ctx, out),
            Command::Stats { args } => crate::stats::execute(&args, ctx, out),
            other => admin::execute(other, ctx, out),
        };
        if !to_sql {
            ctx.acks.note(mark, out.len(), None);
            timing::done(&ctx.worker.latency, t, proto, class);
        }
        match flow {
            Flow::Continue => {}
            // A pending reply: the connection awaits it, then goes on after these bytes.
            flow => return (pos, flow),
        }
    }
    (pos, Flow::Continue)
}

/// Write `bytes` unless the command asked for no reply.
#[inline]
pub(crate) fn say(out: &mut Vec<u8>, noreply: bool, bytes: &[u8]) {
    if !noreply {
        out.extend_from_slice(bytes);
    }
}

/// A key the containers would not take: its error (the containers being unavailable is
/// said even under `noreply`, like memcached's other `SERVER_ERROR` replies).
pub(crate) fn refused(out: &mut Vec<u8>, noreply: bool, r: Routed) {
    match r {
        Routed::Down(f) => out.extend(f.line()),
        Routed::Bind(f) | Routed::Refused(f) => crate::compose::text::fail(out, noreply, &f),
        Routed::Memory | Routed::Container(_) => {}
    }
}
