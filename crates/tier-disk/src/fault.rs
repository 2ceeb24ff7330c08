//! A failing disk: recognising a full one, and degrading the tier (writes refused with
//! the reason, reads served) until the committer's recovery brings it back.

use std::sync::atomic::Ordering;

use crate::fsinfo::available;
use crate::shared::Shared;

/// Free space a tier degraded by a full disk waits for before trying again: a small
/// log write may fit when the next ingestion (32 MiB of staged changes written as tables)
/// would not, and accepting writes only to fail again at that ingestion would flap.
pub(crate) const SPACE_TO_RESUME: u64 = 40 << 20;

/// Whether an error means the disk (or the quota) is full.
pub(crate) fn is_full(e: &str) -> bool {
    ["No space", "os error 28", "quota", "os error 122", "StorageFull"].iter().any(|w| e.contains(w))
}

/// The disk failed (a log write or fsync, or an ingestion into fjall): stop
/// acknowledging (waiters see `failed`), refuse new writes, keep serving reads; the
/// committer's `retry` brings it back.
pub(crate) fn fail(s: &Shared, e: &str) {
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
    s.durable.wake_all();
    s.committed.wake_all();
    s.space.notify_all();
    s.work.notify_all();
}
