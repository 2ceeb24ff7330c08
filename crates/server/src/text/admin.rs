//! `flush_all`, `version`, `verbosity`, `quit`, `shutdown`, `cache_memlimit`, `refresh_certs`.

use std::sync::atomic::Ordering;

use protocol_memcache::text::Command;

use crate::compose::text::{self as reply, Text};
use crate::ctx::{Ctx, Flow};
use crate::exec::{self, Op};
use crate::route::Where;

/// Run an administrative command (`at`: where `flush_all` runs).
pub fn execute(cmd: &Command<'_>, at: Option<Where>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let shared = ctx.shared;
    match (cmd, at) {
        (Command::FlushAll { noreply, .. }, _) if shared.cfg.disable_flush_all => {
            reply::line(out, *noreply, b"CLIENT_ERROR flush_all not allowed\r\n");
        }
        // On a connection bound to a container, that container (its table).
        (Command::FlushAll { noreply, .. }, Some(at)) => {
            if let Some(op) = Op::text(cmd, b"") {
                return exec::run(ctx, at, b"", op, &Text::line(*noreply), out);
            }
        }
        (Command::Version, _) => reply::version(out, crate::VERSION),
        (Command::Verbosity { level, noreply }, _) => {
            shared.verbose.store((*level).min(2), Ordering::Relaxed);
            reply::ok(out, *noreply);
        }
        (Command::Quit, _) => return Flow::Close,
        (Command::Shutdown { mode }, _) => {
            if !shared.cfg.enable_shutdown {
                reply::line(out, false, b"ERROR: shutdown not enabled\r\n");
            } else if mode.is_none() {
                reply::line(out, false, b"CLIENT_ERROR invalid shutdown mode\r\n");
            } else {
                shared.request_shutdown();
                return Flow::Close;
            }
        }
        (Command::CacheMemlimit { megabytes, noreply }, _) => {
            if *megabytes < 8 {
                reply::line(out, *noreply, b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n");
            } else {
                shared.engine.set_memory_limit(*megabytes as usize * 1024 * 1024);
                shared.budget.set_total(*megabytes as usize * 1024 * 1024);
                reply::ok(out, *noreply);
            }
        }
        (Command::RefreshCerts { noreply }, _) => match &shared.tls {
            None => reply::line(out, false, b"Error TLS not enabled\r\n"),
            Some(tls) => match tls.refresh(shared.engine.clock().now()) {
                Ok(()) => reply::ok(out, *noreply),
                Err(e) => {
                    // memcached sends the error even with noreply.
                    log::warn!("refresh_certs: {e}; the certificate in use is kept");
                    reply::error_line(out, &e);
                }
            },
        },
        _ => reply::unknown(out),
    }
    Flow::Continue
}
