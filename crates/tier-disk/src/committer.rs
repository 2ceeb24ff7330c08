//! The committer thread: group commit.
//!
//! It sleeps until changes are queued, takes all of them, appends them to the
//! write-ahead log as one frame (`wal.rs`) and (sync mode) fsyncs once, then publishes
//! the new durable sequence number; connections waiting on it acknowledge. Everything
//! queued while it was busy forms the next batch, so concurrent writers share fsyncs. In
//! async mode batches are written as they come and fsynced at least every flush
//! interval. The logged changes are staged in memory; when enough are, the committer
//! hands them to the ingest thread (`ingest.rs`), which puts them into fjall.
//!
//! A failed write or fsync (disk full, I/O error, read-only remount) degrades the tier:
//! the batch goes back to the queue, nothing more is acknowledged (connections answer an
//! error, new writes are refused), reads are still served. Every second the committer
//! reopens the database and tries again; once a write and an fsync succeed the tier is
//! back, with the queued changes written in their order.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::fault::{fail, is_full, SPACE_TO_RESUME};
use crate::fsinfo::available;
use crate::pending::Op;
use crate::shared::{Durability, Shared};
use crate::wal::FILE_LIMIT as WAL_FILE_LIMIT;

/// How often a degraded tier tries again.
const RETRY: Duration = Duration::from_secs(1);
/// Whether changes were logged since the last fsync (async mode; sync mode fsyncs each
/// batch before acknowledging it).
fn unsynced(s: &Shared) -> bool {
    s.committed.get() > s.durable.get()
}

/// The committer loop; returns after a clean stop (everything queued written and synced).
pub(crate) fn run(s: Arc<Shared>) {
    let sync = s.opts.durability == Durability::Sync;
    let interval = s.opts.flush_interval;
    let mut last_persist = Instant::now();
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
        }
        {
            let mut p = s.pending.lock();
            while p.ops.is_empty() {
                // Stopping, or the ingest thread failed (the loop's top recovers).
                if s.stopping.load(Ordering::SeqCst) || s.failed.load(Ordering::SeqCst) {
                    break;
                }
                let wait = match !sync && unsynced(&s) {
                    true => interval.saturating_sub(last_persist.elapsed()),
                    false => Duration::from_secs(1),
                };
                if wait.is_zero() {
                    break;
                }
                s.work.wait_for(&mut p, wait);
            }
        }
        if let Err(e) = commit(&s, sync, &mut last_persist) {
            fail(&s, &e);
            continue;
        }
        let last = s.committed.get();
        if !sync && unsynced(&s) && (last_persist.elapsed() >= interval || s.stopping.load(Ordering::SeqCst)) {
            if let Err(e) = persist(&s, last) {
                // In async mode these were acknowledged once the OS had them; an fsync
                // error means it may have dropped them.
                fail(&s, &format!("{e} (writes acknowledged since the last sync may be lost)"));
                continue;
            }
            last_persist = Instant::now();
        }
        if s.stopping.load(Ordering::SeqCst) && s.pending.lock().ops.is_empty() && !unsynced(&s) {
            return;
        }
    }
}

/// Take what is queued and log it as one batch (sync mode: and fsync it), then start an
/// ingestion if one is due. Holds the commit lock, so batches reach the log in the order
/// they were taken. The batch goes back to the queue if the disk fails.
fn commit(s: &Shared, sync: bool, last_persist: &mut Instant) -> Result<(), String> {
    let _lead = s.commit_lock.lock();
    log_queued(s, sync, last_persist)?;
    if sync {
        // The first file after a start is a plain one until a prepared one is ready.
        s.wal.lock().use_prepared()?;
    }
    maybe_ingest(s, sync, last_persist)
}

/// Log everything queued as one batch (commit lock held); in sync mode fsync it too.
fn log_queued(s: &Shared, sync: bool, last_persist: &mut Instant) -> Result<(), String> {
    let batch = s.pending.lock().take();
    s.space.notify_all();
    let Some(&(last, _)) = batch.last() else { return Ok(()) };
    let started = Instant::now();
    let written = write(s, &batch);
    s.counters.write_latency.record_since(started);
    if let Err(e) = written {
        s.pending.lock().requeue(batch);
        return Err(e);
    }
    s.committed.set(last);
    if sync {
        if let Err(e) = persist(s, last) {
            // Not acknowledged: written again once the disk is back (replay skips a
            // change it has seen, so a frame logged twice is harmless).
            s.pending.lock().requeue(batch);
            return Err(e);
        }
        *last_persist = Instant::now();
    }
    s.pending.lock().logged(last);
    Ok(())
}

