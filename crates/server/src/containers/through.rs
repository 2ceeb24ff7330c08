//! Write-through for `caching` containers whose table's log is followed (MariaDB/MySQL's
//! binlog, PostgreSQL's WAL: "binlog" below stands for either): a successful
//! set/add/replace/cas through sqlcached leaves the new row in the memory copy, so a read
//! after its own write is a hit (the InnoDB memcached plugin's `caching` policy writes both;
//! dropping the copy made every read after a write a miss: seed 001's game, where each
//! player row read follows its last update).
//!
//! The copy is not filled from the client's bytes when the write is answered: a table can
//! keep another spelling of them (`042` in an integer column reads back `42`, a `CHAR`
//! column drops trailing spaces, fewer parts than columns read back with empty ones, a
//! charset converts), and a direct SQL write may have come after. Instead the write
//! registers what it stores ([`Expect::register`], before it is sent: MariaDB can send its
//! binlog events before the commit is visible), and the binlog follower, when it applies
//! the row event whose after image reads exactly those bytes (`Container::row_of_columns`:
//! value columns joined as a get joins them, flags, expiry), puts that row in the copy,
//! marked as confirmed (`cache.rs`). Any other event for the key drops the copy as before,
//! events are applied in binlog order, so the copy is the row as of the last event applied:
//!
//! * the write's own event (first delivery) fills; its recheck 50 ms later finds the copy
//!   equal to its image and keeps it (a recheck drops only copies that differ from the row);
//! * a later write (ours or a direct one) comes after it in the binlog and drops or
//!   replaces it; a read that refilled an older row meanwhile is dropped by the recheck, as
//!   for every fill;
//! * two writes of one key through sqlcached: one expectation per key, the last registered;
//!   whichever event matches it fills, the events after it drop.
//!
//! An expectation that no event confirms (the write failed, a batch was lost, the follower
//! is behind or broken) only means no copy; it ages out after [`AGE`]. Bounded: at most
//! [`MAX_KEYS`] keys and [`MAX_BYTES`] of values per container (beyond, writes drop the copy
//! as before).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sql_containers::Row;

/// Most keys awaiting their binlog event, per container.
pub const MAX_KEYS: usize = 4096;
/// Most bytes of values awaiting their binlog event, per container.
pub const MAX_BYTES: usize = 4 << 20;
/// How long an expectation waits for its event.
pub const AGE: Duration = Duration::from_secs(10);
/// How far apart (seconds) the expiry a write meant and the one its row has may be: the
/// backend computed the absolute time on its own clock, at its own second.
const EXPIRY_SLACK: i64 = 2;

/// What a write stored, as a get would read it back.
struct Expected {
    value: Vec<u8>,
    flags: u32,
    exptime: i64,
    at: Instant,
}

/// The writes of one container waiting for their binlog events (see the module doc).
#[derive(Default)]
pub struct Expect {
    map: Mutex<(HashMap<Vec<u8>, Expected>, usize)>,
}

impl Expect {
    /// A write of `key` is about to store `value` (joined value columns), `flags` (0
    /// without a flags column) and `exptime` (absolute unix seconds, 0: none or no expire
    /// column). False if there is no room (the copy is then simply dropped).
    pub fn register(&self, key: &[u8], value: &[u8], flags: u32, exptime: i64) -> bool {
        let mut g = self.map.lock();
        let (map, bytes) = &mut *g;
        if let Some(old) = map.remove(key) {
            *bytes -= old.value.len();
        }
        if map.len() >= MAX_KEYS || *bytes + value.len() > MAX_BYTES {
            let now = Instant::now();
            map.retain(|_, e| now.duration_since(e.at) < AGE);
            *bytes = map.values().map(|e| e.value.len()).sum();
            if map.len() >= MAX_KEYS || *bytes + value.len() > MAX_BYTES {
                return false;
            }
        }
        *bytes += value.len();
        map.insert(key.to_vec(), Expected { value: value.to_vec(), flags, exptime, at: Instant::now() });
        true
    }

    /// The write of `key` did not store (or its outcome is settled otherwise).
    pub fn forget(&self, key: &[u8]) {
        let mut g = self.map.lock();
        let (map, bytes) = &mut *g;
        if let Some(old) = map.remove(key) {
            *bytes -= old.value.len();
        }
    }

    /// Does `row` (a binlog after image of `key`, read as a get reads it) show what the
    /// write of `key` stored? If so the expectation is settled.
    pub fn confirm(&self, key: &[u8], row: &Row) -> bool {
        let mut g = self.map.lock();
        let (map, bytes) = &mut *g;
        let Some(e) = map.get(key) else { return false };
        let fresh = e.at.elapsed() < AGE;
        let same = e.value == row.value
            && e.flags == row.flags
            && (e.exptime == row.exptime
                || (e.exptime != 0 && row.exptime != 0 && (e.exptime - row.exptime).abs() <= EXPIRY_SLACK));
        if !fresh || same {
            *bytes -= e.value.len();
            map.remove(key);
        }
        fresh && same
    }

    /// Forget every expectation (the stream broke: their events may never come).
    pub fn clear(&self) {
        let mut g = self.map.lock();
        g.0.clear();
        g.1 = 0;
    }

    /// Expectations waiting now.
    #[cfg(test)]
    pub fn waiting(&self) -> usize {
        self.map.lock().0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(v: &[u8], flags: u32, exptime: i64) -> Row {
        Row { value: v.to_vec(), flags, cas: 77, exptime }
    }

    #[test]
    fn only_the_bytes_written_confirm() {
        let x = Expect::default();
        assert!(x.register(b"k", b"042|a", 0, 0));
        assert!(!x.confirm(b"k", &row(b"42|a", 0, 0)), "the table spelled it otherwise");
        assert!(!x.confirm(b"k", &row(b"042|a", 1, 0)), "other flags");
        assert!(x.confirm(b"k", &row(b"042|a", 0, 0)));
        assert!(!x.confirm(b"k", &row(b"042|a", 0, 0)), "settled once");
        assert!(x.register(b"e", b"v", 3, 1_000_000));
        assert!(x.confirm(b"e", &row(b"v", 3, 1_000_001)), "the backend's second may differ");
        assert_eq!(x.waiting(), 0);
    }

    #[test]
    fn the_last_write_of_a_key_is_the_one_expected() {
        let x = Expect::default();
        x.register(b"k", b"a", 0, 0);
        x.register(b"k", b"b", 0, 0);
        assert!(!x.confirm(b"k", &row(b"a", 0, 0)));
        assert!(x.confirm(b"k", &row(b"b", 0, 0)));
        x.register(b"k", b"c", 0, 0);
        x.forget(b"k");
        assert!(!x.confirm(b"k", &row(b"c", 0, 0)));
    }

    #[test]
    fn bounded_by_keys_and_bytes() {
        let x = Expect::default();
        for i in 0..MAX_KEYS {
            assert!(x.register(format!("k{i}").as_bytes(), b"v", 0, 0));
        }
        assert!(!x.register(b"one more", b"v", 0, 0));
        x.clear();
        assert!(x.register(b"big", &vec![0; MAX_BYTES], 0, 0));
        assert!(!x.register(b"more", b"v", 0, 0));
        x.forget(b"big");
        assert!(x.register(b"more", b"v", 0, 0));
    }
}
