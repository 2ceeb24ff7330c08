//! The text protocol front end: frames lines out of the read buffer, parses them with
//! `protocol_memcache::text`, and runs each command: a key command is mapped to its engine
//! operation (`exec::Op::text`, `Op::meta`), routed once (`route`) and run by the one
//! execution call (`exec::run`) with its reply (`compose::text`, `compose::meta`); a
//! multi-key retrieval is `retrieval.rs`, the administrative commands `admin.rs`.

mod admin;
mod auth;
mod retrieval;

use protocol_memcache::meta::MetaCmd;
use protocol_memcache::text::{self, Command, Frame, StoreCmd};

use crate::compose::text::Text;
use crate::ctx::{Ctx, Flow};
use crate::exec::{self, Op};
use crate::meta;
use crate::route::{self, Where};
use crate::timing::{self, Class, Proto};

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
            if let Some(r) = route::bind_line(sql, line, ctx) {
                crate::compose::text::bound(out, r);
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
                    crate::compose::text::error_line(out, e.msg);
                }
                st.swallow = e.swallow;
                pos += used;
                *budget -= 1;
                continue;
            }
        };
        *budget -= 1;
        // The one route of a single-key (or keyless) command, before its data is read.
        let at = route_of(&cmd, ctx);
        // Commands with a data block: (data length, key, client flags, a set, noreply).
        let data = match &cmd {
            Command::Store { bytes, key, flags, cmd, noreply, .. } => {
                Some((*bytes, *key, *flags, *cmd == StoreCmd::Set, *noreply, true))
            }
            Command::Meta(m) if m.cmd == MetaCmd::Set => {
                Some((m.datalen, &m.key[..], m.flags.client_flags, true, false, false))
            }
            _ => None,
        };
        let mut block: &[u8] = b"";
        let mut consumed = used;
        if let (Some((len, key, flags, set, noreply, detail)), Some(at)) = (data, &at) {
            // Refused before reading the data (an item too large, or the disk tier refuses
            // writes): reply now, discard the block.
            if let Some(r) = exec::admit(ctx, at, key, len, flags, set, detail) {
                crate::compose::text::refused(out, noreply, &r);
                st.swallow = len + 2;
                pos += used;
                continue;
            }
            // Commands with a data block wait until all of it is buffered.
            consumed = used + len + 2;
            if buf.len() - pos < consumed {
                *budget += 1;
                break;
            }
            block = &buf[pos + used..pos + consumed];
        }
        pos += consumed;
        let t = timing::start(ctx.shared.timing);
        let mark = out.len();
        let (proto, class, flow) = run(&cmd, at, block, ctx, out);
        ctx.acks.note(mark, out.len(), None);
        match flow {
            Flow::Continue => timing::done(&ctx.worker.latency, t, proto, class),
            // A pending reply: the connection awaits it, then goes on after these bytes.
            flow => return (pos, flow),
        }
    }
    (pos, Flow::Continue)
}

/// Where a command with one key (or none: `flush_all`) runs; None for the others.
fn route_of(cmd: &Command<'_>, ctx: &Ctx<'_>) -> Option<Where> {
    match cmd {
        Command::Store { key, .. }
        | Command::Delete { key, .. }
        | Command::Arith { key, .. }
        | Command::Touch { key, .. } => Some(route::key(ctx, key)),
        Command::FlushAll { .. } => Some(route::keyless(ctx)),
        Command::Meta(m) => match m.cmd {
            MetaCmd::Get | MetaCmd::Set | MetaCmd::Delete | MetaCmd::Arith => Some(route::key(ctx, &m.key)),
            MetaCmd::Debug => Some(route::unrouted()),
            MetaCmd::Noop => None,
        },
        _ => None,
    }
}

/// Run one command (`block`: its data block with its `\r\n`); what it is timed as.
#[inline(always)]
fn run(cmd: &Command<'_>, at: Option<Where>, block: &[u8], ctx: &Ctx<'_>, out: &mut Vec<u8>) -> (Proto, Class, Flow) {
    let (key, noreply, class) = match cmd {
        Command::Get { cas, keys } => return (Proto::Text, Class::Get, retrieval::get(keys, *cas, None, ctx, out)),
        Command::Gat { cas, exptime, keys } => {
            return (Proto::Text, Class::Get, retrieval::get(keys, *cas, Some(*exptime), ctx, out))
        }
        Command::Meta(m) => {
            let class = match m.cmd {
                MetaCmd::Get => Class::Get,
                MetaCmd::Set => Class::Set,
                _ => Class::Other,
            };
            return (Proto::Meta, class, meta::execute(m, at, value(block), ctx, out));
        }
        Command::Stats { args } => return (Proto::Text, Class::Other, crate::stats::execute(args, ctx, out)),
        Command::Store { key, noreply, .. } => (*key, *noreply, Class::Set),
        Command::Delete { key, noreply }
        | Command::Arith { key, noreply, .. }
        | Command::Touch { key, noreply, .. } => (*key, *noreply, Class::Other),
        _ => return (Proto::Text, Class::Other, admin::execute(cmd, at, ctx, out)),
    };
    let flow = match (at, value(block)) {
        (Some(at), Some(value)) => match Op::text(cmd, value) {
            Some(op) => exec::run(ctx, at, key, op, &Text::line(noreply), out),
            None => Flow::Continue,
        },
        _ => {
            crate::compose::text::bad_chunk(out, noreply);
            Flow::Continue
        }
    };
    (Proto::Text, class, flow)
}

/// A data block's value (`block` without its `\r\n`; empty without a block); None if the
/// block does not end with `\r\n`.
fn value(block: &[u8]) -> Option<&[u8]> {
    if block.is_empty() {
        return Some(block);
    }
    block.strip_suffix(b"\r\n")
}
