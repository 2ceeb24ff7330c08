//! Read buffers lent per worker thread, as memcached 1.6 lends them (`rbuf_alloc` /
//! `rbuf_release` in its thread cache): a plain TCP or Unix connection waits for input
//! holding no buffer, borrows one from its worker when bytes arrive, and gives it back once
//! everything read has been answered. So an idle connection costs its task and its socket,
//! not a buffer (issue 11: 10,000 idle connections cost ~3.6 KiB each with a 2 KiB buffer
//! of their own; memcached ~0.6 KiB).
//!
//! A TLS connection keeps a buffer of its own: rustls reads the socket for it (it cannot
//! wait for readability without reading), and its records are buffered there anyway.

use std::cell::RefCell;
use std::future::Future;

/// Size of a lent buffer (a request larger than this grows the connection's copy, which
/// is given back to the pool only if it did not grow beyond [`KEEP_MAX`]).
pub const LENT: usize = 16 * 1024;
/// Largest buffer taken back into the pool.
const KEEP_MAX: usize = 4 * LENT;
/// Buffers kept per worker thread (beyond, given back to the allocator).
const POOL: usize = 64;

thread_local! {
    static FREE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A buffer to read into (empty, at least [`LENT`] bytes of room).
pub fn take() -> Vec<u8> {
    FREE.with(|f| f.borrow_mut().pop()).unwrap_or_else(|| Vec::with_capacity(LENT))
}

/// Gives an emptied buffer back to this thread's pool (a grown one only if not too large).
pub fn give(mut buf: Vec<u8>) {
    if (LENT..=KEEP_MAX).contains(&buf.capacity()) {
        buf.clear();
        FREE.with(|f| {
            let mut f = f.borrow_mut();
            if f.len() < POOL {
                f.push(buf);
            }
        });
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_and_bounded() {
        let a = take();
        assert!(a.capacity() >= LENT && a.is_empty());
        let p = a.as_ptr();
        give(a);
        let b = take();
        assert_eq!(b.as_ptr(), p, "the same buffer comes back");
        let mut grown = b;
        grown.reserve(KEEP_MAX + 1);
        give(grown); // too large: dropped
        give(Vec::new()); // too small: dropped
        assert_eq!(FREE.with(|f| f.borrow().len()), 0);
        for _ in 0..POOL + 10 {
            give(Vec::with_capacity(LENT));
        }
        assert_eq!(FREE.with(|f| f.borrow().len()), POOL);
    }
}
