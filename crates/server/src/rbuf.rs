//! Read buffers lent per worker thread, as memcached 1.6 lends them (`rbuf_alloc` /
//! `rbuf_release` in its thread cache): a plain TCP or Unix connection waits for input
//! holding no buffer, borrows one from its worker when bytes arrive, and gives it back once
//! everything read has been answered. So an idle connection costs its task and its socket,
//! not a buffer (issue 11: 10,000 idle connections cost ~3.6 KiB each with a 2 KiB buffer
//! of their own; memcached ~0.6 KiB).
//!
//! A TLS connection keeps a buffer of its own: rustls reads the socket for it (it cannot
//! wait for readability without reading), and its records are buffered there anyway.

use std::future::Future;

pub use engine::bufpool::{give, take, LENT};

/// A stream that can wait for input without a buffer (plain TCP and Unix sockets), or
/// not (TLS: it keeps a buffer of its own, [`Idle::LENDS`] false).
pub trait Idle {
    /// Whether this stream waits for input without a buffer and borrows one from the pool.
    const LENDS: bool;
    /// Resolves when input (or the end of the stream, or an error) is there to read.
    fn ready(&self) -> impl Future<Output = ()>;
}

impl Idle for tokio::net::TcpStream {
    const LENDS: bool = true;
    async fn ready(&self) {
        let _ = self.readable().await;
    }
}

impl Idle for tokio::net::UnixStream {
    const LENDS: bool = true;
    async fn ready(&self) {
        let _ = self.readable().await;
    }
}

impl Idle for tokio_rustls::server::TlsStream<tokio::net::TcpStream> {
    const LENDS: bool = false;
    async fn ready(&self) {}
}
