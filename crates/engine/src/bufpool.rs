//! I/O buffers lent per thread, as memcached 1.6 lends read buffers from its worker
//! threads' caches (`rbuf_alloc` / `rbuf_release`): a connection that waits for input holds
//! none, borrows one when bytes arrive and gives it back once they are answered. Used by the
//! memcached front end (`server/src/conn.rs`) and the MySQL proxy (`mysql-proxy/src/wire.rs`),
//! whose connections live on one worker thread each (issue 11: idle connections' memory).

use std::cell::RefCell;

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
