//! The committer thread: group commit.
//!
//! It sleeps until changes are queued, takes all of them, writes them to fjall as one
//! atomic batch and (sync mode) fsyncs once, then publishes the new durable sequence
//! number; connections waiting on it acknowledge. Everything queued while it was busy
//! forms the next batch, so concurrent writers share fsyncs. In async mode batches are
//! written as they come and fsynced at least every flush interval.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::tier::{Durability, Shared};

/// Oldest index entries examined per eviction round.
const EVICT_BATCH: usize = 256;

/// The committer loop; returns after a clean stop (everything queued written and synced).
pub(crate) fn run(s: Arc<Shared>) {
    let sync = s.opts.durability == Durability::Sync;
    let interval = s.opts.flush_interval;
    let mut last_persist = Instant::now();
    let mut unsynced: Option<u64> = None;
    loop {
        let batch = {
            let mut p = s.pending.lock();
            while p.ops.is_empty() {
                if s.stopping.load(Ordering::SeqCst) {
                    break;
                }
                let wait = match unsynced {
                    Some(_) => interval.saturating_sub(last_persist.elapsed()),
                    None => Duration::from_secs(1),
                };
                if wait.is_zero() {
                    break;
                }
                s.work.wait_for(&mut p, wait);
            }
            p.take()
        };
        s.space.notify_all();
        if let Some((last, _)) = batch.last() {
            let last = *last;
            let meta = *s.meta.lock();
            match s.store.write(&batch, s.opts.disk_limit > 0, meta) {
                Ok(m) => {
                    *s.meta.lock() = m;
                    s.counters.bytes.store(m.bytes, Ordering::Relaxed);
                    s.counters.batches.fetch_add(1, Ordering::Relaxed);
                    s.committed.send_replace(last);
                }
                Err(e) => fail(&s, &e),
            }
            // Readable from fjall now: the queue no longer needs to answer for these.
            s.pending.lock().committed(last);
            if sync {
                persist(&s, last);
                last_persist = Instant::now();
            } else {
                unsynced = Some(last);
            }
        }
        if let Some(last) = unsynced {
            if last_persist.elapsed() >= interval || s.stopping.load(Ordering::SeqCst) {
                persist(&s, last);
                last_persist = Instant::now();
                unsynced = None;
            }
        }
        if s.opts.disk_limit > 0 {
            evict(&s);
        }
        if s.stopping.load(Ordering::SeqCst) && s.pending.lock().ops.is_empty() && unsynced.is_none() {
            return;
        }
    }
}

/// fsync, then publish `last` as durable.
fn persist(s: &Shared, last: u64) {
    if s.failed.load(Ordering::Relaxed) {
        return;
    }
    match s.store.persist() {
        Ok(()) => {
            s.counters.fsyncs.fetch_add(1, Ordering::Relaxed);
            s.durable.send_replace(last);
            // Record the durable horizon outside the journal, at most once a second.
            let mut at = s.last_checkpoint.lock();
            if at.elapsed() >= Duration::from_secs(1) {
                *at = Instant::now();
                let cp = crate::checkpoint::Checkpoint { seq: s.meta.lock().seq_hwm, clean: false };
                if let Err(e) = crate::checkpoint::write(&s.opts.dir, cp) {
                    fail(s, &format!("cannot write CHECKPOINT: {e}"));
                }
            }
        }
        Err(e) => fail(s, &e),
    }
}

/// The disk failed: stop acknowledging (waiters see `failed`), keep serving from memory.
fn fail(s: &Shared, e: &str) {
    if !s.failed.swap(true, Ordering::SeqCst) {
        log::error!("disk tier failed, writes are no longer persisted: {e}");
    }
    s.durable.send_modify(|_| {});
    s.committed.send_modify(|_| {});
    s.space.notify_all();
}

/// Evict oldest-written items while the logical size is over `--disk-limit`.
fn evict(s: &Shared) {
    loop {
        let meta = *s.meta.lock();
        if meta.bytes <= s.opts.disk_limit {
            return;
        }
        match s.store.evict_oldest(EVICT_BATCH, meta) {
            Ok((visited, evicted, m)) => {
                *s.meta.lock() = m;
                s.counters.bytes.store(m.bytes, Ordering::Relaxed);
                s.counters.evictions.fetch_add(evicted as u64, Ordering::Relaxed);
                if visited == 0 {
                    return;
                }
            }
            Err(e) => {
                fail(s, &e);
                return;
            }
        }
    }
}