/// Async mode: log what is queued from the calling thread, a connection about to wait
/// for its own writes, instead of waking the committer thread and waiting for it (a
/// context switch each way per batch). False if it could not (another thread is
/// logging, a flush or backpressure is the committer's to handle, the tier failed): the
/// caller then wakes the committer.
pub(crate) fn commit_inline(s: &Shared) -> bool {
    let Some(_lead) = s.commit_lock.try_lock() else { return false };
    if s.failed.load(Ordering::Relaxed) {
        return false;
    }
    let batch = {
        let mut p = s.pending.lock();
        if p.ops.is_empty() {
            return true;
        }
        if p.flush_seq != 0 || p.state_bytes() >= 2 * crate::ingest::stage_limit(&s.opts) {
            return false;
        }
        p.take()
    };
    s.space.notify_all();
    let last = batch.last().map_or(0, |(seq, _)| *seq);
    let was_synced = !unsynced(s);
    let started = Instant::now();
    let written = write(s, &batch);
    s.counters.write_latency.record_since(started);
    if let Err(e) = written {
        s.pending.lock().requeue(batch);
        fail(s, &e);
        return true;
    }
    s.committed.set(last);
    let staged = {
        let mut p = s.pending.lock();
        p.logged(last);
        p.staged.bytes()
    };
    let due = staged >= crate::ingest::stage_limit(&s.opts) || s.wal.lock().len() >= WAL_FILE_LIMIT;
    if was_synced || (due && s.job.lock().is_none()) {
        // The committer fsyncs within the flush interval from now, and starts an
        // ingestion when one is due.
        s.work.notify_one();
    }
    true
}

