//! How other threads reach a ring worker that sleeps in `io_uring_enter`: an eventfd the
//! ring keeps a read armed on. The accept thread rings it for a new connection; a waker
//! rings it when a future a connection waits for (a container's reply, the disk tier's
//! acknowledgement) can make progress. A wake from the ring's own thread (a future that
//! yields) only notes the connection: the loop looks at the notes before it sleeps.

use std::cell::Cell;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Wake, Waker};

use parking_lot::Mutex;

use crate::shared::ConnInfo;

/// A connection handed to a ring worker: its socket, its `stats conns` entry and id.
pub struct NewConn {
    /// The accepted socket (TCP or Unix stream).
    pub fd: OwnedFd,
    /// Its `stats conns` entry.
    pub info: Arc<ConnInfo>,
    /// Its key in the server's connection table.
    pub id: u64,
}

/// One ring worker's doorbell.
pub struct Bell {
    fd: OwnedFd,
    /// An eventfd write is on its way and the ring has not drained the lists since.
    rung: AtomicBool,
    woken: Mutex<Vec<u64>>,
    inbox: Mutex<Vec<NewConn>>,
}

thread_local! {
    /// The bell of the ring worker running on this thread (its address), 0 elsewhere.
    static OWN: Cell<usize> = const { Cell::new(0) };
}

impl Bell {
    /// A new bell (an eventfd).
    pub fn new() -> std::io::Result<Bell> {
        // SAFETY: eventfd with no pointer arguments; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a descriptor just opened and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Bell { fd, rung: AtomicBool::new(false), woken: Mutex::new(Vec::new()), inbox: Mutex::new(Vec::new()) })
    }

    /// The eventfd the ring reads.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Marks the calling thread as this bell's ring worker (its wakes need no eventfd write).
    pub fn own(self: &Arc<Self>) {
        OWN.with(|o| o.set(Arc::as_ptr(self) as usize));
    }

    /// Hand a new connection to the ring.
    pub fn deliver(&self, conn: NewConn) {
        self.inbox.lock().push(conn);
        self.ring();
    }

    /// Note that the connection `token` can make progress.
    pub fn wake(&self, token: u64) {
        self.woken.lock().push(token);
        if OWN.with(|o| o.get()) != self as *const Bell as usize {
            self.ring();
        }
    }

    fn ring(&self) {
        if !self.rung.swap(true, Ordering::AcqRel) {
            let one = 1u64;
            // SAFETY: an 8-byte write from a valid u64 to our eventfd. It can only fail if
            // the counter would overflow, which an unread ring cannot reach this way.
            unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
        }
    }

    /// The ring's eventfd read completed: the next wake from another thread rings again.
    pub fn rearm(&self) {
        self.rung.store(false, Ordering::Release);
    }

    /// Move the woken tokens into `to` (the ring worker's, each loop turn).
    pub fn take_woken(&self, to: &mut Vec<u64>) {
        let mut w = self.woken.lock();
        if !w.is_empty() {
            to.append(&mut w);
        }
    }

    /// Whether a wake is noted that the ring has not taken yet.
    pub fn has_woken(&self) -> bool {
        !self.woken.lock().is_empty()
    }

    /// Move the new connections into `to`.
    pub fn take_inbox(&self, to: &mut Vec<NewConn>) {
        to.append(&mut self.inbox.lock());
    }
}

/// A waker for connection `token` of the ring behind `bell`.
pub fn waker(bell: &Arc<Bell>, token: u64) -> Waker {
    Waker::from(Arc::new(ConnWaker { bell: bell.clone(), token }))
}

struct ConnWaker {
    bell: Arc<Bell>,
    token: u64,
}

impl Wake for ConnWaker {
    fn wake(self: Arc<Self>) {
        self.bell.wake(self.token);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.bell.wake(self.token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter(b: &Bell) -> u64 {
        let mut v = 0u64;
        // SAFETY: an 8-byte read into a valid u64 from our nonblocking eventfd.
        let n = unsafe { libc::read(b.fd(), (&mut v as *mut u64).cast(), 8) };
        if n == 8 {
            v
        } else {
            0
        }
    }

    #[test]
    fn other_threads_ring_once_until_rearmed_and_the_owner_never() {
        let bell = Arc::new(Bell::new().unwrap());
        let b = bell.clone();
        std::thread::spawn(move || {
            waker(&b, 7).wake_by_ref();
            waker(&b, 8).wake();
        })
        .join()
        .unwrap();
        assert_eq!(counter(&bell), 1, "two wakes, one write");
        let mut got = Vec::new();
        bell.rearm();
        bell.take_woken(&mut got);
        assert_eq!(got, [7, 8]);
        bell.own();
        waker(&bell, 9).wake();
        assert_eq!(counter(&bell), 0, "the owner's own wake writes nothing");
        assert!(bell.has_woken());
    }
}
