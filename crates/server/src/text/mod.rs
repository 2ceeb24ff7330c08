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
use protocol_memcache::text::{self, Command, Frame};

use crate::ctx::{Ctx, Flow};
use crate::meta;
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
            if flow != Flow::Continue || !st.auth.done {
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
            if let Some(r) = crate::sqlfront::bind_line(sql, line, ctx) {
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
        if let Some(sql) = &ctx.shared.sql {
            if crate::sqlfront::claims(sql, &cmd, ctx) {
                let mut consumed = used;
                let mut block = None;
                if let Some((len, key_len, flags)) = data_len {
                    if ops::item_too_large(&ctx.shared.engine, key_len, len, flags) {
                        let noreply = matches!(cmd, Command::Store { noreply: true, .. });
                        say(out, noreply, protocol_memcache::text::reply::TOO_LARGE);
                        st.swallow = len + 2;
                        pos += used;
                        continue;
                    }
                    consumed = used + len + 2;
                    if buf.len() - pos < consumed {
                        *budget += 1;
                        break;
                    }
                    block = Some(&buf[pos + used..pos + consumed]);
                }
                let job = crate::sqlfront::text(sql, cmd, block, ctx, out);
                pos += consumed;
                if let Some(job) = job {
                    *ctx.job.borrow_mut() = Some(job);
                    return (pos, Flow::Job);
                }
                continue;
            }
        }
        if let Some((len, _, _)) = data_len {
            if let Some(err) = crate::persistence::refusal(ctx.shared) {
                // The disk tier is degraded: refused, data discarded (memcached's error
                // replies are sent under noreply too, as for an item too large).
                out.extend_from_slice(err);
                st.swallow = len + 2;
                pos += used;
                continue;
            }
            if let Some(reject) = storage::precheck(&cmd, ctx) {
                // Refused before reading the data: reply now and discard the block.
                out.extend_from_slice(reject.reply);
                st.swallow = len + 2;
                pos += used;
                continue;
            }
            let need = used + len + 2;
            if buf.len() - pos < need {
                *budget += 1;
                break;
            }
            let block = &buf[pos + used..pos + need];
            let t = timing::start(ctx.shared.timing);
            let mark = out.len();
            match cmd {
                Command::Meta(m) => {
                    meta::execute(m, Some(block), ctx, out);
                    timing::done(&ctx.worker.latency, t, Proto::Meta, Class::Set);
                }
                _ => {
                    storage::execute(&cmd, block, ctx, out);
                    timing::done(&ctx.worker.latency, t, Proto::Text, Class::Set);
                }
            };
            ctx.acks.note(mark, out.len(), None);
            pos += need;
            continue;
        }
        pos += used;
        if matches!(
            cmd,
            Command::Delete { .. } | Command::Arith { .. } | Command::Touch { .. } | Command::FlushAll { .. }
        ) || matches!(&cmd, Command::Meta(m) if matches!(m.cmd, MetaCmd::Delete | MetaCmd::Arith))
        {
            if let Some(err) = crate::persistence::refusal(ctx.shared) {
                out.extend_from_slice(err);
                continue;
            }
        }
        let t = timing::start(ctx.shared.timing);
        let (proto, class) = match &cmd {
            Command::Get { .. } | Command::Gat { .. } => (Proto::Text, Class::Get),
            Command::Meta(m) if m.cmd == MetaCmd::Get => (Proto::Meta, Class::Get),
            Command::Meta(_) => (Proto::Meta, Class::Other),
            _ => (Proto::Text, Class::Other),
        };
        let mark = out.len();
        let flow = match cmd {
            Command::Get { cas, keys } => retrieval::get(keys, cas, None, ctx, out),
            Command::Gat { cas, exptime, keys } => retrieval::get(keys, cas, Some(exptime), ctx, out),
            Command::Delete { key, noreply } => delete::execute(key, noreply, ctx, out),
            Command::Arith { incr, key, delta, noreply } => arith::execute(incr, key, delta, noreply, ctx, out),
            Command::Touch { key, exptime, noreply } => touch::execute(key, exptime, noreply, ctx, out),
            Command::Meta(m) => meta::execute(m, None, ctx, out),
            Command::Stats { args } => crate::stats::execute(&args, ctx, out),
            other => admin::execute(other, ctx, out),
        };
        ctx.acks.note(mark, out.len(), None);
        timing::done(&ctx.worker.latency, t, proto, class);
        if flow == Flow::Close {
            return (pos, flow);
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