/// Append a batch to the log and account for it. A `Flush` in it empties fjall at
/// once (after any running ingestion): rare, and simpler than ordering it with them.
fn write(s: &Shared, batch: &[(u64, Op)]) -> Result<(), String> {
    s.wal.lock().append(batch)?;
    let flush = batch.iter().rev().find(|(_, op)| matches!(op, Op::Flush)).map(|(seq, _)| *seq);
    {
        let mut meta = s.meta.lock();
        for (seq, op) in batch {
            meta.apply(*seq, op);
        }
    }
    if let Some(at) = flush {
        if !crate::ingest::wait_idle(s) {
            return Err(s.reason.lock().clone().unwrap_or_else(|| "stopping".into()));
        }
        let _store = s.store_lock.lock();
        let meta = *s.meta.lock();
        s.store.flush_as_of(at, &meta)?;
        let mut m = s.meta.lock();
        m.ingested = at;
        m.bytes = 0;
        drop(m);
        s.counters.bytes.store(0, Ordering::Relaxed);
    }
    s.counters.batches.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Hand the staged states to the ingest thread once they (or the log file) are large
/// (commit lock held); if an ingestion is still running and the staged and frozen states
/// together have grown to twice the limit, wait for it (writers then wait on the queue:
/// backpressure), so that they stay within the tier's share of the memory budget.
fn maybe_ingest(s: &Shared, sync: bool, last_persist: &mut Instant) -> Result<(), String> {
    let (staged, held) = {
        let p = s.pending.lock();
        (p.staged.bytes(), p.state_bytes())
    };
    let log = s.wal.lock().len();
    let limit = crate::ingest::stage_limit(&s.opts);
    if staged < limit && log < WAL_FILE_LIMIT {
        return Ok(());
    }
    if start_ingestion(s, sync, last_persist)? {
        return Ok(());
    }
    if held >= 2 * limit || log >= 2 * WAL_FILE_LIMIT {
        s.counters.ingest_waits.fetch_add(1, Ordering::Relaxed);
        if crate::ingest::wait_idle(s) {
            start_ingestion(s, sync, last_persist)?;
        }
    }
    Ok(())
}

/// Times [`start_ingestion`] logs what was queued meanwhile before it gives up until
/// the next batch (each round logs what arrived during the one before).
const DRAIN_ROUNDS: usize = 8;

/// Start an ingestion of everything staged, if none is running (commit lock held; the
/// committer, or the stop). The staged states include changes still queued, so those
/// are logged first: a frozen state must be in the log, whose files the ingestion
/// deletes. With the queue empty the states are frozen, the log file is sealed (it
/// then holds nothing newer than the frozen states) and the ingest thread takes over.
/// False if no ingestion was started.
pub(crate) fn start_ingestion(s: &Shared, sync: bool, last_persist: &mut Instant) -> Result<bool, String> {
    if s.job.lock().is_some() {
        return Ok(false);
    }
    for _ in 0..DRAIN_ROUNDS {
        {
            let mut p = s.pending.lock();
            if p.ops.is_empty() {
                // Nothing may be staged (a flush made the logged changes moot): the job
                // still records `upto` in fjall, so the sealed files can go.
                p.freeze();
                drop(p);
                let upto = s.committed.get();
                let meta = *s.meta.lock();
                *s.job.lock() = Some(crate::shared::Job { upto, meta, failed: false });
                // Sealed or not, the job is sound: only sealed files are deleted after it.
                let sealed = s.wal.lock().rotate();
                s.ingest_work.notify_one();
                return sealed.map(|_| true);
            }
        }
        log_queued(s, sync, last_persist)?;
    }
    Ok(false)
}

/// fsync, then publish `last` as durable.
fn persist(s: &Shared, last: u64) -> Result<(), String> {
    let started = Instant::now();
    // Not under the log's lock: connections logging inline go on meanwhile.
    let handle = s.wal.lock().sync_handle();
    let synced = handle.and_then(|f| crate::wal::sync_file(&f));
    s.counters.fsync_latency.record_since(started);
    synced?;
    s.counters.fsyncs.fetch_add(1, Ordering::Relaxed);
    s.durable.set(last);
    // Record the durable horizon outside the journal, at most once a second: `last`, not
    // the highest change logged (async mode: connections logging inline may have written
    // newer changes since this fsync began; they are not durable yet).
    let mut at = s.last_checkpoint.lock();
    if at.elapsed() >= Duration::from_secs(1) {
        *at = Instant::now();
        let cp = crate::checkpoint::Checkpoint { seq: last, clean: false };
        crate::checkpoint::write(&s.opts.dir, cp).map_err(|e| format!("cannot write CHECKPOINT: {e}"))?;
    }
    Ok(())
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
        // Reopening first also deletes what a failed ingestion left half-written.
        {
            let _store = s.store_lock.lock();
            s.store.reopen()?;
        }
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
        // An ingestion that failed is redone first (its changes are still in the log).
        let failed_job = *s.job.lock();
        if let Some(job) = failed_job.filter(|j| j.failed) {
            crate::ingest::ingest(s, job)?;
        }
        s.wal.lock().restart()?;
        let batch = s.pending.lock().take();
        let last = batch.last().map(|(seq, _)| *seq);
        if let Err(e) = write(s, &batch).and_then(|_| s.wal.lock().sync()) {
            s.pending.lock().requeue(batch);
            return Err(e);
        }
        if let Some(last) = last {
            s.pending.lock().logged(last);
            s.committed.set(last);
            s.durable.set(last);
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

#[cfg(test)]
mod tests {
    use super::*;
    use engine::tier::{Tier, TierItem};

    /// CHECKPOINT records the fsync's own horizon, not newer changes logged since (async
    /// mode: a connection may log inline while the committer fsyncs).
    #[test]
    fn checkpoint_records_what_the_fsync_covered() {
        let dir = tempfile::tempdir().expect("tempdir");
        let opts = crate::Options {
            dir: dir.path().to_path_buf(),
            durability: Durability::Async,
            flush_interval: Duration::from_secs(3600),
            disk_limit: 0,
            cache_bytes: 1 << 20,
            max_pending_bytes: 1 << 20,
            stage_bytes: crate::STAGE_MAX,
        };
        let tier = crate::DiskTier::open(opts).expect("open");
        let item = TierItem { value: &b"v"[..], flags: 0, exptime_unix: 0, cas: 1, stored_unix: 0, bits: 0 };
        let last = (0..3).map(|i| tier.put(format!("k{i}").as_bytes(), item.clone(), false, false)).max();
        let last = last.expect("three writes");
        let s = tier.shared();
        let deadline = Instant::now() + Duration::from_secs(10);
        while s.committed.get() < last {
            assert!(Instant::now() < deadline, "the committer logged nothing in 10 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        *s.last_checkpoint.lock() = Instant::now() - Duration::from_secs(2);
        persist(s, last - 2).expect("persist");
        assert_eq!(crate::checkpoint::read(dir.path()).map(|c| (c.seq, c.clean)), Some((last - 2, false)));
        tier.close();
    }
}
