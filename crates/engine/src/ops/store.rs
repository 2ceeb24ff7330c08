//! Storage: set, add, replace, append, prepend and cas, as memcached's `do_store_item`.

use crate::item::{Item, KEY_BINARY, STALE, WON};
use crate::store::Engine;
use crate::tier::Receipt;

/// Which storage command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreMode {
    /// Store unconditionally.
    Set,
    /// Store only if the key is absent.
    Add,
    /// Store only if the key is present.
    Replace,
    /// Add the data after the existing value.
    Append,
    /// Add the data before the existing value.
    Prepend,
    /// Store only if the CAS unique still matches.
    Cas,
}

/// A storage request.
#[derive(Clone, Copy, Debug)]
pub struct StoreRequest<'a> {
    /// The command.
    pub mode: StoreMode,
    /// The key.
    pub key: &'a [u8],
    /// The data block.
    pub value: &'a [u8],
    /// Client flags.
    pub flags: u32,
    /// Client exptime (seconds, or unix time, or negative).
    pub exptime: i64,
    /// CAS unique to compare (0: none).
    pub cas: u64,
    /// Meta `I`: a CAS older than the item's still stores, marking it stale.
    pub set_stale: bool,
    /// Meta `N` with append/prepend: create a missing item with this client exptime.
    pub vivify: Option<i64>,
    /// Meta `b`: the key is binary (replies show it base64-encoded).
    pub key_binary: bool,
}

impl<'a> StoreRequest<'a> {
    /// A text or binary storage command: none of meta's `I`, `N`, `b`.
    pub fn new(mode: StoreMode, key: &'a [u8], value: &'a [u8], flags: u32, exptime: i64, cas: u64) -> Self {
        StoreRequest { mode, key, value, flags, exptime, cas, set_stale: false, vivify: None, key_binary: false }
    }
}

/// What a store did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOutcome {
    /// Stored, with the new CAS unique.
    Stored(u64),
    /// Not stored because the mode's condition failed.
    NotStored,
    /// CAS mismatch.
    Exists,
    /// CAS store of a missing key.
    NotFound,
    /// No memory could be found for the item.
    NoMemory,
}

/// Whether an item would exceed the `-I` limit, measured as memcached measures it.
pub fn item_too_large(engine: &Engine, key_len: usize, value_len: usize, flags: u32) -> bool {
    engine.config().item_limit().too_large(key_len, value_len, flags)
}

/// Carry out a storage command.
pub fn store(engine: &Engine, req: &StoreRequest<'_>, receipt: &Receipt) -> StoreOutcome {
    let exptime = engine.clock().realtime(req.exptime);
    let use_cas = engine.config().use_cas;
    let mut a = engine.access(req.key, receipt);
    a.stats().cmd_set += 1;
    if a.held() {
        // Held by an invalidation: a fill may carry the row as it was before the change.
        return match req.mode {
            StoreMode::Set | StoreMode::Add => held(&mut a),
            StoreMode::Append | StoreMode::Prepend if req.vivify.is_some() => held(&mut a),
            StoreMode::Cas => {
                a.stats().cas_misses += 1;
                StoreOutcome::NotFound
            }
            _ => StoreOutcome::NotStored,
        };
    }
    let now = a.now();
    let old = a.lookup().ok().map(|it| (it.cas, it.flags, it.exptime, it.bits));
    let new_item = |parts: &[&[u8]], flags, exptime| Item::new(req.key, parts, flags, exptime, now);
    let mut bits = 0;
    let item = match (old, req.mode) {
        (Some(_), StoreMode::Add) => {
            a.update();
            return StoreOutcome::NotStored;
        }
        (Some((cas, _, old_exp, old_bits)), StoreMode::Cas) => {
            // With CAS off (-C) items carry no unique, so a CAS store never matches.
            if req.cas == cas && use_cas {
                a.stats().cas_hits += 1;
                new_item(&[req.value], req.flags, exptime)
            } else if use_cas && req.set_stale && req.cas < cas {
                a.stats().cas_hits += 1;
                bits = STALE | (old_bits & WON);
                new_item(&[req.value], req.flags, old_exp)
            } else {
                a.stats().cas_badval += 1;
                return StoreOutcome::Exists;
            }
        }
        (Some((cas, flags, old_exp, _)), StoreMode::Append | StoreMode::Prepend) => {
            if use_cas && req.cas != 0 && req.cas != cas {
                return StoreOutcome::Exists;
            }
            let it = a.lookup().expect("present");
            if item_too_large(engine, req.key.len(), it.value().len() + req.value.len(), flags) {
                return StoreOutcome::NotStored;
            }
            let old_value = it.value().to_vec();
            if req.mode == StoreMode::Append {
                new_item(&[&old_value, req.value], flags, old_exp)
            } else {
                new_item(&[req.value, &old_value], flags, old_exp)
            }
        }
        (Some(_), StoreMode::Set | StoreMode::Replace) => new_item(&[req.value], req.flags, exptime),
        (None, StoreMode::Cas) => {
            a.stats().cas_misses += 1;
            return StoreOutcome::NotFound;
        }
        (None, StoreMode::Append | StoreMode::Prepend) if req.vivify.is_some() => {
            let exp = engine.clock().realtime(req.vivify.unwrap_or(0));
            new_item(&[req.value], req.flags, exp)
        }
        (None, StoreMode::Replace | StoreMode::Append | StoreMode::Prepend) => {
            return StoreOutcome::NotStored;
        }
        (None, StoreMode::Set | StoreMode::Add) => new_item(&[req.value], req.flags, exptime),
    };
    let mut item = item;
    item.bits = bits | if req.key_binary { KEY_BINARY } else { 0 };
    match a.store(item) {
        Ok(cas) => StoreOutcome::Stored(if engine.config().use_cas { cas } else { 0 }),
        Err(_) => {
            // memcached: a failed set must not leave the old value visible.
            if req.mode == StoreMode::Set {
                a.remove();
            }
            StoreOutcome::NoMemory
        }
    }
}

/// A fill of a held key: answered as stored (with a fresh CAS unique, as if the item had been
/// evicted right away) but not kept.
fn held(a: &mut crate::Access<'_>) -> StoreOutcome {
    a.stats().held_stores += 1;
    StoreOutcome::Stored(a.new_cas())
}
