//! A ring of provided buffers: memory the kernel picks a buffer from when a multishot
//! receive has bytes to deliver, so a connection waiting for input holds no buffer of its
//! own (as the epoll path's lent buffers, `crate::rbuf`). The worker hands each buffer back
//! as soon as it has run or copied what was in it, within the same loop turn.

use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::{types::BufRingEntry, IoUring};

/// The entries shared with the kernel, and the memory they point at.
pub struct BufRing {
    entries: *mut BufRingEntry,
    count: u16,
    size: usize,
    group: u16,
    pool: Vec<u8>,
    tail: u16,
}

// SAFETY: the raw pointer is to a private mapping owned by this value; it moves with it.
unsafe impl Send for BufRing {}

impl BufRing {
    /// `count` buffers (a power of two) of `size` bytes, registered with `ring` as buffer
    /// group `group`, all of them given to the kernel.
    pub fn register(ring: &IoUring, count: u16, size: usize, group: u16) -> io::Result<BufRing> {
        assert!(count.is_power_of_two(), "a provided buffer ring's size is a power of two");
        let bytes = count as usize * std::mem::size_of::<BufRingEntry>();
        // SAFETY: an anonymous private mapping, page aligned as the kernel requires.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_ANONYMOUS | libc::MAP_PRIVATE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut br = BufRing { entries: p.cast(), count, size, group, pool: vec![0; count as usize * size], tail: 0 };
        // SAFETY: the mapping holds `count` entries and lives until `unregister` (or, for a
        // worker's ring, as long as the process).
        if let Err(e) = unsafe { ring.submitter().register_buf_ring_with_flags(p as u64, count, group, 0) } {
            // SAFETY: the mapping made above, never registered.
            unsafe { libc::munmap(p, bytes) };
            return Err(e);
        }
        for bid in 0..count {
            br.give(bid);
        }
        br.publish();
        Ok(br)
    }

    /// The buffer group receives name to pick from this ring.
    pub fn group(&self) -> u16 {
        self.group
    }

    /// The first `len` bytes of buffer `bid`.
    #[inline]
    pub fn data(&self, bid: u16, len: usize) -> &[u8] {
        let start = bid as usize * self.size;
        &self.pool[start..start + len.min(self.size)]
    }

    /// Hand buffer `bid` back (the kernel sees it after the next [`BufRing::publish`]).
    #[inline]
    pub fn give(&mut self, bid: u16) {
        let mask = self.count - 1;
        // SAFETY: the index is masked into the mapped entries; the pool outlives the ring's use
        // of it; `bid` < count, so the address is inside the pool.
        unsafe {
            let e = &mut *self.entries.add((self.tail & mask) as usize);
            e.set_addr(self.pool.as_mut_ptr().add(bid as usize * self.size) as u64);
            e.set_len(self.size as u32);
            e.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    /// Make the buffers handed back visible to the kernel.
    #[inline]
    pub fn publish(&self) {
        // SAFETY: the tail field of the first entry, stored with release ordering (liburing's
        // io_uring_buf_ring_advance).
        unsafe {
            let t = BufRingEntry::tail(self.entries) as *const AtomicU16;
            (*t).store(self.tail, Ordering::Release);
        }
    }

    /// Unregister from `ring` and free the memory (the probe's ring; a worker's lives as
    /// long as the process).
    pub fn unregister(self, ring: &IoUring) {
        let _ = ring.submitter().unregister_buf_ring(self.group);
        let bytes = self.count as usize * std::mem::size_of::<BufRingEntry>();
        // SAFETY: the mapping made in `register`, no longer registered.
        unsafe { libc::munmap(self.entries.cast(), bytes) };
    }
}
