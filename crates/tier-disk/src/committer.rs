//! The committer thread: group commit.
//!
//! It sleeps until changes are queued, takes all of them, writes them to fjall as one
//! atomic batch and (sync mode) fsyncs once, then publishes the new durable sequence
//! number; connections waiting on it acknowledge. Everything queued while it was busy
//! forms the next batch, so concurrent writers share fsyncs. In async mode batches are
//! written as they come and fsynced at least every flush interval.
//!
//! A failed write or fsync (disk full, I/O error, read-only remount) degrades the tier:
//! the batch goes back to the queue, nothing more is acknowledged (connections answer an
//! error, new writes are refused), reads are still served. Every second the committer
//! reopens the database and tries again; once a write and an fsync succeed the tier is
//! back, with the queued changes written in their order.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::shared::{Durability, Shared};

/// Oldest index entries examined per eviction round.
const EVICT_BATCH: usize = 256;
/// How often a degraded tier tries again.
const RETRY: Duration = Duration::from_secs(1);
/// Free space a tier degraded by a full disk waits for before trying again: a small
/// journal write may fit when the next memtable flush (up to 32 MiB) would not, and accepting
/// writes only to fail again at that flush would flap.
const SPACE_TO_RESUME: u64 = 40 << 20;

/// Whether an error means the disk (or the quota) is full.
pub(crate) fn is_full(e: &str) -> bool {
    ["No space", "os error 28", "quota", "os error 122", "StorageFull"].iter().any(|w| e.contains(w))
}

