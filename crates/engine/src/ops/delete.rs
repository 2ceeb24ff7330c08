//! `delete`: remove a key, optionally only if its CAS matches.

use crate::store::Engine;
use crate::tier::Receipt;

/// What a delete did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// The item was removed.
    Deleted,
    /// There was no live item.
    NotFound,
    /// The CAS given did not match.
    Exists,
}

/// Delete `key`; with `cas != 0` only if the item's CAS unique equals it.
pub fn delete(engine: &Engine, key: &[u8], cas: u64, receipt: &Receipt) -> DeleteOutcome {
    let mut a = engine.access(key, receipt);
    let outcome = match a.lookup() {
        Ok(it) if cas != 0 && it.cas != cas => DeleteOutcome::Exists,
        Ok(_) => {
            a.remove();
            DeleteOutcome::Deleted
        }
        Err(_) => DeleteOutcome::NotFound,
    };
    match outcome {
        DeleteOutcome::Deleted => a.stats().delete_hits += 1,
        DeleteOutcome::NotFound => a.stats().delete_misses += 1,
        DeleteOutcome::Exists => {}
    }
    outcome
}
