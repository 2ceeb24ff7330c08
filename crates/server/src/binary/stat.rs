//! The binary `Stat` command: the same figures as the text protocol's `stats`, written
//! through the binary stats sink.

use crate::compose::binary as reply;
use crate::ctx::Ctx;

/// `Stat`: the same figures as the text protocol's `stats`, one key/value reply each,
/// then an empty one.
pub fn stat(key: &[u8], opaque: u32, ctx: &Ctx<'_>, out: &mut Vec<u8>) {
    let mut line = b"stats".to_vec();
    if !key.is_empty() {
        line.push(b' ');
        line.extend_from_slice(key);
    }
    let args = protocol_memcache::text::Tokens::new(&line[5..]);
    if args.get(0) == b"detail" {
        match args.get(1) {
            b"on" => ctx.shared.detail.set_enabled(true),
            b"off" => ctx.shared.detail.set_enabled(false),
            b"dump" => {
                let mut dump = Vec::new();
                ctx.shared.detail.dump(&mut dump);
                reply::stat(out, opaque, b"detailed", &dump);
            }
            _ => {
                reply::stat_unknown(out, opaque);
                return;
            }
        }
        reply::stat_end(out, opaque);
        return;
    }
    if args.get(0) == b"reset" {
        crate::stats::reset(ctx);
    } else if !crate::stats::report(args.get(0), ctx.shared, &mut crate::stats::BinarySink { out, opaque }) {
        reply::stat_unknown(out, opaque);
        return;
    }
    reply::stat_end(out, opaque);
}