/// Bytes available to this process on the filesystem of `dir` (None: unknown).
fn available(dir: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a zeroed statvfs the call fills in.
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut st) };
    (rc == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// The committer loop; returns after a clean stop (everything queued written and synced).
pub(crate) fn run(s: Arc<Shared>) {
    let sync = s.opts.durability == Durability::Sync;
    let interval = s.opts.flush_interval;
    let mut last_persist = Instant::now();
    let mut unsynced: Option<u64> = None;
    loop {
        if s.failed.load(Ordering::SeqCst) {
            if !retry(&s) {
                if s.stopping.load(Ordering::SeqCst) {
                    let left = s.pending.lock().ops.len();
                    log::error!(
                        "stopping with the disk tier degraded: {left} queued changes could not be written \
                         (they were never acknowledged)"
                    );
                    return;
                }
                continue;
            }
            last_persist = Instant::now();
            unsynced = None;
        }
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
            let started = Instant::now();
            let written = write(&s, &batch);
            s.counters.write_latency.record_since(started);
            if let Err(e) = written {
                fail(&s, &e);
                s.pending.lock().requeue(batch);
                continue;
            }
            if sync {
                if let Err(e) = persist(&s, last) {
                    // Not acknowledged: written again once the disk is back.
                    fail(&s, &e);
                    s.pending.lock().requeue(batch);
                    continue;
                }
                last_persist = Instant::now();
            } else {
                unsynced = Some(last);
            }
            // Readable from fjall now: the queue no longer needs to answer for these.
            s.pending.lock().committed(last);
        }
        if let Some(last) = unsynced {
            if last_persist.elapsed() >= interval || s.stopping.load(Ordering::SeqCst) {
                if let Err(e) = persist(&s, last) {
                    // In async mode these were acknowledged once the OS had them; an fsync
                    // error means it may have dropped them.
                    fail(&s, &format!("{e} (writes acknowledged since the last sync may be lost)"));
                    continue;
                }
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

/// Write a batch to fjall and publish it as committed.
fn write(s: &Shared, batch: &[(u64, crate::pending::Op)]) -> Result<(), String> {
    let meta = *s.meta.lock();
    let m = s.store.write(batch, s.opts.disk_limit > 0, meta)?;
    *s.meta.lock() = m;
    s.counters.bytes.store(m.bytes, Ordering::Relaxed);
    s.counters.batches.fetch_add(1, Ordering::Relaxed);
    if let Some((last, _)) = batch.last() {
        s.committed.send_replace(*last);
    }
    Ok(())
}

/// fsync, then publish `last` as durable.
fn persist(s: &Shared, last: u64) -> Result<(), String> {
    let started = Instant::now();
    let synced = s.store.persist();
    s.counters.fsync_latency.record_since(started);
    synced?;
    s.counters.fsyncs.fetch_add(1, Ordering::Relaxed);
    s.durable.send_replace(last);
    // Record the durable horizon outside the journal, at most once a second.
    let mut at = s.last_checkpoint.lock();
    if at.elapsed() >= Duration::from_secs(1) {
        *at = Instant::now();
        let cp = crate::checkpoint::Checkpoint { seq: s.meta.lock().seq_hwm, clean: false };
        crate::checkpoint::write(&s.opts.dir, cp).map_err(|e| format!("cannot write CHECKPOINT: {e}"))?;
    }
    Ok(())
}

/// The disk failed: stop acknowledging (waiters see `failed`), refuse new writes, keep
/// serving reads; [`retry`] brings it back.
fn fail(s: &Shared, e: &str) {
    let mut reason = s.reason.lock();
    // fjall refuses everything after its first failure ("Poisoned"): keep the cause.
    if e.contains("Poisoned") && reason.is_some() {
        return;
    }
    // Poisoned by a failed background flush: say whether the disk is full.
    let e = match available(&s.opts.dir) {
        Some(free) if e.contains("Poisoned") && free < SPACE_TO_RESUME => {
            format!("a background write failed: No space left on device ({} MiB free)", free >> 20)
        }
        _ => e.to_string(),
    };
    let e = e.as_str();
    if !s.failed.swap(true, Ordering::SeqCst) || reason.as_deref() != Some(e) {
        log::error!(
            "disk tier degraded: {e}; writes are refused until it recovers (retrying every second), reads are served"
        );
    }
    *reason = Some(e.to_string());
    s.counters.failures.fetch_add(1, Ordering::Relaxed);
    drop(reason);
    s.durable.send_modify(|_| {});
    s.committed.send_modify(|_| {});
    s.space.notify_all();
}

/// One recovery attempt of a degraded tier (after waiting up to [`RETRY`], less when
/// stopping): reopen the database, write what is queued (or just the metadata) and
/// fsync. True once the tier is healthy again.
fn retry(s: &Shared) -> bool {
    {
        let mut p = s.pending.lock();
        if !s.stopping.load(Ordering::SeqCst) {
            s.work.wait_for(&mut p, RETRY);
        }
    }
    let attempt = || -> Result<(), String> {
        let full = s.reason.lock().as_deref().is_some_and(is_full);
        if full {
            match available(&s.opts.dir) {
                Some(free) if free < SPACE_TO_RESUME => {
                    return Err(format!(
                        "{} (waiting for {} MiB free on the data dir's filesystem, {} MiB now)",
                        s.reason.lock().clone().unwrap_or_default(),
                        SPACE_TO_RESUME >> 20,
                        free >> 20
                    ))
                }
                _ => {}
            }
        }
        s.store.reopen()?;
        let batch = s.pending.lock().take();
        let last = batch.last().map(|(seq, _)| *seq);
        if let Err(e) = write(s, &batch).and_then(|_| s.store.persist()) {
            s.pending.lock().requeue(batch);
            return Err(e);
        }
        if let Some(last) = last {
            s.pending.lock().committed(last);
            s.durable.send_replace(last);
        }
        Ok(())
    };
    match attempt() {
        Ok(()) => {
            let reason = s.reason.lock().take().unwrap_or_default();
            s.failed.store(false, Ordering::SeqCst);
            s.counters.recoveries.fetch_add(1, Ordering::Relaxed);
            log::info!("disk tier recovered (was: {reason}); writes are accepted again");
            true
        }
        Err(e) => {
            let mut reason = s.reason.lock();
            let waiting = e.contains("waiting for");
            if !waiting && !e.contains("Poisoned") && reason.as_deref() != Some(e.as_str()) {
                log::warn!("disk tier still degraded: {e}");
                *reason = Some(e);
            }
            false
        }
    }
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
