//! The io_uring front end (`--io-uring`): memcached connections (TCP in clear, the Unix
//! socket) served by ring workers instead of the epoll (tokio) workers of `conn.rs`.
//!
//! What it changes is only how bytes move; every request still runs through
//! [`crate::session::Session`], as on epoll. Per worker thread one ring: a multishot
//! receive per connection picks buffers from a ring of provided buffers (an idle
//! connection holds none), each loop turn sends once per connection that has replies, and
//! one `io_uring_enter` a turn submits everything and waits (`worker.rs`). Connections are
//! accepted as on epoll (`listen.rs`, a blocking `accept4` per listener thread) and handed
//! round robin to the workers through a doorbell (`bell.rs`), which also wakes a worker
//! when a future one of its connections waits for (a container's reply, the disk tier's
//! acknowledgement) can go on.
//!
//! Not a multishot accept: a listening socket an armed accept refers to outlives the
//! process by the ring's teardown, which the kernel runs after the process is gone. After
//! a SIGKILL such a listener still completed TCP handshakes for 6-11 ms (then reset them),
//! and a server restarted at once on the same port lost its first clients to it (the
//! persistence tests, which kill and restart, saw it every time); epoll's listener is
//! refused at once. A blocking accept costs one system call per connection, as a
//! multishot accept plus the `getpeername` that `stats conns` needs would. TLS connections stay on the epoll workers: rustls drives
//! its own socket reads and writes there, and the saving io_uring brings (system calls per
//! request) is small beside the record encryption (docs/architecture.md has the figures).
//! So do the MySQL proxy's connections.
//!
//! Chosen at start: `auto` probes the kernel and the sandbox (`ring::probe`: a seccomp
//! filter or `kernel.io_uring_disabled` may refuse it) and falls back to epoll, saying so
//! once in the log; `on` refuses to start without it; `off` never tries.

mod bell;
mod bufring;
mod conn;
mod ring;
mod worker;

pub use bell::{Bell, NewConn};
pub use ring::probe;
pub use worker::spawn;

/// Decide at start whether the memcached connections run on io_uring: `Ok(true)` for
/// io_uring, `Ok(false)` for epoll, `Err` (the reason) when `--io-uring on` cannot have it.
/// Says the choice once in the log, at the default level.
pub fn choose(mode: config::IoUring) -> Result<bool, String> {
    match mode {
        config::IoUring::Off => {
            log::info!("memcached connections on epoll (--io-uring off)");
            Ok(false)
        }
        config::IoUring::On => match probe() {
            Ok(()) => {
                log::info!("memcached connections on io_uring (--io-uring on; TLS connections on epoll)");
                Ok(true)
            }
            Err(why) => Err(format!("--io-uring on: io_uring is not available here: {why}")),
        },
        config::IoUring::Auto => match probe() {
            Ok(()) => {
                log::info!("memcached connections on io_uring (TLS connections on epoll; --io-uring off for epoll)");
                Ok(true)
            }
            Err(why) => {
                log::warn!("io_uring is not available ({why}): memcached connections on epoll (--io-uring off: epoll without trying)");
                Ok(false)
            }
        },
    }
}
