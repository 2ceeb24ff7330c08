//! The ingest thread: staged changes into fjall's tables, old log files deleted.
//!
//! When the staged states grow past the ingestion threshold ([`stage_limit`]; or the log file past
//! [`crate::wal::FILE_LIMIT`]), the committer logs what is still queued, freezes the states,
//! seals the log file and hands them over as a [`Job`]
//! (`committer::start_ingestion`). This thread sorts them and has fjall write them as new tables
//! (records and tombstones; an ingestion skips fjall's memtable and journal), records in
//! fjall's `meta` that everything up to the job's sequence number is in, evicts for
//! `--disk-limit`, and deletes the log files that are now redundant. Reads find the
//! frozen states in memory until then. A failure degrades the tier like a failed log
//! write; the committer's recovery redoes the ingestion.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::shared::{Job, Shared};

/// Oldest index entries examined per eviction round.
const EVICT_BATCH: usize = 256;

/// Bytes of staged states at which they are ingested: [`crate::Options::stage_bytes`]
/// (its share of the memory budget), or with a `--disk-limit` at most an eighth of that
/// limit (at least 64 KiB), so that eviction keeps up and fjall plus the staged states
/// stay within it.
pub(crate) fn stage_limit(opts: &crate::Options) -> usize {
    let share = opts.stage_bytes.max(64 << 10);
    match opts.disk_limit {
        0 => share,
        limit => ((limit / 8) as usize).clamp(64 << 10, share),
    }
}

/// The ingest thread's loop; returns once stopping with no job left to run.
pub(crate) fn run(s: Arc<Shared>) {
    loop {
        let job = {
            let mut j = s.job.lock();
            loop {
                match *j {
                    Some(job) if !job.failed => break job,
                    _ if s.stopping.load(Ordering::SeqCst) => return,
                    _ => {
                        s.ingest_work.wait_for(&mut j, Duration::from_secs(1));
                        s.pacer.pace(s.store.l0_tables());
                    }
                }
            }
        };
        let done = ingest(&s, job);
        s.pacer.pace(s.store.l0_tables());
        if let Err(e) = done {
            if let Some(j) = s.job.lock().as_mut() {
                j.failed = true;
            }
            crate::fault::fail(&s, &format!("writing staged changes into fjall: {e}"));
        }
    }
}

/// Run one ingestion (the ingest thread, or the committer's recovery after a failure).
pub(crate) fn ingest(s: &Shared, job: Job) -> Result<(), String> {
    let frozen = s.pending.lock().frozen.clone().unwrap_or_default();
    let _store = s.store_lock.lock();
    let mut meta = job.meta;
    meta.bytes = s.meta.lock().bytes;
    // Even with nothing frozen, fjall's `meta` must now say `upto` (a `flush_all` with a
    // delay, say, is only in the log files this deletes).
    s.store.ingest(&frozen, s.opts.disk_limit > 0, &mut meta, job.upto)?;
    {
        // The shared accounting learns what fjall now holds (the clean stop records it).
        let mut shared = s.meta.lock();
        shared.bytes = meta.bytes;
        shared.ingested = shared.ingested.max(meta.ingested);
    }
    s.counters.bytes.store(meta.bytes, Ordering::Relaxed);
    s.counters.ingestions.fetch_add(1, Ordering::Relaxed);
    // In fjall now: reads go there (and eviction must see them as fjall's).
    let states = s.pending.lock().ingested();
    drop(states);
    if s.opts.disk_limit > 0 {
        evict(s, meta)?;
    }
    if let Err(e) = s.wal.lock().remove_upto(job.upto) {
        log::warn!("write-ahead log: {e} (tried again after the next ingestion)");
    }
    *s.job.lock() = None;
    s.ingest_done.notify_all();
    Ok(())
}

/// Evict oldest-written items while the logical size is over `--disk-limit` less room
/// for the next staged states. `meta` is the accounting as of the last ingestion (what
/// fjall's `meta` records); the shared accounting loses the same items and bytes.
fn evict(s: &Shared, mut meta: crate::store::Meta) -> Result<(), String> {
    let target = s.opts.disk_limit.saturating_sub(stage_limit(&s.opts) as u64);
    while meta.bytes > target {
        let newer = |k: &[u8]| s.pending.lock().holds(k);
        let (visited, evicted, m) = s.store.evict_oldest(EVICT_BATCH, meta, newer)?;
        {
            let mut shared = s.meta.lock();
            shared.bytes = m.bytes;
            shared.items = shared.items.saturating_sub(evicted as u64);
        }
        meta = m;
        s.counters.bytes.store(m.bytes, Ordering::Relaxed);
        s.counters.evictions.fetch_add(evicted as u64, Ordering::Relaxed);
        if visited == 0 {
            break;
        }
    }
    Ok(())
}

/// Wait until no ingestion runs (a failed one counts as running: the committer's
/// recovery handles it). False if the tier failed or is stopping first.
pub(crate) fn wait_idle(s: &Shared) -> bool {
    let mut j = s.job.lock();
    while j.is_some() {
        if j.is_some_and(|j| j.failed) || s.failed.load(Ordering::SeqCst) {
            return false;
        }
        s.ingest_done.wait_for(&mut j, Duration::from_millis(100));
    }
    true
}
