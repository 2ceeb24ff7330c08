//! A point in the sequence of changes that connections wait for: everything up to it is
//! committed (handed to the OS) or durable (fsynced).
//!
//! A connection that made changes waits until the point reaches its last one; the
//! committer moves the point after each batch and wakes only the waiters it reached. A
//! waiter for a later batch sleeps on. (A tokio `watch` channel, used before, woke every
//! waiter at every move: in sync mode about half of the waiting connections wait for the
//! batch after the one being fsynced, so each fsync woke some twenty of them for
//! nothing, each a task poll and often a worker thread's wake-up.)

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};

use parking_lot::Mutex;

/// The point, and the tasks waiting for it to reach their sequence numbers.
pub struct AckPoint {
    value: AtomicU64,
    /// (sequence number awaited, task); unordered, a few dozen at most per connection
    /// waiting.
    waiters: Mutex<Vec<(u64, Waker)>>,
}

impl AckPoint {
    /// A point at `value`, nobody waiting.
    pub fn new(value: u64) -> AckPoint {
        AckPoint { value: AtomicU64::new(value), waiters: Mutex::new(Vec::new()) }
    }

    /// Where the point is.
    pub fn get(&self) -> u64 {
        self.value.load(Ordering::Acquire)
    }

    /// Move the point to `value` and wake the tasks waiting for a change up to it.
    pub fn set(&self, value: u64) {
        self.value.store(value, Ordering::Release);
        self.wake(|seq| seq <= value);
    }

    /// Wake every waiting task (the disk failed: each looks at why).
    pub fn wake_all(&self) {
        self.wake(|_| true);
    }

    fn wake(&self, reached: impl Fn(u64) -> bool) {
        let ready: Vec<Waker> = {
            let mut w = self.waiters.lock();
            if w.is_empty() {
                return;
            }
            let mut ready = Vec::new();
            let mut i = 0;
            while i < w.len() {
                if reached(w[i].0) {
                    ready.push(w.swap_remove(i).1);
                } else {
                    i += 1;
                }
            }
            ready
        };
        for waker in ready {
            waker.wake();
        }
    }

    /// Wait until the point reaches `seq`, or `failed` is set; gives the point then.
    pub fn wait<'a>(&'a self, seq: u64, failed: &'a AtomicBool) -> Wait<'a> {
        Wait { point: self, seq, failed }
    }
}

/// The future of [`AckPoint::wait`].
pub struct Wait<'a> {
    point: &'a AckPoint,
    seq: u64,
    failed: &'a AtomicBool,
}

impl Future for Wait<'_> {
    type Output = u64;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
        let done = |v: u64| v >= self.seq || self.failed.load(Ordering::Acquire);
        let v = self.point.get();
        if done(v) {
            return Poll::Ready(v);
        }
        let mut w = self.point.waiters.lock();
        // Looked at again under the lock: a `set` that moved the point after the first
        // look either is seen here or finds this waiter in the list.
        let v = self.point.get();
        if done(v) {
            return Poll::Ready(v);
        }
        match w.iter_mut().find(|(_, k)| k.will_wake(cx.waker())) {
            Some(entry) => entry.0 = entry.0.min(self.seq),
            None => w.push((self.seq, cx.waker().clone())),
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Only the waiters the point reached are woken; a failure wakes the rest.
    #[test]
    fn wakes_the_waiters_it_reaches() {
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let p = Arc::new(AckPoint::new(0));
        let failed = Arc::new(AtomicBool::new(false));
        rt.block_on(async {
            let mut tasks = Vec::new();
            for seq in [1u64, 2, 3] {
                let (p, failed) = (p.clone(), failed.clone());
                tasks.push(tokio::spawn(async move { p.wait(seq, &failed).await }));
            }
            tokio::task::yield_now().await;
            assert_eq!(p.waiters.lock().len(), 3);
            p.set(2);
            tokio::task::yield_now().await;
            assert_eq!(p.waiters.lock().len(), 1, "the waiter for 3 sleeps on");
            assert!(tasks[0].is_finished() && tasks[1].is_finished() && !tasks[2].is_finished());
            failed.store(true, Ordering::Release);
            p.wake_all();
            assert_eq!(tasks.pop().expect("task").await.expect("joined"), 2, "woken by the failure at 2");
            assert!(p.waiters.lock().is_empty());
        });
        // Already reached: no waiting at all.
        assert_eq!(rt.block_on(p.wait(1, &AtomicBool::new(false))), 2);
    }
}
