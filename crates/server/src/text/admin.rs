//! `flush_all`, `version`, `verbosity`, `quit`, `shutdown`, `cache_memlimit`, `refresh_certs`.

use std::sync::atomic::Ordering;

use protocol_memcache::text::{reply, Command};

use super::say;
use crate::compose;
use crate::ctx::{Ctx, Flow};
use crate::pending::{self, Fail};

/// Run an administrative command.
pub fn execute(cmd: Command<'_>, ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    let shared = ctx.shared;
    match cmd {
        Command::FlushAll { delay, noreply } => {
            if shared.cfg.disable_flush_all {
                say(out, noreply, b"CLIENT_ERROR flush_all not allowed\r\n");
            } else if let Some(bound) = crate::route::bound_container(ctx) {
                // A connection bound to a container empties that container's table.
                match bound {
                    Err(down) => out.extend(down.line()),
                    Ok((sql, i)) if delay != 0 => {
                        let why = format!("flush_all with a delay is not supported on container {}", sql.name(i));
                        compose::text::fail(out, noreply, &Fail::Client(why));
                    }
                    Ok((sql, i)) => {
                        let later = crate::route::flush(sql, i);
                        return Flow::Pending(pending::job(later, move |r, v| compose::text::flushed(v, noreply, r)));
                    }
                }
            } else {
                shared.engine.flush_all(delay as i64, &ctx.acks.receipt);
                say(out, noreply, reply::OK);
            }
        }
        Command::Version => {
            out.extend_from_slice(b"VERSION ");
            out.extend_from_slice(crate::VERSION.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        Command::Verbosity { level, noreply } => {
            shared.verbose.store(level.min(2), Ordering::Relaxed);
            say(out, noreply, reply::OK);
        }
        Command::Quit => return Flow::Close,
        Command::Shutdown { mode } => {
            if !shared.cfg.enable_shutdown {
                out.extend_from_slice(b"ERROR: shutdown not enabled\r\n");
            } else if mode.is_none() {
                out.extend_from_slice(b"CLIENT_ERROR invalid shutdown mode\r\n");
            } else {
                shared.request_shutdown();
                return Flow::Close;
            }
        }
        Command::CacheMemlimit { megabytes, noreply } => {
            if megabytes < 8 {
                say(out, noreply, b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n");
            } else {
                shared.engine.set_memory_limit(megabytes as usize * 1024 * 1024);
                shared.budget.set_total(megabytes as usize * 1024 * 1024);
                say(out, noreply, reply::OK);
            }
        }
        Command::RefreshCerts { noreply } => match &shared.tls {
            None => out.extend_from_slice(b"Error TLS not enabled\r\n"),
            Some(tls) => match tls.refresh(shared.engine.clock().now()) {
                Ok(()) => say(out, noreply, reply::OK),
                Err(e) => {
                    // memcached sends the error even with noreply.
                    log::warn!("refresh_certs: {e}; the certificate in use is kept");
                    out.extend_from_slice(e.as_bytes());
                    out.extend_from_slice(b"\r\n");
                }
            },
        },
        _ => out.extend_from_slice(reply::ERROR),
    }
    Flow::Continue
}
